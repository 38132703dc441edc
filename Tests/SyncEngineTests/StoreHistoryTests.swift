import Catalog
import Foundation
import GRDB
import Snapshot
@testable import SyncEngine
import Testing
import TestSupport

/// Invariants 10 and 11: a store never silently starts over, and a run
/// resumed after a kill reports what an uninterrupted run of the same night
/// would (guard warnings, outcome, exit code).
@Suite struct StoreHistoryTests {
    /// A job of local files (no network, no simulator): `sources` files of
    /// `id,name` rows, removed at the first complete miss unless more than
    /// half of a file would go.
    struct FilesJob {
        let directory = TestPaths.temporaryDirectory("store-history")
        let sources = ["a", "b", "c"]

        var yaml: String {
            """
            name: history
            store: state/snapshot.sqlite
            output: out
            sources:
            \(sources.map { "  - { name: \($0), kind: records-file, path: data/\($0).csv, keyField: id, removal: { afterMisses: 1, maxRatio: 0.5 } }" }.joined(separator: "\n"))
            exports:
              - { kind: run-report, path: report.json }
            """
        }

        func spec() throws -> JobSpec {
            try JobLoader.parse(yaml: yaml, file: directory.appendingPathComponent("history.yml").path,
                                baseDirectory: directory.path)
        }

        func writeJobFile() throws {
            try yaml.write(to: directory.appendingPathComponent("history.yml"), atomically: true, encoding: .utf8)
        }

        /// Every source's file lists rows 1…`count`.
        func rows(_ count: Int) throws {
            let data = directory.appendingPathComponent("data")
            try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
            for source in sources {
                let lines = ["id,name"] + (1...count).map { "\($0),item \($0)" }
                try (lines.joined(separator: "\n") + "\n").write(to: data.appendingPathComponent("\(source).csv"),
                                                                 atomically: true, encoding: .utf8)
            }
        }

        var storePath: String { directory.appendingPathComponent("state/snapshot.sqlite").path }

        /// What a failed copy or restore leaves: a zero-length file, no WAL.
        func truncateStore() throws {
            for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
            try Data().write(to: URL(fileURLWithPath: storePath))
        }

