import Catalog
import Connectors
import Foundation
import GRDB
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// A records file's dialect, encoding and column options, from the job file
/// to the snapshot.
@Suite struct RecordsFileJobTests {
    func settings(_ source: String) throws -> RecordsFileSettings? {
        let job = try JobLoader.parse(yaml: """
            name: x
            store: s.sqlite
            output: out
            sources:
              - \(source)
            """, file: "job.yml", baseDirectory: "/srv/jobs")
        return job.sources.first?.settings as? RecordsFileSettings
    }

    func issues(_ source: String) -> [String] {
        do {
            _ = try JobLoader.parse(yaml: """
                name: x
                store: s.sqlite
                output: out
                sources:
                  - \(source)
                """, file: "job.yml", baseDirectory: "/jobs", rules: .cli)
            return []
        } catch {
            return error.issues.map { "\($0.keyPath): \($0.message)" }
        }
    }

    @Test func optionsAreRead() throws {
        let read = try settings("""
            {name: f, kind: records-file, path: data/shop.csv, keyField: sku, delimiter: ";", quote: "'", encoding: cp1252,
                     columns: {price: real, sku: text, opened: date, qty: int}}
            """)
        #expect(read == RecordsFileSettings(path: "/srv/jobs/data/shop.csv", format: .csv, keyField: "sku", delimiter: ";", quote: "'",
                                            encoding: .windows1252,
                                            columns: ["price": .real, "sku": .text, "opened": .date, "qty": .integer]))
    }

    @Test(arguments: [#"tab"#, #"\t"#, #""\t""#, #"TAB"#])
    func aTabIsSpelledAsUsersSpellIt(spelling: String) throws {
        #expect(try settings("{name: f, kind: records-file, path: a.csv, delimiter: \(spelling)}")?.delimiter == "\t")
    }

    @Test(arguments: ["none", #""""#, "~"])
    func noQuoting(spelling: String) throws {
        #expect(try settings("{name: f, kind: records-file, path: a.csv, quote: \(spelling)}")?.quote == nil)
    }

    @Test(arguments: [
        ("utf-8", RecordsFileEncoding.utf8), ("utf8", .utf8), ("windows-1252", .windows1252), ("cp1252", .windows1252),
        ("iso-8859-1", .iso88591), ("latin1", .iso88591), ("latin-1", .iso88591),
    ])
    func encodingsByNameAndAlias(name: String, expected: RecordsFileEncoding) throws {
        #expect(try settings("{name: f, kind: records-file, path: a.csv, encoding: \(name)}")?.encoding == expected)
    }

    @Test(arguments: [
        ("delimiter: \";;\"", "sources[0].delimiter: expected one character such as ';' or '|', or tab; got ';;'"),
        ("delimiter: t", "sources[0].delimiter: expected one character such as ';' or '|', or tab, not a letter, digit or line end; got 't' (did you mean tab?)"),
        ("delimiter: semicolom", "did you mean semicolon?"),
        ("delimiter: ¦", "got '¦'"),
        ("delimiter: none", "sources[0].delimiter: a CSV file needs a delimiter"),
        ("quote: \",\"", "sources[0].quote: must differ from the delimiter"),
        ("quote: \"«\"", "sources[0].quote: expected one character such as '\"' or \"'\", or none; got '«'"),
        ("encoding: cp1253", "sources[0].encoding: unknown encoding 'cp1253' (did you mean 'cp1252'?); one of utf-8, windows-1252, iso-8859-1"),
        ("encoding: utf-16", "unknown encoding 'utf-16'"),
        ("columns: {price: reel}", "sources[0].columns.price: unknown column type 'reel' (did you mean 'real'?); one of integer, real, date, text"),
        ("columns: [price]", "sources[0].columns: expected a mapping"),
        ("columns: {price: }", "sources[0].columns.price: expected a column type"),
        ("delimter: \";\"", "sources[0].delimter: unknown key (did you mean 'delimiter'?)"),
    ])
    func mistakesAreReportedWithTheirKey(option: String, expected: String) {
        let found = issues("{name: f, kind: records-file, path: a.csv, \(option)}")
        #expect(found.contains { $0.contains(expected) }, "\(found)")
    }

    @Test func csvOptionsOnAJSONLinesFileAreMistakes() {
        let found = issues("{name: f, kind: records-file, path: a.jsonl, delimiter: \";\", quote: none, columns: {a: text}, encoding: latin1}")
        #expect(found.filter { $0.contains("applies to CSV files only") }.count == 3, "\(found)")
        #expect(!found.contains { $0.hasPrefix("sources[0].encoding") })
    }

    /// Night 2's file has an undefined Windows-1252 byte in its last row, past
    /// pages full of changes and removals: nothing of it is stored, nothing is
    /// removed, and the run says where the byte is. Night 3, fixed, applies it all.
    @Test func aRefusedByteStoresNothingAndRemovesNothing() async throws {
        let directory = TestPaths.temporaryDirectory("records-encoding")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("shop.csv")
        func write(_ rows: [(id: Int, name: [UInt8], price: String)]) throws {
            var bytes = Array("id;name;price\r\n".utf8)
            for row in rows { bytes += Array("\(row.id);".utf8) + row.name + Array(";\(row.price)\r\n".utf8) }
            try Data(bytes).write(to: file)
        }
        // "Café n" in Windows-1252.
        var rows = (0..<200).map { (id: $0, name: Array("Caf".utf8) + [0xE9] + Array(" \($0)".utf8), price: "\($0 % 9).50") }
        try write(rows)
        let job = try JobLoader.parse(yaml: """
            name: shop
            store: snapshot.sqlite
            output: out
            sources:
              - {name: shop, kind: records-file, path: shop.csv, pageSize: 20, delimiter: ";", encoding: windows-1252,
                 removal: {afterMisses: 1, maxRatio: 0.5}}
            """, file: "shop.yml", baseDirectory: directory.path)
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.outcome == .ok, "\(first.errors)")
        #expect(first.recordRowsWritten == 200)
        let store = try SQLSnapshotStore(path: job.storePath)
        let night1 = try store.records(source: "shop")
        #expect(try night1.first { $0.key == "7" }?.fields() == ["id": .int(7), "name": .string("Café 7"), "price": .double(7.5)])

        // Night 2: 30 rows gone, 20 changed, one new row whose name holds 0x81.
        rows.removeLast(30)
        for i in stride(from: 0, to: 100, by: 5) { rows[i].price = "99" }
        rows.append((id: 500, name: Array("Bad ".utf8) + [0x81], price: "1"))
        try write(rows)
        let second = try await Runner(job: job, logger: .quiet).run()
        #expect(second.outcome != .ok)
        #expect(second.recordRowsWritten == 0)
        #expect(second.sources[0].counts.removed == 0 && second.sources[0].counts.added == 0 && second.sources[0].counts.changed == 0)
        let reported = (second.errors + second.sources[0].errors).map(\.message).joined(separator: "\n")
        #expect(reported.contains("line 172, column 9: byte 0x81 is not a character in windows-1252"), "\(reported)")
        #expect(try store.changes(runID: second.runID).isEmpty)
        let night2 = try store.records(source: "shop")
        #expect(night2.map(\.key) == night1.map(\.key) && zip(night2, night1).allSatisfy { $0.payload == $1.payload })

        // Night 3: the byte fixed, every change lands.
        rows[rows.count - 1].name = Array("Fixed".utf8)
        try write(rows)
        let third = try await Runner(job: job, logger: .quiet).run()
        #expect(third.outcome == .ok, "\(third.errors)")
        #expect(third.sources[0].counts.removed == 30)
        #expect(third.sources[0].counts.changed == 20)
        #expect(third.sources[0].counts.added == 1)
    }

    /// A page whose bytes are those of last night is not decoded again, but
    /// one read under other settings is: declaring a column's type (or
    /// another key, delimiter…) takes effect the next night, file unchanged.
    /// A file whose rows filled its last page exactly: rows appended after it
    /// are read the next night (the page's bytes are the same, what follows is not).
    @Test(arguments: ["csv", "jsonl"])
    func rowsAppendedAfterAFullLastPageAreRead(_ format: String) async throws {
        let directory = TestPaths.temporaryDirectory("records-append-\(format)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("stock.\(format)")
        func row(_ i: Int) -> String { format == "csv" ? "\(i),\(i * 7)\n" : #"{"id": \#(i), "qty": \#(i * 7)}"# + "\n" }
        try ((format == "csv" ? "id,qty\n" : "") + (0..<20).map(row).joined()).write(to: file, atomically: true, encoding: .utf8)
        let job = try JobLoader.parse(yaml: """
            name: stock
            store: snapshot.sqlite
            output: out
            sources:
              - {name: stock, kind: records-file, path: stock.\(format), keyField: id, pageSize: 10}
            """, file: "stock.yml", baseDirectory: directory.path)
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.sources[0].counts.added == 20)

        let handle = try FileHandle(forWritingTo: file)
        try handle.seekToEnd()
        try handle.write(contentsOf: Data((20..<25).map(row).joined().utf8))
        try handle.close()
        let second = try await Runner(job: job, logger: .quiet).run()
        #expect(second.outcome == .ok, "\(second.errors)")
        #expect(second.sources[0].counts.added == 5, "\(second.summaryText)")
        #expect(second.recordRowsWritten == 5)

        // Then the file is as remembered again: every page unchanged, nothing written.
        let third = try await Runner(job: job, logger: .quiet).run()
        #expect(third.sources[0].unchangedPages == 3 && third.recordRowsWritten == 0, "\(third.summaryText)")
        // Rows taken off the end: the page before them now ends the file, and is read again to say so.
        try ((format == "csv" ? "id,qty\n" : "") + (0..<20).map(row).joined()).write(to: file, atomically: true, encoding: .utf8)
        let fourth = try await Runner(job: job, logger: .quiet).run()
        #expect(fourth.outcome == .ok, "\(fourth.errors)")
        #expect(fourth.sources[0].unchangedPages == 1 && fourth.recordRowsWritten == 0, "\(fourth.summaryText)")
    }

    /// A file wider than a SQLite table: the consumer table keeps what fits and
    /// the rest as JSON in `extra`, the CSV keeps every column, the night is ok
    /// (it once failed every night, the export resumed and failed again).
    @Test func aFileWiderThanASQLiteTableIsExportedWhole() async throws {
        let directory = TestPaths.temporaryDirectory("records-wide")
        defer { try? FileManager.default.removeItem(at: directory) }
        let width = 2_100
        let header = ["id"] + (1..<width).map { "c\($0)" }
        let rows = (1...3).map { row in ["\(row)"] + (1..<width).map { "\(row * 10_000 + $0)" } }
        try (([header] + rows).map { $0.joined(separator: ",") }.joined(separator: "\n") + "\n")
            .write(to: directory.appendingPathComponent("wide.csv"), atomically: true, encoding: .utf8)
        let job = try JobLoader.parse(yaml: """
            name: wide
            store: snapshot.sqlite
            output: out
            sources:
              - {name: wide, kind: records-file, path: wide.csv, keyField: id}
            exports:
              - {kind: sqlite, path: wide.sqlite}
              - {kind: csv, directory: csv}
            """, file: "wide.yml", baseDirectory: directory.path)
        let log = CapturedLog()
        for night in 1...2 {
            let report = try await Runner(job: job, logger: log.logger).run()
            #expect(report.outcome == .ok, "night \(night): \(report.errors)")
            #expect(report.runID == Int64(night), "a new night each time, not the same export retried")
        }
        #expect(log.text.contains("wide: 2100 columns, more than a SQLite table holds"), "\(log.text.suffix(2000))")
        let database = try DatabaseQueue(path: directory.appendingPathComponent("out/wide.sqlite").path)
        let (columns, extra, last) = try await database.read { db in
            (try Row.fetchAll(db, sql: "PRAGMA table_info(wide)").map { $0["name"] as String },
             try String.fetchOne(db, sql: "SELECT extra FROM wide WHERE key = '2'"),
             try Int.fetchOne(db, sql: "SELECT c1997 FROM wide WHERE key = '2'"))
        }
        #expect(columns.count == 2_000)
        #expect(columns.prefix(3) == ["key", "id", "c1"] && columns.last == "extra")
        #expect(last == 21_997)
        let overflow = try #require(try JSONParser.parse(Array((extra ?? "").utf8)).objectValue)
        #expect(overflow.count == width - 1_998, "\(overflow.keys.sorted().prefix(5))")
        #expect(overflow["c1998"] == .int(21_998) && overflow["c2099"] == .int(22_099))
        let csv = try String(contentsOf: directory.appendingPathComponent("out/csv/wide.csv"), encoding: .utf8)
        #expect(csv.split(whereSeparator: \.isNewline).first?.split(separator: ",").count == width + 1)
    }

    /// Issue item 13: a file that lists one key twice on a page, in two
    /// versions, keeps the last one, and the nights after log no change for
    /// it (JSON Lines rows whose bytes are stored are not trusted for such a
    /// key), while a row that does change is logged once a night.
    @Test(arguments: ["csv", "jsonl"])
    func aKeyListedTwiceOnAPageChangesNothingNightAfterNight(_ format: String) async throws {
        let directory = TestPaths.temporaryDirectory("records-twice-\(format)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("stock.\(format)")
        func write(night: Int) throws {
            let rows: [(id: Int, qty: Int)] = [(1, 5), (2, night), (1, 7)]
            let text = format == "csv" ? "id,qty\n" + rows.map { "\($0.id),\($0.qty)\n" }.joined()
                : rows.map { #"{"id": \#($0.id), "qty": \#($0.qty)}"# + "\n" }.joined()
            try text.write(to: file, atomically: true, encoding: .utf8)
        }
        let job = try JobLoader.parse(yaml: """
            name: stock
            store: snapshot.sqlite
            output: out
            sources:
              - {name: stock, kind: records-file, path: stock.\(format), keyField: id}
            """, file: "stock.yml", baseDirectory: directory.path)
        for night in 1...3 {
            try write(night: night)
            let report = try await Runner(job: job, logger: .quiet).run()
            #expect(report.outcome == .ok, "\(report.errors)")
            let store = try SQLSnapshotStore(path: job.storePath, readOnly: true)
            let stored = try store.records(source: "stock").first { $0.key == "1" }
            #expect(try stored?.fields()["qty"] == .int(7), "night \(night): the last row of the key wins")
            guard night > 1 else { continue }
            let changes = try store.changes(runID: report.runID)
            #expect(changes.filter { $0.key == "stock:1" }.isEmpty, "night \(night): \(changes)")
            #expect(changes.filter { $0.key == "stock:2" }.map { [$0.op, $0.field, $0.before, $0.after] }
                    == [["changed", "qty", "\(night - 1)", "\(night)"]], "night \(night): \(changes)")
            #expect(report.sources[0].counts.changed == 1, "night \(night): \(report.summaryText)")
        }
    }

    @Test func changedSettingsReadAnUnchangedFileAgain() async throws {
        let directory = TestPaths.temporaryDirectory("records-settings")
        defer { try? FileManager.default.removeItem(at: directory) }
        var text = "id,zip\n"
        for i in 0..<30 { text += "\(i),\(10_000 + i)\n" }
        try text.write(to: directory.appendingPathComponent("places.csv"), atomically: true, encoding: .utf8)
        func job(_ options: String) throws -> JobSpec {
            try JobLoader.parse(yaml: """
                name: places
                store: snapshot.sqlite
                output: out
                sources:
                  - {name: places, kind: records-file, path: places.csv, pageSize: 10\(options)}
                """, file: "places.yml", baseDirectory: directory.path)
        }
        let plain = try job("")
        #expect(try await Runner(job: plain, logger: .quiet).run().recordRowsWritten == 30)
        let again = try await Runner(job: plain, logger: .quiet).run()
        #expect(again.sources[0].unchangedPages == 3 && again.recordRowsWritten == 0)
        let declared = try job(", columns: {zip: text}")
        let typed = try await Runner(job: declared, logger: .quiet).run()
        #expect(typed.outcome == .ok, "\(typed.errors)")
        #expect(typed.sources[0].counts.changed == 30)
        let stored = try SQLSnapshotStore(path: declared.storePath).records(source: "places")
        #expect(try stored.first { $0.key == "3" }?.fields() == ["id": .int(3), "zip": .string("10003")])
        #expect(try await Runner(job: declared, logger: .quiet).run().sources[0].unchangedPages == 3)
    }

    @Test func aNewColumnBecomesAColumnAndIsReportedTheNightItAppears() async throws {
        let directory = TestPaths.temporaryDirectory("records-new-column")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("stock.csv")
        let job = try JobLoader.parse(yaml: """
            name: stock
            store: snapshot.sqlite
            output: out
            sources:
              - {name: stock, kind: records-file, path: stock.csv, keyField: sku}
            exports:
              - {kind: sqlite, path: stock.sqlite}
              - {kind: run-report, path: report.json}
            """, file: "stock.yml", baseDirectory: directory.path)
        try "sku,qty\nA,1\nB,2\n".write(to: file, atomically: true, encoding: .utf8)
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.notices.isEmpty, "a source's first night is its baseline")
        try "sku,qty,shelf\nA,1.5,top\nB,2,low\n".write(to: file, atomically: true, encoding: .utf8)
        let second = try await Runner(job: job, logger: .quiet).run()
        #expect(second.notices == ["stock: field qty of record changed type from integer to real",
                                   "stock: new field shelf (text) in record; kept in the raw payload"])
        let report = try String(contentsOf: directory.appendingPathComponent("out/report.json"), encoding: .utf8)
        #expect(report.contains("\"field\": \"shelf\""))
        let columns = try await DatabaseQueue(path: directory.appendingPathComponent("out/stock.sqlite").path).read { db in
            try Row.fetchAll(db, sql: "PRAGMA table_info(stock)").map { "\($0["name"] as String) \($0["type"] as String)" }
        }
        #expect(columns == ["key TEXT", "sku TEXT", "qty REAL", "shelf TEXT"])
    }

    /// Item 7 of "Safe to leave in cron": one `1e400` used to fail its whole
    /// page (nothing stored, every night); an id above 2^63 was rounded.
    @Test func numbersNoDoubleHoldsCostNothingAndStayExactInEveryExport() async throws {
        let directory = TestPaths.temporaryDirectory("records-bad-numbers")
        defer { try? FileManager.default.removeItem(at: directory) }
        let long = String(repeating: "9", count: 5_000)
        var rows = (1...100).map { #"{"id":\#($0),"name":"p\#($0)","price":\#($0)}"# }
        rows[9] = #"{"id":10,"name":"p10","price":1e400}"#
        rows[19] = #"{"id":18446744073709551616,"name":"huge","price":2}"#
        rows[29] = #"{"id":30,"name":"p30","price":\#(long)}"#
        try (rows.joined(separator: "\n") + "\n").write(to: directory.appendingPathComponent("items.jsonl"), atomically: true, encoding: .utf8)
        let job = try JobLoader.parse(yaml: """
            name: items
            store: snapshot.sqlite
            output: out
            sources:
              - {name: items, kind: records-file, path: items.jsonl, pageSize: 50}
            exports:
              - {kind: csv, directory: csv}
              - {kind: changes-csv, path: changes.csv}
              - {kind: sqlite, path: items.sqlite}
            """, file: "items.yml", baseDirectory: directory.path)
        let report = try await Runner(job: job, logger: .quiet).run()
        #expect(report.outcome == .ok, "\(report.errors)")
        #expect(report.sources[0].counts.added == 100)
        let csv = try String(contentsOf: directory.appendingPathComponent("out/csv/items.csv"), encoding: .utf8)
        #expect(csv.contains("\r\n10,10,p10,1e400\r\n"))
        #expect(csv.contains("\r\n18446744073709551616,18446744073709551616,huge,2\r\n"))
        #expect(csv.contains("\r\n30,30,p30,\(long)\r\n"))
        let changes = try String(contentsOf: directory.appendingPathComponent("out/changes.csv"), encoding: .utf8)
        #expect(changes.contains("items:18446744073709551616"))
        let consumer = try DatabaseQueue(path: directory.appendingPathComponent("out/items.sqlite").path)
        // A typed column holds what SQLite can (its affinity makes the digits a REAL); the key keeps them.
        let keys: [String] = try await consumer.read { try String.fetchAll($0, sql: "SELECT key FROM items WHERE name = 'huge'") }
        #expect(keys == ["18446744073709551616"])
        // The same night again: nothing changed, nothing written.
        #expect(try await Runner(job: job, logger: .quiet).run().recordRowsWritten == 0)
    }

    /// A consumer table's rows as text, cells joined by `|` (NULL for a null), in key order.
    static func rows(_ db: Database, table: String) throws -> [String] {
        try Row.fetchAll(db, sql: "SELECT * FROM \"\(table.replacingOccurrences(of: "\"", with: "\"\""))\" ORDER BY 1").map { row in
            row.databaseValues.map { value in
                switch value.storage {
                case .null: "NULL"
                case .int64(let i): "\(i)"
                case .double(let d): "\(d)"
                case .string(let s): s
                case .blob: "BLOB"
                }
            }.joined(separator: "|")
        }
    }

    /// Issue 28 item 6 (a, b): a file's table and CSV have the header's columns
    /// in the header's order whatever the rows hold. A column empty in the
    /// first rows keeps its place and takes its type from the rows that fill
    /// it; a column empty in every row is there, all NULL (empty cells in the
    /// CSV). The job's first source is a store's first load, its second the
    /// usual diff: both hold the rule, one row a page or all rows on one.
    @Test(arguments: [1, 100])
    func theHeadersColumnsAreExportedInItsOrderWhateverTheRowsHold(pageSize: Int) async throws {
        let directory = TestPaths.temporaryDirectory("records-header-order")
        defer { try? FileManager.default.removeItem(at: directory) }
        let text = "id,a,b,never,late,c\n1,x,,,,y\n2,,5,,,z\n3,w,6,,7,\n"
        for name in ["first", "second"] {
            try text.write(to: directory.appendingPathComponent("\(name).csv"), atomically: true, encoding: .utf8)
        }
        let job = try JobLoader.parse(yaml: """
            name: order
            store: snapshot.sqlite
            output: out
            sources:
              - {name: first, kind: records-file, path: first.csv, pageSize: \(pageSize)}
              - {name: second, kind: records-file, path: second.csv, pageSize: \(pageSize)}
            exports:
              - {kind: sqlite, path: order.sqlite}
              - {kind: csv, directory: csv}
            """, file: "order.yml", baseDirectory: directory.path)
        let report = try await Runner(job: job, logger: .quiet).run()
        #expect(report.outcome == .ok, "\(report.errors)")
        let database = try DatabaseQueue(path: directory.appendingPathComponent("out/order.sqlite").path)
        for table in ["first", "second"] {
            let (columns, rows) = try await database.read { db in
                (try Row.fetchAll(db, sql: "PRAGMA table_info(\(table))").map { "\($0["name"] as String) \($0["type"] as String)" },
                 try Self.rows(db, table: table))
            }
            #expect(columns == ["key TEXT", "id INTEGER", "a TEXT", "b INTEGER", "never TEXT", "late INTEGER", "c TEXT"], "\(table)")
            #expect(rows == ["1|1|x|NULL|NULL|NULL|y", "2|2|NULL|5|NULL|NULL|z", "3|3|w|6|NULL|7|NULL"], "\(table)")
            let csv = try String(contentsOf: directory.appendingPathComponent("out/csv/\(table).csv"), encoding: .utf8)
            #expect(csv.split(whereSeparator: \.isNewline) == ["key,id,a,b,never,late,c", "1,1,x,,,,y", "2,2,,5,,,z", "3,3,w,6,,7,"],
                    "\(table)")
        }
    }

    /// Issue 28 item 6 (c): SQL keywords and odd characters are names like any
    /// other, as source names (tables), CSV column names and JSON Lines member
    /// names: the consumer database is written, opens, and has each table with
    /// its columns and rows.
    @Test func sqlKeywordsAndOddCharactersAreNamesLikeAnyOther() async throws {
        let directory = TestPaths.temporaryDirectory("records-names")
        defer { try? FileManager.default.removeItem(at: directory) }
        let keywords = ["order", "group", "select", "table", "index", "where", "from", "values", "key", "default", "check",
                        "references", "primary", "create", "drop", "null", "transaction", "rowid"]
        let odd = ["say \"hi\"", "it's", "a-b", "a.b", "café", "1st", "two words"]
        // Source name → table: snake_case, so the odd ones lose their odd characters; the keywords stay as they are.
        let sources: [(name: String, table: String)] = keywords.map { ($0, $0) } + [
            ("say \"hi\"", "say_hi"), ("it's", "it_s"), ("a-b", "a_b"), ("a.b", "a_b_records_2"), ("café", "caf"),
            ("1st", "t_1st"), ("two words", "two_words"),
        ]
        let names = ["id"] + keywords + odd
        // The table's columns: the file's own names; `key` is one of them, so the record's key is `record_key`.
        let columns = ["record_key"] + names
        func csvField(_ text: String) -> String {
            text.contains(where: { $0 == "\"" || $0 == "," }) ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
        }
        func json(_ text: String) -> String { "\"" + text.replacingOccurrences(of: "\"", with: "\\\"") + "\"" }
        var yaml = "name: names\nstore: snapshot.sqlite\noutput: out\nsources:\n"
        for (n, source) in sources.enumerated() {
            let jsonLines = n.isMultiple(of: 2)
            let file = directory.appendingPathComponent("s\(n).\(jsonLines ? "jsonl" : "csv")")
            let rows = (1...2).map { row in names.map { $0 == "id" ? "\(row)" : "\($0) \(row)" } }
            if jsonLines {
                try rows.map { values in
                    "{" + zip(names, values).map { "\(json($0)): \($0 == "id" ? $1 : json($1))" }.joined(separator: ", ") + "}\n"
                }.joined().write(to: file, atomically: true, encoding: .utf8)
            } else {
                try ([names] + rows).map { $0.map(csvField).joined(separator: ",") + "\n" }.joined()
                    .write(to: file, atomically: true, encoding: .utf8)
            }
            yaml += "  - {name: '\(source.name.replacingOccurrences(of: "'", with: "''"))', kind: records-file, path: \(file.lastPathComponent)}\n"
        }
        yaml += "exports:\n  - {kind: sqlite, path: names.sqlite}\n  - {kind: csv, directory: csv}\n"
        let job = try JobLoader.parse(yaml: yaml, file: "names.yml", baseDirectory: directory.path)
        let report = try await Runner(job: job, logger: .quiet).run()
        #expect(report.outcome == .ok, "\(report.errors) \(report.sources.flatMap(\.errors))")
        let database = try DatabaseQueue(path: directory.appendingPathComponent("out/names.sqlite").path)
        let (check, tables) = try await database.read { db in
            (try String.fetchOne(db, sql: "PRAGMA integrity_check"),
             Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table'")))
        }
        #expect(check == "ok")
        for (n, source) in sources.enumerated() {
            #expect(tables.contains(source.table), "\(source.name): no table \(source.table) in \(tables.sorted())")
            guard tables.contains(source.table) else { continue }
            let (found, rows) = try await database.read { db in
                (try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [source.table]).map { $0["name"] as String },
                 try Self.rows(db, table: source.table))
            }
            // JSON Lines members have no order of their own: the names are compared as a set.
            #expect(n.isMultiple(of: 2) ? Set(found) == Set(columns) : found == columns, "\(source.name): \(found)")
            #expect(rows.count == 2 && rows.allSatisfy { $0.split(separator: "|").count == columns.count }, "\(source.name): \(rows)")
            let value = try await database.read { db in
                try String.fetchOne(db, sql: "SELECT \"say \"\"hi\"\"\" FROM \"\(source.table)\" WHERE record_key = '2'")
            }
            #expect(value == "say \"hi\" 2", "\(source.name)")
            let csv = try String(contentsOf: directory.appendingPathComponent("out/csv/\(source.table).csv"), encoding: .utf8)
            #expect(csv.split(whereSeparator: \.isNewline).count == 3, "\(source.name)")
        }
    }
}
