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

/// The format of a records file.
public enum RecordsFileFormat: String, Sendable, CaseIterable {
    /// One JSON object per line.
    case jsonLines = "jsonl"
    /// RFC 4180 CSV with a header row.
    case csv
}

/// A local JSON Lines or CSV file diffed like any API: one scope, read in pages.
public struct RecordsFileSettings: Sendable, Equatable {
    /// Absolute after loading (relative paths resolve against the job file).
    public var path: String
    /// nil = from the file name's extension.
    public var format: RecordsFileFormat?
    /// The field that identifies a row.
    public var keyField: String
    public var entity: EntityKind
    /// Rows per page (one transaction and checkpoint each).
    public var pageSize: Int

    public init(path: String, format: RecordsFileFormat? = nil, keyField: String = "id", entity: EntityKind = .record,
                pageSize: Int = 10_000) {
        self.path = path
        self.format = format
        self.keyField = keyField
        self.entity = entity
        self.pageSize = pageSize
    }
}

extension RecordsFileSettings: SourceKind {
    public static let name = "records-file"
    public static let settingKeys = ["path", "format", "keyField", "entity", "pageSize"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        let file = reader.string(fields, "path", path: path, required: true) ?? ""
        var records = RecordsFileSettings(path: reader.resolve(file))
        if reader.value(fields, "format") != nil {
            if let format: RecordsFileFormat = reader.choice(fields, "format", path: path, what: "records format") { records.format = format }
        } else if !file.isEmpty {
            switch (file as NSString).pathExtension.lowercased() {
            case "jsonl", "ndjson": records.format = .jsonLines
            case "csv": records.format = .csv
            default:
                reader.issue(reader.value(fields, "path"), reader.join(path, "path"),
                             "cannot tell the format from '\(file)': name it .jsonl or .csv, or set format: jsonl|csv")
            }
        }
        if let key = reader.string(fields, "keyField", path: path) { records.keyField = key }
        if let entities = reader.entityKinds(fields, "entity", path: path), let entity = entities.first { records.entity = entity }
        if let n = reader.int(fields, "pageSize", path: path, range: 1...1_000_000) { records.pageSize = n }
        return records
    }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        RecordsFile.scopes(settings: self)
    }
}

/// A local JSON Lines or CSV file diffed like an API (`records-file`
/// sources): one scope `file:<basename>` whose page `i` is rows
/// `[i·pageSize, (i+1)·pageSize)`, read from disk and handed to the crawl as
/// an HTTP-like response (status 200, the file URL, the rows' bytes), so the
/// usual decode/apply/checkpoint path serves it and a killed run resumes at
/// its last committed page.
///
/// Rows are non-blank lines (JSON Lines) or RFC 4180 records after the header
/// (CSV); blank lines are not rows, so they do not shift page boundaries.
/// Every row becomes a record of `settings.entity` keyed by its
/// `settings.keyField` value as text; a row without one is skipped (with its
/// line number), a malformed row fails the page.
///
/// Values: JSON Lines rows keep their JSON types. CSV values stay text
/// (empty fields are empty strings): CSV has no types, and guessing them
/// would turn `00501` into `501` or a product code into a float. The values
/// are the user's own data, so nothing is normalised away (no tracking
/// parameters stripped, unlike API responses).
public enum RecordsFile {
    /// The scope of a records file. Nothing is read until the first page is
    /// asked for, so a missing file fails that page (scope incomplete), not
    /// the building of the job.
    static func scopes(settings: RecordsFileSettings) -> [CrawlScope] {
        let pageSize = max(1, settings.pageSize)
        let reader = RecordsFileReader(path: settings.path, format: format(of: settings), pageSize: pageSize)
        let name = URL(fileURLWithPath: settings.path).lastPathComponent
        var scope = CrawlScope(
            id: "file:\(name)",
            // Pages are counted from 0 and end when the reader says so, not when a page is short.
            pagination: .pageNumber(firstPage: 0, pageSize: pageSize, maxPages: Int.max),
            origin: .local { index throws(StoreSyncError) in try reader.page(index) },
            decode: { response throws(StoreSyncError) in try decodePage(response, settings: settings) }
        )
        if format(of: settings) == .jsonLines {
            scope.decodeRemembering = { response, memory throws(StoreSyncError) in
                try decodePage(response, settings: settings, memory: memory)
            }
        }
        return [scope]
    }

