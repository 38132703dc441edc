import Catalog
import Foundation
import Snapshot

/// `storesync bench`: storesync beside the peers of `../shared/bench` on the
/// same generated files, each tool a separate process measured whole
/// (wall time, peak RSS), several repetitions, medians compared in one table.
package struct Benchmark: Sendable {
    package struct Options: Sendable {
        /// Night-1 records (1M in full, 100k with `--quick`).
        package var records: Int
        package var repetitions: Int
        /// Where the generated files, databases and outputs go (reused across invocations).
        package var workDirectory: String
        /// `../shared/bench`: the generator and the peers.
        package var peersDirectory: String
        /// This storesync executable.
        package var executable: String
        /// Only these tasks (empty = all).
        package var tasks: Set<String>
        /// Products and podcasts each in the exports task's store (200k in full, 20k with `--quick`).
        package var exportStoreSize: Int
        /// The demo job the exports task runs (its exports, over a larger simulator).
        package var demoJob: String
        /// The fleet task's worker counts, each a separate measurement.
        package var fleetWorkers: [Int]
        /// The fleet task simulator's per-client limit (the iTunes Store's is about 20).
        package var clientRequestsPerMinute: Double

        package init(records: Int, repetitions: Int, workDirectory: String, peersDirectory: String, executable: String,
                    tasks: Set<String> = [], exportStoreSize: Int = 200_000, demoJob: String = "jobs/demo.yml",
                    fleetWorkers: [Int] = [1, 2, 4, 8], clientRequestsPerMinute: Double = 600) {
            self.records = records
            self.repetitions = repetitions
            self.workDirectory = workDirectory
            self.peersDirectory = peersDirectory
            self.executable = executable
            self.tasks = tasks
            self.exportStoreSize = exportStoreSize
            self.demoJob = demoJob
            self.fleetWorkers = fleetWorkers
            self.clientRequestsPerMinute = clientRequestsPerMinute
        }
    }

    /// One row of the result table.
    package struct Row: Sendable {
        package var task: String
        package var tool: String
        package var median: Double
        package var records: Int
        package var peakRSS: Int
        package var runs: Int
        package var note: String

        package init(task: String, tool: String, median: Double, records: Int, peakRSS: Int, runs: Int, note: String) {
            self.task = task
            self.tool = tool
            self.median = median
            self.records = records
            self.peakRSS = peakRSS
            self.runs = runs
            self.note = note
        }
    }

    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    let options: Options
    let log: @Sendable (String) -> Void

    package init(options: Options, log: @escaping @Sendable (String) -> Void) {
        self.options = options
        self.log = log
    }

    var work: String { options.workDirectory }
    var n: Int { options.records }
    var label: String { Self.label(records: n) }
    var stderrLog: String { "\(work)/bench-stderr.log" }
    func peer(_ name: String) -> String { "\(options.peersDirectory)/\(name)" }
    func wants(_ task: String) -> Bool { options.tasks.isEmpty || options.tasks.contains(task) }

    /// Runs every task and returns the table rows.
    package func run() throws -> [Row] {
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        try checkDiskSpace()
        var rows: [Row] = []
        // Only these tasks read the generated nights (the others crawl the simulator).
        if wants("load") || wants("apply") || wants("csv") || wants("rss") || wants("postgres") {
            guard FileManager.default.fileExists(atPath: peer("gen_catalog.py")) else {
                throw Failure(description: "\(peer("gen_catalog.py")) not found: the benchmark generates its data with it (pass --peers DIR)")
            }
            let files = try prepareData()
            let cLoad = compileCPeer()
            if wants("load") || wants("apply") || wants("csv") { rows += try loadAndApply(files, cLoad: cLoad) }
            if wants("csv") { rows += try csvExport(cLoad: cLoad) }
            if wants("rss") { rows += try rss(files) }
            if wants("postgres") { rows += try postgresLoad(files) }
        }
        if wants("http") { rows += try endToEndHTTP() }
        if wants("exports") { rows += try exports() }
        if wants("fleet") { rows += try fleet() }
        return rows
    }

    /// Parses a size such as `100k`, `1M`, `10M` or `250000`.
    package static func records(scale: String) -> Int? {
        let text = scale.trimmingCharacters(in: .whitespaces).lowercased()
        let multiplier = text.hasSuffix("k") ? 1_000 : text.hasSuffix("m") ? 1_000_000 : 1
        let digits = multiplier == 1 ? Substring(text) : text.dropLast()
        guard let value = Double(digits), value > 0, value * Double(multiplier) <= 1e9 else { return nil }
        return Int(value * Double(multiplier))
    }

    /// The label of a size in tables and file names: `100k`, `1M`, `2.5M`.
    package static func label(records n: Int) -> String {
        if n >= 1_000_000, n % 100_000 == 0 {
            return n % 1_000_000 == 0 ? "\(n / 1_000_000)M" : String(format: "%.1fM", Double(n) / 1e6)
        }
        return n % 1000 == 0 ? "\(n / 1000)k" : "\(n)"
    }

    /// Bytes the asked tasks leave in the work folder, per record, measured at
    /// 100k and 1M: three generated nights (~800 B a record each), storesync's
    /// three store copies, the peers' databases and the CSV outputs.
    func bytesNeeded() -> Int {
        var perRecord = wants("load") || wants("apply") || wants("csv") || wants("rss") || wants("postgres") ? 3 * 800 : 0
        // A PostgreSQL store and its write-ahead log, measured at 1M: about 5 KB a record; its CSV export 800 B.
        if wants("postgres") { perRecord += 5_000 + 800 }
        if wants("load") || wants("apply") || wants("csv") { perRecord += 3 * 2_400 + 6 * 750 + 3 * 600 }
        if wants("http") { perRecord += 1_300 }
        return n * perRecord
    }

    /// Refuses at once a size the disk cannot hold (10M records need well over
    /// 100 GB): finding out after an hour of generating data helps nobody.
    func checkDiskSpace() throws {
        guard let free = (try? FileManager.default.attributesOfFileSystem(forPath: work))?[.systemFreeSize] as? Int else { return }
        let needed = bytesNeeded()
        if needed > free {
            throw Failure(description: String(
                format: "%@ records need about %.0f GB in %@ and only %.0f GB are free: pass --work DIR on a larger disk, "
                    + "fewer --task, or a smaller --scale", label, Double(needed) / 1e9, work, Double(free) / 1e9))
        }
    }

    /// How each storesync task grew from the smallest size measured to each
    /// larger one: time and peak memory, against the growth of the catalogue.
    /// Cost should follow the work (churn), not the size of the store.
    package static func growth(_ runs: [(records: Int, rows: [Row])]) -> String {
        let runs = runs.sorted { $0.records < $1.records }
        guard let base = runs.first, runs.count > 1 else { return "" }
        var tasks: [String] = []
        for run in runs { for row in run.rows where row.tool == "storesync" && !tasks.contains(row.task) { tasks.append(row.task) } }
        var lines = [["task"] + runs.map { "\(label(records: $0.records)) s / MB" } + runs.dropFirst().map {
            "×\(label(records: $0.records)) vs \(label(records: base.records)) (\(String(format: "%g", Double($0.records) / Double(base.records)))× the records): time, memory"
        }]
        for task in tasks {
            let own = runs.map { run in run.rows.first { $0.task == task && $0.tool == "storesync" } }
            var line = [task] + own.map { row in
                row.map { String(format: "%.2f / %.0f", $0.median, Double($0.peakRSS) / 1_048_576) } ?? "-"
            }
            for row in own.dropFirst() {
                guard let row, let first = own.first ?? nil, first.median > 0, first.peakRSS > 0 else { line.append("-"); continue }
                line.append(String(format: "%.1f×, %.1f×", row.median / first.median, Double(row.peakRSS) / Double(first.peakRSS)))
            }
            lines.append(line)
        }
        return columns(lines) { _ in true }
    }

    /// `lines` as text columns two spaces apart, each as wide as its widest
    /// cell; a column is padded on the right where `leftAligned` says so
    /// (text), on the left otherwise (figures).
    static func columns(_ lines: [[String]], leftAligned: (_ column: Int) -> Bool) -> String {
        var widths = Array(repeating: 0, count: lines.first?.count ?? 0)
        for line in lines { for (i, cell) in line.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return lines.map { line in
            line.enumerated().map { i, cell in
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return leftAligned(i) ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }

    struct DataFiles {
        var night1: String
        var night2: String
        var truth: String
        /// Night 2 with a tenth of the churn (0.1% changed, 0.05% removed, 0.05% added).
        var lowChurn: String
        var lowChurnTruth: String
    }

    /// Generates the JSON Lines nights once; later invocations reuse them.
    func prepareData() throws -> DataFiles {
        let files = DataFiles(night1: "\(work)/night1-\(label).jsonl", night2: "\(work)/night2-\(label).jsonl",
                              truth: "\(work)/truth-\(label).json", lowChurn: "\(work)/night2-low-\(label).jsonl",
                              lowChurnTruth: "\(work)/truth-low-\(label).json")
        let generator = peer("gen_catalog.py")
        let jobs: [(String, [String])] = [
            (files.night1, ["-n", "\(n)", "--night", "1", "-o", files.night1]),
            (files.night2, ["-n", "\(n)", "--night", "2", "--truth", files.truth, "-o", files.night2]),
            (files.lowChurn, ["-n", "\(n)", "--night", "2", "--changed-pct", "0.1", "--removed-pct", "0.05",
                              "--added-pct", "0.05", "--truth", files.lowChurnTruth, "-o", files.lowChurn]),
        ]
        for (file, arguments) in jobs where !FileManager.default.fileExists(atPath: file) {
            log("generating \((file as NSString).lastPathComponent) with gen_catalog.py …")
            let m = try ProcessMeasure.run(["python3", generator] + arguments, stderrPath: stderrLog)
            guard m.exitCode == 0 else { throw Failure(description: "gen_catalog.py failed (see \(stderrLog))") }
        }
        return files
    }

    /// The C peer, compiled with gcc against libsqlite3 if both are there.
    func compileCPeer() -> String? {
        let binary = "\(work)/c_load"
        if FileManager.default.isExecutableFile(atPath: binary) { return binary }
        guard ProcessMeasure.which("gcc") != nil, FileManager.default.fileExists(atPath: peer("c_load.c")) else { return nil }
        let m = try? ProcessMeasure.run(["gcc", "-O2", "-o", binary, peer("c_load.c"), "-lsqlite3"], stderrPath: stderrLog)
        return m?.exitCode == 0 ? binary : nil
    }

    /// Measures `command` `repetitions` times, running `prepare` before each.
    func measure(task: String, tool: String, records: Int, repetitions: Int? = nil, note: String = "",
                 prepare: () throws -> Void = {}, stdout: String = "/dev/null", check: (() throws -> String?)? = nil,
                 _ command: [String]) throws -> Row? {
        var times: [Double] = []
        var peak = 0
        var checkNote = note
        for _ in 0..<(repetitions ?? options.repetitions) {
            try prepare()
            // Every run starts with nothing left to write back: a copy made by
            // `prepare` (a 1.4 GB store) or by the previous task was still being
            // flushed by the kernel, and billed its I/O to whichever tool ran next.
            sync()
            let m = try ProcessMeasure.run(command, stdoutPath: stdout, stderrPath: stderrLog)
            guard m.exitCode == 0 || (tool == "storesync" && m.exitCode == 2) else {
                log("  \(task) · \(tool): exit code \(m.exitCode), skipped (see \(stderrLog))")
                return nil
            }
            times.append(m.seconds)
            peak = max(peak, m.peakRSS)
            if let check, let problem = try check() { checkNote = problem }
        }
        times.sort()
        let median = times[times.count / 2]
        log(String(format: "  %@ · %@: median %.2f s over %d run(s), peak %.0f MB", task, tool, median, times.count,
                   Double(peak) / 1_048_576))
        return Row(task: task, tool: tool, median: median, records: records, peakRSS: peak, runs: times.count, note: checkNote)
    }

    /// Deletes a database and what lives beside it. A store the benchmark
    /// deletes is retired on purpose, so its history marker goes too: left
    /// behind, it makes the next repetition's load a store that lost its
    /// history, which `run` refuses.
    func remove(_ path: String) {
        for suffix in ["", "-wal", "-shm", ".lock", ".history"] { try? FileManager.default.removeItem(atPath: path + suffix) }
    }

    /// ``remove(_:)`` for a store a job exports from: the job's output folder
    /// keeps a history marker of its own, which refuses a missing store as the
    /// store's own marker does.
    func retire(_ store: String, output: String) {
        remove(store)
        try? FileManager.default.removeItem(atPath: "\(output)/.storesync-history")
    }

    func copyDatabase(_ from: String, _ to: String) throws {
        remove(to)
        try FileManager.default.copyItem(atPath: from, toPath: to)
        for suffix in ["-wal", "-shm"] where FileManager.default.fileExists(atPath: from + suffix) {
            try FileManager.default.copyItem(atPath: from + suffix, toPath: to + suffix)
        }
    }

    /// The path every records-file job reads: a link to the night being
    /// measured, because a user's nightly file keeps its name (the scope is
    /// named after it) while its content changes.
    var catalogLink: String { "\(work)/catalog.jsonl" }

    func pointCatalog(to file: String) throws {
        try? FileManager.default.removeItem(atPath: catalogLink)
        try FileManager.default.createSymbolicLink(atPath: catalogLink, withDestinationPath: file)
    }

    /// A records-file job over `file` (through ``catalogLink``) into `store`;
    /// removals on the first miss so night 2 writes exactly changed + removed + added.
    /// Every such job is one job to storesync (a store belongs to one job): the
    /// night-2 and export jobs run on copies of the night-1 store.
    func job(name: String, file: String, store: String, output: String? = nil, exports: String = "") throws -> String {
        try pointCatalog(to: file)
        let path = "\(work)/\(name).yml"
        try """
            name: bench-records
            store: \(store)
            output: \(output ?? "\(work)/out-records")
            sources:
              - name: catalog
                kind: records-file
                path: \(catalogLink)
                keyField: id
                pageSize: 10000
                removal: { afterMisses: 1, maxRatio: 0.02 }
            \(exports)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// storesync's night-2 rows written and change keys, against the generator's truth.
    func verify(store: String, truth: String) throws -> String? {
        let truthJSON = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: truth))))
        func ids(_ name: String) -> Set<String> {
            Set((truthJSON[name]?.arrayValue ?? []).compactMap { $0.intValue.map(String.init) })
        }
        let expected = ids("changed").count + ids("removed").count + ids("added").count
        // Read-only: the measured store is left exactly as the run left it.
        let snapshot = try SQLSnapshotStore(path: store, readOnly: true)
        guard let run = try snapshot.runs(limit: 1).first?.id else { return "WRONG: no run in \(store)" }
        let written = try snapshot.sourceCounts(runID: run).reduce(0) { $0 + $1.recordRowsWritten }
        var found: [String: Set<String>] = ["added": [], "changed": [], "removed": []]
        try snapshot.forEachChange(runID: run, order: .record) { change in
            // A records-file row's entity is keyed `SOURCE:KEY` (rows of two files never merge); the truth names KEY.
            let key = change.key.split(separator: ":", maxSplits: 1).last.map(String.init) ?? change.key
            found[change.op, default: []].insert(key)
        }
        guard written == expected, found["added"] == ids("added"), found["changed"] == ids("changed"),
              found["removed"] == ids("removed") else {
            return "WRONG: wrote \(written) rows, expected \(expected); changes differ from the truth"
        }
        return "exact: \(written) rows written = truth"
    }

    func loadAndApply(_ files: DataFiles, cLoad: String?) throws -> [Row] {
        var rows: [Row] = []
        let store = "\(work)/storesync.sqlite", loaded = "\(work)/storesync-night1.sqlite"
        let loadJob = try job(name: "load", file: files.night1, store: store)
        log("night-1 load of \(label) records into an empty database")
        if let row = try measure(task: "night-1 load", tool: "storesync", records: n,
                                 prepare: { retire(store, output: "\(work)/out-records"); try pointCatalog(to: files.night1) },
                                 [options.executable, "run", loadJob, "-q", "--no-progress"]) { rows.append(row) }
        try copyDatabase(store, loaded)
        let cDB = "\(work)/c.sqlite", cLoaded = "\(work)/c-night1.sqlite"
        if let cLoad, let row = try measure(task: "night-1 load", tool: "C hash-diff (libsqlite3)", records: n,
                                            prepare: { remove(cDB) }, [cLoad, "load", files.night1, cDB]) {
            rows.append(row)
            try copyDatabase(cDB, cLoaded)
        }
        let pyDB = "\(work)/py.sqlite", pyLoaded = "\(work)/py-night1.sqlite"
        if let row = try measure(task: "night-1 load", tool: "Python sqlite3", records: n, prepare: { remove(pyDB) },
                                 ["python3", peer("py_sqlite.py"), "load", pyDB, files.night1]) {
            rows.append(row)
            try copyDatabase(pyDB, pyLoaded)
        }
        let suDB = "\(work)/su.sqlite", suLoaded = "\(work)/su-night1.sqlite"
        let sqliteUtils = ProcessMeasure.which("sqlite-utils")
        if let sqliteUtils, let row = try measure(task: "night-1 load", tool: "sqlite-utils", records: n, repetitions: 1,
                                                  note: "1 run (slow)", prepare: { remove(suDB) },
                                                  [sqliteUtils, "insert", suDB, "records", files.night1, "--nl", "--pk", "id"]) {
            rows.append(row)
            try copyDatabase(suDB, suLoaded)
        }
        guard wants("apply") || wants("csv") else { return rows }

        let changed = n / 50
        log("night-2 apply (1% changed, 0.5% removed, 0.5% added: \(changed) rows to write)")
        let applyJob = try job(name: "apply", file: files.night2, store: store)
        if let row = try measure(task: "night-2 apply", tool: "storesync", records: n,
                                 prepare: { try copyDatabase(loaded, store); try pointCatalog(to: files.night2) },
                                 check: { try verify(store: store, truth: files.truth) },
                                 [options.executable, "run", applyJob, "-q", "--no-progress"]) { rows.append(row) }
        let night2Store = "\(work)/storesync-night2.sqlite"
        try copyDatabase(store, night2Store)
        if let cLoad, FileManager.default.fileExists(atPath: cLoaded), let row = try measure(
            task: "night-2 apply", tool: "C hash-diff (libsqlite3)", records: n,
            prepare: { try copyDatabase(cLoaded, cDB) }, [cLoad, "hashdiff", files.night2, cDB]) { rows.append(row) }
        if FileManager.default.fileExists(atPath: pyLoaded), let row = try measure(
            task: "night-2 apply", tool: "Python hash-diff", records: n, prepare: { try copyDatabase(pyLoaded, pyDB) },
            ["python3", peer("py_sqlite.py"), "hashdiff", pyDB, files.night2]) { rows.append(row) }
        if let sqliteUtils, FileManager.default.fileExists(atPath: suLoaded), let row = try measure(
            task: "night-2 apply", tool: "sqlite-utils upsert", records: n, repetitions: 1, note: "1 run (slow); never deletes",
            prepare: { try copyDatabase(suLoaded, suDB) },
            [sqliteUtils, "upsert", suDB, "records", files.night2, "--nl", "--pk", "id"]) { rows.append(row) }

        log("night-2 apply with a tenth of the churn (0.1% changed)")
        let lowJob = try job(name: "apply-low", file: files.lowChurn, store: store)
        if let row = try measure(task: "night-2 apply, 0.1% churn", tool: "storesync", records: n,
                                 prepare: { try copyDatabase(loaded, store); try pointCatalog(to: files.lowChurn) },
                                 check: { try verify(store: store, truth: files.lowChurnTruth) },
                                 [options.executable, "run", lowJob, "-q", "--no-progress"]) { rows.append(row) }
        try copyDatabase(night2Store, store)
        return rows
    }

    func csvExport(cLoad: String?) throws -> [Row] {
        var rows: [Row] = []
        log("CSV export of \(label) rows")
        let store = "\(work)/storesync-night2.sqlite"
        guard FileManager.default.fileExists(atPath: store) else { return rows }
        let exportJob = try job(name: "csv", file: "\(work)/night2-\(label).jsonl", store: store,
                                exports: "exports:\n  - { kind: csv, directory: csv, neutralizeFormulas: true }")
        if let row = try measure(task: "CSV export", tool: "storesync", records: n,
                                 [options.executable, "export", exportJob, "-q"]) { rows.append(row) }
        let cDB = "\(work)/c.sqlite"
        if ProcessMeasure.which("sqlite3") != nil, FileManager.default.fileExists(atPath: cDB), let row = try measure(
            task: "CSV export", tool: "sqlite3 -csv", records: n, stdout: "\(work)/sqlite3.csv",
            ["sqlite3", "-csv", cDB, "SELECT * FROM records"]) { rows.append(row) }
        if FileManager.default.fileExists(atPath: cDB), let row = try measure(
            task: "CSV export", tool: "Python csv", records: n,
            ["python3", peer("export_csv.py"), "pycsv", cDB, "\(work)/py.csv"]) { rows.append(row) }
        return rows
    }

    func rss(_ files: DataFiles) throws -> [Row] {
        var rows: [Row] = []
        let items = min(100_000, n)
        log("RSS 2.0 podcast feed of \(items) items")
        if let row = try measure(task: "RSS feed", tool: "storesync", records: items,
                                 [options.executable, "bench-task", "rss", "\(items)", files.night1, "\(work)/storesync.xml"]) {
            rows.append(row)
        }
        for builder in ["lxml", "feedgen", "str"] {
            if let row = try measure(task: "RSS feed", tool: "Python \(builder)", records: items,
                                     ["python3", peer("rss_gen.py"), builder, "\(items)", files.night1, "\(work)/\(builder).xml"]) {
                rows.append(row)
            }
        }
        return rows
    }

    /// End to end over loopback HTTP: `storesync simulate` serves `n`
    /// marketplace products in its own process; storesync crawls them at 200
    /// a page into an empty store. The same pages fetched by curl over one
    /// keep-alive connection (no decoding, no storing) tell how much of the
    /// run is HTTP.
    func endToEndHTTP() throws -> [Row] {
        // The marketplace serves at most 100 products a page (as the
        // simulator does): asking for 200 got 100, so storesync crawled twice
        // the pages curl fetched. Asking for what is served keeps both on the
        // very same URLs.
        let perPage = 100
        let pages = (n + perPage - 1) / perPage
        log("end to end over loopback HTTP: \(label) marketplace products, \(perPage) a page (\(pages) pages)")
        let (simulator, base) = try startSimulator(["--products", "\(n)"])
        defer {
            simulator.terminate()
            simulator.waitUntilExit()
        }
        let store = "\(work)/http.sqlite"
        let path = "\(work)/http.yml"
        try """
            name: bench-http
            store: \(store)
            output: \(work)/out-http
            sources:
              - name: market
                kind: marketplace
                baseURL: \(base)
                itemsPerPage: \(perPage)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        var rows: [Row] = []
        if let row = try measure(task: "HTTP end to end", tool: "storesync", records: n, prepare: { retire(store, output: "\(work)/out-http") },
                                 [options.executable, "run", path, "-q", "--no-progress"]) {
            let written = try SQLSnapshotStore(path: store, readOnly: true).recordCount(of: .listing)
            var row = row
            row.note = String(format: "%.0f pages/s; %d listings stored", Double(pages) / row.median, written)
            rows.append(row)
        }
        if let curl = ProcessMeasure.which("curl"), let row = try measure(
            task: "HTTP end to end", tool: "curl (fetch only)", records: n, note: "the same pages, one keep-alive connection",
            [curl, "-sf", "-o", "/dev/null", "\(base)/api/products?page_no=[1-\(pages)]&items_per_page=\(perPage)"]) {
            rows.append(row)
            if let own = rows.first, own.tool == "storesync" {
                rows[0].note += String(format: "; HTTP ≈ %.0f%% of the run", 100 * row.median / own.median)
            }
        }
        return rows
    }

    /// The peers every full run expects, and the rows that show each one ran.
    static let expectedPeers = [
        "C hash-diff (libsqlite3)", "Python sqlite3", "Python hash-diff", "sqlite-utils", "sqlite-utils upsert",
        "sqlite3 -csv", "Python csv", "Python lxml", "Python feedgen", "Python str", "curl (fetch only)",
    ]

    /// Which peers were measured and which were not found or failed (with the
    /// usual way to get them), so a short table is never mistaken for a full one.
    package static func peerSummary(_ rows: [Row]) -> String {
        let ran = Set(rows.map(\.tool))
        let missing = expectedPeers.filter { !ran.contains($0) }
        var text = "peers measured: " + expectedPeers.filter(ran.contains).joined(separator: ", ")
        if !missing.isEmpty {
            text += "\npeers not measured (not found, failed, or task not asked for): " + missing.joined(separator: ", ")
                + "\n  (pip install sqlite-utils lxml feedgen; apt-get install sqlite3 curl gcc libsqlite3-dev)"
        }
        return text
    }

    /// A target of the benchmark: a ratio against a peer measured in the same
    /// run (absolute seconds vary with the machine; ratios carry over), or a
    /// bound on storesync's own figures.
    package struct Target: Sendable {
        package var what: String
        /// nil when a figure it needs was not measured in this run.
        package var met: Bool?
        package var detail: String
    }

    /// The performance targets (issues 16, 17 and 26), each checked against this run's medians.
    /// A target whose figures were not measured (a task not asked for, a peer
    /// not installed) is left out rather than reported as met.
    package static func targets(_ rows: [Row]) -> [Target] {
        func median(_ task: String, _ tool: String) -> Double? {
            rows.first { $0.task == task && $0.tool == tool }?.median
        }
        var targets: [Target] = []
        /// storesync's median as a fraction of the peer's must be at most `bound`.
        func ratio(_ what: String, _ task: String, _ peer: String, atMost bound: Double) {
            guard let own = median(task, "storesync"), let theirs = median(task, peer), theirs > 0 else { return }
            targets.append(Target(what: what, met: own <= bound * theirs,
                                  detail: String(format: "%.2f s vs %.2f s = %.2f×", own, theirs, own / theirs)))
        }
        ratio("night-1 load ≤ 0.5× C hash-diff", "night-1 load", "C hash-diff (libsqlite3)", atMost: 0.5)
        ratio("night-2 apply ≤ 0.6× C hash-diff", "night-2 apply", "C hash-diff (libsqlite3)", atMost: 0.6)
        if let apply = median("night-2 apply", "storesync"), let su = median("night-2 apply", "sqlite-utils upsert") {
            targets.append(Target(what: "night-2 apply ≥ 15× faster than sqlite-utils upsert", met: su / apply >= 15,
                                  detail: String(format: "%.1f×", su / apply)))
        }
        if let apply = median("night-2 apply", "storesync"), let low = median("night-2 apply, 0.1% churn", "storesync") {
            targets.append(Target(what: "0.1% churn ≤ 25% of the 1% night", met: low <= 0.25 * apply,
                                  detail: String(format: "%.2f s vs %.2f s = %.0f%%", low, apply, 100 * low / apply)))
        }
        ratio("CSV export ≤ 0.5× sqlite3 -csv", "CSV export", "sqlite3 -csv", atMost: 0.5)
        if let rss = median("RSS feed", "storesync"), let lxml = median("RSS feed", "Python lxml") {
            targets.append(Target(what: "RSS ≥ 7× faster than lxml", met: lxml / rss >= 7,
                                  detail: String(format: "%.2f s vs %.2f s = %.1f× faster", rss, lxml, lxml / rss)))
        }
        ratio("HTTP end to end ≤ 2× curl's fetch-only time", "HTTP end to end", "curl (fetch only)", atMost: 2)
        if let exports = rows.first(where: { $0.task.hasPrefix("exports, ") && $0.tool == "storesync" }) {
            targets.append(Target(what: "\(exports.task): peak memory ≤ 250 MB", met: exports.peakRSS <= 250 << 20,
                                  detail: String(format: "%.0f MB, %.1f s", Double(exports.peakRSS) / 1_048_576, exports.median)))
        }
        targets += fleetTargets(rows)
        targets += postgresTargets(rows)
        if let peak = rows.filter({ $0.tool == "storesync" }).max(by: { $0.peakRSS < $1.peakRSS }) {
            targets.append(Target(what: "peak memory ≤ 250 MB on every task", met: peak.peakRSS <= 250 << 20,
                                  detail: String(format: "%.0f MB (%@)", Double(peak.peakRSS) / 1_048_576, peak.task)))
        }
        return targets
    }

    /// The targets as lines: `met` or `missed`, what, and the figures.
    package static func targetVerdicts(_ rows: [Row]) -> String {
        targets(rows).compactMap { target in
            target.met.map { "\($0 ? "met   " : "missed") \(target.what): \(target.detail)" }
        }.joined(separator: "\n")
    }

    /// The result table: each tool's median next to storesync's for the same task.
    package static func table(_ rows: [Row]) -> String {
        var lines = [["task", "tool", "median s", "records/s", "peak RSS MB", "vs storesync", "runs", "note"]]
        for row in rows {
            let own = rows.first { $0.task == row.task && $0.tool == "storesync" }?.median
            lines.append([
                row.task, row.tool, String(format: "%.2f", row.median),
                String(format: "%.0f", Double(row.records) / max(row.median, 1e-9)),
                String(format: "%.0f", Double(row.peakRSS) / 1_048_576),
                own.map { row.tool == "storesync" ? "1.00" : String(format: "%.2f×", row.median / $0) } ?? "-",
                "\(row.runs)", row.note,
            ])
        }
        // Task, tool and note are text; the figures between them line up on the right.
        return columns(lines) { $0 < 2 || $0 == lines[0].count - 1 }
    }
}
