import Catalog
import Foundation
import Snapshot
import Testing
import TestSupport

/// What only the pair of engines can show: a store moved SQLite → PostgreSQL
/// → SQLite is the same store, row for row and id for id; and what exports
/// read from a PostgreSQL store is what they read from the same nights on SQLite.
@Suite(.enabled(if: TemporaryPostgres.testsEnabled, Comment(rawValue: TemporaryPostgres.skipReason)))
struct StoreEnginesTests {
    static let day = 86_400.0

    static func podcast(_ key: Int, name: String? = nil, count: Int = 10, rating: Double = 4.5,
                        released: String = "2024-01-01T00:00:00Z") -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: String(key), fields: [
            // Not only ASCII: text must come back byte for byte from either engine.
            "trackName": .string(name ?? "Show \(key) · Café ☕"),
            "trackCount": .int(Int64(count)),
            "averageUserRating": .double(rating),
            "releaseDate": .string(released),
        ])
    }

    static func listing(_ key: Int, price: Double) -> Catalog.Record {
        Catalog.Record(entity: .listing, key: String(key), fields: ["name": .string("Kettle \(key)"), "price": .double(price)])
    }

    /// Three nights with something in every table: additions, field changes
    /// (a count that goes down, a real), a record pending removal (misses) and
    /// one removed, two sources and three scopes (one failed), page memos, the
    /// field registry growing a field, a consumer's pending inputs, and the
    /// baseline in `store_meta`, and a fourth night killed after its first page
    /// (`run_pages`). Fixed dates, so two stores given it are equal.
    static func populate(_ store: SQLSnapshotStore) async throws {
        let policy = RemovalPolicy(afterMisses: 2, maxRatio: 1)
        func page(_ run: RunInfo, _ source: String, _ scope: String, _ page: Int, _ records: [Catalog.Record],
                  last: Bool = true) -> PageInput {
            var input = PageInput(runID: run.id, source: source, scope: scope, page: page, records: records, requests: 2,
                                  seconds: 0.25,
                                  memo: PageMemo(url: "https://example.test/\(source)/\(scope)?page=\(page)", etag: "\"e\(run.id)\"",
                                                 lastModified: nil, bodyHash: ContentHash(rawValue: UInt64.max - UInt64(page)),
                                                 rowCount: records.count, hasNext: !last))
            input.completesScope = last
            return input
        }
        func night(_ number: Int, _ pages: [(source: String, scope: String, records: [[Catalog.Record]], state: ScopeState)]) async throws {
            let start = Date(timeIntervalSince1970: 1_700_000_000 + Double(number) * day)
            let run = try store.beginRun(job: "pair", at: start, simulated: false)
            for scope in pages {
                for (index, records) in scope.records.enumerated() {
                    _ = try await store.apply(page(run, scope.source, scope.scope, index, records,
                                                   last: scope.state == .complete && index == scope.records.count - 1))
                }
                try store.finishScope(runID: run.id, source: scope.source, scope: scope.scope, state: scope.state,
                                      error: scope.state == .complete ? nil : RunProblem(code: "fetch-failed", message: "HTTP 503"))
                _ = try store.sweepScope(runID: run.id, source: scope.source, scope: scope.scope, removal: policy)
            }
            try store.finishRun(run.id, status: .ok, message: nil, at: start.addingTimeInterval(600))
        }
        try await night(1, [
            ("search", "top", [(1...4).map { podcast($0) }, (5...6).map { podcast($0) }], .complete),
            ("search", "news", [[podcast(7)]], .complete),
            ("market", "all", [[listing(1, price: 10), listing(2, price: 20)]], .complete),
        ])
        try await night(2, [
            // 1 renamed, 2's count goes down, 6 missed (pending), 8 new with a new field.
            ("search", "top", [[podcast(1, name: "Renamed"), podcast(2, count: 3), podcast(3), podcast(4)],
                               [podcast(5, released: "2024-03-01T00:00:00Z"),
                                Catalog.Record(entity: .podcast, key: "8", fields: ["trackName": "New", "feedUrl": "https://f/8"])]],
             .complete),
            ("search", "news", [[podcast(7, rating: 3.25)]], .complete),
            ("market", "all", [[listing(1, price: 9.5)]], .failed),
        ])
        try await night(3, [
            // 6 missed twice: removed; 4 missed once: pending.
            ("search", "top", [[podcast(1, name: "Renamed"), podcast(2, count: 3), podcast(3)],
                               [podcast(5, released: "2024-03-01T00:00:00Z"),
                                Catalog.Record(entity: .podcast, key: "8", fields: ["trackName": "New", "feedUrl": "https://f/8"])]],
             .complete),
            ("search", "news", [[podcast(7, rating: 3.25)]], .complete),
        ])
        try store.setPendingInputs(consumer: "lookup#1", [RecordIdentity(entity: .podcast, key: "3"),
                                                         RecordIdentity(entity: .podcast, key: "5")])
        // Night 4 is cut short after its first page (the process killed): its pages are the resume point.
        let unfinished = try store.beginRun(job: "pair", at: Date(timeIntervalSince1970: 1_700_000_000 + 4 * day), simulated: false)
        _ = try await store.apply(page(unfinished, "search", "top", 0, [podcast(1, name: "Again"), podcast(2, count: 3)], last: false))
    }

    /// Opens a new SQLite store and fills it with ``populate(_:)``; returns its path.
    static func populatedSQLite() async throws -> String {
        let made = try await StoreEngine.sqlite.makeStore()
        try await populate(made.store)
        return made.location
    }

    /// `storesync migrate` both ways: every table of the store that comes
    /// back equals the original's, row for row, rowids and ids included; the
    /// PostgreSQL store in between holds the same rows.
    @Test func aStoreMigratedToPostgresAndBackIsTheSameStore() async throws {
        let original = try await Self.populatedSQLite()
        let postgres = try await StoreEngine.postgres.makeLocation()
        let back = try await StoreEngine.sqlite.makeLocation()

        let there = try StoreMigration.migrate(from: original, to: postgres)
        let again = try StoreMigration.migrate(from: postgres, to: back)
        #expect(there.tables.map(\.rows) == again.tables.map(\.rows))
        #expect(there.lastRun == 4)
        #expect(again.lastRun == 4)

        // The copy moves every table there is: each engine's catalogue, read apart from the copy's own list,
        // names the tables it moved and no other, but for a fleet's coordination (PostgreSQL only, held by
        // runs in flight, which the run lock migrate holds rules out).
        let moved = Set(there.tables.map(\.name))
        let fleet: Set<String> = ["fleet_runs", "scope_claims", "fleet_pages"]
        for (name, tables) in [("SQLite", try StoreEngine.open(original).tableNames()), ("SQLite again", try StoreEngine.open(back).tableNames()),
                               ("PostgreSQL", try StoreEngine.open(postgres).tableNames().subtracting(fleet))] {
            #expect(tables == moved, "\(name): not copied \(tables.subtracting(moved).sorted()), not there \(moved.subtracting(tables).sorted())")
        }

        let expected = try StoreEngine.open(original).allTables()
        // Every table has rows: a table the copy forgot could not go unnoticed.
        for (table, rows) in expected.sorted(by: { $0.key < $1.key }) {
            #expect(!rows.isEmpty, "the populated store has no rows in \(table)")
        }
        for (name, location) in [("PostgreSQL", postgres), ("SQLite again", back)] {
            let copied = try StoreEngine.open(location).allTables()
            #expect(copied.keys.sorted() == expected.keys.sorted())
            for (table, rows) in expected.sorted(by: { $0.key < $1.key }) {
                #expect(copied[table] == rows, "\(name): \(table) differs")
            }
        }

        // The copy is a live store: the killed night resumes where it was, and ids continue after the copied ones.
        let continued = try StoreEngine.open(postgres)
        let resumed = try continued.beginRun(job: "pair", at: Date(timeIntervalSince1970: 1_700_000_000 + 4 * Self.day), simulated: false)
        #expect(resumed.id == 4)
        #expect(resumed.resumed)
        let next = try await continued.apply(PageInput(runID: resumed.id, source: "search", scope: "top", page: 1,
                                                       records: [Self.podcast(1, name: "Again"), Self.podcast(9)]))
        #expect(next.duplicates == 1, "podcast 1 was seen on the page the killed attempt stored")
        #expect(next.added == 1)
        try continued.finishRun(resumed.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1_700_000_000 + 5 * Self.day))
        let fifth = try continued.beginRun(job: "pair", at: Date(timeIntervalSince1970: 1_700_000_000 + 5 * Self.day), simulated: false)
        #expect(fifth.id == 5)
        let changeIDs = try continued.queryRows("SELECT id FROM changes ORDER BY id").compactMap { Int($0) }
        #expect(changeIDs == Array(1...changeIDs.count), "change ids continue after the copied ones, without a gap or a clash")
    }

    /// A destination that holds a store already is refused, whichever its
    /// engine, and left exactly as it was.
    @Test(arguments: StoreEngine.tested)
    func migratingIntoAStoreThatHoldsRowsIsRefusedAndChangesNothing(destination: StoreEngine) async throws {
        let source = try await Self.populatedSQLite()
        let made = try await destination.makeStore()
        let run = try made.store.beginRun(job: "other", at: Date(timeIntervalSince1970: 5), simulated: false)
        _ = try await made.store.apply(PageInput(runID: run.id, source: "search", scope: "top", page: 0,
                                                 records: [Self.podcast(42)]))
        try made.store.finishRun(run.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 6))
        let before = try made.store.allTables()

        #expect(throws: StoreSyncError.self) { try StoreMigration.migrate(from: source, to: made.location) }
        #expect(try made.reopen().allTables() == before)
        #expect(try made.reopen().records().map(\.key) == ["42"])
    }

    /// The reads exports are made of give the same answers from PostgreSQL as
    /// from SQLite, for the same nights written to each.
    @Test func exportReadsFromPostgresEqualThoseFromSQLite() async throws {
        var answers: [StoreEngine: [String: String]] = [:]
        for engine in StoreEngine.allCases {
            let store = try await engine.makeStore().store
            try await Self.populate(store)
            answers[engine] = try Self.exportReads(store)
            // Read from the store itself, not from a copy of it that grows with the catalogue.
            #expect(!store.holdsSQLiteCopy, "\(engine): the export reads took a SQLite copy of the store")
        }
        let sqlite = try #require(answers[.sqlite])
        let postgres = try #require(answers[.postgres])
        #expect(sqlite.keys.sorted() == postgres.keys.sorted())
        for (read, expected) in sqlite.sorted(by: { $0.key < $1.key }) {
            #expect(postgres[read] == expected, "\(read) differs")
        }
        // The answers are not empty ones that would agree whatever the store held.
        #expect(sqlite["forEachRecord podcast insertion"]?.contains("Again") == true)
        #expect(sqlite["latestDecreases trackCount"]?.contains("key: \"2\"") == true, "\(sqlite["latestDecreases trackCount"] ?? "")")
        #expect(sqlite["entitiesByKey"]?.contains("key: \"8\"") == true)
    }

    /// What each read gives, as text (the read's name → its rows described).
    static func exportReads(_ store: SQLSnapshotStore) throws -> [String: String] {
        var reads: [String: String] = [:]
        func note(_ name: String, _ value: Any) { reads[name] = String(describing: value) }
        let columns = [ExportColumn("name", "trackName"), ExportColumn("count", "trackCount", .integer),
                       ExportColumn("rating", "averageUserRating", .real), ExportColumn("price", "price", .real)]
        note("entities", try store.entities())
        note("recordSources", try store.recordSources())
        for entity in try store.entities() {
            note("recordCount \(entity)", try store.recordCount(of: entity))
            for (label, order) in [("insertion", RecordOrder.insertion), ("sourceAndKey", .sourceAndKey)] {
                var rows: [ProjectedRecord] = []
                try store.forEachRecord(of: entity, columns: columns, order: order) { rows.append($0) }
                note("forEachRecord \(entity) \(label)", rows)
            }
        }
        for runID in [nil, 1, 2, 3, 4] as [Int64?] {
            for (label, order) in [("insertion", ChangeOrder.insertion), ("record", .record)] {
                var rows: [ChangeRow] = []
                try store.forEachChange(runID: runID, order: order) { rows.append($0) }
                note("forEachChange \(runID.map { String($0) } ?? "all") \(label)", rows)
            }
        }
        for runID: Int64 in [1, 2, 3, 4] {
            note("changesWithRecords \(runID)", try store.changesWithRecords(runID: runID))
            note("entityTallies \(runID)", try store.entityTallies(runID: runID))
            note("changes \(runID)", try store.changes(runID: runID))
            note("schemaChanges \(runID)", try store.schemaChanges(runID: runID))
        }
        note("runSummaries", try store.runSummaries(through: 4))
        note("runs", try store.runs(limit: 10))
        note("entitiesByKey", try store.entitiesByKey(.podcast, keys: ["8", "1", "6", "404", "1"]))
        note("recordsNewestFirst", try store.recordsNewestFirst([.podcast], by: "releaseDate"))
        note("recordsNewestAdded", try store.recordsNewestAdded(.podcast, thenBy: "releaseDate"))
        note("chartEntries", try store.chartEntries(chart: "top"))
        note("latestDecreases trackCount", try store.latestDecreases(of: .podcast, field: "trackCount"))
        note("scopeStates", try store.scopeStates())
        note("registeredFields", try store.registeredFields(source: "search", entity: .podcast))
        note("records", try store.records())
        note("unlinkedCount", try store.unlinkedCount(of: .podcast, field: "trackCount", target: .podcast))
        var histories: [EntityHistory] = []
        try store.forEachEntityHistory(of: .podcast, runs: nil) { histories.append($0) }
        note("forEachEntityHistory", histories)
        note("entityHistory 2", try store.entityHistory(of: .podcast, key: "2") as Any)
        for limit in [1, 3] {
            var keys: [String] = []
            try store.forEachFeedRecord(.newestFirst([.podcast], by: "releaseDate"), limit: limit) { keys.append($0.key); return true }
            note("newestFirst limit \(limit)", keys)
        }
        return reads
    }
}
