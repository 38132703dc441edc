import Catalog
import Foundation

/// Keeps `field_registry` in step with what a source sends, within a page's
/// transaction: a field never seen from this source before is added (at the
/// next position, in the source's own column order where it gives one), and
/// a field whose values changed type is widened and marked, so the run report
/// can say both the night it happens.
struct FieldRegistryWriter: Sendable {
    private struct Known {
        var kind: String
    }

    private let source: String
    private let runID: Int64
    private var known: [String: [String: Known]] = [:]
    private var nextPosition: [String: Int] = [:]
    /// Per entity, the last shape noted: every field in it is known, of its type.
    private var knownShape: [String: FieldShape] = [:]

    /// What `db` holds of `source`'s registry. The writer then stays valid
    /// across the pages of one transaction: it knows what it wrote itself.
    init(_ db: any SQLSession, source: String, runID: Int64) throws {
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

    /// The kind of a field the source's own column order names (a CSV
    /// file's header) but whose every value so far was missing (empty
    /// cells). Registered so the column keeps its place in the order, and
    /// so its first value gives its type rather than widening a guess.
    static let noValueKind = "empty"

    /// Whether a value of `kind` makes a field of kind `seen` wider.
    static func widens(_ kind: String, _ seen: String) -> Bool {
        kind != seen && widened(seen, kind) != seen
    }

    /// The type a column holding both kinds has.
    static func widened(_ a: String, _ b: String) -> String {
        if a == b { return a }
        if a == noValueKind { return b }
        if b == noValueKind { return a }
        let numbers: Set = ["integer", "real"]
        if numbers.contains(a), numbers.contains(b) { return "real" }
        return "text"
    }

    /// The names of `fields` in the order ``note(_:_:order:)`` takes them.
    private static func names(_ keys: some Collection<String>, order: [String]?) -> [String] {
        guard let order else { return keys.sorted() }
        // One set per record, not one per field: this runs for every row a load writes.
        let listed = Set(order)
        return order + keys.filter { !listed.contains($0) }.sorted()
    }

    /// Whether noting `fields` would change nothing: every field, and every
    /// column `order` names, is known, and no value widens its field's type.
    private static func changesNothing(_ known: [String: Known]?, _ fields: [String: JSONValue], order: [String]?) -> Bool {
        guard let known else { return false }
        for (field, value) in fields {
            guard let seen = known[field] else { return false }
            if let kind = kind(of: value), widens(kind, seen.kind) { return false }
        }
        return order?.allSatisfy { known[$0] != nil } ?? true
    }

    /// Notes the fields of one record, in `order` where the source gives its
    /// own. A field `order` names that the record lacks is noted too: the
    /// order is the source's columns, and a column must keep its place
    /// whichever row first fills it (or if none does).
    mutating func note(_ entity: EntityKind, _ fields: [String: JSONValue], order: [String]?, in db: any SQLSession) throws {
        let name = entity.rawValue
        // Nearly every record of a source has fields the registry knows, of the
        // types it knows: checked in any order, with no sort (this runs for every
        // record a load writes), before the ordered pass that registers.
        guard !Self.changesNothing(known[name], fields, order: order) else { return }
        for field in Self.names(fields.keys, order: order) {
            let value = fields[field]
            try register(name, field, present: value != nil, kind: value.flatMap(Self.kind(of:)), in: db)
        }
    }

    /// ``note(_:_:order:)`` for a record whose fields were never built: their
    /// names and types (``Record/shape``), in canonical order.
    mutating func note(_ entity: EntityKind, shape: FieldShape, order: [String]?, in db: any SQLSession) throws {
        let name = entity.rawValue
        // Rows of one file share their shape (one array for all): known once, known for all.
        if order == nil, knownShape[name] == shape { return }
        defer { if order == nil { knownShape[name] = shape } }
        if let known = known[name],
           zip(shape.names, shape.types).allSatisfy({ field, type in
               guard let seen = known[field] else { return false }
               return type.map { !Self.widens($0.rawValue, seen.kind) } ?? true
           }),
           order?.allSatisfy({ known[$0] != nil }) ?? true {
            return
        }
        let types = Dictionary(zip(shape.names, shape.types), uniquingKeysWith: { _, last in last })
        for field in Self.names(shape.names, order: order) {
            let type = types[field]
            try register(name, field, present: type != nil, kind: type.flatMap { $0?.rawValue }, in: db)
        }
    }

    /// Registers one field of entity `name` (`present` false: a column the
    /// source's order names that the record lacks), or widens its kind.
    private mutating func register(_ name: String, _ field: String, present: Bool, kind: String?, in db: any SQLSession) throws {
        if let seen = known[name]?[field] {
            guard let kind, Self.widens(kind, seen.kind) else { return }
            let wider = Self.widened(seen.kind, kind)
            if seen.kind == Self.noValueKind {
                // The column's first value: its type, not a change of it.
                try db.execute("UPDATE field_registry SET kind = ? WHERE source = ? AND entity = ? AND field = ?",
                               [wider, source, name, field])
            } else {
                try db.execute("""
                    UPDATE field_registry SET kind = ?, previous_kind = ?, kind_changed_run = ? WHERE source = ? AND entity = ? AND field = ?
                    """, [wider, seen.kind, runID, source, name, field])
            }
            known[name]?[field] = Known(kind: wider)
            return
        }
        // Only a field the record lacks waits for its first value; a JSON null is registered as text, as it always was.
        let registered = present ? kind ?? "text" : Self.noValueKind
        let position = nextPosition[name] ?? 0
        nextPosition[name] = position + 1
        try db.execute("""
            INSERT INTO field_registry (source, entity, field, kind, position, first_run) VALUES (?, ?, ?, ?, ?, ?)
            """, [source, name, field, registered, position, runID])
        known[name, default: [:]][field] = Known(kind: registered)
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
