import Catalog
import Foundation
import Testing
import TestSupport

/// What cron and script users rely on, tried on the built `storesync`
/// executable as a real second process (the helpers are KillResumeTests').
@Suite struct CLIConventionsTests {
    static let yaml = """
        name: clitest
        store: store/snapshot.sqlite
        output: out
        simulator: { seed: 7, podcasts: 20, products: 60 }
        sources:
          - name: market
            kind: marketplace
            itemsPerPage: 20
          - name: podcasts
            kind: itunes-search
            terms: [news]
            pageSize: 25
        exports:
          - { kind: csv, directory: csv }
          - { kind: changes-csv, path: changes.csv }
          - { kind: run-report, path: report.json }
        """

    /// Every request answers 500 and is tried once: every scope fails, fast.
    static let failingYAML = yaml.replacingOccurrences(of: "products: 60 }", with: "products: 60, faults: [\"burst-500:50\"] }")
        .replacingOccurrences(of: "sources:", with: "http: { maxAttempts: 1 }\nsources:")

    @Test(.timeLimit(.minutes(2)))
    func aQuietNightThatWentWellPrintsNothing() async throws {
        let job = try KillTestJob(label: "cli-quiet", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        // The first night adds everything, the second changes a few: both are ordinary cron nights.
        for night in 1...2 {
            let result = try await job.run(night: night, attempt: 1)
            #expect(result.termination == .exited(0), "\(result)")
            #expect(result.stdout.isEmpty, "night \(night) printed on stdout with -q: \(result)")
            #expect(result.stderr.isEmpty, "night \(night) printed on stderr with -q: \(result)")
        }
        // It did run: the exports are there.
        #expect(FileManager.default.fileExists(atPath: job.outputDirectory.appendingPathComponent("report.json").path))

        // Without -q the same kind of night prints its summary on stdout.
        let loud = try await cli(job, ["run", job.jobPath, "--night", "3", "--no-progress"])
        #expect(loud.termination == .exited(0), "\(loud)")
        #expect(loud.stdout.hasPrefix("storesync: job clitest, run 3, simulated night 3: ok"), "\(loud)")

        // `export -q` likewise: nothing when all went well.
        let export = try await cli(job, ["export", job.jobPath, "-q"])
        #expect(export.termination == .exited(0), "\(export)")
        #expect(export.stdout.isEmpty && export.stderr.isEmpty, "\(export)")
    }

    @Test(.timeLimit(.minutes(2)))
    func aQuietNightThatFailedPrintsItsSummaryOnStandardError() async throws {
        let job = try KillTestJob(label: "cli-quiet-failed", binary: try StoresyncExecutable.locate(), yaml: Self.failingYAML)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let result = try await job.run(night: 1, attempt: 1)
        #expect(result.termination == .exited(1), "\(result)")
        #expect(result.stdout.isEmpty, "-q keeps stdout empty even on a failed night: \(result)")
        #expect(result.stderr.contains("storesync: job clitest, run 1, simulated night 1: failed"), "the summary: \(result)")
        #expect(result.stderr.contains("error: "), "the errors: \(result)")
    }

    @Test(.timeLimit(.minutes(1)))
    func versionPrintsTheOneVersion() async throws {
        let job = try KillTestJob(label: "cli-version", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let result = try await cli(job, ["--version"])
        #expect(result.termination == .exited(0), "\(result)")
        #expect(result.stdout == StoreSyncVersion.current + "\n", "\(result)")
        #expect(StoreSyncVersion.current.split(separator: ".").count == 3)
        #expect(HTTPSettings().userAgent.hasPrefix("storesync/\(StoreSyncVersion.current) "))
    }

    /// `storesync ARGUMENTS…` to completion, its output kept in the job's `logs/`.
    func cli(_ job: KillTestJob, _ arguments: [String]) async throws -> RunResult {
        let logs = job.directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        let name = logs.appendingPathComponent(UUID().uuidString).path
        let child = try ChildProcess(job.binary.path, arguments, stdout: name + ".out", stderr: name + ".err")
        let termination = await child.wait()
        return RunResult(termination: termination, seconds: 0,
                         stdout: (try? String(contentsOfFile: name + ".out", encoding: .utf8)) ?? "",
                         stderr: (try? String(contentsOfFile: name + ".err", encoding: .utf8)) ?? "")
    }
}
