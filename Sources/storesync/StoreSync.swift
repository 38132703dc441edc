import ArgumentParser
import Catalog
import Foundation
import Synchronization
import Logging
import Snapshot
import SyncEngine

/// Exit codes, documented in README.md.
enum ExitStatus: Int32 {
    case ok = 0
    case failed = 1
    case partial = 2
    case locked = 3
    case invalidJob = 64
    /// A worker lost its claim to another (EX_TEMPFAIL: nothing is wrong; a scheduler may start it again).
    case leaseLost = 75
}

@main
struct StoreSync: AsyncParsableCommand {
    /// Sets up the allocator before the run's threads allocate (``MallocArenas``), then parses and runs.
    static func main() async {
        MallocArenas.limit()
        await main(nil)
    }

    static let configuration = CommandConfiguration(
        commandName: "storesync",
        abstract: "Crawl the iTunes Store and a marketplace, store only what changed, and export it.",
        discussion: """
            A job file (YAML) names the sources to crawl, the snapshot to diff against and the exports to write.
            jobs/demo.yml runs everything against the embedded simulator, with no network.

            Exit codes: 0 ok · 1 failed · 2 partial (something was left out; nothing was removed on the strength of it) \
            · 3 another run holds the store's lock · 64 invalid job file or arguments \
            · 75 a worker's claim on a scope went to another worker (it committed nothing after that) \
            · 130/143/129 stopped by SIGINT/SIGTERM/SIGHUP (a run stops at a page boundary and resumes next time).
            """,
        version: StoreSyncVersion.current,
        subcommands: [Run.self, Status.self, Changes.self, History.self, Export.self, Validate.self, Migrate.self, Simulate.self, BenchCommand.self,
                      BenchTask.self]
    )
}

struct LoggingOptions: ParsableArguments {
    @Flag(name: .shortAndLong, help: "Log every page (debug level).")
    var verbose = false

    @Flag(name: .shortAndLong, help: "For cron: print nothing when all went well; otherwise the summary, warnings and errors on standard error.")
    var quiet = false

    @Option(name: .customLong("log-format"), help: "text (default) or json: JSON Lines on standard error, one object per log line, for log shippers.")
    var logFormat: LogFormat = .text

    enum LogFormat: String, ExpressibleByArgument, CaseIterable {
        case text, json
    }

