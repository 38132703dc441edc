import Catalog
import Foundation

/// `storesync migrate`: a snapshot moved whole from one store to another —
/// a SQLite file into PostgreSQL when a job outgrows one machine, and back.
public enum StoreMigration {
    /// What a migration moved, table by table.
    public struct Summary: Sendable {
        public var from: String
        public var to: String
        /// Rows per table, the same on both sides (checked after the copy).
        public var tables: [(name: String, rows: Int)]
        /// The last run the snapshot holds, if any.
        public var lastRun: Int64?
    }

    /// Copies the store at `from` into the new, empty store at `to`. Both run
    /// locks are held meanwhile, so no run writes either side during the copy;
    /// the destination is written in one transaction (an interrupted migration
    /// leaves it empty) and its row counts are checked against the source's.
    public static func migrate(from: String, to: String, backend: DefaultBackend = DefaultBackend())
        throws(StoreSyncError) -> Summary {
        guard from != to else {
            throw StoreSyncError(.invalidArguments, "--from and --to name the same store (\(from)); nothing was copied")
        }
        guard try backend.exists(from) else {
            throw .storage(path: from, reason: "no store here to migrate", remedy: "Check the --from location")
        }
        let sourceLock = try backend.lock(from)
        let destinationLock = try backend.lock(to)
        defer { withExtendedLifetime((sourceLock, destinationLock)) {} }
        // The source is opened as a run would open it: an older SQLite file is brought up to date first.
        guard let source = try backend.open(from) as? SQLSnapshotStore,
              let destination = try backend.open(to) as? SQLSnapshotStore else {
            throw .storage(path: to, reason: "migrate copies between storesync's own stores only")
        }
        try refuseMidNight(source)
        let counts: StoreCopy.Counts
        do {
            counts = try StoreCopy.copy(from: source.engine, to: destination.engine)
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: to, reason: "migrating from \(source.path): \(error)")
        }
        let lastRun = try source.runs(limit: 1).first
        if let lastRun {
            // A SQLite destination keeps the marker that refuses a lost store later (Invariant 10).
            try backend.noteHistory(to, job: lastRun.job, runID: lastRun.id, at: lastRun.startedAt)
        }
        return Summary(from: source.path, to: destination.path, tables: counts.rows.map { ($0.table, $0.count) },
                       lastRun: lastRun?.id)
    }

    /// Workers take no run lock (their claims fence them), so the lock a
    /// migration holds does not keep a fleet out: a night whose pages are
    /// staged but not applied, or whose claims are live, is refused instead of
    /// being copied half done (the staging log is not part of the snapshot).
    private static func refuseMidNight(_ source: SQLSnapshotStore) throws(StoreSyncError) {
        guard source.engine is PostgresEngine else { return }
        let (staged, live): (Int, Int)
        do {
            (staged, live) = try source.engine.read { db in
                let staged = try db.value(as: Bool.self, "SELECT to_regclass('fleet_pages') IS NOT NULL") == true
                    ? try db.value(as: Int.self, "SELECT count(*) FROM fleet_pages") ?? 0 : 0
                let live = try db.value(as: Bool.self, "SELECT to_regclass('scope_claims') IS NOT NULL") == true
                    ? try db.value(as: Int.self, "SELECT count(*) FROM scope_claims WHERE NOT done AND expires_at > now()") ?? 0 : 0
                return (staged, live)
            }
        } catch {
            throw .storage(path: source.path, reason: "checking for a fleet's night in progress: \(error)")
        }
        guard staged == 0, live == 0 else {
            throw StoreSyncError(
                .invalidArguments,
                "a fleet's night is in progress on \(source.path) (\(staged) staged page(s) not yet applied, \(live) live claim(s)); nothing was copied",
                remedy: "Let the night finish (its workers apply what they staged; `storesync status` shows the run), then migrate")
        }
    }
}
