import Catalog
import Foundation
import Snapshot

/// CSV reports over the snapshot, streamed row by row from the store so
/// memory does not grow with the table.
enum CSVExport {
    static func options(_ spec: CSVExportOptions) -> CSVOptions {
        CSVOptions(delimiter: spec.delimiter.utf8.first ?? UInt8(ascii: ","), lineEnding: spec.crlf ? .crlf : .lf,
                   byteOrderMark: spec.byteOrderMark, neutralizeFormulas: spec.neutralizeFormulas)
    }

    /// `{entity}.csv` for every entity in the snapshot: source, key, the
    /// entity's fixed columns, and the whole payload last (so nothing is lost),
    /// one row per record in the store's insertion order (stable from night to
    /// night, so two nights' files diff line by line).
    static func writeTables(directory: URL, options spec: CSVExportOptions, context: ExportContext) throws -> [ExportedFile] {
        let csvOptions = options(spec)
        var files: [ExportedFile] = []
        for entity in try context.store.entities() {
            let columns = EntityColumns.columns(for: entity)
            let url = directory.appendingPathComponent("\(entity.rawValue).csv")
            let header = ["source", "key"] + columns.map(\.name) + ["payload"]
            let rows = try CSVWriter.write(to: url, header: header, options: csvOptions) { emit in
                var cells: [CSVCell] = []
                cells.reserveCapacity(header.count)
                try context.store.forEachRecord(of: entity, columns: columns, order: .insertion) { record in
                    cells.removeAll(keepingCapacity: true)
                    cells.append(.text(record.source))
                    cells.append(.text(record.key))
                    for value in record.values { cells.append(cell(value)) }
                    cells.append(.text(record.payload))
                    try emit(cells)
                }
            }
            files.append(ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows))
        }
        return files
    }

    /// The run's change log, one row per added/removed record and per changed field.
    static func writeChanges(to url: URL, options spec: CSVExportOptions, context: ExportContext) throws -> ExportedFile {
        let header = ["run", "source", "op", "entity", "key", "field", "before", "after"]
        let rows = try CSVWriter.write(to: url, header: header, options: options(spec)) { emit in
            try context.store.forEachChange(runID: context.runID, order: .record) { change in
                try emit([.integer(change.runID), .text(change.source), .text(change.op), .text(change.entity), .text(change.key),
                          change.field.map(CSVCell.text) ?? .null, readable(change.before), readable(change.after)])
            }
        }
        return ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows)
    }

    static func cell(_ value: StoredValue) -> CSVCell {
        switch value {
        case .null: .null
        case .integer(let i): .integer(i)
        case .real(let d): .real(d)
        case .text(let s): .text(s)
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