    func bootstrap() {
        let level: Logger.Level = verbose ? .debug : (quiet ? .warning : .info)
        let format = logFormat
        standardErrorIsJSON.store(format == .json, ordering: .relaxed)
        LoggingSystem.bootstrap { label in
            switch format {
            case .text:
                var handler = StreamLogHandler.standardError(label: label)
                handler.logLevel = level
                return ProgressAwareLogHandler(wrapped: handler)
            case .json:
                var handler = JSONLogHandler.standardError(label: label)
                handler.logLevel = level
                return ProgressAwareLogHandler(wrapped: handler)
            }
        }
    }
}

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a job: crawl every source, diff against the snapshot, write what changed, export.",
        discussion: """
            Only records that were added, changed or removed are written; unchanged records cost no write. \
            A record is removed only after complete crawls of its scope missed it (removal.afterMisses, default 2) \
            and never when more than removal.maxRatio of a scope (default 10%) would go. \
            A run that is killed resumes where it stopped on the next start. With a `simulator:` section, \
            each run crawls the next simulated night. The summary goes to standard output, logs to standard error. \
            With -q a run that ends ok prints nothing at all (cron mails only the nights that need a look); \
            a partial or failed one prints its summary, warnings and errors on standard error.
            """
    )

    @Argument(help: "The job file, e.g. jobs/demo.yml.", completion: .file(extensions: ["yml", "yaml"]))
    var job: String

    @Option(help: "Crawl this simulated night instead of the next one (jobs with a simulator only).")
    var night: Int?

    @Flag(help: "Crawl and diff against a throwaway copy of the store: list the changes a run would write (as `changes` does; JSON with --json) and the requests made; write nothing.")
    var dryRun = false

    @Option(help: ArgumentHelp("Stop the crawl at a page boundary after this many minutes (overrides http.deadlineMinutes): the run ends with status deadline (exit 2), exports nothing, and the next run resumes it.", valueName: "minutes"))
    var deadline: Double?

    @Flag(help: "No progress display (it is a bar on a terminal, a line every 10 s otherwise).")
    var noProgress = false

    @Flag(help: "Print the run report as JSON on standard output and nothing else there (the schema of report.json: docs/cli-json.md; with --dry-run, the changes it would write); the summary goes to standard error unless -q.")
    var json = false

    @Flag(help: "Start over with a new store where one with history is missing or empty (refused otherwise); refused on a store that holds history.")
    var newStore = false

    @Option(help: ArgumentHelp("Hand over to this job the store of the job named (a renamed job, or a store moved between jobs on purpose); refused unless the store's runs are that job's, so it cannot stay in a crontab.", valueName: "job"))
    var takeOverFrom: String?

    @Flag(help: "Be one of several workers of a night on a PostgreSQL store: claim scopes with leases, crawl them, write no exports (the night owes them until `storesync export` writes them, after). Exits 75 if another worker took over one of its scopes.")
    var worker = false

    @Option(help: ArgumentHelp("The night every worker of it names alike (default: $STORESYNC_FLEET, else today's UTC date, with -night-N after it when --night N is given).", valueName: "key"))
    var fleet: String?

    @Option(help: ArgumentHelp("This worker's name in the store and in messages (default: worker-$JOB_COMPLETION_INDEX, else host-pid).", valueName: "name"))
    var workerName: String?

    @Option(help: ArgumentHelp("Seconds a worker may go silent before its scopes move to another.", valueName: "seconds"))
    var lease: Double = 60

    @Option(help: ArgumentHelp("Workers sharing the job's per-host request budget: each gets 1/N of http.requestsPerMinute (default: $STORESYNC_FLEET_SIZE, else 1). Leave 1 where the service limits each client, as the iTunes Store does.", valueName: "N"))
    var fleetSize: Int?

    @OptionGroup var overrides: JobOverrideOptions

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        // The dry run's store copy is gone when it ends, and the report is read from the store.
        if worker && dryRun { throw ValidationError("--worker cannot be combined with --dry-run") }
        if !worker && (fleet != nil || workerName != nil || fleetSize != nil) {
            throw ValidationError("--fleet, --worker-name and --fleet-size need --worker")
        }
        if let fleetSize, !Self.fleetSizes.contains(fleetSize) {
            throw ValidationError("--fleet-size must be between 1 and \(Self.fleetSizes.upperBound), got \(fleetSize)")
        }
    }

    func run() async throws {
        logging.bootstrap()
        let logger = Logger(label: "storesync")
        do {
            let spec = try Wiring.load(job, sets: overrides.sets)
            let signals = GracefulStop(job: spec)
            defer { withExtendedLifetime(signals) {} }
            var options = RunOptions(night: night, dryRun: dryRun, newStore: newStore, stop: signals.stop)
            // A dry run lists what it would write, in `changes`' form: JSON on stdout with --json, else text.
            if dryRun { options.dryRunChanges = (json ? .json : .text, STDOUT_FILENO) }
            options.takeOverFrom = takeOverFrom
            options.deadlineMinutes = deadline
            if worker { options.worker = Self.workerOptions(fleet: fleet, name: workerName, lease: lease, size: fleetSize, night: night) }
            if !noProgress, !logging.quiet {
                let display = logging.logFormat == .json ? ProgressDisplay(logger: logger) : ProgressDisplay()
                ProgressDisplay.active.withLock { $0 = display }
                options.progress = { event in display.handle(event) }
            }
            let report = try await Runner(job: spec, environment: Wiring.environment(for: spec, logger: logger)).run(options)
            if json && dryRun {
                // Its changes are stdout's one document (no report: the store copy is gone).
                if !logging.quiet || report.outcome != .ok { printToStandardError(report.summaryText) }
            } else if json {
                print(try MachineOutput.runReportJSON(job: spec, runID: report.runID, report: report), terminator: "")
                if !logging.quiet || report.outcome != .ok { printToStandardError(report.summaryText) }
            } else if !logging.quiet {
                print(report.summaryText)
            } else if report.outcome != .ok {
                // Not stdout: a cron wrapper that keeps stdout for data still sees why the night needs a look.
                printToStandardError(report.summaryText)
            } else {
                // An ok run has none today; should one ever carry a warning, -q must not hide it.
                for warning in report.warnings { printToStandardError("warning: \(warning)", level: .warning) }
                for error in report.errors { printToStandardError("error: \(error)", level: .error) }
            }
            // The exit code the report, the metrics, the webhook and `status` also give.
            if let code = report.nightOutcome.exitCode, code != 0 { throw ExitCode(code) }
        } catch let error as StoreSyncError {
            let status = exitStatus(for: error).rawValue
            // Refused before any report (the lock, the job, the store): stdout still says so.
            if json { print(MachineOutput.refusedRunJSON(jobName: jobName, error: error), terminator: "") }
            printError(error.description)
            throw ExitCode(status)
        }
    }

    /// The job's name as its file gives it, for an account of a run that never started.
    private var jobName: String? {
        (try? Wiring.load(job, sets: overrides.sets))?.name
    }
}

