import Catalog
import Crawl
import Foundation

// The CSV grammar of records files, read two ways: ``CSVBoundaryScan`` finds
// where records end in a file streamed block by block (to cut pages without
// building fields), ``CSVRowParser`` splits the fields of a page held whole.
// Both follow the rules below, and RecordsFileTests cut the same files into
// pages of every size to hold them to one another.


/// How a CSV file separates and quotes its fields. Both are ASCII, which
/// means the same bytes in every supported encoding, so rows and fields are
/// found in the file's own bytes before it is transcoded.
struct CSVDialect: Sendable, Equatable {
    var delimiter: UInt8
    /// nil: nothing is quoted; a quote character is part of its field.
    var quote: UInt8?

    static let standard = CSVDialect(delimiter: UInt8(ascii: ","), quote: UInt8(ascii: "\""))

    init(delimiter: UInt8, quote: UInt8?) {
        self.delimiter = delimiter
        self.quote = quote
    }

    /// The dialect of `settings`; throws for a delimiter or quote that is not
    /// one usable ASCII character (a job file cannot set one; code can).
    init(_ settings: RecordsFileSettings) throws(StoreSyncError) {
        func byte(_ c: Character, _ what: String) throws(StoreSyncError) -> UInt8 {
            guard case .success(let named?) = Self.character(named: String(c), what: what), let byte = named.asciiValue else {
                throw .inputUnreadable(path: settings.path, reason: "the \(what) '\(c)' is not one ASCII character other than "
                    + "a letter, a digit or a line end", remedy: "Set `\(what):` to a character such as ';' or tab")
            }
            return byte
        }
        delimiter = try byte(settings.delimiter, "delimiter")
        quote = try settings.quote.map { c throws(StoreSyncError) in try byte(c, "quote") }
        if quote == delimiter {
            throw .inputUnreadable(path: settings.path, reason: "the quote and the delimiter are both '\(settings.delimiter)'",
                                   remedy: "Set `quote:` to another character, or to none")
        }
    }

    struct Problem: Error {
        var message: String
    }

    /// Names a job file may use instead of the character.
    private static let names: [String: Character] = [
        "tab": "\t", "\\t": "\t", "comma": ",", "semicolon": ";", "pipe": "|", "space": " ",
    ]

    /// The character a job file's `delimiter:` or `quote:` names: itself
    /// (one ASCII character other than a letter, a digit or a line end), or
    /// `tab` (also `\t`), `comma`, `semicolon`, `pipe`, `space`; nil for
    /// `none` or nothing.
    static func character(named text: String, what: String) -> Result<Character?, Problem> {
        if text.isEmpty || text.lowercased() == "none" { return .success(nil) }
        if let named = names[text.lowercased()] { return .success(named) }
        let hint = SettingsReader.suggestion(for: text, among: ["tab", "comma", "semicolon", "pipe", "space"])
            .map { " (did you mean \($0)?)" } ?? ""
        let expected = what == "quote"
            ? "expected one character such as '\"' or \"'\", or none"
            : "expected one character such as ';' or '|', or tab"
        guard text.count == 1, let c = text.first, let byte = c.asciiValue else {
            return .failure(Problem(message: "\(expected); got '\(text)'\(text.count > 1 ? hint : "")"))
        }
        guard byte != 0x0A, byte != 0x0D, !c.isLetter, !c.isNumber else {
            let shown = byte == 0x0A || byte == 0x0D ? "a line end" : "'\(text)'"
            return .failure(Problem(message: "\(expected), not a letter, digit or line end; got \(shown)\(c == "t" ? " (did you mean tab?)" : "")"))
        }
        return .success(c)
    }
}

/// RFC 4180 with the leniency real files need: LF or CRLF line ends, a BOM,
/// a quote inside an unquoted field taken literally (`12" vinyl`), any
/// one-character delimiter and quote (or none). Blank lines are not rows. A
/// row must have as many fields as the header: a shorter or longer row is
/// almost always a broken quote, and taking it would shift values into the
/// wrong columns.
///
/// Cells become typed values (``CSVValue``): the job's declared type for the
/// column, else the inferred one. An empty cell is an absent field, as a
/// field a source does not give is everywhere in the canonical model. A
/// record's key is its key cell's text as written, whatever its type, so
/// typing never changes which row is which. Records carry the header as
/// their ``Record/fieldOrder``.
enum CSVDecoder {
    static func decode(_ body: [UInt8], firstLine: Int?, settings: RecordsFileSettings) throws(StoreSyncError) -> DecodedPage<Record> {
        let dialect = try CSVDialect(settings)
        return try body.withUnsafeBufferPointer { buffer in
            Result { () throws(StoreSyncError) in try decode(buffer, firstLine: firstLine, dialect: dialect, settings: settings) }
        }.get()
    }

