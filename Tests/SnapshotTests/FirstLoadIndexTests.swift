import Catalog
import Foundation
@testable import Snapshot
import Testing
import TestSupport

extension FirstLoadTests {
    /// On every engine the two key indexes are dropped for a first load and
    /// built at its end; a page not all new builds the entities' at once; a
    /// load killed in between finds both built when the store is next opened
    /// for writing, before anything diffs against it.
    @Test(arguments: StoreEngine.tested)
    func theKeyIndexesAreMissingOnlyWhileAFirstLoadHolds(_ engine: StoreEngine) async throws {
        func indexes(_ store: SQLSnapshotStore) throws -> Set<String> {
            let sql = engine == .sqlite
                ? "SELECT name FROM sqlite_master WHERE type = 'index'"
                : "SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()"
            return Set(try store.engine.read { db in try db.rows(sql).map { $0[0] as String } })
        }
        let made = try await engine.makeStore()
        let store = made.store
        let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        let pages = pages(run)
        #expect(try store.beginFirstLoad())
        _ = try await store.apply(pages[0])
        let loading = try indexes(store)
        #expect(loading.isDisjoint(with: ["records_by_key", "entities_by_key"]), "\(loading)")
        _ = try await store.apply(pages[2])
        let left = try indexes(store)
        #expect(left.contains("entities_by_key"), "a key met again ends the first-load mode: \(left)")
        #expect(try !indexes(store).contains("records_by_key"))
        try store.endFirstLoad()
        #expect(try indexes(store).isSuperset(of: ["records_by_key", "entities_by_key"]))

        // Killed during a load: nothing builds the indexes but the next open.
        let killed = try await engine.makeStore()
        let killedRun = try killed.store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        #expect(try killed.store.beginFirstLoad())
        _ = try await killed.store.apply(pages[0].with(runID: killedRun.id))
        #expect(try indexes(killed.store).isDisjoint(with: ["records_by_key", "entities_by_key"]))
        let reopened = try killed.reopen()
        #expect(try indexes(reopened).isSuperset(of: ["records_by_key", "entities_by_key"]))
        #expect(try !reopened.beginFirstLoad(), "the store holds the load's rows")
        #expect(try reopened.queryInteger("SELECT count(*) FROM entities") == 720)
        // The unique index holds: the same key cannot be stored twice.
        #expect(throws: (any Error).self) {
            try reopened.engine.write { db in
                try db.execute("INSERT INTO entities (rowid, entity, key, fields, hash, sources, added_run, changed_run) "
                               + "SELECT rowid + 1000000, entity, key, fields, hash, sources, added_run, changed_run FROM entities LIMIT 1")
            }
        }
    }
}

extension FirstLoadTests {
    /// On PostgreSQL the change log's key to `runs` is dropped for a first
    /// load (a lookup a change row) and added back, every row checked at once,
    /// at its end; a load killed in between finds it added back at the next
    /// open for writing; and the key refuses a change of a run that is not.
    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func theChangeLogsKeyToItsRunIsMissingOnlyWhileAFirstLoadHolds() async throws {
        func keys(_ store: SQLSnapshotStore) throws -> Set<String> {
            Set(try store.engine.read { db in
                try db.rows("SELECT conname FROM pg_constraint WHERE contype = 'f' AND conrelid = 'changes'::regclass").map { $0[0] as String }
            })
        }
        func orphanChange(_ store: SQLSnapshotStore) throws {
            try store.engine.write { db in
                try db.execute("INSERT INTO changes (id, run_id, source, entity, key, op) VALUES (999999, 424242, 's', 'product', 'k', 'added')")
            }
        }
        let made = try await StoreEngine.postgres.makeStore()
        let store = made.store
        #expect(try keys(store) == ["changes_run_id_fkey"])
        let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        let pages = pages(run)
        #expect(try store.beginFirstLoad())
        _ = try await store.apply(pages[0])
        #expect(try keys(store).isEmpty)
        try store.endFirstLoad()
        #expect(try keys(store) == ["changes_run_id_fkey"])
        #expect(throws: (any Error).self) { try orphanChange(store) }

        let killed = try await StoreEngine.postgres.makeStore()
        let killedRun = try killed.store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        #expect(try killed.store.beginFirstLoad())
        _ = try await killed.store.apply(pages[0].with(runID: killedRun.id))
        #expect(try keys(killed.store).isEmpty)
        let reopened = try killed.reopen()
        #expect(try keys(reopened) == ["changes_run_id_fkey"])
        #expect(throws: (any Error).self) { try orphanChange(reopened) }
        #expect(try reopened.queryInteger("SELECT count(*) FROM changes WHERE run_id = \(killedRun.id)") ?? 0 > 0, "the load logged its changes")
    }
}
