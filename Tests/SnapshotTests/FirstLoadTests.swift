import Catalog
import Foundation
import GRDB
import Snapshot
import Testing
import TestSupport

/// A first load into an empty store is a mode of the one writer (no lookups,
/// on SQLite the key indexes built at the end): what it leaves must be
/// exactly what the night's diff leaves for the same pages.
@Suite struct FirstLoadTests {
    let files = StoreFiles("first-load")

    func indexExists(_ name: String, _ index: String) throws -> Bool {
        try files.read(name) { db in
            try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM sqlite_master WHERE type = 'index' AND name = ?)",
                              arguments: [index]) ?? false
        }
    }

    /// A records-file row (its fields in the file's order) and a podcast.
    /// Its values include what a canonical encoding normalises (numbers,
    /// escapes, nesting), which the first load stores from the record's payload.
    func row(_ key: Int, name: String = "Row") -> Catalog.Record {
        let tricky: [JSONValue] = [.double(0.1), .double(1e21), .double(-0.0), .double(2.5e-8), .int(Int64.min), .null,
                                   .string("tab\tquote\"nul\u{0}é😀\u{7f}</x>"), .array([.int(1), .null, .bool(true)]),
                                   .object(["z": .double(1), "a": .string("")]), .number("123456789012345678901234567890"), .double(1.0)]
        return Catalog.Record(entity: .record, key: String(key),
                              fields: ["id": .int(Int64(key)), "name": .string(name), "price": .double(Double(key) / 4),
                                       "extra": tricky[key % tricky.count]],
                              fieldOrder: ["id", "name", "price"])
    }

    func podcast(_ key: Int) -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: String(key), fields: ["trackName": .string("Show \(key)"), "trackCount": .int(3)])
    }

    /// Pages of a night-1 load: two all-new pages (large enough to be mapped
    /// on every core), a page that meets a key of the first page again (the
    /// first-load mode ends there), and one more new page after it.
    func pages(_ run: RunInfo) -> [PageInput] {
        let batches: [[Catalog.Record]] = [
            (1...700).map { row($0) } + (1...20).map { podcast($0) },
            (701...1_400).map { row($0) },
            [row(5, name: "Renamed")] + (1_401...1_450).map { row($0) },
            (1_451...1_500).map { row($0) } + [podcast(21)],
        ]
        return batches.enumerated().map { index, records in
            var page = PageInput(runID: run.id, source: "src", scope: "s", page: index, records: records)
            page.completesScope = index == batches.count - 1
            return page
        }
    }

    /// Every table a page writes, as text, in a stable order (rowids left out).
    func dump(_ name: String) throws -> [String] {
        let queries = [
            "SELECT source, entity, key, scope, hash, payload, added_run, changed_run, raw_hash FROM records ORDER BY source, entity, key",
            "SELECT entity, key, fields, hash, sources, parts, added_run, changed_run FROM entities ORDER BY entity, key",
            "SELECT run_id, source, entity, key, op, field, before, after FROM changes ORDER BY id",
            "SELECT source, entity, field, kind, position, first_run, kind_changed_run, previous_kind FROM field_registry ORDER BY 1, 2, 3",
            "SELECT run_id, source, scope, page, keys FROM run_pages ORDER BY 1, 2, 3, 4",
            "SELECT source, scope, run_id, next_page, state FROM scopes ORDER BY 1, 2",
            "SELECT run_id, source, pages, added, changed, unchanged, removed, record_writes FROM run_sources ORDER BY 1, 2",
        ]
        return try files.read(name) { db in
            try queries.flatMap { sql in try Row.fetchAll(db, sql: sql).map { "\(sql.prefix(40)): \($0)" } }
        }
    }

    @Test func aFirstLoadWritesExactlyWhatTheDiffWrites() async throws {
        var results: [String: [PageResult]] = [:]
        for (name, bulk) in [("diffed", false), ("loaded", true)] {
            let store = try SQLSnapshotStore(path: files.path(name))
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
            if bulk { #expect(try store.beginFirstLoad()) }
            for page in pages(run) { results[name, default: []].append(try await store.apply(page)) }
            if bulk { try store.endFirstLoad() }
        }
        #expect(results["loaded"] == results["diffed"])
        #expect(results["loaded"]?.map(\.added) == [720, 700, 50, 51])
        #expect(results["loaded"]?[2].changed == 0, "the key met again is still an addition of this run, as the diff says")
        #expect(results["loaded"]?[2].recordRowsWritten == 51)
        let loaded = try dump("loaded"), diffed = try dump("diffed")
        #expect(loaded.count == diffed.count)
        for (a, b) in zip(loaded, diffed) where a != b {
            Issue.record("first load: \(a)\n      diff: \(b)")
            break
        }
        for index in ["records_by_key", "entities_by_key"] { #expect(try indexExists("loaded", index)) }
        #expect(try files.read("loaded") { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
    }

    /// The first load is a mode of the one writer on both engines: the pages
    /// it takes (all new) leave every table as the diff leaves them, and it
    /// ends at the first page that is not all new.
    @Test(arguments: StoreEngine.tested)
    func aFirstLoadIsTheDiffsModeOnEveryEngine(_ engine: StoreEngine) async throws {
        var tables: [Bool: [String: [String]]] = [:]
        for firstLoad in [false, true] {
            let store = try await engine.makeStore().store
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
            #expect(try store.beginFirstLoad() == true)
            if !firstLoad { try store.endFirstLoad() }
            for page in pages(run) { _ = try await store.apply(page) }
            if firstLoad { try store.endFirstLoad() }
            #expect(store.firstLoadPages.load(ordering: .relaxed) == (firstLoad ? 2 : 0), "pages 1 and 2 are all new; 3 meets a key again")
            tables[firstLoad] = try store.allTables()
        }
        let loaded = try #require(tables[true]), diffed = try #require(tables[false])
        #expect(loaded.keys.sorted() == diffed.keys.sorted())
        for (table, rows) in diffed.sorted(by: { $0.key < $1.key }) {
            let other = loaded[table] ?? []
            #expect(other.count == rows.count, "\(table): \(other.count) rows loaded, \(rows.count) diffed")
            if let (a, b) = zip(other, rows).first(where: { $0 != $1 }) {
                Issue.record("\(table), first row that differs:\n first load: \(a)\n       diff: \(b)")
            }
        }
        #expect(loaded["entities"]?.count == 1_521)
    }

    /// The first-load mode runs without the entities' key index; a page that
    /// is not all new builds it there and then, and a load killed before its
    /// end finds it built again when the store reopens.
    @Test func theEntitiesKeyIndexIsMissingOnlyWhileAFirstLoadHolds() async throws {
        var store: SQLSnapshotStore? = try SQLSnapshotStore(path: files.path("killed"))
        let run = try store!.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        #expect(try store!.beginFirstLoad())
        let pages = pages(run)
        _ = try await store!.apply(pages[0])
        #expect(try !indexExists("killed", "entities_by_key"), "a first load keeps no key index of scattered keys")
        _ = try await store!.apply(pages[2])
        #expect(try indexExists("killed", "entities_by_key"), "a key met again ends the first-load mode")

        store = nil
        var other: SQLSnapshotStore? = try SQLSnapshotStore(path: files.path("killed-early"))
        let otherRun = try other!.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        #expect(try other!.beginFirstLoad())
        _ = try await other!.apply(pages[0].with(runID: otherRun.id))
        #expect(try !indexExists("killed-early", "entities_by_key"))
        other = nil
        // Killed here: the next open builds the indexes again, and the store is no longer empty.
        let reopened = try SQLSnapshotStore(path: files.path("killed-early"))
        #expect(try indexExists("killed-early", "entities_by_key"))
        #expect(try !reopened.beginFirstLoad())
        #expect(try files.read("killed-early") { try Int.fetchOne($0, sql: "SELECT count(*) FROM entities") } == 720)
    }
}

extension PageInput {
    func with(runID: Int64) -> PageInput {
        var page = self
        page.runID = runID
        return page
    }
}
