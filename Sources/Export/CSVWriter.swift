import Foundation
import Catalog
import Snapshot

/// How a CSV file is laid out.
package struct CSVOptions: Sendable, Equatable {
    /// How records end.
    package enum LineEnding: Sendable, Equatable {
        /// `\r\n`, as RFC 4180 specifies (the default).
        case crlf
        /// `\n`, for Unix tools.
        case lf
    }

    /// The field separator, one ASCII byte (default `,`). It must not be `"`, CR or LF.
    package var delimiter: UInt8
    package var lineEnding: LineEnding
    /// Start the file with a UTF-8 byte order mark (`EF BB BF`), which makes
    /// Excel read the file as UTF-8 instead of the system code page.
    package var byteOrderMark: Bool
    /// Defuse spreadsheet formulas ("CSV injection"): a `.text` cell whose first
    /// character is `=`, `+`, `-`, `@`, tab or CR gets a `'` in front of it, as OWASP
    /// advises, so Excel/LibreOffice/Sheets show the text instead of evaluating it.
    /// Never applied to `.number` cells.
    package var neutralizeFormulas: Bool

    package init(delimiter: UInt8 = UInt8(ascii: ","), lineEnding: LineEnding = .crlf,
                byteOrderMark: Bool = false, neutralizeFormulas: Bool = true) {
        precondition(delimiter < 0x80 && delimiter != UInt8(ascii: "\"") && delimiter != 0x0D && delimiter != 0x0A,
                     "CSV delimiter must be an ASCII byte other than quote, CR and LF")
        self.delimiter = delimiter
        self.lineEnding = lineEnding
        self.byteOrderMark = byteOrderMark
        self.neutralizeFormulas = neutralizeFormulas
    }
}

/// One CSV field.
package enum CSVCell: Sendable, Equatable {
    /// Free text: quoted when needed, subject to formula neutralisation.
    /// The empty string is written as `""`, so it stays distinguishable from `.null`
    /// (the convention of PostgreSQL's `COPY … CSV`); spreadsheets read both as empty.
    case text(String)
    /// A number in its textual form (`"-1"`, `"0.99"`, `"1e-3"`), written as is and
    /// never neutralised — so a price of -1 stays a number in a spreadsheet.
    /// Only a plain decimal literal (`[+-]?digits[.digits][(e|E)[+-]?digits]`) counts as a
    /// number; anything else is written exactly as `.text` would be, so `.number` can
    /// not be used to smuggle a formula past neutralisation.
    case number(String)
    /// No value: an empty, unquoted field. (A row made of a single `.null` is written
    /// as `""`, since an empty line would be skipped by readers.)
    case null
}

extension CSVCell {
    /// A number cell for an integer.
    package static func integer<T: BinaryInteger>(_ value: T) -> CSVCell { .number(String(value)) }
    /// A number cell for a double (`nil` for NaN and infinities, which are not numbers in a spreadsheet).
    package static func real(_ value: Double) -> CSVCell {
        value.isFinite ? .number(String(value)) : .null
    }
}

