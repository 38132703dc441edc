/// storesync's version: the one place it is written. `storesync --version`
/// prints it and the default User-Agent carries it.
public enum StoreSyncVersion {
    /// Semantic version of this build.
    public static let current = "0.1.0"
}