    /// The file's format: the setting, else its extension (`.csv`, otherwise JSON Lines).
    public static func format(of settings: RecordsFileSettings) -> RecordsFileFormat {
        if let format = settings.format { return format }
        return URL(fileURLWithPath: settings.path).pathExtension.lowercased() == "csv" ? .csv : .jsonLines
    }

    /// Response header: the file line number of the page's first row.
    static let firstLineHeader = "x-records-first-line"
    /// Response header: whether rows follow this page.
    static let hasNextHeader = "x-records-has-next"

    /// Decodes one page as ``RecordsFileReader`` hands it over: JSON Lines,
    /// or CSV whose first row is the file's header.
    ///
    /// - Throws: ``StoreSyncError/malformedFile(path:line:column:reason:)`` naming the file
    ///   path and the line (and column, for JSON) of the first malformed row.
    public static func decodePage(_ response: HTTPResponse, settings: RecordsFileSettings,
                                  memory: (any RowMemory)? = nil) throws(StoreSyncError) -> DecodedPage<Record> {
        let firstLine = response.header(firstLineHeader).flatMap { Int($0) }
        let hasNext = response.header(hasNextHeader).map { $0 == "true" }
        var page: DecodedPage<Record>
        switch format(of: settings) {
        case .jsonLines:
            page = try JSONLinesDecoder.decode(response.body, firstLine: firstLine ?? 1, settings: settings, memory: memory)
        case .csv:
            page = try CSVDecoder.decode(response.body, firstLine: firstLine, settings: settings)
        }
        page.hasNext = hasNext
        return page
    }

    /// A row's key: strings as they are, numbers without a needless `.0`
    /// (`1e3` and `1000.0` are key `1000`, as an integer id would be); other
    /// types and empty strings are no key.
    static func keyText(_ value: JSONValue?) -> String? {
        switch value {
        case .string(let s)? where !s.isEmpty: s
        case .int(let i)?: String(i)
        case .double(let d)? where d.isFinite: CanonicalJSON.numberText(d)
        default: nil
        }
    }

    static func record(_ fields: [String: JSONValue], line: Int, settings: RecordsFileSettings, rawHash: ContentHash? = nil,
                       into records: inout [Record], skipped: inout [String]) {
        guard let key = keyText(fields[settings.keyField]) else {
            let why = fields[settings.keyField] == nil
                ? "has no '\(settings.keyField)'"
                : "has no usable '\(settings.keyField)' (not a non-empty string or number)"
            skipped.append("\(settings.path) line \(line): \(why)")
            return
        }
        records.append(Record(entity: settings.entity, key: key, fields: fields, rawHash: rawHash))
    }
}

// MARK: - JSON Lines

enum JSONLinesDecoder {
    /// A non-blank line of the page: its byte range and file line number.
    private struct Line {
        var start: Int
        var end: Int
        var number: Int
    }

    /// Seeds the hash of a row's raw bytes. Bump it when decoding a row
    /// changes (canonical form, key rules), so rows stored by an older decoder
    /// are decoded again rather than trusted by their bytes.
    static let rawHashSeed: UInt64 = 1

