import Catalog
import Foundation
import Logging
import NIOCore
import PostgresNIO
import Synchronization

/// The PostgreSQL engine of a snapshot: one connection for the writer and one
/// for readers, so a read taken while a page's transaction is open sees what
/// is committed, as SQLite's WAL readers do.
///
/// Calls are synchronous (postgres-nio's `EventLoopFuture` API, waited on):
/// the store's interface is, and the wait is for the server, never for a
/// thread of Swift's cooperative pool, so it cannot starve the crawl into a
/// deadlock.
final class PostgresEngine: SQLEngine, @unchecked Sendable {
    /// Names the database in messages, without its password.
    let name: String
    // One transaction at a time on each connection; NSLock rather than a
    // Mutex because a transaction's result is generic and need not be `sending`.
    private var writer: PostgresConnection
    private let writerLock = NSLock()
    private var reader: PostgresConnection
    /// Recursive: a read made within a read on the same thread (an export
    /// looking records up while it streams others) joins the open one, on the
    /// one reader connection, rather than waiting for itself.
    private let readerLock = NSRecursiveLock()
    /// The read transaction open on `reader`, while one is (under `readerLock`).
    private var openRead: (any SQLSession)?
    /// A worker's leases are renewed on a connection of their own: a heartbeat
    /// must never wait behind the writer's transaction (a closing step's
    /// replay, a claim waiting for a lock), or a busy worker would lose its scopes.
    private var control: PostgresConnection?
    private let controlLock = NSLock()
    /// A fleet worker's staging log is written on a connection of its own, so
    /// its crawl never waits behind the transactions of the applier (which may
    /// be this same worker, applying the scopes crawled so far, issue 27 item
    /// 5): the two write different rows (the log of scopes still crawled; the
    /// snapshot and the log of scopes done) and each is fenced by its own claim.
    private var staging: PostgresConnection?
    private let stagingLock = NSLock()
    let logger: Logger
    /// Opens a connection again when the server closed one: restarted, or it
    /// ended a session left idle in a transaction (a worker paused mid-commit).
    private let connect: @Sendable () throws -> PostgresConnection
    /// Settings every new connection gets (a fleet's idle timeout).
    private var sessionSettings: [String] = []

    init(name: String, logger: Logger, connect: @escaping @Sendable () throws -> PostgresConnection) throws {
        self.name = name
        self.logger = logger
        self.connect = connect
        writer = try connect()
        reader = try connect()
    }

    /// The connection, opened again first if the server closed it. Called under its lock.
    private func live(_ connection: inout PostgresConnection) throws -> PostgresConnection {
        guard connection.isClosed else { return connection }
        let fresh = try connect()
        for setting in sessionSettings { try PostgresSession(connection: fresh, logger: logger).execute(setting) }
        connection = fresh
        return fresh
    }

    deinit {
        try? writer.close().wait()
        try? reader.close().wait()
        try? control?.close().wait()
        try? staging?.close().wait()
    }

