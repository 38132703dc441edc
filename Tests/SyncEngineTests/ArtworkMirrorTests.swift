import Catalog
import Crawl
import Foundation
import Logging
import StoreSim
@testable import SyncEngine
import Synchronization
import Testing
import TestSupport

/// Records each request's validators, then asks the simulator's image service.
final class RecordingImageTransport: HTTPTransport {
    private let base = ArtworkImageTransport()
    private let seen = Mutex<[HTTPRequest]>([])

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        seen.withLock { $0.append(request) }
        if request.url.path.hasSuffix("/not-an-image.jpg") {
            return HTTPResponse(url: request.url, status: 200, headers: ["Content-Type": "text/html", "ETag": "\"html\""],
                                body: Array("<html>gone</html>".utf8))
        }
        return try await base.get(request, timeoutSeconds: timeoutSeconds)
    }

    var requests: [HTTPRequest] { seen.withLock { $0 } }
    func reset() { seen.withLock { $0 = [] } }
}

/// The artwork mirror: conditional requests, the budget, crash safety, and feeds that point at it.
@Suite struct ArtworkMirrorTests {
    let directory = TestPaths.temporaryDirectory("artwork-mirror")

    static func url(_ n: Int, size: Int = 3000, ext: String = "jpg") -> String {
        "https://is\(n % 5 + 1)-ssl.mzstatic.com/image/thumb/Podcasts1\(n)/v4/0\(n % 10)/aa/bb/img-\(n)/mza_\(n).jpg/\(size)x\(size)bb.\(ext)"
    }

    func mirror(_ transport: any HTTPTransport, budgetMB: Int = 500,
                interruption: (@Sendable (String) throws -> Void)? = nil) -> ArtworkMirrorSync {
        var settings = HTTPSettings(maxAttempts: 1, cacheTTLSeconds: 0)
        settings.requestsPerMinute = [:]
        return ArtworkMirrorSync(
            spec: ArtworkExportSpec(directory: "artwork", budgetMB: budgetMB, artworkBaseURL: "https://cdn.example.com/art"),
            outputDirectory: directory.path, fetcher: Fetcher(transport: transport, settings: settings, clock: ManualClock()),
            concurrency: 3, logger: .quiet, interruption: interruption)
    }

    var artworkFolder: URL { directory.appendingPathComponent("artwork") }

