import Catalog
import Foundation
import Logging
import Snapshot

/// A column of a records-file source as a field registry describes it.
struct RecordField: Sendable, Equatable {
    /// The column's name in the file's header (the record's member name).
    var name: String
    var kind: ExportColumn.Kind
    /// Where the column stands in the file, from 0.
    var position: Int
}

/// The fields of a records-file source read off its rows, for as long as
/// the store gives no field registry: every member any row has, in the order
/// first met (a row's new members in the order the stored record lists them,
/// which is name order), each typed by the widest value seen: integer, then
/// real, then text. Booleans count as integers (0/1), objects and arrays as
/// text (JSON); nulls say nothing, and a column of nulls only is text.
///
/// Rows are scanned, not parsed: a records file can hold millions of rows,
/// and the members' names and the first byte of each value are all it takes.
/// Rows of one file list the same names in the same order, so a name is
/// compared with the previous row's bytes and decoded only when it differs.
struct RecordFieldInference: Sendable {
    private var names: [String] = []
    private var index: [String: Int] = [:]
    private var kinds: [ExportColumn.Kind?] = []
    /// The previous row's member names (UTF-8 as stored) and their field indexes.
    private var lastRow: [(bytes: [UInt8], field: Int)] = []

    init() {}

    /// Adds what the stored record `payload` (a JSON object) says.
    mutating func observe(_ payload: String) {
        var payload = payload
        payload.withUTF8 { bytes in
            var position = 0
            JSONParser.members(ofObjectIn: bytes) { name, escaped, value, _ in
                let kind = PayloadProjection.kind(of: value, in: bytes)
                let field: Int
                if position < lastRow.count, !escaped, lastRow[position].bytes.elementsEqual(bytes[name]) {
                    field = lastRow[position].field
                } else {
                    let text = escaped ? JSONParser.stringContents(bytes[name]) : String(decoding: bytes[name], as: UTF8.self)
                    field = fieldIndex(text)
                    let entry = (bytes: Array(bytes[name]), field: field)
                    if position < lastRow.count { lastRow[position] = entry } else { lastRow.append(entry) }
                }
                kinds[field] = Self.widen(kinds[field], kind)
                position += 1
            }
            if position < lastRow.count { lastRow.removeSubrange(position...) }
        }
    }

    private mutating func fieldIndex(_ name: String) -> Int {
        if let known = index[name] { return known }
        names.append(name)
        kinds.append(nil)
        index[name] = names.count - 1
        return names.count - 1
    }

    var fields: [RecordField] {
        names.indices.map { RecordField(name: names[$0], kind: kinds[$0] ?? .text, position: $0) }
    }

    static func widen(_ a: ExportColumn.Kind?, _ b: ExportColumn.Kind?) -> ExportColumn.Kind? {
        guard let a else { return b }
        guard let b else { return a }
        func rank(_ kind: ExportColumn.Kind) -> Int {
            switch kind {
            case .integer: 0
            case .real: 1
            case .text: 2
            }
        }
        return rank(a) >= rank(b) ? a : b
    }
}

/// The table (and CSV file) of one records-file source: its key, then the
/// file's columns in the file's order with the file's types.
struct RecordTableLayout: Sendable, Equatable {
    var source: String
    /// ``ConsumerSchema/recordTable(source:taken:)``.
    var table: String
    /// The record's key (the job's `keyField` value as text): `key`, or
    /// `record_key` when the file has a column of its own named `key`.
    var keyColumn: String
    /// The file's columns: `name` as in the table (the header's name; a second
    /// spelling of a name SQLite treats as the same gets `_2`), `field` the
    /// record's member.
    var columns: [ExportColumn]

