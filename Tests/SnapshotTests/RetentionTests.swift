import Catalog
import Foundation
import GRDB
import Snapshot
import Testing
import TestSupport

/// `retention:`: history older than N days goes, live state stays, and the space comes back.
/// What is pruned is checked on each engine (``StoreEngine/tested``); how space comes back, on SQLite's file.
@Suite struct RetentionTests {
    let directory = TestPaths.temporaryDirectory("retention")
    var path: String { directory.appendingPathComponent("store.sqlite").path }

    /// A podcast whose name and notes change every night while it is `changing`, so every night logs changes.
    func podcast(_ key: Int, night: Int, notes: Int = 0, changing: Bool = true) -> Catalog.Record {
        let version = changing ? night : 0
        return Catalog.Record(entity: .podcast, key: String(key), fields: [
            "trackName": .string("Show \(key) on night \(version)"),
            "notes": .string(String(repeating: "night \(version) ", count: notes)),
        ])
    }

    /// One finished night: `count` podcasts, the first `changing` of them (all by default) changed since the night before.
    @discardableResult
    func night(_ store: SQLSnapshotStore, _ night: Int?, at date: Date = Date(), count: Int = 20, changing: Int? = nil,
               notes: Int = 0, exportsOwed: Bool = false) async throws -> RunInfo {
        let run = try store.beginRun(job: "t", at: date, simulated: night != nil, night: night, resumeExports: false)
        let records = (1...count).map { podcast($0, night: night ?? 0, notes: notes, changing: $0 <= (changing ?? count)) }
        _ = try await store.apply(PageInput(runID: run.id, source: "src", scope: "s", page: 0, records: records))
        try store.finishScope(runID: run.id, source: "src", scope: "s", state: .complete, error: nil)
        _ = try store.sweepScope(runID: run.id, source: "src", scope: "s", removal: RemovalPolicy())
        try store.finishRun(run.id, status: .ok, message: nil, at: date, exportsFollow: exportsOwed)
        return run
    }

    func changeCount(_ store: SQLSnapshotStore, runID: Int64? = nil) throws -> Int {
        var count = 0
        try store.forEachChange(runID: runID, order: .insertion) { _ in count += 1 }
        return count
    }

    @Test(arguments: StoreEngine.tested)
    func simulatedNightsKeepTheLastNDays(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        var runs: [RunInfo] = []
        for n in 1...10 { runs.append(try await night(store, n)) }
        let logged = try runs.map { try changeCount(store, runID: $0.id) }

        let pruned = try store.pruneHistory(olderThan: 3, before: runs[9].id)
        #expect(pruned.cutoff == .night(7))
        #expect(pruned.runs == 7)
        #expect(pruned.changes == logged[0..<7].reduce(0, +))
        // Nights 8, 9 and 10 are the last three days.
        #expect(try store.runs(limit: 100).map(\.night) == [10, 9, 8])
        #expect(try changeCount(store) == logged[7...].reduce(0, +))
        for run in runs[..<7] { #expect(try store.sourceCounts(runID: run.id).isEmpty) }
        // Live state is untouched: the records, their scope.
        #expect(try store.recordCount(of: .podcast) == 20)
        #expect(try store.scopeStates().map(\.scope) == ["s"])

        // Pruning again at once finds nothing: nothing older is left.
        #expect(try store.pruneHistory(olderThan: 3, before: runs[9].id).isEmpty)
    }

    @Test(arguments: StoreEngine.tested)
    func realRunsAgeByTheirStartTimes(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let day = 86_400.0
        var runs: [RunInfo] = []
        for n in 0..<6 { runs.append(try await night(store, nil, at: Date(timeIntervalSince1970: 1_000_000 + Double(n) * day))) }
        let pruned = try store.pruneHistory(olderThan: 2, before: runs[5].id)
        #expect(pruned.cutoff == .date(Date(timeIntervalSince1970: 1_000_000 + 3 * day)))
        #expect(pruned.runs == 4)
        #expect(try store.runs(limit: 100).map(\.id) == [runs[5].id, runs[4].id])
    }

    @Test(arguments: StoreEngine.tested)
    func neverPrunesTheCurrentRunNorOneWhoseExportsAreOwed(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        // Night 1's crawl finished but its exports never did: a resume still needs it.
        let owed = try await night(store, 1, exportsOwed: true)
        for n in 2...6 { try await night(store, n) }
        // A re-run of an old night is the current run, whatever its age.
        let rerun = try await night(store, 2)
        let pruned = try store.pruneHistory(olderThan: 1, before: rerun.id)
        #expect(pruned.isEmpty)

        let last = try await night(store, 9)
        _ = try store.pruneHistory(olderThan: 1, before: last.id)
        let left = try store.runs(limit: 100).map(\.id)
        #expect(left.contains(owed.id))
        #expect(left.contains(last.id))
        #expect(left.count == 2)
    }

    /// SQLite only: VACUUM, auto_vacuum and free pages are the file's (PostgreSQL's own autovacuum hands space back).
    @Test func prunedSpaceIsHandedBackThenIncrementally() async throws {
        let store = try SQLSnapshotStore(path: path)
        var last = try await night(store, 1, count: 300, changing: 30, notes: 150)
        for n in 2...12 { last = try await night(store, n, count: 300, changing: 30, notes: 150) }
        let before = try fileFacts()
        #expect(before.autoVacuum == 0, "a new store starts without auto_vacuum")

        // Most of the file is change log older than two nights: a full VACUUM, which turns incremental vacuum on.
        let first = try store.pruneHistory(olderThan: 2, before: last.id)
        #expect(first.reclaim == .full)
        #expect(first.bytesAfter < first.bytesBefore / 2, "\(first.bytesBefore) → \(first.bytesAfter) bytes")
        let after = try fileFacts()
        #expect(after.autoVacuum == 2)
        #expect(after.freePages == 0)
        #expect(after.bytes < before.bytes / 2)
        #expect(try store.recordCount(of: .podcast) == 300)

        // One night's worth of history is too little to move pages for: later nights reuse it.
        last = try await night(store, 13, count: 300, changing: 30, notes: 150)
        let nightly = try store.pruneHistory(olderThan: 2, before: last.id)
        #expect(nightly.runs == 1)
        #expect(nightly.reclaim == PruneResult.Reclaim.none)
        let reused = try fileFacts()
        last = try await night(store, 14, count: 300, changing: 30, notes: 150)
        #expect(try fileFacts().freePages < reused.freePages, "the next night's writes reuse the freed pages")

        // A big prune on a store already switched over is an incremental vacuum.
        for n in 15...24 { last = try await night(store, n, count: 300, changing: 30, notes: 150) }
        let big = try store.pruneHistory(olderThan: 1, before: last.id)
        #expect(big.reclaim == .incremental)
        #expect(big.bytesAfter < big.bytesBefore)
        #expect(try fileFacts().freePages == 0)
        #expect(try store.integrityCheck() == "ok")
    }

    struct FileFacts {
        var bytes: Int64
        var freePages: Int
        var autoVacuum: Int
    }

    func fileFacts() throws -> FileFacts {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        let (free, mode) = try queue.read { db in
            (try Int.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0, try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") ?? 0)
        }
        // The write-ahead log holds what is not checkpointed yet: both are the store's size on disk.
        let bytes = [path, path + "-wal"].reduce(Int64(0)) { total, file in
            total + ((try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0)
        }
        return FileFacts(bytes: bytes, freePages: free, autoVacuum: mode)
    }
}
