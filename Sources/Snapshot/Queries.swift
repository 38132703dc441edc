import Catalog
import Foundation
import GRDB

/// One row of the change log.
public struct ChangeRow: Sendable, Equatable {
    public var runID: Int64
    public var source: String
    public var entity: String
    public var key: String
    public var op: String
    public var field: String?
    public var before: String?
    public var after: String?
}

/// A finished or running run, for `status` and reports.
public struct RunRow: Sendable, Equatable {
    public var id: Int64
    public var job: String
    public var night: Int?
    public var startedAt: Date
    public var finishedAt: Date?
    public var status: String
    public var attempts: Int
    public var message: String?
    public var totals: RunTotals
}

extension SnapshotStore {
    /// Per-source counters of a run, in source-name order.
    public func sourceCounts(runID: Int64) throws(StoreSyncError) -> [SourceCounts] {
        try wrap {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM run_sources WHERE run_id = ? ORDER BY source", arguments: [runID]).map { row in
                    var counts = SourceCounts(source: row["source"])
                    counts.pages = row["pages"]
                    counts.requests = row["requests"]
                    counts.added = row["added"]
                    counts.changed = row["changed"]
                    counts.unchanged = row["unchanged"]
                    counts.removed = row["removed"]
                    counts.skipped = row["skipped"]
                    counts.seconds = row["seconds"]
                    counts.recordRowsWritten = row["record_writes"]
                    return counts
                }
            }
        }
    }

    /// The change log of a run in a stable order.
    public func changes(runID: Int64) throws(StoreSyncError) -> [ChangeRow] {
        try wrap {
            try pool.read { db in
                try Row.fetchAll(db, sql: """
                    SELECT * FROM changes WHERE run_id = ? ORDER BY source, entity, key, op, field
                    """, arguments: [runID]).map(Self.changeRow)
            }
        }
    }

    static func changeRow(_ row: Row) -> ChangeRow {
        ChangeRow(runID: row["run_id"], source: row["source"], entity: row["entity"], key: row["key"],
                  op: row["op"], field: row["field"], before: row["before"], after: row["after"])
    }

    /// The most recent runs, newest first.
    public func runs(limit: Int = 20) throws(StoreSyncError) -> [RunRow] {
        try wrap {
            try pool.read { db in
                try Row.fetchAll(db, sql: "SELECT * FROM runs ORDER BY id DESC LIMIT ?", arguments: [limit]).map(Self.runRow)
            }
        }
    }

    /// One run by id.
    public func run(_ id: Int64) throws(StoreSyncError) -> RunRow? {
        try wrap {
            try pool.read { db in try Row.fetchOne(db, sql: "SELECT * FROM runs WHERE id = ?", arguments: [id]).map(Self.runRow) }
        }
    }

    static func runRow(_ row: Row) -> RunRow {
        RunRow(id: row["id"], job: row["job"], night: row["night"],
               startedAt: Date(timeIntervalSince1970: row["started_at"]),
               finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
               status: row["status"], attempts: row["attempts"], message: row["message"], totals: totals(row))
    }

    static func totals(_ row: Row) -> RunTotals {
        var totals = RunTotals()
        totals.requests = row["requests"]
        totals.retries = row["retries"]
        totals.throttled = row["throttled"]
        totals.notModified = row["not_modified"]
        totals.failures = row["failures"]
        totals.seconds = row["seconds"] ?? 0
        totals.warnings = strings(row["warnings"])
        totals.errors = strings(row["errors"])
        return totals
    }

    static func strings(_ json: String?) -> [String] {
        guard let json, let list = try? JSONParser.parse(json).arrayValue else { return [] }
        return list.compactMap(\.stringValue)
    }

    /// Every current record of a source (or all sources), by entity then key.
    public func records(source: String? = nil) throws(StoreSyncError) -> [Catalog.Record] {
        try wrap {
            try pool.read { db in
                let rows: [Row]
                if let source {
                    rows = try Row.fetchAll(db, sql: "SELECT entity, key, payload, hash FROM records WHERE source = ? ORDER BY entity, key",
                                            arguments: [source])
                } else {
                    rows = try Row.fetchAll(db, sql: "SELECT entity, key, payload, hash FROM records ORDER BY entity, key")
                }
                return rows.compactMap { row in
                    EntityKind(rawValue: row["entity"]).map {
                        Record(entity: $0, key: row["key"], payload: row["payload"], hash: ContentHash(sqliteValue: row["hash"]))
                    }
                }
            }
        }
    }

    /// `PRAGMA integrity_check`: "ok" for a sound file.
    public func integrityCheck() throws(StoreSyncError) -> String {
        try wrap {
            try pool.read { db in try String.fetchAll(db, sql: "PRAGMA integrity_check").joined(separator: "; ") }
        }
    }
}
