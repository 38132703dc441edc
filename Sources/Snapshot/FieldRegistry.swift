import Catalog
import Foundation
import GRDB

/// Keeps `field_registry` in step with what a source sends, within a page's
/// transaction: a field never seen from this source before is added (at the
/// next position, in the source's own column order where it gives one), and
/// a field whose values changed type is widened and marked, so the run report
/// can say both the night it happens.
struct FieldRegistryWriter {
    private struct Known {
        var kind: String
    }

    private let db: any SQLSession
    private let source: String
    private let runID: Int64
    private var known: [String: [String: Known]] = [:]
    private var nextPosition: [String: Int] = [:]

    init(_ db: any SQLSession, source: String, runID: Int64) throws {
        self.db = db
        self.source = source
        self.runID = runID
        for row in try db.rows("SELECT entity, field, kind, position FROM field_registry WHERE source = ?",
                                    [source]) {
            let entity: String = row[0]
            known[entity, default: [:]][row[1]] = Known(kind: row[2])
            nextPosition[entity] = max(nextPosition[entity] ?? 0, (row[3] as Int) + 1)
        }
    }

    /// The registry's name for the type of `value`: a user's table's column
    /// types (``FieldType``), nil for null (it says nothing about the type).
    static func kind(of value: JSONValue) -> String? {
        FieldType.of(value)?.rawValue
    }

    /// The type a column holding both kinds has.
    static func widened(_ a: String, _ b: String) -> String {
        if a == b { return a }
        let numbers: Set = ["integer", "real"]
        if numbers.contains(a), numbers.contains(b) { return "real" }
        return "text"
    }

    /// The names of `fields` in the order ``note(_:_:order:)`` takes them.
    private static func names(_ fields: [String: JSONValue], order: [String]?) -> [String] {
        guard let order else { return fields.keys.sorted() }
        // One set per record, not one per field: this runs for every row a load writes.
        let listed = Set(order)
        return order + fields.keys.filter { !listed.contains($0) }.sorted()
    }

    /// What ``note(_:_:order:)`` depends on in a record: its entity and its
    /// fields' names and kinds, in order. Noting a second record of the same
    /// shape changes nothing, so a load notes each shape of a page once.
    static func shape(_ entity: EntityKind, _ fields: [String: JSONValue], order: [String]?) -> String {
        var shape = entity.rawValue
        for field in names(fields, order: order) {
            guard let value = fields[field] else { continue }
            shape.append("\u{1}")
            shape.append(field)
            shape.append("\u{2}")
            shape.append(kind(of: value) ?? "")
        }
        return shape
    }

    /// Notes the fields of one record, in `order` where the source gives its own.
    mutating func note(_ entity: EntityKind, _ fields: [String: JSONValue], order: [String]?) throws {
        let name = entity.rawValue
        for field in Self.names(fields, order: order) {
            guard let value = fields[field] else { continue }
            let kind = Self.kind(of: value)
            if let seen = known[name]?[field] {
                guard let kind, kind != seen.kind, Self.widened(seen.kind, kind) != seen.kind else { continue }
                let wider = Self.widened(seen.kind, kind)
                try db.execute("""
                    UPDATE field_registry SET kind = ?, previous_kind = ?, kind_changed_run = ? WHERE source = ? AND entity = ? AND field = ?
                    """, [wider, seen.kind, runID, source, name, field])
                known[name]?[field] = Known(kind: wider)
                continue
            }
            let position = nextPosition[name] ?? 0
            nextPosition[name] = position + 1
            try db.execute("""
                INSERT INTO field_registry (source, entity, field, kind, position, first_run) VALUES (?, ?, ?, ?, ?, ?)
                """, [source, name, field, kind ?? "text", position, runID])
            known[name, default: [:]][field] = Known(kind: kind ?? "text")
        }
    }
}

extension SQLSnapshotStore {
    package func registeredFields(source: String, entity: EntityKind) throws(StoreSyncError) -> [RegisteredField] {
        try wrap {
            try engine.read { db in
                try db.rows("""
                    SELECT field, kind, first_run FROM field_registry WHERE source = ? AND entity = ? ORDER BY position
                    """, [source, entity.rawValue]).map {
                    RegisteredField(source: source, entity: entity, name: $0[0], kind: $0[1], firstRun: $0[2])
                }
            }
        }
    }

    package func schemaChanges(runID: Int64) throws(StoreSyncError) -> [SchemaChange] {
        try wrap {
            try engine.read { db in
                // A source's first night registers every field: that is its baseline, not news.
                try db.rows("""
                    SELECT f.source, f.entity, f.field, f.kind, f.previous_kind, f.first_run FROM field_registry f
                    WHERE (f.first_run = ? AND EXISTS (SELECT 1 FROM field_registry o WHERE o.source = f.source AND o.first_run < ?))
                       OR f.kind_changed_run = ?
                    ORDER BY f.source, f.entity, f.position
                    """, [runID, runID, runID]).compactMap { row in
                    guard let entity = EntityKind(rawValue: row[1]) else { return nil }
                    let isNew = (row[5] as Int64) == runID
                    return SchemaChange(source: row[0], entity: entity, field: row[2], kind: row[3],
                                        previousKind: isNew ? nil : row[4])
                }
            }
        }
    }
}
