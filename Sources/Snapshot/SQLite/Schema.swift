import GRDB

/// The snapshot's schema. Migrations only ever append: a store written by an
/// older storesync opens in a newer one.
enum Schema {
    /// The records' key index (migration v9). A first load drops it and builds
    /// it again at the end (``SnapshotStore/beginFirstLoad()``); opening a
    /// store builds it if a killed first load left it missing.
    static let keyIndex = declaredIndex("records_by_key")

    /// The entities' key index (migration v10), which a first load drops and
    /// builds again like ``keyIndex``.
    static let entityKeyIndex = declaredIndex(StoreSchema.entityKeyIndex)

    private static func declaredIndex(_ name: String) -> String {
        index(StoreSchema.index(named: name))
    }

    /// The tables and indexes of ``StoreSchema`` as SQLite declares them: what
    /// the migrations below must end in (a test compares a migrated store with
    /// a database made from this). Integers, reals and text are SQLite's own
    /// (64-bit, bytewise); a table stored in key order is `WITHOUT ROWID`; an
    /// index that covers columns sorts by them too (SQLite has no INCLUDE), and
    /// so cannot be UNIQUE (the store, the only writer, inserts only keys its
    /// digest index does not hold).
    static var declared: String {
        var sql: [String] = []
        for table in StoreSchema.tables {
            var lines = table.columns.map { column in
                var text = column.name + " " + type(column.type)
                let isRowid = table.rowid == .integerKey(column.name)
                // An INTEGER PRIMARY KEY is the row id: never NULL, and declared without NOT NULL.
                if isRowid { text += " PRIMARY KEY" } else if !column.nullable { text += " NOT NULL" }
                if let value = column.defaultValue { text += " DEFAULT \(value)" }
                if let check = column.checkClause { text += " " + check }
                if let target = column.references { text += " REFERENCES \(target)" }
                return text
            }
            if table.rowid == .none, !table.primaryKey.isEmpty { lines.append("PRIMARY KEY (\(table.primaryKey.joined(separator: ", ")))") }
            sql.append("CREATE TABLE \(table.name) (\(lines.joined(separator: ", ")))" + (table.keyOrdered ? " WITHOUT ROWID" : ""))
        }
        sql += StoreSchema.indexes.map(index)
        return sql.joined(separator: ";\n")
    }

    static func type(_ type: ColumnSchema.ColumnType) -> String {
        switch type {
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        }
    }

