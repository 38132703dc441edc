import Foundation
@testable import StoreSim
import Testing

/// The simulator's media files answer as media servers do (issue 28): HEAD
/// with a size, one-byte ranges with `Content-Range`, and the real world's
/// share of servers that refuse HEAD, ignore ranges or lost the file.
@Suite struct MediaFilesTests {
    static let paths = (1...400).map { "/podcasts/11319\($0)/episode-\($0).mp3" } + (1...100).map { "/itunes-assets/AudioPreview1\($0)/v4/a/b/c/\($0).m4a" }

    @Test func everyMannerOccursAndEachAnswersAsItSays() throws {
        var seen: [MediaFiles.Manner: Int] = [:]
        for path in Self.paths {
            let manner = MediaFiles.manner(path: path)
            seen[manner, default: 0] += 1
            let size = MediaFiles.size(path: path)
            let head = MediaFiles.respond(path: path, head: true, range: nil)
            let range = MediaFiles.respond(path: path, head: false, range: "bytes=0-0")
            switch manner {
            case .gone:
                #expect(head.status == 404 && range.status == 404, "\(path)")
            case .refusesHead:
                #expect(head.status == 405, "\(path)")
                #expect(range.status == 206 && range.body.count == 1, "\(path)")
                #expect(range.headers.contains { $0.0 == "Content-Range" && $0.1 == "bytes 0-0/\(size)" }, "\(path)")
            case .ignoresRanges:
                #expect(head.status == 200 && !head.headers.contains { $0.0 == "Accept-Ranges" }, "\(path)")
                #expect(range.status == 200 && range.body.count == size, "\(path)")
            case .complete:
                #expect(head.status == 200 && head.body.isEmpty, "\(path)")
                #expect(head.headers.contains { $0.0 == "Content-Length" && $0.1 == String(size) }, "\(path)")
                #expect(head.headers.contains { $0.0 == "Accept-Ranges" && $0.1 == "bytes" }, "\(path)")
                #expect(range.status == 206 && range.headers.contains { $0.0 == "Content-Range" && $0.1 == "bytes 0-0/\(size)" }, "\(path)")
                let again = MediaFiles.respond(path: path, head: true, range: nil, ifNoneMatch: head.etag)
                #expect(head.etag != nil && again.status == 304, "\(path): a conditional HEAD with its ETag")
            }
        }
        #expect(seen.count == 4, "\(seen)")
        #expect((seen[.complete] ?? 0) > Self.paths.count / 2, "\(seen)")
    }

    @Test(arguments: [("bytes=0-0", (0, 0)), ("bytes=10-19", (10, 19)), ("bytes=5-", (5, 99)), ("bytes=90-200", (90, 99))])
    func rangesWithinTheFile(header: String, expected: (Int, Int)) {
        let range = MediaFiles.byteRange(header, size: 100)
        #expect(range?.0 == expected.0 && range?.1 == expected.1)
    }

    @Test(arguments: ["bytes=100-", "bytes=5-2", "items=0-1", "bytes=0-1,5-6", "bytes=-5", "bytes=x-1"])
    func rangesOutsideTheFileOrUnsupported(header: String) {
        #expect(MediaFiles.byteRange(header, size: 100) == nil)
    }
}