    /// The layout of `source` with `fields` (a registry, or what
    /// ``RecordFieldInference`` read off the rows), named `table`.
    init(source: String, table: String, fields: [RecordField]) {
        self.source = source
        self.table = table
        var taken: Set<String> = []
        var columns: [ExportColumn] = []
        for field in fields.sorted(by: { $0.position < $1.position }) {
            var name = field.name
            var counter = 2
            // SQLite compares identifiers case-blind (ASCII), so must this.
            while taken.contains(name.lowercased()) {
                name = "\(field.name)_\(counter)"
                counter += 1
            }
            taken.insert(name.lowercased())
            columns.append(ExportColumn(name, field.name, field.kind))
        }
        self.columns = columns
        var key = ConsumerSchema.keyColumn
        var counter = 2
        while taken.contains(key) {
            key = counter == 2 ? "record_key" : "record_key_\(counter)"
            counter += 1
        }
        keyColumn = key
        if columns.count + 1 > Self.sqliteColumnLimit {
            var extra = "extra"
            var counter = 2
            while taken.contains(extra) || extra == key {
                extra = "record_extra" + (counter == 2 ? "" : "_\(counter)")
                counter += 1
            }
            extraColumn = extra
        }
    }

    /// SQLite's default `SQLITE_MAX_COLUMN`: a table has at most this many columns.
    static let sqliteColumnLimit = 2_000

    /// Where the columns past SQLite's limit go, as one JSON object per row;
    /// nil for a file that fits (the table then has exactly the file's columns).
    var extraColumn: String?

    /// The columns the SQLite table has: all of the file's, or as many as fit
    /// beside the key and ``extraColumn``. The CSV keeps every column.
    var tableColumns: ArraySlice<ExportColumn> {
        extraColumn == nil ? columns[...] : columns.prefix(Self.sqliteColumnLimit - 2)
    }
}

/// Records-file rows (entity `record`) as their users' tables: one table,
/// and one CSV file, per source, in the file's own columns.
///
/// The columns are the store's field registry of each source (the file's
/// header order, each column typed by the widest value it has had); a store
/// without one (an older store's source no run has crawled since) has them
/// read off the rows (``RecordFieldInference``, one scan). The values are
/// then projected by the store like any entity's columns.
enum RecordTables {
    /// Every source's layout, in source-name order.
    static func layouts(store: any SnapshotStore) throws -> [RecordTableLayout] {
        // The registries first: when every source has one (every store a run
        // has written since registries exist), the rows need not be read here,
        // which was a second full read of the table per export.
        var registries: [String: [RegisteredField]] = [:]
        for source in try store.recordSources() {
            registries[source] = try store.registeredFields(source: source, entity: .record)
        }
        var inference: [String: RecordFieldInference] = [:]
        if registries.values.contains(where: \.isEmpty) {
            try store.forEachRecord(of: .record, columns: [], order: .insertion) { record in
                inference[record.source, default: RecordFieldInference()].observe(record.payload)
            }
        }
        let sources = inference.isEmpty ? Array(registries.keys) : Array(inference.keys)
        var taken: Set<String> = []
        return try sources.sorted().map { source in
            let table = ConsumerSchema.recordTable(source: source, taken: taken)
            taken.insert(table)
            let registered = try registries[source] ?? store.registeredFields(source: source, entity: .record)
            let fields = registered.isEmpty ? inference[source]?.fields ?? []
                : registered.enumerated().map { RecordField(name: $1.name, kind: columnKind($1.kind), position: $0) }
            return RecordTableLayout(source: source, table: table, fields: fields)
        }
    }

    /// The column type of a registry's kind (a ``FieldType``): dates are ISO
    /// 8601 text, and so is a column no row has filled (`empty`): all NULL.
    static func columnKind(_ kind: String) -> ExportColumn.Kind {
        switch kind {
        case "integer": .integer
        case "real": .real
        default: .text
        }
    }

    /// The row's key in its own file: the snapshot's key names the source
    /// too (`inventory:42`), so two files sharing keys stay apart.
    static func ownKey(_ record: ProjectedRecord) -> String {
        let prefix = record.source + ":"
        return record.key.hasPrefix(prefix) ? String(record.key.dropFirst(prefix.count)) : record.key
    }

