import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes files so that readers only ever see the old or the new complete file
/// (DESIGN Invariant 4).
///
/// The content is streamed into a hidden temporary file in the destination's
/// directory (`.<name>.tmp-<pid>-<random>`), flushed and `fsync`ed, then moved
/// over the destination with `rename(2)`, which is atomic within one file system.
/// If anything throws before the rename — the body, a failed `write`, a full
/// disk, a validation step inside the body — the temporary file is removed and
/// the previous destination file is left exactly as it was.
///
/// ```swift
/// try AtomicFile.write(to: url) { sink in
///     try sink.write("hello\n")
/// }
/// ```
package enum AtomicFile {
    /// The folder every write must stay inside, once symbolic links are
    /// resolved (the job's output folder, set by the exports around their
    /// writes); nil: anywhere. A file reached through a link that leads
    /// outside it is refused, naming the link and its target.
    @TaskLocal package static var confinedTo: URL?

    /// Set (``FeedSameness/keepingUnchanged(_:)``) while feed documents are
    /// written, which may say what the published ones say but for the build
    /// date they carry: a document whose content equals the published file's
    /// (``FeedSameness/sameContent(_:_:)``) leaves the published file as it
    /// is, untouched, and the new one goes.
    ///
    /// A flag rather than the comparison itself: a closure bound as a task-local
    /// value on a thread that runs no task (the exports run on one of their own,
    /// ``Catalog/awaitOffPool(_:)``) crashed optimized builds of Swift 6.3 inside
    /// `swift_task_localValuePush`; a plain value does not.
    @TaskLocal package static var keepsUnchangedFeeds = false

    /// Atomically replaces (or creates) the file at `url` with what `body` writes.
    ///
    /// Missing parent directories are created. New files get mode `0666` minus the
    /// process umask, like any newly created file. After the rename the directory is
    /// `fsync`ed (best effort) so the new name survives a power loss.
    ///
    /// - Parameters:
    ///   - url: the destination; must be a file URL.
    ///   - body: streams the content into the sink. Throwing aborts the write.
    /// - Returns: what `body` returns.
    /// - Throws: ``ExportError/io(operation:path:errno:)`` naming the path and the
    ///   failing system call, or whatever `body` throws.
    @discardableResult
    package static func write<R>(to url: URL, _ body: (inout OutputSink) throws -> R) throws -> R {
        guard url.isFileURL else {
            throw ExportError.invalidInput(path: url.absoluteString, reason: "not a file URL")
        }
        let destination = url.standardizedFileURL
        let directory = destination.deletingLastPathComponent()
        let name = destination.lastPathComponent
        guard !name.isEmpty, name != "/", name != ".", name != ".." else {
            throw ExportError.invalidInput(path: destination.path, reason: "not a file name")
        }
        try checkConfinement(directory)
        try createDirectories(directory)

        let tempURL = directory.appendingPathComponent(temporaryName(for: name))
        let tempPath = tempURL.path
        let destinationPath = destination.path

        let fd = open(tempPath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
        guard fd >= 0 else { throw ExportError.io(operation: "open", path: tempPath, errno: errno) }

        var fdOpen = true
        var renamed = false
        defer {
            if fdOpen { _ = close(fd) }
            if !renamed { _ = unlink(tempPath) }
        }

        var sink = OutputSink(fileDescriptor: fd, path: tempPath)
        let result = try body(&sink)
        try sink.flush()

        if fsync(fd) != 0 { throw ExportError.io(operation: "fsync", path: tempPath, errno: errno) }
        fdOpen = false
        if close(fd) != 0 { throw ExportError.io(operation: "close", path: tempPath, errno: errno) }
        if keepsUnchangedFeeds, FileManager.default.fileExists(atPath: destinationPath), FeedSameness.sameContent(destination, tempURL) {
            // The deferred unlink removes the new copy.
            return result
        }
        if rename(tempPath, destinationPath) != 0 {
            throw ExportError.io(operation: "rename to \(destinationPath)", path: tempPath, errno: errno)
        }
        renamed = true
        syncDirectory(directory.path)
        return result
    }

    /// A file name beside `url` for a writer that builds the file itself (SQLite),
    /// to be handed to ``publish(temporary:to:)``.
    package static func temporaryURL(for url: URL) throws -> URL {
        let destination = url.standardizedFileURL
        let directory = destination.deletingLastPathComponent()
        try checkConfinement(directory)
        try createDirectories(directory)
        return directory.appendingPathComponent(temporaryName(for: destination.lastPathComponent))
    }

    /// Makes a finished temporary file durable (`fsync`) and renames it over
    /// `url`, then syncs the directory: the same publication step as
    /// ``write(to:_:)``, for files another library wrote.
    package static func publish(temporary: URL, to url: URL) throws {
        let path = temporary.path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw ExportError.io(operation: "open", path: path, errno: errno) }
        if fsync(fd) != 0 {
            let code = errno
            _ = close(fd)
            throw ExportError.io(operation: "fsync", path: path, errno: code)
        }
        _ = close(fd)
        let destination = url.standardizedFileURL
        if rename(path, destination.path) != 0 {
            throw ExportError.io(operation: "rename to \(destination.path)", path: path, errno: errno)
        }
        syncDirectory(destination.deletingLastPathComponent().path)
    }

    /// Atomically replaces the file at `url` with `bytes`.
    package static func write(_ bytes: some Collection<UInt8>, to url: URL) throws {
        try write(to: url) { sink in
            if let done: Void = try bytes.withContiguousStorageIfAvailable({ try sink.write(UnsafeRawBufferPointer($0)) }) {
                return done
            }
            try sink.write(Array(bytes))
        }
    }

    /// The hidden temporary name used for `name`: `.<name>.tmp-<pid>-<16 hex digits>`.
    static func temporaryName(for name: String) -> String {
        let random = UInt64.random(in: .min ... .max)
        let hex = String(random, radix: 16)
        let padded = String(repeating: "0", count: 16 - hex.count) + hex
        return ".\(name).tmp-\(getpid())-\(padded)"
    }

    /// The prefix shared by every temporary file for a destination named `name`.
    static func temporaryPrefix(for name: String) -> String { ".\(name).tmp-" }

    /// Removes temporary files left next to `url` by writers that were killed
    /// (`kill -9`, power loss) before they could clean up. Returns how many were removed.
    ///
    /// Only temporaries whose writer is gone (``isStale(_:)``): one another
    /// live process is writing (another job sharing the folder) is left alone.
    @discardableResult
    package static func removeStaleTemporaries(for url: URL) -> Int {
        let destination = url.standardizedFileURL
        let directory = destination.deletingLastPathComponent()
        let prefix = temporaryPrefix(for: destination.lastPathComponent)
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(prefix) {
            let path = directory.appendingPathComponent(name).path
            if isStale(path), unlink(path) == 0 { removed += 1 }
        }
        return removed
    }

    /// Removes every stale temporary file of ours anywhere under `directory`
    /// (per-genre feed names are not known in advance): only our naming
    /// (`.<name>.tmp-<pid>-<16 hex digits>`) and only where ``isStale(_:)``.
    @discardableResult
    package static func removeStaleTemporaries(under directory: URL) -> Int {
        removeTemporaries(under: directory) { isStale($0) }
    }

    /// Removes the temporary files this process is writing under `directory`:
    /// for a process about to exit on a signal, whose writers will never finish.
    @discardableResult
    package static func removeOwnTemporaries(under directory: URL) -> Int {
        let mine = getpid()
        return removeTemporaries(under: directory) { writerPID(ofTemporary: ($0 as NSString).lastPathComponent) == mine }
    }

    private static func removeTemporaries(under directory: URL, where shouldRemove: (String) -> Bool) -> Int {
        // Not following symbolic links: nothing outside the folder is ours to remove.
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return 0 }
        var removed = 0
        for case let url as URL in walker {
            let name = url.lastPathComponent
            guard writerPID(ofTemporary: name) != nil else { continue }
            if shouldRemove(url.path), unlink(url.path) == 0 { removed += 1 }
        }
        return removed
    }

    /// The writer's process id in a temporary name of ours
    /// (`.<name>.tmp-<pid>-<16 hex digits>`); nil for any other name.
    static func writerPID(ofTemporary name: String) -> pid_t? {
        guard name.hasPrefix("."), let marker = name.range(of: ".tmp-", options: .backwards) else { return nil }
        let parts = name[marker.upperBound...].split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[1].count == 16, parts[1].allSatisfy(\.isHexDigit),
              let pid = pid_t(parts[0]), pid > 0 else { return nil }
        return pid
    }

    /// Temporaries older than this are stale even if a process with the
    /// writer's id runs: a writer keeps its file growing, and the id may have
    /// been reused by an unrelated process since a crash.
    static let abandonedAfterSeconds: TimeInterval = 24 * 3600

    /// Whether the temporary at `path` was left by a writer that is gone: its
    /// process no longer exists, or the file has not changed for a day.
    /// Never this process's own temporaries.
    static func isStale(_ path: String) -> Bool {
        guard let pid = writerPID(ofTemporary: (path as NSString).lastPathComponent), pid != getpid() else { return false }
        if !processExists(pid) { return true }
        guard let modified = (try? FileManager.default.attributesOfItem(atPath: path))?[.modificationDate] as? Date else { return false }
        return Date().timeIntervalSince(modified) > abandonedAfterSeconds
    }

    /// Whether a process with id `pid` exists (`kill(pid, 0)`; EPERM means it
    /// exists under another user).
    package static func processExists(_ pid: pid_t) -> Bool {
        kill(pid, 0) == 0 || errno == EPERM
    }

    /// Refuses to write into `directory` when, with symbolic links resolved,
    /// it is not inside ``confinedTo``: a link inside the output folder (e.g.
    /// `feeds -> /tmp/elsewhere`) must not carry writes outside it. Checked
    /// on the deepest folder that exists, before any folder is created.
    static func checkConfinement(_ directory: URL) throws {
        guard let root = confinedTo, let reason = escape(of: directory, root: root) else { return }
        throw ExportError.invalidInput(path: directory.path, reason: reason)
    }

    /// Why `directory`, with symbolic links resolved, is not inside `root`
    /// (naming the link that leads out); nil when it is. Checked on the
    /// deepest folder that exists. Writes and removals both ask it.
    static func escape(of directory: URL, root: URL) -> String? {
        let rootPath = root.standardizedFileURL.path
        guard let realRoot = realPath(rootPath) else { return nil }  // not created yet: nothing there to lead elsewhere
        var existing = directory.standardizedFileURL
        while !FileManager.default.fileExists(atPath: existing.path), existing.path != "/" {
            existing = existing.deletingLastPathComponent()
        }
        guard let real = realPath(existing.path) else { return nil }
        let inside = real == realRoot || real.hasPrefix(realRoot.hasSuffix("/") ? realRoot : realRoot + "/")
        guard !inside else { return nil }
        // Name the link that leads out: the first component below the root that is one.
        var link = existing.path
        var walked = URL(fileURLWithPath: rootPath)
        let below = existing.path.hasPrefix(rootPath + "/") ? existing.path.dropFirst(rootPath.count + 1).split(separator: "/") : []
        for component in below {
            walked.appendPathComponent(String(component))
            if (try? FileManager.default.destinationOfSymbolicLink(atPath: walked.path)) != nil {
                link = walked.path
                break
            }
        }
        let target = (try? FileManager.default.destinationOfSymbolicLink(atPath: link)) ?? real
        return "refused: the symbolic link \(link) -> \(target) leads outside the output folder \(rootPath) (to \(real)); "
            + "nothing is written or removed through it. Replace the link with a folder, or point the job's output at \(real)"
    }

    /// `path` with every symbolic link resolved (`realpath(3)`); nil when it does not exist.
    static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    private static func createDirectories(_ directory: URL) throws {
        var isDirectory: ObjCBool = false
        if FileManager.default.fileExists(atPath: directory.path, isDirectory: &isDirectory), isDirectory.boolValue {
            return
        }
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            let code = ((error as NSError).userInfo[NSUnderlyingErrorKey] as? NSError)
                .flatMap { $0.domain == NSPOSIXErrorDomain ? Int32($0.code) : nil } ?? EIO
            throw ExportError.io(operation: "create directory", path: directory.path, errno: code)
        }
    }

    private static func syncDirectory(_ path: String) {
        let dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard dfd >= 0 else { return }
        _ = fsync(dfd)
        _ = close(dfd)
    }
}

