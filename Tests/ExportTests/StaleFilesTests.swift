import Catalog
@testable import Export
import Foundation
import Testing
import TestSupport

/// Per-group files whose group is gone leave the output folder; nothing else does.
@Suite struct StaleFilesTests {
    let root = TestPaths.temporaryDirectory("stale")

    func touch(_ path: String) throws -> ExportedFile {
        let url = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: url)
        var file = ExportedFile(path: url.path, bytes: 1, rows: 1)
        file.template = "feeds/{genre}.xml"
        return file
    }

    func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path) }

    @Test func aGroupThatIsGoneLosesItsFileAndOnlyThat() throws {
        let spec = ExportSpec.feed(FeedExportSpec(kind: .podcastsNew, rssPath: "feeds/{genre}.xml", atomPath: nil, title: "t",
                                                  selfURL: "https://example.com/{genre}.xml", link: "", description: ""))
        let dated = ExportSpec.feed(FeedExportSpec(kind: .podcastsNew, rssPath: "daily/{genre}-{date}.xml", atomPath: nil,
                                                   title: "t", selfURL: "https://example.com/x.xml", link: "", description: ""))
        let first = [try touch("feeds/Arts.xml"), try touch("feeds/Comedy.xml"), try touch("feeds/Comedy-archive-1.xml")]
        _ = try touch("feeds/mine.xml") // the user's own file: never listed, never removed
        var daily = try touch("daily/Arts-2026-11-01.xml")
        daily.template = "daily/{genre}-{date}.xml"
        #expect(StaleFiles.sweep([spec, dated], written: first + [daily], outputDirectory: root.path).removed == [])

        // Comedy is gone tonight; the dated file of another night stays (a history the user keeps).
        let second = [try touch("feeds/Arts.xml")]
        let removed = StaleFiles.sweep([spec, dated], written: second, outputDirectory: root.path).removed
        #expect(removed.map { URL(fileURLWithPath: $0).lastPathComponent }.sorted() == ["Comedy-archive-1.xml", "Comedy.xml"])
        #expect(exists("feeds/Arts.xml") && exists("feeds/mine.xml") && exists("daily/Arts-2026-11-01.xml"))
        #expect(!exists("feeds/Comedy.xml"))
    }

    @Test func aFailedExportRemovesNothing() throws {
        // The sweep runs only after every export succeeded; a manifest naming a
        // path outside the folder is never followed.
        let spec = ExportSpec.feed(FeedExportSpec(kind: .podcastsNew, rssPath: "feeds/{genre}.xml", atomPath: nil, title: "t",
                                                  selfURL: "https://example.com/{genre}.xml", link: "", description: ""))
        let outside = root.deletingLastPathComponent().appendingPathComponent("outside-\(UUID().uuidString).xml")
        try Data("keep".utf8).write(to: outside)
        let manifest = #"{"feeds/{genre}.xml":["../\#(outside.lastPathComponent)"]}"#
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        try Data(manifest.utf8).write(to: root.appendingPathComponent(StaleFiles.manifestName))
        #expect(StaleFiles.sweep([spec], written: [], outputDirectory: root.path).removed == [])
        #expect(FileManager.default.fileExists(atPath: outside.path))
    }

    /// Removals obey the writes' rule: nothing through a link that leads out of the output folder.
    @Test func theSweepDoesNotFollowALinkOutOfTheOutputFolder() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let spec = ExportSpec.feed(FeedExportSpec(kind: .podcastsNew, rssPath: "feeds/genres/{genre}.xml", atomPath: nil, title: "t",
                                                  selfURL: "https://example.com/{genre}.xml", link: "", description: ""))
        let elsewhere = TestPaths.temporaryDirectory("stale-elsewhere")
        defer { try? FileManager.default.removeItem(at: elsewhere) }
        try FileManager.default.createDirectory(at: elsewhere, withIntermediateDirectories: true)
        try Data("someone else's".utf8).write(to: elsewhere.appendingPathComponent("Comedy.xml"))
        try FileManager.default.createDirectory(at: root.appendingPathComponent("feeds"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: root.appendingPathComponent("feeds/genres"), withDestinationURL: elsewhere)
        let manifest = #"{"feeds/genres/{genre}.xml":["feeds/genres/Comedy.xml"]}"#
        try Data(manifest.utf8).write(to: root.appendingPathComponent(StaleFiles.manifestName))

        let swept = StaleFiles.sweep([spec], written: [], outputDirectory: root.path)
        #expect(swept.removed.isEmpty)
        #expect(swept.refused.count == 1)
        #expect(swept.refused.first?.1.contains("leads outside the output folder") == true, "\(swept.refused)")
        #expect(FileManager.default.fileExists(atPath: elsewhere.appendingPathComponent("Comedy.xml").path))
        // Still listed: once the link is replaced by a folder, a later night removes it.
        let kept = try String(contentsOf: root.appendingPathComponent(StaleFiles.manifestName), encoding: .utf8)
        #expect(kept.contains("feeds/genres/Comedy.xml"))
    }

    /// The store's own files are never removed, even when a manifest names them.
    @Test func theSweepNeverRemovesTheStore() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let spec = ExportSpec.feed(FeedExportSpec(kind: .podcastsNew, rssPath: "{genre}.sqlite", atomPath: nil, title: "t",
                                                  selfURL: "https://example.com/{genre}.xml", link: "", description: ""))
        _ = try touch("snapshot.sqlite")
        let manifest = #"{"{genre}.sqlite":["snapshot.sqlite"]}"#
        try Data(manifest.utf8).write(to: root.appendingPathComponent(StaleFiles.manifestName))
        let swept = StaleFiles.sweep([spec], written: [], outputDirectory: root.path,
                                     protected: ProtectedFiles([root.appendingPathComponent("snapshot.sqlite").path]))
        #expect(swept.removed.isEmpty)
        #expect(exists("snapshot.sqlite"))
    }
}
