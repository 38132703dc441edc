import Catalog
@testable import Export
import Foundation
import Logging
import Snapshot
import Testing
import TestSupport

/// Feed exports read what they list, not every record of their kind
/// (issue 15 item 4): the payloads a feed parses are counted through
/// ``FeedExport/payloadTally`` and the items compared with the order the
/// whole list would give.
@Suite struct FeedMemoryTests {
    let directory = TestPaths.temporaryDirectory("feed-memory")
    static let started = Date(timeIntervalSince1970: 1_795_308_886)
    static let genres = ["Comedy", "History", "News"]
    static let count = 200

    /// Podcast `i`: genre by `i % 3`; podcasts 2j and 2j+1 share a release
    /// date (newer as j grows), so ties are broken by key.
    static func podcast(_ i: Int, name: String? = nil) -> Catalog.Record {
        let j = i / 2
        return Catalog.Record(entity: .podcast, key: String(format: "%04d", i), fields: [
            "name": .string(name ?? "Podcast \(i)"), "genre": .string(genres[i % 3]),
            "release_date": .string(String(format: "2026-%02d-%02dT10:00:00Z", 1 + j / 28, 1 + j % 28)),
            "feed_url": .string("https://feeds.example.com/\(i).xml"),
        ])
    }

    /// Every podcast in feed order: newest first, ties by key.
    static var newestFirst: [Int] {
        (0..<count / 2).reversed().flatMap { [2 * $0, 2 * $0 + 1] }
    }

