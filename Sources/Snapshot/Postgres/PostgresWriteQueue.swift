/// The writes of one PostgreSQL transaction that nothing reads before its
/// next statement: a page's records, entities and change rows, queued and
/// then written as a few multi-row statements instead of one round trip each
/// (``SQLSession/queueInsert(into:columns:values:id:)``).
///
/// Order is kept where it can matter: within a table, operations run in the
/// order they were queued (an insert before the update of the same row);
/// tables are independent of each other (no foreign key joins the queued ones).
final class PostgresWriteQueue {
    enum Operation: Hashable {
        case insert(columns: [String])
        case update(key: SQLColumn, set: [SQLColumn])
        case delete(where: [SQLColumn])
    }

    struct Group {
        var operation: Operation
        var rows: [[SQLValue]] = []
        /// An update's keys: a row updated twice goes into a new group, as one
        /// `UPDATE … FROM (VALUES …)` applies only one of two matches.
        var keys: Set<SQLValue> = []
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

    func append(_ table: String, _ operation: Operation, _ row: [SQLValue], key: SQLValue? = nil) {
        if groups[table] == nil { tableOrder.append(table) }
        var tableGroups = groups[table, default: []]
        if let last = tableGroups.last, last.operation == operation, key.map({ !last.keys.contains($0) }) ?? true {
            tableGroups[tableGroups.count - 1].rows.append(row)
            if let key { tableGroups[tableGroups.count - 1].keys.insert(key) }
        } else {
            tableGroups.append(Group(operation: operation, rows: [row], keys: key.map { [$0] } ?? []))
        }
        groups[table] = tableGroups
        queuedValues += row.count
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

    /// The queued writes as statements with their arguments, in order; the queue is then empty.
    func drain() -> [(sql: String, arguments: [SQLValue])] {
        var statements: [(String, [SQLValue])] = []
        for table in tableOrder {
            for group in groups[table] ?? [] {
                let width = group.rows.first?.count ?? 1
                let perStatement = max(1, Self.parametersPerStatement / width)
                var start = 0
                while start < group.rows.count {
                    let rows = group.rows[start..<min(start + perStatement, group.rows.count)]
                    statements.append((Self.sql(table, group.operation, rows: rows.count), rows.flatMap { $0 }))
                    start += perStatement
                }
            }
        }
        groups.removeAll(keepingCapacity: true)
        tableOrder.removeAll(keepingCapacity: true)
        queuedValues = 0
        return statements
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
