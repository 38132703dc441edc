import Catalog
import Foundation
import Logging
import PostgresNIO

/// A snapshot in one PostgreSQL database (`store: postgres://…`): the store
/// a fleet of workers shares. The tables and their semantics are SQLite's
/// (``SQLSnapshotStore`` runs the same logic over both); the run lock is an
/// advisory lock held by a connection, so it is released by the server when
/// its holder dies, however it dies.
public struct PostgresBackend: StoreBackend {
    /// Where `${VAR}` in a URL and `PGPASSWORD` are read.
    let environment: [String: String]
    let logger: Logger

    public init(environment: [String: String] = ProcessInfo.processInfo.environment,
                logger: Logger = Logger(label: "storesync.postgres")) {
        self.environment = environment
        self.logger = logger
    }

    /// The advisory lock that is the run lock (Invariant 5): one key for the database.
    static let runLockKey: Int64 = 0x5354_4f52_4553_524c  // "STORESRL"

    func location(_ url: String) throws(StoreSyncError) -> PostgresLocation {
        try PostgresLocation.parse(url, environment: environment)
    }

    func engine(_ location: PostgresLocation) throws(StoreSyncError) -> PostgresEngine {
        do {
            return try PostgresEngine(name: location.redacted, logger: logger) { () throws(StoreSyncError) in
                try location.connect(logger: logger)
            }
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: location.redacted, reason: "\(error)", cause: error)
        }
    }

    public func lock(_ url: String) throws(StoreSyncError) -> any Sendable {
        let location = try location(url)
        let connection = try location.connect(logger: logger)
        let taken: Bool
        do {
            let session = PostgresSession(connection: connection, logger: logger)
            taken = try session.value(as: Bool.self, "SELECT pg_try_advisory_lock(?)", [Self.runLockKey]) ?? false
        } catch {
            try? connection.close().wait()
            throw .storage(path: location.redacted, reason: "cannot take the run lock: \(error)")
        }
        guard taken else {
            try? connection.close().wait()
            throw .locked(store: location.redacted, holder: lockHolder(url) ?? "another storesync")
        }
        return PostgresRunLock(connection: connection)
    }

    /// The holder's client address, application name and start, from the
    /// server's own view of who holds the advisory lock.
    public func lockHolder(_ url: String) -> String? {
        guard let location = try? location(url), let connection = try? location.connect(logger: logger) else { return nil }
        defer { try? connection.close().wait() }
        let session = PostgresSession(connection: connection, logger: logger)
        let key = UInt64(bitPattern: Self.runLockKey)
        guard let row = try? session.rows("""
            SELECT a.pid, coalesce(a.application_name, ''), coalesce(host(a.client_addr), 'local socket'),
                   to_char(a.backend_start AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS"Z"')
            FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
            WHERE l.locktype = 'advisory' AND l.granted AND l.classid = ? AND l.objid = ?
                -- Advisory locks are per database; pg_locks lists the whole server's.
                AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
            """, [Int64(key >> 32), Int64(key & 0xFFFF_FFFF)]).first else { return nil }
        let application: String = row[1]
        return "\(application.isEmpty ? "a client" : application) (server pid \(row[0] as Int64), from \(row[2] as String), connected \(row[3] as String))"
    }

    public func exists(_ url: String) throws(StoreSyncError) -> Bool {
        let location = try location(url)
        // A server that is down, a wrong database or socket: `storeUnreachable`,
        // which `status` and `changes` report, not "no runs yet".
        let connection = try location.connect(logger: logger)
        defer { try? connection.close().wait() }
        let session = PostgresSession(connection: connection, logger: logger)
        do {
            return try session.value(as: Bool.self, "SELECT to_regclass('store_meta') IS NOT NULL") == true
        } catch {
            throw .storage(path: location.redacted, reason: "cannot tell whether a store is there: \(error)")
        }
    }

    public func open(_ url: String) throws(StoreSyncError) -> any SnapshotStore {
        try openStore(url, create: true)
    }

    public func openReadOnly(_ url: String) throws(StoreSyncError) -> any SnapshotStore {
        try openStore(url, create: false)
    }

    /// A worker's store: the snapshot wrapped to stage its pages and fence its writes.
    public func openFleet(_ url: String) throws(StoreSyncError) -> any FleetStore {
        let (snapshot, engine) = try openStoreAndEngine(url, create: true)
        return StagingFleetStore(snapshot: snapshot, postgres: engine)
    }

    func openStore(_ url: String, create: Bool) throws(StoreSyncError) -> SQLSnapshotStore {
        try openStoreAndEngine(url, create: create).store
    }

    private func openStoreAndEngine(_ url: String, create: Bool) throws(StoreSyncError) -> (store: SQLSnapshotStore, engine: PostgresEngine) {
        let location = try location(url)
        let engine = try engine(location)
        do {
            if create {
                try engine.write { db in try PostgresSchema.prepare(db, name: location.redacted) }
            } else {
                let ready = try engine.read { db in try db.value(as: Bool.self, "SELECT to_regclass('store_meta') IS NOT NULL") } ?? false
                guard ready else {
                    throw StoreSyncError.storage(path: location.redacted, reason: "no store in this database",
                                                 remedy: "Run the job once (`storesync run JOB`) or migrate a store into it")
                }
            }
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: location.redacted, reason: "cannot open: \(error)")
        }
        return (SQLSnapshotStore(name: location.redacted, engine: engine), engine)
    }

    /// A dry run's copy: the store read into a throwaway SQLite file, which
    /// the real store never sees (``StoreCopy``).
    public func openCopy(_ url: String) throws(StoreSyncError) -> (store: any SnapshotStore, discard: @Sendable () -> Void) {
        let store = try openStore(url, create: false)
        let (copy, discard) = try store.sqliteCopy()
        return (copy, discard)
    }
}

