@testable import Snapshot

/// Reads of a store's own tables, through its engine, for the tests that run
/// on SQLite and PostgreSQL alike: what is compared is the rows, whichever
/// engine holds them (a GRDB read would see SQLite only).
extension SQLSnapshotStore {
    /// The rows of `sql`, each rendered as one string, its columns joined by
    /// `|` (NULL as `∅`, reals marked, so `1` and `1.0` stay apart).
    func queryRows(_ sql: String) throws -> [String] {
        try engine.read { db in try db.rows(sql).map(Self.render) }
    }

    /// The first column of the first row of `sql` as an integer.
    func queryInteger(_ sql: String) throws -> Int? {
        try engine.read { db in try db.value(as: Int.self, sql) }
    }

    /// The store's tables as its engine's own catalogue lists them (not
    /// ``StoreCopy/tables``, which a test of the copy must not trust), less
    /// the schema's bookkeeping (GRDB's migrations, SQLite's internal tables,
    /// PostgreSQL's schema version): each engine's own, made when a store is opened.
    func tableNames() throws -> Set<String> {
        try engine.read { db in
            let names = if db is GRDBSession {
                try db.rows("SELECT name FROM sqlite_master WHERE type = 'table'").map { $0[0] as String }
            } else {
                try db.rows("""
                    SELECT table_name FROM information_schema.tables
                    WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
                    """).map { $0[0] as String }
            }
            return Set(names.filter { !$0.hasPrefix("sqlite_") && $0 != "grdb_migrations" && $0 != "postgres_schema" })
        }
    }

    /// Every table a copy moves (``StoreCopy/tables``), its rows in the
    /// table's own order, each row's columns by name (in name order: the
    /// engines list a table's columns in different orders, SQLite's rowid
    /// being implicit). Ids and rowids are columns like the others.
    func allTables() throws -> [String: [String]] {
        try engine.read { db in
            var tables: [String: [String]] = [:]
            for table in StoreCopy.tables {
                let columns = try StoreCopy.columns(db, table.name).sorted()
                let list = columns.map { "\"\($0)\"" }.joined(separator: ", ")
                tables[table.name] = try db.rows("SELECT \(list) FROM \(table.name) ORDER BY \(table.order)").map { row in
                    zip(columns, row.values).map { "\($0)=\(Self.render($1))" }.joined(separator: "|")
                }
            }
            return tables
        }
    }

    private static func render(_ row: SQLRow) -> String {
        row.values.map(render).joined(separator: "|")
    }

    private static func render(_ value: SQLValue) -> String {
        switch value {
        case .null: "∅"
        case .integer(let integer): String(integer)
        case .real(let real): "\(real)r"
        case .text(let text): "'\(text)'"
        }
    }
}
