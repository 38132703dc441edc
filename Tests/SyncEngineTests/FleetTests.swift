import Catalog
import Crawl
import Foundation
import GRDB
import Logging
import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// Issue 17: a night crawled by a fleet of workers on one PostgreSQL store is
/// the night one process crawls on SQLite: the same snapshot, row for row,
/// the same change log, the same exports, byte for byte — whatever the
/// workers' timing, and whether one of them is killed or paused past its lease.
@Suite(.enabled(if: TemporaryPostgres.testsEnabled, Comment(rawValue: TemporaryPostgres.skipReason)))
struct FleetTests {
    /// One small paged source and a run report: for what a worker decides before and after its crawl.
    static func marketOnly(name: String, store: String) -> String {
        """
        name: \(name)
        store: \(store)
        output: out
        simulator: { seed: 5, podcasts: 10, products: 40 }
        sources:
          - {name: market, kind: marketplace, itemsPerPage: 20}
        exports:
          - { kind: run-report, path: report.json }
        """
    }

    /// Several kinds of scope: a paged list with follow-ups (marketplace
    /// details), searches whose records move between terms, a dependent
    /// lookup; churn every night, removals at the first miss for the market.
    static func yaml(store: String, faults: String, notify: URL? = nil, cap: Int? = nil) -> String {
        """
        name: fleet
        store: \(store)
        output: out
        simulator: { seed: 7, podcasts: 300, products: 160, changed: 0.1, added: 0.03, removed: 0.03, faults: [\(faults)] }
        sources:
          - name: market
            kind: marketplace
            itemsPerPage: 20
            detail: true
            removal: { afterMisses: 1, maxRatio: 0.5 }
          - name: podcasts
            kind: itunes-search
            terms: [news, history, science, comedy]
            pageSize: 25\(cap.map { "\n    maxResults: \($0)" } ?? "")
            removal: { afterMisses: 2, maxRatio: 0.5 }
          - { name: details, kind: itunes-lookup, from: podcasts }
        exports:
          - { kind: artwork, directory: artwork, budgetMB: 5, artworkBaseURL: "https://example.com/artwork" }
          - { kind: sqlite, path: fleet.sqlite }
          - { kind: csv, directory: csv }
          - { kind: changes-csv, path: changes.csv }
          - { kind: run-report, path: report.json }
          - { kind: metrics, path: storesync.prom }
          - kind: feed
            feed: podcasts-updated
            rss: feeds/podcasts.xml
            atom: feeds/podcasts.atom
            title: Updated podcasts
            selfURL: https://example.com/feeds/podcasts.xml
        """ + (notify.map { "\nnotify: { url: \"\($0.absoluteString)\", on: always }\n" } ?? "")
    }

    /// Every run of both sides starts at this moment, so the exports' dates agree.
    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    static func job(_ directory: URL, store: String, faults: String = "", notify: URL? = nil, cap: Int? = nil) throws -> JobSpec {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("job.yml").path
        try yaml(store: store, faults: faults, notify: notify, cap: cap).write(toFile: path, atomically: true, encoding: .utf8)
        return try JobLoader.load(path: path, rules: .cli)
    }

    static func environment(_ job: JobSpec) -> RunEnvironment {
        RunEnvironment(services: job.simulator.map(SimulatedServices.init) ?? LiveServices(), now: { start },
                       logger: Logger(label: "fleet-test"))
    }