    func imagesOnDisk() throws -> [String: Int64] {
        var out: [String: Int64] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: artworkFolder.path) where name != ArtworkMirror.manifestName {
            out[name] = (try FileManager.default.attributesOfItem(atPath: artworkFolder.appendingPathComponent(name).path)[.size] as? NSNumber)?.int64Value
        }
        return out
    }

    func manifest() throws -> ArtworkManifest {
        try JSONDecoder().decode(ArtworkManifest.self, from: Data(contentsOf: artworkFolder.appendingPathComponent(ArtworkMirror.manifestName)))
    }

    @Test func secondNightAsksConditionallyAndGets304s() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = RecordingImageTransport()
        let urls = (1...8).map { Self.url($0, ext: $0 % 2 == 0 ? "png" : "jpg") }
        let first = try await mirror(transport).run(urls: urls, runID: 1, runDate: Date(timeIntervalSince1970: 0))
        #expect(first.figures.downloaded == 8 && first.figures.requests == 8 && first.figures.notModified == 0)
        #expect(first.figures.files == 8 && first.figures.published == 8 && first.figures.rejected == 0)
        #expect(first.mirrored[urls[0]] == "https://cdn.example.com/art/\(ArtworkMirror.fileName(for: urls[0]))")
        #expect(try imagesOnDisk().count == 8)
        #expect(transport.requests.allSatisfy { $0.headers["If-None-Match"] == nil })

        transport.reset()
        let second = try await mirror(transport).run(urls: urls, runID: 2, runDate: Date(timeIntervalSince1970: 86_400))
        #expect(second.figures.requests == 8 && second.figures.notModified == 8 && second.figures.downloaded == 0)
        #expect(second.figures.bytes == first.figures.bytes && second.mirrored == first.mirrored)
        #expect(transport.requests.count == 8)
        #expect(transport.requests.allSatisfy { $0.headers["If-None-Match"] != nil && $0.headers["If-Modified-Since"] != nil })
        #expect(try manifest().entries.values.allSatisfy { $0.lastPublishedRun == 2 })
    }

    @Test func budgetHoldsByEvictingTheLeastRecentlyPublished() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = RecordingImageTransport()
        // ≈106 KB each: six fit in 1 MB, twelve do not.
        let older = (1...6).map { Self.url($0) }, newer = (7...12).map { Self.url($0) }
        let first = try await mirror(transport, budgetMB: 1).run(urls: older, runID: 1, runDate: Date(timeIntervalSince1970: 0))
        #expect(first.figures.files == 6 && first.figures.evicted == 0)
        let second = try await mirror(transport, budgetMB: 1).run(urls: newer, runID: 2, runDate: Date(timeIntervalSince1970: 86_400))
        #expect(second.figures.evicted > 0)
        #expect(second.figures.bytes <= 1 << 20)
        let onDisk = try imagesOnDisk()
        #expect(onDisk.values.reduce(0, +) <= 1 << 20)
        #expect(onDisk.values.reduce(0, +) == second.figures.bytes)
        // Tonight's images all stayed; only last night's went, and the manifest agrees with the folder.
        #expect(newer.allSatisfy { onDisk[ArtworkMirror.fileName(for: $0)] != nil })
        #expect(second.mirrored.count == newer.count)
        #expect(Set(try manifest().entries.keys) == Set(onDisk.keys))
        #expect(older.filter { onDisk[ArtworkMirror.fileName(for: $0)] == nil }.count == second.figures.evicted)
    }

    @Test func aKillMidDownloadLeavesNoPartialFile() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = RecordingImageTransport()
        let urls = (1...4).map { Self.url($0) }
        let victim = ArtworkMirror.fileName(for: urls[2])
        struct Killed: Error {}
        let outcome = try await mirror(transport, interruption: { name in
            if name == victim { throw Killed() }
        }).run(urls: urls, runID: 1, runDate: Date(timeIntervalSince1970: 0))
        #expect(outcome.figures.failed == 1 && outcome.figures.files == 3)
        // Neither the image nor its temporary is there, the manifest does not name it, and the feed keeps the original URL.
        let names = try FileManager.default.contentsOfDirectory(atPath: artworkFolder.path)
        #expect(!names.contains(victim) && !names.contains { $0.contains(".tmp-") })
        #expect(try manifest().entries[victim] == nil)
        #expect(outcome.mirrored[urls[2]] == nil)

        // What a real kill leaves: a half-written temporary and an image renamed in before the manifest named it.
        let partial = artworkFolder.appendingPathComponent(".\(victim).tmp-99999-0123456789abcdef")
        try Data([0xFF, 0xD8, 0xFF]).write(to: partial)
        let orphan = ArtworkMirror.fileName(for: Self.url(40))
        try Data(ArtworkImageTransport.sampleJPEG).write(to: artworkFolder.appendingPathComponent(orphan))
        let next = try await mirror(transport).run(urls: urls, runID: 2, runDate: Date(timeIntervalSince1970: 86_400))
        let after = try FileManager.default.contentsOfDirectory(atPath: artworkFolder.path)
        #expect(!after.contains(partial.lastPathComponent) && !after.contains(orphan))
        #expect(next.figures.downloaded == 1 && next.figures.notModified == 3 && next.figures.files == 4)
        let bytes = try Data(contentsOf: artworkFolder.appendingPathComponent(victim))
        #expect(ImageInfo.read(Array(bytes))?.width == 3000)
    }

    @Test func imagesApplePodcastsWouldRefuseAreNotPublished() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let transport = RecordingImageTransport()
        let small = Self.url(1, size: 600)
        let notImage = "https://is1-ssl.mzstatic.com/image/thumb/x/not-an-image.jpg"
        let good = Self.url(3)
        let outcome = try await mirror(transport).run(urls: [small, notImage, good], runID: 1, runDate: Date(timeIntervalSince1970: 0))
        #expect(outcome.figures.rejected == 2 && outcome.figures.files == 1 && outcome.figures.published == 1)
        #expect(outcome.mirrored.keys.sorted() == [good])
        #expect(try imagesOnDisk().keys.sorted() == [ArtworkMirror.fileName(for: good)])
        #expect(outcome.problems.contains { $0.url == small && $0.reason == "600×600 px is outside 1400–3000 px" })
        // The next night asks with the rejected images' validators too, and they stay rejected.
        transport.reset()
        let again = try await mirror(transport).run(urls: [small, good], runID: 2, runDate: Date(timeIntervalSince1970: 86_400))
        #expect(again.figures.notModified == 2 && again.figures.rejected == 1 && again.figures.downloaded == 0)
    }
}
