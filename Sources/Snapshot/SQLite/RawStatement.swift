import GRDB
import GRDBSQLite

/// A prepared GRDB statement bound and stepped through SQLite's C API, for
/// the two inserts a load makes per record (the row and its change-log line),
/// the read of every record's digest at the start of a run, and the streamed
/// reads and writes of the exports (a row per record).
///
/// Hand-written because it measured better: `execute(arguments:)` builds a
/// `StatementArguments` of existential values on every call, and at a million
/// records that boxing was a fifth of the writer thread's time (perf, 1M-row
/// cold load), with the writer the bottleneck of the load.
struct RawStatement {
    private let statement: Statement
    private var handle: SQLiteStatement { statement.sqliteStatement }

    init(_ statement: Statement) {
        self.statement = statement
    }

    /// SQLite copies the bytes (SQLITE_TRANSIENT), so `value` need not outlive the call.
    func bind(_ index: Int32, _ value: String) {
        var value = value
        value.withUTF8 { bytes in
            guard let base = bytes.baseAddress else {
                // An empty buffer has no address, which SQLite would take for NULL.
                _ = sqlite3_bind_text(handle, index, "", 0, RawStatement.transient)
                return
            }
            _ = sqlite3_bind_text(handle, index, UnsafeRawPointer(base).assumingMemoryBound(to: CChar.self), Int32(bytes.count),
                                  RawStatement.transient)
        }
    }

    func bind(_ index: Int32, _ value: Int64) {
        _ = sqlite3_bind_int64(handle, index, value)
    }

    func bind(_ index: Int32, _ value: Int64?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    func bind(_ index: Int32, _ value: String?) {
        if let value { bind(index, value) } else { bindNull(index) }
    }

    func bind(_ index: Int32, _ value: Double) {
        _ = sqlite3_bind_double(handle, index, value)
    }

    func bind(_ index: Int32, _ value: StoredValue) {
        switch value {
        case .null: bindNull(index)
        case .integer(let i): bind(index, i)
        case .real(let d): bind(index, d)
        case .text(let s): bind(index, s)
        }
    }

    func bindNull(_ index: Int32) {
        _ = sqlite3_bind_null(handle, index)
    }

    /// Runs the statement to completion and readies it for the next bindings.
    func execute(_ db: Database) throws {
        let code = sqlite3_step(handle)
        _ = sqlite3_reset(handle)
        guard code == SQLITE_DONE else { throw failure(code, db) }
    }

    /// Steps a query: true while it has a row, read with the `column…` accessors.
    func nextRow(_ db: Database) throws -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE:
            _ = sqlite3_reset(handle)
            return false
        case let code:
            _ = sqlite3_reset(handle)
            throw failure(code, db)
        }
    }

    /// Readies the statement for new bindings, ending its read (a query stopped before its last row).
    func reset() {
        _ = sqlite3_reset(handle)
    }

    /// How many columns the query yields.
    var columnCount: Int32 {
        sqlite3_column_count(handle)
    }

    /// The error SQLite reported for this statement, as GRDB reports its own.
    private func failure(_ code: Int32, _ db: Database) -> DatabaseError {
        DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)),
                      sql: statement.sql)
    }

    /// The text of column `index` of the current row, as bytes valid until the next step.
    func columnBytes(_ index: Int32) -> UnsafeBufferPointer<UInt8> {
        // Text first, then its length: SQLite's documented order, so a
        // conversion made by the first call can never leave a stale length.
        let text = sqlite3_column_text(handle, index)
        return UnsafeBufferPointer(start: text, count: Int(sqlite3_column_bytes(handle, index)))
    }

    func columnIsNull(_ index: Int32) -> Bool {
        sqlite3_column_type(handle, index) == SQLITE_NULL
    }

    func columnInt64(_ index: Int32) -> Int64 {
        sqlite3_column_int64(handle, index)
    }

    func columnOptionalInt64(_ index: Int32) -> Int64? {
        sqlite3_column_type(handle, index) == SQLITE_NULL ? nil : sqlite3_column_int64(handle, index)
    }

    func columnDouble(_ index: Int32) -> Double {
        sqlite3_column_double(handle, index)
    }

    func columnText(_ index: Int32) -> String {
        String(decoding: columnBytes(index), as: UTF8.self)
    }

    /// Column `index` as SQLite typed it (a blob, which no payload read yields, as its bytes read as UTF-8).
    func columnValue(_ index: Int32) -> StoredValue {
        switch sqlite3_column_type(handle, index) {
        case SQLITE_NULL: .null
        case SQLITE_INTEGER: .integer(sqlite3_column_int64(handle, index))
        case SQLITE_FLOAT: .real(sqlite3_column_double(handle, index))
        default: .text(columnText(index))
        }
    }

    /// `SQLITE_TRANSIENT`, a C macro Swift cannot import.
    private static let transient = unsafeBitCast(-1, to: sqlite3_destructor_type.self)
}
