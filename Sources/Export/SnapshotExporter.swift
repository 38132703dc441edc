import Catalog
import Foundation
import Logging
import Snapshot

/// What an export is made from: one run's view of the snapshot.
package struct ExportContext: Sendable {
    package var store: any SnapshotStore
    package var runID: Int64
    package var jobName: String
    /// Every time written into a file comes from here, never from "now", so
    /// the same snapshot always gives byte-identical files (Invariant 4).
    package var runDate: Date
    package var outputDirectory: String

    package init(store: any SnapshotStore, runID: Int64, jobName: String, runDate: Date, outputDirectory: String) {
        self.store = store
        self.runID = runID
        self.jobName = jobName
        self.runDate = runDate
        self.outputDirectory = outputDirectory
    }

    func url(_ relative: String) -> URL {
        URL(fileURLWithPath: outputDirectory).appendingPathComponent(relative)
    }

    /// Values for `{date}` and `{job}` in file-name templates.
    var templateValues: [String: String] {
        ["date": FeedExport.dateStamp(runDate), "job": jobName]
    }
}

/// A file an export wrote.
public struct ExportedFile: Sendable, Equatable {
    public var path: String
    public var bytes: Int64
    /// Rows or items written.
    public var rows: Int
}

/// Runs a job's exports against the snapshot.
package enum SnapshotExporter {
    /// Writes every export, each to a temporary file renamed into place; the
    /// first failure stops the exports and leaves that file's previous version intact.
    package static func export(_ specs: [ExportSpec], context: ExportContext, logger: Logger) throws(StoreSyncError) -> [ExportedFile] {
        var files: [ExportedFile] = []
        for spec in specs {
            do {
                switch spec {
                case .sqlite(let path):
                    files.append(try SQLiteExport.write(to: context.url(path), context: context))
                case .csvTables(let directory, let options):
                    files += try CSVExport.writeTables(directory: context.url(directory), options: options, context: context)
                case .csvChanges(let path, let options):
                    files.append(try CSVExport.writeChanges(to: context.url(path), options: options, context: context))
                case .feed(let feed):
                    files += try FeedExport.write(feed, context: context)
                case .opml(let opml):
                    files += try FeedExport.writeOPML(opml, context: context)
                case .runReport(let path):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    files.append(try RunReportExport.writeJSON(to: url, context: context))
                case .metrics(let path):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    files.append(try RunReportExport.writeMetrics(to: url, context: context))
                }
            } catch let error as StoreSyncError {
                throw error
            } catch {
                throw .exportFailed(path: context.url(spec.target).path, reason: "\(error)",
                                    remedy: "The previous file was left intact; the next run (or `storesync export`) writes it again",
                                    cause: error as? any Error & Sendable)
            }
        }
        for file in files { logger.debug("exported \(file.path) (\(file.rows) rows, \(file.bytes) bytes)") }
        return files
    }

    static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? 0
    }
}

/// The consumer database: one table per entity with typed columns and the
/// raw payload, plus the change log and the runs, separate from the snapshot
/// so readers (sqlite3, Datasette) never hold a lock on the live store.
///
/// Filled from the store's typed reads and written through Snapshot's
/// ``SQLiteFile``; the SQL that shapes this file stays here, because the
/// file's layout is an export format (like the CSV columns), not the store's
/// schema: a PostgreSQL store exports the very same file.
enum SQLiteExport {
    static func write(to url: URL, context: ExportContext) throws -> ExportedFile {
        let temporary = try AtomicFile.temporaryURL(for: url)
        var rows = 0
        do {
            try SQLiteFile.create(at: temporary.path) { file in
                let entities = try context.store.entities()
                for entity in entities {
                    rows += try copyEntity(entity, store: context.store, into: file)
                }
                if entities.contains(.chartEntry) {
                    try createChartView(file, entities: entities)
                }
                try copyChanges(store: context.store, into: file)
                try copyRuns(through: context.runID, store: context.store, into: file)
            }
            // Built whole under a temporary name, then published like every
            // other export: readers see the old file or the new one.
            try AtomicFile.publish(temporary: temporary, to: url)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw StoreSyncError.exportFailed(path: url.path, reason: "\(error)")
        }
        return ExportedFile(path: url.path, bytes: SnapshotExporter.fileSize(url), rows: rows)
    }

