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
    /// CSV: the character between fields, one ASCII character (`,`, `;`, tab, `|` …).
    public var delimiter: Character
    /// CSV: the character that quotes a field, one ASCII character; nil when
    /// the file quotes nothing (every `"` is then part of its field).
    public var quote: Character?
    /// The file's character encoding; it is read as UTF-8 after transcoding.
    public var encoding: RecordsFileEncoding
    /// CSV: declared column types, by header name. Other columns' types are
    /// inferred cell by cell (see ``CSVValue``).
    public var columns: [String: FieldType]

    public init(path: String, format: RecordsFileFormat? = nil, keyField: String = "id", entity: EntityKind = .record,
                pageSize: Int = 10_000, delimiter: Character = ",", quote: Character? = "\"",
                encoding: RecordsFileEncoding = .utf8, columns: [String: FieldType] = [:]) {
        self.path = path
        self.format = format
        self.keyField = keyField
        self.entity = entity
        self.pageSize = pageSize
        self.delimiter = delimiter
        self.quote = quote
        self.encoding = encoding
        self.columns = columns
    }
}

extension RecordsFileSettings: SourceKind {
    public static let name = "records-file"
    public static let settingKeys = ["path", "format", "keyField", "entity", "pageSize", "delimiter", "quote", "encoding", "columns"]

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
        readCSVOptions(fields, path: path, reader: &reader, into: &records)
        if let name = reader.string(fields, "encoding", path: path) {
            if let encoding = RecordsFileEncoding(name: name) { records.encoding = encoding } else {
                let hint = SettingsReader.suggestion(for: name, among: RecordsFileEncoding.names.map(\.name))
                    .map { " (did you mean '\($0)'?)" } ?? ""
                reader.issue(reader.value(fields, "encoding"), reader.join(path, "encoding"),
                             "unknown encoding '\(name)'\(hint); one of \(RecordsFileEncoding.allCases.map(\.rawValue).joined(separator: ", ")) "
                                 + "(or cp1252, latin1, utf8)")
            }
        }
        return records
    }

    /// `delimiter`, `quote` and `columns`, which only a CSV file has.
    private static func readCSVOptions(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader,
                                       into records: inout RecordsFileSettings) {
        if records.format == .jsonLines {
            for key in ["delimiter", "quote", "columns"] {
                guard let node = reader.value(fields, key) else { continue }
                reader.issue(node, reader.join(path, key), key == "columns"
                    ? "applies to CSV files only (JSON Lines values keep their JSON types)"
                    : "applies to CSV files only")
            }
            return
        }
        if let text = reader.string(fields, "delimiter", path: path) {
            switch CSVDialect.character(named: text, what: "delimiter") {
            case .success(let c?): records.delimiter = c
            case .success(nil): reader.issue(reader.value(fields, "delimiter"), reader.join(path, "delimiter"), "a CSV file needs a delimiter")
            case .failure(let problem): reader.issue(reader.value(fields, "delimiter"), reader.join(path, "delimiter"), problem.message)
            }
        }
        if let node = reader.value(fields, "quote") {
            // `quote: none`, `quote: ""` or `quote: ~`: the file quotes nothing.
            let text = node.scalar.map { $0.isNull ? "" : $0.text }
            switch text.map({ CSVDialect.character(named: $0, what: "quote") }) {
            case .success(let c)?: records.quote = c
            case .failure(let problem)?: reader.issue(node, reader.join(path, "quote"), problem.message)
            case nil: reader.issue(node, reader.join(path, "quote"), "expected one character, or none")
            }
            if let quote = records.quote, quote == records.delimiter {
                reader.issue(node, reader.join(path, "quote"), "must differ from the delimiter")
            }
        }
        if let node = reader.value(fields, "columns"), let declared = reader.mapping(node, path: reader.join(path, "columns")) {
            for column in declared {
                let keyPath = reader.join(reader.join(path, "columns"), column.key)
                guard let name = column.value.scalar?.text, !(column.value.scalar?.isNull ?? true) else {
                    reader.issue(column.value, keyPath, "expected a column type: \(FieldType.allCases.map(\.rawValue).joined(separator: ", "))")
                    continue
                }
                guard let type = FieldType(declaredName: name) else {
                    let hint = SettingsReader.suggestion(for: name, among: FieldType.allCases.map(\.rawValue)).map { " (did you mean '\($0)'?)" } ?? ""
                    reader.issue(column.value, keyPath,
                                 "unknown column type '\(name)'\(hint); one of \(FieldType.allCases.map(\.rawValue).joined(separator: ", "))")
                    continue
                }
                if records.columns[column.key] != nil { reader.issue(column.keyNode, keyPath, "duplicate column") }
                records.columns[column.key] = type
            }
        }
    }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        RecordsFile.scopes(settings: self)
    }

    /// A row's canonical fields are its columns as the file has them, typed
    /// (a records file's row is its user's own table, not one of the
    /// built-in entities' shapes; with `entity:` it keeps that entity).
    ///
    /// For a CSV file the typing is applied again to text values, which
    /// changes nothing this decoder wrote (it is idempotent) but types the
    /// all-text payloads an older storesync stored, so those rows do not all
    /// read as changed once.
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        guard RecordsFile.format(of: self) == .csv else { return CanonicalRecord(entity: entity, fields: wire) }
        var fields = wire
        for (name, value) in wire {
            guard case .string(let text) = value else { continue }
            if text.isEmpty {
                fields[name] = nil
            } else if let type = columns[name] {
                fields[name] = CSVValue.declared(text, as: type) ?? value
            } else {
                fields[name] = CSVValue.inferred(text)
            }
        }
        return CanonicalRecord(entity: entity, fields: fields)
    }

    /// A JSON Lines row's fields are its canonical fields as they are (a CSV row's are typed).
    public func keepsWireFields(of entity: EntityKind) -> Bool { RecordsFile.format(of: self) == .jsonLines }

    /// A file lists its rows: a row gone from a complete read of the file is evidence it was deleted.
    public func role(of entity: EntityKind) -> RecordRole { .lists }
}

