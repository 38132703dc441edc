import Catalog
import Foundation
import GRDB
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// A store written by the release before the entity model upgrades in place
/// with nothing lost (issue 13).
@Suite struct UpgradeTests {
    static let fixture = TestPaths.repoRoot.appendingPathComponent("Tests/SyncEngineTests/Fixtures/store-v9")

    /// The fixture copied to a fresh folder (a test never writes the checked-in file).
    func copyOfFixture() throws -> (job: JobSpec, directory: URL) {
        let directory = TestPaths.temporaryDirectory("upgrade")
        for name in ["job.yml", "snapshot.sqlite"] {
            try FileManager.default.copyItem(at: Self.fixture.appendingPathComponent(name), to: directory.appendingPathComponent(name))
        }
        let job = try JobLoader.load(path: directory.appendingPathComponent("job.yml").path, rules: .cli)
        return (job, directory)
    }

    struct Stored: Equatable {
        var records: [String]
        var changes: Int
        var runs: [String]
    }

    func stored(_ path: String) throws -> Stored {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path, configuration: configuration).read { db in
            Stored(records: try String.fetchAll(db, sql: "SELECT source || '|' || entity || '|' || key || '|' || hash || '|' || payload FROM records ORDER BY 1"),
                   changes: try Int.fetchOne(db, sql: "SELECT count(*) FROM changes") ?? 0,
                   runs: try String.fetchAll(db, sql: "SELECT id || '|' || status || '|' || night FROM runs ORDER BY id"))
        }
    }

    @Test func anOlderStoreUpgradesInPlaceWithNothingLostAndOneRowPerEntity() throws {
        let (job, _) = try copyOfFixture()
        let before = try stored(job.storePath)
        #expect(before.runs.count == 3)
        #expect(before.records.count > 500)

        let store = try SQLSnapshotStore(path: job.storePath)
        try store.prepareEntities(job.sourceMappings)
        let after = try stored(job.storePath)
        #expect(after == before, "every record, change and run is kept as it was")

        // One row per entity: a podcast that both charts and search listed is one.
        var configuration = Configuration()
        configuration.readonly = true
        let (podcastSightings, podcasts, listings, detailSightings): (Int, Int, Int, Int) = try DatabaseQueue(path: job.storePath, configuration: configuration).read { db in
            (try Int.fetchOne(db, sql: "SELECT count(DISTINCT key) FROM records WHERE entity = 'podcast'") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM entities WHERE entity = 'podcast'") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(*) FROM entities WHERE entity = 'listing'") ?? 0,
             try Int.fetchOne(db, sql: "SELECT count(DISTINCT key) FROM records WHERE entity IN ('listing', 'listing-detail')") ?? 0)
        }
        #expect(podcasts == podcastSightings)
        #expect(listings == detailSightings, "a product's detail is part of its listing")
        #expect(try store.recordCount(of: .episode) > 0)
        #expect(try store.entities().contains(.listingDetail) == false)
        // Rebuilt once: a second preparation changes nothing.
        try store.prepareEntities(job.sourceMappings)
        #expect(try store.recordCount(of: .podcast) == podcasts)
    }

    @Test func theNextRunOfAnUpgradedStoreEndsOk() async throws {
        let (job, _) = try copyOfFixture()
        let report = try await Runner(job: job, logger: .quiet).run()
        #expect(report.outcome == .ok, "\(report.warnings) \(report.errors)")
        #expect(report.night == 4)
        let store = try SQLSnapshotStore(path: job.storePath, readOnly: true)
        #expect(try store.runs(limit: 10).count == 4)
        // The chart entries stored by rank slot make way for entries keyed by item, at once.
        var keys: [String] = []
        try store.forEachRecord(of: .chartEntry, columns: [], order: .insertion) { keys.append($0.key) }
        #expect(!keys.isEmpty)
        #expect(keys.allSatisfy { $0.split(separator: "|", omittingEmptySubsequences: false).count == 5 })
    }
}