        func removeStore() {
            for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: storePath + suffix) }
        }

        func run(_ options: RunOptions = RunOptions(), stopAt: RunStopPoint? = nil) async throws -> RunReport {
            var environment = RunEnvironment(logger: .quiet)
            if let stopAt {
                environment.stopAt = { point in
                    point == stopAt ? StoreSyncError(.storage, "stopped at \(point) as a kill would") : nil
                }
            }
            return try await Runner(job: try spec(), environment: environment).run(options)
        }

        func refusal(_ options: RunOptions = RunOptions()) async throws -> StoreSyncError {
            do {
                let report = try await run(options)
                Issue.record("the run was not refused: run \(report.runID), \(report.outcome)")
                return StoreSyncError(.storage, "not refused")
            } catch let error as StoreSyncError {
                return error
            }
        }
    }

    // MARK: Invariant 10

    @Test func aZeroLengthStoreWhereHistoryWasIsRefusedAndNewStoreStartsOver() async throws {
        let job = FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(10)
        #expect(try await job.run().outcome == .ok)
        #expect(try await job.run().runID == 2)
        #expect(FileManager.default.fileExists(atPath: SQLiteBackend.historyMarker(job.storePath)))

        try job.truncateStore()
        let refused = try await job.refusal()
        #expect(refused.code == .historyMissing)
        #expect(refused.description.contains("the store is empty"), "\(refused)")
        #expect(refused.description.contains("records run 2 of job history"), "\(refused)")
        #expect(refused.description.contains("--new-store"), "\(refused)")
        #expect(refused.location == job.storePath)
        // Refused again on the next night: the refusal itself did not make the empty store acceptable.
        #expect(try await job.refusal().code == .historyMissing)
        // A dry run would diff against nothing: refused the same way.
        #expect(try await job.refusal(RunOptions(dryRun: true)).code == .historyMissing)

        let fresh = try await job.run(RunOptions(newStore: true))
        #expect(fresh.runID == 1)
        #expect(fresh.outcome == .ok)
        #expect(fresh.sources.allSatisfy { $0.counts.added == 10 })
        // The flag cannot stay in a crontab: on a store with history it is refused, and the store is left alone.
        let kept = try await job.refusal(RunOptions(newStore: true))
        #expect(kept.code == .invalidArguments, "\(kept)")
        #expect(kept.description.contains("its last run is run 1"), "\(kept)")
        #expect(try await job.run().runID == 2)
    }

    @Test func aMissingStoreWhereHistoryWasIsRefusedAndNotCreated() async throws {
        let job = FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(5)
        _ = try await job.run()
        job.removeStore()
        let refused = try await job.refusal()
        #expect(refused.code == .historyMissing)
        #expect(refused.description.contains("the store is missing"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: job.storePath), "a refused run must not create an empty store")
        #expect(try await job.run(RunOptions(newStore: true)).runID == 1)
    }

    @Test func aNewJobNeedsNoFlag() async throws {
        let job = FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(3)
        // No marker: nothing says history existed, so the first run is simply the first.
        let first = try await job.run()
        #expect(first.runID == 1 && first.outcome == .ok)
    }

    /// The CLI as cron runs it: the refusal's message on stderr and exit 1, `--new-store` exit 0.
    @Test func theCommandLineRefusesWithExitOneAndNewStoreRecovers() async throws {
        let binary = try StoresyncExecutable.locate()
        let job = FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(4)
        try job.writeJobFile()
        let jobPath = job.directory.appendingPathComponent("history.yml").path
        func storesync(_ arguments: [String]) async throws -> (Termination, String) {
            let err = job.directory.appendingPathComponent("stderr-\(UUID().uuidString)").path
            let child = try ChildProcess(binary.path, ["run", jobPath, "-q", "--no-progress"] + arguments,
                                         stdout: "/dev/null", stderr: err)
            return (await child.wait(), (try? String(contentsOfFile: err, encoding: .utf8)) ?? "")
        }
        #expect(try await storesync([]).0 == .exited(0))
        try job.truncateStore()
        let (refused, message) = try await storesync([])
        #expect(refused == .exited(1), "\(message)")
        #expect(message.contains("storesync: \(job.storePath): the store is empty"), "\(message)")
        #expect(message.contains("storesync run \(jobPath) --new-store"), "\(message)")
        #expect(try await storesync(["--new-store"]).0 == .exited(0))
        let (again, usage) = try await storesync(["--new-store"])
        #expect(again == .exited(64), "\(usage)")
    }

    // MARK: Invariant 11

    /// Night 2 shrinks every file to 2 of 10 rows: each source's guard refuses.
    @Test func aRunKilledAfterItsRemovalPassesResumesWithTheSameWarningsAndOutcome() async throws {
        let reference = FilesJob(), killed = FilesJob()
        defer {
            try? FileManager.default.removeItem(at: reference.directory)
            try? FileManager.default.removeItem(at: killed.directory)
        }
        for job in [reference, killed] {
            try job.rows(10)
            #expect(try await job.run().outcome == .ok)
            try job.rows(2)
        }
        let uninterrupted = try await reference.run()
        #expect(uninterrupted.outcome == .partial)
        #expect(uninterrupted.warnings.count == 3, "\(uninterrupted.warnings)")
        #expect(uninterrupted.warnings.allSatisfy { $0.message.contains("nothing was removed") })

        // The twins live in different folders, and the guard's suggested command names each one's job file.
        func same(_ warnings: [RunProblem], in job: FilesJob) -> [RunProblem] {
            warnings.map { warning in
                var warning = warning
                warning.message = warning.message.replacingOccurrences(of: job.directory.path, with: "DIR")
                return warning
            }
        }
        await #expect(throws: StoreSyncError.self) { try await killed.run(stopAt: .afterRemovalPasses) }
        let resumed = try await killed.run()
        #expect(resumed.resumed)
        #expect(resumed.runID == uninterrupted.runID)
        #expect(same(resumed.warnings, in: killed) == same(uninterrupted.warnings, in: reference))
        #expect(resumed.outcome == uninterrupted.outcome)
        #expect(resumed.outcome.exitCode == 2)
        #expect(resumed.recordRowsWritten == uninterrupted.recordRowsWritten)
        // What monitoring reads agrees too: the stored run and the report file.
        for job in [reference, killed] {
            let stored = try #require(try SQLSnapshotStore(path: job.storePath, readOnly: true).run(resumed.runID))
            #expect(stored.status == .partial)
            #expect(same(stored.totals.warnings, in: job) == same(uninterrupted.warnings, in: reference))
        }
        let report = { (job: FilesJob) throws -> String in
            try String(contentsOf: job.directory.appendingPathComponent("out/report.json"), encoding: .utf8)
        }
        #expect(try report(killed).contains("would be removed, above maxRemovalRatio"))
        // The night after reports its own guard again (the misses were not counted twice).
        let next = try await killed.run(), nextReference = try await reference.run()
        #expect(same(next.warnings, in: killed) == same(nextReference.warnings, in: reference))
        #expect(next.outcome == nextReference.outcome)
    }
}

