import Catalog
import Foundation

extension SQLSnapshotStore {
    /// Per-source counters of a run, in source-name order.
    package func sourceCounts(runID: Int64) throws(StoreSyncError) -> [SourceCounts] {
        try wrap {
            try engine.read { db in
                try db.rows("SELECT * FROM run_sources WHERE run_id = ? ORDER BY source", [runID]).map { row in
                    Self.counts(row, source: row["source"])
                }
            }
        }
    }

    /// A `run_sources` row's counters, its columns named with `prefix`.
    static func counts(_ row: SQLRow, source: String, prefix: String = "") -> SourceCounts {
        var counts = SourceCounts(source: source)
        counts.pages = row[prefix + "pages"]
        counts.requests = row[prefix + "requests"]
        counts.added = row[prefix + "added"]
        counts.changed = row[prefix + "changed"]
        counts.unchanged = row[prefix + "unchanged"]
        counts.removed = row[prefix + "removed"]
        counts.skipped = row[prefix + "skipped"]
        counts.seconds = row[prefix + "seconds"]
        counts.recordRowsWritten = row[prefix + "record_writes"]
        counts.drift = row[prefix + "drift"]
        counts.unchangedPages = row[prefix + "unchanged_pages"]
        return counts
    }

    /// The change log of a run in a stable order.
    package func changes(runID: Int64) throws(StoreSyncError) -> [ChangeRow] {
        try wrap {
            try engine.read { db in
                try db.rows("""
                    SELECT * FROM changes WHERE run_id = ? ORDER BY source, entity, key, op, field
                    """, [runID]).map(Self.changeRow)
            }
        }
    }

    static func changeRow(_ row: SQLRow) -> ChangeRow {
        ChangeRow(id: row["id"], runID: row["run_id"], source: row["source"], entity: row["entity"], key: row["key"],
                  op: row["op"], field: row["field"], before: row["before"], after: row["after"],
                  removedEntityID: row["entity_rowid"], removedEntityAddedRun: row["entity_added_run"])
    }

    /// The most recent runs, newest first.
    package func runs(limit: Int = 20) throws(StoreSyncError) -> [RunRow] {
        try wrap {
            try engine.read { db in
                try db.rows("SELECT * FROM runs ORDER BY id DESC LIMIT ?", [limit]).map(Self.runRow)
            }
        }
    }

    /// One run by id.
    package func run(_ id: Int64) throws(StoreSyncError) -> RunRow? {
        try wrap {
            try engine.read { db in try db.row("SELECT * FROM runs WHERE id = ?", [id]).map(Self.runRow) }
        }
    }

    static func runRow(_ row: SQLRow) -> RunRow {
        RunRow(id: row["id"], job: row["job"], night: row["night"],
               startedAt: Date(timeIntervalSince1970: row["started_at"]),
               finishedAt: (row["finished_at"] as Double?).map(Date.init(timeIntervalSince1970:)),
               status: RunStatus(rawValue: row["status"]) ?? .failed, attempts: row["attempts"], message: row["message"], totals: totals(row),
               exportsPending: (row["exported"] as Int? ?? 1) == 0 && row["status"] != RunStatus.running.rawValue,
               // A PostgreSQL store of schema 1 read without upgrading it (`status`) has no such column.
               stopped: row["status"] == RunStatus.running.rawValue && row.names.contains("stopped") ? row["stopped"] : nil)
    }

    static func totals(_ row: SQLRow) -> RunTotals {
        var totals = RunTotals()
        totals.requests.requests = row["requests"]
        totals.requests.retries = row["retries"]
        totals.requests.throttled = row["throttled"]
        totals.requests.notModified = row["not_modified"]
        totals.requests.failures = row["failures"]
        totals.seconds = row["seconds"] ?? 0
        totals.warnings = problems(row["warnings"])
        totals.errors = problems(row["errors"])
        return totals
    }

    /// A run's stored problems: objects, or the bare strings an older store kept (code `unknown`).
    static func problems(_ json: String?) -> [RunProblem] {
        guard let json, let list = try? JSONParser.parse(json).arrayValue else { return [] }
        return list.compactMap(RunProblem.init(json:))
    }

    /// Every current record of a source (or all sources), by entity then key.
    package func records(source: String? = nil) throws(StoreSyncError) -> [Catalog.Record] {
        try wrap {
            try engine.read { db in
                let rows: [SQLRow]
                if let source {
                    rows = try db.rows("SELECT entity, key, \(Self.recordPayloadSQL) AS payload, hash FROM records WHERE source = ? ORDER BY entity, key",
                                            [source])
                } else {
                    rows = try db.rows("SELECT entity, key, \(Self.recordPayloadSQL) AS payload, hash FROM records ORDER BY entity, key")
                }
                return rows.compactMap { row in
                    EntityKind(rawValue: row["entity"]).map {
                        Record(entity: $0, key: row["key"], payload: row["payload"], hash: ContentHash(sqliteValue: row["hash"]))
                    }
                }
            }
        }
    }

