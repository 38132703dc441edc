import Catalog
@testable import Export
import Foundation
import GRDB
import Logging
import Snapshot
import Testing
import TestSupport

/// A small snapshot shaped like the demo's, over two runs, with the store
/// contents given in canonical fields (what every connector maps to): genres,
/// podcasts (one with a member the model lacks), episodes (one whose podcast
/// was never crawled), a chart (one item not stored), listings from two
/// vendors (one price drop), and a records-file source.
struct ConsumerFixture {
    static let started = Date(timeIntervalSince1970: 1_795_308_886)
    let store: SQLSnapshotStore
    let runID: Int64
    let directory: URL

    static func podcast(_ key: String, _ name: String, _ genre: String, _ genreID: String, _ description: String,
                        artist: String? = nil, extra: [String: JSONValue] = [:]) -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: key, fields: [
            "name": .string(name), "artist": .string(artist ?? "\(name) people"), "genre": .string(genre), "genre_id": .string(genreID),
            "feed_url": .string("https://feeds.example.com/\(key).xml"), "view_url": .string("https://podcasts.example.com/\(key)"),
            "artwork_url": .string("https://img.example.com/\(key).jpg"), "release_date": .string("2026-11-2\(key.suffix(1))T10:00:00Z"),
            "track_count": .int(40), "explicit": .int(0), "description": .string(description),
        ].merging(extra) { $1 })
    }

    static func listing(_ key: String, _ name: String, vendor: Int64, vendorName: String?, price: Double) -> Catalog.Record {
        var fields: [String: JSONValue] = [
            "name": .string(name), "vendor_id": .int(vendor), "price": .double(price), "currency": .string("EUR"),
            "description": .string("\(name), boxed"), "created_at": .string("2026-11-0\(key.suffix(1))T09:00:00"),
        ]
        if let vendorName { fields["vendor_name"] = .string(vendorName) }
        return Catalog.Record(entity: .listing, key: key, fields: fields)
    }

    static func make(_ name: String) async throws -> ConsumerFixture {
        let directory = TestPaths.temporaryDirectory(name)
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("snapshot.sqlite").path)
        var page = 0
        func apply(_ runID: Int64, _ source: String, _ records: [Catalog.Record]) async throws {
            page += 1
            _ = try await store.apply(PageInput(runID: runID, source: source, scope: "s", page: page, records: records))
        }

        let first = try store.beginRun(job: "demo", at: started, simulated: true, night: 1, resumeExports: true)
        try await apply(first.id, "genres", [
            Catalog.Record(entity: .genre, key: "26", fields: ["name": .string("Podcasts"), "parent_id": .string("")]),
            Catalog.Record(entity: .genre, key: "1303", fields: ["name": .string("Comedy"), "parent_id": .string("26")]),
            Catalog.Record(entity: .genre, key: "1311", fields: ["name": .string("News"), "parent_id": .string("26")]),
            Catalog.Record(entity: .genre, key: "1318", fields: ["name": .string("Technology"), "parent_id": .string("26")]),
        ])
        try await apply(first.id, "podcasts", [
            podcast("101", "The Daily Laugh", "Comedy", "1303", "Jokes about the headlines", extra: ["feedBurnerId": .string("laugh")]),
            podcast("102", "World News Hour", "News", "1311", "Headlines from everywhere"),
            podcast("103", "Gadget Talk", "Technology", "1318", "Reviews of phones and laptops"),
            podcast("104", "Comedy Bang", "Comedy", "1303", "Improvised sketches"),
        ])
        try await apply(first.id, "episodes", [
            Catalog.Record(entity: .episode, key: "9001", fields: [
                "name": .string("Episode one"), "podcast": .string("The Daily Laugh"), "podcast_id": .string("101"),
                "release_date": .string("2026-11-21T08:00:00Z"), "guid": .string("urn:uuid:laugh-1"),
                "enclosure_url": .string("https://cdn.example.com/laugh/1.ogg"), "enclosure_length": .int(3_000_000),
                "enclosure_type": .string("audio/ogg"), "duration_ms": .int(1_805_000), "season": .int(2),
                "episode_number": .int(7), "episode_type": .string("full"), "explicit": .int(1),
                "description": .string("A pilot about kettles"),
            ]),
            Catalog.Record(entity: .episode, key: "9002", fields: [
                "name": .string("Morning briefing"), "podcast": .string("World News Hour"), "podcast_id": .string("102"),
                "release_date": .string("2026-11-20T06:00:00Z"), "enclosure_url": .string("https://cdn.example.com/news/2.m4a?t=1"),
            ]),
            // Its podcast was never crawled: an orphan, linked to nothing, breaking nothing.
            Catalog.Record(entity: .episode, key: "9003", fields: [
                "name": .string("Lost episode"), "podcast_id": .string("999"), "release_date": .string("2026-11-19T06:00:00Z"),
                "enclosure_url": .string("https://cdn.example.com/lost/3"),
            ]),
        ])
        try await apply(first.id, "charts", [102, 101, 555].enumerated().map { index, item in
            Catalog.Record(entity: .chartEntry, key: "toppodcasts|us||\(item)", fields: [
                "chart": .string("toppodcasts"), "country": .string("us"), "genre_id": .string(""), "rank": .int(Int64(index + 1)),
                "item_entity": .string("podcast"), "item_key": .string(String(item)), "name": .string("Chart says \(item)"),
                "artist": .string("Chart artist \(item)"), "link": .string("https://podcasts.example.com/\(item)"),
            ])
        })
        try await apply(first.id, "market", [
            listing("5001", "Blue kettle", vendor: 7, vendorName: "Kettle Co", price: 20),
            listing("5002", "Red kettle", vendor: 7, vendorName: nil, price: 15),
            listing("5003", "Toaster", vendor: 8, vendorName: nil, price: 9.5),
        ])
        try await apply(first.id, "My Sales", [
            Catalog.Record(entity: .record, key: "1", fields: [
                "id": .int(1), "region": .string("North"), "amount": .int(10), "when": .string("2024-01-01"),
            ]),
            Catalog.Record(entity: .record, key: "2", fields: [
                "id": .int(2), "region": .string("South"), "amount": .double(12.5), "note": .string("late"),
            ]),
        ])
        try store.finishRun(first.id, status: .ok, message: nil, at: started.addingTimeInterval(60))

        let second = try store.beginRun(job: "demo", at: started.addingTimeInterval(86_400), simulated: true, night: 2,
                                        resumeExports: true)
        try await apply(second.id, "market", [
            listing("5001", "Blue kettle", vendor: 7, vendorName: "Kettle Co", price: 18),
            listing("5002", "Red kettle", vendor: 7, vendorName: nil, price: 16),
        ])
        try await apply(second.id, "podcasts", [podcast("103", "Gadget Talk Weekly", "Technology", "1318", "Reviews of phones and laptops",
                                                       artist: "Gadget Talk people")])
        try store.finishRun(second.id, status: .ok, message: nil, at: started.addingTimeInterval(86_460))
        return ConsumerFixture(store: store, runID: second.id, directory: directory)
    }

    var output: URL { directory.appendingPathComponent("out") }

    var context: ExportContext {
        ExportContext(store: store, runID: runID, jobName: "demo", runDate: Self.started.addingTimeInterval(86_400),
                      outputDirectory: output.path)
    }

    /// Exports `demo.sqlite` and `csv/`; returns the database.
    func export(historyDays: Int? = ExportSpec.defaultHistoryDays, history: Bool = false) throws -> DatabaseQueue {
        _ = try SnapshotExporter.export([.sqlite(path: "demo.sqlite", historyDays: historyDays, history: history),
                                         .csvTables(directory: "csv", options: CSVExportOptions())],
                                        context: context, logger: Logger(label: "test"))
        return try DatabaseQueue(path: output.appendingPathComponent("demo.sqlite").path)
    }
}

