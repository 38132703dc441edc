import Foundation
import GRDB
import Testing
import TestSupport

/// `storesync status` beside a cron `run`, both real processes (the helpers
/// are KillResumeTests'): status asks whether the lock is held without taking
/// it, and reads the store without writing to it.
@Suite struct StatusDuringRunTests {
    /// Every simulator answer is held 1.5–3 s (`latency:3000`) and the list
    /// has 15 pages crawled one after another, so from the moment the run has
    /// its run row, 22–45 s of held answers stand between it and its end:
    /// longer than `status` takes even on a 2-core machine running two whole
    /// suites at once (10–20 s was not: status outlived the run there).
    static let yaml = """
        name: statustest
        store: store/snapshot.sqlite
        output: out
        simulator: { seed: 7, podcasts: 10, products: 300, faults: ["latency:3000"] }
        sources:
          - name: market
            kind: marketplace
            itemsPerPage: 20
            detail: false
        exports:
          - { kind: csv, directory: csv }
        """

    @Test(.timeLimit(.minutes(3)))
    func statusDuringARunReportsItWithoutDisturbingItOrWriting() async throws {
        let job = try KillTestJob(label: "status-during-run", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        let logs = job.directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let run = try ChildProcess(job.binary.path, ["run", job.jobPath, "--night", "1", "-q"],
                                   stdout: logs.appendingPathComponent("run.out").path,
                                   stderr: logs.appendingPathComponent("run.err").path)
        func runOutput() -> String {
            (try? String(contentsOf: logs.appendingPathComponent("run.err"), encoding: .utf8)) ?? ""
        }

        // Polled, bounded: the run holds the lock and has begun once its run row says so.
        let deadline = ContinuousClock.now + .seconds(60)
        var began = false
        while !began, ContinuousClock.now < deadline {
            began = (try? StoreInspector.latestRun(job.storePath))?.status == "running"
            if !began { try await Task.sleep(for: .milliseconds(10)) }
        }
        guard began else {
            run.kill()
            _ = await run.wait()
            Issue.record("the run never began: \(runOutput())")
            return
        }

        // The store file is read-only while status looks: a status that wrote
        // (migrations, an index) could not. The run keeps the descriptors it opened.
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: job.storePath)
        let status = try ChildProcess(job.binary.path, ["status", job.jobPath],
                                      stdout: logs.appendingPathComponent("status.out").path,
                                      stderr: logs.appendingPathComponent("status.err").path)
        let statusEnded = await status.wait()
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: job.storePath)
        let afterStatus = try StoreInspector.latestRun(job.storePath)
        let runEnded = await run.wait()

        let statusOut = (try? String(contentsOf: logs.appendingPathComponent("status.out"), encoding: .utf8)) ?? ""
        let statusErr = (try? String(contentsOf: logs.appendingPathComponent("status.err"), encoding: .utf8)) ?? ""
        #expect(statusEnded == .exited(0), "status: \(statusEnded); \(statusErr)")
        #expect(statusOut.contains("running now (pid \(run.pid) since "), "status names the running run: \(statusOut)")
        // Otherwise the checks below would not have been made during the run.
        #expect(afterStatus?.status == "running", "the run was still going when status ended")
        #expect(runEnded == .exited(0), "the run was not disturbed: \(runEnded); \(runOutput())")
        #expect(!runOutput().contains("another run"), "\(runOutput())")
        let end = try StoreInspector.latestRun(job.storePath)
        #expect(end?.status == "ok" && end?.attempts == 1 && end?.exported == true, "\(String(describing: end))")
        #expect(try StoreInspector.integrityCheck(job.storePath) == "ok")
        try? FileManager.default.removeItem(at: job.directory)
    }

    /// Between runs: status creates no lock file (so it cannot have taken the
    /// lock), and a store older than the code is reported, not migrated.
    @Test(.timeLimit(.minutes(2)))
    func statusBetweenRunsTakesNoLockAndNeverMigrates() async throws {
        let yaml = Self.yaml.replacingOccurrences(of: ", faults: [\"latency:2000\"]", with: "")
        let job = try KillTestJob(label: "status-between-runs", binary: try StoresyncExecutable.locate(), yaml: yaml)
        let first = try await job.run(night: 1, attempt: 1)
        try #require(first.termination == .exited(0), "\(first)")
        let lockPath = job.storePath + ".lock"
        try FileManager.default.removeItem(atPath: lockPath)

        let idle = try await status(job)
        #expect(idle.termination == .exited(0), "\(idle)")
        #expect(!idle.stdout.contains("running now"), "\(idle)")
        #expect(!FileManager.default.fileExists(atPath: lockPath), "status created the lock file: it took the lock")

        // As a store from before the last migration: status says so and leaves it as it is.
        try await DatabaseQueue(path: job.storePath).write { db in
            try db.execute(sql: "DELETE FROM grdb_migrations WHERE identifier = (SELECT max(identifier) FROM grdb_migrations)")
        }
        let before = try Data(contentsOf: URL(fileURLWithPath: job.storePath))
        let older = try await status(job)
        #expect(older.termination == .exited(1), "\(older)")
        #expect(older.stderr.contains("schema is older than this storesync"), "\(older)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: job.storePath)) == before, "status migrated the store")
        try? FileManager.default.removeItem(at: job.directory)
    }

    private func status(_ job: KillTestJob) async throws -> RunResult {
        let logs = job.directory.appendingPathComponent("logs/status")
        try FileManager.default.createDirectory(at: logs.deletingLastPathComponent(), withIntermediateDirectories: true)
        let child = try ChildProcess(job.binary.path, ["status", job.jobPath], stdout: logs.path + ".out", stderr: logs.path + ".err")
        let termination = await child.wait()
        return RunResult(termination: termination, seconds: 0,
                         stdout: (try? String(contentsOfFile: logs.path + ".out", encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOfFile: logs.path + ".err", encoding: .utf8)) ?? "")
    }
}
