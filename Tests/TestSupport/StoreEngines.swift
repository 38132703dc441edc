import Foundation
import Snapshot

/// The engines a snapshot store runs on, for tests that must hold on both:
/// the same test, the same assertions, once per engine (Swift Testing arguments).
public enum StoreEngine: String, CaseIterable, Sendable, CustomStringConvertible {
    case sqlite
    case postgres

    public var description: String { rawValue }

    /// The engines to test on this machine: PostgreSQL only when its server
    /// programs are installed, or when `STORESYNC_REQUIRE_POSTGRES=1` asks for it
    /// (then a missing server fails the test, saying how to install it).
    /// Swift Testing cannot skip one argument of a test, so the argument is left out instead.
    public static var tested: [StoreEngine] {
        allCases.filter { $0 != .postgres || TemporaryPostgres.testsEnabled }
    }

    /// A new, empty store on this engine: SQLite in a new temporary file, PostgreSQL
    /// in a new database of the process's throwaway server (``TemporaryPostgres``).
    /// `reopen` opens the same store again, as a new process would; `location` is
    /// what a job's `store:` would say (a path or a `postgres://` URL).
    package func makeStore() async throws -> (store: SQLSnapshotStore, reopen: () throws -> SQLSnapshotStore, location: String) {
        let location = try await makeLocation()
        let reopen = { () throws -> SQLSnapshotStore in try Self.open(location) }
        return (try reopen(), reopen, location)
    }

    /// Where a new, empty store of this engine would be, without creating it
    /// (PostgreSQL: an empty database, no tables yet).
    public func makeLocation() async throws -> String {
        switch self {
        case .sqlite:
            return TestPaths.temporaryDirectory("store-\(rawValue)").appendingPathComponent("store.sqlite").path
        case .postgres:
            return try await TemporaryPostgres.shared().createDatabase()
        }
    }

    /// Opens (creating it when needed) the store at `location`, whichever its engine.
    package static func open(_ location: String) throws -> SQLSnapshotStore {
        guard let store = try DefaultBackend().open(location) as? SQLSnapshotStore else {
            throw TemporaryPostgres.Failure(description: "the store at \(location) is not a SQLSnapshotStore")
        }
        return store
    }
}
