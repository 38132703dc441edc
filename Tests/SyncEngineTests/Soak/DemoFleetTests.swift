import Catalog
import Foundation
import Logging
import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// Issue 27: the demo job crawled by a fleet of three workers on PostgreSQL,
/// then ended by `storesync export` (``Runner/exportOwedNight()``), writes
/// every file one SQLite process writes: the consumer database, the CSVs, the
/// feeds with their artwork mirror, the OPML, the report and the metrics
/// (durations and the store's random identity blanked, as ``DemoGoldenTests`` does).
@Suite(.enabled(if: TemporaryPostgres.testsEnabled, Comment(rawValue: TemporaryPostgres.skipReason)))
struct DemoFleetTests {
    @Test func theDemoAsAFleetWritesWhatOneProcessWrites() async throws {
        let single = SoakTests(), fleet = SoakTests()
        let url = try await TemporaryPostgres.shared().createDatabase()
        let singleJob = try single.demoJob(podcasts: 150, products: 60, maxFeeds: 3)
        let fleetJob = try fleet.demoJob(podcasts: 150, products: 60, maxFeeds: 3, store: url)
        for night in 1...2 {
            let stamp = DemoGoldenTests.stamp(night: night)
            func environment(_ job: JobSpec) -> RunEnvironment {
                RunEnvironment(services: SimulatedServices(job.simulator!), now: { stamp }, logger: .quiet)
            }
            let reference = try await Runner(job: singleJob, environment: environment(singleJob)).run(RunOptions(night: night))
            #expect(reference.outcome == .ok, "night \(night):\n\(reference.summaryText)")
            let workers = try await withThrowingTaskGroup(of: RunReport.self) { group in
                for worker in 1...3 {
                    group.addTask {
                        var options = RunOptions(night: night)
                        options.worker = WorkerOptions(fleet: "demo-\(night)", name: "w\(worker)", leaseSeconds: 30)
                        return try await Runner(job: fleetJob, environment: environment(fleetJob)).run(options)
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(workers.allSatisfy { $0.outcome == reference.outcome && $0.exports.isEmpty })
            let ended = try #require(try await Runner(job: fleetJob, environment: environment(fleetJob)).exportOwedNight())
            #expect(ended.outcome == reference.outcome && ended.runID == reference.runID, "\(ended.summaryText)")

            let ours = try DemoGoldenTests.fingerprints(of: URL(fileURLWithPath: fleetJob.outputDirectory))
            let theirs = try DemoGoldenTests.fingerprints(of: URL(fileURLWithPath: singleJob.outputDirectory))
            #expect(theirs.keys.contains { $0.hasPrefix("artwork/") }, "the demo mirrors no artwork")
            #expect(theirs.count > 20)
            let different = Set(ours.keys).union(theirs.keys).sorted().filter { ours[$0] != theirs[$0] }
            #expect(different.isEmpty, "night \(night): \(different.count) files differ: \(different.prefix(20))")
        }
        try? FileManager.default.removeItem(at: single.directory)
        try? FileManager.default.removeItem(at: fleet.directory)
    }
}