    static func decode(_ body: [UInt8], firstLine: Int, settings: RecordsFileSettings,
                       memory: (any RowMemory)?) throws(StoreSyncError) -> DecodedPage<Record> {
        try body.withUnsafeBufferPointer { buffer in
            // Finding the lines is a cheap sequential scan; parsing and hashing them
            // is the expensive part, and rows are independent, so that runs on every core.
            var lines: [Line] = []
            var start = 0
            var number = firstLine
            // A BOM only ever stands at the start of a file; tolerate it when a page is decoded on its own.
            if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { start = 3 }
            while start < buffer.count {
                let end = ByteScan.newline(in: buffer, from: start) ?? buffer.count
                if !ByteScan.isBlank(buffer, start, end) { lines.append(Line(start: start, end: end, number: number)) }
                number += 1
                start = end + 1
            }
            let chunks = ParallelChunks.map(lines.count) { range in
                var chunk = RowChunk()
                chunk.records.reserveCapacity(range.count)
                // Rows with the same bytes as the stored record are unchanged: nothing
                // to decode. Their keys and hashes are asked about in one batch.
                let hashes = lines[range].map { line in
                    ContentHash(rawValue: XXH64.hash(UnsafeBufferPointer(rebasing: buffer[line.start..<line.end]), seed: rawHashSeed))
                }
                var held = [Bool](repeating: false, count: range.count)
                if let memory {
                    var asked: [(identity: RecordIdentity, rawHash: ContentHash)] = []
                    var positions: [Int] = []
                    asked.reserveCapacity(range.count)
                    positions.reserveCapacity(range.count)
                    for (position, line) in lines[range].enumerated() {
                        let row = UnsafeBufferPointer(rebasing: buffer[line.start..<line.end])
                        guard let key = RecordsFile.keyText(JSONParser.member(settings.keyField, ofObjectIn: row)) else { continue }
                        asked.append((RecordIdentity(entity: settings.entity, key: key), hashes[position]))
                        positions.append(position)
                    }
                    for (answer, (position, row)) in zip(memory.holdEach(asked), zip(positions, asked)) where answer {
                        held[position] = true
                        chunk.unread.append(row)
                    }
                }
                for (position, line) in lines[range].enumerated() {
                    if held[position] { continue }
                    let row = UnsafeBufferPointer(rebasing: buffer[line.start..<line.end])
                    let rawHash = hashes[position]
                    let value: JSONValue
                    do throws(JSONSyntaxError) {
                        value = try JSONParser.parse(row)
                    } catch {
                        chunk.error = .malformedFile(path: settings.path, line: nil,
                                                     reason: "line \(line.number), column \(error.column): \(error.message)")
                        break
                    }
                    guard case .object(let fields) = value else {
                        chunk.error = .malformedFile(path: settings.path, line: nil,
                                                     reason: "line \(line.number): expected a JSON object, found \(kind(of: value))")
                        break
                    }
                    RecordsFile.record(fields, line: line.number, settings: settings, rawHash: rawHash,
                                       into: &chunk.records, skipped: &chunk.skipped)
                }
                return chunk
            }
            return RowChunk.merge(chunks, rowCount: lines.count)
        }.get()
    }

    static func kind(of value: JSONValue) -> String {
        switch value {
        case .array: "an array"
        case .string: "a string"
        case .int, .double: "a number"
        case .bool: "a boolean"
        case .null: "null"
        case .object: "an object"
        }
    }
}

// MARK: - CSV

/// RFC 4180 with the leniency real files need: LF or CRLF line ends, a BOM,
/// a quote inside an unquoted field taken literally (`12" vinyl`). Blank lines
/// are not rows. A row must have as many fields as the header: a shorter or
/// longer row is almost always a broken quote, and taking it would shift
/// values into the wrong columns.
enum CSVDecoder {
    static func decode(_ body: [UInt8], firstLine: Int?, settings: RecordsFileSettings) throws(StoreSyncError) -> DecodedPage<Record> {
        try body.withUnsafeBufferPointer { buffer in
            Result { () throws(StoreSyncError) in try decode(buffer, firstLine: firstLine, settings: settings) }
        }.get()
    }

