import Catalog
import Crawl
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Byte scanning shared by the reader and the decoders.
enum ByteScan {
    /// The index of the next LF at or after `from`, if any.
    static func newline(in buffer: UnsafeBufferPointer<UInt8>, from: Int) -> Int? {
        guard from < buffer.count, let base = buffer.baseAddress else { return nil }
        guard let hit = memchr(base + from, 0x0A, buffer.count - from) else { return nil }
        return base.distance(to: hit.assumingMemoryBound(to: UInt8.self))
    }

    /// Whether `[start, end)` holds only spaces, tabs and CRs (a JSON Lines blank line).
    static func isBlank(_ buffer: UnsafeBufferPointer<UInt8>, _ start: Int, _ end: Int) -> Bool {
        var i = start
        while i < end {
            switch buffer[i] {
            case 0x20, 0x09, 0x0D: i += 1
            default: return false
            }
        }
        return true
    }
}

/// Serves a records file page by page, reading it once, front to back.
///
/// The reader keeps its place: page `i + 1` continues where page `i` ended,
/// from the bytes already buffered, so a crawl reads the file exactly once.
/// It remembers where every page it has seen began, so a page asked for again
/// costs one seek; a page past the furthest one seen (a resumed run starting
/// at page `k`) is reached by scanning forward without keeping the rows.
///
/// Thread-safe: the state sits behind a mutex (one scope reads its pages in
/// order anyway). Files are read with `pread` rather than memory-mapped, so a
/// file truncated while it is read ends early instead of killing the process
/// with SIGBUS.
final class RecordsFileReader: Sendable {
    let path: String
    let format: RecordsFileFormat
    let pageSize: Int
    private let state = Mutex(State())

    private struct State {
        var stream: RowStream?
        /// The file the caches below describe (to notice it being replaced).
        var identity: FileIdentity?
        /// CSV: the header row's bytes, ending in a line feed; empty for JSON Lines.
        var header: [UInt8] = []
        /// Where page `i` begins, for every page reached so far.
        var pageStarts: [FilePosition] = []
    }

    init(path: String, format: RecordsFileFormat, pageSize: Int) {
        self.path = path
        self.format = format
        self.pageSize = max(1, pageSize)
    }

    /// Page `index`: its rows' bytes (CSV: preceded by the header row), with
    /// the first row's line number and whether rows follow in headers.
    func page(_ index: Int) throws(StoreSyncError) -> HTTPResponse {
        guard index >= 0 else { throw .inputUnreadable(path: path, reason: "page \(index) does not exist") }
        return try state.withLock { state throws(StoreSyncError) -> HTTPResponse in
            let stream = try open(&state)
            // Reach the page: from where the stream stands when that is its start
            // (the sequential case), else from the nearest known page start.
            let known = min(index, state.pageStarts.count - 1)
            if stream.position != state.pageStarts[known] { stream.seek(to: state.pageStarts[known]) }
            var current = known
            var exhausted = false
            var ignored: [UInt8] = []
            while current < index {
                _ = try stream.takeRows(pageSize, format: format, collect: false, into: &ignored)
                exhausted = try !stream.skipBlankLines(format: format)
                current += 1
                if current == state.pageStarts.count { state.pageStarts.append(stream.position) }
                if exhausted { break }
            }
            let first = stream.position
            var body = state.header
            var more = false
            if current == index, !exhausted {
                // Room for typical rows, but never more than the rest of the file.
                let remaining = max(0, stream.identity.size - first.offset)
                body.reserveCapacity(body.count + min(remaining, pageSize.multipliedReportingOverflow(by: 512).partialValue))
                _ = try stream.takeRows(pageSize, format: format, collect: true, into: &body)
                more = try stream.skipBlankLines(format: format)
                if index + 1 == state.pageStarts.count { state.pageStarts.append(stream.position) }
            }
            if !more {
                // Done with the file: give the descriptor back now rather than when the scope is dropped.
                state.stream = nil
            }
            return HTTPResponse(
                url: URL(fileURLWithPath: path), status: 200,
                headers: [
                    "Content-Type": format == .csv ? "text/csv; charset=utf-8; header=present" : "application/x-ndjson",
                    RecordsFile.firstLineHeader: String(first.line),
                    RecordsFile.hasNextHeader: more ? "true" : "false",
                ],
                body: body)
        }
    }

