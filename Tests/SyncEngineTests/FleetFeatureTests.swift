import Catalog
import Export
import Foundation
import Logging
import Snapshot
import StoreSim
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// Issue 27, item 6: the features a night ends with, in a fleet night as in
/// one process's: dated exports pruned by `keep`, stale temporaries swept,
/// `retention:`, enclosure checks, a genre's file swept when its genre goes,
/// and the feeds kept for `export --as-of`. Four nights a day apart, one
/// process on SQLite beside two workers and an export on PostgreSQL.
@Suite(.enabled(if: TemporaryPostgres.testsEnabled, Comment(rawValue: TemporaryPostgres.skipReason)))
struct FleetFeatureTests {
    static func yaml(store: String) -> String {
        """
        name: features
        store: \(store)
        output: out
        retention: 2
        simulator: { seed: 5, podcasts: 80, products: 60, changed: 0.15, added: 0.05, removed: 0.05 }
        sources:
          - {name: market, kind: marketplace, itemsPerPage: 20, removal: {afterMisses: 1, maxRatio: 0.5}}
          - {name: podcasts, kind: itunes-search, terms: [news, history, science], pageSize: 20, removal: {maxRatio: 0.5}}
          - {name: songs, kind: itunes-search, media: music, entity: song, terms: [love, night], pageSize: 25, removal: {maxRatio: 0.5}}
        exports:
          - {kind: sqlite, path: "db/{date}.sqlite", keep: 2}
          - {kind: changes-csv, path: "changes-{date}.csv", keep: 2}
        \(EnclosureCheckTests.musicFeed(limit: 20, check: true))
          - {kind: feed, feed: podcasts-new, rss: "feeds/genres/{genre}.xml", selfURL: "https://example.com/{genre}.xml"}
          - {kind: feed, feed: changes, rss: feeds/changes.xml, selfURL: "https://example.com/changes.xml"}
          - {kind: run-report, path: report.json}
        """
    }

    static func job(_ directory: URL, store: String) throws -> JobSpec {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("job.yml").path
        try yaml(store: store).write(toFile: path, atomically: true, encoding: .utf8)
        return try JobLoader.load(path: path, rules: .cli)
    }

    /// A temporary file a killed writer left (its process is gone), as the next night finds it.
    static func plantStaleTemporary(in output: String) throws -> URL {
        let feeds = URL(fileURLWithPath: output).appendingPathComponent("feeds")
        try FileManager.default.createDirectory(at: feeds, withIntermediateDirectories: true)
        // The largest pid Linux hands out is 4194304: this one is nobody's.
        let url = feeds.appendingPathComponent(".music.xml.tmp-4999999-00000000deadbeef")
        try Data("<rss><channel>half a feed".utf8).write(to: url)
        return url
    }

    @Test func datedExportsRetentionEnclosureChecksAndKeptFeedsEndAFleetNightAsTheyEndOneProcesss() async throws {
        let directory = TestPaths.temporaryDirectory("fleet-features")
        let single = try Self.job(directory.appendingPathComponent("single"), store: "store/snapshot.sqlite")
        let url = try await TemporaryPostgres.shared().createDatabase()
        let fleet = try Self.job(directory.appendingPathComponent("fleet"), store: url)
        let today = Mutex(FleetTests.start)
        func environment(_ job: JobSpec) -> RunEnvironment {
            RunEnvironment(services: SimulatedServices(job.simulator!), now: { today.withLock { $0 } }, logger: Logger(label: "fleet-features"))
        }
        var runs: [Int64] = []
        var gone = 0
        for night in 1...4 {
            today.withLock { $0 = FleetTests.start.addingTimeInterval(Double(night - 1) * 86_400) }
            let stale = try [single, fleet].map { try Self.plantStaleTemporary(in: $0.outputDirectory) }
            let reference = try await Runner(job: single, environment: environment(single)).run()
            #expect(reference.outcome == .ok, "\(reference.summaryText)")
            for worker in 1...2 {
                var options = RunOptions()
                options.worker = WorkerOptions(fleet: "night-\(night)", name: "w\(worker)", leaseSeconds: 30)
                _ = try await Runner(job: fleet, environment: environment(fleet)).run(options)
            }
            let ended = try #require(try await Runner(job: fleet, environment: environment(fleet)).exportOwedNight())
            #expect(ended.outcome == reference.outcome && ended.runID == reference.runID, "\(ended.summaryText)")
            runs.append(ended.runID)
            // Enclosures asked about, and what they withheld, alike.
            let checks = try #require(reference.enclosures)
            #expect(checks.checked > 0, "\(checks)")
            gone += checks.gone
            #expect(ended.enclosures == reference.enclosures)
            // Retention pruned the same runs and change rows (the files' sizes are each engine's own).
            #expect(ended.pruned?.runs == reference.pruned?.runs && ended.pruned?.changes == reference.pruned?.changes
                    && ended.pruned?.cutoff == reference.pruned?.cutoff)
            if night >= 4 { #expect((reference.pruned?.runs ?? 0) > 0, "\(reference.summaryText)") }
            for file in stale { #expect(!FileManager.default.fileExists(atPath: file.path), "\(file.path) was left") }
            try StoreComparison.expectSameStore(url, single.storePath, directory: directory, label: "night \(night)")
            // keep: 2 of each dated export, the swept genre files and the kept feeds included.
            try StoreComparison.expectSameExports(URL(fileURLWithPath: single.outputDirectory), URL(fileURLWithPath: fleet.outputDirectory))
        }
        #expect(gone > 0, "no night's checks found a gone media file: the withheld path went untested")
        let dated = try FileManager.default.contentsOfDirectory(atPath: URL(fileURLWithPath: fleet.outputDirectory).appendingPathComponent("db").path)
        #expect(dated.filter { $0.hasSuffix(".sqlite") }.count == 2, "\(dated)")

        // The oldest night retention keeps, as of then, from either store: the same files.
        let kept = try PostgresBackend().open(url).runs(limit: 10).map(\.id)
        let oldest = try #require(kept.min())
        #expect(oldest > runs[0], "retention pruned night 1 (runs kept: \(kept))")
        let fromSQLite = try Reexport.asOf(job: single, selector: String(oldest), into: directory.appendingPathComponent("as-of-single").path,
                                           logger: .quiet)
        let fromPostgres = try Reexport.asOf(job: fleet, selector: String(oldest), into: directory.appendingPathComponent("as-of-fleet").path,
                                             logger: .quiet)
        #expect(fromSQLite.files.count == fromPostgres.files.count && fromSQLite.files.count > 5)
        let written = fromSQLite.files.map { SnapshotExporter.relativePath($0.path, in: directory.appendingPathComponent("as-of-single").path) }
        #expect(written.contains("feeds/music.xml") && written.contains { $0.hasPrefix("db/") }, "\(written)")
        for file in written {
            let a = try Data(contentsOf: directory.appendingPathComponent("as-of-single/\(file)"))
            let b = try Data(contentsOf: directory.appendingPathComponent("as-of-fleet/\(file)"))
            let same = a == b
            #expect(same, "as of run \(oldest): \(file) differs between the two stores")
        }
        // A night retention let go of is refused on both, its kept feeds gone with it.
        #expect(throws: StoreSyncError.self) { try Reexport.asOf(job: fleet, selector: String(runs[0]), into: nil, logger: .quiet) }
        try? FileManager.default.removeItem(at: directory)
    }
}
