import Catalog
import Foundation
import GRDB

/// The engine a ``SQLSession`` speaks to: the store's SQL is written once,
/// in the dialect both accept, and the few places that differ ask.
enum SQLEngineKind: Sendable {
    case sqlite
    case postgres
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
    var engine: SQLEngineKind { get }
    /// Runs one statement; returns how many rows it changed.
    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLArgument]) throws -> Int
    /// Runs an INSERT and returns the new row's `column` (its rowid, or `id`).
    func insert(_ sql: String, _ arguments: [any SQLArgument], returning column: String) throws -> Int64
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

/// A GRDB connection as a ``SQLSession``. Statements are cached by their
/// text, as GRDB's own `cachedStatement` does for the store's hot paths.
struct GRDBSession: SQLSession {
    let db: Database
    var engine: SQLEngineKind { .sqlite }

    static func arguments(_ values: [any SQLArgument]) -> StatementArguments {
        StatementArguments(values.map { value -> DatabaseValue in
            switch value.sqlValue {
            case .null: .null
            case .integer(let integer): integer.databaseValue
            case .real(let real): real.databaseValue
            case .text(let text): text.databaseValue
            }
        })
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLArgument]) throws -> Int {
        if arguments.isEmpty, sql.contains(";") {
            // Several statements (schema): GRDB runs them one by one.
            try db.execute(sql: sql)
            return db.changesCount
        }
        let statement = try db.cachedStatement(sql: sql)
        try statement.execute(arguments: Self.arguments(arguments))
        return db.changesCount
    }

    func insert(_ sql: String, _ arguments: [any SQLArgument], returning column: String) throws -> Int64 {
        try execute(sql, arguments)
        return db.lastInsertedRowID
    }

    @discardableResult
    func queueInsert(into table: String, columns: [String], values: [any SQLArgument], id: String?) throws -> Int64? {
        let placeholders = repeatElement("?", count: columns.count).joined(separator: ", ")
        try execute("INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES (\(placeholders))", values)
        return id == nil ? nil : db.lastInsertedRowID
    }

    func queueUpdate(_ table: String, key: SQLColumn, _ keyValue: any SQLArgument,
                     set: [SQLColumn], _ values: [any SQLArgument]) throws {
        let assignments = set.map { "\($0.name) = ?" }.joined(separator: ", ")
        try execute("UPDATE \(table) SET \(assignments) WHERE \(key.name) = ?", values + [keyValue])
    }

    func queueDelete(from table: String, where columns: [SQLColumn], _ values: [any SQLArgument]) throws {
        try execute("DELETE FROM \(table) WHERE \(columns.map { "\($0.name) = ?" }.joined(separator: " AND "))", values)
    }

    func rows(_ sql: String, _ arguments: [any SQLArgument]) throws -> [SQLRow] {
        var rows: [SQLRow] = []
        try forEachRow(sql, arguments) { rows.append($0) }
        return rows
    }

    func forEachRow(_ sql: String, _ arguments: [any SQLArgument], _ body: (SQLRow) throws -> Void) throws {
        let statement = try db.cachedStatement(sql: sql)
        let names = statement.columnNames
        let cursor = try Row.fetchCursor(statement, arguments: Self.arguments(arguments))
        while let row = try cursor.next() {
            var values: [SQLValue] = []
            values.reserveCapacity(names.count)
            for index in 0..<names.count {
                switch row[index] as DatabaseValue {
                case let value where value.isNull: values.append(.null)
                case let value:
                    switch value.storage {
                    case .int64(let integer): values.append(.integer(integer))
                    case .double(let real): values.append(.real(real))
                    case .string(let text): values.append(.text(text))
                    case .blob(let data): values.append(.text(String(decoding: data, as: UTF8.self)))
                    case .null: values.append(.null)
                    }
                }
            }
            try body(SQLRow(names: names, values: values))
        }
    }
}

/// Where the snapshot's tables live and how a transaction on them is had:
/// one SQLite file (GRDB's pool) or one PostgreSQL database.
protocol SQLEngine: Sendable {
    var kind: SQLEngineKind { get }
    /// Runs `body` in one write transaction: all of it commits, or none.
    func write<T>(_ body: (any SQLSession) throws -> T) throws -> T
    /// Runs `body` over a consistent view of what is committed.
    func read<T>(_ body: (any SQLSession) throws -> T) throws -> T
}

/// The SQLite engine: GRDB's pool (WAL: readers beside the one writer).
struct SQLiteEngine: SQLEngine {
    let pool: any DatabaseWriter
    var kind: SQLEngineKind { .sqlite }

    func write<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.write { db in try body(GRDBSession(db: db)) }
    }

    func read<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.read { db in try body(GRDBSession(db: db)) }
    }
}
