import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The "fleet" task of `storesync bench` (issue 17): one night of an
/// iTunes Search job crawled from `storesync simulate` by a single process
/// into SQLite, then by 1, 2 and 4 worker processes into one PostgreSQL
/// (a fresh database each time), first with the simulator's per-client rate
/// limit binding (each worker is its own client, by User-Agent), then with no
/// limit, where the figures are the cost of the store rather than the wait.
extension Benchmark {
    /// The night every run of the task crawls: search terms × countries
    /// scopes of `pagesPerScope` pages each, so scopes are alike and no worker
    /// is left with the one long scope.
    struct FleetNight {
        static let terms = ["news", "history", "science", "comedy", "music", "sports", "business", "health"]
        static let countries = ["us", "gb", "ca"]
        static let pageSize = 50
        static let pagesPerScope = 20
        /// Enough podcasts that every term matches more than a scope's pages.
        static let podcasts = 20_000
        static var scopes: Int { terms.count * countries.count }
    }

    /// The task's name in the table: one per simulator.
    package static func fleetTask(limited: Bool, requestsPerMinute: Double) -> String {
        limited ? String(format: "fleet night, %.0f req/min per client", requestsPerMinute) : "fleet night, no limit"
    }

    /// The tool of the rows of `workers` worker processes on PostgreSQL.
    package static func fleetTool(workers: Int) -> String {
        workers == 1 ? "PostgreSQL, 1 worker" : "PostgreSQL, \(workers) workers"
    }

    /// The targets on this run's fleet rows. With the per-client limit
    /// binding, N workers finish within ``fleetBound(workers:)`` of one
    /// worker's time; with no limit, one PostgreSQL worker's time per page is
    /// within ``postgresPageBound`` of the single SQLite process's (the
    /// `storesync` row of the task).
    package static func fleetTargets(_ rows: [Row]) -> [Target] {
        var targets: [Target] = []
        for task in Set(rows.map(\.task)).sorted() where task.hasPrefix("fleet night, ") {
            let own = rows.filter { $0.task == task }
            guard let one = own.first(where: { $0.tool == fleetTool(workers: 1) }), one.median > 0 else { continue }
            if task == fleetTask(limited: false, requestsPerMinute: 0) {
                guard let sqlite = own.first(where: { $0.tool == "storesync" }), sqlite.median > 0,
                      one.records > 0, sqlite.records > 0 else { continue }
                let pg = one.median / Double(one.records), lite = sqlite.median / Double(sqlite.records)
                targets.append(Target(
                    what: String(format: "fleet, no limit: PostgreSQL's time per page ≤ %.1f× SQLite's", postgresPageBound),
                    met: pg <= postgresPageBound * lite,
                    detail: String(format: "%.1f ms vs %.1f ms a page = %.2f×", 1000 * pg, 1000 * lite, pg / lite)))
                continue
            }
            for row in own {
                guard let workers = fleetWorkers(row.tool), workers > 1 else { continue }
                let bound = fleetBound(workers: workers)
                targets.append(Target(
                    what: String(format: "%@: %d workers ≤ %.2f× 1 worker's time", task, workers, bound),
                    met: row.median <= bound * one.median,
                    detail: String(format: "%.1f s vs %.1f s = %.2f× (bound %.2f×)", row.median, one.median,
                                   row.median / one.median, bound)))
            }
        }
        return targets
    }

    /// The share of one worker's time N workers may take: issue 27's for 4
    /// and 8 (0.30×, 0.16×: the apply overlapping the crawl, so little is left
    /// after it), issue 17's 1.25/N for any other number.
    package static func fleetBound(workers: Int) -> Double {
        switch workers {
        case 4: 0.30
        case 8: 0.16
        default: 1.25 / Double(workers)
        }
    }

    /// How much a PostgreSQL page may cost against a SQLite page (issue 27).
    package static let postgresPageBound = 1.3

    /// The number of workers a fleet row's tool names, if it is one.
    static func fleetWorkers(_ tool: String) -> Int? {
        guard tool.hasPrefix("PostgreSQL, ") else { return nil }
        return Int(tool.dropFirst("PostgreSQL, ".count).prefix { $0.isNumber })
    }