/// A streaming RFC 4180 CSV writer (UTF-8).
///
/// It holds no file: each call appends to the ``OutputSink`` it is given, usually
/// inside ``AtomicFile/write(to:_:)``. The static ``write(to:header:options:rows:)``
/// does both. Fields are quoted only when they contain the delimiter, a quote, CR or
/// LF; quotes inside are doubled. Text goes through ``ExportText/clean(_:)`` first. Work happens on UTF-8 bytes with no per-field
/// allocation, so a million rows of 16 columns take well under a few seconds.
///
/// ```swift
/// let rows = try CSVWriter.write(to: url, header: ["id", "name", "price"]) { emit in
///     try emit([.number("1"), .text("=cmd"), .number("-1")])   // name becomes '=cmd
/// }
/// ```
package struct CSVWriter: Sendable {
    package let options: CSVOptions
    /// Data rows written so far (the header is not counted).
    package private(set) var rowCount: Int = 0
    /// Number of header fields, once a header was written; rows must then match it.
    package private(set) var columnCount: Int?

    private var started = false
    private var fieldsInRow = 0
    /// `sink.bytesWritten` where the current record began.
    private var recordStart: Int64 = 0

    package init(options: CSVOptions = CSVOptions()) {
        self.options = options
    }

    /// A writer of rows that follow another writer's header in the same file
    /// (a part of the file made on another thread): no byte order mark, and
    /// each row must have `columnCount` fields.
    package init(options: CSVOptions, continuing columnCount: Int?) {
        self.options = options
        self.columnCount = columnCount
        started = true
    }

    /// Writes the header row. Call at most once, before any row.
    package mutating func writeHeader(_ names: [String], into sink: inout OutputSink) throws {
        precondition(!started, "CSV header must come first")
        try start(&sink)
        for name in names { try writeField(.text(name), into: &sink) }
        try finishRecord(&sink)
        columnCount = names.count
    }

    /// Writes one data row.
    /// - Throws: ``ExportError/csvFieldCount(path:row:expected:actual:)`` when a header
    ///   was written and `cells` has a different number of fields.
    package mutating func writeRow(_ cells: [CSVCell], into sink: inout OutputSink) throws {
        precondition(fieldsInRow == 0, "writeRow called in the middle of a row built with writeField")
        if let expected = columnCount, cells.count != expected {
            throw ExportError.csvFieldCount(path: sink.path, row: rowCount + 1, expected: expected, actual: cells.count)
        }
        for cell in cells { try writeField(cell, into: &sink) }
        try endRow(into: &sink)
    }

    /// Appends one field to the current row (for callers that do not want to build an
    /// array per row). Finish the row with ``endRow(into:)``.
    package mutating func writeField(_ cell: CSVCell, into sink: inout OutputSink) throws {
        try beginField(&sink)
        switch cell {
        case .null:
            break
        case .text(let text):
            try writeText(text, into: &sink)
        case .number(let number):
            var number = number
            let plain = number.withUTF8 { CSVWriter.isPlainNumber($0) }
            if plain {
                try sink.write(number)
            } else {
                try writeText(number, into: &sink)
            }
        }
    }

    /// Ends the row started with ``writeField(_:into:)``.
    package mutating func endRow(into sink: inout OutputSink) throws {
        if let expected = columnCount, fieldsInRow != expected {
            let actual = fieldsInRow
            fieldsInRow = 0
            throw ExportError.csvFieldCount(path: sink.path, row: rowCount + 1, expected: expected, actual: actual)
        }
        try finishRecord(&sink)
        rowCount += 1
    }

    /// Atomically writes a whole CSV file: header, then the rows `rows` emits.
    /// - Returns: the number of data rows.
    @discardableResult
    package static func write(
        to url: URL, header: [String], options: CSVOptions = CSVOptions(),
        rows: (_ emit: ([CSVCell]) throws -> Void) throws -> Void
    ) throws -> Int {
        try AtomicFile.write(to: url) { sink in
            var writer = CSVWriter(options: options)
            try writer.writeHeader(header, into: &sink)
            try rows { cells in try writer.writeRow(cells, into: &sink) }
            return writer.rowCount
        }
    }

    // MARK: - Bytes

    private mutating func beginField(_ sink: inout OutputSink) throws {
        if !started { try start(&sink) }
        if fieldsInRow > 0 { try sink.write(byte: options.delimiter) }
        fieldsInRow += 1
    }

    /// Appends a `.text` field given as UTF-8 bytes: the same bytes as
    /// `writeField(.text(String(decoding: text, as: UTF8.self)))`, copied
    /// straight through when nothing in them needs cleaning, quoting or
    /// neutralising (a key, a name, a URL: nearly every cell of a table).
    package mutating func writeTextField(_ text: UnsafeBufferPointer<UInt8>, into sink: inout OutputSink) throws {
        switch shape(of: text) {
        case .plain:
            try beginField(&sink)
            try sink.write(UnsafeRawBufferPointer(text))
        case .clean:
            try beginField(&sink)
            try writeQuoted(text, into: &sink)
        case .dirty:
            try writeField(.text(String(decoding: text, as: UTF8.self)), into: &sink)
        }
    }

    /// Appends a field holding a stored JSON value (a member of a payload, as
    /// its JSON text; `escaped` when a string of it holds escapes): the same
    /// bytes as the cell the value projects to, `writeField(CSVExport.cell(PayloadProjection.value(json, escaped:)))`.
    /// A string, an integer and a short decimal are written from the
    /// payload's bytes (a string with escapes decoded into `scratch` first);
    /// anything else takes that way.
    package mutating func writeJSONField(_ json: UnsafeBufferPointer<UInt8>, escaped: Bool, scratch: inout [UInt8],
                                         into sink: inout OutputSink) throws {
        if let first = json.first {
            if first == UInt8(ascii: "\""), json.count >= 2 {
                let inner = UnsafeBufferPointer(rebasing: json[1..<json.count - 1])
                if !escaped {
                    return try writeTextField(inner, into: &sink)
                }
                if JSONParser.decodeString(json, into: &scratch) {
                    return try scratch.withUnsafeBufferPointer { try writeTextField($0, into: &sink) }
                }
            } else if first == UInt8(ascii: "-") || (first >= 0x30 && first <= 0x39), Self.printsAsItself(json) {
                try beginField(&sink)
                return try sink.write(UnsafeRawBufferPointer(json))
            }
        }
        try writeField(CSVExport.cell(PayloadProjection.value(json, escaped: escaped)), into: &sink)
    }

    /// What writing a text cell takes.
    private enum TextShape {
        /// Written as it is.
        case plain
        /// Valid UTF-8 with nothing to clean: quotes, a formula or emptiness to deal with.
        case clean
        /// Invalid UTF-8, or characters ``ExportText/clean(_:)`` removes.
        case dirty
    }

    /// The shape of `text`, in one pass over its bytes (eight at a time while they are plain ASCII).
    private func shape(of text: UnsafeBufferPointer<UInt8>) -> TextShape {
        guard let base = text.baseAddress, let first = text.first else { return .clean }
        var plain = !(options.neutralizeFormulas && CSVWriter.startsFormula(first))
        let delimiter = options.delimiter
        let count = text.count
        var i = 0
        @inline(__always) func continuation(_ offset: Int, _ low: UInt8 = 0x80, _ high: UInt8 = 0xBF) -> Bool {
            i + offset < count && text[i + offset] >= low && text[i + offset] <= high
        }
        while i < count {
            while i + 8 <= count {
                let word = UnsafeRawPointer(base + i).loadUnaligned(as: UInt64.self)
                guard SWAR.isASCII(word), !SWAR.hasByteBelow(word, 0x20), !SWAR.hasByte(word, 0x22),
                      !SWAR.hasByte(word, delimiter) else { break }
                i += 8
            }
            guard i < count else { break }
            let byte = text[i]
            if byte < 0x80 {
                if byte < 0x20 {
                    guard byte == 0x09 || byte == 0x0A || byte == 0x0D else { return .dirty }
                    plain = false
                } else if byte == 0x22 || byte == delimiter {
                    plain = false
                }
                i += 1
                continue
            }
            // A UTF-8 sequence, checked against the standard's table of well-formed sequences.
            switch byte {
            case 0xC2...0xDF:
                guard continuation(1) else { return .dirty }
                i += 2
            case 0xE0:
                guard continuation(1, 0xA0), continuation(2) else { return .dirty }
                i += 3
            case 0xE1...0xEC, 0xEE:
                guard continuation(1), continuation(2) else { return .dirty }
                i += 3
            case 0xED:
                guard continuation(1, 0x80, 0x9F), continuation(2) else { return .dirty }
                i += 3
            case 0xEF:
                guard continuation(1), continuation(2) else { return .dirty }
                // EF BF BE and EF BF BF are U+FFFE and U+FFFF, which cleaning removes.
                if text[i + 1] == 0xBF, text[i + 2] >= 0xBE { return .dirty }
                i += 3
            case 0xF0:
                guard continuation(1, 0x90), continuation(2), continuation(3) else { return .dirty }
                i += 4
            case 0xF1...0xF3:
                guard continuation(1), continuation(2), continuation(3) else { return .dirty }
                i += 4
            case 0xF4:
                guard continuation(1, 0x80, 0x8F), continuation(2), continuation(3) else { return .dirty }
                i += 4
            default:
                return .dirty
            }
        }
        return plain ? .plain : .clean
    }

    /// Whether a JSON number prints the same once read: an integer
    /// `-?(0|[1-9][0-9]{0,17})` (not `-0`) as `String(Int64)` prints it, or a
    /// decimal `-?(0|[1-9][0-9]*).[0-9]+` of at most 15 significant digits, at
    /// least 0.1 in size, with no trailing zero (but `1.0`), as `String(Double)`
    /// prints it: fifteen digits always survive a round trip through a
    /// Double, and Swift prints the shortest that does, in positional form
    /// below 2^53.
    static func printsAsItself(_ json: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = json.count
        var i = json.first == UInt8(ascii: "-") ? 1 : 0
        @inline(__always) func digit(_ at: Int) -> Bool { at < count && json[at] >= 0x30 && json[at] <= 0x39 }
        let integerStart = i
        while digit(i) { i += 1 }
        let integerDigits = i - integerStart
        guard integerDigits > 0, integerDigits == 1 || json[integerStart] != 0x30 else { return false }
        let zeroInteger = integerDigits == 1 && json[integerStart] == 0x30
        if i == count {
            return integerDigits <= 18 && !(zeroInteger && integerStart == 1)
        }
        guard json[i] == UInt8(ascii: "."), digit(i + 1) else { return false }
        let fractionStart = i + 1
        i = fractionStart
        while digit(i) { i += 1 }
        guard i == count else { return false }
        let fractionDigits = count - fractionStart
        if fractionDigits == 1, json[fractionStart] == 0x30 {
            return integerDigits <= 15
        }
        guard json[count - 1] != 0x30 else { return false }
        if zeroInteger {
            return json[fractionStart] != 0x30 && fractionDigits <= 15
        }
        return integerDigits + fractionDigits <= 15
    }

    private mutating func start(_ sink: inout OutputSink) throws {
        started = true
        if options.byteOrderMark {
            try sink.write(byte: 0xEF)
            try sink.write(byte: 0xBB)
            try sink.write(byte: 0xBF)
        }
        recordStart = sink.bytesWritten
    }

    private mutating func finishRecord(_ sink: inout OutputSink) throws {
        if !started { try start(&sink) }
        // A record of one null field would be an empty line, which readers skip:
        // write it as "" instead.
        if sink.bytesWritten == recordStart {
            try sink.write(byte: 0x22)
            try sink.write(byte: 0x22)
        }
        fieldsInRow = 0
        if options.lineEnding == .crlf { try sink.write(byte: 0x0D) }
        try sink.write(byte: 0x0A)
        recordStart = sink.bytesWritten
    }

    private func writeText(_ text: String, into sink: inout OutputSink) throws {
        var text = text
        // The common cell (nothing to remove, quote or neutralise) is written as
        // it is after one pass over its bytes.
        switch text.withUTF8({ shape(of: $0) }) {
        case .plain:
            try sink.write(text)
        case .clean:
            try text.withUTF8 { try writeQuoted($0, into: &sink) }
        case .dirty:
            // Every export's character rule (NUL and other C0 controls removed), here so
            // that no CSV this writer makes (tables, changes.csv, `changes --csv`) escapes it.
            text = ExportText.clean(text)
            try text.withUTF8 { try writeQuoted($0, into: &sink) }
        }
    }

    /// Writes clean text (valid UTF-8, nothing ``ExportText/clean(_:)`` would
    /// remove), quoted when it holds the delimiter, a quote, CR or LF, with a
    /// `'` before a formula.
    private func writeQuoted(_ bytes: UnsafeBufferPointer<UInt8>, into sink: inout OutputSink) throws {
        guard let base = bytes.baseAddress, !bytes.isEmpty else {
            // Empty text is "" (distinct from null, which is nothing).
            try sink.write(byte: 0x22)
            try sink.write(byte: 0x22)
            return
        }
        // memchr scans with SIMD: a long cell (a JSON payload) is searched at memory speed.
        func find(_ byte: UInt8, from start: Int = 0) -> Int? {
            memchr(base + start, Int32(byte), bytes.count - start).map { UnsafePointer($0.assumingMemoryBound(to: UInt8.self)) - base }
        }
        let firstQuote = find(0x22)
        let needsQuotes = firstQuote != nil || find(options.delimiter) != nil || find(0x0A) != nil || find(0x0D) != nil
        let neutralize = options.neutralizeFormulas && CSVWriter.startsFormula(bytes[0])
        if !needsQuotes {
            if neutralize { try sink.write(byte: UInt8(ascii: "'")) }
            try sink.write(UnsafeRawBufferPointer(bytes))
            return
        }
        try sink.write(byte: 0x22)
        if neutralize { try sink.write(byte: UInt8(ascii: "'")) }
        var runStart = 0
        var quote = firstQuote
        while let index = quote {
            // Write up to and including the quote, then the quote again.
            try sink.write(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[runStart...index])))
            try sink.write(byte: 0x22)
            runStart = index + 1
            quote = runStart < bytes.count ? find(0x22, from: runStart) : nil
        }
        if runStart < bytes.count {
            try sink.write(UnsafeRawBufferPointer(UnsafeBufferPointer(rebasing: bytes[runStart...])))
        }
        try sink.write(byte: 0x22)
    }

    /// `=`, `+`, `-`, `@`, tab, CR: the first characters spreadsheets treat as a formula.
    @inline(__always)
    static func startsFormula(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "="), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "@"), 0x09, 0x0D: true
        default: false
        }
    }

    /// `[+-]?(digits)(.digits?)?([eE][+-]?digits)?` or `[+-]?.digits…` — a plain decimal literal.
    static func isPlainNumber(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var i = 0
        let n = bytes.count
        @inline(__always) func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }
        if i < n, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
        var digits = 0
        while i < n, isDigit(bytes[i]) { i += 1; digits += 1 }
        if i < n, bytes[i] == UInt8(ascii: ".") {
            i += 1
            while i < n, isDigit(bytes[i]) { i += 1; digits += 1 }
        }
        guard digits > 0 else { return false }
        if i < n, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < n, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
            var exponentDigits = 0
            while i < n, isDigit(bytes[i]) { i += 1; exponentDigits += 1 }
            guard exponentDigits > 0 else { return false }
        }
        return i == n
    }
}
