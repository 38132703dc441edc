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
/// Before it serves anything from a file it has not seen, it reads the
/// file once through, block by block, checking every byte against the
/// file's encoding: a refused byte fails page 0, so nothing from the file is
/// stored (and, the scope failing, nothing is removed). Pages are then
/// transcoded to UTF-8 as they are served; the CSV delimiter and quote are
/// ASCII, so rows are cut on the file's own bytes.
///
/// Thread-safe: the state sits behind a mutex (one scope reads its pages in
/// order anyway). Files are read with `pread` rather than memory-mapped, so a
/// file truncated while it is read ends early instead of killing the process
/// with SIGBUS.
final class RecordsFileReader: Sendable {
    let path: String
    let format: RecordsFileFormat
    let pageSize: Int
    let encoding: RecordsFileEncoding
    /// The file's URL with what its pages' records depend on besides their bytes.
    let url: URL
    /// Where CSV fields end; the error when the settings name no usable delimiter or quote.
    let dialect: Result<CSVDialect, StoreSyncError>
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

    init(settings: RecordsFileSettings, format: RecordsFileFormat, pageSize: Int) {
        path = settings.path
        self.format = format
        self.pageSize = max(1, pageSize)
        encoding = settings.encoding
        url = RecordsFile.pageURL(settings)
        dialect = format == .csv ? Result { () throws(StoreSyncError) in try CSVDialect(settings) } : .success(.standard)
    }

    /// Page `index`: its rows' bytes (CSV: preceded by the header row), with
    /// the first row's line number and whether rows follow in headers.
    func page(_ index: Int) throws(StoreSyncError) -> HTTPResponse {
        guard index >= 0 else { throw .inputUnreadable(path: path, reason: "page \(index) does not exist") }
        let dialect = try dialect.get()
        return try state.withLock { state throws(StoreSyncError) -> HTTPResponse in
            let stream = try open(&state, dialect: dialect)
            // Reach the page: from where the stream stands when that is its start
            // (the sequential case), else from the nearest known page start.
            let known = min(index, state.pageStarts.count - 1)
            if stream.position != state.pageStarts[known] { stream.seek(to: state.pageStarts[known]) }
            var current = known
            var exhausted = false
            var ignored: [UInt8] = []
            while current < index {
                _ = try stream.takeRows(pageSize, format: format, dialect: dialect, collect: false, into: &ignored)
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
                let expected = min(remaining, pageSize.multipliedReportingOverflow(by: 512).partialValue)
                if encoding == .utf8 {
                    body.reserveCapacity(body.count + expected)
                    _ = try stream.takeRows(pageSize, format: format, dialect: dialect, collect: true, into: &body)
                } else {
                    var raw: [UInt8] = []
                    raw.reserveCapacity(expected)
                    _ = try stream.takeRows(pageSize, format: format, dialect: dialect, collect: true, into: &raw)
                    try transcode(raw, startingOnLine: first.line, into: &body)
                }
                more = try stream.skipBlankLines(format: format)
                if index + 1 == state.pageStarts.count { state.pageStarts.append(stream.position) }
            }
            if !more {
                // Done with the file: give the descriptor back now rather than when the scope is dropped.
                state.stream = nil
            }
            return HTTPResponse(
                url: url, status: 200,
                headers: [
                    "Content-Type": format == .csv ? "text/csv; charset=utf-8; header=present" : "application/x-ndjson",
                    RecordsFile.firstLineHeader: String(first.line),
                    RecordsFile.hasNextHeader: more ? "true" : "false",
                ],
                body: body)
        }
    }

    /// The open stream, opening the file (checking its encoding and reading
    /// a CSV header) when needed.
    private func open(_ state: inout State, dialect: CSVDialect) throws(StoreSyncError) -> RowStream {
        if let stream = state.stream { return stream }
        let stream = try RowStream(path: path)
        if stream.identity != state.identity {
            // First open, or the file was replaced since: nothing cached holds.
            state.identity = nil
            state.header = []
            state.pageStarts = []
            try stream.checkEncoding(encoding)
            try stream.skipByteOrderMark()
            // Page 0 starts at the first row, like every other page, so its first-line header is a row's line.
            _ = try stream.skipBlankLines(format: format)
            if format == .csv {
                let headerLine = stream.position.line
                var header: [UInt8] = []
                _ = try stream.takeRows(1, format: format, dialect: dialect, collect: true, into: &header)
                if !header.isEmpty, header.last != 0x0A { header.append(0x0A) }
                if encoding != .utf8 {
                    var utf8: [UInt8] = []
                    try transcode(header, startingOnLine: headerLine, into: &utf8)
                    header = utf8
                }
                state.header = header
            }
            state.pageStarts = [stream.position]
            // Only now: a file that failed its check is checked again when asked again.
            state.identity = stream.identity
        }
        state.stream = stream
        return stream
    }