extension Run {
    /// Workers a fleet may name with `--fleet-size` (each gets 1/N of the per-host budget).
    static let fleetSizes = 1...10_000

    /// A worker's identity from its flags, else from what schedulers set: a
    /// Kubernetes Indexed Job gives each pod JOB_COMPLETION_INDEX.
    /// The default fleet key is today's UTC date, and the simulated night
    /// when `--night` names one: two nights crawled on one day are two fleets.
    static func workerOptions(fleet: String?, name: String?, lease: Double, size: Int?, night: Int? = nil,
                              environment: [String: String] = ProcessInfo.processInfo.environment) -> WorkerOptions {
        let day = ISO8601DateFormatter.string(from: Date(), timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
        let fleetKey = fleet ?? environment["STORESYNC_FLEET"] ?? (day + (night.map { "-night-\($0)" } ?? ""))
        let workerName = name ?? environment["JOB_COMPLETION_INDEX"].map { "worker-\($0)" }
            ?? "\(ProcessInfo.processInfo.hostName)-\(getpid())"
        // The environment's value is held to the flag's range: a fleet of 10^9
        // would make every worker's pause between two requests years long.
        let fleetSize = min(fleetSizes.upperBound, max(1, size ?? environment["STORESYNC_FLEET_SIZE"].flatMap(Int.init) ?? 1))
        return WorkerOptions(fleet: fleetKey, name: workerName, leaseSeconds: lease, fleetSize: fleetSize)
    }
}

struct Status: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Show a job's last runs and where each of its scopes stands.",
        discussion: "Reads the store only; safe while a run is going on."
    )

    @Argument(help: "The job file.", completion: .file(extensions: ["yml", "yaml"]))
    var job: String

    @Option(help: "How many runs to show.")
    var runs = 10

    @Flag(help: "Print the runs and scopes as JSON (docs/cli-json.md).")
    var json = false

    func run() async throws {
        do {
            let spec = try Wiring.load(job)
            let status = try JobStatus.load(job: spec, runs: runs)
            print(json ? MachineOutput.statusJSON(status) : status.text, terminator: json ? "" : "\n")
        } catch {
            // The account `run --json` gives for the same refusal (a lost store, an invalid job).
            if json { print(MachineOutput.refusedRunJSON(jobName: (try? Wiring.load(job))?.name, error: error), terminator: "") }
            printError(error.description)
            throw ExitCode(exitStatus(for: error).rawValue)
        }
    }
}

