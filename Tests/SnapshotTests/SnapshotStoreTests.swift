import Catalog
import Foundation
import GRDB
import Snapshot
import Testing
import TestSupport

/// The store's semantics, on every engine: each test runs once on SQLite and
/// once on PostgreSQL (when installed: ``StoreEngine/tested``), with the same
/// assertions, since `SQLSnapshotStore` is one logic over both. The tests at
/// the end are about SQLite's file itself (its bulk-load index) and run there only.
@Suite struct SnapshotStoreTests {
    let directory = TestPaths.temporaryDirectory("snapshot")
    var path: String { directory.appendingPathComponent("store.sqlite").path }

    /// The SQLite backend's file, read directly: the SQLite-only tests are white-box tests of that file.
    func database() throws -> DatabaseQueue {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path, configuration: configuration)
    }

    func podcast(_ key: Int, name: String = "Show", count: Int = 1) -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: String(key), fields: ["trackName": .string(name), "trackCount": .int(Int64(count))])
    }

    /// Ends a scope the way the runner does: record its state, then sweep it.
    @discardableResult
    func finish(_ store: SQLSnapshotStore, _ run: RunInfo, scope: String = "s", state: ScopeState = .complete,
                policy: RemovalPolicy = .init()) throws -> RemovalResult {
        try store.finishScope(runID: run.id, source: "src", scope: scope, state: state, error: nil)
        return try store.sweepScope(runID: run.id, source: "src", scope: scope, removal: policy)
    }

    func page(_ run: RunInfo, _ records: [Catalog.Record], scope: String = "s", page: Int = 0) -> PageInput {
        PageInput(runID: run.id, source: "src", scope: scope, page: page, records: records)
    }

    @Test(arguments: StoreEngine.tested)
    func firstRunAddsEverythingSecondIdenticalRunWritesNothing(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let run1 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        let first = try await store.apply(page(run1, (1...50).map { podcast($0) }))
        #expect(first.added == 50)
        #expect(first.recordRowsWritten == 50)
        try finish(store, run1)
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1))

        let run2 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 2), simulated: false)
        let second = try await store.apply(page(run2, (1...50).map { podcast($0) }))
        #expect(second == PageResult(added: 0, changed: 0, unchanged: 50, duplicates: 0, recordRowsWritten: 0))
        let removal = try finish(store, run2)
        #expect(removal.recordRowsWritten == 0)
        #expect(try store.changes(runID: run2.id).isEmpty)
    }

    @Test(arguments: StoreEngine.tested)
    func changedRecordsLogFieldLevelBeforeAndAfter(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let run1 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run1, [podcast(1, name: "Old", count: 3), podcast(2)]))
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date())
        let run2 = try store.beginRun(job: "t", at: Date(), simulated: false)
        let result = try await store.apply(page(run2, [podcast(1, name: "New", count: 3), podcast(2)]))
        #expect(result.changed == 1)
        #expect(result.unchanged == 1)
        #expect(result.recordRowsWritten == 1)
        let changes = try store.changes(runID: run2.id)
        #expect(changes.count == 1)
        #expect(changes.first?.field == "trackName")
        #expect(changes.first?.before == "\"Old\"")
        #expect(changes.first?.after == "\"New\"")
    }

    @Test(arguments: StoreEngine.tested)
    func duplicatesWithinARunAreCountedOnce(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let run = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run, [podcast(1), podcast(2)], page: 0))
        let again = try await store.apply(page(run, [podcast(2), podcast(3)], page: 1))
        #expect(again.added == 1)
        #expect(again.duplicates == 1)
        #expect(again.unchanged == 0)
    }

    /// Issue item 13: a key twice in one run in two versions, the same way
    /// every night (on one page, or on two pages of a scope), is a record
    /// whose last version wins; the night after, nothing changed, and nothing
    /// is logged or counted as changed.
    @Test(arguments: StoreEngine.tested, [false, true])
    func aKeyRepeatedInTwoVersionsTheSameEveryNightChangesNothing(engine: StoreEngine, acrossPages: Bool) async throws {
        let store = try await engine.makeStore().store
        func night(_ at: Double) async throws -> (RunInfo, [PageResult]) {
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: at), simulated: false)
            let versions = [podcast(1, name: "A"), podcast(1, name: "B"), podcast(2)]
            let pages = acrossPages ? [page(run, [versions[0]], page: 0), page(run, [versions[1], versions[2]], page: 1)]
                : [page(run, versions)]
            var results: [PageResult] = []
            for input in pages { results.append(try await store.apply(input)) }
            try finish(store, run)
            try store.finishRun(run.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: at + 1))
            return (run, results)
        }
        _ = try await night(0)
        #expect(try store.records(source: "src").first { $0.key == "1" }?.fields()["trackName"] == "B", "the last version wins")
        for at in [10.0, 20] {
            let (run, results) = try await night(at)
            #expect(try store.changes(runID: run.id).isEmpty)
            #expect(results.reduce(0) { $0 + $1.changed } == 0)
            #expect(results.reduce(0) { $0 + $1.unchanged } == 2, "each record counts once, as what it is at the end")
            #expect(try store.sourceCounts(runID: run.id).first?.changed == 0)
            #expect(try store.records(source: "src").first { $0.key == "1" }?.fields()["trackName"] == "B")
        }
    }

    /// A key twice in one run whose last version really differs from last
    /// night's: one change, from what was stored to what the run ends with.
    @Test(arguments: StoreEngine.tested, [false, true])
    func aRepeatedKeyThatReallyChangedLogsOneChange(engine: StoreEngine, acrossPages: Bool) async throws {
        let store = try await engine.makeStore().store
        let run1 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        _ = try await store.apply(page(run1, [podcast(1, name: "A"), podcast(1, name: "B")]))
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1))

        let run2 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 2), simulated: false)
        let versions = [podcast(1, name: "A"), podcast(1, name: "C")]
        var results: [PageResult] = []
        if acrossPages {
            results.append(try await store.apply(page(run2, [versions[0]], page: 0)))
            results.append(try await store.apply(page(run2, [versions[1]], page: 1)))
        } else {
            results.append(try await store.apply(page(run2, versions)))
        }
        let changes = try store.changes(runID: run2.id)
        #expect(changes.map { [$0.op, $0.field, $0.before, $0.after] } == [["changed", "trackName", "\"B\"", "\"C\""]])
        #expect(results.reduce(0) { $0 + $1.changed } == 1)
        #expect(results.reduce(0) { $0 + $1.unchanged } == 0)
        #expect(try store.sourceCounts(runID: run2.id).first?.changed == 1)
    }

    /// Pages applied in one transaction give what they give one by one:
    /// a key met on two pages of the batch in two versions is one row,
    /// rewritten (not inserted twice) and counted once, as the run's addition
    /// it is, and the checkpoint is the last page's.
    @Test(arguments: StoreEngine.tested)
    func aBatchOfPagesAppliesAsThePagesOneByOne(engine: StoreEngine) async throws {
        let pages: [[Catalog.Record]] = [
            (1...4).map { podcast($0) },
            [podcast(4, name: "Drifted"), podcast(5), podcast(5)],
            [podcast(6), podcast(1)],
        ]
        var results: [[PageResult]] = []
        var stored: [[String]] = []
        var checkpoints: [ScopeCheckpoint?] = []
        for batched in [false, true] {
            let store = try await engine.makeStore().store
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
            let inputs = pages.enumerated().map { page(run, $0.element, page: $0.offset) }
            if batched {
                results.append(try await store.apply(inputs))
            } else {
                var one: [PageResult] = []
                for input in inputs { one.append(try await store.apply(input)) }
                results.append(one)
            }
            stored.append(try store.queryRows("SELECT key, hash, changed_run FROM records ORDER BY key, rowid"))
            checkpoints.append(try store.checkpoint(runID: run.id, source: "src", scope: "s"))
        }
        #expect(results[1] == results[0])
        #expect(results[1].map(\.added) == [4, 1, 1])
        #expect(results[1][1].changed == 0)
        #expect(results[1][1].duplicates == 2)
        #expect(results[1][1].recordRowsWritten == 2)
        #expect(stored[1] == stored[0])
        #expect(stored[1].count == 6)
        #expect(checkpoints[1] == checkpoints[0])
        #expect(checkpoints[1]?.nextPage == 3)
    }

    /// Invariant 2: removal only after `afterMisses` complete crawls missed the record.
    @Test(arguments: StoreEngine.tested)
    func removalWaitsForConsecutiveMissesOfCompleteScopes(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let policy = RemovalPolicy(afterMisses: 2, maxRatio: 0.5)
        func night(_ keys: [Int], state: ScopeState = .complete) async throws -> RemovalResult {
            let run = try store.beginRun(job: "t", at: Date(), simulated: false)
            _ = try await store.apply(page(run, keys.map { podcast($0) }))
            let result = try finish(store, run, state: state, policy: policy)
            try store.finishRun(run.id, status: .ok, message: nil, at: Date())
            return result
        }
        _ = try await night(Array(1...10))
        let firstMiss = try await night(Array(1...9))
        #expect(firstMiss.removed == 0)
        #expect(firstMiss.pending == 1)
        let incomplete = try await night(Array(1...9), state: .failed)
        #expect(incomplete.removed == 0, "an incomplete scope never removes")
        let secondMiss = try await night(Array(1...9))
        #expect(secondMiss.removed == 1)
        #expect(secondMiss.recordRowsWritten == 1)
        #expect(try store.records().count == 9)
    }

    @Test(arguments: StoreEngine.tested)
    func aRecordThatComesBackResetsItsMisses(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let policy = RemovalPolicy(afterMisses: 2, maxRatio: 1)
        for keys in [[1, 2], [1], [1, 2], [1]] {
            let run = try store.beginRun(job: "t", at: Date(), simulated: false)
            _ = try await store.apply(page(run, keys.map { podcast($0) }))
            let result = try finish(store, run, policy: policy)
            #expect(result.removed == 0)
            try store.finishRun(run.id, status: .ok, message: nil, at: Date())
        }
    }

    /// A record that moved to another scope of the same source is not removed
    /// from its old scope, whatever order the scopes finish in.
    @Test(arguments: StoreEngine.tested)
    func aRecordThatMovedScopesIsChangedNotRemoved(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let policy = RemovalPolicy(afterMisses: 1, maxRatio: 1)
        let run1 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run1, [podcast(1), podcast(2, name: "News")], scope: "news"))
        _ = try await store.apply(page(run1, [podcast(3)], scope: "history"))
        try finish(store, run1, scope: "news", policy: policy)
        try finish(store, run1, scope: "history", policy: policy)
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date())

        let run2 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run2, [podcast(1)], scope: "news"))
        try store.finishScope(runID: run2.id, source: "src", scope: "news", state: .complete, error: nil)
        let moved = try await store.apply(page(run2, [podcast(3), podcast(2, name: "History")], scope: "history"))
        try store.finishScope(runID: run2.id, source: "src", scope: "history", state: .complete, error: nil)
        #expect(moved.changed == 1)
        let swept = try store.sweepScope(runID: run2.id, source: "src", scope: "news", removal: policy)
        #expect(swept.removed == 0)
        #expect(try store.changes(runID: run2.id).map(\.op) == ["changed"])
    }

    @Test(arguments: StoreEngine.tested)
    func aScopeIsSweptOnlyOncePerRun(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let policy = RemovalPolicy(afterMisses: 3, maxRatio: 1)
        let run1 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run1, [podcast(1), podcast(2)]))
        try finish(store, run1, policy: policy)
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date())
        let run2 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run2, [podcast(1)]))
        #expect(try finish(store, run2, policy: policy).pending == 1)
        // A resumed run sweeping again must not count the miss twice.
        #expect(try store.sweepScope(runID: run2.id, source: "src", scope: "s", removal: policy) == RemovalResult())
        #expect(try store.queryRows("SELECT count FROM misses") == ["1"])
    }

    /// The sweep finds unseen records from the digest index when they are few
    /// and by scanning the scope when they are many; both must remove exactly
    /// the records missed, of the swept scope only.
    @Test(arguments: StoreEngine.tested, [20, 12_000])
    func sweepsRemoveExactlyTheMissedRecordsOfTheirScope(engine: StoreEngine, missing: Int) async throws {
        let store = try await engine.makeStore().store
        let total = missing + 30
        let run1 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        _ = try await store.apply(page(run1, (1...total).map { podcast($0) }, scope: "a"))
        _ = try await store.apply(page(run1, (1...10).map { podcast(1_000_000 + $0) }, scope: "b"))
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1))

        // Run 2 sees only the last 30 records of "a" and nothing of "b".
        let run2 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 2), simulated: false)
        _ = try await store.apply(page(run2, ((missing + 1)...total).map { podcast($0) }, scope: "a"))
        let policy = RemovalPolicy(afterMisses: 1, maxRatio: 1)
        let swept = try finish(store, run2, scope: "a", policy: policy)
        #expect(swept.removed == missing)
        try store.finishScope(runID: run2.id, source: "src", scope: "b", state: .failed, error: RunProblem(code: "fetch-failed", message: "x"))
        #expect(try store.sweepScope(runID: run2.id, source: "src", scope: "b", removal: policy).removed == 0)
        let keys = Set(try store.records(source: "src").map(\.key))
        let kept: [String] = ((missing + 1)...total).map { String($0) }
        let untouched: [String] = (1...10).map { String(1_000_000 + $0) }
        #expect(keys == Set(kept + untouched))
        let removed = try store.changes(runID: run2.id).filter { $0.op == "removed" }
        #expect(Set(removed.map(\.key)) == Set((1...missing).map(String.init)))
    }

    @Test(arguments: StoreEngine.tested)
    func removalGuardRefusesToEmptyAScope(engine: StoreEngine) async throws {
        let store = try await engine.makeStore().store
        let policy = RemovalPolicy(afterMisses: 1, maxRatio: 0.1)
        let run1 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run1, (1...100).map { podcast($0) }))
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date())
        let run2 = try store.beginRun(job: "t", at: Date(), simulated: false)
        _ = try await store.apply(page(run2, (1...50).map { podcast($0) }))
        let result = try finish(store, run2, policy: policy)
        #expect(result.removed == 0)
        #expect(result.guardWarning != nil)
        #expect(try store.records().count == 100)
    }

    @Test(arguments: StoreEngine.tested)
    func anUnfinishedRunIsResumedWithWhatItHadSeen(engine: StoreEngine) async throws {
        let made = try await engine.makeStore()
        do {
            let store = made.store
            let run = try store.beginRun(job: "t", at: Date(), simulated: true)
            #expect(run.night == 1)
            _ = try await store.apply(page(run, [podcast(1)], page: 0))
            // No finishRun: the process "died" here.
        }
        // A new process: nothing of the first store object's memory carries over.
        let store = try made.reopen()
        let resumed = try store.beginRun(job: "t", at: Date(), simulated: true)
        #expect(resumed.resumed)
        #expect(resumed.night == 1)
        #expect(try store.checkpoint(runID: resumed.id, source: "src", scope: "s") == ScopeCheckpoint(state: .running, nextPage: 1))
        let result = try await store.apply(page(resumed, [podcast(1), podcast(2)], page: 1))
        #expect(result.duplicates == 1, "page 0 of the killed attempt still counts as seen")
        try store.finishRun(resumed.id, status: .ok, message: nil, at: Date())
        let next = try store.beginRun(job: "t", at: Date(), simulated: true)
        #expect(next.night == 2)
        #expect(try store.integrityCheck() == "ok")
    }

    /// Invariant 5, through the backend a job's `store:` picks: a lock file
    /// beside a SQLite store, an advisory lock on a PostgreSQL one.
    @Test(arguments: StoreEngine.tested)
    func secondRunOnTheSameStoreIsLockedOut(engine: StoreEngine) async throws {
        let location = try await engine.makeStore().location
        let backend = DefaultBackend()
        do {
            let lock = try backend.lock(location)
            #expect(throws: StoreSyncError.self) { try backend.lock(location) }
            #expect(backend.lockHolder(location) != nil)
            // Another store (on PostgreSQL, another database of the same server) is not held by it.
            #expect(backend.lockHolder(try await engine.makeLocation()) == nil)
            withExtendedLifetime(lock) {}
        }
        // Released with its holder: the next run takes it.
        _ = try backend.lock(location)
    }

    // MARK: - SQLite only: the file's own key index

    /// A first load runs without the key index and builds it at the end; a
    /// load killed in between finds it built again when the store reopens.
    /// SQLite only: the index dropped is the file's (PostgreSQL loads with its index).
    @Test func aFirstLoadDropsTheKeyIndexOnlyOnAnEmptyStoreAndItAlwaysComesBack() async throws {
        func keyIndexExists(_ store: SQLSnapshotStore) throws -> Bool {
            try database().read { db in
                try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE name = 'records_by_key')") ?? false
            }
        }
        var store: SQLSnapshotStore? = try SQLSnapshotStore(path: path)
        let run = try store!.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        #expect(try store!.beginFirstLoad())
        #expect(try !keyIndexExists(store!))
        let first = try await store!.apply(page(run, (1...30).map { podcast($0) }))
        let second = try await store!.apply(page(run, [podcast(3, name: "Renamed")], page: 1))
        #expect(first.added == 30 && second.recordRowsWritten == 1 && second.changed == 0,
                "a key met twice is rewritten by rowid, with no key index, and stays an addition of this run")
        // Killed here: the next open builds the index again.
        store = nil
        let reopened = try SQLSnapshotStore(path: path)
        #expect(try keyIndexExists(reopened))
        #expect(try !reopened.beginFirstLoad(), "the store is no longer empty")
        #expect(try keyIndexExists(reopened))
        #expect(try reopened.records(source: "src").count == 30)
    }
}