    /// The open stream, opening the file (and reading a CSV header) when needed.
    private func open(_ state: inout State) throws(StoreSyncError) -> RowStream {
        if let stream = state.stream { return stream }
        let stream = try RowStream(path: path)
        if stream.identity != state.identity {
            // First open, or the file was replaced since: nothing cached holds.
            state.identity = stream.identity
            state.header = []
            state.pageStarts = []
            try stream.skipByteOrderMark()
            // Page 0 starts at the first row, like every other page, so its first-line header is a row's line.
            _ = try stream.skipBlankLines(format: format)
            if format == .csv {
                var header: [UInt8] = []
                _ = try stream.takeRows(1, format: format, collect: true, into: &header)
                if !header.isEmpty, header.last != 0x0A { header.append(0x0A) }
                state.header = header
            }
            state.pageStarts = [stream.position]
        }
        state.stream = stream
        return stream
    }
}

/// A place in a file: byte offset and the 1-based line it is on.
struct FilePosition: Equatable {
    var offset: Int
    var line: Int
}

/// What tells one file from another at the same path.
struct FileIdentity: Equatable {
    var device: UInt64
    var inode: UInt64
    var size: Int
    var modifiedSeconds: Int
    var modifiedNanoseconds: Int
}

/// A buffered forward reader over a file descriptor that splits rows.
/// Not thread-safe; ``RecordsFileReader`` serialises access.
final class RowStream {
    static let blockSize = 1 << 20

    let path: String
    let identity: FileIdentity
    private let fd: Int32
    private var block: [UInt8]
    /// Valid bytes in `block`.
    private var filled = 0
    /// Next unread byte in `block`.
    private var pos = 0
    /// File offset of `block[0]`.
    private var blockStart = 0
    private var line = 1
    private var atEnd = false

