import NIOCore

/// The writes of one PostgreSQL transaction that nothing reads before its
/// next statement: a page's records, entities and change rows, queued and
/// then written as a few multi-row statements instead of one round trip each
/// (``SQLSession/queueInsert(into:columns:values:id:)``).
///
/// Order is kept where it can matter: within a table, an operation on a row
/// runs after every operation queued before it on that row (an insert before
/// the update of the same row), and after every delete, and every insert
/// whose row it cannot name; tables are independent of each other (no
/// foreign key joins the queued ones). Operations on different rows are
/// otherwise merged into one statement, whatever came between them: a page
/// that inserts some entities and updates others alternately is two
/// statements, not one per alternation (a 50-record page was 15). That
/// relies on a queued update never changing a column a unique constraint
/// covers (none does: they rewrite fields, hashes and run ids).
final class PostgresWriteQueue {
    enum Operation: Hashable {
        case insert(columns: [String])
        case update(key: SQLColumn, set: [SQLColumn])
        case delete(where: [SQLColumn])
    }

    struct Group {
        var operation: Operation
        var rows: [[SQLValue]] = []
        /// The rows' keys (an update's key, an insert's id): a row updated twice
        /// goes into a new group, as one `UPDATE … FROM (VALUES …)` applies
        /// only one of two matches, and no later operation on a row moves
        /// ahead of its group.
        var keys: Set<SQLValue> = []
        /// An insert's ids as the range they span, not a set: a first load
        /// queues millions, and ids the queue hands out only grow, so a row
        /// the range covers is treated as one of them (at worst an operation
        /// on an older row starts a statement of its own).
        var ids: ClosedRange<Int64>?

        func holds(_ key: SQLValue) -> Bool {
            if case .integer(let id) = key, let ids, ids.contains(id) { return true }
            return keys.contains(key)
        }

        mutating func add(_ key: SQLValue) {
            if case .insert = operation, case .integer(let id) = key {
                ids = ids.map { min($0.lowerBound, id)...max($0.upperBound, id) } ?? id...id
            } else {
                keys.insert(key)
            }
        }
        /// The column `keys` are values of; nil when a row of the group has
        /// none (a delete, an insert the server numbers): nothing moves past it.
        var keyColumn: String?

        /// The column an operation's key is a value of.
        static func keyColumn(of operation: Operation) -> String? {
            switch operation {
            case .insert(let columns): columns.first
            case .update(let key, _): key.name
            case .delete: nil
            }
        }
    }

    private var groups: [String: [Group]] = [:]
    private var tableOrder: [String] = []
    private(set) var queuedValues = 0
    /// The next id of `table.column`, counted here from the largest stored:
    /// valid while every insert into the table goes through the queue.
    private var nextIDs: [String: Int64] = [:]

    /// Bind parameters per statement: PostgreSQL takes at most 65,535.
    static let parametersPerStatement = 30_000
    /// Queued values past which the queue is written out: memory stays bounded
    /// by a batch, whatever a transaction writes.
    static let flushThreshold = 200_000

    var isEmpty: Bool { queuedValues == 0 }

    /// Queues `row`; `key` names the row it writes (an update's key, an
    /// insert's id), nil where the client cannot name it.
    func append(_ table: String, _ operation: Operation, _ row: [SQLValue], key: SQLValue? = nil) {
        if groups[table] == nil { tableOrder.append(table) }
        // Mutated in place through the dictionary: a copy taken out and put back
        // shares its buffers with the stored one, so every append copied every row
        // queued before it (a 200,000-record first load spent 39 s of CPU there).
        Self.append(row, operation, key: key, to: &groups[table, default: []])
        queuedValues += row.count
    }

    private static func append(_ row: [SQLValue], _ operation: Operation, key: SQLValue?, to tableGroups: inout [Group]) {
        let column = key == nil ? nil : Group.keyColumn(of: operation)
        var target: Int?
        if let key, let column {
            // Back from the last group, past groups of other rows, to the nearest of the same operation.
            for index in tableGroups.indices.reversed() {
                let group = tableGroups[index]
                guard group.keyColumn == column, !group.holds(key) else { break }
                if group.operation == operation {
                    target = index
                    break
                }
            }
        } else if let last = tableGroups.indices.last, tableGroups[last].operation == operation, tableGroups[last].keyColumn == nil {
            target = last
        }
        if let target {
            tableGroups[target].rows.append(row)
            if let key { tableGroups[target].add(key) }
        } else {
            var group = Group(operation: operation, rows: [row], keyColumn: column)
            if let key { group.add(key) }
            tableGroups.append(group)
        }
    }

    /// The id a new row of `table` gets, if the largest is known already.
    func takeID(_ table: String, _ column: String) -> Int64? {
        let name = table + "." + column
        guard let next = nextIDs[name] else { return nil }
        nextIDs[name] = next + 1
        return next
    }

    func startIDs(_ table: String, _ column: String, after largest: Int64) {
        nextIDs[table + "." + column] = largest + 1
    }

    /// A statement not queued may have inserted or deleted rows: ids are read again.
    func forgetIDs() {
        nextIDs.removeAll(keepingCapacity: true)
    }

    func forgetIDs(of table: String) {
        guard !nextIDs.isEmpty else { return }
        nextIDs = nextIDs.filter { !$0.key.hasPrefix(table + ".") }
    }

