import Catalog
@testable import Export
import Foundation
import Logging
import Snapshot
import Testing
import TestSupport

/// Feeds and the artwork mirror: what they publish is what the mirror fetches, and they name a copy only when it exists.
@Suite struct FeedArtworkTests {
    let directory = TestPaths.temporaryDirectory("feed-artwork")
    static let started = Date(timeIntervalSince1970: 1_795_308_886)
    static let held = "https://is1-ssl.mzstatic.com/image/thumb/Podcasts1/v4/aa/bb/cc/one/mza_1.jpg/3000x3000bb.jpg"
    static let missing = "https://is2-ssl.mzstatic.com/image/thumb/Podcasts2/v4/aa/bb/cc/two/mza_2.jpg/3000x3000bb.jpg"

    func context() async throws -> ExportContext {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("snapshot.sqlite").path)
        let run = try store.beginRun(job: "art", at: Self.started, simulated: true)
        func podcast(_ id: Int, _ artwork: String, _ date: String) -> Catalog.Record {
            Catalog.Record(entity: .podcast, key: String(id), fields: [
                "name": .string("Podcast \(id)"), "genre": .string("News"), "release_date": .string(date),
                "feed_url": .string("http://feeds.storesim.test/feeds/\(id).xml"), "artwork_url": .string(artwork),
            ])
        }
        _ = try await store.apply(PageInput(runID: run.id, source: "pods", scope: "s", page: 0, records: [
            podcast(1, Self.held, "2026-11-20T10:00:00Z"), podcast(2, Self.missing, "2026-11-19T10:00:00Z"),
        ]))
        try store.finishRun(run.id, status: .ok, message: nil, at: Self.started)
        return ExportContext(store: store, runID: run.id, jobName: "art", runDate: Self.started,
                             outputDirectory: directory.appendingPathComponent("out").path)
    }

    static let feed = FeedExportSpec(kind: .podcastsUpdated, rssPath: "podcasts.xml", atomPath: "podcasts.atom", title: "Updated",
                                     selfURL: "https://example.com/podcasts.xml", link: "https://example.com/", description: "d")

    @Test func theMirrorFetchesWhatFeedsPublish() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let context = try await context()
        let channel = "https://example.com/cover.png"
        var withImage = Self.feed
        withImage.imageURL = channel
        let listings = FeedExportSpec(kind: .listingsNew, rssPath: "l.xml", atomPath: nil, title: "l", selfURL: "https://example.com/l.xml",
                                      link: "https://example.com/", description: "l")
        let urls = try SnapshotExporter.publishedArtworkURLs([.feed(withImage), .feed(Self.feed), .feed(listings)], context: context)
        #expect(urls == [channel, Self.held, Self.missing])
    }

    @Test func feedsPointAtTheMirrorOnlyForMirroredFiles() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        var context = try await context()
        let copy = "https://cdn.example.com/art/\(ArtworkMirror.fileName(for: Self.held))"
        context.mirroredArtwork = [Self.held: copy]
        let files = try SnapshotExporter.export([.feed(Self.feed)], context: context, logger: Logger(label: "t"))
        for file in files {
            let text = try String(contentsOfFile: file.path, encoding: .utf8)
            #expect(text.contains(copy), "\(file.path)")
            #expect(!text.contains(Self.held), "\(file.path)")
            // Not mirrored (failed, rejected or evicted): the original URL, never a link to a missing copy.
            // (Atom carries only the channel's image, which is the first item's.)
            #expect(file.path.hasSuffix(".atom") || text.contains(Self.missing), "\(file.path)")
            #expect(!text.contains(ArtworkMirror.fileName(for: Self.missing)), "\(file.path)")
        }
    }
}
