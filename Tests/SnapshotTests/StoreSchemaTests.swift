import Foundation
import GRDB
@testable import Snapshot
import Testing
import TestSupport

/// The snapshot's tables are declared once (``StoreSchema``) and rendered by
/// each engine: SQLite's migrations, its upgrade path from the first version,
/// must end in the declared tables, and PostgreSQL's catalogue must list them.
@Suite struct StoreSchemaTests {
    /// What SQLite says of a database's tables: columns (name, type, NOT NULL,
    /// default, key position), key order, foreign keys, CHECKs, and every index
    /// (unique, partial, its columns and condition), one line each.
    static func describe(_ db: Database) throws -> [String] {
        var lines: [String] = []
        let tables = try String.fetchAll(db, sql: """
            SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'grdb_migrations' ORDER BY name
            """)
        for table in tables {
            let keyOrdered = try Int.fetchOne(db, sql: "SELECT wr FROM pragma_table_list WHERE name = ?", arguments: [table]) ?? -1
            lines.append("table \(table) without-rowid=\(keyOrdered)")
            for column in try Row.fetchAll(db, sql: "SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_xinfo(?)", arguments: [table]) {
                lines.append("  column \(column[0] as String) \(column[1] as String) notnull=\(column[2] as Int) default=\(column[3] as String? ?? "-") pk=\(column[4] as Int)")
            }
            for key in try Row.fetchAll(db, sql: "SELECT \"table\", \"from\", \"to\" FROM pragma_foreign_key_list(?)", arguments: [table]) {
                lines.append("  references \(key[1] as String) → \(key[0] as String)(\(key[2] as String? ?? "-"))")
            }
            let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = ?", arguments: [table]) ?? ""
            // Each CHECK, its whitespace made single (a migration's text is written across lines).
            let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            var rest = flat[...]
            while let start = rest.range(of: "CHECK (") {
                var depth = 0
                var end = start.upperBound
                for index in rest[start.lowerBound...].indices {
                    if rest[index] == "(" { depth += 1 }
                    if rest[index] == ")" { depth -= 1; if depth == 0 { end = rest.index(after: index); break } }
                }
                lines.append("  " + rest[start.lowerBound..<end])
                rest = rest[end...]
            }
            for index in try Row.fetchAll(db, sql: "SELECT name, \"unique\", origin, partial FROM pragma_index_list(?) ORDER BY name", arguments: [table]) {
                let name: String = index[0]
                let columns = try String.fetchAll(db, sql: "SELECT name FROM pragma_index_xinfo(?) WHERE key = 1 ORDER BY seqno", arguments: [name])
                var line = "  index \(name.hasPrefix("sqlite_autoindex") ? "(primary key)" : name) unique=\(index[1] as Int) origin=\(index[2] as String) columns=\(columns)"
                if (index[3] as Int) == 1, let sql = try String.fetchOne(db, sql: "SELECT sql FROM sqlite_master WHERE name = ?", arguments: [name]),
                   let condition = sql.range(of: " WHERE ") {
                    line += " where " + sql[condition.upperBound...]
                }
                lines.append(line)
            }
        }
        return lines
    }

    @Test func sqliteMigrationsEndInTheDeclaredTables() throws {
        let path = TestPaths.temporaryDirectory("schema").appendingPathComponent("store.sqlite").path
        _ = try SQLSnapshotStore(path: path)
        let migrated = try DatabaseQueue(path: path)
        let declared = try DatabaseQueue()
        try declared.write { db in try db.execute(sql: Schema.declared) }
        let fromMigrations = try migrated.read(Self.describe)
        let fromDeclaration = try declared.read(Self.describe)
        #expect(fromMigrations.count > 100, "\(fromMigrations)")
        let missing = fromDeclaration.filter { !fromMigrations.contains($0) }, extra = fromMigrations.filter { !fromDeclaration.contains($0) }
        #expect(missing.isEmpty && extra.isEmpty, "declared, not migrated: \(missing)\nmigrated, not declared: \(extra)")
        if missing.isEmpty && extra.isEmpty { #expect(fromMigrations == fromDeclaration, "the same lines, in another order") }
    }

    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func postgresHasTheDeclaredTables() async throws {
        let store = try StoreEngine.open(try await StoreEngine.postgres.makeLocation())
        try store.engine.read { db in
            for table in StoreSchema.tables {
                let columns = try db.rows("""
                    SELECT column_name, data_type, is_nullable FROM information_schema.columns
                    WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position
                    """, [table.name]).map { "\($0[0] as String) \($0[1] as String) \($0[2] as String)" }
                var expected = table.rowid == .implicit ? ["rowid bigint NO"] : []
                expected += table.columns.map { column in
                    let type = switch column.type {
                    case .integer: "bigint"
                    case .real: "double precision"
                    case .text: "text"
                    }
                    let nullable = column.nullable && !table.primaryKey.contains(column.name)
                    return "\(column.name) \(type) \(nullable ? "YES" : "NO")"
                }
                #expect(columns == expected, "\(table.name)")
                let keys = try db.rows("""
                    SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
                    WHERE i.indrelid = ?::regclass AND i.indisprimary ORDER BY array_position(i.indkey::int2[], a.attnum)
                    """, [table.name]).map { $0[0] as String }
                #expect(keys == (table.rowid == .implicit ? ["rowid"] : table.primaryKey), "\(table.name)")
            }
            for index in StoreSchema.indexes {
                let definition = try db.value(as: String.self, "SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = ?",
                                              [index.name])
                let text = try #require(definition, "\(index.name) is missing")
                #expect(text.hasPrefix(index.unique ? "CREATE UNIQUE INDEX" : "CREATE INDEX"), "\(text)")
                #expect(text.contains("(\(index.columns.joined(separator: ", ")))"), "\(text)")
                if !index.covering.isEmpty { #expect(text.contains("INCLUDE (\(index.covering.joined(separator: ", ")))"), "\(text)") }
            }
        }
    }
}
