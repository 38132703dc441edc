import Catalog
import Foundation
import Snapshot

/// `datapackage.json` beside the `csv` export's files: a Frictionless Tabular
/// Data Package describing each file's dialect and columns (types, meanings,
/// the primary key, the foreign keys the consumer database declares), so
/// pandas, `frictionless` and spreadsheets read `key` as text, counts as
/// integers and dates as dates.
///
/// Frictionless rather than CSV on the Web: one JSON file that the
/// `frictionless` package validates end to end (the file against its schema,
/// keys and links included), that `pandas` and Datasette's tools read, and
/// whose Table Schema is the one Data Package, dlt and CKAN speak; CSVW's
/// tooling (csvlint, rdf-tabular) is Ruby-only and barely kept up.
enum DataPackage {
    /// The Table Schema type of a column: dates are ISO 8601 text, with a
    /// time and zone when the source gives them and a bare date or a local
    /// time when it does not, so they are `datetime` in any of those forms.
    static func field(_ column: ExportColumn, description: String?) -> JSONValue {
        var field: [String: JSONValue] = ["name": .string(column.name)]
        switch column.kind {
        case .integer: field["type"] = .string("integer")
        case .real: field["type"] = .string("number")
        case .text:
            if column.name.hasSuffix("_date") || column.name.hasSuffix("_at") {
                field["type"] = .string("datetime")
                field["format"] = .string("any")
            } else {
                field["type"] = .string("string")
            }
        }
        if let description { field["description"] = .string(description) }
        return .object(field)
    }

    static func resource(name: String, path: String, fields: [JSONValue], primaryKey: String,
                         foreignKeys: [ConsumerSchema.ForeignKey], options: CSVExportOptions, description: String?) -> JSONValue {
        var resource: [String: JSONValue] = [
            "name": .string(name), "path": .string(path), "profile": .string("tabular-data-resource"),
            "format": .string("csv"), "mediatype": .string("text/csv"),
            "encoding": .string(options.byteOrderMark ? "utf-8-sig" : "utf-8"),
            "dialect": .object([
                "delimiter": .string(options.delimiter), "lineTerminator": .string(options.crlf ? "\r\n" : "\n"),
                "quoteChar": .string("\""), "doubleQuote": .bool(true), "header": .bool(true),
            ]),
        ]
        var schema: [String: JSONValue] = ["fields": .array(fields), "primaryKey": .array([.string(primaryKey)])]
        if !foreignKeys.isEmpty {
            schema["foreignKeys"] = .array(foreignKeys.map { key in
                .object(["fields": .array([.string(key.column)]),
                         "reference": .object(["resource": .string(key.table), "fields": .array([.string(key.targetColumn)])])])
            })
        }
        resource["schema"] = .object(schema)
        if let description { resource["description"] = .string(description) }
        return .object(resource)
    }

    /// The package of the files ``CSVExport/writeTables(directory:options:context:)`` wrote.
    /// `links`: the foreign keys to declare, by table (``linksThatHold(_:chartItems:store:)``).
    static func document(entities: [EntityKind], links: [String: [ConsumerSchema.ForeignKey]], records: [RecordTableLayout],
                         options: CSVExportOptions, context: ExportContext) -> JSONValue {
        var resources: [JSONValue] = []
        for entity in entities {
            let table = ConsumerSchema.table(for: entity)
            let columns = [ExportColumn(ConsumerSchema.keyColumn, ConsumerSchema.keyColumn)] + EntityColumns.columns(for: entity)
                + [ExportColumn(ConsumerSchema.extraColumn, ConsumerSchema.extraColumn)]
            let foreignKeys = links[table] ?? []
            resources.append(resource(name: table, path: "\(table).csv",
                                      fields: columns.map { field($0, description: ExportDescriptions.column($0.name, of: entity)) },
                                      primaryKey: ConsumerSchema.keyColumn, foreignKeys: foreignKeys, options: options,
                                      description: ExportDescriptions.table(entity)))
        }
        for layout in records {
            let columns = [ExportColumn(layout.keyColumn, layout.keyColumn)] + layout.columns
            resources.append(resource(name: layout.table, path: "\(layout.table).csv", fields: columns.map { field($0, description: nil) },
                                      primaryKey: layout.keyColumn, foreignKeys: [], options: options,
                                      description: "One row per row of the records file of source '\(layout.source)'."))
        }
        return .object([
            "profile": .string("tabular-data-package"),
            "name": .string(ConsumerSchema.snakeCase(context.jobName, fallback: "storesync").replacingOccurrences(of: "_", with: "-")),
            "title": .string("storesync: \(context.jobName)"),
            "description": .string("The tables of the storesync job \(context.jobName), one CSV file per table. Column meanings: docs/entities.md."),
            "resources": .array(resources),
        ])
    }

    /// The consumer database's foreign keys that this night's files keep:
    /// a Table Schema's foreign key is a promise every row keeps (`frictionless
    /// validate` checks it), while the database declares its links for tools
    /// and allows orphans (an episode whose podcast was not crawled). So a
    /// link is declared here only where no row names a key its table lacks,
    /// and only between text columns, as a key is text (a maker's integer
    /// `artist_id` would never equal one).
    static func linksThatHold(_ entities: [EntityKind], chartItems: Set<String>,
                              store: any SnapshotStore) throws -> [String: [ConsumerSchema.ForeignKey]] {
        var links: [String: [ConsumerSchema.ForeignKey]] = [:]
        for entity in entities {
            for key in ConsumerSchema.foreignKeys(of: entity, chartItems: chartItems) {
                guard let target = entities.first(where: { ConsumerSchema.table(for: $0) == key.table }),
                      key.targetColumn == ConsumerSchema.keyColumn,
                      CanonicalSchema.field(key.column, of: entity)?.kind == .text,
                      try store.unlinkedCount(of: entity, field: key.column, target: target) == 0 else { continue }
                links[ConsumerSchema.table(for: entity), default: []].append(key)
            }
        }
        return links
    }

    static func write(directory: URL, entities: [EntityKind], options: CSVExportOptions, context: ExportContext) throws -> ExportedFile {
        let stored = try context.store.entities()
        let chartItems = stored.contains(.chartEntry) ? try SQLiteExport.chartItemEntities(context.store) : []
        let records = try stored.contains(.record) ? RecordTables.layouts(store: context.store) : []
        let links = try linksThatHold(entities, chartItems: chartItems, store: context.store)
        let url = directory.appendingPathComponent("datapackage.json")
        return try PrettyJSON.write(document(entities: entities, links: links, records: records, options: options, context: context),
                                    to: url)
    }
}
