import Catalog
import Foundation
import Snapshot

/// CSV reports over the snapshot, streamed row by row from the store so
/// memory does not grow with the table.
package enum CSVExport {
    static func options(_ spec: CSVExportOptions) -> CSVOptions {
        CSVOptions(delimiter: spec.delimiter.utf8.first ?? UInt8(ascii: ","), lineEnding: spec.crlf ? .crlf : .lf,
                   byteOrderMark: spec.byteOrderMark, neutralizeFormulas: spec.neutralizeFormulas)
    }

    /// One file per entity table of the consumer database, named like it
    /// (`podcasts.csv`, `chart_entries.csv`, …) with the same columns: `key`,
    /// the canonical fields, `extra` (members no column holds, JSON); one row
    /// per entity in the store's insertion order (stable from night to night,
    /// so two nights' files diff line by line). Every entity table has its
    /// file, empty but for its header when nothing was crawled. Records-file
    /// sources get one file each in their own columns (``RecordTables``).
    /// `datapackage.json` describes them all (``DataPackage``).
    static func writeTables(directory: URL, options spec: CSVExportOptions, context: ExportContext) throws -> [ExportedFile] {
        let csvOptions = options(spec)
        var files: [ExportedFile] = []
        let stored = try context.store.entities()
        let tables = ConsumerSchema.tables(holding: stored)
        for entity in tables {
            let columns = EntityColumns.columns(for: entity)
            let url = directory.appendingPathComponent("\(ConsumerSchema.table(for: entity)).csv")
            let header = [ConsumerSchema.keyColumn] + columns.map(\.name) + [ConsumerSchema.extraColumn]
            let table = CSVTableFile(header: header, columns: columns, extra: true, source: nil, options: csvOptions)
            let rows: Int
            if stored.contains(entity) {
                rows = try table.write(to: url, entity: entity, store: context.store)
            } else {
                rows = try CSVWriter.write(to: url, header: header, options: csvOptions) { _ in }
            }
            files.append(ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows))
        }
        if stored.contains(.record) {
            files += try RecordTables.writeCSV(directory: directory, options: csvOptions, store: context.store)
        }
        files.append(try DataPackage.write(directory: directory, entities: tables, options: spec, context: context))
        return files
    }

    /// The run's change log, one row per added/removed record and per changed field.
    static func writeChanges(to url: URL, options spec: CSVExportOptions, context: ExportContext) throws -> ExportedFile {
        let rows = try CSVWriter.write(to: url, header: changesHeader, options: options(spec)) { emit in
            try context.store.forEachChange(runID: context.runID, order: .record) { change in
                try emit(changeCells(change))
            }
        }
        return ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows)
    }

    /// The columns of `changes.csv`.
    package static let changesHeader = ["run", "source", "op", "entity", "key", "field", "before", "after"]

    /// One change as a row of `changes.csv`.
    package static func changeCells(_ change: ChangeRow) -> [CSVCell] {
        [.integer(change.runID), .text(change.source), .text(change.op), .text(change.entity), .text(change.key),
         change.field.map(CSVCell.text) ?? .null, readable(change.before), readable(change.after)]
    }

    /// A run's changes as `changes.csv` has them, streamed into `sink`
    /// (`storesync changes --csv` writes them to standard output); returns the rows.
    package static func writeChanges(runID: Int64, store: any SnapshotStore, options spec: CSVExportOptions,
                                     into sink: inout OutputSink) throws -> Int {
        var writer = CSVWriter(options: options(spec))
        try writer.writeHeader(changesHeader, into: &sink)
        try store.forEachChange(runID: runID, order: .record) { change in
            try writer.writeRow(changeCells(change), into: &sink)
        }
        try sink.flush()
        return writer.rowCount
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
    package static func readable(_ json: String?) -> CSVCell {
        guard let json else { return .null }
        switch try? JSONParser.parse(json) {
        case .string(let s)?: return .text(s)
        case .int(let i)?: return .integer(i)
        case .double(let d)?: return .real(d)
        case .number(let text)?: return .text(text)
        case .null?: return .null
        default: return .text(json)
        }
    }
}