/// The run lock on PostgreSQL: a session advisory lock, released when this
/// connection closes (or the server sees its process gone).
final class PostgresRunLock: Sendable {
    let connection: PostgresConnection

    init(connection: PostgresConnection) {
        self.connection = connection
    }

    deinit {
        // Released before the connection closes: the server ends a session (and
        // frees its locks) a moment after the client hangs up, and a command
        // started right after this one (export after run) would find it taken.
        _ = try? PostgresSession(connection: connection, logger: Logger(label: "storesync.postgres"))
            .execute("SELECT pg_advisory_unlock(?)", [PostgresBackend.runLockKey])
        try? connection.close().wait()
    }
}

extension PostgresEngine {
    /// A SQLite copy of the store, taken in one consistent read and taken
    /// again once anything was written since (the engine's write count): an
    /// as-of export attaches it, the only read that needs a SQLite file.
    func sqliteSnapshot(of store: SQLSnapshotStore) throws -> SQLSnapshotStore {
        let writes = self.writes
        if let current = store.mirror.withLock({ $0 }), current.writes == writes { return current.store }
        let (copy, discard) = try store.sqliteCopy()
        store.mirror.withLock { previous in
            previous?.discard()
            previous = (writes, copy, discard)
        }
        return copy
    }
}

extension SQLSnapshotStore {
    /// The whole store copied into a new SQLite file in the temporary folder
    /// (named as a dry-run copy, so one left by a killed process is swept).
    func sqliteCopy() throws(StoreSyncError) -> (store: SQLSnapshotStore, discard: @Sendable () -> Void) {
        SQLiteBackend.removeStaleDryRunCopies()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(SQLiteBackend.dryRunPrefix)\(getpid())-\(UUID().uuidString)")
        let discard: @Sendable () -> Void = { try? FileManager.default.removeItem(at: folder) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let copy = try SQLSnapshotStore(path: folder.appendingPathComponent("snapshot.sqlite").path)
            _ = try StoreCopy.copy(from: engine, to: copy.engine)
            return (copy, discard)
        } catch {
            discard()
            throw .storage(path: path, reason: "cannot copy the store into SQLite: \(error)")
        }
    }
}

extension ServerEngine {
    /// PostgreSQL: the store a fleet of workers shares.
    static let postgres = ServerEngine(
        schemes: ["postgres", "postgresql"],
        checkForm: { url throws(StoreSyncError) in try PostgresLocation.checkForm(url) },
        backend: { environment in PostgresBackend(environment: environment) })
}
