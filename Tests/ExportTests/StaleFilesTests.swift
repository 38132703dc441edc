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
        #expect(StaleFiles.sweep([spec, dated], written: first + [daily], outputDirectory: root.path) == [])

        // Comedy is gone tonight; the dated file of another night stays (a history the user keeps).
        let second = [try touch("feeds/Arts.xml")]
        let removed = StaleFiles.sweep([spec, dated], written: second, outputDirectory: root.path)
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
        #expect(StaleFiles.sweep([spec], written: [], outputDirectory: root.path) == [])
        #expect(FileManager.default.fileExists(atPath: outside.path))
    }
}