    init(path: String) throws(StoreSyncError) {
        self.path = path
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw .inputUnreadable(path: path, reason: "cannot open the records file: \(Self.lastError())") }
        var info = stat()
        guard fstat(fd, &info) == 0 else {
            let reason = Self.lastError()
            close(fd)
            throw .inputUnreadable(path: path, reason: "cannot read the records file's attributes: \(reason)")
        }
        guard info.st_mode & mode_t(S_IFMT) == mode_t(S_IFREG) else {
            close(fd)
            throw .inputUnreadable(path: path, reason: "not a regular file")
        }
        #if canImport(Darwin)
        let modified = info.st_mtimespec
        #else
        let modified = info.st_mtim
        #endif
        identity = FileIdentity(device: UInt64(info.st_dev), inode: UInt64(info.st_ino), size: Int(info.st_size),
                                modifiedSeconds: Int(modified.tv_sec), modifiedNanoseconds: Int(modified.tv_nsec))
        self.fd = fd
        block = [UInt8](repeating: 0, count: Self.blockSize)
    }

    deinit { close(fd) }

    private static func lastError() -> String { String(cString: strerror(errno)) }

    var position: FilePosition { FilePosition(offset: blockStart + pos, line: line) }

    func seek(to position: FilePosition) {
        blockStart = position.offset
        filled = 0
        pos = 0
        line = position.line
        atEnd = false
    }

    /// Replaces the (fully consumed) block with the next one; false at the end of the file.
    private func refill() throws(StoreSyncError) -> Bool {
        blockStart += filled
        filled = 0
        pos = 0
        if atEnd { return false }
        while true {
            let n = block.withUnsafeMutableBytes { pread(fd, $0.baseAddress, Self.blockSize, off_t(blockStart)) }
            if n < 0 {
                if errno == EINTR { continue }
                throw .inputUnreadable(path: path, reason: "read failed at byte \(blockStart) (line \(line)): \(Self.lastError())")
            }
            if n == 0 {
                atEnd = true
                return false
            }
            filled = n
            return true
        }
    }

    /// Skips a UTF-8 byte order mark at the start of the file.
    func skipByteOrderMark() throws(StoreSyncError) {
        if pos == filled, !(try refill()) { return }
        if filled - pos >= 3, block[pos] == 0xEF, block[pos + 1] == 0xBB, block[pos + 2] == 0xBF { pos += 3 }
    }

    /// Consumes blank lines (JSON Lines: only spaces, tabs and CRs; CSV: only
    /// CRs) and returns whether anything is left after them. A line is only
    /// consumed once its line feed shows it is blank, so no row loses bytes.
    func skipBlankLines(format: RecordsFileFormat) throws(StoreSyncError) -> Bool {
        while true {
            if pos == filled, !(try refill()) { return false }
            var i = pos
            while i < filled, block[i] == 0x0D || (format == .jsonLines && (block[i] == 0x20 || block[i] == 0x09)) { i += 1 }
            // Blank bytes running into the next block: let the row reader decide (a
            // page that finds only blanks has no rows and is the last).
            guard i < filled else { return true }
            guard block[i] == 0x0A else { return true }
            pos = i + 1
            line += 1
        }
    }

    /// Consumes up to `count` rows (appending their bytes to `body` when
    /// `collect`); returns how many there were. Starts and ends on row boundaries.
    func takeRows(_ count: Int, format: RecordsFileFormat, collect: Bool, into body: inout [UInt8]) throws(StoreSyncError) -> Int {
        switch format {
        case .jsonLines: try takeLines(count, collect: collect, into: &body)
        case .csv: try takeCSVRecords(count, collect: collect, into: &body)
        }
    }

    private func takeLines(_ count: Int, collect: Bool, into body: inout [UInt8]) throws(StoreSyncError) -> Int {
        var rows = 0
        var lineHasContent = false
        var segment = pos
        while rows < count {
            if pos == filled {
                if collect { body.append(contentsOf: block[segment..<filled]) }
                guard try refill() else {
                    // A last line without a line feed is still a row.
                    if lineHasContent { rows += 1 }
                    return rows
                }
                segment = 0
            }
            let (newline, content): (Int?, Bool) = block.withUnsafeBufferPointer { buffer in
                let newline = ByteScan.newline(in: UnsafeBufferPointer(rebasing: buffer[..<filled]), from: pos)
                let content = lineHasContent || !ByteScan.isBlank(buffer, pos, newline ?? filled)
                return (newline, content)
            }
            lineHasContent = content
            guard let newline else {
                pos = filled
                continue
            }
            pos = newline + 1
            line += 1
            if lineHasContent { rows += 1 }
            lineHasContent = false
        }
        if collect { body.append(contentsOf: block[segment..<pos]) }
        return rows
    }

    /// Record boundaries by ``CSVBoundaryScan``, carried across block refills.
    private func takeCSVRecords(_ count: Int, collect: Bool, into body: inout [UInt8]) throws(StoreSyncError) -> Int {
        var scan = CSVBoundaryScan()
        var segment = pos
        while scan.rows < count {
            if pos == filled {
                if collect { body.append(contentsOf: block[segment..<filled]) }
                guard try refill() else {
                    if scan.rowHasBytes { scan.rows += 1 }
                    return scan.rows
                }
                segment = 0
            }
            let (end, lines) = block.withUnsafeBufferPointer { buffer in
                scan.advance(over: UnsafeBufferPointer(rebasing: buffer[..<filled]), from: pos, untilRows: count)
            }
            pos = end
            line += lines
        }
        if collect { body.append(contentsOf: block[segment..<pos]) }
        return scan.rows
    }
}
