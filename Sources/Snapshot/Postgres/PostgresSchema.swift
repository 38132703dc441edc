import Catalog

/// The snapshot's tables in PostgreSQL: those of SQLite's latest migration,
/// column for column (``StoreTables`` copies between them), with three
/// differences that keep the shared SQL the same on both engines:
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
    static let version = 3

    /// Taken (transaction-scoped) while the tables are created, so workers
    /// starting together create them once.
    static let creationLock: Int64 = 0x5354_4f52_4553_5943  // "STORESYC"

    static let tables = """
        CREATE TABLE IF NOT EXISTS records (
            rowid BIGINT PRIMARY KEY,
            source TEXT COLLATE "C" NOT NULL,
            entity TEXT COLLATE "C" NOT NULL,
            key TEXT COLLATE "C" NOT NULL,
            scope TEXT COLLATE "C" NOT NULL,
            hash BIGINT NOT NULL,
            payload TEXT COLLATE "C" NOT NULL,
            added_run BIGINT NOT NULL,
            changed_run BIGINT NOT NULL,
            raw_hash BIGINT
        );
        CREATE UNIQUE INDEX IF NOT EXISTS records_by_key ON records (source, entity, key) INCLUDE (hash, raw_hash, scope);
        CREATE INDEX IF NOT EXISTS records_by_scope ON records (source, scope);
        CREATE INDEX IF NOT EXISTS records_by_entity ON records (entity);

        CREATE TABLE IF NOT EXISTS runs (
            id BIGINT PRIMARY KEY,
            job TEXT COLLATE "C" NOT NULL,
            night BIGINT,
            started_at DOUBLE PRECISION NOT NULL,
            finished_at DOUBLE PRECISION,
            status TEXT COLLATE "C" NOT NULL CHECK (status IN ('running', 'ok', 'partial', 'failed')),
            attempts BIGINT NOT NULL DEFAULT 1,
            message TEXT COLLATE "C",
            requests BIGINT NOT NULL DEFAULT 0,
            retries BIGINT NOT NULL DEFAULT 0,
            throttled BIGINT NOT NULL DEFAULT 0,
            not_modified BIGINT NOT NULL DEFAULT 0,
            failures BIGINT NOT NULL DEFAULT 0,
            seconds DOUBLE PRECISION,
            warnings TEXT COLLATE "C" NOT NULL DEFAULT '[]',
            errors TEXT COLLATE "C" NOT NULL DEFAULT '[]',
            exported BIGINT NOT NULL DEFAULT 1,
            crawl_status TEXT COLLATE "C"
        );
        ALTER TABLE runs ADD COLUMN IF NOT EXISTS stopped TEXT COLLATE "C";

        CREATE TABLE IF NOT EXISTS changes (
            id BIGINT PRIMARY KEY,
            run_id BIGINT NOT NULL REFERENCES runs(id),
            source TEXT COLLATE "C" NOT NULL,
            entity TEXT COLLATE "C" NOT NULL,
            key TEXT COLLATE "C" NOT NULL,
            op TEXT COLLATE "C" NOT NULL CHECK (op IN ('added', 'changed', 'removed')),
            field TEXT COLLATE "C",
            before TEXT COLLATE "C",
            after TEXT COLLATE "C"
        );
        ALTER TABLE changes ADD COLUMN IF NOT EXISTS entity_rowid BIGINT;
        ALTER TABLE changes ADD COLUMN IF NOT EXISTS entity_added_run BIGINT;
        CREATE INDEX IF NOT EXISTS changes_by_run ON changes (run_id);
        CREATE INDEX IF NOT EXISTS changes_by_entity ON changes (entity, key) WHERE op = 'changed';

        CREATE TABLE IF NOT EXISTS run_sources (
            run_id BIGINT NOT NULL REFERENCES runs(id),
            source TEXT COLLATE "C" NOT NULL,
            pages BIGINT NOT NULL DEFAULT 0,
            requests BIGINT NOT NULL DEFAULT 0,
            added BIGINT NOT NULL DEFAULT 0,
            changed BIGINT NOT NULL DEFAULT 0,
            unchanged BIGINT NOT NULL DEFAULT 0,
            removed BIGINT NOT NULL DEFAULT 0,
            skipped BIGINT NOT NULL DEFAULT 0,
            seconds DOUBLE PRECISION NOT NULL DEFAULT 0,
            record_writes BIGINT NOT NULL DEFAULT 0,
            drift BIGINT NOT NULL DEFAULT 0,
            unchanged_pages BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, source)
        );

        CREATE TABLE IF NOT EXISTS scopes (
            source TEXT COLLATE "C" NOT NULL,
            scope TEXT COLLATE "C" NOT NULL,
            run_id BIGINT NOT NULL,
            next_page BIGINT NOT NULL,
            state TEXT COLLATE "C" NOT NULL CHECK (state IN ('running', 'complete', 'capped', 'failed', 'gone')),
            error TEXT COLLATE "C",
            swept_run BIGINT,
            swept_warning TEXT COLLATE "C",
            error_code TEXT COLLATE "C",
            error_url TEXT COLLATE "C",
            PRIMARY KEY (source, scope)
        );

        CREATE TABLE IF NOT EXISTS run_pages (
            run_id BIGINT NOT NULL,
            source TEXT COLLATE "C" NOT NULL,
            scope TEXT COLLATE "C" NOT NULL,
            page BIGINT NOT NULL,
            keys TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (run_id, source, scope, page)
        );

        CREATE TABLE IF NOT EXISTS misses (
            source TEXT COLLATE "C" NOT NULL,
            entity TEXT COLLATE "C" NOT NULL,
            key TEXT COLLATE "C" NOT NULL,
            count BIGINT NOT NULL,
            night BIGINT,
            PRIMARY KEY (source, entity, key)
        );

        CREATE TABLE IF NOT EXISTS page_memos (
            source TEXT COLLATE "C" NOT NULL,
            scope TEXT COLLATE "C" NOT NULL,
            page BIGINT NOT NULL,
            url TEXT COLLATE "C" NOT NULL,
            etag TEXT COLLATE "C",
            last_modified TEXT COLLATE "C",
            body_hash BIGINT NOT NULL,
            row_count BIGINT NOT NULL,
            has_next BIGINT,
            keys TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (source, scope, page)
        );

        CREATE TABLE IF NOT EXISTS pending_inputs (
            consumer TEXT COLLATE "C" NOT NULL,
            entity TEXT COLLATE "C" NOT NULL,
            key TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (consumer, entity, key)
        );

        CREATE TABLE IF NOT EXISTS entities (
            rowid BIGINT PRIMARY KEY,
            entity TEXT COLLATE "C" NOT NULL,
            key TEXT COLLATE "C" NOT NULL,
            fields TEXT COLLATE "C" NOT NULL,
            hash BIGINT NOT NULL,
            sources TEXT COLLATE "C" NOT NULL,
            parts TEXT COLLATE "C",
            added_run BIGINT NOT NULL,
            changed_run BIGINT NOT NULL
        );
        CREATE UNIQUE INDEX IF NOT EXISTS entities_by_key ON entities (entity, key);

        CREATE TABLE IF NOT EXISTS field_registry (
            source TEXT COLLATE "C" NOT NULL,
            entity TEXT COLLATE "C" NOT NULL,
            field TEXT COLLATE "C" NOT NULL,
            kind TEXT COLLATE "C" NOT NULL,
            position BIGINT NOT NULL,
            first_run BIGINT NOT NULL,
            kind_changed_run BIGINT,
            previous_kind TEXT COLLATE "C",
            PRIMARY KEY (source, entity, field)
        );

        CREATE TABLE IF NOT EXISTS store_meta (name TEXT COLLATE "C" PRIMARY KEY, value TEXT COLLATE "C" NOT NULL);

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
        CREATE OR REPLACE TRIGGER records_rowid BEFORE INSERT ON records FOR EACH ROW EXECUTE FUNCTION storesync_next_rowid();
        CREATE OR REPLACE TRIGGER entities_rowid BEFORE INSERT ON entities FOR EACH ROW EXECUTE FUNCTION storesync_next_rowid();
        CREATE OR REPLACE TRIGGER runs_id BEFORE INSERT ON runs FOR EACH ROW EXECUTE FUNCTION storesync_next_id();
        CREATE OR REPLACE TRIGGER changes_id BEFORE INSERT ON changes FOR EACH ROW EXECUTE FUNCTION storesync_next_id()
        """

    /// Creates the tables if they are missing and checks the version of those that exist.
    static func prepare(_ db: any SQLSession, name: String) throws {
        try db.execute("SELECT pg_advisory_xact_lock(?)", [creationLock])
        let exists = try db.value(as: Bool.self, "SELECT to_regclass('postgres_schema') IS NOT NULL") ?? false
        if exists, let storedVersion = try db.value(as: Int.self, "SELECT max(version) FROM postgres_schema") {
            guard storedVersion <= version else {
                throw StoreSyncError.storage(path: name, reason: "the store was written by a newer storesync (schema \(storedVersion))",
                                             remedy: "Use that version of storesync to read it")
            }
            if storedVersion == version { return }
        }
        try db.execute(tables)
        try db.execute(StagingFleetStore.fleetTables)
        try db.execute(StagingFleetStore.stagingTable)
        try db.execute("DELETE FROM postgres_schema")
        try db.execute("INSERT INTO postgres_schema (version) VALUES (?)", [version])
    }
}
