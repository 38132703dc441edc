import Catalog

/// The snapshot's tables in PostgreSQL, rendered from their one declaration
/// (``StoreSchema``), column for column SQLite's (``StoreCopy`` copies between
/// them), with three differences that keep the shared SQL the same on both engines:
/// - `rowid` is a real column on the tables SQLite gives an implicit one
///   (`records`, `entities`), numbered as SQLite numbers rowids (a trigger:
///   the largest plus one), and every integer is a BIGINT (SQLite's are 64-bit);
/// - every text column sorts bytewise (`COLLATE "C"`), as SQLite's do, so the
///   same `ORDER BY` gives the same order, whatever the server's locale;
/// - the key indexes are UNIQUE and cover with INCLUDE (SQLite has no INCLUDE,
///   so its covering index carries the columns in its key instead).
enum PostgresSchema {
    /// Bumped with every change below; a store written by a newer storesync is refused.
    /// 2: `runs.stopped` (how an unfinished run's last attempt stopped).
    /// 3: `changes.entity_rowid`, `changes.entity_added_run` (what a removal keeps of its entity).
    /// 4: the numbering triggers fire only for a row that comes without its
    ///    id (`WHEN`), which the store's own inserts never do: a PL/pgSQL call
    ///    per row was a tenth of a first load's `COPY`.
    static let version = 4

    /// Taken (transaction-scoped) while the tables are created, so workers
    /// starting together create them once.
    static let creationLock: Int64 = 0x5354_4f52_4553_5943  // "STORESYC"

    /// The tables (``StoreSchema``) as PostgreSQL has them, and what makes it
    /// number rows as SQLite does. Every column is added if missing, so a
    /// store of an older version gains the columns added since.
    static var tables: String {
        var sql: [String] = []
        for table in StoreSchema.tables {
            var lines: [String] = []
            if table.rowid == .implicit { lines.append("rowid BIGINT PRIMARY KEY") }
            lines += table.columns.map { column in
                definition(column) + (table.primaryKey == [column.name] && table.rowid != .none ? " PRIMARY KEY" : "")
            }
            if table.rowid == .none, !table.primaryKey.isEmpty { lines.append("PRIMARY KEY (\(table.primaryKey.joined(separator: ", ")))") }
            sql.append("CREATE TABLE IF NOT EXISTS \(table.name) (\n    \(lines.joined(separator: ",\n    "))\n)")
            for column in table.columns where !table.primaryKey.contains(column.name) {
                sql.append("ALTER TABLE \(table.name) ADD COLUMN IF NOT EXISTS \(definition(column))")
            }
        }
        sql += StoreSchema.indexes.map(createIndex)
        return sql.joined(separator: ";\n") + ";\n" + extras
    }

    /// The statement that creates `index` if it is missing.
    static func createIndex(_ index: IndexSchema) -> String {
        var line = "CREATE \(index.unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(index.name) ON \(index.table) (\(index.columns.joined(separator: ", ")))"
        if !index.covering.isEmpty { line += " INCLUDE (\(index.covering.joined(separator: ", ")))" }
        if let condition = index.condition { line += " WHERE \(condition)" }
        return line
    }

    /// The statement that creates the declared index `name` if it is missing.
    static func createIndex(named name: String) -> String {
        createIndex(StoreSchema.index(named: name))
    }

    /// Creates the declared indexes that are missing: those a first load
    /// dropped when it was killed before building them again (a store of the
    /// current version is otherwise left as it is).
    static func restoreMissingIndexes(_ db: any SQLSession) throws {
        let present = Set(try db.rows("SELECT indexname FROM pg_indexes WHERE schemaname = current_schema()").map { $0[0] as String })
        for index in StoreSchema.indexes where !present.contains(index.name) {
            try db.execute(createIndex(index))
        }
    }

    /// A foreign key of ``StoreSchema``, declared on its column, under the
    /// name PostgreSQL gives such a key (`table_column_fkey`), so a store made
    /// before keys were dropped and restored by name has the same names.
    struct ForeignKey: Sendable {
        let table: String
        let column: String
        /// `table(column)` referred to.
        let target: String
        var name: String { "\(table)_\(column)_fkey" }
        var add: String { "ALTER TABLE \(table) ADD CONSTRAINT \(name) FOREIGN KEY (\(column)) REFERENCES \(target)" }
        var drop: String { "ALTER TABLE \(table) DROP CONSTRAINT IF EXISTS \(name)" }
    }

    /// Every foreign key the tables declare.
    static let foreignKeys: [ForeignKey] = StoreSchema.tables.flatMap { table in
        table.columns.compactMap { column in column.references.map { ForeignKey(table: table.name, column: column.name, target: $0) } }
    }

