import Catalog
import Foundation
import Snapshot

/// The consumer database: the snapshot as a data person wants it, separate
/// from the snapshot so readers (sqlite3, Datasette) never hold a lock on the
/// live store.
///
/// - One table per entity (``ConsumerSchema/entityTables``, always all of
///   them, empty when nothing was crawled): `key` primary key, the canonical
///   fields as typed columns, `extra` for members no column holds.
/// - Foreign keys where they exist (``ConsumerSchema/foreignKeys(of:chartItems:)``),
///   declared for tools to show links and never enforced, so orphans are fine;
///   `vendors` is derived from the listings.
/// - One table per records-file source, in the file's own columns (``RecordTables``).
/// - `changes` (the change log, canonical field names) and `runs`; each
///   entity row says when it was first seen and last changed (run and time).
/// - With `history`, `{table}_history` beside each entity table: every version
///   of every entity within the change log's days (``copyHistory(_:runs:runTimes:store:into:)``).
/// - FTS5 full-text search over names and descriptions (`{table}_fts`), and
///   views for the common questions (``ConsumerSchema/views(entities:)``).
///
/// Filled from the store's typed reads and written through Snapshot's
/// ``SQLiteFile``; the SQL that shapes this file stays here, because the
/// file's layout is an export format (like the CSV columns), not the store's
/// schema: a PostgreSQL store exports the very same file.
enum SQLiteExport {
    /// Writes the database at `url`, and with `changeset` the changeset from
    /// the file it replaces (``ChangesetExport``); returns the database's file
    /// and the changeset's, if one was written.
    static func write(to url: URL, historyDays: Int? = nil, history: Bool = false, changeset: ChangesetExportSpec? = nil,
                      context: ExportContext) throws -> (database: ExportedFile, changeset: ExportedFile?) {
        let temporary = try AtomicFile.temporaryURL(for: url)
        var rows = 0
        var changesetFile: ExportedFile?
        do {
            try SQLiteFile.create(at: temporary.path) { file in
                rows = try fill(file, historyDays: historyDays, history: history, context: context)
            }
            // Before the new file replaces the old one: the changeset is their difference.
            if let changeset {
                changesetFile = try ChangesetExport.write(from: url, to: temporary, spec: changeset, context: context)
            }
            // Built whole under a temporary name, then published like every
            // other export: readers see the old file or the new one.
            try AtomicFile.publish(temporary: temporary, to: url)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw StoreSyncError.exportFailed(path: url.path, reason: "\(error)", cause: error)
        }
        return (ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows), changesetFile)
    }

    /// Creates and fills every table, index and view; returns the entity and record rows written.
    static func fill(_ file: SQLiteFile, historyDays: Int? = nil, history: Bool = false, context: ExportContext) throws -> Int {
        let store = context.store
        let stored = try store.entities()
        let tables = ConsumerSchema.tables(holding: stored)
        let chartItems = stored.contains(.chartEntry) ? try chartItemEntities(store) : []
        // First: the entity rows and versions name runs, with their times.
        let runTimes = try copyRuns(through: context.runID, store: store, into: file)
        var rows = 0
        for entity in tables {
            rows += try copyEntity(entity, foreignKeys: ConsumerSchema.foreignKeys(of: entity, chartItems: chartItems),
                                   read: stored.contains(entity), runTimes: runTimes, store: store, into: file)
        }
        try createVendors(file)
        if stored.contains(.record) {
            rows += try RecordTables.copy(store: store, into: file, logger: context.logger)
        }
        let logged = try historyRuns(days: historyDays, through: context.runID, store: store)
        try copyChanges(of: logged, store: store, into: file)
        if history {
            for entity in tables {
                try copyHistory(entity, runs: logged ?? Array(runTimes.keys).sorted(), runTimes: runTimes, store: store, into: file)
            }
        }
        for entity in tables {
            let columns = ConsumerSchema.searchColumns(of: entity)
            guard !columns.isEmpty else { continue }
            for statement in ConsumerSchema.searchStatements(table: ConsumerSchema.table(for: entity), columns: columns) {
                try file.execute(statement)
            }
        }
        for view in ConsumerSchema.views(entities: Set(tables)) {
            try file.execute("CREATE VIEW \(ConsumerSchema.quoted(view.name)) AS \(view.sql)")
        }
        return rows
    }

    /// The entities the chart entries chart (what decides whether `item_key` can be a foreign key).
    static func chartItemEntities(_ store: any SnapshotStore) throws -> Set<String> {
        var entities: Set<String> = []
        try store.forEachRecord(of: .chartEntry, columns: [ExportColumn("item_entity", "item_entity")], order: .insertion) { record in
            if case .text(let entity) = record.values[0] { entities.insert(entity) }
        }
        return entities
    }

    /// The entity's table and its rows in the store's order; returns how many
    /// rows the store gave (none are read when `read` is false: the store holds
    /// none). Its foreign keys are declared, not enforced (``SQLiteFile``).
    static func copyEntity(_ entity: EntityKind, foreignKeys: [ConsumerSchema.ForeignKey], read: Bool, runTimes: [Int64: String],
                           store: any SnapshotStore, into file: SQLiteFile) throws -> Int {
        let name = ConsumerSchema.table(for: entity)
        let quoted = ConsumerSchema.quoted
        let table = quoted(name)
        let columns = EntityColumns.columns(for: entity)
        var definitions = ["\(quoted(ConsumerSchema.idColumn)) INTEGER PRIMARY KEY", "\(quoted(ConsumerSchema.keyColumn)) TEXT NOT NULL UNIQUE"]
        for column in columns {
            let key = foreignKeys.first { $0.column == column.name }
            definitions.append("\(quoted(column.name)) \(column.kind.rawValue)"
                + (key.map { " REFERENCES \(quoted($0.table))(\(quoted($0.targetColumn)))" } ?? ""))
        }
        definitions.append("\(quoted(ConsumerSchema.extraColumn)) TEXT")
        definitions += ConsumerSchema.seenColumns
        try file.execute("CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        var count = 0
        if read {
            // Values are bound; only the model's names are spliced, quoted. The column
            // affinities type each value as the store read it from the record.
            let placeholders = Array(repeating: "?", count: columns.count + 7).joined(separator: ", ")
            let insert = try file.prepare("INSERT INTO \(table) VALUES (\(placeholders)) ")
            let holdsKey = columns.map { ConsumerSchema.holdsKey($0.name) }
            try store.forEachRecord(of: entity, columns: columns, order: .insertion) { record in
                insert.bind(1, .integer(record.id))
                // Text cleaned as in every export (ExportText): the same text as the CSV files.
                insert.bind(2, ExportText.clean(record.key))
                for (index, value) in record.values.enumerated() {
                    insert.bind(index + 3, holdsKey[index] && value == .text("") ? .null : ExportText.clean(value))
                }
                insert.bind(columns.count + 3, ExtraMembers.json(payload: record.payload, columns: columns, values: record.values)
                    .map { StoredValue.text(ExportText.clean($0)) } ?? .null)
                bindRun(record.addedRun, at: columns.count + 4, times: runTimes, into: insert)
                bindRun(record.changedRun, at: columns.count + 6, times: runTimes, into: insert)
                try insert.run()
                count += 1
            }
        }
        if columns.contains(where: { $0.name == "name" }) {
            try file.execute("CREATE INDEX \(quoted("\(name)_by_name")) ON \(table)(\(quoted("name")))")
        }
        for key in foreignKeys {
            try file.execute("CREATE INDEX \(quoted("\(name)_by_\(key.column)")) ON \(table)(\(quoted(key.column)))")
        }
        if entity == .chartEntry {
            try file.execute("CREATE INDEX chart_entries_by_slot ON chart_entries(chart, country, genre_id, rank)")
        }
        return count
    }

    /// Binds a run's id and its start time (as `runs.started_at` gives it) at `index` and `index + 1`.
    static func bindRun(_ run: Int64?, at index: Int, times: [Int64: String], into statement: SQLiteFile.Statement) {
        statement.bind(index, run.map { StoredValue.integer($0) } ?? .null)
        statement.bind(index + 1, run.flatMap { times[$0] }.map { StoredValue.text($0) } ?? .null)
    }

    /// `{table}_history`: one row per version of each entity the store holds
    /// or the change log says it removed, oldest first, as
    /// ``SnapshotStore/forEachEntityHistory(of:runs:_:)`` derives them from
    /// the change log of `runs`. A version's columns are the entity table's;
    /// a tombstone (`_deleted` = 1) keeps the fields it was removed with.
    /// Returns the rows written.
    @discardableResult
    static func copyHistory(_ entity: EntityKind, runs: [Int64], runTimes: [Int64: String],
                            store: any SnapshotStore, into file: SQLiteFile) throws -> Int {
        let quoted = ConsumerSchema.quoted
        let table = quoted(ConsumerSchema.historyTable(for: ConsumerSchema.table(for: entity)))
        let columns = EntityColumns.columns(for: entity)
        let definitions = ConsumerSchema.versionColumns
            + columns.map { "\(quoted($0.name)) \($0.kind.rawValue)" }
            + ["\(quoted(ConsumerSchema.extraColumn)) TEXT", "PRIMARY KEY (\(quoted(ConsumerSchema.keyColumn)), _version)"]
        try file.execute("CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        let insert = try file.prepare("INSERT INTO \(table) VALUES (\(Array(repeating: "?", count: columns.count + 10).joined(separator: ", ")))")
        let holdsKey = columns.map { ConsumerSchema.holdsKey($0.name) }
        var projection = PayloadProjection(columns)
        var values: [StoredValue] = []
        var count = 0
        try store.forEachEntityHistory(of: entity, runs: runs) { history in
            let key = ExportText.clean(history.key)
            for version in history.versions {
                insert.bind(1, key)
                insert.bind(2, .integer(Int64(version.number)))
                insert.bind(3, .text(version.event.rawValue))
                bindRun(version.validFromRun, at: 4, times: runTimes, into: insert)
                bindRun(version.validToRun, at: 6, times: runTimes, into: insert)
                insert.bind(8, .integer(version.deleted ? 1 : 0))
                insert.bind(9, version.changes.isEmpty ? .null
                    : .text(ExportText.clean(CanonicalJSON.string(.array(version.changes.map { .string($0.field) })))))
                var payload = version.payload
                payload.withUTF8 { projection.values(of: $0, into: &values) }
                for (index, value) in values.enumerated() {
                    insert.bind(index + 10, holdsKey[index] && value == .text("") ? .null : ExportText.clean(value))
                }
                insert.bind(columns.count + 10, ExtraMembers.json(payload: version.payload, columns: columns, values: values)
                    .map { StoredValue.text(ExportText.clean($0)) } ?? .null)
                try insert.run()
                count += 1
            }
        }
        return count
    }

    /// `vendors`: every seller the listings name, with its name where a
    /// listing gives one (NULL otherwise) and how many listings it has.
    static func createVendors(_ file: SQLiteFile) throws {
        try file.execute("CREATE TABLE vendors (id INTEGER PRIMARY KEY, name TEXT, listings INTEGER NOT NULL)")
        // A vendor id that is not an integer cannot be a row id; such a listing stays unlinked.
        try file.execute("""
            INSERT INTO vendors (id, name, listings)
            SELECT vendor_id, max(vendor_name), count(*) FROM listings WHERE typeof(vendor_id) = 'integer' GROUP BY vendor_id
            """)
    }

    /// The runs whose change log the file carries: those of the last `days`
    /// days up to `runID` (nil: all), aged by simulated night where the run
    /// crawled one, as retention ages them; nil when every run is wanted.
    static func historyRuns(days: Int?, through runID: Int64, store: any SnapshotStore) throws -> [Int64]? {
        guard let days else { return nil }
        let runs = try store.runSummaries(through: runID).map(\.run)
        guard let current = runs.last else { return [] }
        return runs.filter { run in
            if let night = current.night, let runNight = run.night { return runNight > night - days }
            return run.startedAt > current.startedAt.addingTimeInterval(-Double(days) * 86_400)
        }.map(\.id)
    }

    /// The change log of `runs` (nil: of every run), in the order it was logged.
    static func copyChanges(of runs: [Int64]?, store: any SnapshotStore, into file: SQLiteFile) throws {
        try file.execute("""
            CREATE TABLE changes (id INTEGER PRIMARY KEY, run_id INTEGER REFERENCES runs(id), source TEXT, entity TEXT, key TEXT,
                                  op TEXT, field TEXT, before TEXT, after TEXT)
            """)
        let insert = try file.prepare("INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)")
        let copy: (ChangeRow) throws -> Void = { change in
            func optional(_ text: String?) -> StoredValue { text.map { StoredValue.text(ExportText.clean($0)) } ?? .null }
            // The store's id: a row keeps it from night to night (a replica applying changesets trusts it).
            insert.bind(1, .integer(change.id))
            insert.bind(2, .integer(change.runID))
            insert.bind(3, ExportText.clean(change.source))
            insert.bind(4, ExportText.clean(change.entity))
            insert.bind(5, ExportText.clean(change.key))
            insert.bind(6, change.op)
            insert.bind(7, optional(change.field))
            insert.bind(8, optional(change.before))
            insert.bind(9, optional(change.after))
            try insert.run()
        }
        if let runs {
            // One indexed read per run: the file never scans the years of log it leaves out.
            for run in runs { try store.forEachChange(runID: run, order: .insertion, copy) }
        } else {
            try store.forEachChange(runID: nil, order: .insertion, copy)
        }
        try file.execute("CREATE INDEX changes_by_run ON changes(run_id)")
        try file.execute("CREATE INDEX changes_by_record ON changes(entity, key)")
    }

    /// The runs up to the exported one, with their summed counters (NULL for a
    /// run that stored none). Returns each run's `started_at` as the table has it.
    @discardableResult
    static func copyRuns(through runID: Int64, store: any SnapshotStore, into file: SQLiteFile) throws -> [Int64: String] {
        try file.execute("""
            CREATE TABLE runs (id INTEGER PRIMARY KEY, job TEXT, night INTEGER, started_at TEXT, finished_at TEXT, status TEXT,
                               added INTEGER, changed INTEGER, removed INTEGER, unchanged INTEGER, pages INTEGER, requests INTEGER)
            """)
        for summary in try store.runSummaries(through: runID) {
            let run = summary.run, counts = summary.counts
            func count(_ value: (SourceCounts) -> Int) -> StoredValue { counts.map { .integer(Int64(value($0))) } ?? .null }
            // Times formatted by SQLite, as they always were: the same text to the second.
            try file.execute("""
                INSERT INTO runs VALUES (?, ?, ?, strftime('%Y-%m-%dT%H:%M:%SZ', ?, 'unixepoch'),
                                         strftime('%Y-%m-%dT%H:%M:%SZ', ?, 'unixepoch'), ?, ?, ?, ?, ?, ?, ?)
                """, [.integer(run.id), .text(run.job), run.night.map { .integer(Int64($0)) } ?? .null,
                      .real(run.startedAt.timeIntervalSince1970), run.finishedAt.map { .real($0.timeIntervalSince1970) } ?? .null,
                      .text(run.status.rawValue), count(\.added), count(\.changed), count(\.removed), count(\.unchanged),
                      count(\.pages), count(\.requests)])
        }
        var times: [Int64: String] = [:]
        try file.forEachRow("SELECT id, started_at FROM runs") { row in
            if case .integer(let id) = row[0], case .text(let time) = row[1] { times[id] = time }
        }
        return times
    }
}
