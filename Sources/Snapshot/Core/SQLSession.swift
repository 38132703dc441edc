import Catalog
import Foundation

/// Where the engines differ under the store's shared SQL, declared by each
/// engine (``SQLDialect/sqlite``, ``SQLDialect/postgres``, each in its
/// engine's folder): the SQL is written once, in what every engine accepts,
/// and the few places that differ ask for a capability, never which engine
/// they are on, so another engine is a folder that declares its own.
struct SQLDialect: Sendable {
    /// Whether each statement is a round trip to a server: reads of many rows
    /// by key are then batched (a query per thousand keys, one prefetch per
    /// page), which an engine in the process gains nothing from.
    let statementsAreRoundTrips: Bool
    /// The clause after a table's name that makes a query read it through
    /// `index` (SQLite's planner may pick the table itself), or "" where the
    /// planner needs no telling.
    let indexHint: @Sendable (_ index: String) -> String
    /// A temporary table's name qualified by the schema temporary tables live in.
    let temporaryTable: @Sendable (_ name: String) -> String
    /// The columns of `table` in their order, with an implicit row id named
    /// where the engine has one (SQLite's `rowid` on `records` and `entities`).
    let columns: @Sendable (_ db: any SQLSession, _ table: String) throws -> [String]
    /// The clause after a table's name that makes a query read the table
    /// itself, in row order, rather than through an index ("" where the planner needs no telling).
    let tableScanHint: String
    /// The text of `column` up to its first tab (all of it when it has none),
    /// sorting bytewise.
    let firstTabField: @Sendable (_ column: String) -> String
    /// A query reading rows in an order, written so that the engine's sort
    /// holds what orders them, not what is selected (a payload can be a
    /// megabyte, and a sort holds every row it sorts until it is done).
    let orderedRows: @Sendable (_ query: OrderedRows) -> String
}

/// `SELECT select FROM table alias joins WHERE filter ORDER BY orderBy`, as
/// ``SQLDialect/orderedRows`` renders it. `filter` and `orderBy` name only
/// `alias`'s columns (other tables through subqueries); `joins` come after
/// (`JOIN …`, `LEFT JOIN …`) and add columns to `select`, not rows.
struct OrderedRows {
    var select: String
    var table: String
    var alias: String
    /// The table's unique row id column.
    var id: String
    var filter: String
    var orderBy: String
    var joins: String = ""
}

/// A query's rows read one at a time, in place (``SQLSession/cursor(_:_:)``):
/// memory holds a row, or a server's batch of rows, never the result. Read
/// within the transaction that opened it.
protocol SQLCursor: AnyObject {
    /// Steps to the next row; false once there is none.
    func next() throws -> Bool
    /// Whether column `column` of the current row is NULL.
    func isNull(_ column: Int) -> Bool
    /// A text column's UTF-8 bytes (none for NULL), valid until the next step.
    func bytes(_ column: Int) -> UnsafeBufferPointer<UInt8>
    /// An integer column (0 for NULL).
    func int64(_ column: Int) -> Int64
    /// A number column (0 for NULL).
    func double(_ column: Int) -> Double
}

extension SQLCursor {
    func text(_ column: Int) -> String { String(decoding: bytes(column), as: UTF8.self) }
    func optionalText(_ column: Int) -> String? { isNull(column) ? nil : text(column) }
    func optionalInt64(_ column: Int) -> Int64? { isNull(column) ? nil : int64(column) }
    func optionalDouble(_ column: Int) -> Double? { isNull(column) ? nil : double(column) }
}

/// A value bound to a statement or read from a row, whichever the engine.
enum SQLValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
}

/// What can be bound to a `?` of a statement.
protocol SQLArgument {
    var sqlValue: SQLValue { get }
}

extension SQLValue: SQLArgument {
    var sqlValue: SQLValue { self }
}

extension String: SQLArgument {
    var sqlValue: SQLValue { .text(self) }
}

extension Int: SQLArgument {
    var sqlValue: SQLValue { .integer(Int64(self)) }
}

extension Int64: SQLArgument {
    var sqlValue: SQLValue { .integer(self) }
}

extension Double: SQLArgument {
    var sqlValue: SQLValue { .real(self) }
}

/// Stored as 0/1: both engines' tables keep flags in integer columns.
extension Bool: SQLArgument {
    var sqlValue: SQLValue { .integer(self ? 1 : 0) }
}

extension Optional: SQLArgument where Wrapped: SQLArgument {
    var sqlValue: SQLValue { self?.sqlValue ?? .null }
}

/// What a column of a ``SQLRow`` can be read as.
protocol SQLColumnValue {
    init?(sqlValue: SQLValue)
}

extension String: SQLColumnValue {
    init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .text(let text): self = text
        case .integer(let value): self = String(value)
        case .real(let value): self = String(value)
        case .null: return nil
        }
    }
}

extension Int64: SQLColumnValue {
    init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .integer(let value): self = value
        case .real(let value):
            // A PostgreSQL sum past Int64 comes back as a real; NaN or inf from a damaged store.
            guard let exact = Int64(exactly: value.rounded(.towardZero)) else { return nil }
            self = exact
        case .text(let text): guard let value = Int64(text) else { return nil }; self = value
        case .null: return nil
        }
    }
}

