import Catalog
import Foundation
import GRDB
import Snapshot

/// CSV reports over the snapshot, streamed row by row from SQLite so memory
/// does not grow with the table.
enum CSVExport {
    static func options(_ spec: CSVExportOptions) -> CSVOptions {
        CSVOptions(delimiter: spec.delimiter.utf8.first ?? UInt8(ascii: ","), lineEnding: spec.crlf ? .crlf : .lf,
                   byteOrderMark: spec.byteOrderMark, neutralizeFormulas: spec.neutralizeFormulas)
    }

    /// `{entity}.csv` for every entity in the snapshot: source, key, the
    /// entity's fixed columns, and the whole payload last (so nothing is lost),
    /// one row per record in the order the snapshot first stored them.
    static func writeTables(directory: URL, options spec: CSVExportOptions, context: ExportContext) throws -> [ExportedFile] {
        let csvOptions = options(spec)
        return try context.store.reader.read { db in
            var files: [ExportedFile] = []
            for entity in try SnapshotExporter.entities(db) {
                let columns = EntityColumns.columns(for: entity)
                let url = directory.appendingPathComponent("\(entity.rawValue).csv")
                let header = ["source", "key"] + columns.map(\.name) + ["payload"]
                let selected = (["source", "key"] + columns.map { _ in "json_extract(payload, ?)" } + ["payload"]).joined(separator: ", ")
                let arguments = StatementArguments(columns.map(\.jsonPath) + [entity.rawValue])
                let rows = try CSVWriter.write(to: url, header: header, options: csvOptions) { emit in
                    // Rows in the order the snapshot first stored them: a sequential read (ordering a
                    // million rows by key spilled ~1 GB to a temporary B-tree and doubled the
                    // export's time), stable from night to night (a changed record keeps its place,
                    // new ones come last), so two nights' files diff line by line.
                    let cursor = try Row.fetchCursor(db, sql: "SELECT \(selected) FROM records WHERE entity = ? ORDER BY rowid",
                                                     arguments: arguments)
                    var cells: [CSVCell] = []
                    cells.reserveCapacity(header.count)
                    while let row = try cursor.next() {
                        cells.removeAll(keepingCapacity: true)
                        for index in 0..<header.count { cells.append(cell(row[index] as DatabaseValue)) }
                        try emit(cells)
                    }
                }
                files.append(ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows))
            }
            return files
        }
    }

    /// The run's change log, one row per added/removed record and per changed field.
    static func writeChanges(to url: URL, options spec: CSVExportOptions, context: ExportContext) throws -> ExportedFile {
        let header = ["run", "source", "op", "entity", "key", "field", "before", "after"]
        let rows = try context.store.reader.read { db in
            try CSVWriter.write(to: url, header: header, options: options(spec)) { emit in
                let cursor = try Row.fetchCursor(db, sql: """
                    SELECT run_id, source, op, entity, key, field, before, after FROM changes
                    WHERE run_id = ? ORDER BY source, entity, key, op, field
                    """, arguments: [context.runID])
                while let row = try cursor.next() {
                    try emit([.integer(row[0] as Int64), .text(row[1]), .text(row[2]), .text(row[3]), .text(row[4]),
                              (row[5] as String?).map(CSVCell.text) ?? .null,
                              readable(row[6]), readable(row[7])])
                }
            }
        }
        return ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows)
    }

    static func cell(_ value: DatabaseValue) -> CSVCell {
        switch value.storage {
        case .null: .null
        case .int64(let i): .integer(i)
        case .double(let d): .real(d)
        case .string(let s): .text(s)
        case .blob(let data): .text(data.base64EncodedString())
        }
    }

    /// Before/after values are stored as canonical JSON; a person reading the
    /// report wants `Old name`, not `"Old name"`.
    static func readable(_ json: String?) -> CSVCell {
        guard let json else { return .null }
        switch try? JSONParser.parse(json) {
        case .string(let s)?: return .text(s)
        case .int(let i)?: return .integer(i)
        case .double(let d)?: return .real(d)
        case .null?: return .null
        default: return .text(json)
        }
    }
}
