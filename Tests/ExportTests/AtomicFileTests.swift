import Foundation
import Testing
@testable import Export

/// A fresh directory under the system temp folder, removed by `body`'s end.
func withTemporaryDirectory<R>(_ body: (URL) throws -> R) throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("storesync-export-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try body(url)
}

/// ``withTemporaryDirectory(_:)`` for a body that awaits (a reader check run off the pool).
func withTemporaryDirectory<R>(_ body: (URL) async throws -> R) async throws -> R {
    let url = FileManager.default.temporaryDirectory
        .appendingPathComponent("storesync-export-\(UUID().uuidString)", isDirectory: true)
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: url) }
    return try await body(url)
}

/// Names in `directory` (hidden ones included).
func directoryListing(_ directory: URL) throws -> [String] {
    try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted()
}

private struct BodyFailure: Error, Equatable {}

@Suite struct AtomicFileTests {
    @Test func createsThenReplacesContent() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("out.txt")
            try AtomicFile.write(to: url) { sink in try sink.write("first version\n") }
            #expect(try String(contentsOf: url, encoding: .utf8) == "first version\n")

            let size = try AtomicFile.write(to: url) { sink -> Int64 in
                try sink.write("second")
                try sink.write([0x20, 0x76, 0x32])
                try sink.write(byte: 0x0A)
                return sink.bytesWritten
            }
            #expect(size == 10)
            #expect(try String(contentsOf: url, encoding: .utf8) == "second v2\n")
            #expect(try directoryListing(dir) == ["out.txt"])
        }
    }

    @Test func throwingBodyLeavesPreviousFileAndNoTemporary() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("report.csv")
            let previous = Array("id,name\r\n1,old\r\n".utf8)
            try AtomicFile.write(previous, to: url)

            #expect(throws: BodyFailure.self) {
                try AtomicFile.write(to: url) { sink in
                    // More than one buffer, so bytes really reached the temporary file.
                    for _ in 0..<10_000 { try sink.write("replacement row that will never be published\n") }
                    #expect(sink.bytesWritten > Int64(OutputSink.defaultCapacity))
                    throw BodyFailure()
                }
            }
            #expect(try Array(Data(contentsOf: url)) == previous)
            #expect(try directoryListing(dir) == ["report.csv"])
        }
    }

    @Test func throwingBodyOnNewFileLeavesNothing() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("new.xml")
            #expect(throws: BodyFailure.self) {
                try AtomicFile.write(to: url) { sink in
                    try sink.write("<partial")
                    throw BodyFailure()
                }
            }
            #expect(try directoryListing(dir).isEmpty)
        }
    }

    @Test func createsParentDirectories() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("a/b/c/file.txt")
            try AtomicFile.write(Array("x".utf8), to: url)
            #expect(try String(contentsOf: url, encoding: .utf8) == "x")
        }
    }

    @Test func streamsLargeAndOddSizedWritesInOrder() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("big.bin")
            var expected: [UInt8] = []
            let capacity = OutputSink.defaultCapacity
            // Sizes around the buffer size exercise every path of the buffered writer.
            let sizes = [1, 7, capacity - 8, 3, capacity, capacity + 1, 3 * capacity + 5, 0, 2]
            try AtomicFile.write(to: url) { sink in
                for (n, size) in sizes.enumerated() {
                    let chunk = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ n) }
                    expected += chunk
                    try chunk.withUnsafeBytes { try sink.write($0) }
                }
                #expect(sink.bytesWritten == Int64(expected.count))
            }
            #expect(try Array(Data(contentsOf: url)) == expected)
        }
    }

    @Test func ioErrorsNameThePathAndTheReason() throws {
        try withTemporaryDirectory { dir throws in
            // A regular file where a directory is needed.
            let blocker = dir.appendingPathComponent("blocker")
            try AtomicFile.write(Array("not a directory".utf8), to: blocker)
            let url = blocker.appendingPathComponent("out.txt")
            do {
                try AtomicFile.write(Array("x".utf8), to: url)
                Issue.record("expected an error")
            } catch let error as ExportError {
                guard case .io(_, let path, _) = error else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(path.hasSuffix("blocker"))
                #expect(error.description.contains("blocker"))
            }

            // A directory where the file should go: rename(2) fails, the temporary goes away.
            let directoryTarget = dir.appendingPathComponent("taken")
            try FileManager.default.createDirectory(at: directoryTarget.appendingPathComponent("inner"),
                                                    withIntermediateDirectories: true)
            #expect(throws: ExportError.self) {
                try AtomicFile.write(Array("x".utf8), to: directoryTarget)
            }
            #expect(try directoryListing(dir) == ["blocker", "taken"])
        }
    }

    @Test(.enabled(if: FileManager.default.fileExists(atPath: "/dev/full")))
    func fullDiskSurfacesAsTypedError() throws {
        let fd = open("/dev/full", O_WRONLY)
        try #require(fd >= 0)
        defer { close(fd) }
        var sink = OutputSink(fileDescriptor: fd, path: "/dev/full")
        try sink.write("fits in the buffer")
        do {
            try sink.flush()
            Issue.record("expected ENOSPC")
        } catch let error as ExportError {
            #expect(error == .io(operation: "write", path: "/dev/full", errno: ENOSPC))
            #expect(error.description.contains("No space left on device"))
        }
    }

    @Test func errorDescriptionUsesErrnoText() {
        let error = ExportError.io(operation: "write", path: "/exports/a.csv", errno: 28) // ENOSPC
        #expect(error.description.contains("/exports/a.csv"))
        #expect(error.description.contains("No space left on device"))
    }

    @Test func removesStaleTemporariesOnlyForThatFile() throws {
        let dead = try deadProcessID()
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("feed.xml")
            let hex = "0123456789abcdef"
            for name in [".feed.xml.tmp-\(dead)-\(hex)", ".feed.xml.tmp-\(dead)-fedcba9876543210", ".other.xml.tmp-\(dead)-\(hex)",
                         "feed.xml"] {
                _ = FileManager.default.createFile(atPath: dir.appendingPathComponent(name).path, contents: Data())
            }
            #expect(AtomicFile.removeStaleTemporaries(for: url) == 2)
            #expect(try directoryListing(dir) == [".other.xml.tmp-\(dead)-\(hex)", "feed.xml"])
        }
    }

    /// A live writer's temporary (another job sharing the folder, or this
    /// process) is never removed; a dead writer's is, and names not of our
    /// pattern are never touched.
    @Test func leavesTemporariesOfLiveWriters() throws {
        let dead = try deadProcessID()
        try withTemporaryDirectory { dir throws in
            let hex = "0123456789abcdef"
            let names = [".a.csv.tmp-\(dead)-\(hex)", ".b.csv.tmp-\(getpid())-\(hex)", ".c.csv.tmp-\(getppid())-\(hex)",
                         ".d.csv.tmp-notapid-\(hex)", "e.csv.tmp-\(dead)-\(hex)"]
            try FileManager.default.createDirectory(at: dir.appendingPathComponent("feeds"), withIntermediateDirectories: true)
            for name in names {
                _ = FileManager.default.createFile(atPath: dir.appendingPathComponent("feeds/" + name).path, contents: Data())
            }
            #expect(AtomicFile.removeStaleTemporaries(under: dir) == 1)
            #expect(try directoryListing(dir.appendingPathComponent("feeds")) == names.dropFirst().sorted())
            // A process exiting on a signal removes its own only.
            #expect(AtomicFile.removeOwnTemporaries(under: dir) == 1)
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("feeds/" + names[1]).path))
        }
    }

    /// The id of a process that has exited (and was reaped): a child run to its end.
    private func deadProcessID() throws -> pid_t {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "exit 0"]
        try child.run()
        child.waitUntilExit()
        let pid = child.processIdentifier
        #expect(!AtomicFile.processExists(pid))
        return pid
    }

    @Test func temporaryNameIsHiddenAndUnique() {
        let a = AtomicFile.temporaryName(for: "x.csv")
        let b = AtomicFile.temporaryName(for: "x.csv")
        #expect(a.hasPrefix(".x.csv.tmp-\(getpid())-"))
        #expect(a != b)
    }

    /// A symbolic link inside the output folder that leads outside it carries
    /// no write: refused with the link and its target named; links that stay
    /// inside, and real folders, are written through as before.
    @Test func refusesToWriteThroughALinkLeadingOutsideTheOutputFolder() throws {
        try withTemporaryDirectory { root throws in
            try withTemporaryDirectory { elsewhere throws in
                let fm = FileManager.default
                try fm.createSymbolicLink(atPath: root.appendingPathComponent("feeds").path, withDestinationPath: elsewhere.path)
                try fm.createDirectory(at: root.appendingPathComponent("real"), withIntermediateDirectories: true)
                try fm.createSymbolicLink(atPath: root.appendingPathComponent("alias").path, withDestinationPath: "real")
                try AtomicFile.$confinedTo.withValue(root) {
                    for target in ["feeds/news.xml", "feeds/genre/deep.xml"] {
                        do {
                            try AtomicFile.write(Array("x".utf8), to: root.appendingPathComponent(target))
                            Issue.record("\(target) was written through the link")
                        } catch let error as ExportError {
                            #expect(error.description.contains("\(root.standardizedFileURL.path)/feeds -> \(elsewhere.path)"), "\(error)")
                            #expect(error.description.contains("leads outside the output folder"), "\(error)")
                        }
                        #expect(throws: ExportError.self) { _ = try AtomicFile.temporaryURL(for: root.appendingPathComponent(target)) }
                    }
                    try AtomicFile.write(Array("ok".utf8), to: root.appendingPathComponent("alias/inside.xml"))
                    try AtomicFile.write(Array("ok".utf8), to: root.appendingPathComponent("new/folder/file.xml"))
                }
                #expect(try directoryListing(elsewhere).isEmpty, "nothing may appear outside the output folder")
                #expect(fm.fileExists(atPath: root.appendingPathComponent("real/inside.xml").path))
                #expect(fm.fileExists(atPath: root.appendingPathComponent("new/folder/file.xml").path))
                // Without a confinement (a writer outside the exports) the link is followed as before.
                try AtomicFile.write(Array("x".utf8), to: root.appendingPathComponent("feeds/free.xml"))
                #expect(try directoryListing(elsewhere) == ["free.xml"])
            }
        }
    }
}