@Suite struct ConsumerDatabaseTests {
    /// The columns the export adds (the key, `extra`, first seen and last
    /// changed, a history table's own) are no canonical field's name.
    @Test func theExportsOwnColumnsAreNoFieldsName() {
        let own = [ConsumerSchema.idColumn, "key", "extra"] + ConsumerSchema.seenColumnNames + ConsumerSchema.versionColumnNames
        for entity in EntityKind.allCases {
            let clashes = Set(CanonicalSchema.fields(of: entity).map(\.name)).intersection(own)
            #expect(clashes.isEmpty, "\(entity): \(clashes.sorted())")
        }
    }

    /// Each entity row says when it was first seen and last changed; with
    /// `history`, each table's versions sit beside it (issue 30, item 1).
    @Test func historyTablesHoldEveryVersionAndTheCurrentRowIsTheOpenOne() async throws {
        let fixture = try await ConsumerFixture.make("consumer-history")
        let plain = try fixture.export()
        let histories = try await plain.read { db in
            try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE name LIKE '%_history'")
        }
        #expect(histories.isEmpty, "history is asked for: \(histories)")
        let db = try fixture.export(history: true)
        let (runOne, runTwo) = try await db.read { db in
            (try String.fetchOne(db, sql: "SELECT started_at FROM runs WHERE id = 1"),
             try String.fetchOne(db, sql: "SELECT started_at FROM runs WHERE id = 2"))
        }
        let seen = try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT key, first_seen_run, first_seen, last_changed_run, last_changed FROM listings ORDER BY key")
                .map { "\($0[0] as String) \($0[1] as Int) \($0[2] as String) \($0[3] as Int) \($0[4] as String)" }
        }
        #expect(seen == ["5001 1 \(runOne!) 2 \(runTwo!)", "5002 1 \(runOne!) 2 \(runTwo!)", "5003 1 \(runOne!) 1 \(runOne!)"])
        let versions = try await db.read { db in
            try Row.fetchAll(db, sql: """
                SELECT key, _version, _event, _valid_from_run, _valid_from, _valid_to_run, _valid_to, _deleted, _changed_fields, price
                FROM listings_history ORDER BY key, _version
                """).map { row in
                    [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map { (row[$0] as DatabaseValue).description }.joined(separator: " ")
                }
        }
        #expect(versions == [
            "\"5001\" 1 \"added\" 1 \"\(runOne!)\" 2 \"\(runTwo!)\" 0 NULL 20.0",
            "\"5001\" 2 \"changed\" 2 \"\(runTwo!)\" NULL NULL 0 \"[\\\"price\\\"]\" 18.0",
            "\"5002\" 1 \"added\" 1 \"\(runOne!)\" 2 \"\(runTwo!)\" 0 NULL 15.0",
            "\"5002\" 2 \"changed\" 2 \"\(runTwo!)\" NULL NULL 0 \"[\\\"price\\\"]\" 16.0",
            "\"5003\" 1 \"added\" 1 \"\(runOne!)\" NULL NULL 0 NULL 9.5",
        ])
        for entity in ConsumerSchema.entityTables {
            let table = ConsumerSchema.table(for: entity)
            let columns = (["key"] + EntityColumns.columns(for: entity).map(\.name) + ["extra"]).map(ConsumerSchema.quoted).joined(separator: ", ")
            let (missing, stale, open) = try await db.read { db in
                (try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM (SELECT \(columns) FROM \(table)
                                          EXCEPT SELECT \(columns) FROM \(table)_history WHERE _valid_to_run IS NULL AND _deleted = 0)
                    """),
                 try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM (SELECT \(columns) FROM \(table)_history WHERE _valid_to_run IS NULL AND _deleted = 0
                                          EXCEPT SELECT \(columns) FROM \(table))
                    """),
                 try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)_history WHERE _valid_to_run IS NULL"))
            }
            let rows = try await db.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") }
            #expect(missing == 0 && stale == 0 && open == rows, "\(table): the open versions are not the current rows")
        }
        #expect(try await db.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")
    }

    @Test func everyEntityHasASnakeCaseTableWithItsCanonicalColumns() async throws {
        let db = try await ConsumerFixture.make("consumer-tables").export()
        let (tables, views) = try await db.read { db in
            (try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%_fts%' ORDER BY name"),
             try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'view' ORDER BY name"))
        }
        #expect(tables == ["albums", "apps", "artists", "audiobooks", "changes", "chart_entries", "ebooks", "episodes", "genres",
                           "listings", "movies", "music_videos", "my_sales", "podcasts", "runs", "songs", "vendors"])
        #expect(views == ["charts", "episodes_with_podcast", "latest_changes", "podcasts_by_genre", "price_drops"])
        for entity in ConsumerSchema.entityTables {
            let columns = try await db.read { db in
                try Row.fetchAll(db, sql: "PRAGMA table_info(\(ConsumerSchema.table(for: entity)))").map { "\($0["name"] as String) \($0["type"] as String)" }
            }
            let expected = ["id INTEGER", "key TEXT"] + CanonicalSchema.fields(of: entity).map { "\($0.name) \($0.kind.rawValue)" } + ["extra TEXT"]
                + ["first_seen_run INTEGER", "first_seen TEXT", "last_changed_run INTEGER", "last_changed TEXT"]
            #expect(columns == expected, "\(entity)")
        }
        let (podcasts, priceType) = try await db.read { db in
            (try Int.fetchOne(db, sql: "SELECT count(*) FROM podcasts"),
             try String.fetchOne(db, sql: "SELECT typeof(price) FROM listings WHERE key = '5003'"))
        }
        #expect(podcasts == 4)
        #expect(priceType == "real")
    }

    @Test func membersNoColumnHoldsAreKeptInExtra() async throws {
        let db = try await ConsumerFixture.make("consumer-extra").export()
        let extra = try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT key, extra FROM podcasts ORDER BY key").map { "\($0["key"] as String)=\(($0["extra"] as String?) ?? "NULL")" }
        }
        #expect(extra == ["101={\"feedBurnerId\":\"laugh\"}", "102=NULL", "103=NULL", "104=NULL"])
    }

    @Test func foreignKeysAreDeclaredAndOrphansAreHarmless() async throws {
        let db = try await ConsumerFixture.make("consumer-fk").export()
        func keys(_ table: String) async throws -> [String] {
            try await db.read { db in
                try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(\(table))")
                    .map { "\($0["from"] as String) -> \($0["table"] as String).\($0["to"] as String)" }.sorted()
            }
        }
        #expect(try await keys("episodes") == ["podcast_id -> podcasts.key"])
        #expect(try await keys("genres") == ["parent_id -> genres.key"])
        #expect(try await keys("listings") == ["vendor_id -> vendors.id"])
        #expect(try await keys("podcasts") == ["genre_id -> genres.key"])
        // Every entry charts a podcast: item_key can name the podcasts table.
        #expect(try await keys("chart_entries") == ["genre_id -> genres.key", "item_key -> podcasts.key"])
        #expect(try await keys("changes") == ["run_id -> runs.id"])
        #expect(try await db.read { db in try String.fetchOne(db, sql: "PRAGMA integrity_check") } == "ok")

        let (orphans, vendors, linked) = try await db.read { db in
            (try Row.fetchAll(db, sql: "PRAGMA foreign_key_check(episodes)").map { $0["parent"] as String },
             try Row.fetchAll(db, sql: "SELECT id, name, listings FROM vendors ORDER BY id")
                .map { "\($0["id"] as Int) \(($0["name"] as String?) ?? "NULL") \($0["listings"] as Int)" },
             try Row.fetchAll(db, sql: "SELECT key, podcast_name FROM episodes_with_podcast ORDER BY key")
                .map { "\($0["key"] as String) \(($0["podcast_name"] as String?) ?? "NULL")" })
        }
        #expect(orphans == ["podcasts"], "the orphan episode is there, unlinked")
        // '' is no row's key: the root genre's parent and the all-genres chart's genre are NULL, so only
        // the orphans dangle (episode 9003's podcast and chart item 555 were never crawled).
        let (dangling, none) = try await db.read { db in
            (Set(try Row.fetchAll(db, sql: "PRAGMA foreign_key_check").map { "\($0["table"] as String) → \($0["parent"] as String)" }),
             try Row.fetchAll(db, sql: """
                SELECT 'genres', key, parent_id FROM genres WHERE key = '26' UNION ALL SELECT 'chart_entries', key, genre_id FROM chart_entries
                """).map { "\($0[0] as String) \($0[1] as String) \(($0[2] as String?) ?? "NULL")" })
        }
        #expect(dangling == ["episodes → podcasts", "chart_entries → podcasts"])
        #expect(none == ["genres 26 NULL", "chart_entries toppodcasts|us||102 NULL", "chart_entries toppodcasts|us||101 NULL",
                         "chart_entries toppodcasts|us||555 NULL"])
        #expect(vendors == ["7 Kettle Co 2", "8 NULL 1"])
        #expect(linked == ["9001 The Daily Laugh", "9002 World News Hour", "9003 NULL"])
    }

    @Test func mixedChartsDeclareNoItemForeignKey() {
        #expect(!ConsumerSchema.foreignKeys(of: .chartEntry, chartItems: ["podcast", "song"]).contains { $0.column == "item_key" })
        #expect(ConsumerSchema.foreignKeys(of: .chartEntry, chartItems: ["song"]).contains {
            $0 == ConsumerSchema.ForeignKey(column: "item_key", table: "songs", targetColumn: "key")
        })
        #expect(!ConsumerSchema.foreignKeys(of: .chartEntry, chartItems: []).contains { $0.column == "item_key" })
    }

    @Test func chartsViewHasOneRowPerSlotWithTheItemsOwnName() async throws {
        let fixture = try await ConsumerFixture.make("consumer-charts")
        // A stale entry claiming rank 1 too (as a store that kept it would give): the view still has one row per slot.
        let run = try fixture.store.beginRun(job: "demo", at: ConsumerFixture.started.addingTimeInterval(200_000), simulated: true,
                                             night: 3, resumeExports: true)
        _ = try await fixture.store.apply(PageInput(runID: run.id, source: "charts-old", scope: "s", page: 0, records: [
            Catalog.Record(entity: .chartEntry, key: "toppodcasts|us||104", fields: [
                "chart": .string("toppodcasts"), "country": .string("us"), "genre_id": .string(""), "rank": .int(1),
                "item_entity": .string("podcast"), "item_key": .string("104"), "name": .string("Chart says 104"),
            ]),
        ]))
        try fixture.store.finishRun(run.id, status: .ok, message: nil, at: ConsumerFixture.started.addingTimeInterval(200_060))
        let db = try fixture.export()
        let rows = try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT rank, item_key, name, artist, item_stored FROM charts").map {
                "\($0["rank"] as Int) \($0["item_key"] as String) \($0["name"] as String) / \($0["artist"] as String?  ?? "-") \($0["item_stored"] as Int)"
            }
        }
        #expect(rows == ["1 104 Comedy Bang / Comedy Bang people 1",
                         "2 101 The Daily Laugh / The Daily Laugh people 1",
                         "3 555 Chart says 555 / Chart artist 555 0"])
    }

    @Test func fullTextSearchCoversNamesAndDescriptions() async throws {
        let db = try await ConsumerFixture.make("consumer-fts").export()
        let (podcasts, episodes, listings) = try await db.read { db in
            (try String.fetchAll(db, sql: """
                SELECT p.key FROM podcasts p JOIN podcasts_fts f ON f.rowid = p.rowid WHERE podcasts_fts MATCH 'laptops OR laugh' ORDER BY p.key
                """),
             try String.fetchAll(db, sql: "SELECT e.key FROM episodes e WHERE e.rowid IN (SELECT rowid FROM episodes_fts WHERE episodes_fts MATCH 'kettles')"),
             try String.fetchAll(db, sql: "SELECT key FROM listings WHERE rowid IN (SELECT rowid FROM listings_fts WHERE listings_fts MATCH 'toaster')"))
        }
        #expect(podcasts == ["101", "103"])
        #expect(episodes == ["9001"])
        #expect(listings == ["5003"])
        let fts = try await db.read { db in
            try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = 'podcasts_fts'")
        }
        // How Datasette recognises the table's search index.
        #expect(fts?.contains("content=\"podcasts\"") == true)
    }

    @Test func viewsAnswerTheCommonQuestions() async throws {
        let db = try await ConsumerFixture.make("consumer-views").export()
        let (drops, latest, byGenre) = try await db.read { db in
            (try Row.fetchAll(db, sql: "SELECT key, name, price_before, price_after, price_drop, run_id FROM price_drops").map {
                "\($0["key"] as String) \($0["name"] as String) \($0["price_before"] as Double) → \($0["price_after"] as Double) (-\($0["price_drop"] as Double)) run \($0["run_id"] as Int)"
             },
             try Row.fetchAll(db, sql: "SELECT entity, key, name, op, field FROM latest_changes").map {
                "\($0["entity"] as String) \($0["key"] as String) \($0["name"] as String? ?? "-") \($0["op"] as String) \($0["field"] as String? ?? "-")"
             },
             try Row.fetchAll(db, sql: "SELECT genre, podcasts FROM podcasts_by_genre").map { "\($0["genre"] as String) \($0["podcasts"] as Int)" })
        }
        #expect(drops == ["5001 Blue kettle 20.0 → 18.0 (-2.0) run 2"])
        #expect(latest == ["listing 5001 Blue kettle changed price", "listing 5002 Red kettle changed price",
                           "podcast 103 Gadget Talk Weekly changed name"])
        #expect(byGenre == ["Comedy 2", "News 1", "Technology 1"])
    }

    @Test func theChangeLogCarriesTheLastDaysOnly() async throws {
        let fixture = try await ConsumerFixture.make("consumer-history")
        func runsLogged(_ days: Int?) throws -> [Int64] {
            try fixture.export(historyDays: days).read { db in
                try Int64.fetchAll(db, sql: "SELECT DISTINCT run_id FROM changes ORDER BY run_id")
            }
        }
        #expect(try runsLogged(nil) == [1, 2])
        #expect(try runsLogged(2) == [1, 2])
        #expect(try runsLogged(1) == [2], "a day of history is the exported night's")
    }

    @Test func changesNameCanonicalFields() async throws {
        let db = try await ConsumerFixture.make("consumer-changes").export()
        let fields = try await db.read { db in
            try String.fetchAll(db, sql: "SELECT DISTINCT field FROM changes WHERE field IS NOT NULL ORDER BY field")
        }
        #expect(fields == ["name", "price"])
    }

    @Test func aRecordsFileSourceIsItsOwnTypedTable() async throws {
        let db = try await ConsumerFixture.make("consumer-records").export()
        let (columns, rows) = try await db.read { db in
            (try Row.fetchAll(db, sql: "PRAGMA table_info(my_sales)").map { "\($0["name"] as String) \($0["type"] as String)" },
             try Row.fetchAll(db, sql: "SELECT key, id, region, amount, typeof(amount) AS t, \"when\", note FROM my_sales ORDER BY key").map {
                "\($0["key"] as String) \($0["id"] as Int) \($0["region"] as String) \($0["amount"] as Double) \($0["t"] as String) "
                    + "\($0["when"] as String? ?? "NULL") \($0["note"] as String? ?? "NULL")"
             })
        }
        // Until the store gives the file's field registry: members in first-seen order, types widened.
        #expect(columns == ["key TEXT", "amount REAL", "id INTEGER", "region TEXT", "when TEXT", "note TEXT"])
        #expect(rows == ["1 1 North 10.0 real 2024-01-01 NULL", "2 2 South 12.5 real NULL late"])
    }

    @Test func csvFilesMatchTheTables() async throws {
        let fixture = try await ConsumerFixture.make("consumer-csv")
        _ = try fixture.export()
        let csv = fixture.output.appendingPathComponent("csv")
        let files = try FileManager.default.contentsOfDirectory(atPath: csv.path).sorted()
        #expect(files == (ConsumerSchema.entityTables.map { "\(ConsumerSchema.table(for: $0)).csv" } + ["my_sales.csv", "datapackage.json"]).sorted())
        let podcasts = try String(contentsOf: csv.appendingPathComponent("podcasts.csv"), encoding: .utf8)
        let header = podcasts.components(separatedBy: "\r\n")[0]
        #expect(header == (["key"] + CanonicalSchema.fields(of: .podcast).map(\.name) + ["extra"]).joined(separator: ","))
        #expect(podcasts.contains(#","{""feedBurnerId"":""laugh""}""#))
        let sales = try String(contentsOf: csv.appendingPathComponent("my_sales.csv"), encoding: .utf8)
        #expect(sales == "key,amount,id,region,when,note\r\n1,10,1,North,2024-01-01,\r\n2,12.5,2,South,,late\r\n")
        let movies = try String(contentsOf: csv.appendingPathComponent("movies.csv"), encoding: .utf8)
        #expect(movies.components(separatedBy: "\r\n").filter { !$0.isEmpty }.count == 1, "header only")
    }
}