/// What `status` relies on: a lock it can ask about and a store it can read without writing.
@Suite struct ReadOnlyAccessTests {
    let directory = TestPaths.temporaryDirectory("read-only")
    var path: String { directory.appendingPathComponent("store.sqlite").path }

    @Test func theLockIsProbedWithoutTakingIt() throws {
        #expect(RunLock.holder(storePath: path) == nil)
        #expect(!FileManager.default.fileExists(atPath: path + ".lock"), "a probe creates nothing")
        do {
            let lock = try RunLock(storePath: path)
            let holder = RunLock.holder(storePath: path)
            #expect(holder?.hasPrefix("pid \(ProcessInfo.processInfo.processIdentifier) since ") == true, "\(String(describing: holder))")
            // Still held by `lock` alone: probing took nothing.
            #expect(throws: StoreSyncError.self) { try RunLock(storePath: path) }
            withExtendedLifetime(lock) {}
        }
        #expect(RunLock.holder(storePath: path) == nil)
        _ = try RunLock(storePath: path)
    }

    @Test func aReadOnlyOpenReadsWithoutWriting() async throws {
        do {
            let store = try SQLSnapshotStore(path: path)
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
            _ = try await store.apply(PageInput(runID: run.id, source: "src", scope: "s", page: 0,
                                                records: [Catalog.Record(entity: .podcast, key: "1", fields: ["trackName": .string("A")])]))
            try store.finishRun(run.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1))
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            let reader = try SQLSnapshotStore(path: path, readOnly: true)
            #expect(try reader.runs(limit: 5).map(\.status) == [.ok])
            #expect(try reader.recordCount(of: .podcast) == 1)
            #expect(throws: StoreSyncError.self) { try reader.beginRun(job: "t", at: Date(), simulated: false) }
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
    }

    @Test func aReadOnlyOpenRefusesAnOlderSchemaAndLeavesItAlone() throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try DatabaseQueue(path: path).write { db in
            try db.execute(sql: """
                CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                INSERT INTO grdb_migrations VALUES ('v1');
                """)
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: path))
        do {
            _ = try SQLSnapshotStore(path: path, readOnly: true)
            Issue.record("an older store must be refused")
        } catch {
            #expect("\(error)".contains("schema is older than this storesync"), "\(error)")
        }
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == before)
        #expect(throws: StoreSyncError.self) { try SQLSnapshotStore(path: directory.appendingPathComponent("none.sqlite").path, readOnly: true) }
    }
}
