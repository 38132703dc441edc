import Catalog
import Foundation
import GRDB

/// The reads exports and reports make, in SQLite: projections with
/// `json_extract`, streamed through SQLite's C API.
extension SQLiteSnapshotStore {
    /// SQLite JSON path of a payload member (quoted: member names may hold dots).
    static func jsonPath(_ field: String) -> String {
        "$.\"\(field.replacingOccurrences(of: "\"", with: "\"\""))\""
    }

    /// Runs a streaming read: SQLite's errors become ``StoreSyncError``, the callback's pass through unchanged.
    func stream(_ body: (Database) throws -> Void) throws {
        do {
            try pool.read(body)
        } catch let error as DatabaseError {
            throw StoreSyncError.storage(path: path, reason: "\(error)")
        }
    }

    package func entities() throws(StoreSyncError) -> [EntityKind] {
        try wrap {
            try pool.read { db in
                try String.fetchAll(db, sql: "SELECT DISTINCT entity FROM entities ORDER BY entity").compactMap(EntityKind.init(rawValue:))
            }
        }
    }

    package func recordCount(of entity: EntityKind) throws(StoreSyncError) -> Int {
        try wrap {
            try pool.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM entities WHERE entity = ?", arguments: [entity.rawValue]) ?? 0 }
        }
    }

    /// Payloads above this many bytes are projected with one `json_each`
    /// instead of a `json_extract` per column: SQLite keeps a parse of the
    /// payload per `json_extract` call site, so 30 columns over a record with
    /// a 50 MB field held 1.5 GB (measured with the sqlite3 shell, 3.40).
    package static let largePayloadBytes = 1 << 20

    /// SQLite's JSON functions (3.40) end a string at an escaped NUL: `json_extract`
    /// of `"A\u0000B"` gives `A`, so a column would lose the rest of its text. Such
    /// payloads are rare: their string columns are read again with ``JSONParser``,
    /// which keeps the whole value (the exports then apply their character rule).
    static func restoreEscapedNUL(_ record: inout ProjectedRecord, columns: [ExportColumn]) {
        guard !columns.isEmpty, hasEscapedNUL(&record.payload),
              case .object(let members)? = try? JSONParser.parse(record.payload) else { return }
        for (index, column) in columns.enumerated() where index < record.values.count {
            if case .string(let text)? = members[column.field] { record.values[index] = .text(text) }
        }
    }

    /// Whether JSON text holds `\u0000` (an escaped backslash before `u0000` is skipped).
    static func hasEscapedNUL(_ text: inout String) -> Bool {
        text.withUTF8 { bytes in
            var i = 0
            let n = bytes.count
            while i + 5 < n {
                if bytes[i] == 0x5C {
                    if bytes[i + 1] == 0x75, bytes[i + 2] == 0x30, bytes[i + 3] == 0x30, bytes[i + 4] == 0x30, bytes[i + 5] == 0x30 {
                        return true
                    }
                    i += 2 // an escape pair: `\\` must not start a match at its second byte
                } else {
                    i += 1
                }
            }
            return false
        }
    }

    package func forEachRecord(of entity: EntityKind, columns: [ExportColumn], order: RecordOrder,
                              _ body: (ProjectedRecord) throws -> Void) throws {
        // `source` is the entity's first sighting's (its sources are sorted lines "source<TAB>kind<TAB>role").
        let selected = (["substr(sources, 1, instr(sources || char(9), char(9)) - 1)", "key"]
                        + columns.map { _ in "json_extract(fields, ?)" } + ["fields", "rowid"]).joined(separator: ", ")
        // Insertion order is rowid order, a sequential read: ordering a million
        // rows by key spilled ~1 GB to a temporary B-tree and doubled a CSV export's time.
        let orderBy = switch order {
        case .insertion: "rowid"
        case .sourceAndKey: "1, key"
        }
        // In rowid order the few large payloads are read apart and merged back in place.
        let splitsLarge = order == .insertion && !columns.isEmpty
        let small = splitsLarge ? " AND length(CAST(fields AS BLOB)) <= \(Self.largePayloadBytes)" : ""
        try stream { db in
            // Bound parameters for every value; only the fixed column list is spliced.
            let query = RawStatement(try db.makeStatement(sql: "SELECT \(selected) FROM entities WHERE entity = ?\(small) ORDER BY \(orderBy)"))
            for (index, column) in columns.enumerated() { query.bind(Int32(index + 1), Self.jsonPath(column.field)) }
            query.bind(Int32(columns.count + 1), entity.rawValue)
            let payloadColumn = Int32(columns.count + 2)
            var large: [Int64] = []
            if splitsLarge {
                large = try Int64.fetchAll(db, sql: """
                    SELECT rowid FROM entities WHERE entity = ? AND length(CAST(fields AS BLOB)) > \(Self.largePayloadBytes) ORDER BY rowid
                    """, arguments: [entity.rawValue])
            }
            var nextLarge = 0
            func emitLarge(before rowid: Int64) throws {
                while nextLarge < large.count, large[nextLarge] < rowid {
                    try body(try largeRecord(db, rowid: large[nextLarge], columns: columns))
                    nextLarge += 1
                }
            }
            // One row value reused: the callback gets it by value, and unless it keeps it the buffers are not copied.
            var row = ProjectedRecord(source: "", key: "", values: [], payload: "")
            row.values.reserveCapacity(columns.count)
            while try query.nextRow(db) {
                if nextLarge < large.count { try emitLarge(before: query.columnInt64(payloadColumn + 1)) }
                row.source = query.columnText(0)
                row.key = query.columnText(1)
                row.values.removeAll(keepingCapacity: true)
                for column in 2..<payloadColumn { row.values.append(query.columnValue(column)) }
                row.payload = query.columnText(payloadColumn)
                Self.restoreEscapedNUL(&row, columns: columns)
                try body(row)
            }
            try emitLarge(before: .max)
        }
    }

    /// A record with a large payload, its columns read with one `json_each`
    /// (whose `value` is what `json_extract` gives for a top-level member).
    private func largeRecord(_ db: Database, rowid: Int64, columns: [ExportColumn]) throws -> ProjectedRecord {
        let head = RawStatement(try db.makeStatement(sql: """
            SELECT substr(sources, 1, instr(sources || char(9), char(9)) - 1), key, fields FROM entities WHERE rowid = ?
            """))
        head.bind(1, rowid)
        defer { head.reset() }
        guard try head.nextRow(db) else { throw StoreSyncError.storage(path: path, reason: "entity row \(rowid) vanished during an export") }
        var record = ProjectedRecord(source: head.columnText(0), key: head.columnText(1),
                                     values: Array(repeating: .null, count: columns.count), payload: head.columnText(2))
        var positions: [String: [Int]] = [:]
        for (index, column) in columns.enumerated() { positions[column.field, default: []].append(index) }
        let members = RawStatement(try db.makeStatement(sql: "SELECT key, value FROM json_each(?) WHERE type IS NOT NULL"))
        members.bind(1, record.payload)
        while try members.nextRow(db) {
            for index in positions[members.columnText(0)] ?? [] { record.values[index] = members.columnValue(1) }
        }
        Self.restoreEscapedNUL(&record, columns: columns)
        return record
    }

    package func forEachChange(runID: Int64?, order: ChangeOrder, _ body: (ChangeRow) throws -> Void) throws {
        let filter = runID == nil ? "" : "WHERE run_id = ?"
        let orderBy = switch order {
        case .insertion: "id"
        case .record: "source, entity, key, op, field"
        }
        try stream { db in
            let query = RawStatement(try db.makeStatement(sql: """
                SELECT run_id, source, entity, key, op, field, before, after FROM changes \(filter) ORDER BY \(orderBy)
                """))
            if let runID { query.bind(1, runID) }
            while try query.nextRow(db) {
                try body(ChangeRow(runID: query.columnInt64(0), source: query.columnText(1), entity: query.columnText(2),
                                   key: query.columnText(3), op: query.columnText(4), field: query.columnOptionalText(5),
                                   before: query.columnOptionalText(6), after: query.columnOptionalText(7)))
            }
        }
    }

    /// Streams a feed query's rows as ``FeedRecord``s (columns `entity`, `key`, `payload`, optional `run_started`).
    /// `body` returns false to stop: the statement is not stepped further, so
    /// a feed that needs ten records reads ten payloads, not the whole kind.
    func streamFeedRecords(_ sql: String, _ arguments: [String], _ body: (FeedRecord) throws -> Bool) throws {
        try stream { db in
            let query = RawStatement(try db.makeStatement(sql: sql))
            for (index, argument) in arguments.enumerated() { query.bind(Int32(index + 1), argument) }
            let hasRunStarted = query.columnCount > 3
            // Reset whether stopped early or not: a pooled reader must not keep its read transaction open.
            defer { query.reset() }
            while try query.nextRow(db) {
                guard let entity = EntityKind(rawValue: query.columnText(0)) else { continue }
                let started = hasRunStarted ? query.columnOptionalDouble(3) : nil
                let record = FeedRecord(entity: entity, key: query.columnText(1), payload: query.columnText(2),
                                        addedRunStartedAt: started.map(Date.init(timeIntervalSince1970:)))
                guard try body(record) else { return }
            }
        }
    }

    /// The SQL and arguments of a feed query; `LIMIT` bounds SQLite's sort to
    /// the rows kept (a top-N sort), not the whole kind.
    static func feedSQL(_ query: FeedQuery, limit: Int?) -> (sql: String, arguments: [String]) {
        let limitClause = limit.map { " LIMIT \(max(0, $0))" } ?? ""
        switch query {
        case .newestFirst(let entities, let field):
            return ("""
                SELECT entity, key, fields AS payload FROM entities WHERE entity IN (\(databaseQuestionMarks(count: entities.count)))
                ORDER BY json_extract(fields, ?) DESC, entity, key\(limitClause)
                """, entities.map(\.rawValue) + [jsonPath(field)])
        case .newestAdded(let entity, let field):
            return ("""
                SELECT e.entity, e.key, e.fields AS payload, runs.started_at AS run_started FROM entities e
                -- LEFT: retention may have pruned the run that added an entity long ago; the entity stays listed.
                LEFT JOIN runs ON runs.id = e.added_run
                -- What the baseline found was there before: listing it would announce the catalogue.
                WHERE e.entity = ? AND NOT \(isBaseline("e.added_run"))
                ORDER BY e.added_run DESC, json_extract(e.fields, ?) DESC, e.key\(limitClause)
                """, [entity.rawValue, jsonPath(field)])
        case .chart(let chart):
            return ("""
                SELECT entity, key, fields AS payload FROM entities WHERE entity = ? AND json_extract(fields, ?) = ?
                ORDER BY json_extract(fields, ?), json_extract(fields, ?), json_extract(fields, ?), key\(limitClause)
                """, [EntityKind.chartEntry.rawValue, jsonPath("chart"), chart, jsonPath("country"),
                      jsonPath("genre_id"), jsonPath("rank")])
        }
    }

    package func forEachFeedRecord(_ query: FeedQuery, limit: Int?, _ body: (FeedRecord) throws -> Bool) throws {
        let (sql, arguments) = Self.feedSQL(query, limit: limit)
        try streamFeedRecords(sql, arguments, body)
    }

    func allFeedRecords(_ query: FeedQuery) throws(StoreSyncError) -> [FeedRecord] {
        var found: [FeedRecord] = []
        try wrap { try forEachFeedRecord(query, limit: nil) { found.append($0); return true } }
        return found
    }

    package func recordsNewestFirst(_ entities: [EntityKind], by field: String) throws(StoreSyncError) -> [FeedRecord] {
        try allFeedRecords(.newestFirst(entities, by: field))
    }

    package func recordsNewestAdded(_ entity: EntityKind, thenBy field: String) throws(StoreSyncError) -> [FeedRecord] {
        try allFeedRecords(.newestAdded(entity, thenBy: field))
    }

    package func entitiesByKey(_ entity: EntityKind, keys: [String]) throws(StoreSyncError) -> [FeedRecord] {
        var found: [FeedRecord] = []
        // In slices: SQLite caps the number of bound parameters.
        let unique = Array(Set(keys)).sorted()
        var start = 0
        try wrap {
            while start < unique.count {
                let slice = Array(unique[start..<min(start + 500, unique.count)])
                try streamFeedRecords("""
                    SELECT entity, key, fields AS payload FROM entities
                    WHERE entity = ? AND key IN (\(databaseQuestionMarks(count: slice.count))) ORDER BY key
                    """, [entity.rawValue] + slice) { found.append($0); return true }
                start += 500
            }
        }
        return found
    }

    package func chartEntries(chart: String) throws(StoreSyncError) -> [FeedRecord] {
        try allFeedRecords(.chart(chart))
    }

    package func forEachDecrease(of entity: EntityKind, field: String, limit: Int?,
                                 _ body: (FieldDecrease) throws -> Bool) throws {
        try stream { db in
            let query = RawStatement(try db.makeStatement(sql: """
                SELECT e.key, e.fields AS payload, c.before, c.after, runs.started_at AS run_started
                FROM changes c JOIN entities e ON e.entity = c.entity AND e.key = c.key
                JOIN runs ON runs.id = c.run_id
                WHERE c.entity = ? AND c.op = 'changed' AND c.field = ?
                  AND c.id = (SELECT max(id) FROM changes c2 WHERE c2.entity = c.entity
                              AND c2.key = c.key AND c2.op = 'changed' AND c2.field = c.field)
                  AND CAST(c.after AS REAL) < CAST(c.before AS REAL)
                ORDER BY c.run_id DESC, e.key
                """ + (limit.map { " LIMIT \(max(0, $0))" } ?? "")))
            query.bind(1, entity.rawValue)
            query.bind(2, field)
            defer { query.reset() }
            while try query.nextRow(db) {
                let decrease = FieldDecrease(key: query.columnText(0), payload: query.columnText(1), before: query.columnText(2),
                                             after: query.columnText(3), runStartedAt: Date(timeIntervalSince1970: query.columnDouble(4)))
                guard try body(decrease) else { return }
            }
        }
    }

    package func latestDecreases(of entity: EntityKind, field: String) throws(StoreSyncError) -> [FieldDecrease] {
        var found: [FieldDecrease] = []
        try wrap { try forEachDecrease(of: entity, field: field, limit: nil) { found.append($0); return true } }
        return found
    }

    package func forEachChangeWithRecord(runID: Int64, _ body: (ChangeWithRecord) throws -> Bool) throws {
        try stream { db in
            let query = RawStatement(try db.makeStatement(sql: """
                SELECT c.run_id, c.source, c.entity, c.key, c.op, c.field, c.before, c.after, e.fields AS payload
                FROM changes c LEFT JOIN entities e ON e.entity = c.entity AND e.key = c.key
                -- The baseline's log is the whole catalogue added: no news for a feed.
                WHERE c.run_id = ? AND NOT \(Self.isBaseline("c.run_id")) ORDER BY c.source, c.entity, c.key, c.field
                """))
            query.bind(1, runID)
            defer { query.reset() }
            while try query.nextRow(db) {
                let change = ChangeRow(runID: query.columnInt64(0), source: query.columnText(1), entity: query.columnText(2),
                                       key: query.columnText(3), op: query.columnText(4), field: query.columnOptionalText(5),
                                       before: query.columnOptionalText(6), after: query.columnOptionalText(7))
                guard try body(ChangeWithRecord(change: change, currentPayload: query.columnOptionalText(8))) else { return }
            }
        }
    }

    package func changesWithRecords(runID: Int64) throws(StoreSyncError) -> [ChangeWithRecord] {
        var found: [ChangeWithRecord] = []
        try wrap { try forEachChangeWithRecord(runID: runID) { found.append($0); return true } }
        return found
    }

    public func entityTallies(runID: Int64) throws(StoreSyncError) -> [EntityTally] {
        try wrap {
            try pool.read { db in
                var tallies: [String: [String: EntityTally]] = [:]
                func update(_ source: String, _ entity: String, _ change: (inout EntityTally) -> Void) {
                    change(&tallies[source, default: [:]][entity, default: EntityTally(source: source, entity: entity)])
                }
                // A changed record logs one row per field: count records, not rows.
                for row in try Row.fetchAll(db, sql: """
                    SELECT source, entity, op, count(DISTINCT key) AS n FROM changes WHERE run_id = ? GROUP BY source, entity, op
                    """, arguments: [runID]) {
                    let n: Int = row["n"]
                    update(row["source"], row["entity"]) { tally in
                        switch row["op"] as String {
                        case "added": tally.added = n
                        case "changed": tally.changed = n
                        default: tally.removed = n
                        }
                    }
                }
                for row in try Row.fetchAll(db, sql: "SELECT source, entity, count(*) AS n FROM records GROUP BY source, entity") {
                    update(row["source"], row["entity"]) { $0.records = row["n"] }
                }
                return tallies.keys.sorted().flatMap { source in
                    tallies[source]!.keys.sorted().map { tallies[source]![$0]! }
                }
            }
        }
    }

    public func runSummaries(through runID: Int64) throws(StoreSyncError) -> [RunSummary] {
        try wrap {
            try pool.read { db in
                // Every counter summed, so a summary reads like one source's row (`s_` columns).
                let sums = ["pages", "requests", "added", "changed", "unchanged", "removed", "skipped", "seconds",
                            "record_writes", "drift", "unchanged_pages"].map { "sum(s.\($0)) AS s_\($0)" }
                return try Row.fetchAll(db, sql: """
                    SELECT r.*, count(s.run_id) AS s_count, \(sums.joined(separator: ", "))
                    FROM runs r LEFT JOIN run_sources s ON s.run_id = r.id
                    WHERE r.id <= ? GROUP BY r.id ORDER BY r.id
                    """, arguments: [runID]).map { row in
                    RunSummary(run: Self.runRow(row), counts: row["s_count"] as Int > 0 ? Self.counts(row, source: "", prefix: "s_") : nil)
                }
            }
        }
    }
}
