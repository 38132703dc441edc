import Catalog
@testable import Export
import Foundation
import Logging
import Snapshot
import Testing
import TestSupport

/// Issue 30, item 7, the feed's side: a feed names its WebSub hub, and a
/// document whose content did not change keeps its published file (its
/// build date included), so no push is due for it.
@Suite struct FeedPushExportTests {
    static let hub = "https://hub.example.com/websub"

    static var spec: FeedExportSpec {
        var spec = FeedExportSpec(kind: .listingsNew, rssPath: "feeds/new.xml", atomPath: "feeds/new.atom", title: "New listings",
                                  selfURL: "https://example.com/feeds/new.xml", atomURL: "https://example.com/feeds/new.atom",
                                  link: "https://example.com/", description: "New listings", limit: 10)
        spec.push = FeedPushSpec(hub: hub)
        return spec
    }

    func export(_ fixture: ConsumerFixture, run: Int64, date: Date, spec: FeedExportSpec = Self.spec) throws -> [ExportedFile] {
        var context = fixture.context
        context.runID = run
        context.runDate = date
        return try SnapshotExporter.export([.feed(spec)], context: context, logger: Logger(label: "test"))
    }

    @Test func aFeedNamesItsHubAndItsArchivePagesDoNot() async throws {
        let fixture = try await ConsumerFixture.make("push-hub-link")
        var spec = Self.spec
        spec.kind = .podcastsUpdated
        spec.archive = true
        spec.limit = 1
        let files = try export(fixture, run: fixture.runID, date: ConsumerFixture.started, spec: spec)
        let rss = try String(contentsOf: fixture.output.appendingPathComponent("feeds/new.xml"), encoding: .utf8)
        let atom = try String(contentsOf: fixture.output.appendingPathComponent("feeds/new.atom"), encoding: .utf8)
        #expect(rss.contains("<atom:link href=\"\(Self.hub)\" rel=\"hub\"/>"), "\(rss.prefix(900))")
        #expect(atom.contains("<link rel=\"hub\" href=\"\(Self.hub)\"/>"), "\(atom.prefix(900))")
        let pages = files.filter { $0.path.contains("-archive-") }
        #expect(!pages.isEmpty)
        for page in pages {
            let text = try String(contentsOfFile: page.path, encoding: .utf8)
            #expect(!text.contains("rel=\"hub\""), "an archive page names the hub: \(page.path)")
            #expect(page.topicURL == nil && page.push == nil)
        }
        #expect(files.filter { $0.topicURL != nil }.map(\.topicURL) == ["https://example.com/feeds/new.xml", "https://example.com/feeds/new.atom"])
    }

    @Test func aFeedWhoseContentDidNotChangeKeepsItsPublishedFileAndItsDate() async throws {
        let fixture = try await ConsumerFixture.make("push-unchanged")
        let rss = fixture.output.appendingPathComponent("feeds/new.xml")
        let atom = fixture.output.appendingPathComponent("feeds/new.atom")
        let first = try export(fixture, run: fixture.runID, date: ConsumerFixture.started)
        #expect(first.allSatisfy { !$0.unchanged }, "nothing was published before")
        let published = (try Data(contentsOf: rss), try Data(contentsOf: atom))

        // A day later, the same snapshot: only the build date would differ.
        let again = try export(fixture, run: fixture.runID, date: ConsumerFixture.started.addingTimeInterval(86_400))
        #expect(again.count == 2 && again.allSatisfy(\.unchanged), "\(again.map { ($0.path, $0.unchanged) })")
        #expect(try Data(contentsOf: rss) == published.0 && Data(contentsOf: atom) == published.1,
                "an unchanged feed was rewritten")

        // A new listing: both documents change, and carry the new date.
        let third = try await ChangesetExportTests.thirdRun(fixture)
        _ = try await fixture.store.apply(PageInput(runID: third, source: "market", scope: "s", page: 200, records: [
            ConsumerFixture.listing("5009", "Green kettle", vendor: 7, vendorName: "Kettle Co", price: 25),
        ]))
        let later = ConsumerFixture.started.addingTimeInterval(3 * 86_400)
        let changed = try export(fixture, run: third, date: later)
        #expect(changed.allSatisfy { !$0.unchanged })
        let text = try String(contentsOf: rss, encoding: .utf8)
        #expect(text.contains("Green kettle") && text.contains(PodcastFeedWriter.rfc822(later)))
    }

    @Test func samenessMasksEachFilesOwnBuildDateAndNothingElse() throws {
        let directory = TestPaths.temporaryDirectory("push-sameness")
        defer { try? FileManager.default.removeItem(at: directory) }
        func file(_ name: String, _ text: String) throws -> URL {
            let url = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
            return url
        }
        func rss(_ date: String, item: String) -> String {
            "<rss><channel><lastBuildDate>\(date)</lastBuildDate><item><title>\(item)</title><pubDate>\(date)</pubDate></item></channel></rss>"
        }
        let monday = "Mon, 23 Nov 2026 02:00:00 +0000", tuesday = "Tue, 24 Nov 2026 02:00:00 +0000"
        let published = try file("a.xml", rss(monday, item: "Top 1"))
        #expect(FeedSameness.sameContent(published, try file("b.xml", rss(tuesday, item: "Top 1"))))
        #expect(!FeedSameness.sameContent(published, try file("c.xml", rss(tuesday, item: "Top 2"))))
        // A date that is not the build date is content.
        let dated = try file("d.xml", "<rss><channel><lastBuildDate>\(monday)</lastBuildDate><item><pubDate>\(tuesday)</pubDate></item></channel></rss>")
        #expect(!FeedSameness.sameContent(dated, try file("e.xml", "<rss><channel><lastBuildDate>\(tuesday)</lastBuildDate><item><pubDate>\(monday)</pubDate></item></channel></rss>")))
        let atom = "<feed><updated>2026-11-23T02:00:00Z</updated><entry><updated>2026-11-23T02:00:00Z</updated></entry></feed>"
        #expect(FeedSameness.sameContent(try file("f.atom", atom), try file("g.atom", atom.replacingOccurrences(of: "11-23", with: "11-24"))))
        // No build date: equal bytes only.
        #expect(!FeedSameness.sameContent(try file("h.opml", "<opml>1</opml>"), try file("i.opml", "<opml>2</opml>")))
    }
}
