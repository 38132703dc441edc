import Catalog
import Foundation
import GRDB

/// The SQLite engine: GRDB's pool (WAL: readers beside the one writer).
struct SQLiteEngine: SQLEngine {
    let pool: any DatabaseWriter
    /// The file, which names the store in messages.
    let path: String
    /// The file's identity when it was opened for writing; nil read-only.
    let fileIdentity: FileIdentity?

    func write<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.write { db in try body(GRDBSession(db: db)) }
    }

    func writeAwaiting<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        // GRDB's own writer queue.
        try await pool.write { db in try body(GRDBSession(db: db)) }
    }

    func sqliteSnapshot(of store: SQLSnapshotStore) throws -> SQLSnapshotStore { store }

    var statementsSent: Int? { nil }

    /// A SQLite load also runs with `synchronous = OFF`: WAL frames are not
    /// synced at each checkpoint, which a kill -9 cannot tell (the operating
    /// system holds what was written), and ``endBulkLoad()`` syncs everything
    /// once. A run killed in between leaves the key indexes missing; opening
    /// the store builds them again.
    func beginBulkLoad(isEmpty: String) throws -> Bool {
        // Outside a transaction: SQLite refuses to change the safety level within one.
        try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = OFF") }
        let began: Bool
        do {
            began = try pool.write { db in
                guard try Bool.fetchOne(db, sql: isEmpty) == true else { return false }
                for name in StoreSchema.firstLoadDeferredIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(name)") }
                return true
            }
        } catch {
            try? pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") }
            throw error
        }
        if !began { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") } }
        return began
    }

    func leaveBulkLoad() throws {
        try pool.write { db in try db.execute(sql: Schema.entityKeyIndex) }
    }

    /// Builds the key indexes the load dropped (one sorted pass each) and makes
    /// the load durable: the store's usual safety level again, and a checkpoint
    /// that syncs the WAL and the database file.
    func endBulkLoad() throws {
        // The sorts run with an 8 MiB cache, not the writer's 32: SQLite sizes a
        // sort's in-memory runs by the cache, and the cache filled by the load
        // plus 32 MiB runs were the load's peak of memory (1M records: +32 MB
        // over the rest of the load, in the last seconds).
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA shrink_memory")
            try db.execute(sql: "PRAGMA cache_size = -8192")
        }
        defer { try? pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA cache_size = \(Self.writerCacheSize)") } }
        try pool.write { db in
            try db.execute(sql: Schema.keyIndex)
            try db.execute(sql: Schema.entityKeyIndex)
        }
        try pool.writeWithoutTransaction { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
        }
    }

    /// A file created without `auto_vacuum` cannot shrink but by a full
    /// `VACUUM` (SQLite only changes that setting while rebuilding the file),
    /// so the first reclaim is one, and it turns incremental vacuum on: every
    /// later one only moves the pages past the last used one. Rowids survive
    /// both (every rowid table of the store is indexed or has an INTEGER
    /// PRIMARY KEY, which VACUUM keeps). The write-ahead log, which a VACUUM
    /// fills with the whole file, is truncated afterwards.
    func reclaimFreeSpace(fraction: Double) throws -> PruneResult.Reclaim {
        try pool.writeWithoutTransaction { grdb in
            let db = GRDBSession(db: grdb)
            let pages = try db.value(as: Int.self, "PRAGMA page_count") ?? 0
            let free = try db.value(as: Int.self, "PRAGMA freelist_count") ?? 0
            guard pages > 0, Double(free) >= fraction * Double(pages) else { return .none }
            let reclaim: PruneResult.Reclaim
            // 2 = INCREMENTAL.
            if try db.value(as: Int.self, "PRAGMA auto_vacuum") == 2 {
                try db.execute("PRAGMA incremental_vacuum")
                reclaim = .incremental
            } else {
                try db.execute("PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute("VACUUM")
                reclaim = .full
            }
            try db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            return reclaim
        }
    }

    /// The main file and its write-ahead log.
    func bytesOnDisk() -> Int64 {
        [pool.path, pool.path + "-wal"].reduce(0) { total, file in
            let size = (try? FileManager.default.attributesOfItem(atPath: file)[.size] as? NSNumber)?.int64Value ?? 0
            return total + size
        }
    }

    func integrityCheck() throws -> String {
        try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
    }

    func read<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        try pool.read { db in try body(GRDBSession(db: db)) }
    }
}