    /// Runs `body` in a transaction on the control connection (lease renewals).
    func renewals<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        controlLock.lock()
        defer { controlLock.unlock() }
        let live = try opened(&control)
        return try Self.transaction(live, logger: logger, begin: "BEGIN", body)
    }

    /// Runs `body` in a transaction on the staging connection (a fleet worker's log of pages).
    func stagingWrite<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        stagingLock.lock()
        defer { stagingLock.unlock() }
        let live = try opened(&staging)
        return try Self.transaction(live, logger: logger, begin: "BEGIN", counter: statementCounter, body)
    }

    /// Runs `body`, which sends one statement, on the staging connection
    /// outside a transaction (the statement is one by itself), waited for off
    /// the cooperative pool, as ``writeAwaiting(_:)`` is. A body that finds
    /// its statement refused may run more, each then its own transaction.
    func stagingStatementAwaiting<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await awaitOffPool {
            self.stagingLock.lock()
            defer { self.stagingLock.unlock() }
            let live = try self.opened(&self.staging)
            return try body(PostgresSession(connection: live, logger: self.logger, counter: self.statementCounter))
        }
    }

    /// A connection opened on first use, or again if the server closed it. Called under its lock.
    private func opened(_ connection: inout PostgresConnection?) throws -> PostgresConnection {
        let live: PostgresConnection
        if var existing = connection {
            live = try self.live(&existing)
        } else {
            live = try connect()
            // The fleet's settings, as every connection of a worker has them: a worker
            // paused inside a transaction must not hold the claim rows past a lease.
            for setting in sessionSettings { try PostgresSession(connection: live, logger: logger).execute(setting) }
        }
        connection = live
        return live
    }

    func write<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        writerLock.lock()
        defer { writerLock.unlock() }
        defer { writeCount.add(1, ordering: .relaxed) }
        return try Self.transaction(try live(&writer), logger: logger, begin: "BEGIN", counter: statementCounter, body)
    }

    /// ``write(_:)``, waited for off Swift's cooperative pool (``awaitOffPool(_:)``):
    /// a page's transaction waits on the server (and a fleet's on other
    /// workers' row locks) for as long as it takes, and a pool thread (one
    /// per core) blocked there runs none of the crawl's fetches meanwhile.
    func writeAwaiting<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await awaitOffPool { try self.write(body) }
    }

    /// Makes this engine a fleet worker's: a session idle inside a transaction
    /// (its process paused mid-commit) is ended by the server after
    /// `idleSeconds`, which releases the claim rows and locks it held.
    func joinFleet(idleSeconds: Double) throws {
        // A lease: a paused worker's locks are freed when its scopes can be
        // taken over anyway. The workers waiting on them meanwhile keep their
        // own leases (renewed on the control connection, from a thread of its
        // own). A live worker idles inside a transaction only while it computes
        // between two statements, which a lease far exceeds.
        let milliseconds = Int64(max(1, idleSeconds) * 1000)
        // SET takes no parameters: the value is a number this code formatted.
        let setting = "SET idle_in_transaction_session_timeout = \(milliseconds)"
        writerLock.lock()
        defer { writerLock.unlock() }
        readerLock.lock()
        defer { readerLock.unlock() }
        sessionSettings = [setting]
        try PostgresSession(connection: try live(&writer), logger: logger).execute(setting)
        try PostgresSession(connection: try live(&reader), logger: logger).execute(setting)
    }

    private let statementCounter = PostgresSession.StatementCounter()
    /// Statements the writer has sent so far: what a page costs in round trips.
    var statementsSent: Int? { statementCounter.value.load(ordering: .relaxed) }

    private let writeCount = Atomic<Int>(0)
    /// Write transactions begun so far: a copy taken at one count is current until the next.
    var writes: Int { writeCount.load(ordering: .relaxed) }

    /// Reads see one snapshot of what is committed (REPEATABLE READ), which an
    /// export streaming several tables needs: a page committed meanwhile by a
    /// worker must not show in one table and not in the next.
    func read<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        readerLock.lock()
        defer { readerLock.unlock() }
        if let openRead { return try body(openRead) }
        return try Self.transaction(try live(&reader), logger: logger, begin: "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") { session in
            openRead = session
            defer { openRead = nil }
            return try body(session)
        }
    }

    func readStatement<T>(_ body: (any SQLSession) throws -> T) throws -> T {
        readerLock.lock()
        defer { readerLock.unlock() }
        if let openRead { return try body(openRead) }
        // In autocommit: the one statement sees one snapshot of what is committed.
        let sent = PostgresSession.StatementCounter()
        defer { assert(sent.value.load(ordering: .relaxed) <= 1, "readStatement ran more than one statement") }
        return try body(PostgresSession(connection: try live(&reader), logger: logger, counter: sent))
    }

    private static func transaction<T>(_ connection: PostgresConnection, logger: Logger, begin: String,
                                       counter: PostgresSession.StatementCounter? = nil,
                                       _ body: (any SQLSession) throws -> T) throws -> T {
        let session = PostgresSession(connection: connection, logger: logger, counter: counter)
        try session.execute(begin)
        do {
            let result = try body(session)
            try session.execute("COMMIT")
            return result
        } catch {
            // A connection the server dropped cannot roll back; the server already did.
            session.discardQueued()
            _ = try? session.execute("ROLLBACK")
            throw error
        }
    }
}