    private static func decode(_ buffer: UnsafeBufferPointer<UInt8>, firstLine: Int?, dialect: CSVDialect,
                               settings: RecordsFileSettings) throws(StoreSyncError) -> DecodedPage<Record> {
        var parser = CSVRowParser(buffer: buffer, path: settings.path, dialect: dialect)
        if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { parser.index = 3 }
        parser.skipBlankLines()
        let headerLine = parser.line
        guard let header = try parser.row() else { return DecodedPage(items: [], rowCount: 0) }
        func headerError(_ problem: String) -> StoreSyncError {
            .malformedFile(path: settings.path, line: nil, reason: "line \(headerLine): \(problem)")
        }
        guard let keyColumn = header.firstIndex(of: settings.keyField) else {
            throw headerError("the header has no '\(settings.keyField)' column (the key field); "
                + "it has \(header.joined(separator: ", "))" + Self.delimiterHint(header, dialect))
        }
        var names = Set<String>()
        for (n, name) in header.enumerated() {
            guard !name.isEmpty else { throw headerError("header column \(n + 1) has no name") }
            guard names.insert(name).inserted else { throw headerError("header names '\(name)' twice") }
        }
        // A declared column the header lacks is a typo or a renamed column: typing
        // nothing would quietly give up what the user asked for.
        for name in settings.columns.keys.sorted() where !names.contains(name) {
            let hint = SettingsReader.suggestion(for: name, among: header).map { " (did you mean '\($0)'?)" } ?? ""
            throw StoreSyncError(.malformedPage, "malformed row: line \(headerLine): the job declares a type for column '\(name)'"
                + ", which the header does not have\(hint); it has \(header.joined(separator: ", "))",
                place: .file(path: settings.path),
                remedy: "Correct the column's name under `columns:` in the job file; nothing from this page was stored and nothing was removed")
        }
        let declared = header.map { settings.columns[$0] }
        // Pages after the first carry the header again; their rows' lines come from the reader.
        if let firstLine { parser.line = firstLine }
        // Splitting fields follows quotes, so it stays sequential; turning rows
        // into typed, hashed records is independent per row and runs on every core.
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
            rows: for (line, values) in parsed[range] {
                var fields: [String: JSONValue] = [:]
                fields.reserveCapacity(header.count)
                for (column, text) in values.enumerated() where !text.isEmpty {
                    guard let type = declared[column] else {
                        fields[header[column]] = CSVValue.inferred(text)
                        continue
                    }
                    guard let value = CSVValue.declared(text, as: type) else {
                        chunk.error = declaredTypeError(path: settings.path, line: line, column: header[column], text: text, type: type)
                        break rows
                    }
                    fields[header[column]] = value
                }
                let key = values[keyColumn]
                RecordsFile.record(fields, key: key.isEmpty ? nil : key, line: line, settings: settings, fieldOrder: header,
                                   into: &chunk.records, skipped: &chunk.skipped)
            }
            return chunk
        }
        return try RowChunk.merge(chunks, rowCount: parsed.count).get()
    }

    /// A cell that is not of its column's declared type fails its page like a
    /// malformed row: skipping the row would let a typo delete it from the
    /// snapshot once it has been missed `afterMisses` nights.
    static func declaredTypeError(path: String, line: Int, column: String, text: String, type: FieldType) -> StoreSyncError {
        let what = switch type {
        case .integer: "a whole number"
        case .real: "a number"
        case .date: "an ISO 8601 date (2024-05-01 or 2024-05-01T12:00:00Z)"
        case .text: "text"
        }
        let shown = text.count > 60 ? String(text.prefix(57)) + "..." : text
        return StoreSyncError(.malformedPage, "malformed row: line \(line), column '\(column)': '\(shown)' is not \(what), "
            + "as the job declares (\(column): \(type.rawValue))", place: .file(path: path),
            remedy: "Fix the value in the file, or declare the column text in the job; nothing from this page was stored and nothing was removed")
    }

    /// A one-column header that holds another common delimiter is a file
    /// read with the wrong `delimiter:`.
    private static func delimiterHint(_ header: [String], _ dialect: CSVDialect) -> String {
        guard header.count == 1, let only = header.first else { return "" }
        for (c, name) in [(";", "';'"), ("\t", "tab"), ("|", "'|'"), (",", "','")]
        where only.contains(c) && c.utf8.first != dialect.delimiter {
            return " (it looks \(name)-separated: set delimiter: \(name == "tab" ? "tab" : "\"\(c)\""))"
        }
        return ""
    }
}

