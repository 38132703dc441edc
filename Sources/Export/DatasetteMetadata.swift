import Catalog
import Foundation
import Snapshot

/// Datasette's `metadata.json` for a consumer database (the `sqlite` export's
/// `metadata:` path): a title, and for every table and view a description,
/// its columns' meanings (``ExportDescriptions``), the column that labels a
/// row in links (`name`), the facets worth a click and a sort order (most
/// recently changed first). `datasette demo.sqlite --metadata metadata.json`.
enum DatasetteMetadata {
    /// Facets Datasette shows on a table's page without being asked: the
    /// columns a person filters by first, where the table has them.
    static let facetColumns = ["genre", "chart", "country", "currency", "vendor_name", "podcast"]

    static func document(database: String, entities: [EntityKind], recordTables: [(table: String, source: String)], history: Bool,
                         context: ExportContext) -> JSONValue {
        var tables: [String: JSONValue] = [:]
        for entity in entities {
            let table = ConsumerSchema.table(for: entity)
            let fields = EntityColumns.columns(for: entity).map(\.name) + [ConsumerSchema.extraColumn]
            let columns = [ConsumerSchema.idColumn, ConsumerSchema.keyColumn] + fields + ConsumerSchema.seenColumnNames
            var described = describe(columns, of: entity)
            described["description"] = .string(ExportDescriptions.table(entity))
            described["sort_desc"] = .string("last_changed_run")
            let facets = facetColumns.filter { columns.contains($0) && !(entity == .episode && $0 == "podcast") }
            if !facets.isEmpty { described["facets"] = .array(facets.map(JSONValue.string)) }
            if columns.contains("name") { described["label_column"] = .string("name") }
            tables[table] = .object(described)
            if history {
                var versions = describe(ConsumerSchema.versionColumnNames + fields, of: entity)
                versions["description"] = .string("Every version of the \(table) rows within the change log's days, oldest first: "
                                                  + "a version is valid from one run until the next that changed or removed the entity.")
                versions["facets"] = .array([.string("_event"), .string("_deleted")])
                versions["sort_desc"] = .string("_valid_from_run")
                if columns.contains("name") { versions["label_column"] = .string("name") }
                tables[ConsumerSchema.historyTable(for: table)] = .object(versions)
            }
        }
        for (table, description) in ExportDescriptions.otherTables {
            var described: [String: JSONValue] = ["description": .string(description)]
            if let columns = ExportDescriptions.otherColumns[table] {
                described["columns"] = .object(columns.mapValues(JSONValue.string))
            }
            switch table {
            case "changes":
                described["facets"] = .array(["op", "entity", "source"].map(JSONValue.string))
                described["sort_desc"] = .string("run_id")
            case "runs":
                described["sort_desc"] = .string("id")
            case "vendors":
                described["label_column"] = .string("name")
            default: break
            }
            tables[table] = .object(described)
        }
        for record in recordTables {
            tables[record.table] = .object(["description": .string("One row per row of the records file of source '\(record.source)', "
                                                                   + "in the file's own columns.")])
        }
        return .object([
            "title": .string("storesync: \(context.jobName)"),
            "description": .string("The consumer database of the storesync job \(context.jobName): one table per entity, "
                                   + "the change log and the runs. Column meanings: docs/entities.md."),
            "databases": .object([database: .object(["tables": .object(tables)])]),
        ])
    }

    static func describe(_ columns: [String], of entity: EntityKind) -> [String: JSONValue] {
        var meanings: [String: JSONValue] = [:]
        for column in columns {
            if let meaning = ExportDescriptions.column(column, of: entity) { meanings[column] = .string(meaning) }
        }
        return ["columns": .object(meanings)]
    }

    /// Writes the metadata of the database published at `database` to `url`.
    static func write(to url: URL, database: URL, history: Bool, context: ExportContext) throws -> ExportedFile {
        let stored = try context.store.entities()
        let entities = ConsumerSchema.tables(holding: stored)
        let recordTables = try stored.contains(.record)
            ? RecordTables.layouts(store: context.store).map { (table: $0.table, source: $0.source) } : []
        let name = database.deletingPathExtension().lastPathComponent
        return try PrettyJSON.write(document(database: name, entities: entities, recordTables: recordTables, history: history,
                                             context: context), to: url)
    }
}