/// A failure the server or the connection reported, in words a person can act on.
struct PostgresFailure: Error, CustomStringConvertible {
    let description: String
    /// The SQLSTATE, when the server sent one (e.g. 40001: serialization failure).
    let sqlState: String?

    init(_ error: any Error, sql: String? = nil) {
        if let error = error as? PSQLError {
            var text: String
            if let info = error.serverInfo {
                text = info[.message] ?? "\(error.code)"
                if let detail = info[.detail] { text += " (\(detail))" }
                if let hint = info[.hint] { text += "; hint: \(hint)" }
                sqlState = info[.sqlState]
            } else {
                text = "\(error.code)"
                if let underlying = error.underlying { text += ": \(underlying)" }
                sqlState = nil
            }
            if let sql { text += " in: \(sql.prefix(200))" }
            description = text
        } else {
            description = "\(error)"
            sqlState = nil
        }
    }
}

/// A PostgreSQL connection within a transaction, as a ``SQLSession``.
struct PostgresSession: SQLSession {
    let connection: PostgresConnection
    let logger: Logger
    private let counter: StatementCounter?
    /// Queued writes (``queueInsert(into:columns:values:id:)``), written before the next statement.
    private let queue = PostgresWriteQueue()
    /// Writes sent by ``sendAhead()`` and not yet waited for.
    private let writesAhead = WritesAhead()

    final class WritesAhead {
        var sent: EventLoopFuture<Void>?
    }
    var dialect: SQLDialect { .postgres }

    /// None: a page's rows go out queued, a multi-row statement per table.
    func preparedInsert(_ sql: String) throws -> (any PreparedInsert)? { nil }

    /// None faster than the shared query, which streams the rows.
    func digestIndex(source: String) throws -> DigestIndex? { nil }

    init(connection: PostgresConnection, logger: Logger, counter: StatementCounter? = nil) {
        self.connection = connection
        self.logger = logger
        self.counter = counter
    }

    /// Counts the statements an engine's sessions send.
    final class StatementCounter: Sendable {
        let value = Atomic<Int>(0)
    }

    /// `?` → `$1`, `$2`… outside quoted text, identifiers and `$$` bodies;
    /// statements separated by `;` are split (the extended protocol takes one at a time).
    static func numbered(_ sql: String) -> (statements: [String], placeholders: Int) {
        var statements: [String] = []
        var current = ""
        var count = 0
        var quote: Character?
        var inBody = false
        var inComment = false
        var previous: Character?
        for character in sql {
            defer { previous = character }
            // A `--` comment runs to the end of its line; its words may hold quotes.
            if inComment {
                current.append(character)
                if character == "\n" { inComment = false }
                continue
            }
            if character == "-", previous == "-", quote == nil, !inBody {
                inComment = true
                current.append(character)
                continue
            }
            if character == "$", previous == "$", quote == nil {
                inBody.toggle()
                current.append(character)
                continue
            }
            if inBody {
                current.append(character)
                continue
            }
            if let open = quote {
                current.append(character)
                if character == open { quote = nil }
                continue
            }
            switch character {
            case "'", "\"":
                quote = character
                current.append(character)
            case "?":
                count += 1
                current.append("$\(count)")
            case ";":
                statements.append(current)
                current = ""
            default:
                current.append(character)
            }
        }
        statements.append(current)
        return (statements.filter { !$0.allSatisfy(\.isWhitespace) }, count)
    }

    static let cursors = Atomic<Int>(0)

    /// The longest a statement may take before the store gives up on it
    /// (Invariant 8): a copy's largest insert or a cursor's batch takes seconds.
    static let statementSeconds: Int64 = 600

    /// Waits for `future`, at most `seconds`.
    static func bounded<T: Sendable>(_ future: EventLoopFuture<T>, seconds: Int64) throws -> T {
        let promise = future.eventLoop.makePromise(of: T.self)
        let settled = Atomic<Bool>(false)
        let timeout = future.eventLoop.scheduleTask(in: .seconds(seconds)) {
            if !settled.exchange(true, ordering: .relaxed) {
                promise.fail(StoreSyncError.storage(path: "postgres", reason: "no answer from the server in \(seconds) s"))
            }
        }
        future.whenComplete { result in
            timeout.cancel()
            if !settled.exchange(true, ordering: .relaxed) { promise.completeWith(result) }
        }
        return try promise.futureResult.wait()
    }