    /// One projection for every source's rows: each member any source has,
    /// once; and, per source, where its columns are in it.
    static func projection(_ layouts: [RecordTableLayout]) -> (columns: [ExportColumn], positions: [String: [Int]]) {
        var columns: [ExportColumn] = []
        var index: [String: Int] = [:]
        var positions: [String: [Int]] = [:]
        for layout in layouts {
            positions[layout.source] = layout.columns.map { column in
                if let known = index[column.field] { return known }
                columns.append(ExportColumn(column.field, column.field))
                index[column.field] = columns.count - 1
                return columns.count - 1
            }
        }
        return (columns, positions)
    }

    /// Creates and fills every source's table; returns the rows written.
    static func copy(store: any SnapshotStore, into file: SQLiteFile, logger: Logger? = nil) throws -> Int {
        let layouts = try layouts(store: store)
        var inserts: [String: SQLiteFile.Statement] = [:]
        var wide: [String: RecordTableLayout] = [:]
        for layout in layouts {
            let definitions = ["\(ConsumerSchema.quoted(layout.keyColumn)) TEXT PRIMARY KEY"]
                + layout.tableColumns.map { "\(ConsumerSchema.quoted($0.name)) \($0.kind.rawValue)" }
                + (layout.extraColumn.map { ["\(ConsumerSchema.quoted($0)) TEXT"] } ?? [])
            let table = ConsumerSchema.quoted(layout.table)
            try file.execute("CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
            let placeholders = Array(repeating: "?", count: definitions.count).joined(separator: ", ")
            inserts[layout.source] = try file.prepare("INSERT INTO \(table) VALUES (\(placeholders))")
            if let extra = layout.extraColumn {
                wide[layout.source] = layout
                logger?.warning("""
                    \(layout.source): \(layout.columns.count) columns, more than a SQLite table holds (\(RecordTableLayout.sqliteColumnLimit) \
                    with the key): table \(layout.table) has the first \(layout.tableColumns.count) as columns and the other \
                    \(layout.columns.count - layout.tableColumns.count) as a JSON object in its column \(extra); the CSV has them all
                    """)
            }
        }
        let (columns, positions) = projection(layouts)
        var count = 0
        try store.forEachRecord(of: .record, columns: columns, order: .insertion) { record in
            guard let insert = inserts[record.source], let columns = positions[record.source] else { return }
            // Text cleaned as in every export (ExportText): the same text as the CSV files.
            insert.bind(1, ExportText.clean(ownKey(record)))
            let fitting = wide[record.source].map { columns.prefix($0.tableColumns.count) } ?? columns[...]
            for (index, position) in fitting.enumerated() { insert.bind(index + 2, ExportText.clean(record.values[position])) }
            if let layout = wide[record.source] {
                // The columns past the limit: the payload's members the table has no column for.
                let overflow = ExtraMembers.json(payload: record.payload, columns: Array(layout.tableColumns),
                                                 values: fitting.map { record.values[$0] })
                insert.bind(fitting.count + 2, overflow.map { StoredValue.text(ExportText.clean($0)) } ?? .null)
            }
            try insert.run()
            count += 1
        }
        return count
    }

    /// `{table}.csv` in `directory` for every source: the key, then the file's columns.
    static func writeCSV(directory: URL, options: CSVOptions, store: any SnapshotStore) throws -> [ExportedFile] {
        var files: [ExportedFile] = []
        let layouts = try layouts(store: store)
        for layout in layouts {
            let url = directory.appendingPathComponent("\(layout.table).csv")
            let header = [layout.keyColumn] + layout.columns.map(\.name)
            // One pass over the rows per source: a CSV file is written whole by one call.
            let table = CSVTableFile(header: header, columns: layout.columns, extra: false, source: layout.source, options: options)
            let rows = try table.write(to: url, entity: .record, store: store)
            files.append(ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows))
        }
        return files
    }
}
