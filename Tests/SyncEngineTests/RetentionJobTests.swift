import Catalog
import Export
import Foundation
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// `retention:` in a job file: how it is read, and what a run does with it.
@Suite struct RetentionJobTests {
    let directory = TestPaths.temporaryDirectory("retention-job")

    func job(retention: String) throws(StoreSyncError) -> JobSpec {
        try JobLoader.parse(yaml: """
            name: kept
            store: store/snapshot.sqlite
            output: out
            \(retention)
            simulator: {seed: 3, podcasts: 10, products: 60, changed: 0.2, added: 0.05, removed: 0.02}
            sources:
              - {name: market, kind: marketplace, itemsPerPage: 100, removal: {afterMisses: 1, maxRatio: 0.5}}
            exports:
              - {kind: changes-csv, path: changes.csv}
              - {kind: feed, feed: listings-new, rss: listings.xml, selfURL: "https://example.com/listings.xml"}
            """, file: "kept.yml", baseDirectory: directory.path, rules: .cli)
    }

    func issues(_ retention: String) -> [String] {
        do {
            _ = try job(retention: retention)
            return []
        } catch {
            return error.issues.map { "\($0.keyPath): \($0.message)" }
        }
    }

    @Test func daysOrTheBareNumberOfDays() throws {
        #expect(try job(retention: "retention: {days: 90}").retention == RetentionPolicy(days: 90))
        #expect(try job(retention: "retention:\n  days: 7").retention == RetentionPolicy(days: 7))
        #expect(try job(retention: "retention: 30").retention == RetentionPolicy(days: 30))
        #expect(try job(retention: "").retention == nil)
    }

    @Test(arguments: [
        ("retention: 0", "retention: must be between 1 and 36500 days, got 0"),
        ("retention: {days: -5}", "retention.days: must be between 1 and 36500, got -5"),
        ("retention: {days: 1.5}", "retention.days: expected a whole number"),
        ("retention: soon", "retention: expected a number of days or {days: N}"),
        ("retention: {}", "retention.days: is required"),
        ("retention: {day: 30}", "retention.day: unknown key (did you mean 'days'?)"),
        ("retention: [30]", "retention: expected a mapping of keys to values"),
    ])
    func badValuesAreRefusedWithAClearMessage(_ retention: String, _ message: String) {
        let found = issues(retention)
        #expect(found.contains { $0.hasPrefix(message) }, "\(found)")
    }

    @Test func aRunPrunesWhatIsOlderAndSaysSo() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job(retention: "retention: {days: 2}")
        let runner = Runner(job: job, logger: .quiet)
        for night in 1...5 {
            let report = try await runner.run()
            #expect(report.outcome == .ok, "\(report.summaryText)")
            if night <= 2 {
                #expect(report.pruned == nil)
                #expect(!report.summaryText.contains("retention:"))
            } else {
                #expect(report.pruned?.runs == 1)
                #expect(report.pruned?.cutoff == .night(night - 2))
                #expect((report.pruned?.changes ?? 0) > 0)
                #expect(report.summaryText.contains("retention: pruned 1 run (night \(night - 2) and earlier) and "),
                        "\(report.summaryText)")
            }
        }
        let store = try SQLiteBackend().openReadOnly(job.storePath)
        let runs = try store.runs(limit: 100)
        #expect(runs.compactMap(\.night) == [5, 4])
        // The feeds kept for `--as-of` go with their runs.
        #expect(PublishedFeeds(outputDirectory: job.outputDirectory).keptRuns() == runs.map(\.id).sorted())
        var nights = Set<Int64>()
        try store.forEachChange(runID: nil, order: .insertion) { nights.insert($0.runID) }
        #expect(nights.count <= 2)
    }

    @Test func aDryRunPrunesNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job(retention: "retention: 1")
        let runner = Runner(job: job, logger: .quiet)
        _ = try await runner.run()
        _ = try await runner.run()
        let dry = try await runner.run(RunOptions(dryRun: true))
        #expect(dry.pruned == nil)
        let store = try SQLiteBackend().openReadOnly(job.storePath)
        #expect(try store.runs(limit: 100).count == 1, "the second run pruned the first; the dry run left the store alone")
    }
}
