import Catalog
import Foundation

/// What ``SnapshotStore/pruneHistory(olderThan:before:)`` removed.
public struct PruneResult: Sendable, Equatable {
    /// Runs deleted, with their per-source counters.
    public var runs = 0
    /// Change-log rows deleted.
    public var changes = 0
    /// How the cut was measured: the last pruned night of a simulated job, or
    /// the moment runs must have started before to be pruned.
    public var cutoff: Cutoff?
    /// The store's size on disk before and after (its main file and write-ahead log).
    public var bytesBefore: Int64 = 0
    public var bytesAfter: Int64 = 0
    /// How free pages were handed back to the file system, if they were.
    public var reclaim: Reclaim = .none

    public enum Cutoff: Sendable, Equatable {
        /// Runs of this night and earlier.
        case night(Int)
        /// Runs started at or before this moment.
        case date(Date)
    }

    public enum Reclaim: String, Sendable, Equatable {
        /// Too little was freed to be worth moving pages: later writes reuse it.
        case none
        /// `PRAGMA incremental_vacuum`: free pages cut off the end of the file.
        case incremental
        /// A full `VACUUM` that also switched the file to incremental vacuum.
        case full
    }

    public init() {}

    /// Nothing was deleted.
    public var isEmpty: Bool { runs == 0 && changes == 0 }
}

extension SQLSnapshotStore {
    /// Free pages, as a fraction of the file, above which a prune hands them
    /// back to the file system. Below it they are left to the next nights'
    /// writes, which reuse them: a store pruned every night stays the same
    /// size without moving pages around each time.
    static let reclaimFraction = 0.25

    /// Deletes the runs that started `days` days or more before run `runID`,
    /// with their change log and per-source counters, then hands the space
    /// back if enough of the file is free.
    ///
    /// Age is counted in nights when run `runID` crawled a simulated night
    /// (runs of night `n − days` and earlier go), otherwise on start times.
    /// Never pruned: run `runID` itself, a run still running, and a run whose
    /// exports are owed (a resume needs both). Scopes, checkpoints, misses and
    /// page memos are live state and are not touched, whatever run they name.
    package func pruneHistory(olderThan days: Int, before runID: Int64) throws(StoreSyncError) -> PruneResult {
        var result = PruneResult()
        guard days > 0 else { return result }
        result.bytesBefore = bytesOnDisk()
        try wrap {
            try engine.write { db in
                guard let current = try db.row("SELECT night, started_at FROM runs WHERE id = ?",
                                                     [runID]) else { return }
                let condition: String
                let bound: any SQLArgument
                if let night: Int = current["night"] {
                    condition = "night IS NOT NULL AND night <= ?"
                    bound = night - days
                    result.cutoff = .night(night - days)
                } else {
                    let started: Double = current["started_at"]
                    condition = "started_at <= ?"
                    bound = started - Double(days) * 86_400
                    result.cutoff = .date(Date(timeIntervalSince1970: started - Double(days) * 86_400))
                }
                // The victims once, so every table loses exactly the same runs.
                // Each engine names its schema of temporary tables its own way.
                let victims = db.dialect.temporaryTable("pruned_runs")
                try db.execute("DROP TABLE IF EXISTS \(victims)")
                try db.execute("CREATE TEMP TABLE pruned_runs (id BIGINT NOT NULL)")
                try db.execute("""
                    INSERT INTO pruned_runs SELECT id FROM runs
                    WHERE \(condition) AND id <> ? AND status <> 'running' AND exported = 1
                    """, [bound, runID])
                result.changes = try db.execute("DELETE FROM changes WHERE run_id IN (SELECT id FROM \(victims))")
                try db.execute("DELETE FROM run_sources WHERE run_id IN (SELECT id FROM \(victims))")
                try db.execute("DELETE FROM run_pages WHERE run_id IN (SELECT id FROM \(victims))")
                result.runs = try db.execute("DELETE FROM runs WHERE id IN (SELECT id FROM \(victims))")
                try db.execute("DROP TABLE \(victims)")
            }
        }
        if !result.isEmpty {
            result.reclaim = try reclaimFreePages()
        }
        result.bytesAfter = bytesOnDisk()
        return result
    }

    /// Hands free space back to the file system when it is more than
    /// ``reclaimFraction`` of the store (the engine's way: ``SQLEngine/reclaimFreeSpace(fraction:)``).
    func reclaimFreePages() throws(StoreSyncError) -> PruneResult.Reclaim {
        try wrap { try engine.reclaimFreeSpace(fraction: Self.reclaimFraction) }
    }

    /// What the store takes on disk, in bytes.
    func bytesOnDisk() -> Int64 { engine.bytesOnDisk() }
}
