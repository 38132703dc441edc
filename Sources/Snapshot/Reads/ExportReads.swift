import Catalog
import Foundation

/// The reads exports and reports make, written once for every engine: rows
/// streamed through an ``SQLCursor`` (SQLite's C API in place; a PostgreSQL
/// server cursor a batch at a time), payload members typed by
/// ``PayloadProjection`` as SQLite's `json_extract` types them, whichever the
/// engine, so the exports are byte-identical across engines.
extension SQLSnapshotStore {
    /// Runs a streaming read over one consistent view of the store, on the
    /// store's own engine (PostgreSQL's rows come from its server, batch by
    /// batch): the engine's errors become ``StoreSyncError``; the caller's,
    /// thrown through ``handOver(_:)``, come out unchanged.
    func stream(_ body: (any SQLSession) throws -> Void) throws {
        do {
            try engine.read(body)
        } catch let error as CallerError {
            throw error.error
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw StoreSyncError.storage(path: path, reason: "\(error)", cause: error)
        }
    }

    /// Calls a streaming read's caller, whose error is then its own, not the store's (``stream(_:)``).
    func handOver<T>(_ body: () throws -> T) throws -> T {
        do { return try body() } catch { throw CallerError(error: error) }
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
        let selected = "e.sources, e.key, e.fields, e.added_run, e.changed_run, e.rowid"
        try stream { db in
            let sql: String
            switch order {
            case .insertion:
                // Insertion order is rowid order. `WHERE entity = ?` alone makes
                // SQLite's planner walk the (entity, key) index and sort every row,
                // payload and all, in a temporary B-tree (110k temp-file writes for
                // 100k rows): a kind alone in the table is read by a plain scan
                // instead, and otherwise its rowids are collected from the index
                // (sorted, small) and its rows read in that order.
                let others = try db.value(as: Bool.self, """
                    SELECT EXISTS (SELECT 1 FROM entities WHERE entity < ?) OR EXISTS (SELECT 1 FROM entities WHERE entity > ?)
                    """, [entity.rawValue, entity.rawValue]) ?? true
                sql = others
                    ? db.dialect.orderedRows(OrderedRows(select: selected, table: "entities", alias: "e", id: "rowid",
                                                         filter: "e.entity = ?", orderBy: "e.rowid"))
                    : "SELECT \(selected) FROM entities e \(db.dialect.tableScanHint) WHERE e.entity = ? ORDER BY e.rowid"
            case .sourceAndKey:
                // `source` is the entity's first sighting's (its sources are sorted lines "source<TAB>kind<TAB>role").
                sql = db.dialect.orderedRows(OrderedRows(select: selected, table: "entities", alias: "e", id: "rowid", filter: "e.entity = ?",
                                                         orderBy: "\(db.dialect.firstTabField("e.sources")), e.key"))
            }
            let rows = try db.cursor(sql, [entity.rawValue])
            while try rows.next() {
                let sources = rows.bytes(0)
                let source = UnsafeBufferPointer(rebasing: sources[..<(sources.firstIndex(of: 9) ?? sources.count)])
                let record = StoredRecordBytes(source: source, key: rows.bytes(1), payload: rows.bytes(2),
                                               addedRun: rows.int64(3), changedRun: rows.int64(4), id: rows.int64(5))
                try handOver { try body(record) }
            }
        }
    }

    /// Counted here rather than by a `NOT EXISTS` over a JSON function: the
    /// member is typed by ``PayloadProjection``, as on every other read, and
    /// cast to text as SQLite's `CAST(… AS TEXT)` does.
    package func unlinkedCount(of entity: EntityKind, field: String, target: EntityKind) throws(StoreSyncError) -> Int {
        var count = 0
        try wrap {
            try stream { db in
                // Linked values (their bytes: keys compare as stored) and how many records name each.
                var named: [[UInt8]: Int] = [:]
                var projection = PayloadProjection([ExportColumn(field, field)])
                var values: [StoredValue] = []
                let rows = try db.cursor("SELECT fields FROM entities WHERE entity = ?", [entity.rawValue])
                while try rows.next() {
                    projection.values(of: rows.bytes(0), into: &values)
                    guard let text = values[0].sqliteText, !text.isEmpty else { continue }
                    named[Array(text.utf8), default: 0] += 1
                }
                var found = Set<[UInt8]>()
                // A value holding a NUL names no key: no engine's key can hold one (PostgreSQL's text cannot).
                let linked = named.keys.filter { !$0.contains(0) }.map { String(decoding: $0, as: UTF8.self) }
                try db.rows(keyedBy: linked, [target.rawValue], { "SELECT key FROM entities WHERE entity = ? AND key IN (\($0))" }) { row in
                    found.insert(Array((row[0] as String).utf8))
                }
                count = named.reduce(0) { total, entry in found.contains(entry.key) ? total : total + entry.value }
            }
        }
        return count
    }

