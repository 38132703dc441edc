import Catalog
import Foundation
import GRDB
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SIGTERM/SIGINT and the file-system hygiene around them, tried on the built
/// `storesync` executable as a real second process (issue 15): a signal stops
/// a run at a page boundary, marks it interrupted, prints the summary, leaves
/// no temporaries and exits 128 + the signal; the next run resumes it.
@Suite struct GracefulStopTests {
    /// Every answer waits 100–200 ms, so a run of 20 marketplace pages lasts
    /// seconds: the signal lands mid-crawl, sent once a page is logged.
    static let yaml = """
        name: sigtest
        store: store/snapshot.sqlite
        output: out
        simulator: { seed: 7, podcasts: 20, products: 400, faults: ["latency:200"] }
        sources:
          - name: market
            kind: marketplace
            itemsPerPage: 20
        exports:
          - { kind: csv, directory: csv }
          - { kind: changes-csv, path: changes.csv }
          - { kind: run-report, path: report.json }
        """

    /// Three times the pages: a dry run's second night is cheaper than a first
    /// (nothing is written), and on a loaded machine 20 pages could end before
    /// the signal sent after the first one arrived.
    static let longYAML = yaml.replacingOccurrences(of: "products: 400", with: "products: 1200")

    /// Forty products, no latency: for what needs a store, not a slow crawl.
    static let fastYAML = yaml.replacingOccurrences(of: "products: 400, faults: [\"latency:200\"]", with: "products: 40")