    /// Adds the declared foreign keys that are missing: those a first load
    /// dropped when it was killed before adding them again. Adding one checks
    /// every row once (a join, not a lookup a row).
    static func restoreMissingForeignKeys(_ db: any SQLSession) throws {
        let present = Set(try db.rows("""
            SELECT conname FROM pg_constraint WHERE contype = 'f' AND connamespace = current_schema()::regnamespace
            """).map { $0[0] as String })
        for key in foreignKeys where !present.contains(key.name) {
            try db.execute(key.add)
        }
    }

    /// A column as PostgreSQL declares it: 64-bit integers, doubles, and text
    /// that sorts bytewise, so the same `ORDER BY` gives the same order as SQLite.
    static func definition(_ column: ColumnSchema) -> String {
        var text = column.name + " " + type(column.type)
        if !column.nullable { text += " NOT NULL" }
        if let value = column.defaultValue { text += " DEFAULT \(value)" }
        if let check = column.checkClause { text += " " + check }
        if let target = column.references { text += " REFERENCES \(target)" }
        return text
    }

    static func type(_ type: ColumnSchema.ColumnType) -> String {
        switch type {
        case .integer: "BIGINT"
        case .real: "DOUBLE PRECISION"
        case .text: #"TEXT COLLATE "C""#
        }
    }

    /// The schema's version table and the row numbering (triggers for the
    /// tables whose rows have an id).
    static var extras: String {
        var sql = """
            -- The version of these tables: apart from store_meta, which a copy moves between engines.
            CREATE TABLE IF NOT EXISTS postgres_schema (version BIGINT NOT NULL);

            -- Row ids as SQLite gives them: one more than the largest, within the
            -- inserting transaction. A sequence would hand out ids a rolled-back
            -- transaction burned, and the same night would number its rows
            -- differently on the two engines (exports in insertion order follow them).
            -- One writer at a time inserts (the run lock, or a fleet's closing step).
            CREATE OR REPLACE FUNCTION storesync_next_rowid() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.rowid IS NULL THEN
                    EXECUTE format('SELECT COALESCE(max(rowid), 0) + 1 FROM %I', TG_TABLE_NAME) INTO NEW.rowid;
                END IF;
                RETURN NEW;
            END $$;
            CREATE OR REPLACE FUNCTION storesync_next_id() RETURNS trigger LANGUAGE plpgsql AS $$
            BEGIN
                IF NEW.id IS NULL THEN
                    EXECUTE format('SELECT COALESCE(max(id), 0) + 1 FROM %I', TG_TABLE_NAME) INTO NEW.id;
                END IF;
                RETURN NEW;
            END $$;

            """
        for table in StoreSchema.tables {
            switch table.rowid {
            case .none: continue
            case .implicit:
                sql += "CREATE OR REPLACE TRIGGER \(table.name)_rowid BEFORE INSERT ON \(table.name) FOR EACH ROW WHEN (NEW.rowid IS NULL) EXECUTE FUNCTION storesync_next_rowid();\n"
            case .integerKey(let column):
                precondition(column == "id", "storesync_next_id numbers a column named id")
                sql += "CREATE OR REPLACE TRIGGER \(table.name)_id BEFORE INSERT ON \(table.name) FOR EACH ROW WHEN (NEW.id IS NULL) EXECUTE FUNCTION storesync_next_id();\n"
            }
        }
        return sql
    }

    /// Creates the tables if they are missing and checks the version of those that exist.
    static func prepare(_ db: any SQLSession, name: String) throws {
        try db.execute("SELECT pg_advisory_xact_lock(?)", [creationLock])
        let exists = try db.value(as: Bool.self, "SELECT to_regclass('postgres_schema') IS NOT NULL") ?? false
        if exists, let storedVersion = try db.value(as: Int.self, "SELECT max(version) FROM postgres_schema") {
            guard storedVersion <= version else {
                throw StoreSyncError.storage(path: name, reason: "the store was written by a newer storesync (schema \(storedVersion))",
                                             remedy: "Use that version of storesync to read it")
            }
            if storedVersion == version {
                try restoreMissingIndexes(db)
                try restoreMissingForeignKeys(db)
                return
            }
        }
        try db.execute(tables)
        try db.execute(StagingFleetStore.fleetTables)
        try db.execute(StagingFleetStore.stagingTable)
        // A staged page lives for seconds (its replay deletes it): compressing it
        // (TOAST's pglz, a page being kilobytes) was the server's largest single cost in a fleet's night.
        try db.execute("ALTER TABLE fleet_pages ALTER COLUMN body SET STORAGE EXTERNAL")
        try db.execute("DELETE FROM postgres_schema")
        try db.execute("INSERT INTO postgres_schema (version) VALUES (?)", [version])
    }
}