    static func bindings(_ arguments: [any SQLArgument]) -> PostgresBindings {
        var bindings = PostgresBindings(capacity: arguments.count)
        for argument in arguments {
            switch argument.sqlValue {
            case .null: bindings.appendNull()
            case .integer(let value): bindings.append(value)
            case .real(let value): bindings.append(value)
            case .text(let value): bindings.append(value)
            }
        }
        return bindings
    }

    /// ``numbered(_:)`` of the statements already seen: the store sends the
    /// same few texts for every record, and numbering walks each character.
    private static let numberedTexts = Mutex<[String: (statements: [String], placeholders: Int)]>([:])

    private static func numberedOnce(_ sql: String) -> (statements: [String], placeholders: Int) {
        if let known = numberedTexts.withLock({ $0[sql] }) { return known }
        let numbered = numbered(sql)
        numberedTexts.withLock { texts in
            // Texts are the store's own, a few hundred; the bound is for a caller that varies them.
            if texts.count > 4096 { texts.removeAll() }
            texts[sql] = numbered
        }
        return numbered
    }

    private func run(_ sql: String, _ arguments: [any SQLArgument]) throws -> PostgresQueryResult {
        let (statements, placeholders) = Self.numberedOnce(sql)
        precondition(placeholders == arguments.count || statements.count > 1,
                     "\(arguments.count) arguments for \(placeholders) placeholders in \(sql)")
        try flush()
        for statement in statements { Self.forgetIDs(movedBy: statement, in: queue) }
        var last: PostgresQueryResult?
        for statement in statements {
            last = try send(statement, statements.count == 1 ? Self.bindings(arguments) : PostgresBindings())
        }
        guard let last else { preconditionFailure("no statement in \(sql)") }
        return last
    }

    /// A statement not queued that inserts or deletes rows moves the largest
    /// id of its table: the queue reads it again. One it cannot name a table
    /// of (a `WITH`, a `TRUNCATE`…) makes it read every table's again.
    private static func forgetIDs(movedBy statement: String, in queue: PostgresWriteQueue) {
        let words = statement.split(whereSeparator: \.isWhitespace).prefix(3).map { $0.uppercased() }
        guard let first = words.first else { return }
        switch first {
        case "SELECT", "UPDATE", "FETCH", "DECLARE", "CLOSE", "BEGIN", "COMMIT", "ROLLBACK", "SET":
            return
        case "INSERT", "DELETE":
            if words.count == 3, words[1] == "INTO" || words[1] == "FROM" {
                // A table name as the store writes them: bare, before its column list.
                queue.forgetIDs(of: String(words[2].lowercased().prefix { $0 != "(" }))
            } else {
                queue.forgetIDs()
            }
        default:
            queue.forgetIDs()
        }
    }

    @discardableResult
    private func send(_ statement: String, _ bindings: PostgresBindings) throws -> PostgresQueryResult {
        guard !connection.isClosed else { throw Self.closed(statement) }
        counter?.value.add(1, ordering: .relaxed)
        do {
            return try Self.bounded(connection.query(PostgresQuery(unsafeSQL: statement, binds: bindings), logger: logger),
                                    seconds: Self.statementSeconds)
        } catch {
            throw PostgresFailure(error, sql: statement)
        }
    }

    /// A query written to a connection the server already closed is never
    /// answered: it fails before it is sent (the engine opens a new one next time).
    private static func closed(_ sql: String) -> PostgresFailure {
        PostgresFailure(StoreSyncError.storage(path: "postgres", reason: "the server closed the connection"), sql: sql)
    }

    /// Writes what is queued, a table's rows in as few statements as the bind
    /// limit allows, or one `COPY` for many rows of a plain insert, and waits
    /// until the server has them (and the writes sent ahead before them).
    func flush() throws {
        try sendAhead()
        try awaitWritesAhead()
    }