    /// One write of the drained queue: a statement with its arguments, or the
    /// rows of a plain insert sent through `COPY … FROM STDIN`.
    enum Write {
        case statement(sql: String, arguments: [SQLValue])
        case copy(table: String, columns: [String], rows: ArraySlice<[SQLValue]>)
    }

    /// Rows of one insert from which it goes through `COPY` rather than
    /// `INSERT … VALUES`. The server parses and plans a multi-row `VALUES` of
    /// 30,000 parameters as an expression tree (a first load of 200,000
    /// records spent a third of the server's time there); `COPY` reads rows
    /// as they come, and the client writes text, not a binding per value.
    static let copyFromRows = 64

    /// The queued writes, in order; the queue is then empty.
    func drain() -> [Write] {
        var writes: [Write] = []
        for table in tableOrder {
            for group in groups[table] ?? [] {
                if case .insert(let columns) = group.operation, group.rows.count >= Self.copyFromRows,
                   Self.isPlainIdentifier(table), columns.allSatisfy(Self.isPlainIdentifier) {
                    writes.append(.copy(table: table, columns: columns, rows: group.rows[...]))
                    continue
                }
                let width = group.rows.first?.count ?? 1
                let perStatement = max(1, Self.parametersPerStatement / width)
                var start = 0
                while start < group.rows.count {
                    let rows = group.rows[start..<min(start + perStatement, group.rows.count)]
                    writes.append(.statement(sql: Self.sql(table, group.operation, rows: rows.count), arguments: rows.flatMap { $0 }))
                    start += perStatement
                }
            }
        }
        groups.removeAll(keepingCapacity: true)
        tableOrder.removeAll(keepingCapacity: true)
        queuedValues = 0
        return writes
    }

    /// A name `COPY` may quote as it is (postgres-nio quotes the table and
    /// columns): lower case, as unquoted names fold to; not `pg_temp.x`.
    static func isPlainIdentifier(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x5F }
    }

    /// Appends `row` as a line of `COPY`'s text format: values separated by
    /// tabs, `\N` for NULL, a backslash, tab, newline or carriage return in
    /// text escaped with a backslash. Reals are written to the digit that
    /// reads back as the same double.
    static func appendCopyLine(_ row: [SQLValue], to buffer: inout ByteBuffer) {
        for (index, value) in row.enumerated() {
            if index > 0 { buffer.writeInteger(UInt8(ascii: "\t")) }
            switch value {
            case .null:
                buffer.writeStaticString("\\N")
            case .integer(let integer):
                buffer.writeString(String(integer))
            case .real(let real):
                if real.isNaN {
                    buffer.writeStaticString("NaN")
                } else if real.isInfinite {
                    buffer.writeStaticString(real < 0 ? "-Infinity" : "Infinity")
                } else {
                    buffer.writeString(real.description)
                }
            case .text(var text):
                text.withUTF8 { bytes in
                    var start = 0
                    for position in bytes.indices {
                        let escaped: UInt8
                        switch bytes[position] {
                        case UInt8(ascii: "\\"): escaped = UInt8(ascii: "\\")
                        case UInt8(ascii: "\t"): escaped = UInt8(ascii: "t")
                        case UInt8(ascii: "\n"): escaped = UInt8(ascii: "n")
                        case UInt8(ascii: "\r"): escaped = UInt8(ascii: "r")
                        default: continue
                        }
                        buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[start..<position]))
                        buffer.writeInteger(UInt8(ascii: "\\"))
                        buffer.writeInteger(escaped)
                        start = position + 1
                    }
                    buffer.writeBytes(UnsafeBufferPointer(rebasing: bytes[start...]))
                }
            }
        }
        buffer.writeInteger(UInt8(ascii: "\n"))
    }

    private static func sql(_ table: String, _ operation: Operation, rows: Int) -> String {
        var parameter = 0
        func tuple(_ columns: Int, cast: [SQLColumn.ColumnType]? = nil) -> String {
            var text = "("
            for column in 0..<columns {
                parameter += 1
                if column > 0 { text += ", " }
                if let cast { text += "CAST($\(parameter) AS \(cast[column].rawValue))" } else { text += "$\(parameter)" }
            }
            return text + ")"
        }
        switch operation {
        case .insert(let columns):
            let values = (0..<rows).map { _ in tuple(columns.count) }.joined(separator: ", ")
            return "INSERT INTO \(table) (\(columns.joined(separator: ", "))) VALUES \(values)"
        case .update(let key, let set):
            // Typed in every row: a column that is NULL in all rows would otherwise be text.
            let types = [key.type] + set.map(\.type)
            let values = (0..<rows).map { _ in tuple(types.count, cast: types) }.joined(separator: ", ")
            let assignments = set.map { "\($0.name) = queued.\($0.name)" }.joined(separator: ", ")
            let names = ([key] + set).map(\.name).joined(separator: ", ")
            return "UPDATE \(table) SET \(assignments) FROM (VALUES \(values)) AS queued (\(names)) "
                + "WHERE \(table).\(key.name) = queued.\(key.name)"
        case .delete(let columns):
            let values = (0..<rows).map { _ in tuple(columns.count, cast: columns.map(\.type)) }.joined(separator: ", ")
            return "DELETE FROM \(table) WHERE (\(columns.map(\.name).joined(separator: ", "))) IN (VALUES \(values))"
        }
    }
}
