import Catalog
import Foundation

/// Copies every table of one snapshot into another, whichever their
/// engines: `storesync migrate` (SQLite → PostgreSQL and back) and the
/// SQLite mirror that exports read a PostgreSQL store through.
///
/// Rows keep their ids (rowids, run ids, change ids), so a copy is the same
/// store: the same exports, the same history, the same resume point.
enum StoreCopy {
    /// Every table, parents before the rows that refer to them, and the columns that order each.
    static let tables: [(name: String, order: String)] = [
        ("store_meta", "name"),
        ("runs", "id"),
        ("run_sources", "run_id, source"),
        ("changes", "id"),
        ("records", "rowid"),
        ("entities", "rowid"),
        ("scopes", "source, scope"),
        ("run_pages", "run_id, source, scope, page"),
        ("misses", "source, entity, key"),
        ("page_memos", "source, scope, page"),
        ("pending_inputs", "consumer, entity, key"),
        ("field_registry", "source, entity, field"),
    ]

    /// What a copy moved: rows per table, in ``tables`` order.
    struct Counts: Equatable, Sendable {
        var rows: [(table: String, count: Int)] = []
        static func == (a: Counts, b: Counts) -> Bool {
            a.rows.map(\.table) == b.rows.map(\.table) && a.rows.map(\.count) == b.rows.map(\.count)
        }
    }

    /// The columns of `table` as `db` has them (SQLite's implicit rowid named
    /// where the PostgreSQL side has it as a column).
    static func columns(_ db: any SQLSession, _ table: String) throws -> [String] {
        try db.dialect.columns(db, table)
    }

    /// Rows in `db`'s tables (the ones a copy moves).
    static func counts(_ db: any SQLSession) throws -> Counts {
        var counts = Counts()
        for table in tables {
            counts.rows.append((table.name, try db.value(as: Int.self, "SELECT count(*) FROM \(table.name)") ?? 0))
        }
        return counts
    }

    /// Copies every row of `source` into `destination`, which must hold none
    /// (its schema is the caller's: open it as a store first). One transaction
    /// on the destination: a copy interrupted leaves it empty, never half-filled.
    static func copy(from source: any SQLEngine, to destination: any SQLEngine) throws -> Counts {
        try destination.write { target in
            try source.read { origin in
                for table in tables {
                    if try target.value(as: Bool.self, "SELECT EXISTS (SELECT 1 FROM \(table.name))") == true {
                        throw StoreSyncError.storage(path: table.name, reason: "the destination already holds rows in \(table.name)",
                                                     remedy: "Copy into a new, empty store")
                    }
                }
                // Columns both sides have, in the origin's order: a column the destination lacks would be lost.
                for table in tables {
                    let have = try columns(origin, table.name)
                    let take = Set(try columns(target, table.name))
                    let missing = have.filter { !take.contains($0) }
                    guard missing.isEmpty else {
                        throw StoreSyncError.storage(path: table.name, reason: "the destination has no column \(missing.joined(separator: ", ")) in \(table.name)",
                                                     remedy: "Use the same storesync version on both sides")
                    }
                    try copyTable(table.name, columns: have, order: table.order, from: origin, to: target)
                }
            }
            let copied = try source.read { try counts($0) }
            let landed = try counts(target)
            guard copied == landed else {
                throw StoreSyncError.storage(path: "copy", reason: "rows differ after the copy: \(copied.rows) → \(landed.rows)")
            }
            return landed
        }
    }

    /// Rows go in multi-row INSERTs (a round trip each on PostgreSQL), under
    /// PostgreSQL's 65,535 parameters per statement.
    private static func copyTable(_ table: String, columns: [String], order: String,
                                  from origin: any SQLSession, to target: any SQLSession) throws {
        let quoted = columns.map { "\"\($0)\"" }.joined(separator: ", ")
        let rowsPerInsert = max(1, min(500, 30_000 / columns.count))
        let oneRow = "(" + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        var batch: [any SQLArgument] = []
        var batched = 0
        func flush() throws {
            guard batched > 0 else { return }
            let values = Array(repeating: oneRow, count: batched).joined(separator: ", ")
            try target.execute("INSERT INTO \(table) (\(quoted)) VALUES \(values)", batch)
            batch.removeAll(keepingCapacity: true)
            batched = 0
        }
        try origin.forEachRow("SELECT \(quoted) FROM \(table) ORDER BY \(order)", []) { row in
            batch.append(contentsOf: row.values as [any SQLArgument])
            batched += 1
            if batched == rowsPerInsert { try flush() }
        }
        try flush()
    }
}
