import Catalog
import Foundation
import GRDB
import Snapshot
import Testing
import TestSupport

/// The export reads are written once for every engine: a feed's order is
/// decided in storesync from members typed as SQLite's `json_extract` types
/// them, a price drop from values read as SQLite's `CAST(… AS REAL)` reads
/// them. These tests hold that order to SQLite's own `ORDER BY` over the same
/// rows, on values of every JSON type, and the PostgreSQL store to the same answers.
@Suite struct EngineNeutralReadsTests {
    /// Sort values of every kind SQLite orders differently: absent, null,
    /// booleans, integers past 2^53 beside reals, text with escapes and
    /// non-ASCII bytes, containers (ordered as their JSON text).
    static let sortValues: [JSONValue?] = [
        nil, .null, .bool(true), .bool(false), .int(0), .int(1), .int(-3), .int(9_007_199_254_740_993),
        .double(9_007_199_254_740_992), .double(1.5), .double(-0.25), .double(1), .int(Int64.max), .int(Int64.min),
        .string("2024-01-01T00:00:00Z"), .string("2024-01-01T00:00:00Z"), .string("2023-12-31"), .string(""),
        .string("é"), .string("e\u{301}"), .string("a\u{0}b"), .string("\"quoted\""), .string("10"), .string("9"),
        .array([.int(1), .string("x")]), .object(["b": .int(1), "a": .null]), .number("1e3"), .number("-0"),
    ]

    /// Prices as the real world sends them: numbers, and now and then text.
    static let prices: [JSONValue] = [.double(12.5), .double(9.99), .string(" 7e1x"), .string("n/a"), .int(-1), .double(3), .number("1e1"),
                                      .int(20), .double(0.5)]

    static func record(_ entity: EntityKind, _ index: Int, chart: String, run: Int) -> Catalog.Record {
        var fields: [String: JSONValue] = ["trackName": .string("Show \(index)"), "chart": .string(chart),
                                           "country": .string(index % 3 == 0 ? "us" : "gb"), "genre_id": .int(Int64(index % 4)),
                                           "price": prices[(index * run + run) % prices.count]]
        let value = sortValues[index % sortValues.count]
        if let value { fields["releaseDate"] = value }
        // Ranks repeat across charts and collide within one, so the key must break ties.
        fields["rank"] = sortValues[(index * 7 + run) % sortValues.count] ?? .int(Int64(index % 5))
        return Catalog.Record(entity: entity, key: String(format: "k%03d", index), fields: fields)
    }

    /// Two nights: 60 podcasts and chart entries, then 70 with changed prices; the first is the baseline.
    static func fill(_ store: SQLSnapshotStore) async throws {
        for night in 1...2 {
            let start = Date(timeIntervalSince1970: 1_700_000_000 + Double(night) * 86_400)
            let run = try store.beginRun(job: "orders", at: start, simulated: false)
            var page = PageInput(runID: run.id, source: "s", scope: "all", page: 0,
                                 records: [EntityKind.podcast, .chartEntry].flatMap { entity in
                                     (0..<(night == 1 ? 60 : 70)).map { record(entity, $0, chart: $0 % 2 == 0 ? "top" : "new", run: night) }
                                 })
            page.completesScope = true
            _ = try await store.apply(page)
            try store.finishScope(runID: run.id, source: "s", scope: "all", state: .complete, error: nil)
            try store.finishRun(run.id, status: .ok, message: nil, at: start.addingTimeInterval(60))
        }
    }

    /// What the reads under test give, as text.
    static func answers(_ store: SQLSnapshotStore) throws -> [String: String] {
        var answers: [String: String] = [:]
        for limit in [nil, 0, 1, 5, 33] as [Int?] {
            let label = limit.map(String.init) ?? "all"
            for (name, query) in [("newestFirst", FeedQuery.newestFirst([.podcast], by: "releaseDate")),
                                  ("newestAdded", .newestAdded(.podcast, thenBy: "releaseDate")),
                                  ("chart", .chart("top"))] {
                var keys: [String] = []
                try store.forEachFeedRecord(query, limit: limit) { keys.append($0.key); return true }
                answers["\(name) \(label)"] = keys.joined(separator: " ")
            }
            var drops: [String] = []
            try store.forEachDecrease(of: .podcast, field: "price", limit: limit) { drops.append("\($0.key):\($0.before)>\($0.after)"); return true }
            answers["decreases \(label)"] = drops.joined(separator: " ")
        }
        for field in ["releaseDate", "rank", "genre_id", "trackName"] {
            answers["unlinked \(field)"] = String(try store.unlinkedCount(of: .podcast, field: field, target: .podcast))
        }
        return answers
    }

