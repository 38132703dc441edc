import Catalog
import Foundation

/// How a job's snapshot is reached: opening it, its run lock, and a
/// throwaway copy for a dry run. The engine asks its environment for one and
/// never names a database; SQLite is the default, and another backend (a
/// server database for fleets of workers) implements the same protocol.
public protocol StoreBackend: Sendable {
    /// Takes the store's run lock (Invariant 5), held while the returned value
    /// lives, or throws `.locked` at once when another run holds it.
    func lock(_ location: String) throws(StoreSyncError) -> any Sendable
    /// Who holds the run lock now, without taking it (for `status`).
    func lockHolder(_ location: String) -> String?
    /// Whether a store exists at `location` at all.
    func exists(_ location: String) -> Bool
    /// Opens the store for a run, creating it or bringing its schema up to date.
    func open(_ location: String) throws(StoreSyncError) -> any SnapshotStore
    /// Opens the store without writing to it in any way (no migration, no index).
    func openReadOnly(_ location: String) throws(StoreSyncError) -> any SnapshotStore
    /// A consistent, writable copy of the store that the real one never sees
    /// (a dry run), taken without the lock; `discard` removes it.
    func openCopy(_ location: String) throws(StoreSyncError) -> (store: any SnapshotStore, discard: @Sendable () -> Void)
}

/// The embedded default: one SQLite file (WAL mode) and a lock file beside it.
public struct SQLiteBackend: StoreBackend {
    public init() {}

    public func lock(_ location: String) throws(StoreSyncError) -> any Sendable {
        try RunLock(storePath: location)
    }

    public func lockHolder(_ location: String) -> String? {
        RunLock.holder(storePath: location)
    }

    public func exists(_ location: String) -> Bool {
        FileManager.default.fileExists(atPath: location)
    }

    public func open(_ location: String) throws(StoreSyncError) -> any SnapshotStore {
        try SQLiteSnapshotStore(path: location)
    }

    public func openReadOnly(_ location: String) throws(StoreSyncError) -> any SnapshotStore {
        try SQLiteSnapshotStore(path: location, readOnly: true)
    }

    /// SQLite's online backup into a temporary folder: consistent even while
    /// a nightly run writes, and it needs no lock, so it never blocks cron.
    public func openCopy(_ location: String) throws(StoreSyncError) -> (store: any SnapshotStore, discard: @Sendable () -> Void) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("storesync-dry-run-\(UUID().uuidString)")
        let discard: @Sendable () -> Void = { try? FileManager.default.removeItem(at: folder) }
        let copyPath = folder.appendingPathComponent("snapshot.sqlite").path
        do {
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if exists(location) { try SQLiteSnapshotStore.copy(from: location, to: copyPath) }
            return (try SQLiteSnapshotStore(path: copyPath), discard)
        } catch {
            discard()
            throw error
        }
    }
}