/// Invariant 10's second half: a first run is a baseline, so the new-items
/// feeds do not announce the whole catalogue, on a new store or one started over.
@Suite struct BaselineFeedTests {
    func job(_ directory: URL) throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: baseline
            store: state/snapshot.sqlite
            output: out
            simulator: { seed: 7, podcasts: 300, products: 200, changed: 0.02, added: 0.05, removed: 0.01 }
            sources:
              - { name: genres, kind: itunes-genres, roots: [26] }
              - { name: podcasts, kind: itunes-search, media: podcast, terms: [news, history], pageSize: 200 }
              - { name: market, kind: marketplace, itemsPerPage: 100 }
            exports:
              - { kind: feed, feed: podcasts-new, rss: "feeds/genres/{genre}.xml", title: "New {genre} podcasts", selfURL: "https://example.com/{genre}.xml", limit: 500 }
              - { kind: feed, feed: podcasts-new, rss: feeds/podcasts-new.xml, title: New podcasts, selfURL: "https://example.com/p.xml", limit: 500 }
              - { kind: feed, feed: listings-new, rss: feeds/listings-new.xml, title: New listings, selfURL: "https://example.com/l.xml", limit: 500 }
              - { kind: feed, feed: changes, rss: feeds/changes.xml, title: Changes, selfURL: "https://example.com/c.xml", limit: 5000 }
            """, file: "baseline.yml", baseDirectory: directory.path)
    }

    func items(_ directory: URL, _ name: String) throws -> Int {
        let text = try String(contentsOf: directory.appendingPathComponent("out/feeds/\(name)"), encoding: .utf8)
        return text.components(separatedBy: "<item>").count - 1
    }

    func genreFeedItems(_ directory: URL) -> Int {
        let folder = directory.appendingPathComponent("out/feeds/genres")
        let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        return files.reduce(0) { $0 + ((try? items(directory, "genres/\($1)")) ?? 0) }
    }

    @Test func aFirstRunsNewItemFeedsListNothingAndTheNextListOnlyWhatAppeared() async throws {
        let directory = TestPaths.temporaryDirectory("baseline-feeds")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job(directory)
        let first = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        #expect(first.outcome == .ok, "\(first.errors)")
        let found = first.sources.reduce(0) { $0 + $1.counts.added }
        #expect(found > 200, "the baseline found the catalogue")
        #expect(try items(directory, "podcasts-new.xml") == 0)
        #expect(try items(directory, "listings-new.xml") == 0)
        #expect(try items(directory, "changes.xml") == 0)
        #expect(genreFeedItems(directory) == 0)

        let second = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        let podcasts = try #require(second.sources.first { $0.name == "podcasts" }).counts
        let market = try #require(second.sources.first { $0.name == "market" }).counts
        #expect(podcasts.added > 0 && market.added > 0, "the world added something on night 2")
        // What appeared tonight, and nothing of the baseline.
        #expect(try items(directory, "podcasts-new.xml") == podcasts.added)
        #expect(try items(directory, "listings-new.xml") == market.added)
        #expect(genreFeedItems(directory) == podcasts.added)
        #expect(try items(directory, "changes.xml") > 0)
    }
}

/// A run killed while it exports: the crawl is stored, the exports are not,
/// and every surface says so until a run or `storesync export` writes them.
@Suite struct KilledWhileExportingTests {
    @Test(arguments: ["run", "export"])
    func statusSaysTheExportsWereNotWrittenUntilTheyAre(_ recovery: String) async throws {
        let job = StoreHistoryTests.FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(4)
        do {
            _ = try await job.run(stopAt: .beforeExports)
            Issue.record("the run was not stopped")
        } catch {}
        let spec = try job.spec()
        let report = job.directory.appendingPathComponent("out/report.json")
        #expect(!FileManager.default.fileExists(atPath: report.path))

        let status = try JobStatus.load(job: spec)
        #expect(status.text.contains("exports not written"), "\(status.text)")
        #expect(status.text.contains("the next `storesync run` of the same night writes them"), "\(status.text)")
        let json = try #require(try JSONParser.parse(Array(MachineOutput.statusJSON(status).utf8)).objectValue)
        let run = try #require(json["runs"]?.arrayValue?.first?.objectValue)
        #expect(run["status"] == .string("running"), "\(run)")
        #expect(run["exitCode"] == .null, "\(run)")
        #expect(run["exported"] == .bool(false), "\(run)")

        if recovery == "run" {
            let resumed = try await job.run()
            #expect(resumed.runID == 1 && resumed.resumed, "the same run writes its exports: \(resumed.summaryText)")
        } else {
            _ = try Reexport.run(job: spec, logger: .quiet)
        }
        #expect(FileManager.default.fileExists(atPath: report.path))
        let after = try JobStatus.load(job: spec)
        #expect(!after.text.contains("exports not written"), "\(after.text)")
        let afterRun = try #require(try JSONParser.parse(Array(MachineOutput.statusJSON(after).utf8)).objectValue?["runs"]?.arrayValue?.first?.objectValue)
        #expect(afterRun["status"] == .string("ok") && afterRun["exitCode"] == .int(0) && afterRun["exported"] == .bool(true), "\(afterRun)")
    }
}

/// One store, one job: a second job pointed at the store is refused before it
/// writes anything, and the store is handed over only on purpose.
@Suite struct StoreOwnerTests {
    func renamed(_ job: StoreHistoryTests.FilesJob, to name: String) throws -> JobSpec {
        try JobLoader.parse(yaml: job.yaml.replacingOccurrences(of: "name: history", with: "name: \(name)"),
                            file: job.directory.appendingPathComponent("\(name).yml").path, baseDirectory: job.directory.path)
    }

    @Test func anotherJobIsRefusedUntilTheStoreIsHandedOver() async throws {
        let job = StoreHistoryTests.FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(4)
        _ = try await job.run()
        func contents() throws -> [String] {
            let store = try SQLSnapshotStore(path: job.storePath, readOnly: true)
            return try store.runs(limit: 10).map { "\($0.id) \($0.job) \($0.status)" }
                + store.records(source: "a").map { "\($0.key) \($0.hash)" }
        }
        let before = try contents()
        let other = try renamed(job, to: "other")

        for options in [RunOptions(), RunOptions(dryRun: true)] {
            do {
                _ = try await Runner(job: other, environment: RunEnvironment(logger: .quiet)).run(options)
                Issue.record("another job ran on the store (dry run: \(options.dryRun))")
            } catch {
                #expect(error.code == .storeOfAnotherJob, "\(error)")
                #expect(error.description.contains("belongs to job 'history'"), "\(error)")
                #expect(error.description.contains("--take-over-from history"), "\(error)")
            }
        }
        do {
            _ = try Reexport.run(job: other, logger: .quiet)
            Issue.record("another job exported the store")
        } catch {
            #expect(error.code == .storeOfAnotherJob, "\(error)")
        }
        #expect(try contents() == before, "the refused job wrote to the store")

        // Naming the wrong owner is refused too.
        var wrong = RunOptions()
        wrong.takeOverFrom = "somebody"
        do {
            _ = try await Runner(job: other, environment: RunEnvironment(logger: .quiet)).run(wrong)
            Issue.record("a take-over naming the wrong owner ran")
        } catch {
            #expect(error.code == .invalidArguments, "\(error)")
        }

        // Handed over on purpose: the run goes on from the store's history, as the new job.
        var takeOver = RunOptions()
        takeOver.takeOverFrom = "history"
        let handed = try await Runner(job: other, environment: RunEnvironment(logger: .quiet)).run(takeOver)
        #expect(handed.outcome == .ok && handed.runID == 2, "\(handed.summaryText)")
        // Now it is the new job's: the flag left in a crontab is refused, the old name too.
        do {
            _ = try await Runner(job: other, environment: RunEnvironment(logger: .quiet)).run(takeOver)
            Issue.record("the take-over flag was accepted twice")
        } catch {
            #expect(error.code == .invalidArguments, "\(error)")
        }
        let refusedOld = try await job.refusal()
        #expect(refusedOld.code == .storeOfAnotherJob, "\(refusedOld)")
        #expect(try await Runner(job: other, environment: RunEnvironment(logger: .quiet)).run().runID == 3)
    }
}

/// A store removed while a run writes it: that run fails, and the next night
/// is refused as a lost store (the output folder's marker remembers the run),
/// not started over as run 1.
@Suite struct StoreRemovedMidRunTests {
    @Test func aRunThatLosesItsStoreFailsAndTheNextNightIsRefused() async throws {
        let job = StoreHistoryTests.FilesJob()
        defer { try? FileManager.default.removeItem(at: job.directory) }
        try job.rows(4)
        let first = try await job.run()
        #expect(first.outcome == .ok)

        try job.rows(6)
        var environment = RunEnvironment(logger: .quiet)
        let state = job.directory.appendingPathComponent("state")
        environment.stopAt = { point in
            // Not a kill: the folder goes (an operator's cleanup, a volume remounted) and the run goes on.
            if point == .afterRemovalPasses { try? FileManager.default.removeItem(at: state) }
            return nil
        }
        do {
            let report = try await Runner(job: try job.spec(), environment: environment).run()
            Issue.record("the run that lost its store ended \(report.outcome)")
        } catch let error as StoreSyncError {
            #expect(error.code == .storeLost, "\(error)")
            #expect(error.description.contains("removed while this run wrote it"), "\(error)")
        }
        #expect(!FileManager.default.fileExists(atPath: state.path) || !FileManager.default.fileExists(atPath: job.storePath))

        // The next night: the store and its marker are gone, the output folder remembers.
        let refused = try await job.refusal()
        #expect(refused.code == .historyMissing, "\(refused)")
        #expect(refused.description.contains(".storesync-history records the exports of run 1 of job history"), "\(refused)")
        #expect(!FileManager.default.fileExists(atPath: job.storePath), "the refused run created a store")

        // Starting over is a choice.
        var newStore = RunOptions()
        newStore.newStore = true
        let again = try await job.run(newStore)
        #expect(again.outcome == .ok && again.runID == 1)
    }
}
