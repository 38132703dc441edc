import Catalog
import Crawl
import Foundation

// The CSV grammar of records files, read two ways: ``CSVBoundaryScan`` finds
// where records end in a file streamed block by block (to cut pages without
// building fields), ``CSVRowParser`` splits the fields of a page held whole.
// Both follow the rules below, and RecordsFileTests cut the same files into
// pages of every size to hold them to one another.


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

/// Where CSV records end, fed a buffer at a time: a line feed ends a record
/// unless it is inside a quoted field, a quote opens a quoted field only at
/// the start of a field, and a line holding only CR is not a record.
struct CSVBoundaryScan {
    enum State { case fieldStart, unquoted, quoted, quoteInQuoted }

    var state = State.fieldStart
    /// Records ended so far.
    var rows = 0
    /// The current record has bytes (a blank line is not a record).
    var rowHasBytes = false

    /// Scans `buffer` from `start` until `untilRows` records have ended or the
    /// buffer does; returns where it stopped and how many line feeds it passed.
    mutating func advance(over buffer: UnsafeBufferPointer<UInt8>, from start: Int, untilRows count: Int) -> (end: Int, lines: Int) {
        var i = start
        var lines = 0
        scan: while i < buffer.count {
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
                    state = state == .fieldStart || state == .quoteInQuoted ? .quoted : .unquoted
                default:
                    rowHasBytes = true
                    state = .unquoted
                }
            case .quoted:
                if byte == UInt8(ascii: "\"") { state = .quoteInQuoted } else if byte == 0x0A { lines += 1 }
            }
        }
        return (i, lines)
    }
}
