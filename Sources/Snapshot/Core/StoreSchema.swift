/// The snapshot's tables as they are now, declared once, and rendered by
/// each engine in its own dialect: PostgreSQL creates its tables from the
/// rendering (`PostgresSchema`); SQLite's migrations (`Schema.migrator`),
/// which are its upgrade path from every older store, must end in exactly
/// these tables and indexes, which a test checks column by column against a
/// store migrated from its first version. A change to the tables is a change
/// here, plus a SQLite migration that reaches it.
///
/// The store's SQL is written once over these tables; what the engines do
/// differently with them is each renderer's to decide: how a row id is
/// numbered, whether a table is stored in key order (SQLite's `WITHOUT ROWID`),
/// and how an index covers columns it does not sort by.
enum StoreSchema {
    /// Every table, in the order they are created (a table before those that refer to it).
    static let tables: [TableSchema] = [
        TableSchema("records", rowid: .implicit, columns: [
            .text("source"), .text("entity"), .text("key"), .text("scope"), .integer("hash"), .text("payload"),
            .integer("added_run"), .integer("changed_run"), .integer("raw_hash", null: true),
        ]),
        TableSchema("runs", rowid: .integerKey("id"), columns: [
            .integer("id"), .text("job"), .integer("night", null: true), .real("started_at"), .real("finished_at", null: true),
            .text("status", oneOf: ["running", "ok", "partial", "failed"]), .integer("attempts", default: "1"),
            .text("message", null: true),
            .integer("requests", default: "0"), .integer("retries", default: "0"), .integer("throttled", default: "0"),
            .integer("not_modified", default: "0"), .integer("failures", default: "0"), .real("seconds", null: true),
            .text("warnings", default: "'[]'"), .text("errors", default: "'[]'"),
            .integer("exported", default: "1"), .text("crawl_status", null: true), .text("stopped", null: true),
        ]),
        TableSchema("changes", rowid: .integerKey("id"), columns: [
            .integer("id"), .integer("run_id", references: "runs(id)"), .text("source"), .text("entity"), .text("key"),
            .text("op", oneOf: ["added", "changed", "removed"]), .text("field", null: true), .text("before", null: true),
            .text("after", null: true), .integer("entity_rowid", null: true), .integer("entity_added_run", null: true),
        ]),
        TableSchema("run_sources", primaryKey: ["run_id", "source"], columns: [
            .integer("run_id", references: "runs(id)"), .text("source"),
            .integer("pages", default: "0"), .integer("requests", default: "0"), .integer("added", default: "0"),
            .integer("changed", default: "0"), .integer("unchanged", default: "0"), .integer("removed", default: "0"),
            .integer("skipped", default: "0"), .real("seconds", default: "0"), .integer("record_writes", default: "0"),
            .integer("drift", default: "0"), .integer("unchanged_pages", default: "0"),
        ]),
        TableSchema("scopes", primaryKey: ["source", "scope"], columns: [
            .text("source"), .text("scope"), .integer("run_id"), .integer("next_page"),
            .text("state", oneOf: ["running", "complete", "capped", "failed", "gone"]), .text("error", null: true),
            .integer("swept_run", null: true), .text("swept_warning", null: true), .text("error_code", null: true),
            .text("error_url", null: true),
        ]),
        TableSchema("run_pages", primaryKey: ["run_id", "source", "scope", "page"], columns: [
            .integer("run_id"), .text("source"), .text("scope"), .integer("page"), .text("keys"),
        ]),
        TableSchema("misses", primaryKey: ["source", "entity", "key"], keyOrdered: true, columns: [
            .text("source"), .text("entity"), .text("key"), .integer("count"), .integer("night", null: true),
        ]),
        TableSchema("page_memos", primaryKey: ["source", "scope", "page"], keyOrdered: true, columns: [
            .text("source"), .text("scope"), .integer("page"), .text("url"), .text("etag", null: true),
            .text("last_modified", null: true), .integer("body_hash"), .integer("row_count"), .integer("has_next", null: true),
            .text("keys"),
        ]),
        TableSchema("pending_inputs", primaryKey: ["consumer", "entity", "key"], keyOrdered: true, columns: [
            .text("consumer"), .text("entity"), .text("key"),
        ]),
        TableSchema("entities", rowid: .implicit, columns: [
            .text("entity"), .text("key"), .text("fields"), .integer("hash"), .text("sources"), .text("parts", null: true),
            .integer("added_run"), .integer("changed_run"),
        ]),
        TableSchema("field_registry", primaryKey: ["source", "entity", "field"], keyOrdered: true, columns: [
            .text("source"), .text("entity"), .text("field"), .text("kind"), .integer("position"), .integer("first_run"),
            .integer("kind_changed_run", null: true), .text("previous_kind", null: true),
        ]),
        TableSchema("store_meta", primaryKey: ["name"], keyOrdered: true, columns: [.text("name"), .text("value")]),
    ]