extension SQLDialect {
    /// SQLite's: in the process, `temp` for temporary tables, `INDEXED BY`.
    static let sqlite = SQLDialect(
        statementsAreRoundTrips: false,
        indexHint: { "INDEXED BY \($0)" },
        temporaryTable: { "temp.\($0)" },
        columns: { db, table in
            let names = try db.rows("SELECT name FROM pragma_table_info(?) ORDER BY cid", [table]).map { $0[0] as String }
            return (table == "records" || table == "entities") ? ["rowid"] + names : names
        },
        tableScanHint: "NOT INDEXED",
        firstTabField: { "substr(\($0), 1, instr(\($0) || char(9), char(9)) - 1)" },
        // The rows' ids and sort keys are sorted, then each row read by id in
        // that order: the picked ids are a co-routine and the left side of a
        // CROSS JOIN, which SQLite always keeps as the outer loop, so rows come
        // out in its order with no second sort. The LIMIT keeps SQLite from
        // flattening the subquery into the join (and dropping its ORDER BY).
        // `SortedReadsTests` checks the order.
        orderedRows: { query in
            """
            SELECT \(query.select)
            FROM (SELECT \(query.alias).\(query.id) AS id FROM \(query.table) \(query.alias)
                  WHERE \(query.filter) ORDER BY \(query.orderBy) LIMIT -1) AS picked
            CROSS JOIN \(query.table) \(query.alias) ON \(query.alias).\(query.id) = picked.id
            \(query.joins)
            """
        })
}

/// SQLite's ``SQLCursor``: a statement stepped through the C API, its
/// columns read in place. Reset when dropped, so a read stopped early does
/// not keep its pooled connection's read transaction open.
final class GRDBCursor: SQLCursor {
    private let statement: RawStatement
    private let db: Database

    init(_ statement: Statement, db: Database, arguments: [any SQLArgument]) {
        self.statement = RawStatement(statement)
        self.db = db
        for (index, argument) in arguments.enumerated() {
            let position = Int32(index + 1)
            switch argument.sqlValue {
            case .null: self.statement.bindNull(position)
            case .integer(let value): self.statement.bind(position, value)
            case .real(let value): self.statement.bind(position, value)
            case .text(let value): self.statement.bind(position, value)
            }
        }
    }

    deinit { statement.reset() }

    func next() throws -> Bool { try statement.nextRow(db) }
    func isNull(_ column: Int) -> Bool { statement.columnIsNull(Int32(column)) }
    func bytes(_ column: Int) -> UnsafeBufferPointer<UInt8> { statement.columnBytes(Int32(column)) }
    func int64(_ column: Int) -> Int64 { statement.columnInt64(Int32(column)) }
    func double(_ column: Int) -> Double { statement.columnDouble(Int32(column)) }
}

/// A GRDB connection as a ``SQLSession``. Statements are cached by their
/// text, as GRDB's own `cachedStatement` does for the store's hot paths.
struct GRDBSession: SQLSession {
    let db: Database
    var dialect: SQLDialect { .sqlite }

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

    func cursor(_ sql: String, _ arguments: [any SQLArgument]) throws -> any SQLCursor {
        // Not the cached statement: two cursors of one text may be open at once.
        GRDBCursor(try db.makeStatement(sql: sql), db: db, arguments: arguments)
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

/// SQLite's ``PreparedInsert``: GRDB's cached statement stepped through the C API.
struct GRDBPreparedInsert: PreparedInsert {
    let statement: RawStatement
    let db: Database

    func bind(_ index: Int32, _ value: String) { statement.bind(index, value) }
    func bind(_ index: Int32, _ value: String?) { statement.bind(index, value) }
    func bind(_ index: Int32, _ value: Int64) { statement.bind(index, value) }
    func bind(_ index: Int32, _ value: Int64?) { statement.bind(index, value) }

    func run() throws -> Int64 {
        try statement.execute(db)
        return db.lastInsertedRowID
    }
}

extension GRDBSession {
    func preparedInsert(_ sql: String) throws -> (any PreparedInsert)? {
        GRDBPreparedInsert(statement: RawStatement(try db.cachedStatement(sql: sql)), db: db)
    }

    func digestIndex(source: String) throws -> DigestIndex? {
        try DigestIndex.load(db, source: source)
    }
}

extension DigestIndex {
    /// Reads every record of `source` (the covering key index and the hashes).
    static func load(_ db: Database, source: String) throws -> DigestIndex {
        let count = try Int.fetchOne(db, sql: "SELECT count(*) FROM records WHERE source = ?", arguments: [source]) ?? 0
        var digests = IdentityTable<StoredDigest>(minimumCapacity: count)
        // Read through SQLite's C API: GRDB's Row per record was most of the
        // ~0.8 s this read took at 1M records, before any page can be diffed.
        let query = RawStatement(try db.makeStatement(sql: "SELECT entity, key, hash, raw_hash, rowid FROM records WHERE source = ?"))
        query.bind(1, source)
        // Rows come grouped by entity (the key index's order): compare with the last name before parsing one.
        var lastName: [UInt8] = []
        var lastEntity: EntityKind?
        while try query.nextRow(db) {
            let name = query.columnBytes(0)
            if !name.elementsEqual(lastName) {
                lastName = Array(name)
                lastEntity = EntityKind(rawValue: String(decoding: name, as: UTF8.self))
            }
            guard let entity = lastEntity else { continue }
            let digest = StoredDigest(hash: query.columnInt64(2), rawHash: query.columnOptionalInt64(3), rowid: query.columnInt64(4))
            digests.insert(entity, keyBytes: query.columnBytes(1), digest)
        }
        return DigestIndex(digests)
    }
}