    private static func decode(_ buffer: UnsafeBufferPointer<UInt8>, firstLine: Int?,
                               settings: RecordsFileSettings) throws(StoreSyncError) -> DecodedPage<Record> {
        var parser = CSVRowParser(buffer: buffer, path: settings.path)
        if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { parser.index = 3 }
        parser.skipBlankLines()
        let headerLine = parser.line
        guard let header = try parser.row() else { return DecodedPage(items: [], rowCount: 0) }
        func headerError(_ problem: String) -> StoreSyncError {
            .malformedFile(path: settings.path, line: nil, reason: "line \(headerLine): \(problem)")
        }
        guard header.contains(settings.keyField) else {
            throw headerError("the header has no '\(settings.keyField)' column (the key field); "
                + "it has \(header.joined(separator: ", "))")
        }
        var names = Set<String>()
        for (n, name) in header.enumerated() {
            guard !name.isEmpty else { throw headerError("header column \(n + 1) has no name") }
            guard names.insert(name).inserted else { throw headerError("header names '\(name)' twice") }
        }
        // Pages after the first carry the header again; their rows' lines come from the reader.
        if let firstLine { parser.line = firstLine }
        // Splitting fields follows quotes, so it stays sequential; turning rows
        // into hashed records is independent per row and runs on every core.
        var parsed: [(line: Int, values: [String])] = []
        while true {
            parser.skipBlankLines()
            let line = parser.line
            guard let values = try parser.row() else { break }
            guard values.count == header.count else {
                throw .malformedFile(path: settings.path, line: nil, reason:
                    "line \(line): \(values.count) field\(values.count == 1 ? "" : "s"), the header has \(header.count)")
            }
            parsed.append((line, values))
        }
        let chunks = ParallelChunks.map(parsed.count) { range in
            var chunk = RowChunk()
            chunk.records.reserveCapacity(range.count)
            for (line, values) in parsed[range] {
                var fields: [String: JSONValue] = [:]
                fields.reserveCapacity(header.count)
                for (name, value) in zip(header, values) { fields[name] = .string(value) }
                RecordsFile.record(fields, line: line, settings: settings, into: &chunk.records, skipped: &chunk.skipped)
            }
            return chunk
        }
        return try RowChunk.merge(chunks, rowCount: parsed.count).get()
    }
}

/// Reads CSV records one at a time from a buffer, counting physical lines.
struct CSVRowParser {
    let buffer: UnsafeBufferPointer<UInt8>
    let path: String
    var index = 0
    /// The 1-based line `index` is on.
    var line = 1

    init(buffer: UnsafeBufferPointer<UInt8>, path: String) {
        self.buffer = buffer
        self.path = path
    }

    private static let quote = UInt8(ascii: "\""), comma = UInt8(ascii: ","), lf: UInt8 = 0x0A, cr: UInt8 = 0x0D

    /// Skips lines holding nothing but CR; they are not rows.
    mutating func skipBlankLines() {
        var i = index
        while i < buffer.count {
            switch buffer[i] {
            case Self.cr: i += 1
            case Self.lf: i += 1; line += 1; index = i
            default: return
            }
        }
        index = i
    }

    /// The next record's fields, or nil at the end of the buffer.
    mutating func row() throws(StoreSyncError) -> [String]? {
        guard index < buffer.count else { return nil }
        var fields: [String] = []
        while true {
            if index < buffer.count, buffer[index] == Self.quote {
                fields.append(try quotedField())
            } else {
                let start = index
                while index < buffer.count, buffer[index] != Self.comma, buffer[index] != Self.lf { index += 1 }
                var end = index
                // The CR of a CRLF belongs to the line end, not to the last field.
                if end > start, buffer[end - 1] == Self.cr, index == buffer.count || buffer[index] == Self.lf { end -= 1 }
                fields.append(String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<end]), as: UTF8.self))
            }
            if index < buffer.count, buffer[index] == Self.comma {
                index += 1
                continue
            }
            if index < buffer.count, buffer[index] == Self.lf {
                index += 1
                line += 1
            }
            return fields
        }
    }

    /// A `"…"` field, `""` being one quote; leaves `index` on the delimiter.
    private mutating func quotedField() throws(StoreSyncError) -> String {
        let openedOn = line
        index += 1
        let start = index
        var escaped: [UInt8]?
        while true {
            guard index < buffer.count else {
                throw .malformedFile(path: path, line: nil, reason: "line \(openedOn): quoted field not closed before the end of the file")
            }
            let byte = buffer[index]
            if byte == Self.quote {
                if index + 1 < buffer.count, buffer[index + 1] == Self.quote {
                    // Copy only fields that hold an escape; the rest are sliced straight out.
                    if escaped == nil { escaped = Array(buffer[start..<index]) }
                    escaped!.append(Self.quote)
                    index += 2
                    continue
                }
                let value = escaped.map { String(decoding: $0, as: UTF8.self) }
                    ?? String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
                index += 1
                if index < buffer.count, buffer[index] == Self.cr, index + 1 == buffer.count || buffer[index + 1] == Self.lf {
                    index += 1
                }
                guard index == buffer.count || buffer[index] == Self.comma || buffer[index] == Self.lf else {
                    let byte = buffer[index]
                    let shown = (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
                    throw .malformedFile(path: path, line: nil, reason: "line \(line): unexpected \(shown) after a closing quote "
                        + "(quotes inside a quoted field are written \"\")")
                }
                return value
            }
            if byte == Self.lf { line += 1 }
            escaped?.append(byte)
            index += 1
        }
    }
}

