import Catalog
import GRDB

/// A new SQLite file, built whole in one transaction: the consumer database
/// an export publishes. Here because this target is the one owner of GRDB;
/// what the file holds (its tables, view and indexes) is the export's format
/// and stays with the export, which hands the SQL in.
package final class SQLiteFile {
    private let db: Database

    private init(_ db: Database) {
        self.db = db
    }

    /// Creates the file at `path` (which must not exist) and runs `body` in
    /// one transaction; the file is closed when this returns.
    package static func create(at path: String, _ body: (SQLiteFile) throws -> Void) throws {
        var configuration = Configuration()
        // The file's foreign keys are declarations for readers (Datasette links,
        // joins), never constraints: an episode whose podcast was never crawled
        // is a row like any other. GRDB enforces them unless told not to.
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try queue.writeWithoutTransaction { db in
            // Built under a temporary name and renamed into place by the caller: no journal to keep.
            try db.execute(sql: "PRAGMA journal_mode = OFF")
            // The index builds sort in runs of this size (SQLite's sorter spills a
            // run per cache's worth of keys) and merge every run at once, each
            // reader holding the largest key it read. At the default 2 MB, a
            // table with hundreds of megabyte-long names (a listing stuffed with
            // text) made a run every two keys and held ~1 MB per run: 330 MB of
            // the export's 405 MB peak at 20k listings, 1.85 GB at 200k. At 16 MB
            // there are an eighth of the runs, and a usual table sorts in one.
            try db.execute(sql: "PRAGMA cache_size = -16384")
            try db.inTransaction {
                try body(SQLiteFile(db))
                return .commit
            }
        }
        try queue.close()
    }

    /// The first column of the first row `sql` gives in the existing file at
    /// `path`, opened read-only; nil when the query gives no row.
    package static func value(_ sql: String, at path: String) throws -> StoredValue? {
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        return try queue.read { db in
            let query = RawStatement(try db.makeStatement(sql: sql))
            defer { query.reset() }
            return try query.nextRow(db) ? query.columnValue(0) : nil
        }
    }

    /// Runs `sql` (one or more statements) with `arguments` bound to its `?`s.
    package func execute(_ sql: String, _ arguments: [StoredValue] = []) throws {
        try db.execute(sql: sql, arguments: StatementArguments(arguments.map(\.databaseValue)))
    }

    /// A statement prepared once and run per row, bound through SQLite's C API.
    package func prepare(_ sql: String) throws -> Statement {
        Statement(raw: RawStatement(try db.makeStatement(sql: sql)), db: db)
    }

    /// Runs a query over what the file holds so far, one row at a time.
    package func forEachRow(_ sql: String, _ body: ([StoredValue]) throws -> Void) throws {
        let query = RawStatement(try db.makeStatement(sql: sql))
        var row: [StoredValue] = []
        while try query.nextRow(db) {
            row.removeAll(keepingCapacity: true)
            for index in 0..<query.columnCount { row.append(query.columnValue(index)) }
            try body(row)
        }
    }

    package struct Statement {
        fileprivate let raw: RawStatement
        fileprivate let db: Database

        /// Binds the 1-based parameter `index`.
        package func bind(_ index: Int, _ value: StoredValue) { raw.bind(Int32(index), value) }
        package func bind(_ index: Int, _ value: String) { raw.bind(Int32(index), value) }

        /// Runs the statement with what is bound, and readies it for the next row.
        package func run() throws { try raw.execute(db) }
    }
}

extension StoredValue {
    var databaseValue: DatabaseValue {
        switch self {
        case .null: .null
        case .integer(let i): i.databaseValue
        case .real(let d): d.databaseValue
        case .text(let s): s.databaseValue
        }
    }
}