    /// `charts`: every chart slot with its item's name from the item's own
    /// table where storesync has it (the chart's name otherwise), ranked.
    static func createChartView(_ file: SQLiteFile, entities: [EntityKind]) throws {
        let items = entities.filter { $0 != .chartEntry && EntityColumns.columns(for: $0).contains { $0.name == "name" } }
        let joins = items.enumerated().map { index, entity in
            "LEFT JOIN \"\(entity.rawValue)\" i\(index) ON c.item_entity = '\(entity.rawValue)' AND i\(index).key = c.item_key"
        }
        let name = "COALESCE(" + (items.indices.map { "i\($0).name" } + ["c.name"]).joined(separator: ", ") + ")"
        try file.execute("""
            CREATE VIEW charts AS
            SELECT c.chart, c.country, c.genre_id, c.genre, c.rank, c.item_entity, c.item_key, \(name) AS name, c.artist, c.link
            FROM "chart-entry" c \(joins.joined(separator: " "))
            ORDER BY c.chart, c.country, c.genre_id, c.rank
            """)
    }

    /// The entity's table, its rows by source and key; returns how many.
    static func copyEntity(_ entity: EntityKind, store: any SnapshotStore, into file: SQLiteFile) throws -> Int {
        let table = "\"\(entity.rawValue)\""
        let columns = EntityColumns.columns(for: entity)
        var definitions = ["source TEXT NOT NULL", "key TEXT NOT NULL"]
        definitions += columns.map { "\"\($0.name)\" \($0.kind.rawValue)" }
        definitions += ["payload TEXT NOT NULL", "PRIMARY KEY (source, key)"]
        try file.execute("CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        // Values are bound; only the fixed table and column names are spliced. The
        // column affinities type each value as the store read it from the payload.
        let insert = try file.prepare("INSERT INTO \(table) VALUES (\(Array(repeating: "?", count: columns.count + 3).joined(separator: ", ")))")
        var count = 0
        try store.forEachRecord(of: entity, columns: columns, order: .sourceAndKey) { record in
            insert.bind(1, record.source)
            insert.bind(2, record.key)
            for (index, value) in record.values.enumerated() { insert.bind(index + 3, value) }
            insert.bind(columns.count + 3, record.payload)
            try insert.run()
            count += 1
        }
        if columns.contains(where: { $0.name == "name" }) {
            try file.execute("CREATE INDEX \"\(entity.rawValue)_by_name\" ON \(table)(name)")
        }
        return count
    }

    /// Every run's change log, in the order it was logged.
    static func copyChanges(store: any SnapshotStore, into file: SQLiteFile) throws {
        try file.execute("CREATE TABLE changes (run_id INTEGER, source TEXT, entity TEXT, key TEXT, op TEXT, field TEXT, before TEXT, after TEXT)")
        let insert = try file.prepare("INSERT INTO changes VALUES (?, ?, ?, ?, ?, ?, ?, ?)")
        try store.forEachChange(runID: nil, order: .insertion) { change in
            func optional(_ text: String?) -> StoredValue { text.map(StoredValue.text) ?? .null }
            insert.bind(1, .integer(change.runID))
            insert.bind(2, change.source)
            insert.bind(3, change.entity)
            insert.bind(4, change.key)
            insert.bind(5, change.op)
            insert.bind(6, optional(change.field))
            insert.bind(7, optional(change.before))
            insert.bind(8, optional(change.after))
            try insert.run()
        }
        try file.execute("CREATE INDEX changes_by_run ON changes(run_id)")
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
