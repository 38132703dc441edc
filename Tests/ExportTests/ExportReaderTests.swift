import Catalog
@testable import Export
import Foundation
import Logging
import Snapshot
import Testing
import TestSupport

/// Runs `python3 Tests/scripts/check_datasette.py`.
enum DatasetteCheck {
    static let script: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/check_datasette.py")

    /// Whether `python3` with Datasette can run here (checked once).
    static let available: Bool = (try? Python.runWaitingHere(["-c", "import datasette.app"]).status) == 0

    static let skipMessage: Comment = "python3 with Datasette is not installed (python3 -m pip install datasette)"
}

/// The consumer exports as their readers show them: Datasette for the
/// database, podcastparser and feedparser for the feeds built from canonical fields.
@Suite(.serialized) struct ExportReaderTests {
    @Test(.enabled(if: DatasetteCheck.available, DatasetteCheck.skipMessage))
    func datasetteShowsTablesFacetsLinksAndSearch() async throws {
        let fixture = try await ConsumerFixture.make("datasette")
        _ = try fixture.export()
        let database = fixture.output.appendingPathComponent("demo.sqlite")
        let result = try await Python.run([DatasetteCheck.script.path, database.path])
        #expect(result.status == 0, "check_datasette.py failed:\n\(result.output)")
        #expect(result.output.contains("facet genre: Comedy=2, News=1, Technology=1"), "\(result.output)")
        #expect(result.output.contains("link: episodes.podcast_id 101 -> podcasts \"The Daily Laugh\""), "\(result.output)")
        #expect(result.output.contains("search laptops: 103 Gadget Talk Weekly"), "\(result.output)")
        #expect(result.output.contains("charts: #1 World News Hour, #2 The Daily Laugh, #3 Chart says 555"), "\(result.output)")
        #expect(result.output.contains("my_sales (2)"), "\(result.output)")
    }

    /// The episodes feed carries what the podcast published: its GUID, the
    /// enclosure's real length and type, and the `itunes:` episode fields; an
    /// episode without them gets a stable GUID, length 0 and a type guessed
    /// from its file name.
    @Test(.enabled(if: FeedCheckScript.available, FeedCheckScript.skipMessage))
    func podcastAppsReadTheEpisodesAsPublished() async throws {
        let fixture = try await ConsumerFixture.make("episodes-feed")
        let spec = FeedExportSpec(kind: .episodesNew, rssPath: "episodes.xml", atomPath: nil, title: "New episodes",
                                  selfURL: "https://example.com/episodes.xml", link: "https://example.com/", description: "New")
        let files = try SnapshotExporter.export([.feed(spec)], context: fixture.context, logger: Logger(label: "test"))
        let script = """
            import sys, podcastparser, feedparser
            path = sys.argv[1]
            with open(path, 'rb') as f:
                parsed = podcastparser.parse(path, f)
            for e in parsed['episodes']:
                enc = e['enclosures'][0]
                print('pp', e['guid'], enc['file_size'], enc['mime_type'], e.get('number'), e.get('season'), e.get('type'), e['total_time'])
            feed = feedparser.parse(path)
            assert not feed.bozo, feed.bozo_exception
            for e in feed.entries:
                enc = e.enclosures[0]
                print('fp', e.id, enc.get('length'), enc.get('type'))
            """
        let result = try await Python.run(["-c", script, files[0].path])
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n").map(String.init)
        #expect(lines == [
            "pp urn:uuid:laugh-1 3000000 audio/ogg 7 2 full 1805",
            "pp storesync:episode:9002 -1 audio/x-m4a None None None 0",
            "pp storesync:episode:9003 -1 audio/mpeg None None None 0",
            "fp urn:uuid:laugh-1 3000000 audio/ogg",
            "fp storesync:episode:9002 0 audio/x-m4a",
            "fp storesync:episode:9003 0 audio/mpeg",
        ], "\(result.output)")
    }
}