extension Int: SQLColumnValue {
    init?(sqlValue: SQLValue) {
        guard let value = Int64(sqlValue: sqlValue) else { return nil }
        self = Int(value)
    }
}

extension Double: SQLColumnValue {
    init?(sqlValue: SQLValue) {
        switch sqlValue {
        case .real(let value): self = value
        case .integer(let value): self = Double(value)
        case .text(let text): guard let value = Double(text) else { return nil }; self = value
        case .null: return nil
        }
    }
}

extension Bool: SQLColumnValue {
    init?(sqlValue: SQLValue) {
        guard let value = Int64(sqlValue: sqlValue) else { return nil }
        self = value != 0
    }
}

/// One row of a result, its columns by position or by name.
struct SQLRow {
    let names: [String]
    let values: [SQLValue]

    /// A column that must be there and not null; reading it otherwise is a
    /// bug in the query (the store's own tables declare these NOT NULL).
    subscript<T: SQLColumnValue>(_ index: Int) -> T {
        guard let value = T(sqlValue: values[index]) else {
            preconditionFailure("column \(index) (\(names[index])) holds \(values[index]), not \(T.self)")
        }
        return value
    }

    subscript<T: SQLColumnValue>(_ index: Int) -> T? {
        T(sqlValue: values[index])
    }

    subscript<T: SQLColumnValue>(_ name: String) -> T {
        self[position(of: name)]
    }

    subscript<T: SQLColumnValue>(_ name: String) -> T? {
        self[position(of: name)]
    }

    private func position(of name: String) -> Int {
        guard let index = names.firstIndex(of: name) else { preconditionFailure("no column \(name) in \(names)") }
        return index
    }
}

/// A connection to the snapshot's database within a transaction (or, for
/// reads, a consistent view): the store's tables are read and written
/// through this, so the same logic runs on SQLite and on PostgreSQL.
///
/// SQL is written with `?` placeholders, in the dialect both engines accept
/// (`ON CONFLICT … DO UPDATE`, qualified column names in its `SET`, `rowid`
/// as a real column on PostgreSQL); the PostgreSQL session numbers them.
protocol SQLSession {
    /// Where this engine's SQL differs.
    var dialect: SQLDialect { get }
    /// Runs one statement; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLArgument]) throws -> Int
    /// Runs an INSERT and returns the new row's `column` (its rowid, or `id`).
    func insert(_ sql: String, _ arguments: [any SQLArgument], returning column: String) throws -> Int64
    /// A cursor over the rows of a query, read in place: the exports' reads,
    /// a row per record, where a ``SQLRow`` of boxed values per row would cost
    /// more than the read. Several may be open at once.
    func cursor(_ sql: String, _ arguments: [any SQLArgument]) throws -> any SQLCursor
    /// Streams the rows of a query: memory holds a batch, not the result.
    func forEachRow(_ sql: String, _ arguments: [any SQLArgument], _ body: (SQLRow) throws -> Void) throws
    /// Every row of a small result.
    func rows(_ sql: String, _ arguments: [any SQLArgument]) throws -> [SQLRow]
    /// Inserts one row whose effects nothing reads before the transaction's
    /// next statement or its commit. With `id`, the row gets that column
    /// numbered as SQLite numbers rowids (the largest plus one) and returns it.
    ///
    /// SQLite writes it at once; PostgreSQL queues it and writes a table's
    /// queued rows as one multi-row statement before the next statement that
    /// is not queued, or at the commit: one round trip for a page's rows,
    /// not one each.
    @discardableResult
    func queueInsert(into table: String, columns: [String], values: [any SQLArgument], id: String?) throws -> Int64?
    /// Updates `set` of the row whose `key` column is `keyValue`, queued as
    /// ``queueInsert(into:columns:values:id:)`` is. The row must exist.
    func queueUpdate(_ table: String, key: SQLColumn, _ keyValue: any SQLArgument,
                     set: [SQLColumn], _ values: [any SQLArgument]) throws
    /// Deletes the rows whose `columns` hold `values`, queued as
    /// ``queueInsert(into:columns:values:id:)`` is.
    func queueDelete(from table: String, where columns: [SQLColumn], _ values: [any SQLArgument]) throws
    /// `sql` (an INSERT) prepared for one row after another in this transaction,
    /// its values bound by position; nil where the engine's queued writes
    /// (``queueInsert(into:columns:values:id:)``) are the faster way.
    func preparedInsert(_ sql: String) throws -> (any PreparedInsert)?
    /// Every stored digest of `source`, read the engine's fastest way; nil
    /// where that is the shared query (``DigestIndex/load(_:source:)``).
    func digestIndex(source: String) throws -> DigestIndex?
}