    @Test func threeWorkersWriteWhatOneProcessWrites() async throws {
        let directory = TestPaths.temporaryDirectory("fleet-three")
        // Each side's webhook: the night's report, posted once, by whoever ends the night.
        let singleHook = try WebhookReceiver(), fleetHook = try WebhookReceiver()
        defer { singleHook.stop(); fleetHook.stop() }
        let single = try Self.job(directory.appendingPathComponent("single"), store: "store/snapshot.sqlite", notify: singleHook.url)
        let url = try await TemporaryPostgres.shared().createDatabase()
        let fleet = try Self.job(directory.appendingPathComponent("fleet"), store: url, notify: fleetHook.url)
        for night in 1...3 {
            let reference = try await Runner(job: single, environment: Self.environment(single)).run()
            #expect(reference.outcome == .ok, "\(reference.summaryText)")
            let reports = try await withThrowingTaskGroup(of: RunReport.self) { group in
                for worker in 1...3 {
                    group.addTask {
                        var options = RunOptions()
                        options.worker = WorkerOptions(fleet: "night-\(night)", name: "w\(worker)", leaseSeconds: 30)
                        return try await Runner(job: fleet, environment: Self.environment(fleet)).run(options)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(reports.allSatisfy { $0.outcome == reference.outcome && $0.runID == reference.runID })
            // The night owes its exports until they are written once, after the workers, as its run would have.
            let last = try #require(try PostgresBackend().open(url).runs(limit: 1).first)
            #expect(last.exportsPending)
            let exported = try #require(try await Runner(job: fleet, environment: Self.environment(fleet)).exportOwedNight())
            #expect(exported.outcome == reference.outcome && exported.runID == reference.runID)
            #expect(exported.artwork?.published == reference.artwork?.published, "\(exported.summaryText)")
            #expect((reference.artwork?.published ?? 0) > 0, "\(reference.summaryText)")
            #expect(exported.notify?.delivered == true, "\(exported.summaryText)")
            // The workers posted nothing: the night ended with its exports.
            try #require(singleHook.requests.count == night && fleetHook.requests.count == night,
                         "\(singleHook.requests.count) and \(fleetHook.requests.count) posts after night \(night)")
            #expect(StoreComparison.withoutTimings(Data(fleetHook.requests[night - 1].body), "report.json")
                    == StoreComparison.withoutTimings(Data(singleHook.requests[night - 1].body), "report.json"))
            // Owed once: a second export writes the same files again, from the snapshot.
            #expect(try await Runner(job: fleet, environment: Self.environment(fleet)).exportOwedNight() == nil)
            try StoreComparison.expectSameStore(url, single.storePath, directory: directory, label: "night \(night)")
            try StoreComparison.expectSameExports(URL(fileURLWithPath: single.outputDirectory),
                                                  URL(fileURLWithPath: fleet.outputDirectory))
        }
    }

    /// A night that did not go well (its searches stopped at the job's cap:
    /// partial, exit 2) ended by the export after a fleet tells every surface
    /// what one process's night tells: the exit code, the summary, `run --json`,
    /// report.json, the metrics, the webhook and `status --json`.
    @Test func aPartialFleetNightTellsEverySurfaceWhatOneProcessTells() async throws {
        let directory = TestPaths.temporaryDirectory("fleet-partial")
        let singleHook = try WebhookReceiver(), fleetHook = try WebhookReceiver()
        defer { singleHook.stop(); fleetHook.stop() }
        let single = try Self.job(directory.appendingPathComponent("single"), store: "store/snapshot.sqlite",
                                  notify: singleHook.url, cap: 25)
        let url = try await TemporaryPostgres.shared().createDatabase()
        let fleet = try Self.job(directory.appendingPathComponent("fleet"), store: url, notify: fleetHook.url, cap: 25)
        let reference = try await Runner(job: single, environment: Self.environment(single)).run()
        #expect(reference.outcome == .partial && reference.nightOutcome.exitCode == 2, "\(reference.summaryText)")
        #expect(reference.warnings.contains { $0.code == RunProblem.capped })
        for worker in 1...3 {
            var options = RunOptions()
            options.worker = WorkerOptions(fleet: "partial", name: "w\(worker)", leaseSeconds: 30)
            // One after another: the last one finds every scope done and closes nothing twice.
            _ = try await Runner(job: fleet, environment: Self.environment(fleet)).run(options)
        }
        // Before the export, `status` says the night's exports are owed, not how it ended.
        let owed = MachineOutput.statusJSON(try JobStatus.load(job: fleet))
        #expect(owed.contains("\"exported\": false"), "\(owed)")
        let ended = try #require(try await Runner(job: fleet, environment: Self.environment(fleet)).exportOwedNight())

        #expect(ended.outcome == .partial && ended.nightOutcome.exitCode == reference.nightOutcome.exitCode)
        // Durations (and the sizes of the two files that hold them), the two
        // output folders and the two webhooks' ports aside.
        func told(_ summary: String, _ job: JobSpec) -> [String] {
            summary.replacingOccurrences(of: job.outputDirectory, with: "OUT").split(separator: "\n").map {
                var line = String($0).replacing(/\ [0-9.]+ s\b/, with: " - s").replacing(/\ +[0-9]+\.[0-9]+$/, with: "")
                    .replacing(/127\.0\.0\.1:[0-9]+/, with: "HOOK")
                if line.hasPrefix("wrote OUT/report.json") || line.hasPrefix("wrote OUT/storesync.prom") {
                    line = line.replacing(/, [0-9]+ bytes/, with: "")
                }
                return line
            }
        }
        let (fleetSaid, singleSaid) = (told(ended.summaryText, fleet), told(reference.summaryText, single))
        #expect(fleetSaid == singleSaid, "\(fleetSaid.difference(from: singleSaid))")
        let runJSON = try MachineOutput.runReportJSON(job: fleet, runID: ended.runID, report: ended)
        let referenceJSON = try MachineOutput.runReportJSON(job: single, runID: reference.runID, report: reference)
        #expect(StoreComparison.withoutTimings(Data(runJSON.utf8), "report.json")
                == StoreComparison.withoutTimings(Data(referenceJSON.utf8), "report.json"))
        try #require(singleHook.requests.count == 1 && fleetHook.requests.count == 1)
        #expect(StoreComparison.withoutTimings(Data(fleetHook.requests[0].body), "report.json")
                == StoreComparison.withoutTimings(Data(singleHook.requests[0].body), "report.json"))
        // report.json and the metrics, with the other exports.
        try StoreComparison.expectSameExports(URL(fileURLWithPath: single.outputDirectory), URL(fileURLWithPath: fleet.outputDirectory))
        // The store's address aside (a file there, a database here).
        let statuses = try [fleet, single].map { job in
            let text = MachineOutput.statusJSON(try JobStatus.load(job: job)).replacingOccurrences(of: job.storePath, with: "STORE")
            return StoreComparison.withoutTimings(Data(text.utf8), "report.json")
        }
        #expect(statuses[0] == statuses[1], "\(statuses[0])\n---\n\(statuses[1])")
        #expect(statuses[0].contains("\"status\":\"partial\"") && statuses[0].contains("\"exitCode\":2"), "\(statuses[0])")
    }

    /// Issue 27, item 7: a worker of another night than the fleet it would
    /// join is refused with exit 64 naming that fleet, instead of joining a
    /// finished night and crawling nothing; the default key names the night.
    @Test func aWorkerOfAnotherNightIsRefusedAndTheDefaultKeyNamesTheNight() async throws {
        let binary = try StoresyncExecutable.locate()
        let url = try await TemporaryPostgres.shared().createDatabase()
        let job = try KillTestJob(label: "fleet-nights", binary: binary, yaml: Self.marketOnly(name: "nights", store: url))
        defer { try? FileManager.default.removeItem(at: job.directory) }
        func cli(_ arguments: [String]) async throws -> RunResult { try await CLIConventionsTests().cli(job, arguments) }

        // The default key: night 1, then night 2 on the same day, each its own run.
        let first = try await cli(["run", job.jobPath, "--worker", "--night", "1", "-q", "--no-progress"])
        #expect(first.termination == .exited(0), "\(first)")
        let second = try await cli(["run", job.jobPath, "--worker", "--night", "2", "-q", "--no-progress"])
        #expect(second.termination == .exited(0), "\(second)")
        let status = try await cli(["status", job.jobPath, "--json"])
        let runs = try #require(try JSONParser.parse(Array(status.stdout.utf8))["runs"]?.arrayValue, "\(status)")
        #expect(runs.count == 2, "two nights, two runs: \(status.stdout)")
        #expect(Set(runs.compactMap { $0["night"]?.intValue }) == [1, 2], "\(status.stdout)")
        // The second night crawled: its run has requests of its own.
        #expect(runs.allSatisfy { ($0["requests"]?["total"]?.intValue ?? 0) > 0 }, "\(status.stdout)")

        // A key named by hand, then another night under it: refused, naming the fleet.
        let named = try await cli(["run", job.jobPath, "--worker", "--fleet", "shared-key", "--night", "3", "-q", "--no-progress"])
        #expect(named.termination == .exited(0), "\(named)")
        let conflict = try await cli(["run", job.jobPath, "--worker", "--fleet", "shared-key", "--night", "4", "-q", "--no-progress"])
        #expect(conflict.termination == .exited(64), "\(conflict)")
        #expect(conflict.stderr.contains("fleet 'shared-key' is the run of night 3"), "\(conflict)")
        // Without --night the worker joins that fleet's night (finished: nothing left to crawl).
        let joined = try await cli(["run", job.jobPath, "--worker", "--fleet", "shared-key", "-q", "--no-progress"])
        #expect(joined.termination == .exited(0), "\(joined)")
        let after = try await cli(["status", job.jobPath, "--json"])
        #expect(try JSONParser.parse(Array(after.stdout.utf8))["runs"]?.arrayValue?.count == 3, "\(after.stdout)")
    }

    /// Store-level: worker A stages a page of scope `s1` without a record it
    /// held last night; worker B stages scope `s2`, which lists it now. The
    /// closing step decides on both: the record moved, it is not removed.
    @Test func aRecordThatMovedToAnotherWorkersScopeIsNotRemoved() async throws {
        let url = try await TemporaryPostgres.shared().createDatabase()
        let backend = PostgresBackend()
        func record(_ key: String, _ title: String) -> Catalog.Record {
            Catalog.Record(entity: .podcast, key: key, fields: ["name": .string(title)])
        }
        func page(_ run: Int64, _ scope: String, _ records: [Catalog.Record]) -> PageInput {
            var input = PageInput(runID: run, source: "search", scope: scope, page: 0, records: records)
            input.completesScope = true
            return input
        }
        let removal = RemovalPolicy(afterMisses: 1, maxRatio: 1)
        // Night 1, one process: s1 lists a and b, s2 lists c.
        do {
            let store = try #require(try backend.open(url) as? SQLSnapshotStore)
            let run = try store.beginRun(job: "moves", at: Self.start, simulated: false)
            _ = try await store.apply(page(run.id, "s1", [record("a", "A"), record("b", "B")]))
            _ = try await store.apply(page(run.id, "s2", [record("c", "C")]))
            for scope in ["s1", "s2"] {
                try store.finishScope(runID: run.id, source: "search", scope: scope, state: .complete, error: nil)
                _ = try store.sweepScope(runID: run.id, source: "search", scope: scope, removal: removal)
            }
            try store.finishRun(run.id, status: .ok, message: nil, at: Self.start)
        }
        // Night 2, two workers: b moved from s1 (A's) to s2 (B's).
        let workerA = try backend.openFleet(url)
        let workerB = try backend.openFleet(url)
        let run = try workerA.joinFleetRun(job: "moves", fleet: "n2", at: Self.start, simulated: false, night: nil, leaseSeconds: 30)
        let joined = try workerB.joinFleetRun(job: "moves", fleet: "n2", at: Self.start, simulated: false, night: nil, leaseSeconds: 30)
        #expect(joined.id == run.id)
        for (worker, name, scope, records) in [(workerA, "A", "s1", [record("a", "A")]),
                                               (workerB, "B", "s2", [record("b", "B"), record("c", "C")])] {
            guard case .claimed(let claim) = try worker.claimScope(runID: run.id, source: "search", phase: .scopes, among: [scope],
                                                                 worker: name, leaseSeconds: 30) else {
                Issue.record("worker \(name) could not claim \(scope)")
                return
            }
            worker.hold(claim, runID: run.id, leaseSeconds: 30, worker: name)
            _ = try await worker.apply(page(run.id, scope, records))
            try worker.finishScope(runID: run.id, source: "search", scope: scope, state: .complete, error: nil)
            try worker.completeClaim(claim, runID: run.id, outcome: "")
        }
        // Worker A closes the source: the log of both scopes, then the sweeps.
        guard case .claimed(let close) = try workerA.claimScope(runID: run.id, source: "search", phase: .finish, among: ["#finish"],
                                                               worker: "A", leaseSeconds: 30) else {
            Issue.record("the closing step could not be claimed")
            return
        }
        workerA.hold(close, runID: run.id, leaseSeconds: 30, worker: "A")
        try await workerA.applyStaged(runID: run.id, source: "search", scopes: ["s1", "s2"])
        var removed = 0
        for scope in ["s1", "s2"] {
            removed += try workerA.sweepScope(runID: run.id, source: "search", scope: scope, removal: removal).removed
        }
        #expect(removed == 0)
        let keys = try StoreEngine.open(url).records(source: "search").map(\.key)
        #expect(keys == ["a", "b", "c"])
        let scopeOfB = try workerA.scopeStates().filter { $0.source == "search" }
        #expect(scopeOfB.count == 2)
    }

    /// Should a scope's staged pages be applied (and dropped from the log)
    /// before its crawl is done, a worker that takes the scope over resumes
    /// after the last page applied (the snapshot's checkpoint), not at page 0,
    /// which would fetch and apply the scope's first pages twice. The applier
    /// waits for a scope's crawl today (applying a scope page by page measured
    /// no faster: smaller transactions); this keeps the log and the snapshot's
    /// checkpoint one account of a scope's pages whoever applies them.
    @Test func aScopeTakenOverAfterItsPagesWereAppliedResumesWhereTheyEnd() async throws {
        let url = try await TemporaryPostgres.shared().createDatabase()
        let backend = PostgresBackend()
        let crawler = try backend.openFleet(url)
        let applier = try backend.openFleet(url)
        let run = try crawler.joinFleetRun(job: "takeover", fleet: "n1", at: Self.start, simulated: false, night: nil, leaseSeconds: 30)
        _ = try applier.joinFleetRun(job: "takeover", fleet: "n1", at: Self.start, simulated: false, night: nil, leaseSeconds: 30)
        guard case .claimed(let claim) = try crawler.claimScope(runID: run.id, source: "search", phase: .scopes, among: ["s1"],
                                                               worker: "crawler", leaseSeconds: 30),
              case .claimed(let applying) = try applier.claimScope(runID: run.id, source: "search", phase: .applied,
                                                                  among: ["#applied"], worker: "applier", leaseSeconds: 30) else {
            Issue.record("the claims were not granted")
            return
        }
        crawler.hold(claim, runID: run.id, leaseSeconds: 30, worker: "crawler")
        applier.hold(applying, runID: run.id, leaseSeconds: 30, worker: "applier")
        for number in 0..<3 {
            let records = (0..<2).map { Catalog.Record(entity: .podcast, key: "p\(number)-\($0)", fields: ["name": .string("P")]) }
            _ = try await crawler.apply(PageInput(runID: run.id, source: "search", scope: "s1", page: number, records: records))
        }
        #expect(try crawler.checkpoint(runID: run.id, source: "search", scope: "s1")?.nextPage == 3)
        try await applier.applyStaged(runID: run.id, source: "search", scopes: ["s1"])
        #expect(try StoreComparison.psql(url, "SELECT count(*) FROM fleet_pages") == "0")
        // Pages 0-2 are in the snapshot and no longer in the log: a takeover resumes at page 3.
        let resumed = try #require(try applier.checkpoint(runID: run.id, source: "search", scope: "s1"))
        #expect(resumed.nextPage == 3 && resumed.state == .running, "\(resumed)")
        #expect(try StoreEngine.open(url).records(source: "search").count == 6)
    }

    /// A worker's crawl and the apply of its staged pages overlap (issue 27,
    /// item 5): the first scopes of a source are in the snapshot while later
    /// ones are still being crawled, and the night is still row for row the
    /// night one process writes. One worker crawling one scope at a time makes
    /// the order plain: before the overlap, nothing reached the snapshot until
    /// every scope was crawled.
    @Test func scopesAreAppliedWhileLaterOnesAreCrawled() async throws {
        let directory = TestPaths.temporaryDirectory("fleet-overlap")
        func job(_ name: String, store: String) throws -> JobSpec {
            let folder = directory.appendingPathComponent(name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let path = folder.appendingPathComponent("job.yml").path
            try """
                name: overlap
                store: \(store)
                output: out
                simulator: { seed: 11, podcasts: 300, changed: 0.1, added: 0.03, removed: 0.03, faults: ["latency:30"] }
                http: { concurrency: 1 }
                sources:
                  - name: podcasts
                    kind: itunes-search
                    terms: [news, history, science, comedy, music, sports]
                    countries: [us, gb]
                    pageSize: 10
                    removal: { afterMisses: 1, maxRatio: 0.5 }
                exports:
                  - { kind: sqlite, path: overlap.sqlite }
                """.write(toFile: path, atomically: true, encoding: .utf8)
            return try JobLoader.load(path: path, rules: .cli)
        }
        let single = try job("single", store: "store/snapshot.sqlite")
        let url = try await TemporaryPostgres.shared().createDatabase()
        let fleet = try job("fleet", store: url)
        for night in 1...2 {
            let reference = try await Runner(job: single, environment: Self.environment(single)).run()
            #expect(reference.outcome == .ok, "\(reference.summaryText)")
            let worker = Task {
                var options = RunOptions()
                options.worker = WorkerOptions(fleet: "overlap-\(night)", name: "w1", leaseSeconds: 30)
                return try await Runner(job: fleet, environment: Self.environment(fleet)).run(options)
            }
            // One statement, one snapshot: pages of this night in the snapshot while a scope is still crawling.
            try await StoreComparison.waitUntil("a scope applied while another is crawled (night \(night))", url: url) { psql in
                try psql("""
                    SELECT (SELECT count(*) FROM run_pages WHERE run_id = (SELECT max(run_id) FROM fleet_runs)) > 0
                        AND (SELECT count(*) FROM scope_claims WHERE run_id = (SELECT max(run_id) FROM fleet_runs)
                             AND phase = 'scopes' AND done) < 12
                    """) == "t"
            }
            let report = try await worker.value
            #expect(report.outcome == reference.outcome && report.runID == reference.runID, "\(report.summaryText)")
            #expect(try StoreComparison.psql(url, "SELECT count(*) FROM fleet_pages") == "0")
            _ = try await Runner(job: fleet, environment: Self.environment(fleet)).exportOwedNight()
            try StoreComparison.expectSameStore(url, single.storePath, directory: directory, label: "night \(night)")
        }
    }

    /// Worker processes: one is killed (SIGKILL) mid-scope, another paused
    /// (SIGSTOP) past its lease; the others take their scopes over and resume
    /// from the last staged page. The zombie, resumed (SIGCONT), commits
    /// nothing more and exits 75 saying who took its scope. The night's store
    /// is the single process's, row for row.
    @Test func killedAndPausedWorkersLeaveTheSameNight() async throws {
        let binary = try StoresyncExecutable.locate()
        let directory = TestPaths.temporaryDirectory("fleet-kill")
        // Slow pages (the simulator's latency), so the workers are mid-scope when they are stopped.
        let single = try Self.job(directory.appendingPathComponent("single"), store: "store/snapshot.sqlite", faults: "\"latency:40\"")
        let url = try await TemporaryPostgres.shared().createDatabase()
        let fleet = try Self.job(directory.appendingPathComponent("fleet"), store: url, faults: "\"latency:40\"")
        let reference = try await Runner(job: single, environment: Self.environment(single)).run()
        #expect(reference.outcome == .ok)
        let logs = directory.appendingPathComponent("logs")
        try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
        func worker(_ name: String) throws -> ChildProcess {
            try ChildProcess(binary.path, ["run", fleet.file, "--worker", "--fleet", "night-1", "--worker-name", name,
                                           "--lease", "5", "--no-progress", "-q"],
                             stdout: logs.appendingPathComponent("\(name).out").path,
                             stderr: logs.appendingPathComponent("\(name).err").path)
        }
        let killed = try worker("killed")
        let zombie = try worker("zombie")
        // Both have staged pages, so both hold scopes mid-crawl.
        try await StoreComparison.waitUntil("both workers staged pages", url: url) { psql in
            try psql("SELECT count(DISTINCT worker) FROM scope_claims WHERE worker IN ('killed', 'zombie')") == "2"
                && Int(try psql("SELECT count(*) FROM fleet_pages")) ?? 0 > 0
        }
        killed.kill()
        _ = await killed.wait()
        // Paused while it holds a scope (between two claims it would hold nothing to lose).
        try await StoreComparison.waitUntil("the zombie is paused holding a scope", url: url) { psql in
            kill(zombie.pid, SIGSTOP)
            if try psql("SELECT count(*) FROM scope_claims WHERE worker = 'zombie' AND NOT done") != "0" { return true }
            kill(zombie.pid, SIGCONT)
            return false
        }
        // The others finish the night, the dead worker's and the paused one's scopes included.
        let rest = try ["w1", "w2"].map(worker)
        for child in rest {
            let end = await child.wait()
            let said = (try? String(contentsOf: logs.appendingPathComponent("\(child === rest[0] ? "w1" : "w2").err"), encoding: .utf8)) ?? ""
            #expect(end == .exited(0), "\(said)")
        }
        let takenOver = try StoreComparison.psql(url, "SELECT count(*) FROM scope_claims WHERE takeovers > 0")
        #expect((Int(takenOver) ?? 0) >= 1, "no scope was taken over")
        kill(zombie.pid, SIGCONT)
        let zombieEnd = await zombie.wait()
        let zombieSaid = try String(contentsOf: logs.appendingPathComponent("zombie.err"), encoding: .utf8)
        #expect(zombieEnd == .exited(75), "\(zombieSaid)")
        #expect(zombieSaid.contains("no longer holds") && zombieSaid.contains("nothing more was committed"), "\(zombieSaid)")
        // The export Job that follows the workers ends the night: its exports, with the night's exit code.
        let export = try ChildProcess(binary.path, ["export", fleet.file, "-q"],
                                      stdout: logs.appendingPathComponent("export.out").path,
                                      stderr: logs.appendingPathComponent("export.err").path)
        let exportEnd = await export.wait()
        let exportSaid = (try? String(contentsOf: logs.appendingPathComponent("export.err"), encoding: .utf8)) ?? ""
        #expect(exportEnd == .exited(0), "\(exportSaid)")
        #expect(FileManager.default.fileExists(atPath: URL(fileURLWithPath: fleet.outputDirectory).appendingPathComponent("artwork").path))
        try StoreComparison.expectSameStore(url, single.storePath, directory: directory, label: "after a kill and a zombie",
                                            ignoreRequests: true)
    }
}

