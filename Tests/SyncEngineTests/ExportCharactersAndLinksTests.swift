import Catalog
import Export
import Foundation
import GRDB
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// Issue 15 item 8: one character rule for every export, and only http(s)
/// links in feeds and OPML, through real runs of records-file sources.
@Suite struct ExportCharactersAndLinksTests {
    /// NUL, SOH, ESC, U+FFFE: what no export may write.
    static let bad = "A\u{0}B\u{1}C\u{1B}D\u{FFFE}E"
    static let unsafe = ["javascript:", "JAVASCRIPT:", "data:text", "file:///", "vbscript:", "/relative/junk", "exa mple"]

    /// Writes JSON Lines: `records` are JSON objects as text (so escapes such as a lone `\ud800` stay as written).
    func write(_ lines: [String], to url: URL) throws {
        try Data(lines.map { $0 + "\n" }.joined().utf8).write(to: url)
    }

    func json(_ object: [String: String]) throws -> String {
        // ASCII-only JSON: every control character as its \u escape, as a source would send it.
        let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
        var text = String(decoding: data, as: UTF8.self)
        for scalar in Self.bad.unicodeScalars where scalar.value < 0x20 || scalar.value == 0xFFFE {
            text = text.replacingOccurrences(of: String(Character(scalar)), with: String(format: "\\u%04x", scalar.value))
        }
        return text
    }

