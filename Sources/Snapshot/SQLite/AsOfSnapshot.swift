import Catalog
import Foundation
import GRDB

/// What a store held after one night, rebuilt from what it holds now.
///
/// Runs, their counters and the change log up to that run are rows the store
/// still keeps. The entities are undone night by night from their current
/// rows: a change row gives back a field's value before, a removal the whole
/// record with the id and first run it had (kept since those columns exist),
/// an addition takes the entity away. The result is an ordinary SQLite
/// store, so every export reads it as it reads the live one. Exact back to
/// the oldest run and change retention keeps (``AsOfSummary/unknownIDs``
/// counts what the log could not give back).
package enum AsOfSnapshot {
    /// What a rebuilt store holds, and what it could not know.
    package struct AsOfSummary: Sendable, Equatable {
        package var run: Int64
        package var entities = 0
        /// Entities undone from a removal logged before removals kept their
        /// id: they get a new id (after every other), so the files order them
        /// last, where that night had them in their place.
        package var unknownIDs = 0
    }

    /// Writes the store `source` (a SQLite snapshot file) as it was after
    /// `run` into a new store at `path`.
    package static func materialize(from source: String, asOf run: Int64, into path: String) throws -> AsOfSummary {
        // The schema of this version, migrations and all.
        _ = try SQLSnapshotStore(path: path)
        var summary = AsOfSummary(run: run)
        let queue = try DatabaseQueue(path: path)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS source", arguments: [source])
            try db.inTransaction {
                for (table, filter) in [("runs", "id <= ?"), ("run_sources", "run_id <= ?"), ("changes", "run_id <= ?"),
                                        ("field_registry", "first_run <= ?")] {
                    let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
                        .map { "\"\($0)\"" }.joined(separator: ", ")
                    try db.execute(sql: "INSERT INTO main.\(table) (\(columns)) SELECT \(columns) FROM source.\(table) WHERE \(filter)",
                                   arguments: [run])
                }
                try db.execute(sql: "INSERT INTO main.store_meta SELECT * FROM source.store_meta WHERE name NOT IN (SELECT name FROM main.store_meta)")
                try rebuildEntities(db, asOf: run, summary: &summary)
                return .commit
            }
            try db.execute(sql: "DETACH DATABASE source")
        }
        return summary
    }

    /// One entity as the night left it.
    private struct EntityState {
        var rowid: Int64?
        var fields: String?
        var sources: String
        var addedRun: Int64
        var changedRun: Int64?
    }

    private static func rebuildEntities(_ db: Database, asOf run: Int64, summary: inout AsOfSummary) throws {
        // Every change after the night, by entity: what is undone (the night's churn since, not the catalogue).
        var steps: [EntityKey: [ChangeStep]] = [:]
        let logged = try Row.fetchCursor(db, sql: """
            SELECT entity, key, op, field, before, source, entity_rowid, entity_added_run FROM source.changes
            WHERE run_id > ? ORDER BY id
            """, arguments: [run])
        while let row = try logged.next() {
            steps[EntityKey(entity: row[0], key: row[1]), default: []].append(
                ChangeStep(op: row[2], field: row[3], before: row[4], source: row[5], rowid: row[6], addedRun: row[7]))
        }
        let insert = try db.makeStatement(sql: """
            INSERT INTO main.entities (rowid, entity, key, fields, hash, sources, parts, added_run, changed_run)
            VALUES (?, ?, ?, ?, 0, ?, NULL, ?, ?)
            """)
        var unknown: [(EntityKey, EntityState)] = []
        func write(_ key: EntityKey, _ row: EntityState) throws {
            guard let fields = row.fields else { return }
            guard let rowid = row.rowid else {
                unknown.append((key, row))
                return
            }
            let changed = try row.changedRun ?? lastChange(db, key, from: row.addedRun, through: run)
            try insert.execute(arguments: [rowid, key.entity, key.key, fields, row.sources, row.addedRun, changed])
            summary.entities += 1
        }
        let current = try Row.fetchCursor(db, sql: """
            SELECT rowid, entity, key, fields, sources, added_run, changed_run FROM source.entities ORDER BY rowid
            """)
        while let stored = try current.next() {
            let key = EntityKey(entity: stored[1], key: stored[2])
            var row = EntityState(rowid: stored[0], fields: stored[3], sources: stored[4], addedRun: stored[5], changedRun: stored[6])
            if let undo = steps.removeValue(forKey: key) { row = undone(row, by: undo) }
            try write(key, row)
        }
        // Entities gone since the night: their removal gives them back.
        for (key, undo) in steps.sorted(by: { ($0.key.entity, $0.key.key) < ($1.key.entity, $1.key.key) }) {
            try write(key, undone(EntityState(rowid: nil, fields: nil, sources: "", addedRun: 0, changedRun: nil), by: undo))
        }
        // Removed before removals kept their id: placed after every other.
        var next = (try Int64.fetchOne(db, sql: "SELECT max(rowid) FROM source.entities") ?? 0)
        next = max(next, try Int64.fetchOne(db, sql: "SELECT max(rowid) FROM main.entities") ?? 0)
        for (key, row) in unknown {
            next += 1
            var placed = row
            placed.rowid = next
            try write(key, placed)
            summary.unknownIDs += 1
        }
    }

    private struct EntityKey: Hashable {
        var entity: String
        var key: String
    }

    private struct ChangeStep {
        var op: String
        var field: String?
        var before: String?
        var source: String
        var rowid: Int64?
        var addedRun: Int64?
    }

    /// `row` with `steps` (its changes after the night, oldest first) undone, newest first.
    private static func undone(_ row: EntityState, by steps: [ChangeStep]) -> EntityState {
        var row = row
        var members: [String: JSONValue]?
        for step in steps.reversed() {
            switch step.op {
            case "changed":
                guard let field = step.field else { continue }
                if members == nil { members = parse(row.fields) }
                members?[field] = step.before.flatMap { try? JSONParser.parse($0) }
                row.changedRun = nil
            case "removed":
                members = nil
                row.fields = step.before
                row.rowid = step.rowid
                row.addedRun = step.addedRun ?? 0
                row.sources = step.source
                row.changedRun = nil
            default:  // added: the entity was not there before
                members = nil
                row.fields = nil
            }
            if let parsed = members {
                row.fields = String(decoding: CanonicalJSON.encodeObject(parsed), as: UTF8.self)
            }
        }
        return row
    }

    private static func parse(_ text: String?) -> [String: JSONValue] {
        guard let text, case .object(let members)? = try? JSONParser.parse(text) else { return [:] }
        return members
    }

    /// The last run up to `run` that changed the entity since `from` (its incarnation's first run), else `from`.
    private static func lastChange(_ db: Database, _ key: EntityKey, from: Int64, through run: Int64) throws -> Int64 {
        try Int64.fetchOne(db, sql: """
            SELECT max(run_id) FROM source.changes WHERE entity = ? AND key = ? AND op = 'changed' AND run_id BETWEEN ? AND ?
            """, arguments: [key.entity, key.key, from, run]) ?? from
    }
}