    /// SIGHUP (a closed terminal or ssh session) is a request to stop, exactly as SIGTERM is.
    @Test(.timeLimit(.minutes(3)), arguments: [(SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")])
    func aStopSignalStopsARunAtAPageBoundaryAndTheNextRunResumesIt(_ signalNumber: Int32, _ name: String) async throws {
        let job = try KillTestJob(label: "sig-run-\(name)", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let run = try Started(job, ["run", job.jobPath, "--night", "1", "-v", "--no-progress"])
        try await run.signal(signalNumber, onceStderrHolds: "page 1:")
        let stopped = await run.finish()
        #expect(stopped.termination == .exited(128 + signalNumber), "\(stopped)")
        #expect(stopped.stdout.hasPrefix("storesync: job sigtest, run 1, simulated night 1: interrupted by \(name) after "),
                "the summary on stdout: \(stopped)")
        #expect(stopped.stderr.contains("\(name) received: stopping at the next page boundary"), "\(stopped)")
        #expect(Self.temporaries(under: job.outputDirectory).isEmpty, "export temporaries left behind")

        // The store says so: unfinished (resumable), with the reason.
        let status = try await CLIConventionsTests().cli(job, ["status", job.jobPath])
        #expect(status.termination == .exited(0), "\(status)")
        #expect(status.stdout.contains("interrupted"), "\(status)")
        #expect(status.stdout.contains("run 1: interrupted by \(name) at "), "\(status)")
        let json = try CLIConventionsTests.object(try await CLIConventionsTests().cli(job, ["status", job.jobPath, "--json"]).stdout)
        let runs = json["runs"] as? [[String: Any]] ?? []
        // The same account as `status`, the exit code and report.json (issue 29, finding 1).
        #expect(runs.count == 1 && runs.first?["status"] as? String == "interrupted", "\(json)")
        #expect(runs.first?["exitCode"] as? Int == Int(128 + signalNumber), "\(json)")
        let addedBefore = (runs.first?["added"] as? Int) ?? 400
        #expect(addedBefore > 0 && addedBefore < 400, "the stop came mid-crawl, after a committed page: \(addedBefore) added")

        // The next run resumes run 1 and ends as an uninterrupted night would: every product added once.
        let resumed = try await CLIConventionsTests().cli(job, ["run", job.jobPath, "--night", "1", "--no-progress"])
        #expect(resumed.termination == .exited(0), "\(resumed)")
        #expect(resumed.stdout.hasPrefix("storesync: job sigtest, run 1, simulated night 1 (resumed): ok"), "\(resumed)")
        let changes = try CLIConventionsTests.object(try await CLIConventionsTests().cli(job, ["changes", job.jobPath, "--json"]).stdout)
        let added = (changes["changes"] as? [[String: Any]] ?? []).filter { $0["op"] as? String == "added" }
        #expect(added.count == 400, "every product added exactly once across the stop: \(added.count)")
    }

    @Test(.timeLimit(.minutes(3)), arguments: [(SIGTERM, "SIGTERM"), (SIGHUP, "SIGHUP")])
    func aStopSignalDuringADryRunRemovesTheStoreCopy(_ signalNumber: Int32, _ name: String) async throws {
        let job = try KillTestJob(label: "sig-dry-\(name)", binary: try StoresyncExecutable.locate(), yaml: Self.longYAML)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let first = try await CLIConventionsTests().cli(job, ["run", job.jobPath, "--night", "1", "-q"])
        try #require(first.termination == .exited(0), "\(first)")
        let storeBefore = try Data(contentsOf: URL(fileURLWithPath: job.storePath))

        // The dry run's own temporary folder, so what it leaves is seen; plus a copy
        // a killed dry run left (its process is gone) and one of a live process (this one).
        let temporary = job.directory.appendingPathComponent("tmp")
        let dead = try deadProcessID()
        for name in ["storesync-dry-run-\(dead)-LEFT", "storesync-dry-run-\(getpid())-LIVE"] {
            try FileManager.default.createDirectory(at: temporary.appendingPathComponent(name), withIntermediateDirectories: true)
        }
        // `env` execs storesync in place: the signal goes to storesync itself.
        let dry = try Started(job, ["TMPDIR=\(temporary.path)", job.binary.path, "run", job.jobPath, "--night", "2", "--dry-run", "-v",
                                    "--no-progress"], executable: "/usr/bin/env")
        let copies = try await dry.signal(signalNumber, onceStderrHolds: "page 1:") {
            try FileManager.default.contentsOfDirectory(atPath: temporary.path).count
        }
        #expect(copies == 2, "the copy is made, the dead process's copy removed")
        let stopped = await dry.finish()
        #expect(stopped.termination == .exited(128 + signalNumber), "\(stopped)")
        #expect(stopped.stdout.contains("interrupted by \(name)"), "\(stopped)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary.path) == ["storesync-dry-run-\(getpid())-LIVE"],
                "only the live process's copy remains")
        #expect(try Data(contentsOf: URL(fileURLWithPath: job.storePath)) == storeBefore, "a dry run wrote to the store")
    }

    @Test(.timeLimit(.minutes(3)))
    func aSecondSigintExitsAtOnceWith130() async throws {
        let job = try KillTestJob(label: "sig-int", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let run = try Started(job, ["run", job.jobPath, "--night", "1", "-v", "--no-progress", "-q"])
        try await run.signal(SIGINT, onceStderrHolds: "page 1:")
        try await run.signal(SIGINT, onceStderrHolds: "SIGINT received: stopping")
        let stopped = await run.finish()
        // Whether the second signal or the page boundary came first, SIGINT's code.
        #expect(stopped.termination == .exited(130), "\(stopped)")
        #expect(stopped.stdout.isEmpty, "-q: \(stopped)")
        #expect(Self.temporaries(under: job.outputDirectory).isEmpty)
        let resumed = try await CLIConventionsTests().cli(job, ["run", job.jobPath, "--night", "1", "--no-progress"])
        #expect(resumed.termination == .exited(0), "\(resumed)")
        #expect(resumed.stdout.contains("(resumed): ok"), "\(resumed)")
    }

    /// Temporaries a killed writer left are removed by the next `export`
    /// (and run); a live writer's are not.
    @Test(.timeLimit(.minutes(3)))
    func exportRemovesOnlyTheTemporariesOfDeadWriters() async throws {
        let job = try KillTestJob(label: "sig-export", binary: try StoresyncExecutable.locate(),
                                  yaml: Self.fastYAML)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let first = try await CLIConventionsTests().cli(job, ["run", job.jobPath, "--night", "1", "-q"])
        try #require(first.termination == .exited(0), "\(first)")
        let csv = job.outputDirectory.appendingPathComponent("csv")
        let dead = try deadProcessID()
        let left = ".listings.csv.tmp-\(dead)-0123456789abcdef", live = ".listings.csv.tmp-\(getpid())-0123456789abcdef"
        let other = ".listings.csv.tmp-junk"
        for name in [left, live, other] {
            #expect(FileManager.default.createFile(atPath: csv.appendingPathComponent(name).path, contents: Data("x".utf8)))
        }
        let export = try await CLIConventionsTests().cli(job, ["export", job.jobPath, "-q"])
        #expect(export.termination == .exited(0), "\(export)")
        #expect(Self.temporaries(under: job.outputDirectory) == [live, other].sorted(), "only the dead writer's temporary goes")
    }

    /// `status` and `changes` on a store in a folder nobody may write, with no
    /// `-wal`/`-shm` beside it (a restored backup, a read-only mount): they
    /// read it, and write nothing there.
    @Test(.timeLimit(.minutes(3)), .enabled(if: ReadOnlyStore.canTest, "needs a non-root user, or setpriv to become one"))
    func statusAndChangesReadAStoreInAReadOnlyFolder() async throws {
        let job = try KillTestJob(label: "ro-status", binary: try StoresyncExecutable.locate(),
                                  yaml: Self.fastYAML)
        defer {
            try? FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: job.directory.appendingPathComponent("store").path)
            try? FileManager.default.removeItem(at: job.directory)
        }
        let first = try await CLIConventionsTests().cli(job, ["run", job.jobPath, "--night", "1", "-q"])
        try #require(first.termination == .exited(0), "\(first)")
        // As a backup restores it: the store file alone, its WAL checkpointed into it.
        try Self.checkpointAndClose(job.storePath)
        try? FileManager.default.removeItem(atPath: job.storePath + ".lock")
        let folder = job.directory.appendingPathComponent("store")
        let listing = try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted()
        try #require(!listing.contains { $0.hasSuffix("-wal") || $0.hasSuffix("-shm") }, "\(listing)")
        let bytes = try Data(contentsOf: URL(fileURLWithPath: job.storePath))
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: job.storePath)
        try FileManager.default.setAttributes([.posixPermissions: 0o555], ofItemAtPath: folder.path)

        let status = try await ReadOnlyStore.cli(job, ["status", job.jobPath])
        #expect(status.termination == .exited(0), "\(status)")
        #expect(status.stdout.contains("last runs, newest first:") && !status.stderr.contains("readonly"), "\(status)")
        let changes = try await ReadOnlyStore.cli(job, ["changes", job.jobPath, "--csv"])
        #expect(changes.termination == .exited(0), "\(changes)")
        #expect(changes.stdout.split(separator: "\r\n").count == 41, "the header and 40 added products: \(changes)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == listing, "something was created beside the store")
        #expect(try Data(contentsOf: URL(fileURLWithPath: job.storePath)) == bytes)
    }

    /// Folds the store's WAL into it and closes it, the last connection: SQLite removes `-wal` and `-shm`.
    static func checkpointAndClose(_ path: String) throws {
        let queue = try DatabaseQueue(path: path)
        try queue.writeWithoutTransaction { try $0.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)") }
        try queue.close()
    }

    /// Names of our temporaries (`.NAME.tmp-…`) anywhere under `directory`.
    static func temporaries(under directory: URL) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: directory.path) else { return [] }
        return walker.compactMap { ($0 as? String).map { ($0 as NSString).lastPathComponent } }
            .filter { $0.hasPrefix(".") && $0.contains(".tmp-") }.sorted()
    }

    /// The id of a process that has exited and was reaped.
    func deadProcessID() throws -> pid_t {
        let child = Process()
        child.executableURL = URL(fileURLWithPath: "/bin/sh")
        child.arguments = ["-c", "exit 0"]
        try child.run()
        child.waitUntilExit()
        return child.processIdentifier
    }
}