/// A buffered writer over a file descriptor, or into memory.
///
/// Bytes are collected in a fixed buffer (64 KiB by default) and handed to
/// `write(2)` when it fills, so memory does not grow with the size of the file.
/// The sink does not own the descriptor: whoever opened it closes it, after
/// calling ``flush()``. It is non-copyable, so two copies can never interleave
/// their buffers. A memory sink (``init(memoryFor:)``) collects the bytes
/// instead, for a part of a file made on another thread and written later.
package struct OutputSink: ~Copyable {
    /// The default buffer size.
    package static let defaultCapacity = 64 * 1024

    @usableFromInline let fd: Int32
    /// The path reported in errors.
    package let path: String
    @usableFromInline let buffer: UnsafeMutablePointer<UInt8>
    @usableFromInline let capacity: Int
    @usableFromInline var count: Int = 0
    @usableFromInline var flushedBytes: Int64 = 0
    /// What a memory sink flushed (nil for a descriptor's).
    private var collected: [UInt8]?
    /// Bytes handed to the descriptor, and how many of them the kernel was
    /// asked to write back (``writeAll(_:)``).
    private var written: Int64 = 0
    private var writtenBack: Int64 = 0
    /// Written back after every this many bytes.
    private static var writeBackStep: Int64 { 32 << 20 }

    /// A sink over an open, writable descriptor. `path` is only used in error messages.
    package init(fileDescriptor: Int32, path: String, capacity: Int = OutputSink.defaultCapacity) {
        self.fd = fileDescriptor
        self.path = path
        self.capacity = max(capacity, 1024)
        self.buffer = .allocate(capacity: self.capacity)
    }

    /// A sink that keeps what it is given, for ``collectedBytes()``; `path` is
    /// the file the bytes are for, named in errors.
    package init(memoryFor path: String, capacity: Int = OutputSink.defaultCapacity) {
        self.init(fileDescriptor: -1, path: path, capacity: capacity)
        collected = []
    }

    /// Everything a memory sink was given, in order (empty for a descriptor's sink).
    package consuming func collectedBytes() -> [UInt8] {
        if collected != nil { try? flush() }
        return collected ?? []
    }

    /// Appends everything the memory sink `other` was given, without copying it first.
    package mutating func write(contentsOf other: borrowing OutputSink) throws {
        if let collected = other.collected { try collected.withUnsafeBytes { try write($0) } }
        try write(UnsafeRawBufferPointer(start: other.buffer, count: other.count))
    }

    deinit { buffer.deallocate() }

    /// Bytes accepted so far (written or still buffered).
    package var bytesWritten: Int64 { flushedBytes + Int64(count) }

    /// Appends one byte.
    @inlinable
    package mutating func write(byte: UInt8) throws {
        if count == capacity { try flush() }
        buffer[count] = byte
        count += 1
    }

    /// Appends raw bytes. Large writes bypass the buffer.
    @inlinable
    package mutating func write(_ bytes: UnsafeRawBufferPointer) throws {
        let n = bytes.count
        guard n > 0, let base = bytes.baseAddress else { return }
        if n <= capacity - count {
            (buffer + count).initialize(from: base.assumingMemoryBound(to: UInt8.self), count: n)
            count += n
            return
        }
        try writeSlow(bytes)
    }

    /// Appends bytes.
    @inlinable
    package mutating func write(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { try write($0) }
    }

    /// Appends a string as UTF-8.
    @inlinable
    package mutating func write(_ string: String) throws {
        var string = string
        try string.withUTF8 { try write(UnsafeRawBufferPointer($0)) }
    }

    /// Hands everything buffered to the kernel (`write(2)`; not `fsync`).
    package mutating func flush() throws {
        if count > 0 {
            try writeAll(UnsafeRawBufferPointer(start: buffer, count: count))
            flushedBytes += Int64(count)
            count = 0
        }
    }

    @usableFromInline
    mutating func writeSlow(_ bytes: UnsafeRawBufferPointer) throws {
        // Fill the buffer, flush, then either buffer the rest or write it straight through.
        var rest = bytes
        let room = capacity - count
        if count > 0, room > 0 {
            (buffer + count).initialize(from: rest.baseAddress!.assumingMemoryBound(to: UInt8.self), count: room)
            count += room
            rest = UnsafeRawBufferPointer(rebasing: rest[room...])
        }
        try flush()
        if rest.count >= capacity {
            try writeAll(rest)
            flushedBytes += Int64(rest.count)
        } else if rest.count > 0 {
            buffer.initialize(from: rest.baseAddress!.assumingMemoryBound(to: UInt8.self), count: rest.count)
            count = rest.count
        }
    }

    private mutating func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        if collected != nil {
            collected!.append(contentsOf: bytes)
            return
        }
        var offset = 0
        while offset < bytes.count {
            let n = Glibc_write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                let code = errno
                if code == EINTR { continue }
                throw ExportError.io(operation: "write", path: path, errno: code)
            }
            if n == 0 { throw ExportError.io(operation: "write", path: path, errno: EIO) }
            offset += n
        }
        written += Int64(bytes.count)
        if written - writtenBack >= Self.writeBackStep {
            // A large export is written back while it is made, not all at
            // once by the closing fsync (600 MB of CSV waited 0.2–0.4 s for
            // it), and its pages leave the cache once on disk instead of
            // pushing out the store's. Advice only: a pipe refuses it, harmlessly.
            _ = posix_fadvise(fd, off_t(writtenBack), off_t(written - writtenBack), POSIX_FADV_DONTNEED)
            writtenBack = written
        }
    }
}

@inline(__always)
private func Glibc_write(_ fd: Int32, _ buf: UnsafeRawPointer, _ n: Int) -> Int {
    #if canImport(Glibc)
    return Glibc.write(fd, buf, n)
    #elseif canImport(Musl)
    return Musl.write(fd, buf, n)
    #else
    return Darwin.write(fd, buf, n)
    #endif
}
