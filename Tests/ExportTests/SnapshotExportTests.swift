import Catalog
import Export
import Foundation
import GRDB
import Logging
import Snapshot
import Testing
import TestSupport

/// Exports over a snapshot built by hand, with fixed times: fully deterministic.
@Suite struct SnapshotExportTests {
    let directory = TestPaths.temporaryDirectory("snapshot-export")
    static let started = Date(timeIntervalSince1970: 1_795_308_886)

    func store() async throws -> (SQLSnapshotStore, Int64) {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("snapshot.sqlite").path)
        let run = try store.beginRun(job: "golden", at: Self.started, simulated: true)
        func podcast(_ id: Int, _ name: String) -> Catalog.Record {
            Catalog.Record(entity: .podcast, key: String(id), fields: [
                "name": .string(name), "genre": .string("Music"), "release_date": .string("2026-11-20T10:00:00Z"),
                "feed_url": .string("http://feeds.storesim.test/feeds/\(id).xml"),
            ])
        }
        func entry(_ rank: Int, _ item: Int, _ name: String) -> Catalog.Record {
            // Canonical fields, as every chart connector maps its wire shape.
            Catalog.Record(entity: .chartEntry, key: ChartEntry.key(chart: "toppodcasts", country: "us", genreID: "1310",
                                                                           itemEntity: "podcast", itemKey: String(item)), fields: [
                "chart": .string("toppodcasts"), "country": .string("us"), "genre_id": .string("1310"),
                "genre": .string("Music"), "rank": .int(Int64(rank)), "item_entity": .string("podcast"),
                "item_key": .string(String(item)), "name": .string(name),
                "artist": .string("Artist <\(rank)>"), "link": .string("https://example.com/\(item)"),
            ])
        }
        _ = try await store.apply(PageInput(runID: run.id, source: "pods", scope: "s", page: 0,
                                            records: [podcast(11, "Eleven & Co"), podcast(22, "Twenty-two")]))
        _ = try await store.apply(PageInput(runID: run.id, source: "charts", scope: "c", page: 0,
                                            records: [entry(2, 22, "Chart name 22"), entry(1, 11, "Chart name 11"), entry(3, 33, "Not stored")]))
        try store.finishRun(run.id, status: .ok, message: nil, at: Self.started.addingTimeInterval(2))
        var totals = RunTotals()
        totals.requests.requests = 4
        totals.requests.retries = 1
        totals.seconds = 2.5
        totals.warnings = [RunProblem(code: RunProblem.guardRefused, source: "src", scope: "s", message: "a \"quoted\" warning")]
        try store.recordTotals(run.id, totals)
        return (store, run.id)
    }

    func context(_ store: SQLSnapshotStore, _ runID: Int64) -> ExportContext {
        ExportContext(store: store, runID: runID, jobName: "golden", runDate: Self.started,
                      outputDirectory: directory.appendingPathComponent("out").path)
    }

    @Test func chartViewRanksItemsWithTheirStoredNames() async throws {
        let (store, runID) = try await store()
        _ = try SnapshotExporter.export([.sqlite(path: "db.sqlite")], context: context(store, runID), logger: Logger(label: "t"))
        let db = try DatabaseQueue(path: directory.appendingPathComponent("out/db.sqlite").path)
        let rows = try await db.read { db in
            try Row.fetchAll(db, sql: "SELECT rank, item_key, name FROM charts").map { "\($0["rank"] as Int) \($0["item_key"] as String) \($0["name"] as String)" }
        }
        #expect(rows == ["1 11 Eleven & Co", "2 22 Twenty-two", "3 33 Not stored"])
    }

    @Test func topFeedListsTheChartInRankOrder() async throws {
        let (store, runID) = try await store()
        let spec = FeedExportSpec(kind: .top, rssPath: "top-{genre}.xml", atomPath: nil, title: "Top {genre} podcasts",
                                  selfURL: "https://example.com/top-{genre}.xml", link: "https://example.com/",
                                  description: "Top", chart: "toppodcasts")
        let files = try SnapshotExporter.export([.feed(spec)], context: context(store, runID), logger: Logger(label: "t"))
        #expect(files.map { URL(fileURLWithPath: $0.path).lastPathComponent } == ["top-Music.xml"])
        let text = try String(contentsOfFile: files[0].path, encoding: .utf8)
        let titles = text.components(separatedBy: "<title>").dropFirst(2).map { $0.components(separatedBy: "</title>")[0] }
        #expect(titles == ["#1 Chart name 11 — Artist &lt;1&gt;", "#2 Chart name 22 — Artist &lt;2&gt;", "#3 Not stored — Artist &lt;3&gt;"])
    }

    /// Genres whose names make the same file name get distinct files (the
    /// later one with a hash of its name), the same on every export, with
    /// their own names in the titles; feeds and OPML alike.
    @Test func collidingGenreNamesGetDistinctStableFiles() async throws {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("genres.sqlite").path)
        let run = try store.beginRun(job: "g", at: Self.started, simulated: false)
        let records = ["Rock & Roll", "Rock  Roll", "News"].enumerated().map { index, genre in
            Catalog.Record(entity: .podcast, key: String(index + 1), fields: [
                "name": .string("Show \(index + 1)"), "genre": .string(genre), "release_date": .string("2026-11-20T10:00:00Z"),
                "feed_url": .string("https://feeds.example.com/\(index + 1).xml"),
            ])
        }
        _ = try await store.apply(PageInput(runID: run.id, source: "s", scope: "x", page: 0, records: records))
        try store.finishRun(run.id, status: .ok, message: nil, at: Self.started)
        let context = ExportContext(store: store, runID: run.id, jobName: "g", runDate: Self.started,
                                    outputDirectory: directory.appendingPathComponent("out").path)
        let feed = FeedExportSpec(kind: .podcastsUpdated, rssPath: "feeds/{genre}.xml", atomPath: nil, title: "New in {genre}",
                                  selfURL: "https://e.com/feeds/{genre}.xml", link: "https://e.com/", description: "New")
        let specs: [ExportSpec] = [.feed(feed), .opml(OPMLExportSpec(path: "opml/{genre}.opml", title: "Podcasts"))]
        let first = try SnapshotExporter.export(specs, context: context, logger: Logger(label: "t"))
        let second = try SnapshotExporter.export(specs, context: context, logger: Logger(label: "t"))
        let names = first.map { SnapshotExporter.relativePath($0.path, in: context.outputDirectory) }
        // FNV-1a of the name: pinned here, since a new hash would rename published files.
        var fnv: UInt32 = 0x811C_9DC5
        for byte in "Rock & Roll".utf8 { fnv = (fnv ^ UInt32(byte)) &* 0x0100_0193 }
        let hash = String(fnv, radix: 16).leftPadded(to: 8)
        #expect(names == ["feeds/News.xml", "feeds/Rock-Roll.xml", "feeds/Rock-Roll-\(hash).xml",
                          "opml/News.opml", "opml/Rock-Roll.opml", "opml/Rock-Roll-\(hash).opml"], "\(names)")
        #expect(second.map(\.path) == first.map(\.path), "the names are the same every night")
        #expect(first.allSatisfy { $0.rows == 1 }, "each genre its own file, none overwritten: \(first.map(\.rows))")
        let renamed = try String(contentsOfFile: first[2].path, encoding: .utf8)
        #expect(renamed.contains("<title>New in Rock &amp; Roll</title>"), "the title keeps the genre's name")
        #expect(renamed.contains("https://e.com/feeds/Rock-Roll-\(hash).xml"), "the self link names the file")
    }

    @Test func runReportAndMetricsMatchTheirGoldenFiles() async throws {
        let (store, runID) = try await store()
        let files = try SnapshotExporter.export([.runReport(path: "report.json"), .metrics(path: "storesync.prom")],
                                                context: context(store, runID), logger: Logger(label: "t"))
        #expect(files.count == 2)
        try FeedGolden.check(Array(try Data(contentsOf: URL(fileURLWithPath: files[0].path))), against: "run-report.json")
        try FeedGolden.check(Array(try Data(contentsOf: URL(fileURLWithPath: files[1].path))), against: "storesync.prom")
    }

    @Test func musicAndEpisodeFeedsListNewestFirstWithEnclosures() async throws {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("music.sqlite").path)
        let run = try store.beginRun(job: "m", at: Self.started, simulated: false)
        let records = [
            Catalog.Record(entity: .song, key: "1", fields: ["name": .string("Old song"), "artist": .string("A"),
                                                            "release_date": .string("2020-01-01T00:00:00Z")]),
            Catalog.Record(entity: .album, key: "2", fields: ["name": .string("New album"), "artist": .string("B & C"),
                                                             "release_date": .string("2026-11-20T00:00:00Z")]),
            Catalog.Record(entity: .episode, key: "3", fields: [
                "name": .string("Episode <1>"), "podcast": .string("Show"), "release_date": .string("2026-11-21T08:00:00Z"),
                "enclosure_url": .string("https://cdn.example.com/e1.mp3"), "enclosure_length": .int(1234),
                "duration_ms": .int(61_000), "description": .string("A & B\nsecond line"),
            ]),
        ]
        _ = try await store.apply(PageInput(runID: run.id, source: "s", scope: "x", page: 0, records: records))
        try store.finishRun(run.id, status: .ok, message: nil, at: Self.started)
        let context = ExportContext(store: store, runID: run.id, jobName: "m", runDate: Self.started,
                                    outputDirectory: directory.appendingPathComponent("out").path)
        let music = FeedExportSpec(kind: .musicNew, rssPath: "music.xml", atomPath: "music.atom", title: "New music",
                                   selfURL: "https://e.com/music.xml", link: "https://e.com/", description: "New")
        let episodes = FeedExportSpec(kind: .episodesNew, rssPath: "episodes.xml", atomPath: nil, title: "New episodes",
                                      selfURL: "https://e.com/episodes.xml", link: "https://e.com/", description: "New")
        let files = try SnapshotExporter.export([.feed(music), .feed(episodes)], context: context, logger: Logger(label: "t"))
        #expect(files.map(\.rows) == [2, 2, 1])
        let musicText = try String(contentsOfFile: files[0].path, encoding: .utf8)
        let newAlbum = try #require(musicText.range(of: "New album"))
        let oldSong = try #require(musicText.range(of: "Old song"))
        #expect(newAlbum.lowerBound < oldSong.lowerBound, "newest first")
        let episodeText = try String(contentsOfFile: files[2].path, encoding: .utf8)
        #expect(episodeText.contains("<enclosure url=\"https://cdn.example.com/e1.mp3\" length=\"1234\" type=\"audio/mpeg\"/>"))
        #expect(episodeText.contains("<itunes:duration>"))
    }
}

private extension String {
    func leftPadded(to width: Int) -> String { String(repeating: "0", count: max(0, width - count)) + self }
}