/// A `storesync` command running in the background, its output in the job's `logs/`.
struct Started {
    let child: ChildProcess
    let stdout: String
    let stderr: String

    init(_ job: KillTestJob, _ arguments: [String], executable: String? = nil) throws {
        let logs = job.directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let name = logs.appendingPathComponent(UUID().uuidString).path
        stdout = name + ".out"
        stderr = name + ".err"
        child = try ChildProcess(executable ?? job.binary.path, arguments, stdout: stdout, stderr: stderr)
    }

    /// Sends `number` the moment standard error holds `text` (a log line the
    /// command writes at a known point), polling the file; a minute without it
    /// fails the test (a bound for a command that ended or hung, not a timing
    /// assumption). Polled and sent from a thread of its own: the test
    /// process's cooperative pool (2 threads on CI) can be busy for seconds
    /// with other tests, and a signal sent once a test's await resumed found
    /// the run over.
    func signal(_ number: Int32, onceStderrHolds text: String) async throws {
        _ = try await signal(number, onceStderrHolds: text) {}
    }

    /// ``signal(_:onceStderrHolds:)``, returning what `note` sees at that
    /// moment, just before the signal.
    func signal<Noted: Sendable>(_ number: Int32?, onceStderrHolds text: String,
                                 firstNoting note: @escaping @Sendable () throws -> Noted) async throws -> Noted {
        let (stderr, pid) = (self.stderr, child.pid)
        let noted = try await awaitOffPool { () throws -> Noted? in
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if ((try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "").contains(text) {
                    let noted = try note()
                    if let number { _ = kill(pid, number) }
                    return noted
                }
                usleep(20_000)
            }
            return nil
        }
        guard let noted else {
            Issue.record("no \"\(text)\" on stderr: \((try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "")")
            throw CancellationError()
        }
        return noted
    }

    func signal(_ number: Int32) { _ = kill(child.pid, number) }

    func finish() async -> RunResult {
        let termination = await child.wait()
        return RunResult(termination: termination, seconds: 0,
                         stdout: (try? String(contentsOfFile: stdout, encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOfFile: stderr, encoding: .utf8)) ?? "")
    }
}

/// Running a command as a user the store's folder does not let write: this
/// one when it is not root (root writes through any permission), else the
/// `nobody` user through `setpriv`.
enum ReadOnlyStore {
    static let setpriv = "/usr/bin/setpriv"
    static var canTest: Bool { getuid() != 0 || FileManager.default.isExecutableFile(atPath: setpriv) }

    static func cli(_ job: KillTestJob, _ arguments: [String]) async throws -> RunResult {
        let logs = job.directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let name = logs.appendingPathComponent(UUID().uuidString).path
        let child = getuid() != 0
            ? try ChildProcess(job.binary.path, arguments, stdout: name + ".out", stderr: name + ".err")
            : try ChildProcess(setpriv, ["--reuid=65534", "--regid=65534", "--clear-groups", job.binary.path] + arguments,
                               stdout: name + ".out", stderr: name + ".err")
        let termination = await child.wait()
        return RunResult(termination: termination, seconds: 0,
                         stdout: (try? String(contentsOfFile: name + ".out", encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOfFile: name + ".err", encoding: .utf8)) ?? "")
    }
}