    /// Sends what is queued without waiting for the server: the session
    /// queues its next rows while the server writes these (a first load's
    /// client and server took turns, each idle while the other worked). At
    /// most one batch is ahead: the one before is waited for first, so memory
    /// holds two batches at most. It is waited for before any statement
    /// whose answer the store reads, and before the commit (``flush()``).
    private func sendAhead() throws {
        try awaitWritesAhead()
        let writes = queue.drain()
        guard let first = writes.first else { return }
        guard !connection.isClosed else { throw Self.closed(Self.describe(first)) }
        counter?.value.add(writes.count, ordering: .relaxed)
        let connection = connection, logger = logger
        let promise = connection.eventLoop.makePromise(of: Void.self)
        // One task sends them all, each after the one before is answered, so
        // the queue's order within a table holds (an insert before an update
        // of its row). Off the cooperative pool: the thread that waits for it
        // may be one of the pool's (a store call made from async code).
        Task(executorPreference: OffPoolExecutor.shared) {
            for write in writes {
                do {
                    switch write {
                    case .statement(let sql, let values):
                        _ = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: Self.bindings(values)), logger: logger).get()
                    case .copy(let table, let columns, let rows):
                        try await Self.copy(rows, into: table, columns: columns, on: connection, logger: logger)
                    }
                } catch {
                    promise.fail(PostgresFailure(error, sql: Self.describe(write)))
                    return
                }
            }
            promise.succeed(())
        }
        writesAhead.sent = promise.futureResult
    }

    /// Waits for what ``sendAhead()`` sent; its error is the first write's that failed.
    private func awaitWritesAhead() throws {
        guard let sent = writesAhead.sent else { return }
        writesAhead.sent = nil
        do {
            try Self.bounded(sent, seconds: Self.statementSeconds)
        } catch let failure as PostgresFailure {
            throw failure
        } catch {
            throw PostgresFailure(error, sql: "the rows queued before")
        }
    }

    /// A write in words, for an error that names it.
    private static func describe(_ write: PostgresWriteQueue.Write) -> String {
        switch write {
        case .statement(let sql, _): sql
        case .copy(let table, let columns, let rows): "COPY \(table) (\(columns.joined(separator: ", "))) FROM STDIN: \(rows.count) rows"
        }
    }

    /// Bytes of `COPY` text sent to the server at a time: the client holds one
    /// chunk beside the queued rows, not a second copy of them all.
    static let copyChunkBytes = 1 << 20

    /// The `COPY` itself: the rows as text, sent a chunk at a time.
    private static func copy(_ rows: ArraySlice<[SQLValue]>, into table: String, columns: [String],
                             on connection: PostgresConnection, logger: Logger) async throws {
        try await connection.copyFrom(table: table, columns: columns, logger: logger) { writer in
            var buffer = ByteBufferAllocator().buffer(capacity: copyChunkBytes + (64 << 10))
            for row in rows {
                PostgresWriteQueue.appendCopyLine(row, to: &buffer)
                if buffer.readableBytes >= copyChunkBytes {
                    try await writer.write(buffer)
                    buffer = ByteBufferAllocator().buffer(capacity: copyChunkBytes + (64 << 10))
                }
            }
            if buffer.readableBytes > 0 { try await writer.write(buffer) }
        }
    }

    /// Drops what is queued: the transaction is rolled back (after the
    /// writes sent ahead are answered, whatever the answer).
    func discardQueued() {
        _ = try? awaitWritesAhead()
        _ = queue.drain()
    }

    @discardableResult
    func queueInsert(into table: String, columns: [String], values: [any SQLArgument], id: String?) throws -> Int64? {
        guard let id else {
            queue.append(table, .insert(columns: columns), values.map(\.sqlValue))
            if queue.queuedValues > PostgresWriteQueue.flushThreshold { try sendAhead() }
            return nil
        }
        let next: Int64
        if let taken = queue.takeID(table, id) {
            next = taken
        } else {
            // The largest id now, queued rows written first; counted here from then on.
            let largest = try value(as: Int64.self, "SELECT COALESCE(max(\(id)), 0) FROM \(table)") ?? 0
            queue.startIDs(table, id, after: largest)
            next = queue.takeID(table, id) ?? largest + 1
        }
        queue.append(table, .insert(columns: [id] + columns), [.integer(next)] + values.map(\.sqlValue), key: .integer(next))
        if queue.queuedValues > PostgresWriteQueue.flushThreshold { try sendAhead() }
        return next
    }

    func queueDelete(from table: String, where columns: [SQLColumn], _ values: [any SQLArgument]) throws {
        // Deleting moves the table's largest id: it is read again at the next insert.
        queue.forgetIDs(of: table)
        queue.append(table, .delete(where: columns), values.map(\.sqlValue))
        if queue.queuedValues > PostgresWriteQueue.flushThreshold { try sendAhead() }
    }

    func queueUpdate(_ table: String, key: SQLColumn, _ keyValue: any SQLArgument,
                     set: [SQLColumn], _ values: [any SQLArgument]) throws {
        let keyValue = keyValue.sqlValue
        queue.append(table, .update(key: key, set: set), [keyValue] + values.map(\.sqlValue), key: keyValue)
        if queue.queuedValues > PostgresWriteQueue.flushThreshold { try sendAhead() }
    }

    @discardableResult
    func execute(_ sql: String, _ arguments: [any SQLArgument]) throws -> Int {
        try run(sql, arguments).metadata.rows ?? 0
    }

    func insert(_ sql: String, _ arguments: [any SQLArgument], returning column: String) throws -> Int64 {
        let result = try run(sql + " RETURNING " + column, arguments)
        guard let row = result.rows.first, let id = Int64(sqlValue: try Self.values(row)[0]) else {
            throw PostgresFailure(StoreSyncError.storage(path: "postgres", reason: "an INSERT returned no \(column)"), sql: sql)
        }
        return id
    }

    func rows(_ sql: String, _ arguments: [any SQLArgument]) throws -> [SQLRow] {
        let result = try run(sql, arguments)
        guard let first = result.rows.first else { return [] }
        let names = first.map(\.columnName)
        return try result.rows.map { SQLRow(names: names, values: try Self.values($0)) }
    }

    func cursor(_ sql: String, _ arguments: [any SQLArgument]) throws -> any SQLCursor {
        try PostgresCursor(session: self, sql: sql, arguments: arguments)
    }

    /// The rows a `FETCH` gives, as the server sent them.
    func fetch(_ sql: String) throws -> [PostgresRow] {
        Array(try run(sql, []).rows)
    }

    /// A cursor within the transaction, fetched in batches: a scan of every
    /// record holds one batch in memory, not the table.
    func forEachRow(_ sql: String, _ arguments: [any SQLArgument], _ body: (SQLRow) throws -> Void) throws {
        // Named apart: a body may scan again while this cursor is open.
        let cursor = "storesync_scan_\(Self.cursors.add(1, ordering: .relaxed).newValue)"
        try execute("DECLARE \(cursor) NO SCROLL CURSOR FOR " + sql, arguments)
        defer { _ = try? execute("CLOSE \(cursor)") }
        while true {
            let batch = try rows("FETCH FORWARD 2000 FROM \(cursor)", [])
            for row in batch { try body(row) }
            if batch.count < 2000 { break }
        }
    }

    static func values<Cells: Sequence<PostgresCell>>(_ row: Cells) throws -> [SQLValue] {
        var values: [SQLValue] = []
        for cell in row {
            guard cell.bytes != nil else {
                values.append(.null)
                continue
            }
            do {
                switch cell.dataType {
                case .int2, .int4, .int8, .oid:
                    values.append(.integer(try cell.decode(Int64.self)))
                case .float4, .float8:
                    values.append(.real(try cell.decode(Double.self)))
                case .bool:
                    values.append(.integer(try cell.decode(Bool.self) ? 1 : 0))
                case .numeric:
                    // sum() of integers is numeric: integral values stay integers.
                    let decimal = try cell.decode(Decimal.self)
                    if decimal == decimal.rounded(), let integer = Int64(exactly: NSDecimalNumber(decimal: decimal).int64Value),
                       Decimal(integer) == decimal {
                        values.append(.integer(integer))
                    } else {
                        values.append(.real(NSDecimalNumber(decimal: decimal).doubleValue))
                    }
                default:
                    values.append(.text(try cell.decode(String.self)))
                }
            } catch {
                throw PostgresFailure(error)
            }
        }
        return values
    }
}

