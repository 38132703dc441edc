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
/// - `changes` (the change log, canonical field names) and `runs`.
/// - FTS5 full-text search over names and descriptions (`{table}_fts`), and
///   views for the common questions (``ConsumerSchema/views(entities:)``).
///
/// Filled from the store's typed reads and written through Snapshot's
/// ``SQLiteFile``; the SQL that shapes this file stays here, because the
/// file's layout is an export format (like the CSV columns), not the store's
/// schema: a PostgreSQL store exports the very same file.
enum SQLiteExport {
    static func write(to url: URL, historyDays: Int? = nil, context: ExportContext) throws -> ExportedFile {
        let temporary = try AtomicFile.temporaryURL(for: url)
        var rows = 0
        do {
            try SQLiteFile.create(at: temporary.path) { file in
                rows = try fill(file, historyDays: historyDays, context: context)
            }
            // Built whole under a temporary name, then published like every
            // other export: readers see the old file or the new one.
            try AtomicFile.publish(temporary: temporary, to: url)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw StoreSyncError.exportFailed(path: url.path, reason: "\(error)", cause: error)
        }
        return ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows)
    }

    /// Creates and fills every table, index and view; returns the entity and record rows written.
    static func fill(_ file: SQLiteFile, historyDays: Int? = nil, context: ExportContext) throws -> Int {
        let store = context.store
        let stored = try store.entities()
        // Every consumer table, and any other entity an older store still holds.
        let tables = ConsumerSchema.entityTables + stored.filter { !ConsumerSchema.entityTables.contains($0) && $0 != .record }
        let chartItems = stored.contains(.chartEntry) ? try chartItemEntities(store) : []
        var rows = 0
        for entity in tables {
            rows += try copyEntity(entity, foreignKeys: ConsumerSchema.foreignKeys(of: entity, chartItems: chartItems),
                                   read: stored.contains(entity), store: store, into: file)
        }
        try createVendors(file)
        if stored.contains(.record) {
            rows += try RecordTables.copy(store: store, into: file, logger: context.logger)
        }
        try copyRuns(through: context.runID, store: store, into: file)
        try copyChanges(of: try historyRuns(days: historyDays, through: context.runID, store: store), store: store, into: file)
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
    static func copyEntity(_ entity: EntityKind, foreignKeys: [ConsumerSchema.ForeignKey], read: Bool,
                           store: any SnapshotStore, into file: SQLiteFile) throws -> Int {
        let name = ConsumerSchema.table(for: entity)
        let quoted = ConsumerSchema.quoted
        let table = quoted(name)
        let columns = EntityColumns.columns(for: entity)
        var definitions = ["\(quoted(ConsumerSchema.keyColumn)) TEXT PRIMARY KEY"]
        for column in columns {
            let key = foreignKeys.first { $0.column == column.name }
            definitions.append("\(quoted(column.name)) \(column.kind.rawValue)"
                + (key.map { " REFERENCES \(quoted($0.table))(\(quoted($0.targetColumn)))" } ?? ""))
        }
        definitions.append("\(quoted(ConsumerSchema.extraColumn)) TEXT")
        try file.execute("CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        var count = 0
        if read {
            // Values are bound; only the model's names are spliced, quoted. The column
            // affinities type each value as the store read it from the record.
            let placeholders = Array(repeating: "?", count: columns.count + 2).joined(separator: ", ")
            let insert = try file.prepare("INSERT INTO \(table) VALUES (\(placeholders)) ")
            let holdsKey = columns.map { ConsumerSchema.holdsKey($0.name) }
            try store.forEachRecord(of: entity, columns: columns, order: .insertion) { record in
                // Text cleaned as in every export (ExportText): the same text as the CSV files.
                insert.bind(1, ExportText.clean(record.key))
                for (index, value) in record.values.enumerated() {
                    insert.bind(index + 2, holdsKey[index] && value == .text("") ? .null : ExportText.clean(value))
                }
                insert.bind(columns.count + 2, ExtraMembers.json(payload: record.payload, columns: columns, values: record.values)
                    .map { StoredValue.text(ExportText.clean($0)) } ?? .null)
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
            CREATE TABLE changes (run_id INTEGER REFERENCES runs(id), source TEXT, entity TEXT, key TEXT, op TEXT,
                                  field TEXT, before TEXT, after TEXT)
            """)
        let insert = try file.prepare("INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        let copy: (ChangeRow) throws -> Void = { change in
            func optional(_ text: String?) -> StoredValue { text.map { StoredValue.text(ExportText.clean($0)) } ?? .null }
            insert.bind(1, .integer(change.runID))
            insert.bind(2, ExportText.clean(change.source))
            insert.bind(3, ExportText.clean(change.entity))
            insert.bind(4, ExportText.clean(change.key))
            insert.bind(5, change.op)
            insert.bind(6, optional(change.field))
            insert.bind(7, optional(change.before))
            insert.bind(8, optional(change.after))
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

    /// The runs up to the exported one, with their summed counters (NULL for a run that stored none).
    static func copyRuns(through runID: Int64, store: any SnapshotStore, into file: SQLiteFile) throws {
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
    }
}