    /// What one process's `--json` run report says: pages fetched (every
    /// source's; a worker reports its run's, the whole fleet's) and requests
    /// refused as throttled (a worker's own).
    package struct RunFigures: Sendable, Equatable {
        package var pages = 0
        package var throttled = 0

        /// Figures from a run report (docs/cli-json.md); nil if it is not one.
        package init?(report: [UInt8]) {
            guard let json = try? JSONParser.parse(report), let sources = json["sources"]?.arrayValue else { return nil }
            pages = sources.reduce(0) { $0 + Int($1["pages"]?.intValue ?? 0) }
            throttled = Int(json["requests"]?["throttled"]?.intValue ?? 0)
        }

        package init(pages: Int, throttled: Int) {
            self.pages = pages
            self.throttled = throttled
        }
    }

    /// The job every run of the task crawls; `store` is filled in per run.
    func fleetJob(name: String, base: String, store: String, clientRequestsPerMinute: Double?) throws -> String {
        let path = "\(work)/fleet-\(name).yml"
        try """
            name: bench-fleet
            store: \(store)
            output: \(work)/out-fleet
            http:
              concurrency: 4
              # The service's per-client limit, where it has one, as deploy/README tells
              # users to set it (each worker is its own client): the worker then paces its
              # requests rather than learning the limit from refusals. A refused request
              # still waits its Retry-After and is tried again.
              defaultRequestsPerMinute: \(clientRequestsPerMinute.map { String(format: "%g", $0) } ?? "1000000")
              maxAttempts: 20
            sources:
              - name: podcasts
                kind: itunes-search
                baseURL: \(base)
                media: podcast
                terms: [\(FleetNight.terms.joined(separator: ", "))]
                countries: [\(FleetNight.countries.joined(separator: ", "))]
                pageSize: \(FleetNight.pageSize)
                maxResults: \(FleetNight.pageSize * FleetNight.pagesPerScope)
            """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    /// Runs the fleet task: PostgreSQL in a temporary folder, two simulators
    /// (with and without the per-client limit), and every run against each.
    func fleet() throws -> [Row] {
        guard let postgres = try BenchPostgres.start(log: log) else { return [] }
        defer { postgres.stop() }
        let rate = options.clientRequestsPerMinute
        var rows: [Row] = []
        for limited in [true, false] {
            let task = Self.fleetTask(limited: limited, requestsPerMinute: rate)
            let arguments = ["--podcasts", "\(FleetNight.podcasts)"]
                + (limited ? ["--client-requests-per-minute", String(format: "%g", rate)] : [])
            let (simulator, base) = try startSimulator(arguments)
            defer {
                simulator.terminate()
                simulator.waitUntilExit()
            }
            log("\(task): \(FleetNight.scopes) search scopes of \(FleetNight.pagesPerScope) pages, "
                + "1 SQLite process, then \(options.fleetWorkers.map(String.init).joined(separator: ", ")) PostgreSQL workers")
            let limit = limited ? rate : nil
            let sqlite = try fleetSQLite(task: task, base: base, clientRequestsPerMinute: limit)
            if let sqlite { rows.append(sqlite) }
            for workers in options.fleetWorkers {
                if let row = try fleetWorkers(task: task, workers: workers, base: base, postgres: postgres,
                                              clientRequestsPerMinute: limit, expectedPages: sqlite?.records) {
                    rows.append(row)
                }
            }
            // Ratios to one worker, where both were measured.
            if let one = rows.first(where: { $0.task == task && $0.tool == Self.fleetTool(workers: 1) })?.median, one > 0 {
                for index in rows.indices where rows[index].task == task && Self.fleetWorkers(rows[index].tool) != nil {
                    rows[index].note += String(format: "; %.2f× 1 worker's time", rows[index].median / one)
                }
            }
        }
        return rows
    }

    /// The single process on SQLite, as a night runs today.
    func fleetSQLite(task: String, base: String, clientRequestsPerMinute: Double?) throws -> Row? {
        let store = "\(work)/fleet.sqlite"
        let job = try fleetJob(name: "sqlite", base: base, store: store, clientRequestsPerMinute: clientRequestsPerMinute)
        let report = "\(work)/fleet-sqlite.json"
        var times: [Double] = []
        var peak = 0
        var figures = RunFigures(pages: 0, throttled: 0)
        for _ in 0..<options.repetitions {
            retire(store, output: "\(work)/out-fleet")
            let m = try ProcessMeasure.run([options.executable, "run", job, "-q", "--no-progress", "--json",
                                            "--set", "http.userAgent=storesync-bench-single"],
                                           stdoutPath: report, stderrPath: stderrLog)
            guard m.exitCode == 0 || m.exitCode == 2,
                  let read = RunFigures(report: Array((try? Data(contentsOf: URL(fileURLWithPath: report))) ?? Data())) else {
                log("  \(task) · SQLite: exit code \(m.exitCode), skipped (see \(stderrLog))")
                return nil
            }
            times.append(m.seconds)
            peak = max(peak, m.peakRSS)
            figures = read
        }
        return fleetRow(task: task, tool: "storesync", times: times, peak: peak, figures: figures,
                        note: "1 process, SQLite")
    }

    /// `workers` processes of one fleet on a fresh PostgreSQL database, each its own client.
    func fleetWorkers(task: String, workers: Int, base: String, postgres: BenchPostgres, clientRequestsPerMinute: Double?,
                      expectedPages: Int?) throws -> Row? {
        var times: [Double] = []
        var peak = 0
        var figures = RunFigures(pages: 0, throttled: 0)
        for repetition in 0..<options.repetitions {
            let fleet = "bench-\(task.hasSuffix("no limit") ? "open" : "limited")-\(workers)-\(repetition)"
            let database = fleet.replacingOccurrences(of: "-", with: "_")
            let job = try fleetJob(name: "pg", base: base, store: try postgres.createDatabase(database),
                                   clientRequestsPerMinute: clientRequestsPerMinute)
            let commands = (1...workers).map { index in
                (argv: [options.executable, "run", job, "--worker", "--fleet", fleet, "--worker-name", "worker-\(index)",
                        "-q", "--no-progress", "--json", "--set", "http.userAgent=storesync-bench-worker-\(index)"],
                 stdoutPath: "\(work)/fleet-worker-\(index).json")
            }
            let (seconds, each) = try ProcessMeasure.runTogether(commands, stderrPath: stderrLog)
            var sum = RunFigures(pages: 0, throttled: 0)
            for (command, m) in zip(commands, each) {
                let report = Array((try? Data(contentsOf: URL(fileURLWithPath: command.stdoutPath))) ?? Data())
                guard m.exitCode == 0 || m.exitCode == 2, let read = RunFigures(report: report) else {
                    log("  \(task) · \(Self.fleetTool(workers: workers)): a worker exited \(m.exitCode), skipped (see \(stderrLog))")
                    return nil
                }
                // A worker's report counts the pages of the whole fleet's run (the
                // store's counts), but only its own requests.
                sum.pages = max(sum.pages, read.pages)
                sum.throttled += read.throttled
                peak = max(peak, m.peakRSS)
            }
            times.append(seconds)
            figures = sum
        }
        var note = workers == 1 ? "1 process, PostgreSQL" : "\(workers) processes, one PostgreSQL"
        if let expectedPages, expectedPages != figures.pages {
            note += "; MISMATCH: SQLite fetched \(expectedPages) pages"
        }
        return fleetRow(task: task, tool: Self.fleetTool(workers: workers), times: times, peak: peak, figures: figures, note: note)
    }

    /// A row whose `records` are the night's pages (so the table's rate column is pages/s).
    func fleetRow(task: String, tool: String, times: [Double], peak: Int, figures: RunFigures, note: String) -> Row {
        let median = times.sorted()[times.count / 2]
        log(String(format: "  %@ · %@: median %.2f s over %d run(s), %d pages, %d throttled", task, tool, median, times.count,
                   figures.pages, figures.throttled))
        return Row(task: task, tool: tool, median: median, records: figures.pages, peakRSS: peak, runs: times.count,
                   note: Self.fleetNote(note, pages: figures.pages, seconds: median, throttled: figures.throttled))
    }

    /// A fleet row's note: what ran, pages and pages/s, how many requests the simulator refused.
    package static func fleetNote(_ what: String, pages: Int, seconds: Double, throttled: Int) -> String {
        String(format: "%@; %d pages, %.1f pages/s; %d throttled (429)", what, pages, Double(pages) / max(seconds, 1e-9), throttled)
    }

    /// `storesync simulate` in a process of its own on a free port, with
    /// `arguments` added; returns it and its base URL. The caller terminates it.
    func startSimulator(_ arguments: [String]) throws -> (process: Process, base: String) {
        let simulator = Process()
        simulator.executableURL = URL(fileURLWithPath: options.executable)
        simulator.arguments = ["simulate", "--port", "0", "--night", "1"] + arguments
        let banner = Pipe()
        simulator.standardOutput = banner
        simulator.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try simulator.run()
        // The first line names the address: "… serving http://127.0.0.1:PORT".
        var text = ""
        while !text.contains("\n") {
            let chunk = banner.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        guard let range = text.range(of: "serving "),
              let base = text[range.upperBound...].split(whereSeparator: \.isWhitespace).first else {
            simulator.terminate()
            simulator.waitUntilExit()
            throw Failure(description: "storesync simulate did not print its address (got: \(text))")
        }
        return (simulator, String(base))
    }
}

/// A throwaway PostgreSQL server for the fleet task: `initdb` into a
/// temporary folder, a Unix socket there (no TCP port), durability off
/// (a benchmark's data need not survive a crash; the cost measured is the
/// store's, not the disk's flushes), stopped and removed by ``stop()`` or,
/// if the benchmark dies first, by a watchdog that sees its pipe close.
/// The approach of the tests' TemporaryPostgres; Bench cannot depend on TestSupport.
final class BenchPostgres: Sendable {
    let directory: String
    let bin: String
    /// runuser -u postgres when running as root (PostgreSQL refuses root).
    let prefix: [String]
    let logPath: String

    private init(directory: String, bin: String, prefix: [String]) {
        self.directory = directory
        self.bin = bin
        self.prefix = prefix
        logPath = directory + "/commands.log"
    }

    /// PostgreSQL's programs: the newest Debian version, else found in PATH.
    static func binDirectory() -> String? {
        let programs = ["initdb", "pg_ctl", "postgres", "psql"]
        func complete(_ dir: String) -> Bool { programs.allSatisfy { FileManager.default.isExecutableFile(atPath: "\(dir)/\($0)") } }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []).compactMap(Int.init).sorted(by: >)
        if let version = versions.first(where: { complete("\(root)/\($0)/bin") }) { return "\(root)/\(version)/bin" }
        return ProcessMeasure.which("pg_ctl").map { ($0 as NSString).deletingLastPathComponent }.flatMap { complete($0) ? $0 : nil }
    }

    /// Starts a server, or returns nil (saying why) where PostgreSQL is not installed.
    static func start(log: (String) -> Void) throws -> BenchPostgres? {
        guard let bin = binDirectory() else {
            log("fleet: PostgreSQL not found (Debian: apt-get install -y postgresql), task skipped")
            return nil
        }
        var owner: (uid: uid_t, gid: gid_t)?
        if getuid() == 0 {
            guard let entry = getpwnam("postgres") else {
                throw Benchmark.Failure(description: "fleet: running as root, PostgreSQL must run as the user postgres, and there is none")
            }
            owner = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        // Short: a Unix socket's path is limited to ~100 bytes.
        var template = Array("/tmp/ssbench-pg-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Benchmark.Failure(description: "fleet: could not make a folder in /tmp: \(String(cString: strerror(errno)))")
        }
        let directory = String(cString: made)
        if let owner { chown(directory, owner.uid, owner.gid) }
        let server = BenchPostgres(directory: directory, bin: bin,
                                   prefix: owner == nil ? [] : [ProcessMeasure.which("runuser") ?? "/usr/sbin/runuser", "-u", "postgres", "--"])
        // Before anything that can fail, so a half-made server is stopped and its folder removed too.
        try server.startWatchdog()
        try server.run(server.prefix + ["\(bin)/initdb", "-D", "\(directory)/data", "-U", "postgres", "-A", "trust",
                                        "-E", "UTF8", "--locale=C", "--no-sync"], what: "initdb")
        let settings = ["unix_socket_directories = '\(directory)'", "listen_addresses = ''", "fsync = off",
                        "synchronous_commit = off", "full_page_writes = off", "max_connections = 100"]
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: "\(directory)/data/postgresql.conf"))
        handle.seekToEndOfFile()
        handle.write(Data(("\n# storesync bench\n" + settings.joined(separator: "\n") + "\n").utf8))
        try handle.close()
        // The close-inherited wrapper: the postmaster must not hold any of our descriptors open.
        try server.run([shell, "-c", closeInherited + #"; exec "$@""#, "sh"] + server.prefix
                           + ["\(bin)/pg_ctl", "start", "-D", "\(directory)/data", "-l", "\(directory)/server.log",
                              "-w", "-t", "120", "-s"], what: "pg_ctl start")
        log("fleet: PostgreSQL (\(bin)) on a Unix socket in \(directory)")
        return server
    }

    /// A new empty database; its URL for a job's `store:` (the superuser, trusted on the socket).
    func createDatabase(_ name: String) throws -> String {
        try run(prefix + ["\(bin)/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", directory, "-U", "postgres",
                          "-d", "postgres", "-c", "CREATE DATABASE \(name)"], what: "CREATE DATABASE \(name)")
        return "postgres://postgres@/\(name)?host=\(directory)"
    }

    /// Drops a database made by ``createDatabase(_:)`` if it is there (its disk space back).
    func dropDatabase(_ name: String) throws {
        try run(prefix + ["\(bin)/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-h", directory, "-U", "postgres",
                          "-d", "postgres", "-c", "DROP DATABASE IF EXISTS \(name)"], what: "DROP DATABASE \(name)")
    }

    /// Stops the server at once and removes its folder.
    func stop() {
        _ = try? run(prefix + ["\(bin)/pg_ctl", "stop", "-D", "\(directory)/data", "-m", "immediate", "-w", "-s"], what: "pg_ctl stop")
        try? FileManager.default.removeItem(atPath: directory)
    }

    func run(_ argv: [String], what: String) throws {
        let m = try ProcessMeasure.run(argv, stdoutPath: logPath + ".out", stderrPath: logPath)
        guard m.exitCode == 0 else {
            let output = [logPath + ".out", logPath, directory + "/server.log"]
                .compactMap { try? String(contentsOfFile: $0, encoding: .utf8) }.joined(separator: "\n")
            throw Benchmark.Failure(description: "fleet: \(what) exited \(m.exitCode):\n\(output.suffix(2000))")
        }
    }

    /// A shell that waits on a socket only this process holds open: when the
    /// benchmark ends, however it ends, the read returns and the shell stops
    /// the server (if it still runs) and removes the folder.
    private func startWatchdog() throws {
        var fds: [Int32] = [0, 0]
        #if canImport(Glibc)
        // Close-on-exec from the start, so no process started meanwhile inherits the end we keep.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw Benchmark.Failure(description: "fleet: socketpair failed: \(String(cString: strerror(errno)))")
        }
        #else
        guard pipe(&fds) == 0 else { throw Benchmark.Failure(description: "fleet: pipe failed") }
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        #endif
        func quoted(_ text: String) -> String { "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'" }
        let stopCommand = (prefix + ["\(bin)/pg_ctl", "stop", "-D", "\(directory)/data", "-m", "immediate", "-w"]).map(quoted)
            .joined(separator: " ")
        let script = Self.closeInherited + "; read _; if [ -f \(quoted(directory + "/data/postmaster.pid")) ]; then "
            + "\(stopCommand) >/dev/null 2>&1; fi; rm -rf \(quoted(directory))"
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let words: [String] = [Self.shell, "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, Self.shell, &actions, nil, argv + [nil], environ)
        close(fds[0])
        guard status == 0 else {
            close(fds[1])
            throw Benchmark.Failure(description: "fleet: could not start the watchdog shell: \(String(cString: strerror(status)))")
        }
        // fds[1] stays open on purpose until this process ends.
    }

    static let shell = FileManager.default.isExecutableFile(atPath: "/bin/bash") ? "/bin/bash" : "/bin/sh"
    /// Closes every descriptor above 2 that the shell inherited.
    static let closeInherited = #"for fd in /proc/self/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"; done"#
}
