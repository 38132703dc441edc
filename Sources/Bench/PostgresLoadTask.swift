import Foundation

/// The "postgres" task of `storesync bench` (issue 27): the night-1 load of
/// the generated catalogue into an empty PostgreSQL store, beside the same
/// load into SQLite (the load task's `storesync` row), and a CSV export of
/// every row from the store it loaded, for its time and peak memory.
extension Benchmark {
    /// The tool of this task's rows.
    package static let postgresTool = "storesync on PostgreSQL"

    /// How much a first load into PostgreSQL may cost against one into SQLite (issue 27).
    package static let postgresLoadBound = 1.5

    /// Peak memory of `export` from a PostgreSQL store (issue 27), whatever the store's size.
    package static let postgresExportPeakBytes = 250 << 20

    func postgresLoad(_ files: DataFiles) throws -> [Row] {
        guard let postgres = try BenchPostgres.start(log: log) else { return [] }
        defer { postgres.stop() }
        var rows: [Row] = []
        let output = "\(work)/out-postgres"
        var database = ""
        var attempt = 0
        log("night-1 load of \(label) records into an empty PostgreSQL store")
        let loadJob = "\(work)/postgres-load.yml"
        if let row = try measure(task: "night-1 load", tool: Self.postgresTool, records: n, prepare: {
            // One store at a time on disk: the one before is dropped (a 1M store is gigabytes).
            if attempt > 0 { try postgres.dropDatabase("load_\(attempt)") }
            attempt += 1
            database = try postgres.createDatabase("load_\(attempt)")
            try? FileManager.default.removeItem(atPath: output)
            _ = try job(name: "postgres-load", file: files.night1, store: database, output: output)
        }, [options.executable, "run", loadJob, "-q", "--no-progress"]) { rows.append(row) }
        guard !database.isEmpty else { return rows }
        log("CSV export of the \(label) rows of the PostgreSQL store")
        let exportJob = try job(name: "postgres-csv", file: files.night1, store: database, output: output,
                                exports: "exports:\n  - { kind: csv, directory: csv, neutralizeFormulas: true }")
        if let row = try measure(task: "CSV export", tool: Self.postgresTool, records: n,
                                 [options.executable, "export", exportJob, "-q"]) { rows.append(row) }
        return rows
    }

    /// The task's targets: the load against SQLite's in this run; the export's peak memory.
    package static func postgresTargets(_ rows: [Row]) -> [Target] {
        var targets: [Target] = []
        if let postgres = rows.first(where: { $0.task == "night-1 load" && $0.tool == postgresTool }),
           let sqlite = rows.first(where: { $0.task == "night-1 load" && $0.tool == "storesync" }), sqlite.median > 0 {
            targets.append(Target(
                what: String(format: "first load into PostgreSQL ≤ %.1f× into SQLite", postgresLoadBound),
                met: postgres.median <= postgresLoadBound * sqlite.median,
                detail: String(format: "%.2f s vs %.2f s = %.2f×", postgres.median, sqlite.median, postgres.median / sqlite.median)))
        }
        if let export = rows.first(where: { $0.task == "CSV export" && $0.tool == postgresTool }) {
            targets.append(Target(
                what: String(format: "export from a PostgreSQL store of %d records: peak memory ≤ %d MB", export.records,
                             postgresExportPeakBytes >> 20),
                met: export.peakRSS <= postgresExportPeakBytes,
                detail: String(format: "%.0f MB, %.1f s", Double(export.peakRSS) / 1_048_576, export.median)))
        }
        return targets
    }
}