    /// SQLite's own answer to the feeds, in the SQL the reads once ran.
    static func sqliteOrder(_ path: String) throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: path)
        return try queue.read { db in
            [
                "newestFirst": try String.fetchAll(db, sql: """
                    SELECT key FROM entities WHERE entity = 'podcast' ORDER BY json_extract(fields, '$."releaseDate"') DESC, entity, key
                    """),
                "newestAdded": try String.fetchAll(db, sql: """
                    SELECT key FROM entities WHERE entity = 'podcast' AND added_run != 1
                    ORDER BY added_run DESC, json_extract(fields, '$."releaseDate"') DESC, key
                    """),
                "chart": try String.fetchAll(db, sql: """
                    SELECT key FROM entities WHERE entity = 'chart-entry' AND json_extract(fields, '$."chart"') = 'top'
                    ORDER BY json_extract(fields, '$."country"'), json_extract(fields, '$."genre_id"'), json_extract(fields, '$."rank"'), key
                    """),
                "decreases": try String.fetchAll(db, sql: """
                    SELECT c.key || ':' || c.before || '>' || c.after FROM changes c
                    WHERE c.entity = 'podcast' AND c.op = 'changed' AND c.field = 'price'
                      AND c.id = (SELECT max(id) FROM changes c2 WHERE c2.entity = c.entity AND c2.key = c.key AND c2.op = 'changed' AND c2.field = c.field)
                      AND CAST(c.after AS REAL) < CAST(c.before AS REAL)
                    ORDER BY c.run_id DESC, c.key
                    """),
                "unlinked rank": [String(try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM entities e WHERE e.entity = 'podcast' AND json_extract(e.fields, '$."rank"') IS NOT NULL
                      AND CAST(json_extract(e.fields, '$."rank"') AS TEXT) != ''
                      AND NOT EXISTS (SELECT 1 FROM entities t WHERE t.entity = 'podcast' AND t.key = CAST(json_extract(e.fields, '$."rank"') AS TEXT))
                    """) ?? -1)],
            ]
        }
    }

    @Test func feedsAndDropsAreOrderedAsSQLiteOrdersThem() async throws {
        let made = try await StoreEngine.sqlite.makeStore()
        try await Self.fill(made.store)
        let answers = try Self.answers(made.store)
        let expected = try Self.sqliteOrder(made.location)
        for (name, keys) in expected where name != "unlinked rank" {
            for limit in [nil, 1, 5, 33] as [Int?] {
                let want = Array(keys.prefix(limit ?? .max)).joined(separator: " ")
                #expect(answers["\(name) \(limit.map(String.init) ?? "all")"] == want, "\(name), limit \(String(describing: limit))")
            }
            #expect(answers["\(name) 0"] == "", "\(name), limit 0")
        }
        #expect(answers["unlinked rank"] == expected["unlinked rank"]?.first)
        // The answers are not empty ones that would agree whatever the store held.
        #expect((expected["newestAdded"]?.count ?? 0) == 10)
        #expect((expected["decreases"]?.count ?? 0) > 5)
        #expect((expected["chart"]?.count ?? 0) == 35)
    }

    @Test(.enabled(if: TemporaryPostgres.testsEnabled, Comment(rawValue: TemporaryPostgres.skipReason)))
    func postgresGivesSQLitesAnswers() async throws {
        var answers: [StoreEngine: [String: String]] = [:]
        for engine in StoreEngine.allCases {
            let store = try await engine.makeStore().store
            try await Self.fill(store)
            answers[engine] = try Self.answers(store)
        }
        for (read, expected) in (answers[.sqlite] ?? [:]).sorted(by: { $0.key < $1.key }) {
            #expect(answers[.postgres]?[read] == expected, "\(read)")
        }
    }

    /// SQLite's casts, asked of SQLite itself.
    @Test func castsAreSQLites() throws {
        let queue = try DatabaseQueue()
        let texts = ["12.50", "9.99", " 7e1x", "n/a", "", "-1", "3.", ".5", "+.5e-1", "1e", "1e+", "  -0", "0x10", "1,5", "١٢", "\t4"]
        for text in texts {
            let real = try queue.read { db in try Double.fetchOne(db, sql: "SELECT CAST(? AS REAL)", arguments: [text]) }
            #expect(StoredValue.sqliteReal(text) == real, "CAST('\(text)' AS REAL)")
        }
        for value in [0.1, 1.0, 1e20, -2.5e-7, 123456789012345678.0, 100.0, 1.5e300] {
            let text = try queue.read { db in try String.fetchOne(db, sql: "SELECT CAST(? AS TEXT)", arguments: [value]) }
            #expect(StoredValue.real(value).sqliteText == text, "CAST(\(value) AS TEXT)")
        }
    }
}