    /// A store whose first run (the baseline) holds every podcast and whose
    /// second renames `renamed` of them.
    func store(renamed: Int = 0) async throws -> ExportContext {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("snapshot.sqlite").path)
        let first = try store.beginRun(job: "m", at: Self.started, simulated: true, night: 1, resumeExports: true)
        _ = try await store.apply(PageInput(runID: first.id, source: "pods", scope: "s", page: 1,
                                            records: (0..<Self.count).map { Self.podcast($0) }))
        try store.finishRun(first.id, status: .ok, message: nil, at: Self.started.addingTimeInterval(60))
        var runID = first.id
        if renamed > 0 {
            let second = try store.beginRun(job: "m", at: Self.started.addingTimeInterval(86_400), simulated: true, night: 2,
                                            resumeExports: true)
            _ = try await store.apply(PageInput(runID: second.id, source: "pods", scope: "s", page: 1,
                                                records: (0..<renamed).map { Self.podcast($0, name: "Renamed \($0)") }))
            try store.finishRun(second.id, status: .ok, message: nil, at: Self.started.addingTimeInterval(86_460))
            runID = second.id
        }
        return ExportContext(store: store, runID: runID, jobName: "m", runDate: Self.started.addingTimeInterval(86_400),
                             outputDirectory: directory.appendingPathComponent("out").path)
    }

    func spec(_ kind: FeedKind, path: String, limit: Int) -> FeedExportSpec {
        FeedExportSpec(kind: kind, rssPath: path, atomPath: nil, title: "Feed {genre}", selfURL: "https://e.com/\(path)",
                       link: "https://e.com/", description: "d", limit: limit)
    }

    /// The items' titles of an RSS file, in order (the first `<title>` is the channel's).
    func titles(_ path: String) throws -> [String] {
        let text = try String(contentsOfFile: path, encoding: .utf8)
        return text.components(separatedBy: "<item>").dropFirst().map {
            $0.components(separatedBy: "<title>")[1].components(separatedBy: "</title>")[0]
        }
    }

    func export(_ spec: FeedExportSpec, _ context: ExportContext) throws -> (files: [ExportedFile], parsed: Int) {
        let tally = FeedExport.PayloadTally()
        let files = try FeedExport.$payloadTally.withValue(tally) {
            try SnapshotExporter.export([.feed(spec)], context: context, logger: Logger(label: "t"))
        }
        return (files, tally.count)
    }

    @Test func aLimitedFeedParsesOnlyTheRecordsItLists() async throws {
        let context = try await store()
        let (files, parsed) = try export(spec(.podcastsUpdated, path: "all.xml", limit: 10), context)
        #expect(parsed == 10, "a limit-10 feed over \(Self.count) podcasts parsed \(parsed) payloads")
        #expect(try titles(files[0].path) == Self.newestFirst.prefix(10).map { "Podcast \($0)" })
    }

    @Test func groupedFeedsKeepEachGroupsNewestInOrder() async throws {
        let context = try await store()
        let (files, _) = try export(spec(.podcastsUpdated, path: "{genre}.xml", limit: 4), context)
        #expect(files.map { URL(fileURLWithPath: $0.path).lastPathComponent } == Self.genres.map { "\($0).xml" })
        for (index, file) in files.enumerated() {
            let expected = Self.newestFirst.filter { $0 % 3 == index }.prefix(4).map { "Podcast \($0)" }
            #expect(try titles(file.path) == expected, "\(file.path)")
        }
        // The same as grouping the whole list in memory, as the export did before streaming.
        let all = try FeedExport.select(.podcastsUpdated, context: context)
        #expect(all.map(\.key) == Self.newestFirst.map { String(format: "%04d", $0) })
    }

    @Test func theChangesFeedStopsReadingTheLogAtItsLimit() async throws {
        let context = try await store(renamed: 60)
        let (files, parsed) = try export(spec(.changes, path: "changes.xml", limit: 5), context)
        // Five items, each record's payload parsed once; one more record is reached to know the fifth is complete.
        #expect(parsed <= 6, "parsed \(parsed) payloads for 5 items")
        let expected = (0..<5).map { "Changed podcast: Renamed \($0)" }
        #expect(try titles(files[0].path) == expected)
        var all = 0
        try FeedExport.forEachChangeCandidate(context: context) { _ in all += 1; return true }
        #expect(all == 60)
    }

    @Test func opmlListsEveryPodcastByGenreThenName() async throws {
        let context = try await store()
        let files = try SnapshotExporter.export([.opml(OPMLExportSpec(path: "podcasts.opml", title: "All"))], context: context,
                                                logger: Logger(label: "t"))
        let text = try String(contentsOfFile: files[0].path, encoding: .utf8)
        let feeds = text.components(separatedBy: "xmlUrl=\"").dropFirst().map { $0.components(separatedBy: "\"")[0] }
        #expect(feeds.count == Self.count)
        // By genre, then by name ("Podcast 10" before "Podcast 4": text order), then key.
        let expected = (0..<3).flatMap { genre in
            (0..<Self.count).filter { $0 % 3 == genre }.sorted { "Podcast \($0)" < "Podcast \($1)" }
                .map { "https://feeds.example.com/\($0).xml" }
        }
        #expect(feeds == expected)
    }

    @Test func aLargePayloadIsProjectedInPlaceLikeTheOthers() async throws {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("large.sqlite").path)
        let run = try store.beginRun(job: "m", at: Self.started, simulated: true)
        let big = String(repeating: "x", count: SQLSnapshotStore.largePayloadBytes + 10)
        var records = (0..<3).map { Self.podcast($0) }
        records[1] = Catalog.Record(entity: .podcast, key: "0001", fields: [
            "name": .string("Podcast 1"), "description": .string(big), "explicit": .bool(true), "count": .int(7),
        ])
        _ = try await store.apply(PageInput(runID: run.id, source: "pods", scope: "s", page: 1, records: records))
        try store.finishRun(run.id, status: .ok, message: nil, at: Self.started)
        let columns = [ExportColumn("name", "name"), ExportColumn("description", "description"), ExportColumn("explicit", "explicit"),
                       ExportColumn("count", "count"), ExportColumn("missing", "missing")]
        var seen: [(key: String, values: [StoredValue], payloadBytes: Int)] = []
        try store.forEachRecord(of: .podcast, columns: columns, order: .insertion) {
            seen.append(($0.key, $0.values, $0.payload.utf8.count))
        }
        // In insertion order, the large one in its place, its members as json_extract gives them (true is 1).
        #expect(seen.map(\.key) == ["0000", "0001", "0002"])
        #expect(seen[1].values == [.text("Podcast 1"), .text(big), .integer(1), .integer(7), .null])
        #expect(seen[1].payloadBytes > big.utf8.count)
        #expect(seen[0].values == [.text("Podcast 0"), .null, .null, .null, .null])
        #expect(seen[2].values == [.text("Podcast 2"), .null, .null, .null, .null])
    }
}
