import Foundation
import NIOCore
@testable import Snapshot
import Testing
import TestSupport

/// A PostgreSQL transaction's many queued rows of one plain insert go
/// through `COPY … FROM STDIN` (``PostgresWriteQueue/copyFromRows``): what
/// the server stores must be exactly what the multi-row `INSERT` stored,
/// whatever the text holds.
@Suite struct PostgresCopyTests {
    /// Text that `COPY`'s text format gives a meaning to, and text around it.
    static let awkwardTexts = ["plain", "", "tab\there", "line\nbreak", "carriage\rreturn", "back\\slash", "\\N", "\\.",
                               "\\", "ends with \\", "é 😀 \u{7f}", "\t\n\r\\", " leading and trailing ", "a,b;\"c\"'d'"]
    static let awkwardReals: [Double] = [0.1, -0.0, 1e300, 2.5e-8, -123.456, .infinity, -.infinity, Double.leastNonzeroMagnitude,
                                         Double.greatestFiniteMagnitude, 1.0]

    @Test func aLineEscapesWhatTheTextFormatReads() {
        var buffer = ByteBuffer()
        PostgresWriteQueue.appendCopyLine([.text("a\\b\tc\nd\re"), .null, .integer(-5), .real(0.5), .real(.infinity),
                                           .text("\\N"), .text("é")], to: &buffer)
        #expect(buffer.readString(length: buffer.readableBytes) == "a\\\\b\\tc\\nd\\re\t\\N\t-5\t0.5\tInfinity\t\\\\N\té\n")
    }

    @Test func manyRowsOfAPlainInsertAreACopyAndFewAreStatements() {
        let queue = PostgresWriteQueue()
        for row in 0..<PostgresWriteQueue.copyFromRows { queue.append("records", .insert(columns: ["a"]), [.integer(Int64(row))]) }
        for row in 0..<3 { queue.append("entities", .insert(columns: ["a"]), [.integer(Int64(row))]) }
        queue.append("pg_temp.probe", .insert(columns: ["a"]), [.integer(1)])
        let writes = queue.drain()
        #expect(writes.count == 3)
        guard case .copy(let table, _, let rows) = writes[0] else { Issue.record("\(writes[0])"); return }
        #expect(table == "records" && rows.count == PostgresWriteQueue.copyFromRows)
        guard case .statement(let sql, _) = writes[1], case .statement(let temporary, _) = writes[2] else { Issue.record("\(writes)"); return }
        #expect(sql.hasPrefix("INSERT INTO entities") && temporary.hasPrefix("INSERT INTO pg_temp.probe"))
        #expect(queue.isEmpty)
    }

    /// Operations on different rows merge into one statement whatever came
    /// between them; an operation on a row stays after every earlier one on
    /// that row, and after a delete or an insert whose row has no id.
    @Test func operationsMergeAcrossOtherRowsButNeverPastTheirOwn() {
        let queue = PostgresWriteQueue()
        let update = PostgresWriteQueue.Operation.update(key: .integer("rowid"), set: [.text("v")])
        let insert = PostgresWriteQueue.Operation.insert(columns: ["rowid", "v"])
        func write(_ operation: PostgresWriteQueue.Operation, _ id: Int64) {
            let row: [SQLValue] = [.integer(id), .text("\(id)")]
            queue.append("t", operation, row, key: .integer(id))
        }
        // Inserts and updates of other rows in turn: one statement each.
        for id in Int64(1)...5 {
            write(insert, 100 + id)
            write(update, id)
        }
        // The row inserted above, updated: after its insert, with the other updates.
        write(update, 101)
        // A row updated twice: its second update in a statement after the first.
        write(update, 1)
        // A delete: nothing after it moves before it.
        queue.append("t", .delete(where: [.integer("rowid")]), [.integer(3)])
        write(insert, 200)
        // Another table is a queue of its own.
        queue.append("u", .insert(columns: ["a"]), [.integer(1)])
        queue.append("u", .insert(columns: ["a"]), [.integer(2)])
        let statements = queue.drain().map { write -> (String, Int) in
            guard case .statement(let sql, let arguments) = write else { return ("copy", 0) }
            return (String(sql.prefix(while: { $0 != "(" })).trimmingCharacters(in: .whitespaces), arguments.count)
        }
        #expect(statements.map(\.0) == ["INSERT INTO t", "UPDATE t SET v = queued.v FROM", "UPDATE t SET v = queued.v FROM",
                                        "DELETE FROM t WHERE", "INSERT INTO t", "INSERT INTO u"])
        // 5 inserts; 6 updates (1…5 and 101); the second update of row 1; the delete; the insert after it; both rows of u.
        #expect(statements.map(\.1) == [10, 12, 2, 1, 2, 2])
    }

    /// The same rows, queued many (a `COPY`) and few at a time (`INSERT`s),
    /// read back equal, value for value: every awkward text, NULL, the
    /// extremes of 64-bit integers and doubles that must come back bit for bit.
    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func rowsWrittenByCopyReadBackAsInserted() async throws {
        let store = try await StoreEngine.postgres.makeStore().store
        var rows: [[SQLValue]] = []
        for (index, text) in Self.awkwardTexts.enumerated() {
            for real in Self.awkwardReals {
                rows.append([.text(text), .integer(index.isMultiple(of: 2) ? Int64.max - Int64(index) : Int64.min + Int64(index)),
                             .real(real), index.isMultiple(of: 3) ? .null : .text(text + "\u{1}")])
            }
        }
        #expect(rows.count >= PostgresWriteQueue.copyFromRows)
        let read = try store.engine.write { db -> [String: [[SQLValue]]] in
            try db.execute("CREATE TEMPORARY TABLE copied (t TEXT NOT NULL, i BIGINT, r DOUBLE PRECISION, n TEXT, position BIGINT)")
            try db.execute("CREATE TEMPORARY TABLE inserted (t TEXT NOT NULL, i BIGINT, r DOUBLE PRECISION, n TEXT, position BIGINT)")
            let columns = ["t", "i", "r", "n", "position"]
            for (position, row) in rows.enumerated() {
                try db.queueInsert(into: "copied", columns: columns, values: row + [SQLValue.integer(Int64(position))], id: nil)
            }
            _ = try db.rows("SELECT 1", [])  // the queue is written before any statement
            for (position, row) in rows.enumerated() {
                try db.queueInsert(into: "inserted", columns: columns, values: row + [SQLValue.integer(Int64(position))], id: nil)
                if position % 7 == 6 { _ = try db.rows("SELECT 1", []) }  // a few rows at a time: statements
            }
            var read: [String: [[SQLValue]]] = [:]
            for table in ["copied", "inserted"] {
                read[table] = try db.rows("SELECT t, i, r, n FROM \(table) ORDER BY position", []).map { row in
                    (0..<4).map { row.values[$0] }
                }
            }
            return read
        }
        #expect(read["copied"]?.count == rows.count)
        #expect(read["copied"] == read["inserted"])
        for (stored, written) in zip(read["copied"] ?? [], rows) where stored.count == 4 {
            #expect(stored[0] == written[0] && stored[1] == written[1] && stored[3] == written[3])
            if case .real(let a) = stored[2], case .real(let b) = written[2] {
                #expect(a.bitPattern == b.bitPattern, "\(a) read back for \(b)")
            } else {
                Issue.record("not a real: \(stored[2])")
            }
        }
    }
}