/// Compares a fleet's PostgreSQL store with a single process's SQLite store.
enum StoreComparison {
    /// Columns measured in seconds: how long things took, not what was stored.
    static let durations: [String: Set<String>] = ["runs": ["seconds"], "run_sources": ["seconds"]]
    /// The requests a takeover repeats (a page fetched but not staged before a
    /// kill), and the wall-clock times of worker processes (they read the real clock).
    static let requestCounters: [String: Set<String>] = [
        "runs": ["requests", "retries", "throttled", "not_modified", "failures", "started_at", "finished_at"],
        "run_sources": ["requests", "pages"],
    ]

    /// The PostgreSQL store migrated into SQLite, then every table compared
    /// with the reference, row for row (ids and rowids included).
    static func expectSameStore(_ url: String, _ reference: String, directory: URL, label: String,
                                ignoreRequests: Bool = false) throws {
        let copy = directory.appendingPathComponent("copy-\(UUID().uuidString).sqlite").path
        _ = try StoreMigration.migrate(from: url, to: copy)
        let tables = ["store_meta", "runs", "run_sources", "changes", "records", "entities", "scopes", "run_pages", "misses",
                      "page_memos", "pending_inputs", "field_registry"]
        let fleet = try DatabaseQueue(path: copy)
        let single = try DatabaseQueue(path: reference)
        for table in tables {
            let columns = try single.read { db in try Row.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table]) }
                .map { $0["name"] as String }
                .filter { !(durations[table]?.contains($0) ?? false) && !(ignoreRequests && (requestCounters[table]?.contains($0) ?? false)) }
            let selected = ((table == "records" || table == "entities") ? ["rowid"] : []) + columns
            let sql = "SELECT \(selected.map { "\"\($0)\"" }.joined(separator: ", ")) FROM \(table) ORDER BY \(selected.map { "\"\($0)\"" }.joined(separator: ", "))"
            let ours = try fleet.read { db in try Row.fetchAll(db, sql: sql) }.map { $0.description }
            let theirs = try single.read { db in try Row.fetchAll(db, sql: sql) }.map { $0.description }
            #expect(ours.count == theirs.count, "\(label): \(table) has \(ours.count) rows on PostgreSQL, \(theirs.count) on SQLite")
            let different = zip(ours, theirs).first { $0 != $1 }
            #expect(different == nil, "\(label): \(table) differs: \(different.map { "\($0.0) ≠ \($0.1)" } ?? "")")
        }
    }

    /// Every file of both output folders, byte for byte.
    static func expectSameExports(_ single: URL, _ fleet: URL) throws {
        func files(_ root: URL) -> [String] {
            let enumerator = FileManager.default.enumerator(atPath: root.path)
            var found: [String] = []
            while let path = enumerator?.nextObject() as? String {
                var isDirectory: ObjCBool = false
                if FileManager.default.fileExists(atPath: root.appendingPathComponent(path).path, isDirectory: &isDirectory),
                   !isDirectory.boolValue { found.append(path) }
            }
            return found.sorted()
        }
        let names = files(single)
        #expect(names == files(fleet))
        #expect(names.count > 10)
        // The output's marker names its own store (a file here, a database there): not an export.
        for name in names where name != ".storesync-history" {
            let a = try Data(contentsOf: single.appendingPathComponent(name))
            let b = try Data(contentsOf: fleet.appendingPathComponent(name))
            #expect(withoutTimings(a, name) == withoutTimings(b, name), "\(name) differs between the single process and the fleet")
        }
    }

    /// A run report or metrics file without how long things took (a fleet's
    /// night and one process's take different times); any other file as it is.
    static func withoutTimings(_ data: Data, _ name: String) -> String {
        let text = String(decoding: data, as: UTF8.self)
        if name.hasSuffix(".prom") {
            return text.split(separator: "\n").filter {
                !$0.hasPrefix("storesync_run_duration_seconds{") && !$0.hasPrefix("storesync_source_seconds{")
            }.joined(separator: "\n")
        }
        guard name.hasSuffix("report.json"), let object = try? JSONSerialization.jsonObject(with: data) else { return text }
        func strip(_ value: Any) -> Any {
            if let fields = value as? [String: Any] {
                return fields.filter { $0.key != "seconds" }.mapValues(strip)
            }
            if let list = value as? [Any] { return list.map(strip) }
            return value
        }
        let stripped = try? JSONSerialization.data(withJSONObject: strip(object), options: [.sortedKeys])
        return stripped.map { String(decoding: $0, as: UTF8.self) } ?? text
    }

    static func psql(_ url: String, _ sql: String) throws -> String {
        let database = try #require(URL(string: url)?.path.dropFirst()).description
        return try TemporaryPostgres.sharedWaitingHere().psql(sql, database: database).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Polls the store until `condition` holds: bounded (60 s), never a fixed sleep standing in for an event.
    static func waitUntil(_ what: String, url: String, _ condition: (_ psql: (String) throws -> String) throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(60)
        while ContinuousClock.now < deadline {
            // Before the first worker created the tables, a query fails: not yet.
            if (try? condition({ try psql(url, $0) })) == true { return }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out waiting until \(what)")
        throw CancellationError()
    }
}

/// A fleet needs a store every worker reaches: the backend hands a worker its
/// store (``StoreBackend/openFleet(_:)``), and a SQLite file has none to hand.
struct FleetStoreRefusalTests {
    @Test func aWorkerOnASQLiteStoreIsRefusedBeforeItCrawls() async throws {
        let binary = try StoresyncExecutable.locate()
        let job = try KillTestJob(label: "fleet-sqlite", binary: binary,
                                  yaml: FleetTests.marketOnly(name: "alone", store: "store/snapshot.sqlite"))
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let worker = try await CLIConventionsTests().cli(job, ["run", job.jobPath, "--worker", "-q", "--no-progress"])
        #expect(worker.termination == .exited(64), "\(worker)")
        #expect(worker.stderr.contains("--worker needs a store that every worker reaches"), "\(worker)")
        #expect(worker.stderr.contains("postgres://"), "\(worker)")
        // Refused before anything was crawled or stored.
        #expect(!FileManager.default.fileExists(atPath: job.storePath), "a store was created")
        #expect(!FileManager.default.fileExists(atPath: job.outputDirectory.appendingPathComponent("report.json").path))
    }
}