    package func forEachChange(runID: Int64?, order: ChangeOrder, _ body: (ChangeRow) throws -> Void) throws {
        try stream { db in
            // A changed field's values can be a megabyte each: ``SQLDialect/orderedRows``.
            let rows = try db.cursor(db.dialect.orderedRows(OrderedRows(
                select: Self.changeColumns, table: "changes", alias: "c", id: "id",
                filter: runID == nil ? "1 = 1" : "c.run_id = ?",
                orderBy: order == .insertion ? "c.id" : "c.source, c.entity, c.key, c.op, c.field NULLS FIRST, c.id")),
                runID.map { [$0] } ?? [])
            while try rows.next() {
                let change = Self.changeRow(rows)
                try handOver { try body(change) }
            }
        }
    }

    /// The columns ``changeRow(_:)`` reads, first in a query's list.
    static let changeColumns = "c.run_id, c.source, c.entity, c.key, c.op, c.field, c.before, c.after, c.id"

    static func changeRow(_ rows: any SQLCursor) -> ChangeRow {
        ChangeRow(id: rows.int64(8), runID: rows.int64(0), source: rows.text(1), entity: rows.text(2), key: rows.text(3),
                  op: rows.text(4), field: rows.optionalText(5), before: rows.optionalText(6), after: rows.optionalText(7))
    }

    /// The records a feed lists, in its order, read in two steps within one
    /// view of the store: the sort fields of every candidate, read from its
    /// payload by ``PayloadProjection`` and ordered here as SQLite orders
    /// `json_extract` values (``StoredValue/sqliteOrder(_:)``), keeping only
    /// the first `limit`; then the kept records' payloads, by row id, a few
    /// hundred at a time. Memory holds the feed's items and one batch of
    /// payloads, never the kind's; `body` returning false stops the read.
    ///
    /// No JSON function of the engine's: PostgreSQL's refuse a `\u0000`
    /// escape that SQLite and the stored payload hold, and order their own way.
    package func forEachFeedRecord(_ query: FeedQuery, limit: Int?, _ body: (FeedRecord) throws -> Bool) throws {
        if limit == 0 { return }
        try stream { db in
            var picked = FeedPick(order: query, limit: limit)
            var values: [StoredValue] = []
            switch query {
            case .newestFirst(let entities, let field):
                var projection = PayloadProjection([ExportColumn(field, field)])
                let rows = try db.cursor("""
                    SELECT rowid, entity, key, fields FROM entities WHERE entity IN (\(repeatElement("?", count: entities.count).joined(separator: ", ")))
                    """, entities.map(\.rawValue))
                while try rows.next() {
                    projection.values(of: rows.bytes(3), into: &values)
                    picked.add(FeedPick.Candidate(id: rows.int64(0), entity: Array(rows.bytes(1)), key: Array(rows.bytes(2)), sortValues: values))
                }
            case .newestAdded(let entity, let field):
                // What the baseline found was there before: listing it would announce the catalogue.
                let baseline = try db.value(as: Int64.self, "SELECT value FROM store_meta WHERE name = ?", [Self.baselineRunKey])
                var projection = PayloadProjection([ExportColumn(field, field)])
                let rows = try db.cursor("SELECT rowid, added_run, key, fields FROM entities WHERE entity = ?", [entity.rawValue])
                while try rows.next() {
                    let added = rows.int64(1)
                    guard added != baseline else { continue }
                    projection.values(of: rows.bytes(3), into: &values)
                    picked.add(FeedPick.Candidate(id: rows.int64(0), entity: [], key: Array(rows.bytes(2)),
                                                  sortValues: [.integer(added)] + values))
                }
            case .chart(let chart):
                var projection = PayloadProjection(["chart", "country", "genre_id", "rank"].map { ExportColumn($0, $0) })
                let rows = try db.cursor("SELECT rowid, key, fields FROM entities WHERE entity = ?", [EntityKind.chartEntry.rawValue])
                while try rows.next() {
                    projection.values(of: rows.bytes(2), into: &values)
                    guard values[0] == .text(chart) else { continue }
                    picked.add(FeedPick.Candidate(id: rows.int64(0), entity: [], key: Array(rows.bytes(1)), sortValues: Array(values[1...])))
                }
            }
            let ids = picked.ordered().map(\.id)
            for start in stride(from: 0, to: ids.count, by: 500) {
                let slice = Array(ids[start..<min(start + 500, ids.count)])
                var byID: [Int64: FeedRecord] = [:]
                let rows = try db.cursor("""
                    SELECT e.rowid, e.entity, e.key, e.fields, runs.started_at FROM entities e
                    -- LEFT: retention may have pruned the run that added an entity long ago; the entity stays listed.
                    LEFT JOIN runs ON runs.id = e.added_run
                    WHERE e.rowid IN (\(repeatElement("?", count: slice.count).joined(separator: ", ")))
                    """, slice)
                while try rows.next() {
                    guard let entity = EntityKind(rawValue: rows.text(1)) else { continue }
                    byID[rows.int64(0)] = FeedRecord(entity: entity, key: rows.text(2), payload: rows.text(3),
                                                     addedRunStartedAt: rows.optionalDouble(4).map(Date.init(timeIntervalSince1970:)))
                }
                for id in slice {
                    guard var record = byID[id] else { continue }
                    if case .newestAdded = query {} else { record.addedRunStartedAt = nil }
                    guard try handOver({ try body(record) }) else { return }
                }
            }
        }
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
        // In slices: an engine caps the number of bound parameters.
        let unique = Array(Set(keys)).sorted()
        try wrap {
            try stream { db in
                for start in stride(from: 0, to: unique.count, by: 500) {
                    let slice = Array(unique[start..<min(start + 500, unique.count)])
                    let rows = try db.cursor("""
                        SELECT key, fields FROM entities WHERE entity = ? AND key IN (\(repeatElement("?", count: slice.count).joined(separator: ", ")))
                        ORDER BY key
                        """, [entity.rawValue] + slice)
                    while try rows.next() {
                        found.append(FeedRecord(entity: entity, key: rows.text(0), payload: rows.text(1), addedRunStartedAt: nil))
                    }
                }
            }
        }
        return found
    }