    /// `index` as SQLite creates it.
    static func index(_ index: IndexSchema) -> String {
        let unique = index.unique && index.covering.isEmpty
        var line = "CREATE \(unique ? "UNIQUE " : "")INDEX IF NOT EXISTS \(index.name) ON \(index.table)(\((index.columns + index.covering).joined(separator: ", ")))"
        if let condition = index.condition { line += " WHERE \(condition)" }
        return line
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            // The current state: one row per record, rewritten only when its hash changes.
            try db.execute(sql: """
                CREATE TABLE records (
                    source TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    key TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    hash INTEGER NOT NULL,
                    payload TEXT NOT NULL,
                    added_run INTEGER NOT NULL,
                    changed_run INTEGER NOT NULL,
                    PRIMARY KEY (source, entity, key)
                ) WITHOUT ROWID;
                CREATE INDEX records_by_scope ON records(source, scope);
                CREATE INDEX records_by_entity ON records(entity);

                CREATE TABLE runs (
                    id INTEGER PRIMARY KEY,
                    job TEXT NOT NULL,
                    night INTEGER,
                    started_at REAL NOT NULL,
                    finished_at REAL,
                    status TEXT NOT NULL CHECK (status IN ('running', 'ok', 'partial', 'failed')),
                    attempts INTEGER NOT NULL DEFAULT 1,
                    message TEXT
                );

                -- Field-level history: one row per added/removed record and per changed field.
                CREATE TABLE changes (
                    id INTEGER PRIMARY KEY,
                    run_id INTEGER NOT NULL REFERENCES runs(id),
                    source TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    key TEXT NOT NULL,
                    op TEXT NOT NULL CHECK (op IN ('added', 'changed', 'removed')),
                    field TEXT,
                    before TEXT,
                    after TEXT
                );
                CREATE INDEX changes_by_run ON changes(run_id);
                CREATE INDEX changes_by_record ON changes(source, entity, key);

                -- Per run and source: counters, updated in each page's transaction.
                CREATE TABLE run_sources (
                    run_id INTEGER NOT NULL REFERENCES runs(id),
                    source TEXT NOT NULL,
                    pages INTEGER NOT NULL DEFAULT 0,
                    requests INTEGER NOT NULL DEFAULT 0,
                    added INTEGER NOT NULL DEFAULT 0,
                    changed INTEGER NOT NULL DEFAULT 0,
                    unchanged INTEGER NOT NULL DEFAULT 0,
                    removed INTEGER NOT NULL DEFAULT 0,
                    skipped INTEGER NOT NULL DEFAULT 0,
                    seconds REAL NOT NULL DEFAULT 0,
                    record_writes INTEGER NOT NULL DEFAULT 0,
                    PRIMARY KEY (run_id, source)
                );

                -- Each scope's checkpoint: the next page to fetch in the run that touched it last.
                CREATE TABLE scopes (
                    source TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    run_id INTEGER NOT NULL,
                    next_page INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('running', 'complete', 'capped', 'failed')),
                    error TEXT,
                    -- The run whose removal pass covered this scope: a resumed run never counts a miss twice.
                    swept_run INTEGER,
                    PRIMARY KEY (source, scope)
                );

                -- The keys each committed page held, so a resumed run still knows
                -- everything it has seen (one row per page, not per record).
                CREATE TABLE run_pages (
                    run_id INTEGER NOT NULL,
                    source TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    page INTEGER NOT NULL,
                    keys TEXT NOT NULL,
                    PRIMARY KEY (run_id, source, scope, page)
                );

                -- Records missed by complete crawls, not yet removed (Invariant 2).
                CREATE TABLE misses (
                    source TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    key TEXT NOT NULL,
                    count INTEGER NOT NULL,
                    PRIMARY KEY (source, entity, key)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v2: run totals for reports") { db in
            try db.execute(sql: """
                ALTER TABLE runs ADD COLUMN requests INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE runs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE runs ADD COLUMN throttled INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE runs ADD COLUMN not_modified INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE runs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE runs ADD COLUMN seconds REAL;
                ALTER TABLE runs ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]';
                ALTER TABLE runs ADD COLUMN errors TEXT NOT NULL DEFAULT '[]';
                """)
        }
        migrator.registerMigration("v3: page memos for conditional requests") { db in
            // What the last stored answer of each page was: its validators for
            // conditional GET, its body hash (servers without validators), and
            // the keys it held, so an unchanged page is marked seen unread.
            try db.execute(sql: """
                CREATE TABLE page_memos (
                    source TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    page INTEGER NOT NULL,
                    url TEXT NOT NULL,
                    etag TEXT,
                    last_modified TEXT,
                    body_hash INTEGER NOT NULL,
                    row_count INTEGER NOT NULL,
                    has_next INTEGER,
                    keys TEXT NOT NULL,
                    PRIMARY KEY (source, scope, page)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v4: scopes may end gone") { db in
            // SQLite cannot change a CHECK constraint in place: rebuild the table.
            try db.execute(sql: """
                CREATE TABLE scopes_v4 (
                    source TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    run_id INTEGER NOT NULL,
                    next_page INTEGER NOT NULL,
                    state TEXT NOT NULL CHECK (state IN ('running', 'complete', 'capped', 'failed', 'gone')),
                    error TEXT,
                    swept_run INTEGER,
                    PRIMARY KEY (source, scope)
                );
                INSERT INTO scopes_v4 SELECT source, scope, run_id, next_page, state, error, swept_run FROM scopes;
                DROP TABLE scopes;
                ALTER TABLE scopes_v4 RENAME TO scopes;
                """)
        }
        migrator.registerMigration("v5: exports are part of a run") { db in
            // A run killed after its crawl but before its exports finished is
            // resumed by exporting only: `exported` says whether that is done,
            // `crawl_status` keeps the crawl's verdict while `status` may say an export failed.
            try db.execute(sql: """
                ALTER TABLE runs ADD COLUMN exported INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE runs ADD COLUMN crawl_status TEXT;
                """)
        }
        migrator.registerMigration("v6: drift and unchanged pages per source") { db in
            try db.execute(sql: """
                ALTER TABLE run_sources ADD COLUMN drift INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE run_sources ADD COLUMN unchanged_pages INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v7: records in insertion order, raw-byte hashes") { db in
            // A WITHOUT ROWID table keyed by (source, entity, key) keeps ~800-byte
            // rows in key order, so a night that adds rows with scattered keys
            // rewrites pages all over the file (measured: 3× slower cold load at
            // 1M rows). Rows now append in rowid order; the key lives in a small
            // unique index that stays in the page cache (each page of a night is
            // its own transaction, so every index with scattered keys rewrites
            // most of its pages at every commit: keep to one). `raw_hash` is the hash
            // of the bytes the source sent for the record, when its connector
            // computes one: the same bytes next night are known unchanged unread.
            try db.execute(sql: """
                CREATE TABLE records_v7 (
                    source TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    key TEXT NOT NULL,
                    scope TEXT NOT NULL,
                    hash INTEGER NOT NULL,
                    payload TEXT NOT NULL,
                    added_run INTEGER NOT NULL,
                    changed_run INTEGER NOT NULL,
                    raw_hash INTEGER
                );
                INSERT INTO records_v7 (source, entity, key, scope, hash, payload, added_run, changed_run)
                    SELECT source, entity, key, scope, hash, payload, added_run, changed_run FROM records ORDER BY source, entity, key;
                DROP TABLE records;
                ALTER TABLE records_v7 RENAME TO records;
                CREATE UNIQUE INDEX records_by_key ON records(source, entity, key);
                -- Both end in the rowid, so rows added in one night append to them
                -- instead of landing all over a key-ordered index.
                CREATE INDEX records_by_scope ON records(source, scope);
                CREATE INDEX records_by_entity ON records(entity);
                -- Only changes are looked up per record (the latest price change);
                -- a cold load's million 'added' rows stay out of this index.
                DROP INDEX changes_by_record;
                CREATE INDEX changes_by_record ON changes(source, entity, key) WHERE op = 'changed';
                """)
        }
        migrator.registerMigration("v8: upstream records a dependent still owes work") { db in
            // A dependent source (a lookup `from:` a search, marketplace details)
            // that works on new-or-changed upstream records must not lose one
            // whose lookup failed: the next run sees that record unchanged and
            // would never ask again. Such records stay here, per consumer, until
            // a run's scope for them ends complete.
            try db.execute(sql: """
                CREATE TABLE pending_inputs (
                    consumer TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    key TEXT NOT NULL,
                    PRIMARY KEY (consumer, entity, key)
                ) WITHOUT ROWID;
                """)
        }
        migrator.registerMigration("v9: the key index covers what a diff reads") { db in
            // Every run reads each source's (entity, key, hash, raw_hash) into
            // the digest index, and each sweep reads a scope's members: from the
            // table that is a scan of every payload (1.2 GB at 1M records), from
            // a covering index a scan of ~70 MB. SQLite has no INCLUDE columns,
            // so the index is no longer UNIQUE; the store is the only writer
            // (run lock) and inserts only keys its digest index does not hold.
            try db.execute(sql: "DROP INDEX records_by_key")
            // As v9 made it (the declaration's today; a later change is a migration of its own).
            try db.execute(sql: "CREATE INDEX IF NOT EXISTS records_by_key ON records(source, entity, key, hash, raw_hash, scope)")
        }
        migrator.registerMigration("v10: one row per entity") { db in
            // `records` keeps what each source said (its raw payload, hash and
            // scope: membership); `entities` holds one row per (entity, key)
            // with the canonical fields merged over every source that lists
            // it. `sources` lists those sightings ("source<TAB>kind<TAB>role"
            // lines, sorted) so a removal knows, unread, whether another source
            // still lists the entity; `parts` keeps each source's canonical
            // fields only while more than one source sees the entity.
            try db.execute(sql: """
                CREATE TABLE entities (
                    entity TEXT NOT NULL,
                    key TEXT NOT NULL,
                    fields TEXT NOT NULL,
                    hash INTEGER NOT NULL,
                    sources TEXT NOT NULL,
                    parts TEXT,
                    added_run INTEGER NOT NULL,
                    changed_run INTEGER NOT NULL
                );
                CREATE UNIQUE INDEX entities_by_key ON entities(entity, key);

                -- Every wire field each source has sent, so a field seen for the
                -- first time (or whose type changed) is reported, and a records
                -- file's columns keep the file's own order.
                CREATE TABLE field_registry (
                    source TEXT NOT NULL,
                    entity TEXT NOT NULL,
                    field TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    first_run INTEGER NOT NULL,
                    kind_changed_run INTEGER,
                    previous_kind TEXT,
                    PRIMARY KEY (source, entity, field)
                ) WITHOUT ROWID;

                CREATE TABLE store_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
                -- The simulated night of a record's last miss: the same night crawled
                -- again (`--night N`) is the same evidence, not one more miss.
                ALTER TABLE misses ADD COLUMN night INTEGER;
                -- The change log is the entities' from now on: looked up by entity, not by source.
                DROP INDEX IF EXISTS changes_by_record;
                CREATE INDEX changes_by_entity ON changes(entity, key) WHERE op = 'changed';
                """)
            // Entities are built from the stored payloads by each source's
            // mapping, which only the run knows: the next run (or export) does it.
            if try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM records)") == true {
                try db.execute(sql: "INSERT INTO store_meta (name, value) VALUES ('entities', 'rebuild')")
            }
        }
        migrator.registerMigration("v11: a scope's sweep keeps its guard warning") { db in
            // A run killed after a removal pass and resumed does not sweep that
            // scope again (a miss is never counted twice), so what the guard
            // refused is kept with the sweep, or the resumed run would report
            // nothing and exit 0 where the uninterrupted one exits 2 (Invariant 11).
            try db.execute(sql: "ALTER TABLE scopes ADD COLUMN swept_warning TEXT")
        }
        migrator.registerMigration("v12: a scope's error keeps its code and URL") { db in
            // report.json and `status --json` show errors as objects (code, URL,
            // message); a scope failed before this version has only the text,
            // and reads back with code "unknown".
            try db.execute(sql: "ALTER TABLE scopes ADD COLUMN error_code TEXT")
            try db.execute(sql: "ALTER TABLE scopes ADD COLUMN error_url TEXT")
        }
        migrator.registerMigration("v13: how an unfinished run's last attempt stopped") { db in
            // A signal's name or 'deadline': report.json, the metrics, the webhook and
            // `status` tell an interrupted night from one stopped at its deadline, and
            // both from a killed one (NULL), alike.
            try db.execute(sql: "ALTER TABLE runs ADD COLUMN stopped TEXT")
        }
        migrator.registerMigration("v14: a removal keeps the entity's id and first run") { db in
            // The entity's row goes with its removal, and with it its id (the consumer
            // database's `id`, which orders every export) and the run that added it:
            // kept here, an export as of an earlier night can give the removed entity
            // the id and first-seen run it had then. NULL on other rows and on
            // removals logged before this version.
            try db.execute(sql: "ALTER TABLE changes ADD COLUMN entity_rowid INTEGER")
            try db.execute(sql: "ALTER TABLE changes ADD COLUMN entity_added_run INTEGER")
        }
        return migrator
    }
}