    /// Every index beside the primary keys.
    static let indexes: [IndexSchema] = [
        // What a diff reads of every record (its digest) and a sweep of a scope's
        // members: the key, then what it covers (a scan of it, never of the payloads).
        IndexSchema("records_by_key", on: "records", ["source", "entity", "key"], unique: true, covering: ["hash", "raw_hash", "scope"]),
        IndexSchema("records_by_scope", on: "records", ["source", "scope"]),
        IndexSchema("records_by_entity", on: "records", ["entity"]),
        IndexSchema("changes_by_run", on: "changes", ["run_id"]),
        // Only changes are looked up per entity (the latest price change): a first
        // load's million 'added' rows stay out of it.
        IndexSchema("changes_by_entity", on: "changes", ["entity", "key"], where: "op = 'changed'"),
        IndexSchema("entities_by_key", on: "entities", ["entity", "key"], unique: true),
    ]

    /// The indexes a first load drops and builds once at its end, sorted
    /// (FirstLoad.swift): the two key indexes, whose scattered keys cost the
    /// most to maintain row by row, and which the load never reads.
    static let firstLoadDeferredIndexes = ["records_by_key", entityKeyIndex]

    /// The entities' key index: a load that leaves its mode early builds it at
    /// once, since the diff looks entities up by key.
    static let entityKeyIndex = "entities_by_key"

    /// The declared index named `name` (a name the store's own code spells).
    static func index(named name: String) -> IndexSchema {
        guard let declared = indexes.first(where: { $0.name == name }) else { preconditionFailure("no index \(name) in StoreSchema") }
        return declared
    }

    /// The table named `name`.
    static func table(_ name: String) -> TableSchema? { tables.first { $0.name == name } }
}

/// One table of ``StoreSchema``.
struct TableSchema: Sendable {
    /// How the table's rows are numbered.
    enum Rowid: Sendable, Equatable {
        /// Not at all: the primary key names a row.
        case none
        /// A row id the table's declared columns do not list, in insertion order
        /// (SQLite's implicit `rowid`; a `rowid` column on engines that have none).
        case implicit
        /// One of the columns is the row id, its primary key (`id`).
        case integerKey(String)
    }

    let name: String
    let columns: [ColumnSchema]
    let rowid: Rowid
    /// The primary key's columns (for `.integerKey`, that column).
    let primaryKey: [String]
    /// Whether the rows are best stored in key order (small rows looked up by
    /// key: SQLite's `WITHOUT ROWID`); an engine that stores every table alike ignores it.
    let keyOrdered: Bool

    init(_ name: String, rowid: Rowid = .none, primaryKey: [String] = [], keyOrdered: Bool = false, columns: [ColumnSchema]) {
        self.name = name
        self.columns = columns
        self.rowid = rowid
        if case .integerKey(let column) = rowid {
            self.primaryKey = [column]
        } else {
            self.primaryKey = primaryKey
        }
        self.keyOrdered = keyOrdered
    }
}

/// One column of a ``TableSchema``.
struct ColumnSchema: Sendable, Equatable {
    enum ColumnType: Sendable, Equatable {
        /// A 64-bit integer.
        case integer
        /// A double.
        case real
        /// UTF-8 text, compared and sorted bytewise.
        case text
    }

    let name: String
    let type: ColumnType
    let nullable: Bool
    /// The SQL literal a row gets when an insert names no value (`0`, `'[]'`).
    let defaultValue: String?
    /// The only values the column may hold (a CHECK), in their text form.
    let allowed: [String]?
    /// The `table(column)` it refers to.
    let references: String?

    static func integer(_ name: String, null: Bool = false, default value: String? = nil, references: String? = nil) -> ColumnSchema {
        ColumnSchema(name: name, type: .integer, nullable: null, defaultValue: value, allowed: nil, references: references)
    }

    static func real(_ name: String, null: Bool = false, default value: String? = nil) -> ColumnSchema {
        ColumnSchema(name: name, type: .real, nullable: null, defaultValue: value, allowed: nil, references: nil)
    }

    static func text(_ name: String, null: Bool = false, default value: String? = nil, oneOf allowed: [String]? = nil) -> ColumnSchema {
        ColumnSchema(name: name, type: .text, nullable: null, defaultValue: value, allowed: allowed, references: nil)
    }

    /// The CHECK that keeps the column to ``allowed``, if any (the same SQL on every engine).
    var checkClause: String? {
        allowed.map { values in "CHECK (\(name) IN (\(values.map { "'\($0)'" }.joined(separator: ", "))))" }
    }
}

/// One index of ``StoreSchema``.
struct IndexSchema: Sendable {
    let name: String
    let table: String
    /// The columns it sorts by.
    let columns: [String]
    /// Whether no two rows share the sorted columns.
    let unique: Bool
    /// Columns it carries so a query reads the index alone (an engine without
    /// INCLUDE sorts by them too, and then cannot enforce ``unique``).
    let covering: [String]
    /// Only the rows this SQL condition holds for.
    let condition: String?

    init(_ name: String, on table: String, _ columns: [String], unique: Bool = false, covering: [String] = [], where condition: String? = nil) {
        self.name = name
        self.table = table
        self.columns = columns
        self.unique = unique
        self.covering = covering
        self.condition = condition
    }
}
