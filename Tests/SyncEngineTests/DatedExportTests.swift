import Catalog
import Crawl
import Foundation
import StoreSim
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// `{date}` in every export path and `keep: N`, as nightly cron runs see them.
@Suite struct DatedExportTests {
    let directory = TestPaths.temporaryDirectory("dated-exports")

    func job(_ exports: String, store: String = "store/snapshot.sqlite") throws(StoreSyncError) -> JobSpec {
        try JobLoader.parse(yaml: """
            name: dated
            store: \(store)
            output: out
            simulator: {seed: 3, podcasts: 10, products: 60, changed: 0.2, added: 0.05, removed: 0.02}
            sources:
              - {name: market, kind: marketplace, itemsPerPage: 100, removal: {afterMisses: 1, maxRatio: 0.5}}
            exports:
            \(exports)
            """, file: "dated.yml", baseDirectory: directory.path, rules: .cli)
    }

    func issues(_ exports: String, store: String = "store/snapshot.sqlite") -> [String] {
        do {
            _ = try job(exports, store: store)
            return []
        } catch {
            return error.issues.map { "\($0.keyPath): \($0.message)" }
        }
    }

    func files(_ folder: String) -> [String] {
        let url = directory.appendingPathComponent("out").appendingPathComponent(folder)
        return ((try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test func threeNightsKeepTheNewestTwoDatedFiles() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job("""
              - {kind: changes-csv, path: "changes-{date}.csv", keep: 2}
              - {kind: sqlite, path: "db/{job}-{date}.sqlite", keep: 2}
              - {kind: run-report, path: "reports/report-{date}.json", keep: 2}
              - {kind: run-report, path: report.json}
            """)
        #expect(job.exportKeep == ["changes-{date}.csv": 2, "db/{job}-{date}.sqlite": 2, "reports/report-{date}.json": 2])
        // One night a day: each run is stamped a day after the last.
        let today = Mutex(Date(timeIntervalSince1970: 1_795_308_886)) // 2026-11-22
        let runner = Runner(job: job, environment: RunEnvironment(
            services: SimulatedServices(job.simulator!), now: { today.withLock { $0 } }, logger: .quiet))
        // A file of the user's next to the dated ones: not the template's, never pruned.
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("out"), withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: directory.appendingPathComponent("out/changes-mine.txt"))
        for night in 1...3 {
            let report = try await runner.run()
            #expect(report.outcome == .ok, "night \(night): \(report.summaryText)")
            today.withLock { $0.addTimeInterval(86_400) }
        }
        #expect(files("").filter { $0.hasPrefix("changes") } == ["changes-2026-11-23.csv", "changes-2026-11-24.csv", "changes-mine.txt"])
        #expect(files("db") == ["dated-2026-11-23.sqlite", "dated-2026-11-24.sqlite"])
        #expect(files("reports") == ["report-2026-11-23.json", "report-2026-11-24.json"])
        #expect(files("").contains("report.json"))
        // No literal template left anywhere.
        #expect(!files("").contains { $0.contains("{") })

        // `storesync export` of the same night again leaves the set as it is.
        _ = try Reexport.run(job: job, logger: .quiet)
        #expect(files("db") == ["dated-2026-11-23.sqlite", "dated-2026-11-24.sqlite"])
    }

    /// The store in the output folder, dated exports beside it and a user's own
    /// file: `keep` removes only what it wrote, never the store or the user's file.
    @Test func keepBesideTheStoreRemovesOnlyItsOwnFiles() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job("""
              - {kind: sqlite, path: "{date}.sqlite", keep: 1}
              - {kind: changes-csv, path: "{date}.csv", keep: 2}
              - {kind: changes-csv, path: changes.csv}
            """, store: "out/snapshot.sqlite")
        let today = Mutex(Date(timeIntervalSince1970: 1_795_308_886)) // 2026-11-22
        let runner = Runner(job: job, environment: RunEnvironment(
            services: SimulatedServices(job.simulator!), now: { today.withLock { $0 } }, logger: .quiet))
        try FileManager.default.createDirectory(at: directory.appendingPathComponent("out"), withIntermediateDirectories: true)
        try Data("mine".utf8).write(to: directory.appendingPathComponent("out/budget.csv"))
        // A dated file from before storesync kept a record: named in a warning, never removed.
        try Data("old".utf8).write(to: directory.appendingPathComponent("out/2026-01-01.csv"))
        var runs: [Int64] = []
        for night in 1...3 {
            let report = try await runner.run()
            #expect(report.outcome == .ok, "night \(night): \(report.summaryText)")
            runs.append(report.runID)
            today.withLock { $0.addTimeInterval(86_400) }
        }
        // Three nights on one store: the store was never removed under the run (no start over as run 1).
        #expect(runs == [1, 2, 3])
        #expect(files("").filter { !$0.hasPrefix("snapshot.sqlite") } == [
            "2026-01-01.csv", "2026-11-23.csv", "2026-11-24.csv", "2026-11-24.sqlite", "budget.csv", "changes.csv"], "\(files(""))")
        #expect(files("").contains("snapshot.sqlite"))
    }

    /// An export that could write one of the store's files is refused by `validate` and `run` alike.
    @Test(arguments: ["snapshot.sqlite", "{job}.sqlite", "{job}.sqlite-wal", "{date}.sqlite", "snapshot{date}", "{date}-snapshot.sqlite"])
    func anExportOverTheStoreIsRefused(_ path: String) {
        let found = issues(#"  - {kind: sqlite, path: "\#(path)"}"#, store: "out/dated.sqlite")
            + issues(#"  - {kind: sqlite, path: "\#(path)"}"#, store: "out/snapshot.sqlite")
        let expectRefused = ["snapshot.sqlite", "{job}.sqlite", "{job}.sqlite-wal"].contains(path)
        #expect(found.contains { $0.contains("could overwrite the snapshot store's file") } == expectRefused, "\(found)")
    }

    @Test(arguments: [
        (#"- {kind: changes-csv, path: changes.csv, keep: 2}"#, "exports[0].keep: needs a file name with {date}"),
        (#"- {kind: changes-csv, path: "{date}/changes.csv", keep: 2}"#, "exports[0].keep: needs a file name with {date}"),
        (#"- {kind: changes-csv, path: "c-{date}.csv", keep: 0}"#, "exports[0].keep: must be between 1 and 100000, got 0"),
        (#"- {kind: sqlite, path: "{genre}.sqlite"}"#, "exports[0].path: unknown template variable(s) {genre}"),
        (#"- {kind: csv, directory: "t", keep: 2}"#, "exports[0].keep: unknown key"),
    ])
    func badKeepsAndTemplatesAreRefused(_ export: String, _ message: String) {
        let found = issues("  " + export)
        #expect(found.contains { $0.hasPrefix(message) }, "\(found)")
    }
}