    /// The records of one night: `name` is the podcast's and the row's name.
    func writeNight(_ directory: URL, name: String) throws {
        try write([
            try json(["id": "p1", "name": "Evil \(name)", "artist": "Art\u{0}ist", "feed_url": "javascript:alert(1)",
                      "view_url": "data:text/html,<script>alert(1)</script>", "artwork_url": "file:///etc/passwd", "genre": "News"]),
            try json(["id": "p2", "name": "Good show", "feed_url": "https://example.com/good.xml", "view_url": "https://example.com/good",
                      "artwork_url": "https://example.com/a.jpg", "genre": "News"]),
            try json(["id": "p3", "name": "Spacey", "feed_url": "http://exa mple.com/x.xml", "view_url": "vbscript:msgbox",
                      "artwork_url": "/relative/junk.jpg", "genre": "News"]),
            #"{"id": "p4", "name": "S\ud800T", "feed_url": "HTTPS://example.com/p4.xml", "genre": "News"}"#,
        ], to: directory.appendingPathComponent("podcasts.jsonl"))
        try write([
            try json(["id": "e1", "podcast_id": "p2", "name": "Ep evil", "enclosure_url": "javascript:alert(1)",
                      "link": "data:text/html,x", "release_date": "2026-01-01T00:00:00Z"]),
            try json(["id": "e2", "podcast_id": "p2", "name": "Ep good \(name)", "enclosure_url": "https://example.com/e2.mp3",
                      "link": "https://example.com/e2", "image_url": "JAVASCRIPT:x", "release_date": "2026-01-02T00:00:00Z"]),
        ], to: directory.appendingPathComponent("episodes.jsonl"))
        try write([try json(["sku": "k1", "title": name, "note": "ok"]), #"{"sku": "k2", "title": "S\ud800T"}"#],
                  to: directory.appendingPathComponent("things.jsonl"))
    }

    /// Offsets of bytes no export may hold: C0 controls other than tab/LF/CR, U+FFFE/U+FFFF.
    func forbidden(_ data: Data) -> [Int] {
        let bytes = [UInt8](data)
        var found: [Int] = []
        for (i, b) in bytes.enumerated() {
            if b < 0x20, b != 0x09, b != 0x0A, b != 0x0D { found.append(i) }
            if b == 0xEF, i + 2 < bytes.count, bytes[i + 1] == 0xBF, bytes[i + 2] >= 0xBE { found.append(i) }
        }
        return found
    }

    /// Strict RFC 4180: every quoted field closed, quotes inside doubled, every record as wide as the header.
    func csvRecords(_ text: String) -> [[String]]? {
        var records: [[String]] = []
        var record: [String] = []
        var field = ""
        var chars = Array(text.unicodeScalars)[...]
        var quoted = false
        while let c = chars.popFirst() {
            if quoted {
                if c == "\"" {
                    if chars.first == "\"" { chars.removeFirst(); field.unicodeScalars.append("\"") } else { quoted = false }
                } else {
                    field.unicodeScalars.append(c)
                }
            } else if c == "\"" {
                guard field.isEmpty else { return nil }
                quoted = true
            } else if c == "," {
                record.append(field); field = ""
            } else if c == "\r" {
                guard chars.popFirst() == "\n" else { return nil }
                record.append(field); field = ""
                records.append(record); record = []
            } else {
                field.unicodeScalars.append(c)
            }
        }
        guard !quoted, record.isEmpty, field.isEmpty, let width = records.first?.count,
              records.allSatisfy({ $0.count == width }) else { return nil }
        return records
    }

    @Test func everyExportHoldsTheCleanTextAndOnlyHTTPLinks() async throws {
        let directory = TestPaths.temporaryDirectory("export-characters")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: """
            name: chars
            store: snapshot.sqlite
            output: out
            sources:
              - { name: pods, kind: records-file, path: podcasts.jsonl, keyField: id, entity: podcast }
              - { name: eps, kind: records-file, path: episodes.jsonl, keyField: id, entity: episode }
              - { name: things, kind: records-file, path: things.jsonl, keyField: sku }
            exports:
              - { kind: sqlite, path: consumer.sqlite }
              - { kind: csv, directory: csv }
              - { kind: changes-csv, path: changes.csv }
              - { kind: run-report, path: report.json }
              - { kind: opml, path: podcasts.opml }
              - { kind: feed, feed: podcasts-updated, rss: feeds/podcasts.xml, atom: feeds/podcasts.atom, title: Podcasts,
                  selfURL: "https://example.com/feeds/podcasts.xml", link: "https://example.com/" }
              - { kind: feed, feed: episodes-new, rss: feeds/episodes.xml, atom: feeds/episodes.atom, title: Episodes,
                  selfURL: "https://example.com/feeds/episodes.xml", link: "https://example.com/" }
            """, file: "chars.yml", baseDirectory: directory.path)
        // Night 1 plain, night 2 with the characters: changes.csv then holds them as `after`.
        try writeNight(directory, name: "plain")
        _ = try await Runner(job: job, logger: .quiet).run()
        try writeNight(directory, name: Self.bad)
        let log = CapturedLog()
        let second = try await Runner(job: job, logger: log.logger).run()
        #expect(second.recordRowsWritten > 0)

        let out = directory.appendingPathComponent("out")
        // `storesync changes --csv/--json`, as the CLI prints them.
        for (name, format) in [("changes-stdout.csv", MachineOutput.ChangesFormat.csv), ("changes-stdout.json", .json)] {
            let path = out.appendingPathComponent(name).path
            let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
            #expect(fd >= 0)
            _ = try MachineOutput.writeChanges(job: job, runID: nil, format: format, to: fd)
            close(fd)
        }

        // The snapshot keeps the values exactly as sent.
        let store = try SQLSnapshotStore(path: job.storePath)
        let p1 = try #require(try store.records(source: "pods").first { $0.key == "p1" })
        #expect(try p1.fields()["name"] == .string("Evil \(Self.bad)"))

        // No file holds a forbidden character, nor (feeds, OPML) an unsafe link.
        let walker = try #require(FileManager.default.enumerator(at: out, includingPropertiesForKeys: nil))
        var checked = 0
        for case let url as URL in walker where !url.hasDirectoryPath {
            let data = try Data(contentsOf: url)
            // The kept feeds are gzip copies of the feed files checked here.
            if url.pathExtension == "sqlite" || url.path.contains("/\(PublishedFeeds.folderName)/") { continue }
            checked += 1
            #expect(forbidden(data).isEmpty, "\(url.lastPathComponent) holds a control character")
            let text = String(decoding: data, as: UTF8.self)
            if ["xml", "atom", "opml"].contains(url.pathExtension) {
                for scheme in Self.unsafe { #expect(!text.contains(scheme), "\(url.lastPathComponent) links \(scheme)") }
            }
            if url.pathExtension == "csv" {
                #expect(csvRecords(text) != nil, "\(url.lastPathComponent) is not strict CSV")
            }
        }
        #expect(checked >= 10)

        // The rest of the text is intact, the same in the CSV files and the consumer database.
        let podcasts = try #require(csvRecords(try String(contentsOf: out.appendingPathComponent("csv/podcasts.csv"), encoding: .utf8)))
        let nameColumn = try #require(podcasts[0].firstIndex(of: "name"))
        #expect(podcasts.contains { $0[nameColumn] == "Evil ABCDE" })
        #expect(podcasts.contains { $0[nameColumn] == "S\u{FFFD}T" })
        let things = try String(contentsOf: out.appendingPathComponent("csv/things.csv"), encoding: .utf8)
        #expect(things.contains("k1,ok,k1,ABCDE\r\n") && things.contains("k2,,k2,S\u{FFFD}T\r\n"))
        let changes = try String(contentsOf: out.appendingPathComponent("changes.csv"), encoding: .utf8)
        #expect(changes.contains(",Evil plain,Evil ABCDE"))
        #expect(try String(contentsOf: out.appendingPathComponent("changes-stdout.csv"), encoding: .utf8) == changes)
        #expect(try String(contentsOf: out.appendingPathComponent("changes-stdout.json"), encoding: .utf8).contains(#""Evil ABCDE""#))
        let consumer = try DatabaseQueue(path: out.appendingPathComponent("consumer.sqlite").path)
        let (name, artist, nulChanges) = try await consumer.read { db throws -> (String?, String?, Int?) in
            (try String.fetchOne(db, sql: "SELECT name FROM podcasts WHERE key = 'p1'"),
             try String.fetchOne(db, sql: "SELECT artist FROM podcasts WHERE key = 'p1'"),
             try Int.fetchOne(db, sql: "SELECT count(*) FROM changes WHERE instr(CAST(\"after\" AS BLOB), x'00') > 0"))
        }
        #expect(name == "Evil ABCDE")
        #expect(artist == "Artist")
        #expect(nulChanges == 0)

        // The http(s) links are published, the rest are not; withheld items are logged.
        let opml = try String(contentsOf: out.appendingPathComponent("podcasts.opml"), encoding: .utf8)
        #expect(opml.contains("https://example.com/good.xml") && opml.contains("https://example.com/good\""))
        #expect(opml.contains("HTTPS://example.com/p4.xml"))
        #expect(!opml.contains("Evil ABCDE") && !opml.contains("Spacey"))
        let episodes = try String(contentsOf: out.appendingPathComponent("feeds/episodes.xml"), encoding: .utf8)
        #expect(episodes.contains("https://example.com/e2.mp3"))
        #expect(!episodes.contains("Ep evil"))
        let podcastFeed = try String(contentsOf: out.appendingPathComponent("feeds/podcasts.xml"), encoding: .utf8)
        #expect(podcastFeed.contains("Evil ABCDE") && podcastFeed.contains("https://example.com/a.jpg"))
        #expect(log.text.contains("1 item withheld: the enclosure is not an http(s) URL"))
        #expect(log.text.contains("2 podcasts withheld: the feed URL is not an http(s) URL"))
        // ... and counted where operators look, not only in the log (issue 29, finding 10):
        // the episode (once, though RSS and Atom both leave it out) and the two OPML outlines.
        let report = try JSONParser.parse(Array(try Data(contentsOf: out.appendingPathComponent("report.json"))))
        #expect(report["withheld"]?["links"] == .int(3), "\(report["withheld"] ?? .null)")
        #expect(WithheldCounts(second.exports).links == 3)
    }
}