private extension Decimal {
    func rounded() -> Decimal {
        var value = self
        var result = Decimal()
        NSDecimalRound(&result, &value, 0, .plain)
        return result
    }
}

extension SQLDialect {
    /// PostgreSQL's: a server a statement away, `pg_temp`, a planner that needs no hint.
    static let postgres = SQLDialect(
        statementsAreRoundTrips: true,
        indexHint: { _ in "" },
        temporaryTable: { "pg_temp.\($0)" },
        columns: { db, table in
            try db.rows("""
                SELECT column_name FROM information_schema.columns
                WHERE table_schema = current_schema() AND table_name = ? ORDER BY ordinal_position
                """, [table]).map { $0[0] as String }
        },
        tableScanHint: "",
        firstTabField: { #"split_part(\#($0), chr(9), 1) COLLATE "C""# },
        // The server sorts (in its work memory, spilling to its own files):
        // what it holds is not storesync's memory.
        orderedRows: { query in
            """
            SELECT \(query.select) FROM \(query.table) \(query.alias) \(query.joins)
            WHERE \(query.filter) ORDER BY \(query.orderBy)
            """
        })
}

/// PostgreSQL's ``SQLCursor``: a server cursor in the read's transaction,
/// fetched a batch of rows at a time (a few hundred: a payload may be a
/// megabyte). A column's bytes are copied out of the batch into a buffer of
/// the cursor's, which is what they stay valid in until the next step.
final class PostgresCursor: SQLCursor {
    static let batchRows = 256
    private let session: PostgresSession
    private let name: String
    private var batch: [PostgresRandomAccessRow] = []
    private var position = 0
    private var lastBatch = false
    private var buffers: [UnsafeMutableBufferPointer<UInt8>] = []