    package func chartEntries(chart: String) throws(StoreSyncError) -> [FeedRecord] {
        try allFeedRecords(.chart(chart))
    }

    package func forEachDecrease(of entity: EntityKind, field: String, limit: Int?,
                                 _ body: (FieldDecrease) throws -> Bool) throws {
        if limit == 0 { return }
        try stream { db in
            // Each record's latest change of `field`, newest run first. Whether
            // it is a decrease is told here, reading the values as SQLite's
            // `CAST(… AS REAL)` does (``StoredValue/sqliteReal(_:)``), which no
            // engine's cast refusing text that is not a number can stop.
            let rows = try db.cursor(db.dialect.orderedRows(OrderedRows(
                select: "c.key, e.fields, c.before, c.after, runs.started_at", table: "changes", alias: "c", id: "id",
                filter: """
                    c.entity = ? AND c.op = 'changed' AND c.field = ?
                    AND c.id = (SELECT max(id) FROM changes c2 WHERE c2.entity = c.entity AND c2.key = c.key
                                AND c2.op = 'changed' AND c2.field = c.field)
                    AND EXISTS (SELECT 1 FROM entities x WHERE x.entity = c.entity AND x.key = c.key)
                    AND EXISTS (SELECT 1 FROM runs r WHERE r.id = c.run_id)
                    """,
                orderBy: "c.run_id DESC, c.key, c.id",
                joins: "JOIN entities e ON e.entity = c.entity AND e.key = c.key JOIN runs ON runs.id = c.run_id")),
                [entity.rawValue, field])
            var listed = 0
            while try rows.next() {
                guard let before = rows.optionalText(2), let after = rows.optionalText(3),
                      StoredValue.sqliteReal(after) < StoredValue.sqliteReal(before) else { continue }
                let decrease = FieldDecrease(key: rows.text(0), payload: rows.text(1), before: before, after: after,
                                             runStartedAt: Date(timeIntervalSince1970: rows.double(4)))
                guard try handOver({ try body(decrease) }) else { return }
                listed += 1
                if let limit, listed >= limit { return }
            }
        }
    }

    package func latestDecreases(of entity: EntityKind, field: String) throws(StoreSyncError) -> [FieldDecrease] {
        var found: [FieldDecrease] = []
        try wrap { try forEachDecrease(of: entity, field: field, limit: nil) { found.append($0); return true } }
        return found
    }

    package func forEachChangeWithRecord(runID: Int64, _ body: (ChangeWithRecord) throws -> Bool) throws {
        // A sort of whole rows held a megabyte-long payload once per changed
        // field of its record: ``SQLDialect/orderedRows``.
        try stream { db in
            let rows = try db.cursor(db.dialect.orderedRows(OrderedRows(
                select: Self.changeColumns + ", e.fields", table: "changes", alias: "c", id: "id",
                // The baseline's log is the whole catalogue added: no news for a feed.
                filter: "c.run_id = ? AND NOT \(Self.isBaseline("c.run_id"))",
                orderBy: "c.source, c.entity, c.key, c.field NULLS FIRST, c.id",
                joins: "LEFT JOIN entities e ON e.entity = c.entity AND e.key = c.key")), [runID])
            while try rows.next() {
                let change = ChangeWithRecord(change: Self.changeRow(rows), currentPayload: rows.optionalText(9))
                guard try handOver({ try body(change) }) else { return }
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