/// Reads CSV records one at a time from a buffer, counting physical lines.
struct CSVRowParser {
    let buffer: UnsafeBufferPointer<UInt8>
    let path: String
    let delimiter: UInt8
    let quote: UInt8?
    var index = 0
    /// The 1-based line `index` is on.
    var line = 1

    init(buffer: UnsafeBufferPointer<UInt8>, path: String, dialect: CSVDialect = .standard) {
        self.buffer = buffer
        self.path = path
        delimiter = dialect.delimiter
        quote = dialect.quote
    }

    private static let lf: UInt8 = 0x0A, cr: UInt8 = 0x0D

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
            if let quote, index < buffer.count, buffer[index] == quote {
                fields.append(try quotedField(quote))
            } else {
                let start = index
                while index < buffer.count, buffer[index] != delimiter, buffer[index] != Self.lf { index += 1 }
                var end = index
                // The CR of a CRLF belongs to the line end, not to the last field.
                if end > start, buffer[end - 1] == Self.cr, index == buffer.count || buffer[index] == Self.lf { end -= 1 }
                fields.append(String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<end]), as: UTF8.self))
            }
            if index < buffer.count, buffer[index] == delimiter {
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

    /// A quoted field, a doubled quote being one quote; leaves `index` on the delimiter.
    private mutating func quotedField(_ quote: UInt8) throws(StoreSyncError) -> String {
        let openedOn = line
        index += 1
        let start = index
        var escaped: [UInt8]?
        while true {
            guard index < buffer.count else {
                throw .malformedFile(path: path, line: nil, reason: "line \(openedOn): quoted field not closed before the end of the file")
            }
            let byte = buffer[index]
            if byte == quote {
                if index + 1 < buffer.count, buffer[index + 1] == quote {
                    // Copy only fields that hold an escape; the rest are sliced straight out.
                    if escaped == nil { escaped = Array(buffer[start..<index]) }
                    escaped!.append(quote)
                    index += 2
                    continue
                }
                let value = escaped.map { String(decoding: $0, as: UTF8.self) }
                    ?? String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
                index += 1
                if index < buffer.count, buffer[index] == Self.cr, index + 1 == buffer.count || buffer[index + 1] == Self.lf {
                    index += 1
                }
                guard index == buffer.count || buffer[index] == delimiter || buffer[index] == Self.lf else {
                    let byte = buffer[index]
                    let shown = (0x21..<0x7F).contains(byte) ? "'\(Character(Unicode.Scalar(byte)))'" : "byte 0x\(String(byte, radix: 16))"
                    let q = Character(Unicode.Scalar(quote))
                    throw .malformedFile(path: path, line: nil, reason: "line \(line): unexpected \(shown) after a closing quote "
                        + "(quotes inside a quoted field are written \(q)\(q))")
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

    let delimiter: UInt8
    /// nil: nothing is quoted.
    let quote: UInt8?
    var state = State.fieldStart
    /// Records ended so far.
    var rows = 0
    /// The current record has bytes (a blank line is not a record).
    var rowHasBytes = false

    init(dialect: CSVDialect = .standard) {
        delimiter = dialect.delimiter
        quote = dialect.quote
    }

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
                if byte == 0x0A {
                    lines += 1
                    if rowHasBytes { rows += 1 }
                    rowHasBytes = false
                    state = .fieldStart
                    if rows == count { break scan }
                } else if byte == 0x0D {
                    continue
                } else if byte == delimiter {
                    rowHasBytes = true
                    state = .fieldStart
                } else if byte == quote {
                    rowHasBytes = true
                    state = state == .fieldStart || state == .quoteInQuoted ? .quoted : .unquoted
                } else {
                    rowHasBytes = true
                    state = .unquoted
                }
            case .quoted:
                if byte == quote { state = .quoteInQuoted } else if byte == 0x0A { lines += 1 }
            }
        }
        return (i, lines)
    }
}