    /// The records a dependent source starts from: those of `source` (of the
    /// given entities, all when empty) that exist now, or only those added or
    /// changed by `runID` plus those `consumer` still owes work from earlier
    /// runs (``setPendingInputs(consumer:_:)``), in entity then key order.
    /// With `fields`, each record carries only those members of its payload
    /// (and its hash is theirs): rows are read one at a time and cut down as
    /// they come, so a source that needs a podcast's feed address never
    /// holds the catalogue's payloads (88k podcasts, some with megabyte-long
    /// fields, were 1.06 GB of a night's 1.34 GB peak).
    package func inputRecords(source: String, entities: [EntityKind], selection: InputSelection,
                             runID: Int64, consumer: String, fields: [String] = []) throws(StoreSyncError) -> [Catalog.Record] {
        try wrap {
            try engine.read { db in
                var sql = "SELECT entity, key, \(Self.recordPayloadSQL) AS payload, hash FROM records WHERE source = ?"
                var arguments: [any SQLArgument] = [source]
                if !entities.isEmpty {
                    sql += " AND entity IN (\(repeatElement("?", count: entities.count).joined(separator: ", ")))"
                    arguments += entities.map(\.rawValue)
                }
                if selection == .newOrChanged {
                    sql += """
                         AND (added_run = ? OR changed_run = ? OR EXISTS (SELECT 1 FROM pending_inputs p
                              WHERE p.consumer = ? AND p.entity = records.entity AND p.key = records.key))
                        """
                    arguments += [runID, runID, consumer] as [any SQLArgument]
                }
                sql += " ORDER BY entity, key"
                var records: [Catalog.Record] = []
                try db.forEachRow(sql, arguments) { row in
                    guard let entity = EntityKind(rawValue: row["entity"]) else { return }
                    guard !fields.isEmpty else {
                        records.append(Record(entity: entity, key: row["key"], payload: row["payload"], hash: ContentHash(sqliteValue: row["hash"])))
                        return
                    }
                    let payload: String = row["payload"]
                    let members = (try? JSONParser.parse(Array(payload.utf8)).objectValue) ?? [:]
                    records.append(Record(entity: entity, key: row["key"], fields: members.filter { fields.contains($0.key) }))
                }
                return records
            }
        }
    }

    /// The upstream records whose scopes did not end complete in this run:
    /// `consumer` selects them again next run (with what is new or changed
    /// then) until it has done their work. Replaces the previous list.
    package func setPendingInputs(consumer: String, _ identities: [RecordIdentity]) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                // In a fleet, the source's closing step decides what stays owed (its claim fences this).
                try checkFence(db, source: consumer.components(separatedBy: "#")[0], scope: "*")
                try db.execute("DELETE FROM pending_inputs WHERE consumer = ?", [consumer])
                for identity in identities {
                    try db.execute("INSERT INTO pending_inputs (consumer, entity, key) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                                   [consumer, identity.entity.rawValue, identity.key])
                }
            }
        }
    }

    /// Every scope's checkpoint, by source and scope.
    package func scopeStates() throws(StoreSyncError) -> [ScopeRow] {
        try wrap {
            try engine.read { db in
                let sizes = try Dictionary(
                    db.rows("SELECT source, scope, COUNT(*) AS n FROM records GROUP BY source, scope")
                        .map { ("\($0["source"] as String)\t\($0["scope"] as String)", $0["n"] as Int) },
                    uniquingKeysWith: +)
                return try db.rows("SELECT * FROM scopes ORDER BY source, scope").map { row in
                    let source: String = row["source"], scope: String = row["scope"]
                    return ScopeRow(source: source, scope: scope, runID: row["run_id"], state: ScopeState(rawValue: row["state"]) ?? .failed,
                                    nextPage: row["next_page"], error: (row["error"] as String?).map { message in
                                        RunProblem(code: row["error_code"] ?? RunProblem.unknown, source: source, scope: scope,
                                                   url: row["error_url"], message: message)
                                    }, records: sizes["\(source)\t\(scope)"] ?? 0)
                }
            }
        }
    }

    /// `PRAGMA integrity_check`: "ok" for a sound file.
    package func integrityCheck() throws(StoreSyncError) -> String {
        try wrap { try engine.integrityCheck() }
    }
}