struct Changes: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List what a run changed: every added and removed record and every changed field.",
        discussion: """
            Reads the store only (a read-only store file is enough) and takes no lock, so it is safe while a run \
            is going on. Default: the last finished run. --csv prints the columns of changes.csv, --json the \
            schema in docs/cli-json.md.
            """
    )

    @Argument(help: "The job file.", completion: .file(extensions: ["yml", "yaml"]))
    var job: String

    @Option(name: .customLong("run"), help: "The run whose changes to list (`storesync status` shows the ids); default the last finished run.")
    var runID: Int64?

    @Flag(help: "As JSON.")
    var json = false

    @Flag(help: "As CSV, the columns of changes.csv.")
    var csv = false

    func validate() throws {
        if json && csv { throw ValidationError("choose one of --json and --csv") }
    }

    func run() async throws {
        do {
            let spec = try Wiring.load(job)
            _ = try MachineOutput.writeChanges(job: spec, runID: runID, format: json ? .json : csv ? .csv : .text,
                                               to: FileHandle.standardOutput.fileDescriptor)
        } catch {
            printError(error.description)
            throw ExitCode(exitStatus(for: error).rawValue)
        }
    }
}

struct History: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Tell one entity's story: every version the change log keeps, and what changed in each.",
        discussion: """
            Reads the store only (a read-only store file is enough) and takes no lock, so it is safe while a run \
            is going on. A removed entity is told too, for as long as the store's retention keeps its change log. \
            --json prints the schema in docs/cli-json.md.
            """
    )

    @Argument(help: "The job file.", completion: .file(extensions: ["yml", "yaml"]))
    var job: String

    @Argument(help: "The entity: podcast, episode, listing, chart-entry, … (as in changes.csv's entity column).")
    var entity: String

    @Argument(help: "The entity's key (the key column of its table).")
    var key: String

    @Flag(help: "As JSON.")
    var json = false

    func run() async throws {
        do {
            let spec = try Wiring.load(job)
            _ = try MachineOutput.writeHistory(job: spec, entity: entity, key: key, json: json,
                                               to: FileHandle.standardOutput.fileDescriptor)
        } catch {
            printError(error.description)
            throw ExitCode(exitStatus(for: error).rawValue)
        }
    }
}

struct Export: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Write a job's exports again from the snapshot, without crawling.",
        discussion: """
            Uses the last finished run: its changes, its date and its report. The same snapshot always gives \
            byte-identical files, so this is safe to run after changing an export's options. A night that still \
            owes its exports (a fleet's, once its workers are done; a run killed while it exported) gets them \
            as its run would have written them: the artwork mirror filled, enclosures checked, the reports, \
            retention and the webhook; the exit code is the night's, as `run` gives it.

            --as-of RUN|DATE writes the exports as they were after an earlier run (its number, or a UTC date: \
            the last run begun on that day or before) into a folder of their own, byte for byte as that night wrote them: \
            the database, the CSV files, changes.csv and OPML rebuilt from the snapshot's change log, the feeds \
            as that night published them (kept, gzip, in <output>/.storesync-published); not the artwork \
            mirror, changesets or reports. Nothing of the live output is touched.
            """
    )

    @Argument(help: "The job file.", completion: .file(extensions: ["yml", "yaml"]))
    var job: String

    @Option(name: .customLong("as-of"), help: "Write the exports as they were after this run: its number, or a UTC date (YYYY-MM-DD).")
    var asOf: String?

    @Option(help: "With --as-of: the folder to write them to (default: <output>/as-of/<run>).", completion: .directory)
    var into: String?

    @OptionGroup var overrides: JobOverrideOptions

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        logging.bootstrap()
        var lintFailed = false
        var nightExit: Int32?
        do {
            let spec = try Wiring.load(job, sets: overrides.sets)
            let signals = GracefulStop(job: spec, exitAtFirst: true)
            defer { withExtendedLifetime(signals) {} }
            let logger = Logger(label: "storesync")
            if let asOf {
                let written = try Reexport.asOf(job: spec, selector: asOf, into: into.map { URL(fileURLWithPath: $0).standardizedFileURL.path }, logger: logger)
                if !logging.quiet {
                    print("as of run \(written.run):")
                    for line in Reexport.summaryLines(written.files) { print(line) }
                }
                return
            }
            // A night that owes its exports (a fleet's, whose workers write none) ends here, as its run would have.
            if let report = try await Runner(job: spec, environment: Wiring.environment(for: spec, logger: logger)).exportOwedNight() {
                if !logging.quiet { print(report.summaryText) } else if report.outcome != .ok { printError(report.summaryText) }
                nightExit = report.nightOutcome.exitCode ?? 0
            } else {
                let files = try Reexport.run(job: spec, logger: logger)
                let lint = Reexport.lintLines(files, outputDirectory: spec.outputDirectory)
                // -q: only what needs a look (the lint's warnings, on stderr).
                if !logging.quiet {
                    for file in files where !file.withheld {
                        print("wrote \(file.path) (\(file.rows) rows, \(file.bytes) bytes)")
                    }
                    for line in lint.notices { print("note: \(line)") }
                }
                for line in lint.warnings { printError("warning: \(line)") }
                lintFailed = !lint.warnings.isEmpty
            }
        } catch {
            printError(error.description)
            throw ExitCode(exitStatus(for: error).rawValue)
        }
        // The exit code the night's report, metrics, webhook and `status` give.
        if let nightExit, nightExit != 0 { throw ExitCode(nightExit) }
        // A feed that breaks Apple's rules gets the same verdict as in a run: finished with warnings.
        if lintFailed { throw ExitCode(RunStatus.partial.exitCode) }
    }
}

