import Catalog
import Foundation
import GRDB

/// The reads exports and reports make, in SQLite: projections with
/// `json_extract`, streamed through SQLite's C API. A PostgreSQL store's
/// streamed reads go through a SQLite copy of it (``exportMirror()``).
extension SQLSnapshotStore {
    /// SQLite JSON path of a payload member (quoted: member names may hold dots).
    static func jsonPath(_ field: String) -> String {
        "$.\"\(field.replacingOccurrences(of: "\"", with: "\"\""))\""
    }

    /// Runs a streaming read: SQLite's errors become ``StoreSyncError``, the callback's pass through unchanged.
    func stream(_ body: (Database) throws -> Void) throws {
        do {
            try exportMirror().pool.read(body)
        } catch let error as DatabaseError {
            throw StoreSyncError.storage(path: path, reason: "\(error)", cause: error)
        }
    }

    package func entities() throws(StoreSyncError) -> [EntityKind] {
        try wrap {
            try engine.read { db in
                try db.rows("SELECT DISTINCT entity FROM entities ORDER BY entity").compactMap { EntityKind(rawValue: $0[0]) }
            }
        }
    }

    package func recordCount(of entity: EntityKind) throws(StoreSyncError) -> Int {
        try wrap {
            try engine.read { db in try db.value(as: Int.self, "SELECT count(*) FROM entities WHERE entity = ?", [entity.rawValue]) ?? 0 }
        }
    }

    /// A payload size the tests treat as large: SQLite keeps a parse of the
    /// payload per `json_extract` call site, so 30 columns over a record with a
    /// 50 MB field held 1.5 GB (measured with the sqlite3 shell, 3.40); the
    /// projection now parses each payload once, in place, whatever its size.
    package static let largePayloadBytes = 1 << 20

    /// The distinct sources of records-file rows (entity `record`), in name order.
    ///
    /// One index seek per source (`records_by_key` starts with the source), not
    /// a read of the rows: an export asks this before it reads them.
    package func recordSources() throws(StoreSyncError) -> [String] {
        try wrap {
            try engine.read { db in
                var sources: [String] = []
                var next = try db.value(as: String.self, "SELECT min(source) FROM records")
                while let source = next {
                    if try db.value(as: Bool.self, "SELECT EXISTS (SELECT 1 FROM records WHERE source = ? AND entity = ?)",
                                    [source, EntityKind.record.rawValue]) ?? false {
                        sources.append(source)
                    }
                    next = try db.value(as: String.self, "SELECT min(source) FROM records WHERE source > ?", [source])
                }
                return sources
            }
        }
    }

    package func forEachRecord(of entity: EntityKind, columns: [ExportColumn], order: RecordOrder,
                              _ body: (ProjectedRecord) throws -> Void) throws {
        var projection = PayloadProjection(columns)
        // One row value reused: the callback gets it by value, and unless it keeps it the buffers are not copied.
        var row = ProjectedRecord(source: "", key: "", values: [], payload: "")
        row.values.reserveCapacity(columns.count)
        try forEachRecordBytes(of: entity, order: order) { stored in
            row.source = String(decoding: stored.source, as: UTF8.self)
            row.key = String(decoding: stored.key, as: UTF8.self)
            projection.values(of: stored.payload, into: &row.values)
            row.payload = String(decoding: stored.payload, as: UTF8.self)
            row.addedRun = stored.addedRun
            row.changedRun = stored.changedRun
            row.id = stored.id
            try body(row)
        }
    }

    package func forEachRecordBytes(of entity: EntityKind, order: RecordOrder,
                                    _ body: (StoredRecordBytes) throws -> Void) throws {
        // `source` is the entity's first sighting's (its sources are sorted lines "source<TAB>kind<TAB>role").
        let firstSource = "substr(sources, 1, instr(sources || char(9), char(9)) - 1)"
        let selected = "\(firstSource), key, fields, added_run, changed_run, entities.rowid"
        try stream { db in
            let sql: String
            switch order {
            case .insertion:
                // Insertion order is rowid order. `WHERE entity = ?` alone makes the
                // planner walk the (entity, key) index and sort every row, payload
                // and all, in a temporary B-tree (110k temp-file writes for 100k
                // rows): a kind alone in the table is read by a plain scan instead,
                // and otherwise its rowids are collected from the index (sorted,
                // small) and its rows read in that order.
                let others = try Bool.fetchOne(db, sql: """
                    SELECT EXISTS (SELECT 1 FROM entities WHERE entity < ?1) OR EXISTS (SELECT 1 FROM entities WHERE entity > ?1)
                    """, arguments: [entity.rawValue]) ?? true
                sql = others
                    ? "SELECT \(selected) FROM entities WHERE rowid IN (SELECT rowid FROM entities WHERE entity = ?) ORDER BY rowid"
                    : "SELECT \(selected) FROM entities NOT INDEXED WHERE entity = ? ORDER BY rowid"
            case .sourceAndKey:
                // Ids sorted, rows read in that order (``payloadsInOrder(of:runStarted:)``).
                sql = """
                    SELECT \(selected) FROM (SELECT rowid AS id FROM entities WHERE entity = ?
                                            ORDER BY \(firstSource), key
                                            LIMIT -1) AS picked
                    CROSS JOIN entities ON entities.rowid = picked.id
                    """
            }
            let query = RawStatement(try db.makeStatement(sql: sql))
            query.bind(1, entity.rawValue)
            while try query.nextRow(db) {
                try body(StoredRecordBytes(source: query.columnBytes(0), key: query.columnBytes(1), payload: query.columnBytes(2),
                                           addedRun: query.columnInt64(3), changedRun: query.columnInt64(4), id: query.columnInt64(5)))
            }
        }
    }

    package func unlinkedCount(of entity: EntityKind, field: String, target: EntityKind) throws(StoreSyncError) -> Int {
        var count = 0
        do {
            try stream { db in
                let value = "json_extract(e.fields, '\(Self.jsonPath(field).replacingOccurrences(of: "'", with: "''"))')"
                count = try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM entities e
                    WHERE e.entity = ? AND \(value) IS NOT NULL AND CAST(\(value) AS TEXT) != ''
                      AND NOT EXISTS (SELECT 1 FROM entities t WHERE t.entity = ? AND t.key = CAST(\(value) AS TEXT))
                    """, arguments: [entity.rawValue, target.rawValue]) ?? 0
            }
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: path, reason: "\(error)", cause: error)
        }
        return count
    }

    package func forEachChange(runID: Int64?, order: ChangeOrder, _ body: (ChangeRow) throws -> Void) throws {
        let filter = runID == nil ? "" : "WHERE run_id = ?"
        let orderBy = switch order {
        case .insertion: "id"
        case .record: "source, entity, key, op, field"
        }
        try stream { db in
            // Ids sorted, rows read in that order: a changed field's values can be a megabyte each.
            let query = RawStatement(try db.makeStatement(sql: """
                SELECT c.run_id, c.source, c.entity, c.key, c.op, c.field, c.before, c.after, c.id
                FROM (SELECT id FROM changes \(filter) ORDER BY \(orderBy) LIMIT -1) AS picked CROSS JOIN changes c ON c.id = picked.id
                """))
            if let runID { query.bind(1, runID) }
            while try query.nextRow(db) {
                try body(ChangeRow(id: query.columnInt64(8), runID: query.columnInt64(0), source: query.columnText(1), entity: query.columnText(2),
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
    ///
    /// SQLite sorts the rows' ids and sort keys only, and each payload is read
    /// by rowid in that order (``payloadsInOrder(of:)``): a sort holds every
    /// row it sorts, and with payloads a 100,000-item feed of listings, some
    /// with a megabyte of text, held hundreds of megabytes.
    static func feedSQL(_ query: FeedQuery, limit: Int?) -> (sql: String, arguments: [String]) {
        // Always a LIMIT (-1: none): see payloadsInOrder(of:runStarted:).
        let limitClause = limit.map { " LIMIT \(max(0, $0))" } ?? " LIMIT -1"
        switch query {
        case .newestFirst(let entities, let field):
            return (payloadsInOrder(of: """
                SELECT rowid AS id FROM entities WHERE entity IN (\(databaseQuestionMarks(count: entities.count)))
                ORDER BY json_extract(fields, ?) DESC, entity, key\(limitClause)
                """), entities.map(\.rawValue) + [jsonPath(field)])
        case .newestAdded(let entity, let field):
            return (payloadsInOrder(of: """
                SELECT rowid AS id FROM entities
                -- What the baseline found was there before: listing it would announce the catalogue.
                WHERE entity = ? AND NOT \(isBaseline("added_run"))
                ORDER BY added_run DESC, json_extract(fields, ?) DESC, key\(limitClause)
                """, runStarted: true), [entity.rawValue, jsonPath(field)])
        case .chart(let chart):
            return (payloadsInOrder(of: """
                SELECT rowid AS id FROM entities WHERE entity = ? AND json_extract(fields, ?) = ?
                ORDER BY json_extract(fields, ?), json_extract(fields, ?), json_extract(fields, ?), key\(limitClause)
                """), [EntityKind.chartEntry.rawValue, jsonPath("chart"), chart, jsonPath("country"),
                      jsonPath("genre_id"), jsonPath("rank")])
        }
    }

    /// The entities `picking` selects (a query of `rowid AS id`, in its
    /// order) with their payloads, read in that order. The picked rowids are
    /// SQLite's co-routine and the left side of a CROSS JOIN, which SQLite
    /// always keeps as the outer loop: rows come out in the co-routine's
    /// order with no second sort (an outer ORDER BY would sort the payloads
    /// again). `picking` must end with a LIMIT (`LIMIT -1` for none): SQLite
    /// flattens a subquery without one into the join and drops its ORDER BY.
    /// `SortedReadsTests` checks the order.
    static func payloadsInOrder(of picking: String, runStarted: Bool = false) -> String {
        """
        SELECT e.entity, e.key, e.fields AS payload\(runStarted ? ", runs.started_at AS run_started" : "")
        FROM (\(picking)) AS picked CROSS JOIN entities e ON e.rowid = picked.id
        \(runStarted ? "-- LEFT: retention may have pruned the run that added an entity long ago; the entity stays listed.\nLEFT JOIN runs ON runs.id = e.added_run" : "")
        """
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
        // Ids sorted first, payloads read in that order (``payloadsInOrder(of:runStarted:)``).
        try stream { db in
            let query = RawStatement(try db.makeStatement(sql: """
                SELECT e.key, e.fields AS payload, c.before, c.after, runs.started_at AS run_started
                FROM (SELECT c.id AS id FROM changes c JOIN entities e ON e.entity = c.entity AND e.key = c.key
                      JOIN runs ON runs.id = c.run_id
                      WHERE c.entity = ? AND c.op = 'changed' AND c.field = ?
                        AND c.id = (SELECT max(id) FROM changes c2 WHERE c2.entity = c.entity
                                    AND c2.key = c.key AND c2.op = 'changed' AND c2.field = c.field)
                        AND CAST(c.after AS REAL) < CAST(c.before AS REAL)
                      ORDER BY c.run_id DESC, e.key
                """ + (limit.map { " LIMIT \(max(0, $0))" } ?? " LIMIT -1") + """
                ) AS picked CROSS JOIN changes c ON c.id = picked.id
                JOIN entities e ON e.entity = c.entity AND e.key = c.key
                JOIN runs ON runs.id = c.run_id
                """))
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
        // The change rows' ids are sorted, then each row and its entity's payload
        // read in that order, as in ``payloadsInOrder(of:runStarted:)``: a sort of
        // whole rows held a megabyte-long payload once per changed field of its record.
        try stream { db in
            let query = RawStatement(try db.makeStatement(sql: """
                SELECT c.run_id, c.source, c.entity, c.key, c.op, c.field, c.before, c.after, e.fields AS payload, c.id
                FROM (SELECT id FROM changes
                      -- The baseline's log is the whole catalogue added: no news for a feed.
                      WHERE run_id = ? AND NOT \(Self.isBaseline("run_id")) ORDER BY source, entity, key, field LIMIT -1) AS picked
                CROSS JOIN changes c ON c.id = picked.id
                LEFT JOIN entities e ON e.entity = c.entity AND e.key = c.key
                """))
            query.bind(1, runID)
            defer { query.reset() }
            while try query.nextRow(db) {
                let change = ChangeRow(id: query.columnInt64(9), runID: query.columnInt64(0), source: query.columnText(1), entity: query.columnText(2),
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
            try engine.read { db in
                var tallies: [String: [String: EntityTally]] = [:]
                func update(_ source: String, _ entity: String, _ change: (inout EntityTally) -> Void) {
                    change(&tallies[source, default: [:]][entity, default: EntityTally(source: source, entity: entity)])
                }
                // A changed record logs one row per field: count records, not rows.
                for row in try db.rows("""
                    SELECT source, entity, op, count(DISTINCT key) AS n FROM changes WHERE run_id = ? GROUP BY source, entity, op
                    """, [runID]) {
                    let n: Int = row["n"]
                    update(row["source"], row["entity"]) { tally in
                        switch row["op"] as String {
                        case "added": tally.added = n
                        case "changed": tally.changed = n
                        default: tally.removed = n
                        }
                    }
                }
                for row in try db.rows("SELECT source, entity, count(*) AS n FROM records GROUP BY source, entity") {
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
            try engine.read { db in
                // Every counter summed, so a summary reads like one source's row (`s_` columns).
                let sums = ["pages", "requests", "added", "changed", "unchanged", "removed", "skipped", "seconds",
                            "record_writes", "drift", "unchanged_pages"].map { "sum(s.\($0)) AS s_\($0)" }
                return try db.rows("""
                    SELECT r.*, count(s.run_id) AS s_count, \(sums.joined(separator: ", "))
                    FROM runs r LEFT JOIN run_sources s ON s.run_id = r.id
                    WHERE r.id <= ? GROUP BY r.id ORDER BY r.id
                    """, [runID]).map { row in
                    RunSummary(run: Self.runRow(row), counts: row["s_count"] as Int > 0 ? Self.counts(row, source: "", prefix: "s_") : nil)
                }
            }
        }
    }
}

/// The export columns of stored payloads, read in one pass over each payload:
/// the values SQLite's `json_extract(fields, '$."name"')` gives (3.40), without
/// parsing the payload once per column as a `json_extract` per column does (17
/// parses a row were most of a CSV export's CPU).
///
/// Per column: an absent member or `null` is `.null`; `true`/`false` are 1/0;
/// a number with a fraction or exponent is a real, any other an integer unless
/// it overflows 64 bits (then a real, as SQLite does); a string is its decoded
/// text — all of it: SQLite's functions end a string at an escaped NUL, which
/// no longer cuts a column short (a `\u` surrogate without its pair is U+FFFD,
/// as ``JSONParser`` reads it); an object or array is its JSON text without
/// whitespace. When a name occurs twice the first member counts, as in SQLite.
///
/// Payloads of one table list the same members in the same order, so a
/// member's name is compared with the previous payload's name at its place and
/// looked up only when it differs.
package struct PayloadProjection {
    private let columnsByField: [String: [Int]]
    private let count: Int
    /// The previous payload's member names (as stored) and the columns each fills.
    private var lastRow: [(name: [UInt8], columns: [Int])] = []
    /// Which columns this payload has filled (the first member of a name wins).
    private var filled: [Bool]

    package init(_ columns: [ExportColumn]) {
        var byField: [String: [Int]] = [:]
        for (index, column) in columns.enumerated() { byField[column.field, default: []].append(index) }
        columnsByField = byField
        count = columns.count
        filled = Array(repeating: false, count: columns.count)
    }

    /// Replaces `values` with one value per column read from `payload` (a JSON
    /// object as the store keeps it; anything else gives nulls from where it stops being one).
    package mutating func values(of payload: UnsafeBufferPointer<UInt8>, into values: inout [StoredValue]) {
        values.removeAll(keepingCapacity: true)
        values.append(contentsOf: repeatElement(.null, count: count))
        guard count > 0 else { return }
        members(of: payload) { column, value, escaped in
            values[column] = Self.value(UnsafeBufferPointer(rebasing: payload[value]), escaped: escaped)
        }
    }

    /// Calls `body` with each column `payload` fills: the column's index, its
    /// member's JSON text (a range of `payload`) and whether that holds escapes;
    /// a column the payload lacks is not called. Returns how many members the
    /// payload has at its top level (as far as it is an object).
    @discardableResult
    package mutating func members(of payload: UnsafeBufferPointer<UInt8>,
                                  _ body: (_ column: Int, _ value: Range<Int>, _ escaped: Bool) -> Void) -> Int {
        for index in filled.indices { filled[index] = false }
        var position = 0
        JSONParser.members(ofObjectIn: payload) { name, nameEscaped, value, valueEscaped in
            if count > 0 {
                for column in columns(named: UnsafeBufferPointer(rebasing: payload[name]), escaped: nameEscaped, at: position)
                where !filled[column] {
                    filled[column] = true
                    body(column, value, valueEscaped)
                }
            }
            position += 1
        }
        return position
    }

    private mutating func columns(named name: UnsafeBufferPointer<UInt8>, escaped: Bool, at position: Int) -> [Int] {
        if !escaped, position < lastRow.count, lastRow[position].name.withUnsafeBufferPointer({ previous in
            previous.count == name.count && (name.isEmpty || memcmp(previous.baseAddress!, name.baseAddress!, name.count) == 0)
        }) {
            return lastRow[position].columns
        }
        let text = escaped ? JSONParser.stringContents(name[...]) : String(decoding: name, as: UTF8.self)
        let columns = columnsByField[text] ?? []
        let entry = (name: escaped ? [] : Array(name), columns: columns)
        if position < lastRow.count { lastRow[position] = entry } else if position == lastRow.count { lastRow.append(entry) }
        return columns
    }

    /// One member's value (its JSON text) as `json_extract` types it.
    package static func value(_ json: UnsafeBufferPointer<UInt8>, escaped: Bool) -> StoredValue {
        guard let first = json.first else { return .null }
        switch first {
        case UInt8(ascii: "\""):
            let inner = json[1..<max(1, json.count - 1)]
            return .text(escaped ? JSONParser.stringContents(inner) : String(decoding: inner, as: UTF8.self))
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            return .text(minified(json))
        case UInt8(ascii: "t"): return .integer(1)
        case UInt8(ascii: "f"): return .integer(0)
        case UInt8(ascii: "n"): return .null
        default:
            if isRealToken(json[...]) { return real(json) }
            return integer(json)
        }
    }

    /// The column kind a member's JSON text (`value`, a range of `json`) asks for, read from
    /// its first bytes: nil for `null`, booleans are integers, containers text.
    package static func kind(of value: Range<Int>, in json: UnsafeBufferPointer<UInt8>) -> ExportColumn.Kind? {
        guard let first = value.first.map({ json[$0] }) else { return nil }
        switch first {
        case UInt8(ascii: "\""), UInt8(ascii: "{"), UInt8(ascii: "["): return .text
        case UInt8(ascii: "n"): return nil
        case UInt8(ascii: "t"), UInt8(ascii: "f"): return .integer
        default:
            return isRealToken(json[value]) ? .real : .integer
        }
    }

    /// Whether a number token has a fraction or an exponent (SQLite's json_extract reads it as a real).
    static func isRealToken(_ token: Slice<UnsafeBufferPointer<UInt8>>) -> Bool {
        token.contains { $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E") }
    }

    /// An integer token as SQLite reads it: beyond 64 bits it is a real
    /// (but `-9223372036854775808` is the smallest integer).
    static func integer(_ json: UnsafeBufferPointer<UInt8>) -> StoredValue {
        var i = 0
        let negative = json.first == UInt8(ascii: "-")
        if negative { i = 1 }
        var value: Int64 = 0
        let tenth = Int64.max / 10
        while i < json.count, json[i] >= 0x30, json[i] <= 0x39 {
            let digit = Int64(json[i] - 0x30)
            i += 1
            if value >= tenth {
                if value > tenth || (i < json.count && json[i] >= 0x30 && json[i] <= 0x39) || digit == 9 { return real(json) }
                if digit == 8 { return negative ? .integer(.min) : real(json) }
            }
            value = value * 10 + digit
        }
        return .integer(negative ? -value : value)
    }

    static func real(_ json: UnsafeBufferPointer<UInt8>) -> StoredValue {
        Double(String(decoding: json, as: UTF8.self)).map(StoredValue.real) ?? .null
    }

    /// A container's JSON text as `json_extract` renders it: without whitespace between tokens.
    static func minified(_ json: UnsafeBufferPointer<UInt8>) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(json.count)
        var inString = false
        var i = 0
        while i < json.count {
            let byte = json[i]
            if inString {
                out.append(byte)
                if byte == UInt8(ascii: "\\"), i + 1 < json.count {
                    out.append(json[i + 1])
                    i += 1
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
                out.append(byte)
            } else if byte != 0x20, byte != 0x0A, byte != 0x0D, byte != 0x09 {
                out.append(byte)
            }
            i += 1
        }
        return String(decoding: out, as: UTF8.self)
    }
}