    /// Appends `raw` (whole lines of the file in a single-byte encoding, the
    /// first on line `firstLine`) to `body` as UTF-8. The whole file passed
    /// its check when it was opened, so a refused byte here means the file
    /// changed in place since; it fails this page.
    private func transcode(_ raw: [UInt8], startingOnLine firstLine: Int, into body: inout [UInt8]) throws(StoreSyncError) {
        let refused = raw.withUnsafeBufferPointer { SingleByteTranscoder.append($0, from: encoding, to: &body) }
        guard let refused else { return }
        var counter = LineColumnCounter(encoding, line: firstLine)
        raw.withUnsafeBufferPointer { counter.feed(UnsafeBufferPointer(rebasing: $0[..<refused])) }
        let problem = EncodingProblem(line: counter.line, column: counter.column, encoding: encoding,
                                      bytes: Array(raw[refused..<min(raw.count, refused + 4)]),
                                      before: Array(raw[max(0, refused - 3)..<refused]))
        throw problem.error(path: path, wholeFile: false)
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

    /// Reads the file from its first byte to its last, a block at a time,
    /// and throws at the first byte `encoding` refuses, naming its line and
    /// column; leaves the stream at the start of the file.
    func checkEncoding(_ encoding: RecordsFileEncoding) throws(StoreSyncError) {
        let start = FilePosition(offset: 0, line: 1)
        seek(to: start)
        defer { seek(to: start) }
        guard try refill() else { return }
        let head = Array(block[0..<min(filled, 3)])
        if head.starts(with: [0xFF, 0xFE]) || head.starts(with: [0xFE, 0xFF]) {
            throw StoreSyncError(.malformedPage, "malformed row: line 1, column 1: the file starts with a UTF-16 byte order mark; "
                + "records files are UTF-8, windows-1252 or iso-8859-1", place: .file(path: path),
                remedy: "Save the file as UTF-8 (in Excel: CSV UTF-8); nothing from this file was stored and nothing was removed")
        }
        if encoding != .utf8, head == [0xEF, 0xBB, 0xBF] {
            throw StoreSyncError(.malformedPage, "malformed row: line 1, column 1: the file starts with a UTF-8 byte order mark, "
                + "so it is UTF-8, not \(encoding.rawValue)", place: .file(path: path),
                remedy: "Remove `encoding: \(encoding.rawValue)` from this source (UTF-8 is the default); "
                    + "nothing from this file was stored and nothing was removed")
        }
        var check = EncodingCheck(encoding)
        var refused: Int?
        while true {
            refused = block.withUnsafeBufferPointer { check.feed(UnsafeBufferPointer(rebasing: $0[..<filled]), at: blockStart) }
            pos = filled
            if refused != nil { break }
            guard try refill() else { break }
        }
        guard let offset = refused ?? check.finish() else { return }
        throw try encodingProblem(at: offset, encoding).error(path: path, wholeFile: true)
    }

    /// Where the byte at `offset` stands (line, column in characters) and the bytes around it.
    private func encodingProblem(at offset: Int, _ encoding: RecordsFileEncoding) throws(StoreSyncError) -> EncodingProblem {
        seek(to: FilePosition(offset: 0, line: 1))
        var counter = LineColumnCounter(encoding)
        var skipBOM = encoding == .utf8
        while blockStart + filled < offset, try refill() {
            let end = min(filled, offset - blockStart)
            block.withUnsafeBufferPointer { buffer in
                var from = 0
                // A byte order mark is not a character of line 1.
                if skipBOM, end >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { from = 3 }
                counter.feed(UnsafeBufferPointer(rebasing: buffer[from..<end]))
            }
            skipBOM = false
        }
        func bytes(_ range: Range<Int>) -> [UInt8] {
            var out = [UInt8](repeating: 0, count: range.count)
            let n = out.withUnsafeMutableBytes { pread(fd, $0.baseAddress, range.count, off_t(range.lowerBound)) }
            return Array(out.prefix(max(0, n)))
        }
        return EncodingProblem(line: counter.line, column: counter.column, encoding: encoding,
                               bytes: bytes(offset..<(offset + 4)), before: bytes(max(0, offset - 3)..<offset))
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
    func takeRows(_ count: Int, format: RecordsFileFormat, dialect: CSVDialect = .standard, collect: Bool,
                  into body: inout [UInt8]) throws(StoreSyncError) -> Int {
        switch format {
        case .jsonLines: try takeLines(count, collect: collect, into: &body)
        case .csv: try takeCSVRecords(count, dialect: dialect, collect: collect, into: &body)
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
    private func takeCSVRecords(_ count: Int, dialect: CSVDialect, collect: Bool, into body: inout [UInt8]) throws(StoreSyncError) -> Int {
        var scan = CSVBoundaryScan(dialect: dialect)
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
