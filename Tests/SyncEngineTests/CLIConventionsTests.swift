import Catalog
import Foundation
import Snapshot
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

    /// `--log-format json` (issue 29): standard error holds JSON Lines only:
    /// the progress lines, the summary of a failed `-q` night, the errors.
    @Test(.timeLimit(.minutes(2)))
    func jsonLogsAreOnlyJSON() async throws {
        func expectJSONLines(_ text: String, _ what: String, sourceLocation: SourceLocation = #_sourceLocation) -> [[String: JSONValue]] {
            let lines = text.split(separator: "\n")
            #expect(!lines.isEmpty, "\(what): nothing on stderr", sourceLocation: sourceLocation)
            return lines.compactMap { line in
                let object = (try? JSONParser.parse(Array(line.utf8)))?.objectValue
                #expect(object?["level"] != nil && object?["message"] != nil, "\(what): not a JSON log line: \(line)",
                        sourceLocation: sourceLocation)
                return object
            }
        }
        let job = try KillTestJob(label: "cli-json-logs", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        // Progress is on (no --no-progress): its lines are log entries.
        let night = try await cli(job, ["run", job.jobPath, "--night", "1", "--log-format", "json"])
        #expect(night.termination == .exited(0), "\(night)")
        let entries = expectJSONLines(night.stderr, "an ok night")
        #expect(entries.contains { $0["event"]?.stringValue == "progress" && $0["message"]?.stringValue?.contains("crawling") == true },
                "\(night.stderr)")

        let failing = try KillTestJob(label: "cli-json-logs-failed", binary: try StoresyncExecutable.locate(), yaml: Self.failingYAML)
        defer { try? FileManager.default.removeItem(at: failing.directory) }
        let failed = try await cli(failing, ["run", failing.jobPath, "--night", "1", "-q", "--log-format", "json"])
        #expect(failed.termination == .exited(1), "\(failed)")
        let failedEntries = expectJSONLines(failed.stderr, "a failed -q night")
        #expect(failedEntries.contains { $0["message"]?.stringValue?.contains("simulated night 1: failed") == true }, "\(failed.stderr)")
    }

    /// `run --json` refused before any report (issue 29 finding 2): stdout
    /// still holds one JSON account, with the outcome and the exit code.
    @Test(.timeLimit(.minutes(1)))
    func aRefusedJSONRunStillPrintsItsAccount() async throws {
        let job = try KillTestJob(label: "cli-json-locked", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let lock = try RunLock(storePath: job.storePath)
        let locked = try await cli(job, ["run", job.jobPath, "--json", "--no-progress"])
        withExtendedLifetime(lock) {}
        #expect(locked.termination == .exited(3), "\(locked)")
        let account = try #require(try JSONParser.parse(Array(locked.stdout.utf8)).objectValue, "\(locked.stdout)")
        #expect(account["status"] == .string("locked") && account["exitCode"] == .int(3), "\(account)")
        #expect(account["job"] == .string("clitest") && account["run"] == .null)
        #expect(account["errors"]?.arrayValue?.first?["code"] == .string("locked"), "\(account)")
        #expect(locked.stderr.contains("another run is using"), "the reason still goes to stderr: \(locked)")

        // An invalid job: exit 64, and the account says why.
        try "name: clitest\nstore: s.sqlite\noutput: out\nsources: [{name: m, kind: marketplac}]\n"
            .write(toFile: job.jobPath, atomically: true, encoding: .utf8)
        let invalid = try await cli(job, ["run", job.jobPath, "--json"])
        #expect(invalid.termination == .exited(64), "\(invalid)")
        let why = try #require(try JSONParser.parse(Array(invalid.stdout.utf8)).objectValue, "\(invalid.stdout)")
        #expect(why["status"] == .string("invalid-job") && why["exitCode"] == .int(64), "\(why)")
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
        // The image the deployment runs is this version (issue 29): the tag it names, wherever it names one.
        let kustomization = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("deploy/kubernetes/kustomization.yaml"), encoding: .utf8)
        let imageBlock = try #require(kustomization.components(separatedBy: "- name: registry.example.com/storesync\n").dropFirst().first)
        #expect(imageBlock.split(separator: "\n").first?.contains("newTag: \"\(StoreSyncVersion.current)\"") == true, "\(imageBlock.prefix(60))")
        let deployREADME = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("deploy/README.md"), encoding: .utf8)
        for tag in deployREADME.components(separatedBy: "registry.example.com/storesync:").dropFirst() {
            #expect(tag.hasPrefix(StoreSyncVersion.current + " ") || tag.hasPrefix(StoreSyncVersion.current + "\n"), "\(tag.prefix(20))")
        }
        // What exists is not announced as planned.
        for manifest in ["workers.yaml", "nightly.yml", "cronjob.yaml"] {
            let text = (try? String(contentsOf: TestPaths.repoRoot.appendingPathComponent("deploy/kubernetes/\(manifest)"), encoding: .utf8)) ?? ""
            #expect(!text.contains("PLANNED"), "deploy/kubernetes/\(manifest) still says PLANNED")
        }
    }

    @Test(.timeLimit(.minutes(2)))
    func runJSONIsTheRunReportAndStatusJSONListsTheRuns() async throws {
        let job = try KillTestJob(label: "cli-json", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let reportPath = job.outputDirectory.appendingPathComponent("report.json").path

        let quiet = try await cli(job, ["run", job.jobPath, "--night", "1", "--json", "-q"])
        #expect(quiet.termination == .exited(0), "\(quiet)")
        #expect(quiet.stderr.isEmpty, "\(quiet)")
        // One schema: what --json prints is report.json, byte for byte.
        #expect(quiet.stdout == (try String(contentsOfFile: reportPath, encoding: .utf8)), "\(quiet)")
        let first = try Self.object(quiet.stdout)
        #expect(first["run"] as? Int == 1 && first["status"] as? String == "ok" && first["exitCode"] as? Int == 0, "\(first)")
        #expect((first["sources"] as? [Any])?.count == 2, "\(first)")

        // Without -q the summary still goes somewhere, but never into stdout's JSON.
        let loud = try await cli(job, ["run", job.jobPath, "--night", "2", "--json", "--no-progress"])
        #expect(loud.termination == .exited(0), "\(loud)")
        #expect((try Self.object(loud.stdout))["run"] as? Int == 2, "\(loud)")
        #expect(loud.stderr.contains("storesync: job clitest, run 2, simulated night 2: ok"), "\(loud)")

        let status = try await cli(job, ["status", job.jobPath, "--json"])
        #expect(status.termination == .exited(0), "\(status)")
        let document = try Self.object(status.stdout)
        let runs = document["runs"] as? [[String: Any]] ?? []
        #expect(runs.map { $0["run"] as? Int } == [2, 1], "newest first: \(status)")
        #expect(runs.first?["status"] as? String == "ok" && runs.first?["exitCode"] as? Int == 0, "\(status)")
        #expect(runs.last?["added"] as? Int ?? 0 > 0, "the first night added the catalogue: \(status)")
        #expect(document["runningNow"] is NSNull, "\(status)")
        let scopes = document["scopes"] as? [[String: Any]] ?? []
        #expect(!scopes.isEmpty && scopes.allSatisfy { $0["state"] as? String == "complete" }, "\(status)")

        // A dry run lists the changes it would write, in `changes`' form (issue 29, finding 8):
        // JSON on stdout with --json, text otherwise; and the run of that night writes exactly them.
        let dry = try await cli(job, ["run", job.jobPath, "--night", "3", "--dry-run", "--json", "-q"])
        #expect(dry.termination == .exited(0), "\(dry)")
        let listed = try #require(try JSONParser.parse(Array(dry.stdout.utf8)).objectValue, "\(dry.stdout)")
        #expect(listed["dryRun"] == .bool(true) && listed["run"] == .int(3) && listed["job"] == .string("clitest"), "\(listed)")
        let wouldWrite = try #require(listed["changes"]?.arrayValue)
        #expect(!wouldWrite.isEmpty, "the simulator changes records every night")
        let text = try await cli(job, ["run", job.jobPath, "--night", "3", "--dry-run", "--no-progress"])
        #expect(text.termination == .exited(0), "\(text)")
        #expect(text.stdout.hasPrefix("changes a run would write (dry run of run 3; nothing was written):\n"), "\(text.stdout.prefix(200))")
        #expect(text.stdout.contains("\n\(wouldWrite.count) changes\n"), "\(text.stdout.suffix(300))")
        let real = try await cli(job, ["run", job.jobPath, "--night", "3", "-q"])
        #expect(real.termination == .exited(0), "\(real)")
        let written = try await cli(job, ["changes", job.jobPath, "--run", "3", "--json"])
        let logged = try #require(try JSONParser.parse(Array(written.stdout.utf8))["changes"]?.arrayValue)
        #expect(logged == wouldWrite, "the dry run listed \(wouldWrite.count) changes, the run wrote \(logged.count)")
    }

    @Test(.timeLimit(.minutes(2)))
    func changesListsARunsChangesFromTheStoreWithoutWritingIt() async throws {
        let job = try KillTestJob(label: "cli-changes", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        for night in 1...2 {
            let result = try await job.run(night: night, attempt: 1)
            try #require(result.termination == .exited(0), "\(result)")
        }
        let lockPath = job.storePath + ".lock"
        try? FileManager.default.removeItem(atPath: lockPath)
        try FileManager.default.setAttributes([.posixPermissions: 0o444], ofItemAtPath: job.storePath)
        defer { try? FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: job.storePath) }
        let before = try Data(contentsOf: URL(fileURLWithPath: job.storePath))

        // Default: the last finished run, as the changes-csv export wrote it.
        let csv = try await cli(job, ["changes", job.jobPath, "--csv"])
        #expect(csv.termination == .exited(0), "\(csv)")
        let exported = try String(contentsOf: job.outputDirectory.appendingPathComponent("changes.csv"), encoding: .utf8)
        #expect(csv.stdout == exported, "\(csv)")
        #expect(csv.stdout.split(separator: "\r\n").count > 1, "night 2 changed something: \(csv)")

        let json = try await cli(job, ["changes", job.jobPath, "--run", "1", "--json"])
        #expect(json.termination == .exited(0), "\(json)")
        let document = try Self.object(json.stdout)
        let changes = document["changes"] as? [[String: Any]] ?? []
        #expect(document["run"] as? Int == 1 && document["job"] as? String == "clitest", "\(json)")
        #expect(!changes.isEmpty && changes.allSatisfy { $0["op"] as? String == "added" && $0["run"] as? Int == 1 }, "\(json)")
        let firstCSV = try await cli(job, ["changes", job.jobPath, "--run", "1", "--csv"])
        #expect(firstCSV.stdout.split(separator: "\r\n").count == changes.count + 1, "one object per CSV row: \(firstCSV)")

        let text = try await cli(job, ["changes", job.jobPath])
        #expect(text.termination == .exited(0), "\(text)")
        #expect(text.stdout.hasPrefix("run 2 (ok, started "), "\(text)")

        let missing = try await cli(job, ["changes", job.jobPath, "--run", "99"])
        #expect(missing.termination == .exited(1), "\(missing)")
        #expect(missing.stdout.isEmpty && missing.stderr.contains("run 99 is not in the snapshot"), "\(missing)")
        let both = try await cli(job, ["changes", job.jobPath, "--json", "--csv"])
        #expect(both.termination == .exited(64), "\(both)")

        #expect(try Data(contentsOf: URL(fileURLWithPath: job.storePath)) == before, "changes wrote to the store")
        #expect(!FileManager.default.fileExists(atPath: lockPath), "changes took the store's lock")
    }

    static func object(_ text: String) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any], "not a JSON object: \(text)")
    }

    /// `storesync ARGUMENTS…` to completion, its output kept in the job's `logs/`.
    @Test(.timeLimit(.minutes(1)), arguments: ["bash", "zsh", "fish"])
    func completionScriptsKnowEveryCommandAndOption(shell: String) async throws {
        let job = try KillTestJob(label: "cli-completion-\(shell)", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let result = try await cli(job, ["--generate-completion-script", shell])
        #expect(result.termination == .exited(0), "\(result)")
        for word in ["run", "status", "changes", "export", "validate", "new-store", "dry-run"] {
            #expect(result.stdout.contains(word), "\(shell) completion lacks \(word)")
        }
        if shell == "bash" {
            // A script bash cannot parse would break every shell that sources it.
            let script = job.directory.appendingPathComponent("storesync.bash")
            try result.stdout.write(to: script, atomically: true, encoding: .utf8)
            let check = try ChildProcess("/bin/bash", ["-n", script.path], stdout: "/dev/null", stderr: "/dev/null")
            #expect(await check.wait() == .exited(0))
            #expect(result.stdout.contains("yml"), "job files complete as .yml/.yaml files")
        }
    }

    /// docs/storesync.1 is generated (README: "Shell completion and the man
    /// page"); this fails when an option is added and the page is not.
    @Test(.timeLimit(.minutes(1)))
    func theManPageDocumentsEveryCommandAndOption() async throws {
        let job = try KillTestJob(label: "cli-manual", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let dump = try await cli(job, ["--experimental-dump-help"])
        #expect(dump.termination == .exited(0))
        let page = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("docs/storesync.1"), encoding: .utf8)
        guard case .object(let root)? = try? JSONParser.parse(dump.stdout), case .object(let command)? = root["command"],
              case .array(let subcommands)? = command["subcommands"] else {
            Issue.record("no command tree in --experimental-dump-help")
            return
        }
        var missing: [String] = []
        for case .object(let sub) in subcommands {
            guard let name = sub["commandName"]?.stringValue, name != "help",
                  sub["shouldDisplay"] != .bool(false) else { continue }
            if !page.contains(".It Em \(name)") { missing.append(name) }
            for case .object(let argument) in sub["arguments"]?.arrayValue ?? [] where argument["shouldDisplay"] != .bool(false) {
                for case .object(let label) in argument["names"]?.arrayValue ?? [] where label["kind"]?.stringValue == "long" {
                    let flag = label["name"]?.stringValue ?? ""
                    // mdoc writes `--night` as `Fl -night`, a second name as `Fl v , -verbose`.
                    if !page.contains("Fl -\(flag)") && !page.contains(", -\(flag)") { missing.append("\(name) --\(flag)") }
                }
            }
        }
        #expect(missing.isEmpty, "docs/storesync.1 is out of date (regenerate it as README says): \(missing)")
    }

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
