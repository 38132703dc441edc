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

/// `python3 -m frictionless validate` on a Data Package.
enum FrictionlessCheck {
    static let available: Bool = (try? Python.runWaitingHere(["-c", "import frictionless"]).status) == 0
    static let skipMessage: Comment = "python3 with frictionless is not installed (python3 -m pip install frictionless)"

    /// The validation's report (`--json`): whether the package is valid, and its first errors.
    static func validate(_ package: URL) async throws -> (valid: Bool, report: String) {
        let result = try await Python.run(["-m", "frictionless", "validate", "--json", package.path])
        let report = result.output
        let start = report.firstIndex(of: "{") ?? report.startIndex
        let parsed = try? JSONSerialization.jsonObject(with: Data(report[start...].utf8)) as? [String: Any]
        return (parsed?["valid"] as? Bool ?? false, String(report.prefix(3000)))
    }
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

    /// Datasette started with the export's metadata shows the titles, the
    /// tables' and columns' meanings, facets and sort orders (issue 30, item 5).
    @Test(.enabled(if: DatasetteCheck.available, DatasetteCheck.skipMessage))
    func datasetteShowsTheMetadataBesideTheDatabase() async throws {
        let fixture = try await ConsumerFixture.make("datasette-metadata")
        _ = try SnapshotExporter.export([.sqlite(path: "demo.sqlite", history: true, metadata: "metadata.json")],
                                        context: fixture.context, logger: Logger(label: "test"))
        let database = fixture.output.appendingPathComponent("demo.sqlite")
        let metadata = fixture.output.appendingPathComponent("metadata.json")
        let result = try await Python.run([DatasetteCheck.script.path, database.path, metadata.path])
        #expect(result.status == 0, "check_datasette.py failed:\n\(result.output)")
        // id, key, extra and the four first-seen/last-changed columns.
        let meanings = CanonicalSchema.fields(of: .podcast).count + 7
        #expect(result.output.contains("metadata: \(meanings) of \(meanings) podcasts column meanings shown"), "\(result.output)")
    }

    /// `datapackage.json` beside the CSV files passes `frictionless validate`:
    /// every file against its declared types and keys. The fixture's orphans
    /// (an episode whose podcast was never crawled, a charted podcast not
    /// stored) leave those links undeclared; a duplicated key fails it.
    @Test(.enabled(if: FrictionlessCheck.available, FrictionlessCheck.skipMessage))
    func theCSVPackageValidatesWithFrictionless() async throws {
        let fixture = try await ConsumerFixture.make("datapackage")
        _ = try fixture.export()
        let package = fixture.output.appendingPathComponent("csv/datapackage.json")
        let (valid, report) = try await FrictionlessCheck.validate(package)
        #expect(valid, "\(report)")
        let document = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: package)) as? [String: Any])
        let resources = document["resources"] as? [[String: Any]] ?? []
        func schema(_ name: String) -> [String: Any] {
            resources.first { $0["name"] as? String == name }?["schema"] as? [String: Any] ?? [:]
        }
        func links(_ name: String) -> [String] {
            (schema(name)["foreignKeys"] as? [[String: Any]] ?? []).map { key in
                "\((key["fields"] as? [String])?.first ?? "") -> \((key["reference"] as? [String: Any])?["resource"] as? String ?? "")"
            }
        }
        #expect(resources.map { $0["path"] as? String ?? "" }.contains("my_sales.csv"))
        #expect(links("genres") == ["parent_id -> genres"] && links("podcasts") == ["genre_id -> genres"])
        #expect(links("episodes").isEmpty && links("chart_entries") == ["genre_id -> genres"], "orphans: not declared")
        let types = Dictionary(uniqueKeysWithValues: (schema("podcasts")["fields"] as? [[String: Any]] ?? []).map {
            ($0["name"] as? String ?? "", $0["type"] as? String ?? "")
        })
        #expect(types["key"] == "string" && types["track_count"] == "integer" && types["release_date"] == "datetime")

        let podcasts = fixture.output.appendingPathComponent("csv/podcasts.csv")
        let lines = try String(contentsOf: podcasts, encoding: .utf8).split(separator: "\r\n", omittingEmptySubsequences: true)
        try (lines.joined(separator: "\r\n") + "\r\n" + lines[1] + "\r\n").write(to: podcasts, atomically: true, encoding: .utf8)
        let (stillValid, duplicated) = try await FrictionlessCheck.validate(package)
        #expect(!stillValid && duplicated.contains("primary-key"), "a repeated key passed: \(duplicated)")
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