    init(session: PostgresSession, sql: String, arguments: [any SQLArgument]) throws {
        self.session = session
        name = "storesync_read_\(PostgresSession.cursors.add(1, ordering: .relaxed).newValue)"
        // Closed by the transaction's end (a cursor WITHOUT HOLD), whether read to its end or not.
        try session.execute("DECLARE \(name) NO SCROLL CURSOR FOR " + sql, arguments)
    }

    deinit {
        for buffer in buffers { buffer.deallocate() }
    }

    func next() throws -> Bool {
        position += 1
        if position < batch.count { return true }
        guard !lastBatch else { return false }
        batch = try session.fetch("FETCH FORWARD \(Self.batchRows) FROM \(name)").map(PostgresRandomAccessRow.init)
        position = 0
        lastBatch = batch.count < Self.batchRows
        return !batch.isEmpty
    }

    private func cell(_ column: Int) -> PostgresCell { batch[position][column] }

    func isNull(_ column: Int) -> Bool { cell(column).bytes == nil }

    func bytes(_ column: Int) -> UnsafeBufferPointer<UInt8> {
        let cell = cell(column)
        guard let bytes = cell.bytes else { return UnsafeBufferPointer(start: nil, count: 0) }
        switch cell.dataType {
        case .int2, .int4, .int8, .oid, .float4, .float8, .bool, .numeric:
            // A number read as text, as SQLite would give it.
            let value = (try? PostgresSession.values([cell]).first) ?? nil
            let text = value.flatMap(String.init(sqlValue:)) ?? ""
            return copy(Array(text.utf8), column)
        default:
            return bytes.withUnsafeReadableBytes { copy(UnsafeBufferPointer(start: $0.bindMemory(to: UInt8.self).baseAddress, count: $0.count), column) }
        }
    }