// MARK: - Decoding on every core

/// The records decoded from a contiguous run of rows, or where it failed.
struct RowChunk {
    var records: [Record] = []
    var skipped: [String] = []
    /// Rows recognised by their bytes as the stored record, not decoded.
    var unread: [(identity: RecordIdentity, rawHash: ContentHash)] = []
    /// The first malformed row of the chunk; the chunk stops there.
    var error: StoreSyncError?

    /// Joins chunks in row order; the first error in row order wins, so the
    /// error reported does not depend on which core finished first.
    static func merge(_ chunks: [RowChunk], rowCount: Int) -> Result<DecodedPage<Record>, StoreSyncError> {
        var page = DecodedPage<Record>(items: [], rowCount: rowCount)
        page.items.reserveCapacity(chunks.reduce(0) { $0 + $1.records.count })
        for chunk in chunks {
            if let error = chunk.error { return .failure(error) }
            page.items += chunk.records
            page.skipped += chunk.skipped
            page.unread += chunk.unread
        }
        return .success(page)
    }
}


// MARK: - Reading pages

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

    private enum CSVState { case fieldStart, unquoted, quoted, quoteInQuoted }

    /// The same record boundaries ``CSVRowParser`` finds: a line feed ends a
    /// record unless it is inside a quoted field, and a quote only opens a
    /// quoted field at the start of a field.
    private func takeCSVRecords(_ count: Int, collect: Bool, into body: inout [UInt8]) throws(StoreSyncError) -> Int {
        var rows = 0
        var state = CSVState.fieldStart
        var rowHasBytes = false
        var segment = pos
        while rows < count {
            if pos == filled {
                if collect { body.append(contentsOf: block[segment..<filled]) }
                guard try refill() else {
                    if rowHasBytes { rows += 1 }
                    return rows
                }
                segment = 0
            }
            let (end, endedRows, endState, endHasBytes, lines) = block.withUnsafeBufferPointer { buffer in
                var i = pos
                var state = state
                var rowHasBytes = rowHasBytes
                var rows = rows
                var lines = 0
                scan: while i < filled {
                    let byte = buffer[i]
                    i += 1
                    switch state {
                    case .fieldStart, .unquoted, .quoteInQuoted:
                        switch byte {
                        case 0x0A:
                            lines += 1
                            if rowHasBytes { rows += 1 }
                            rowHasBytes = false
                            state = .fieldStart
                            if rows == count { break scan }
                        case 0x0D:
                            break
                        case UInt8(ascii: ","):
                            rowHasBytes = true
                            state = .fieldStart
                        case UInt8(ascii: "\""):
                            rowHasBytes = true
                            state = state == .fieldStart ? .quoted : (state == .quoteInQuoted ? .quoted : .unquoted)
                        default:
                            rowHasBytes = true
                            state = .unquoted
                        }
                    case .quoted:
                        if byte == UInt8(ascii: "\"") { state = .quoteInQuoted } else if byte == 0x0A { lines += 1 }
                    }
                }
                return (i, rows, state, rowHasBytes, lines)
            }
            pos = end
            rows = endedRows
            state = endState
            rowHasBytes = endHasBytes
            line += lines
        }
        if collect { body.append(contentsOf: block[segment..<pos]) }
        return rows
    }
}
