/// storesync's version: the one place it is written. `storesync --version`
/// prints it, the default User-Agent carries it, and the deployment's image
/// tag (deploy/kubernetes/kustomization.yaml, deploy/README.md) must equal it
/// (a test holds them together).
public enum StoreSyncVersion {
    /// Semantic version of this build.
    public static let current = "0.28.0"
}