extension FieldType {
    /// A declared column type by its name or a common alias (`int`, `float`,
    /// `double`, `number`, `string`, `datetime`), ignoring case.
    init?(declaredName name: String) {
        switch name.trimmingCharacters(in: .whitespaces).lowercased() {
        case "integer", "int": self = .integer
        case "real", "float", "double", "number": self = .real
        case "date", "datetime", "timestamp": self = .date
        case "text", "string": self = .text
        default: return nil
        }
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
/// Values: JSON Lines rows keep their JSON types. CSV cells are typed
/// (``CSVDecoder``, ``CSVValue``): integer, real or text, dates kept as ISO
/// text, an empty cell an absent field, or the type the job declares for the
/// column (`columns:`). The values are the user's own data, so nothing is
/// normalised away (no tracking parameters stripped, unlike API responses).
///
/// Encoding: the file is checked against `encoding` from its first byte to
/// its last before page 0 is served (a bounded, block-by-block read), so a
/// byte the encoding refuses stops the file before anything from it is
/// stored; pages are then transcoded to UTF-8 one at a time.
package enum RecordsFile {
    /// The scope of a records file. Nothing is read until the first page is
    /// asked for, so a missing file fails that page (scope incomplete), not
    /// the building of the job.
    static func scopes(settings: RecordsFileSettings) -> [CrawlScope] {
        let pageSize = max(1, settings.pageSize)
        let reader = RecordsFileReader(settings: settings, format: format(of: settings), pageSize: pageSize)
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
    package static func format(of settings: RecordsFileSettings) -> RecordsFileFormat {
        if let format = settings.format { return format }
        return URL(fileURLWithPath: settings.path).pathExtension.lowercased() == "csv" ? .csv : .jsonLines
    }

    /// Bump when decoding a file changes (how rows are typed, keyed or
    /// cut), so pages decoded by an older storesync are decoded again even
    /// where their bytes are unchanged. 2: CSV cells typed, empty cells absent.
    static let decodingVersion = 2

    /// What the records read from a page's bytes depend on besides the
    /// bytes: the decoder and the settings. It goes into the page's URL,
    /// which the crawl's page memo is filed under, so a page whose bytes are
    /// unchanged is passed over only when it would be read the same way (a
    /// newly declared column type takes effect without the file changing).
    package static func decodingFingerprint(_ settings: RecordsFileSettings) -> String {
        var text = "v\(decodingVersion)|\(format(of: settings).rawValue)|\(settings.keyField)|\(settings.entity.rawValue)"
        if format(of: settings) == .csv {
            text += "|\(settings.delimiter)|\(settings.quote.map(String.init) ?? "")"
            text += "|" + settings.columns.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value.rawValue)" }.joined(separator: ",")
        }
        text += "|\(settings.encoding.rawValue)"
        let hash = ContentHash(bytes: Array(text.utf8)).rawValue
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }

    /// The URL of a file's pages: the file, with the ``decodingFingerprint(_:)``.
    package static func pageURL(_ settings: RecordsFileSettings) -> URL {
        var components = URLComponents(url: URL(fileURLWithPath: settings.path), resolvingAgainstBaseURL: false)
        components?.queryItems = [URLQueryItem(name: "decoding", value: decodingFingerprint(settings))]
        return components?.url ?? URL(fileURLWithPath: settings.path)
    }

    /// Response header: the file line number of the page's first row.
    static let firstLineHeader = "x-records-first-line"
    /// Response header: whether rows follow this page.
    static let hasNextHeader = HTTPResponse.hasNextHeader

    /// Decodes one page as ``RecordsFileReader`` hands it over: JSON Lines,
    /// or CSV whose first row is the file's header.
    ///
    /// - Throws: ``StoreSyncError/malformedFile(path:line:column:reason:)`` naming the file
    ///   path and the line (and column, for JSON) of the first malformed row.
    package static func decodePage(_ response: HTTPResponse, settings: RecordsFileSettings,
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
        case .number(let text)?: text
        default: nil
        }
    }

    /// Appends the record of a row, or notes it as skipped when `key` (its key
    /// field's text) is nil.
    static func record(_ fields: [String: JSONValue], key: String?, line: Int, settings: RecordsFileSettings,
                       rawHash: ContentHash? = nil, fieldOrder: [String]? = nil,
                       into records: inout [Record], skipped: inout [String]) {
        guard let key else {
            let why = fields[settings.keyField] == nil
                ? "has no '\(settings.keyField)'"
                : "has no usable '\(settings.keyField)' (not a non-empty string or number)"
            skipped.append("\(settings.path) line \(line): \(why)")
            return
        }
        records.append(Record(entity: settings.entity, key: key, fields: fields, rawHash: rawHash, fieldOrder: fieldOrder))
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
        let page = try decodeRows(body, firstLine: firstLine, settings: settings, memory: memory)
        // A row is trusted by its bytes only as its key's one row on the page. With
        // two (issue 13), the stored one is not the page's record unless it is the
        // last, and which it is must not depend on which bytes the store holds.
        guard memory != nil, !page.unread.isEmpty, repeatsAnUnreadKey(page) else { return page }
        return try decodeRows(body, firstLine: firstLine, settings: settings, memory: nil)
    }

    /// Whether a row passed over as stored shares its key with another row of the page.
    static func repeatsAnUnreadKey(_ page: DecodedPage<Record>) -> Bool {
        var unread = Set<RecordIdentity>(minimumCapacity: page.unread.count)
        for row in page.unread where !unread.insert(row.identity).inserted { return true }
        return page.items.contains { unread.contains($0.identity) }
    }

    private static func decodeRows(_ body: [UInt8], firstLine: Int, settings: RecordsFileSettings,
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
            let firstLoad = memory?.isFirstLoad == true
            let chunks = ParallelChunks.map(lines.count) { range in
                var chunk = RowChunk()
                chunk.records.reserveCapacity(range.count)
                if firstLoad {
                    decodeCanonical(buffer, lines[range], settings: settings, into: &chunk)
                    return chunk
                }
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
                    guard decodeParsed(row, line: line, rawHash: hashes[position], settings: settings, into: &chunk) else { break }
                }
                return chunk
            }
            return RowChunk.merge(chunks, rowCount: lines.count)
        }.get()
    }

    static func kind(of value: JSONValue) -> String { jsonTypeName(value) }

    /// Decodes rows of a first load straight to canonical bytes (no value
    /// built: ``JSONParser/canonicalObject(_:keyField:scratch:)``); a row it
    /// cannot write that way (a malformed one among them) goes through the
    /// parse, which decides it and words its error.
    private static func decodeCanonical(_ buffer: UnsafeBufferPointer<UInt8>, _ lines: ArraySlice<Line>,
                                        settings: RecordsFileSettings, into chunk: inout RowChunk) {
        var scratch = CanonicalScratch()
        for line in lines {
            let row = UnsafeBufferPointer(rebasing: buffer[line.start..<line.end])
            let rawHash = ContentHash(rawValue: XXH64.hash(row, seed: rawHashSeed))
            if let canonical = JSONParser.canonicalObject(row, keyField: settings.keyField, scratch: &scratch),
               let key = RecordsFile.keyText(canonical.key) {
                chunk.records.append(Record(entity: settings.entity, key: key, canonical: canonical, rawHash: rawHash))
                continue
            }
            guard decodeParsed(row, line: line, rawHash: rawHash, settings: settings, into: &chunk) else { return }
        }
    }

    /// Parses a row into its record (or notes it skipped); false, with the
    /// chunk's error set, for a row that is not a JSON object.
    private static func decodeParsed(_ row: UnsafeBufferPointer<UInt8>, line: Line, rawHash: ContentHash,
                                     settings: RecordsFileSettings, into chunk: inout RowChunk) -> Bool {
        let value: JSONValue
        do throws(JSONSyntaxError) {
            value = try JSONParser.parse(row)
        } catch {
            chunk.error = .malformedFile(path: settings.path, line: nil,
                                         reason: "line \(line.number), column \(error.column): \(error.message)")
            return false
        }
        guard case .object(let fields) = value else {
            chunk.error = .malformedFile(path: settings.path, line: nil,
                                         reason: "line \(line.number): expected a JSON object, found \(kind(of: value))")
            return false
        }
        RecordsFile.record(fields, key: RecordsFile.keyText(fields[settings.keyField]), line: line.number,
                           settings: settings, rawHash: rawHash, into: &chunk.records, skipped: &chunk.skipped)
        return true
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