@Suite struct ConsumerSchemaUnitTests {
    @Test func recordsFileColumnsWidenAndKeepFirstSeenOrder() {
        var inference = RecordFieldInference()
        inference.observe(#"{"a":true,"b":1,"c":null}"#)
        inference.observe(#"{"a":3,"b":1.5,"d":[1,{"x":"]"}]}"#)
        inference.observe(#"{ "b" : "n/a" , "c":null, "e\u0021":-2e3 }"#)
        inference.observe(#"{"a":-7,"b":false,"c":{}}"#)
        #expect(inference.fields == [RecordField(name: "a", kind: .integer, position: 0), RecordField(name: "b", kind: .text, position: 1),
                                     RecordField(name: "c", kind: .text, position: 2), RecordField(name: "d", kind: .text, position: 3),
                                     RecordField(name: "e!", kind: .real, position: 4)])
    }

    @Test func aRegistryOrdersColumnsAndNamesNeverClash() {
        let layout = RecordTableLayout(source: "s", table: "s", fields: [
            RecordField(name: "Key", kind: .integer, position: 2), RecordField(name: "name", kind: .text, position: 0),
            RecordField(name: "Name", kind: .text, position: 1),
        ])
        #expect(layout.columns.map(\.name) == ["name", "Name_2", "Key"])
        #expect(layout.columns.map(\.field) == ["name", "Name", "Key"])
        #expect(layout.keyColumn == "record_key")
    }

    @Test func recordTablesAreSnakeCaseAndNeverTakeTheExportsNames() {
        #expect(ConsumerSchema.recordTable(source: "My Sales (2024)", taken: []) == "my_sales_2024")
        #expect(ConsumerSchema.recordTable(source: "podcasts", taken: []) == "podcasts_records")
        #expect(ConsumerSchema.recordTable(source: "changes", taken: []) == "changes_records")
        #expect(ConsumerSchema.recordTable(source: "my-sales", taken: ["my_sales"]) == "my_sales_records_2")
        #expect(ConsumerSchema.recordTable(source: "2024", taken: []) == "t_2024")
        #expect(ConsumerSchema.recordTable(source: "Ünïcode", taken: []) == "n_code")
        #expect(ConsumerSchema.recordTable(source: "records", taken: []) == "records")
    }

    @Test func extraIsOnlyWhatNoColumnHolds() {
        let columns = [ExportColumn("name", "name"), ExportColumn("price", "price", .real)]
        #expect(ExtraMembers.json(payload: #"{"name":"a","price":1}"#, columns: columns, values: [.text("a"), .integer(1)]) == nil)
        #expect(ExtraMembers.json(payload: #"{"name":"a"}"#, columns: columns, values: [.text("a"), .null]) == nil)
        #expect(ExtraMembers.json(payload: #"{"name":"a,\"}","x":{"y":[1,2]}}"#, columns: columns, values: [.text("a,\"}"), .null])
            == #"{"x":{"y":[1,2]}}"#)
        #expect(ExtraMembers.json(payload: #"{"name":null,"z":1}"#, columns: columns, values: [.null, .null]) == #"{"z":1}"#)
        #expect(ExtraMembers.json(payload: #"{"name":"a","price":1,"q":[1,{"b":"}{,"}]}"#, columns: columns,
                                  values: [.text("a"), .integer(1)]) == #"{"q":[1,{"b":"}{,"}]}"#)
    }

    @Test func enclosureTypesAreGivenOrGuessed() {
        #expect(MediaType.enclosureType(given: "audio/ogg", url: "https://x/a.mp3") == "audio/ogg")
        #expect(MediaType.enclosureType(given: nil, url: "https://x/a.M4A?token=1#t") == "audio/x-m4a")
        #expect(MediaType.enclosureType(given: nil, url: "https://x/show.ogg/stream") == "audio/mpeg")
        #expect(MediaType.enclosureType(given: "video", url: "https://x/stream") == "video/mp4")
        #expect(MediaType.enclosureType(given: "audio", url: "https://x/a.opus") == "audio/opus")
        #expect(MediaType.enclosureType(given: nil, url: "https://x.example.com") == "audio/mpeg")
    }
}
