import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

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
    /// Whether a store exists at `location` at all; throws when that cannot
    /// be told (a server that does not answer is not an absent store).
    func exists(_ location: String) throws(StoreSyncError) -> Bool
    /// Opens the store for a run, creating it or bringing its schema up to date.
    func open(_ location: String) throws(StoreSyncError) -> any SnapshotStore
    /// Opens the store without writing to it in any way (no migration, no index).
    func openReadOnly(_ location: String) throws(StoreSyncError) -> any SnapshotStore
    /// A consistent, writable copy of the store that the real one never sees
    /// (a dry run), taken without the lock; `discard` removes it.
    func openCopy(_ location: String) throws(StoreSyncError) -> (store: any SnapshotStore, discard: @Sendable () -> Void)
    /// What says the store at `location` held history (a run that stored its
    /// crawl), in words for an error message; nil when nothing does (a new job).
    /// A run refuses a missing or empty store that has such evidence (Invariant 10).
    func historyEvidence(_ location: String) -> String?
    /// Notes that the store at `location` holds history, once a run's crawl is stored.
    func noteHistory(_ location: String, job: String, runID: Int64, at date: Date) throws(StoreSyncError)
    /// Opens the store for one worker of a fleet (``FleetStore``), or throws
    /// `invalidArguments` when the backend is one process's alone (a SQLite file).
    func openFleet(_ location: String) throws(StoreSyncError) -> any FleetStore
}

extension StoreBackend {
    /// A backend that only one process reaches has no fleet.
    public func openFleet(_ location: String) throws(StoreSyncError) -> any FleetStore {
        throw StoreSyncError(.invalidArguments, "--worker needs a store that every worker reaches: \(location) is a SQLite file; "
                             + "use `store: postgres://…` (storesync migrate moves a snapshot there)")
    }

    /// A backend that keeps no evidence outside its store knows no history it could have lost.
    public func historyEvidence(_ location: String) -> String? { nil }
    public func noteHistory(_ location: String, job: String, runID: Int64, at date: Date) throws(StoreSyncError) {}
}

/// An engine on a server, which a job's `store:` names by the scheme of a
/// URL. Each such engine registers once, in ``registered``; SQLite, the
/// embedded default, takes every other location (a file path).
public struct ServerEngine: Sendable {
    /// The URL schemes that name it (lowercase, without `://`).
    let schemes: [String]
    /// Checks a URL's form without connecting, as `storesync validate` does
    /// (a password written in the job, an unknown option).
    let checkForm: @Sendable (_ url: String) throws(StoreSyncError) -> Void
    /// The engine's backend, reading secrets (`${VAR}` in a URL) from `environment`.
    let backend: @Sendable (_ environment: [String: String]) -> any StoreBackend

    /// Every server engine a job may name.
    static let registered: [ServerEngine] = [.postgres]

    /// The registered engine `location`'s scheme names, if any.
    static func named(by location: String) -> ServerEngine? {
        let lower = location.lowercased()
        return registered.first { engine in engine.schemes.contains { lower.hasPrefix($0 + "://") } }
    }
}

/// What a job's `store:` says, read the way the registered engines read it.
public enum StoreLocation {
    /// Whether `store` is a server engine's URL rather than a file path: it is
    /// then neither resolved against the job's folder nor compared with export paths,
    /// and its `${VAR}` (a password) is read only when it is opened.
    public static func isServer(_ store: String) -> Bool {
        ServerEngine.named(by: store) != nil
    }

    /// Checks a server URL's form (nothing to check in a path).
    public static func checkForm(_ store: String) throws(StoreSyncError) {
        try ServerEngine.named(by: store)?.checkForm(store)
    }
}

/// The backend a job's `store:` names: a registered server engine for its
/// URL's scheme (PostgreSQL: `postgres://`, `postgresql://`), the embedded
/// SQLite file for anything else (a path).
public struct DefaultBackend: StoreBackend {
    let sqlite = SQLiteBackend()
    let environment: [String: String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.environment = environment
    }

    func backend(_ location: String) -> any StoreBackend {
        ServerEngine.named(by: location).map { $0.backend(environment) } ?? sqlite
    }

    public func lock(_ location: String) throws(StoreSyncError) -> any Sendable { try backend(location).lock(location) }
    public func lockHolder(_ location: String) -> String? { backend(location).lockHolder(location) }
    public func exists(_ location: String) throws(StoreSyncError) -> Bool { try backend(location).exists(location) }
    public func open(_ location: String) throws(StoreSyncError) -> any SnapshotStore { try backend(location).open(location) }
    public func openReadOnly(_ location: String) throws(StoreSyncError) -> any SnapshotStore {
        try backend(location).openReadOnly(location)
    }
    public func openCopy(_ location: String) throws(StoreSyncError) -> (store: any SnapshotStore, discard: @Sendable () -> Void) {
        try backend(location).openCopy(location)
    }
    public func historyEvidence(_ location: String) -> String? { backend(location).historyEvidence(location) }
    public func noteHistory(_ location: String, job: String, runID: Int64, at date: Date) throws(StoreSyncError) {
        try backend(location).noteHistory(location, job: job, runID: runID, at: date)
    }
    public func openFleet(_ location: String) throws(StoreSyncError) -> any FleetStore { try backend(location).openFleet(location) }
}
