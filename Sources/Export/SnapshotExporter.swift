import Catalog
import Foundation
import GRDB
import Logging
import Snapshot

/// What an export is made from: one run's view of the snapshot.
public struct ExportContext: Sendable {
    public var store: SnapshotStore
    public var runID: Int64
    public var jobName: String
    /// Every time written into a file comes from here, never from "now", so
    /// the same snapshot always gives byte-identical files (Invariant 4).
    public var runDate: Date
    public var outputDirectory: String

    public init(store: SnapshotStore, runID: Int64, jobName: String, runDate: Date, outputDirectory: String) {
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
public enum SnapshotExporter {
    /// Writes every export, each to a temporary file renamed into place; the
    /// first failure stops the exports and leaves that file's previous version intact.
    public static func export(_ specs: [ExportSpec], context: ExportContext, logger: Logger) throws(StoreSyncError) -> [ExportedFile] {
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
                throw .exportFailed(path: "\(spec)", reason: "\(error)")
            }
        }
        for file in files { logger.debug("exported \(file.path) (\(file.rows) rows, \(file.bytes) bytes)") }
        return files
    }

    /// The entities present in the snapshot, in a stable order.
    static func entities(_ db: Database) throws -> [EntityKind] {
        try String.fetchAll(db, sql: "SELECT DISTINCT entity FROM records ORDER BY entity").compactMap(EntityKind.init(rawValue:))
    }

    static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? 0
    }
}

/// The consumer database: one table per entity with typed columns and the
/// raw payload, plus the change log and the runs, separate from the snapshot
/// so readers (sqlite3, Datasette) never hold a lock on the live store.
enum SQLiteExport {
    static func write(to url: URL, context: ExportContext) throws -> ExportedFile {
        let temporary = try AtomicFile.temporaryURL(for: url)
        var rows = 0
        do {
            let queue = try DatabaseQueue(path: temporary.path)
            try queue.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA journal_mode = OFF")
                try db.execute(sql: "ATTACH DATABASE ? AS snap", arguments: [context.store.path])
                try db.inTransaction {
                    let entities = try SnapshotExporter.entities(db)
                    for entity in entities {
                        rows += try copyEntity(entity, db: db)
                    }
                    if entities.contains(.chartEntry) {
                        try createChartView(db, entities: entities)
                    }
                    try db.execute(sql: """
                        CREATE TABLE changes (run_id INTEGER, source TEXT, entity TEXT, key TEXT, op TEXT, field TEXT, before TEXT, after TEXT);
                        INSERT INTO changes SELECT run_id, source, entity, key, op, field, before, after FROM snap.changes ORDER BY id;
                        CREATE INDEX changes_by_run ON changes(run_id);
                        CREATE TABLE runs (id INTEGER PRIMARY KEY, job TEXT, night INTEGER, started_at TEXT, finished_at TEXT, status TEXT,
                                           added INTEGER, changed INTEGER, removed INTEGER, unchanged INTEGER, pages INTEGER, requests INTEGER);
                        INSERT INTO runs
                        SELECT r.id, r.job, r.night,
                               strftime('%Y-%m-%dT%H:%M:%SZ', r.started_at, 'unixepoch'),
                               strftime('%Y-%m-%dT%H:%M:%SZ', r.finished_at, 'unixepoch'),
                               r.status, sum(s.added), sum(s.changed), sum(s.removed), sum(s.unchanged), sum(s.pages), sum(s.requests)
                        FROM snap.runs r LEFT JOIN snap.run_sources s ON s.run_id = r.id
                        WHERE r.id <= ? GROUP BY r.id ORDER BY r.id;
                        """, arguments: [context.runID])
                    return .commit
                }
                try db.execute(sql: "DETACH DATABASE snap")
            }
            try queue.close()
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
    static func createChartView(_ db: Database, entities: [EntityKind]) throws {
        let items = entities.filter { $0 != .chartEntry && EntityColumns.columns(for: $0).contains { $0.name == "name" } }
        let joins = items.enumerated().map { index, entity in
            "LEFT JOIN \"\(entity.rawValue)\" i\(index) ON c.item_entity = '\(entity.rawValue)' AND i\(index).key = c.item_key"
        }
        let name = "COALESCE(" + (items.indices.map { "i\($0).name" } + ["c.name"]).joined(separator: ", ") + ")"
        try db.execute(sql: """
            CREATE VIEW charts AS
            SELECT c.chart, c.country, c.genre_id, c.genre, c.rank, c.item_entity, c.item_key, \(name) AS name, c.artist, c.link
            FROM "chart-entry" c \(joins.joined(separator: " "))
            ORDER BY c.chart, c.country, c.genre_id, c.rank
            """)
    }

    static func copyEntity(_ entity: EntityKind, db: Database) throws -> Int {
        let table = "\"\(entity.rawValue)\""
        let columns = EntityColumns.columns(for: entity)
        var definitions = ["source TEXT NOT NULL", "key TEXT NOT NULL"]
        definitions += columns.map { "\"\($0.name)\" \($0.kind.rawValue)" }
        definitions += ["payload TEXT NOT NULL", "PRIMARY KEY (source, key)"]
        try db.execute(sql: "CREATE TABLE \(table) (\(definitions.joined(separator: ", ")))")
        // Bound parameters for every value; only the fixed column list is spliced.
        let selected = columns.map { _ in "json_extract(payload, ?)" }
        let sql = "INSERT INTO \(table) SELECT source, key, \((selected + ["payload"]).joined(separator: ", ")) FROM snap.records WHERE entity = ? ORDER BY source, key"
        try db.execute(sql: sql, arguments: StatementArguments(columns.map(\.jsonPath) + [entity.rawValue]))
        let count = db.changesCount
        if columns.contains(where: { $0.name == "name" }) {
            try db.execute(sql: "CREATE INDEX \"\(entity.rawValue)_by_name\" ON \(table)(name)")
        }
        return count
    }
}
