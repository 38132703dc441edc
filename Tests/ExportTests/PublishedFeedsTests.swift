import Foundation
@testable import Export
import Testing
import TestSupport

/// The feed files each night published, kept for `export --as-of`.
@Suite struct PublishedFeedsTests {
    let output = TestPaths.temporaryDirectory("published-feeds")

    func write(_ text: String, _ path: String, items: Int = 1) throws -> ExportedFile {
        let url = output.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
        return ExportedFile(path: url.path, bytes: Int64(text.utf8.count), rows: items)
    }

    func blobCount() -> Int {
        let blobs = output.appendingPathComponent(PublishedFeeds.folderName).appendingPathComponent("blobs")
        return ((try? FileManager.default.contentsOfDirectory(atPath: blobs.path)) ?? []).count
    }

    @Test func eachNightComesBackAsPublishedAndAnUnchangedFileIsKeptOnce() throws {
        defer { try? FileManager.default.removeItem(at: output) }
        let kept = PublishedFeeds(outputDirectory: output.path)
        let big = String(repeating: "<item><title>Episode</title></item>\n", count: 5000)
        let archive = try write("<rss>page 1</rss>", "feeds/archive-1.xml", items: 100)
        var feed = try write("<rss>night 1 \(big)</rss>", "feeds/a.xml")
        let night1 = try kept.record(run: 1, files: [feed, archive, ExportedFile(path: output.appendingPathComponent("feeds/never.xml").path, bytes: 0, rows: 0)],
                                     outputDirectory: output.path)
        #expect(night1.files == 2 && night1.newBlobs == 2)
        #expect(night1.newBlobBytes < Int64(big.utf8.count) / 20, "gzip keeps a feed in a fraction of its size")
        feed = try write("<rss>night 2 \(big)</rss>", "feeds/a.xml")
        let night2 = try kept.record(run: 2, files: [feed, archive], outputDirectory: output.path)
        // The archive page did not change: nothing new is stored for it.
        #expect(night2.files == 2 && night2.newBlobs == 1)
        #expect(blobCount() == 3)

        for (run, text) in [(Int64(1), "night 1"), (2, "night 2")] {
            let into = output.appendingPathComponent("as-of-\(run)")
            let files = try #require(try kept.restore(run: run, into: into.path))
            #expect(files.map { "\(URL(fileURLWithPath: $0.path).lastPathComponent) \($0.rows)" } == ["a.xml 1", "archive-1.xml 100"])
            let restored = try String(contentsOf: into.appendingPathComponent("feeds/a.xml"), encoding: .utf8)
            #expect(restored == "<rss>\(text) \(big)</rss>")
            #expect(try String(contentsOf: into.appendingPathComponent("feeds/archive-1.xml"), encoding: .utf8) == "<rss>page 1</rss>")
        }
        #expect(try kept.restore(run: 3, into: output.appendingPathComponent("x").path) == nil)

        // Retention let go of night 1: its manifest and the contents only it named go; night 2 stays whole.
        #expect(try kept.prune(keeping: [2]) == [1])
        #expect(kept.keptRuns() == [2])
        #expect(blobCount() == 2)
        #expect(try kept.restore(run: 2, into: output.appendingPathComponent("again").path)?.count == 2)
    }

    @Test func aBlobWrittenByAKilledNightIsRemovedAndACorruptOneIsNeverGivenBack() throws {
        defer { try? FileManager.default.removeItem(at: output) }
        let kept = PublishedFeeds(outputDirectory: output.path)
        let feed = try write("<rss>one</rss>", "a.xml")
        _ = try kept.record(run: 1, files: [feed], outputDirectory: output.path)
        // A night killed between its blob and its manifest.
        let orphan = kept.root.appendingPathComponent("blobs/0123456789abcdef-9.gz")
        try Data(try Gzip.compress(Array("<rss/>abc".utf8))).write(to: orphan)
        try kept.prune(keeping: [1])
        #expect(!FileManager.default.fileExists(atPath: orphan.path))
        #expect(blobCount() == 1)

        // A blob whose bytes changed on disk (same length, other content).
        let blobs = kept.root.appendingPathComponent("blobs")
        let name = try #require(try FileManager.default.contentsOfDirectory(atPath: blobs.path).first)
        try Data(try Gzip.compress(Array("<rss>two</rss>".utf8))).write(to: blobs.appendingPathComponent(name))
        #expect(throws: PublishedFeeds.Failure.self) { try kept.restore(run: 1, into: output.appendingPathComponent("x").path) }
        // A truncated one.
        try Data([0x1f, 0x8b, 0x08, 0x00]).write(to: blobs.appendingPathComponent(name))
        #expect(throws: Gzip.Failure.self) { try kept.restore(run: 1, into: output.appendingPathComponent("y").path) }
    }

    @Test func gzipFilesAreWhatGunzipReads() throws {
        defer { try? FileManager.default.removeItem(at: output) }
        let text = (0..<2000).map { "line \($0) é ✓\n" }.joined()
        let file = output.appendingPathComponent("t.gz")
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        try Data(try Gzip.compress(Array(text.utf8))).write(to: file)
        let gunzip = Process()
        gunzip.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        gunzip.arguments = ["gzip", "-dc", file.path]
        let pipe = Pipe()
        gunzip.standardOutput = pipe
        try gunzip.run()
        let out = pipe.fileHandleForReading.readDataToEndOfFile()
        gunzip.waitUntilExit()
        #expect(gunzip.terminationStatus == 0)
        #expect(String(decoding: out, as: UTF8.self) == text)
        #expect(try Gzip.decompress(Array(try Data(contentsOf: file))) == Array(text.utf8))
        #expect(try Gzip.decompress(try Gzip.compress([])) == [])
    }
}