    private func copy<C: Collection<UInt8>>(_ bytes: C, _ column: Int) -> UnsafeBufferPointer<UInt8> {
        while buffers.count <= column { buffers.append(.allocate(capacity: 64)) }
        if buffers[column].count < bytes.count {
            buffers[column].deallocate()
            buffers[column] = .allocate(capacity: max(bytes.count, 2 * buffers[column].count))
        }
        let written = buffers[column].initialize(fromContentsOf: bytes)
        return UnsafeBufferPointer(rebasing: buffers[column][..<written])
    }

    func int64(_ column: Int) -> Int64 {
        let cell = cell(column)
        guard cell.bytes != nil else { return 0 }
        if let value = try? cell.decode(Int64.self) { return value }
        return (try? PostgresSession.values([cell]).first).flatMap { $0.flatMap(Int64.init(sqlValue:)) } ?? 0
    }

    func double(_ column: Int) -> Double {
        let cell = cell(column)
        guard cell.bytes != nil else { return 0 }
        if let value = try? cell.decode(Double.self) { return value }
        return (try? PostgresSession.values([cell]).first).flatMap { $0.flatMap(Double.init(sqlValue:)) } ?? 0
    }
}

extension PostgresEngine {
    /// As on SQLite, the key indexes of records and entities are dropped for
    /// the load and built once at its end (``endBulkLoad()``): scattered keys
    /// land on every leaf of a B-tree, and at 1M records maintaining the two
    /// was half the server's time. The load never reads them (it claims its
    /// keys in the run's seen keys, see ``FirstLoadState``), and a unique index
    /// built at the end still refuses a key written twice. A run killed in
    /// between leaves them missing; the next open for writing builds them
    /// (``PostgresSchema/restoreMissingIndexes(_:)``), before any diff reads.
    ///
    /// The change log's key to `runs` goes the same way: checked row by row it
    /// is a lookup in `runs` per change, and a first load logs one change a
    /// record (1M rows: 7.2 s of `COPY` with the key, 1.3 s without; adding it
    /// back checks them all in one join, 0.2 s). The load writes only its own
    /// run's id, which exists.
    func beginBulkLoad(isEmpty: String) throws -> Bool {
        try write { db in
            guard try db.value(isEmpty, as: Bool.self) == true else { return false }
            for name in Self.firstLoadDeferredIndexes { try db.execute("DROP INDEX IF EXISTS \(name)") }
            for key in Self.firstLoadDeferredForeignKeys { try db.execute(key.drop) }
            return true
        }
    }

    /// The keys checked once at the load's end: those of the table it writes a row per record into.
    static let firstLoadDeferredForeignKeys = PostgresSchema.foreignKeys.filter { $0.table == "changes" }

    /// The key indexes, and those nothing reads before the load's end (the
    /// removal pass and the reports come after it): at 1M records, a row's
    /// entry in each cost more than sorting them all once at the end.
    static let firstLoadDeferredIndexes = StoreSchema.firstLoadDeferredIndexes + ["records_by_scope", "records_by_entity", "changes_by_run"]

    /// The diff looks entities up by key from here on.
    func leaveBulkLoad() throws {
        try write { db -> Void in try db.execute(PostgresSchema.createIndex(named: StoreSchema.entityKeyIndex)) }
    }

    func endBulkLoad() throws {
        try write { db in
            // The sort of a million keys in memory rather than in temporary files;
            // the server's memory for this one statement, not storesync's.
            try db.execute("SET LOCAL maintenance_work_mem = '256MB'")
            for name in Self.firstLoadDeferredIndexes { try db.execute(PostgresSchema.createIndex(named: name)) }
            try PostgresSchema.restoreMissingForeignKeys(db)
        }
    }

    /// Autovacuum reuses the space; a VACUUM FULL would lock the fleet out.
    func reclaimFreeSpace(fraction: Double) throws -> PruneResult.Reclaim { .none }

    /// The database's size, as the server counts it.
    func bytesOnDisk() -> Int64 {
        (try? read { db in try db.value(as: Int64.self, "SELECT pg_database_size(current_database())") } ?? 0) ?? 0
    }

    /// The server checks its pages itself (checksums, WAL replay).
    func integrityCheck() throws -> String { "ok" }

    /// A database has no file a run could lose under it.
    func checkInPlace() throws(StoreSyncError) {}
}