struct Migrate: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Move a snapshot whole into a new store: a SQLite file into PostgreSQL, or back.",
        discussion: """
            Every table is copied with its ids (runs, changes, rows), so the next run resumes, diffs and \
            exports exactly as it would have on the old store. The new store must be empty; both run locks \
            are held during the copy, which is one transaction on the new side and is checked row count \
            by row count. A PostgreSQL URL takes its password from PGPASSWORD or a ${VAR} in the URL.
            """
    )

    @Option(help: "The store to copy from: a SQLite file, or postgres://USER@HOST/DB.")
    var from: String

    @Option(help: "The new, empty store to copy into: postgres://USER@HOST/DB, or a SQLite file.")
    var to: String

    func run() throws {
        do {
            let summary = try StoreMigration.migrate(from: from, to: to)
            print("migrated \(summary.from) → \(summary.to)"
                  + (summary.lastRun.map { " (through run \($0))" } ?? " (no run yet)"))
            for (table, rows) in summary.tables { print("  \(table): \(rows) rows") }
        } catch {
            printError(error.description)
            throw ExitCode(exitStatus(for: error).rawValue)
        }
    }
}

struct Validate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Check a job file and report every problem with its file, line and key.",
        discussion: "Exits 0 when the job is valid, 64 otherwise. Nothing is crawled or written."
    )

    @Argument(help: "The job file to check.", completion: .file(extensions: ["yml", "yaml"]))
    var job: String

    @OptionGroup var overrides: JobOverrideOptions

    func run() async throws {
        do {
            let spec = try Wiring.load(job, sets: overrides.sets)
            print("\(job): valid — job '\(spec.name)', \(spec.sources.count) source(s), \(spec.exports.count) export(s); "
                  + "store \(spec.storePath), output \(spec.outputDirectory)"
                  + (spec.simulator == nil ? "" : "; runs the embedded simulator"))
            // What did not come from the file, and the secrets by variable name only.
            for override in spec.overrides { print("  override: \(override)") }
            for header in spec.http.headers { print("  header: \(header)") }
        } catch {
            printError(error.description)
            throw ExitCode(exitStatus(for: error).rawValue)
        }
    }
}

func exitStatus(for error: StoreSyncError) -> ExitStatus {
    ExitStatus(rawValue: NightOutcome.refused(error).exitCode ?? 1) ?? .failed
}

func printError(_ message: String) {
    printToStandardError("storesync: " + message, level: .error)
}

/// Set by `--log-format json`: what is written for people on standard error
/// goes there as JSON log entries too, so a log shipper reads only JSON.
let standardErrorIsJSON = Atomic<Bool>(false)

/// One line (or block) on standard error, as written, with a newline; with
/// `--log-format json`, one JSON log entry at `level` holding it.
func printToStandardError(_ text: String, level: Logger.Level = .notice) {
    if standardErrorIsJSON.load(ordering: .relaxed) {
        let line = JSONLogHandler.line(date: Date(), level: level, message: text, label: "storesync", module: "storesync", metadata: [:])
        FileHandle.standardError.write(Data(line.utf8))
        return
    }
    FileHandle.standardError.write(Data((text + "\n").utf8))
}