/// An insert prepared once and run once per row (``SQLSession/preparedInsert(_:)``):
/// a page's per-record inserts bind straight into the statement, with no
/// argument list built per row (at a million records that boxing was a fifth
/// of SQLite's writer thread, ``RawStatement``).
protocol PreparedInsert {
    func bind(_ index: Int32, _ value: String)
    func bind(_ index: Int32, _ value: String?)
    func bind(_ index: Int32, _ value: Int64)
    func bind(_ index: Int32, _ value: Int64?)
    /// Runs the insert with the values bound; returns the new row's rowid.
    func run() throws -> Int64
}

/// A column named in a queued write, with the type PostgreSQL reads its
/// values as (a multi-row update's `VALUES` list has no column to infer them from).
struct SQLColumn: Hashable, Sendable {
    enum ColumnType: String, Sendable {
        case integer = "bigint"
        case real = "double precision"
        case text
    }

    let name: String
    let type: ColumnType

    static func integer(_ name: String) -> SQLColumn { SQLColumn(name: name, type: .integer) }
    static func text(_ name: String) -> SQLColumn { SQLColumn(name: name, type: .text) }
}

extension SQLSession {
    @discardableResult
    func execute(_ sql: String) throws -> Int { try execute(sql, []) }

    func rows(_ sql: String) throws -> [SQLRow] { try rows(sql, []) }

    func row(_ sql: String, _ arguments: [any SQLArgument] = []) throws -> SQLRow? {
        try rows(sql, arguments).first
    }

    /// The rows of a query over many keys, a thousand to a statement (a
    /// round trip each on PostgreSQL, not one per key): `sql` is given the
    /// `?, ?…` list of a chunk's placeholders, bound after `arguments`.
    func rows(keyedBy keys: [String], _ arguments: [any SQLArgument], _ sql: (_ placeholders: String) -> String,
              _ body: (SQLRow) throws -> Void) throws {
        for start in stride(from: 0, to: keys.count, by: 1000) {
            let chunk = keys[start..<min(start + 1000, keys.count)]
            for row in try rows(sql(repeatElement("?", count: chunk.count).joined(separator: ", ")), arguments + Array(chunk)) {
                try body(row)
            }
        }
    }

    /// The first column of the first row, nil when there is none or it is null.
    func value<T: SQLColumnValue>(as type: T.Type, _ sql: String, _ arguments: [any SQLArgument] = []) throws -> T? {
        try value(sql, arguments, as: type)
    }

    /// The first column of the first row, nil when there is none or it is null.
    func value<T: SQLColumnValue>(_ sql: String, _ arguments: [any SQLArgument] = [], as type: T.Type = T.self) throws -> T? {
        guard let row = try row(sql, arguments) else { return nil }
        return row[0]
    }
}

extension SQLEngine {
    func readStatement<T>(_ body: (any SQLSession) throws -> T) throws -> T { try read(body) }
}

/// Where the snapshot's tables live and how a transaction on them is had:
/// one SQLite file (GRDB's pool) or one PostgreSQL database.
protocol SQLEngine: Sendable {
    /// Runs `body` in one write transaction: all of it commits, or none.
    func write<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// ``write(_:)`` whose wait is not on a thread of the cooperative pool (the
    /// engine's own writer queue or thread): a page's apply awaits it.
    func writeAwaiting<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T
    /// Runs `body` over a consistent view of what is committed.
    func read<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// ``read(_:)`` for a body that runs one statement, which is consistent by
    /// itself: on a server, sent outside a transaction (one round trip, not
    /// three; a crawl asks one for each page's memo).
    func readStatement<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Statements sent to a server so far (nil for an engine in the process):
    /// what a page costs in round trips, which tests bound.
    var statementsSent: Int? { get }
    /// The store as a SQLite file, which an as-of export attaches
    /// (``SQLSnapshotStore/snapshotFile()``): `store` itself on SQLite, else a
    /// local copy of it, taken again once anything was written since. Every
    /// other export reads the store itself (``SQLSession/cursor(_:_:)``).
    func sqliteSnapshot(of store: SQLSnapshotStore) throws -> SQLSnapshotStore

    // MARK: Upkeep, where each engine does its own

    /// Begins a first load if the store is empty (`isEmpty`: the query that
    /// says so), trading what the engine may for speed (SQLite: its key indexes
    /// dropped, to be built once at the end, and no sync at each checkpoint).
    /// Returns false, having changed nothing, when the store is not empty.
    func beginBulkLoad(isEmpty: String) throws -> Bool
    /// The first load ends early (a page not all new): what the diff needs
    /// from now on is built (SQLite: the entities' key index).
    func leaveBulkLoad() throws
    /// The first load is over: what ``beginBulkLoad(isEmpty:)`` dropped is
    /// built again and the load made durable.
    func endBulkLoad() throws
    /// Hands free space back to the file system when more than `fraction` of
    /// the store is free (after retention deleted history).
    func reclaimFreeSpace(fraction: Double) throws -> PruneResult.Reclaim
    /// What the store takes on disk, in bytes.
    func bytesOnDisk() -> Int64
    /// Throws `storeLost` when the store this engine writes is no longer the
    /// one at its location (a file removed or replaced under a run).
    func checkInPlace() throws(StoreSyncError)
    /// The engine's own check of the store's pages: "ok" for a sound store.
    func integrityCheck() throws -> String
}
