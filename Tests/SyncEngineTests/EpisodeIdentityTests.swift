import Catalog
import Crawl
import Foundation
import Logging
@testable import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// Issue 28, item 8: an episode that iTunes Lookup lists (by `trackId`) and
/// its podcast's feed lists (by GUID) is one entity, one row, on both
/// engines; and a store an older release wrote, with the two apart, comes
/// together on upgrade without a phantom change.
@Suite struct EpisodeIdentityTests {
    static func yaml(store: String) -> String {
        """
        name: episode-identity
        store: \(store)
        output: out
        simulator: { seed: 11, podcasts: 60, products: 10, changed: 0.1, added: 0.05, removed: 0.05 }
        sources:
          - name: podcasts
            kind: itunes-search
            terms: [news, history]
            removal: { afterMisses: 1, maxRatio: 0.5 }
          - name: lookup
            kind: itunes-lookup
            from: podcasts
            lookupEntity: podcastEpisode
            limit: 200
            removal: { afterMisses: 1, maxRatio: 0.5 }
          - name: feeds
            kind: podcast-feed
            from: podcasts
            select: all
            maxFeeds: 8
            removal: { afterMisses: 1, maxRatio: 0.5 }
        exports:
          - { kind: sqlite, path: consumer.sqlite }
        """
    }

    static let start = Date(timeIntervalSince1970: 1_790_000_000)

    static func job(_ directory: URL, store: String) throws -> JobSpec {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let path = directory.appendingPathComponent("job.yml").path
        try yaml(store: store).write(toFile: path, atomically: true, encoding: .utf8)
        return try JobLoader.load(path: path, rules: .cli)
    }

    static func night(_ job: JobSpec) async throws -> RunReport {
        let environment = RunEnvironment(services: job.simulator.map(SimulatedServices.init) ?? LiveServices(), now: { start },
                                         logger: Logger(label: "episode-identity"))
        return try await Runner(job: job, environment: environment).run()
    }

    static func store(_ engine: StoreEngine, _ directory: URL) async throws -> String {
        if engine == .sqlite { return directory.appendingPathComponent("store/snapshot.sqlite").path }
        return try await engine.makeLocation()
    }

    /// Rows of a table as text, sorted: what two stores must agree on.
    static func rows(_ location: String, _ sql: String) throws -> [String] {
        let store = try StoreEngine.open(location)
        return try store.engine.read { db in
            try db.rows(sql, []).map { row in row.values.map { "\($0)" }.joined(separator: " | ") }
        }.sorted()
    }

    @Test(arguments: StoreEngine.tested)
    func anEpisodeListedByLookupAndByItsFeedIsOneRow(engine: StoreEngine) async throws {
        let directory = TestPaths.temporaryDirectory("episode-identity-\(engine)")
        let job = try Self.job(directory, store: await Self.store(engine, directory))
        for night in 1...2 {
            let report = try await Self.night(job)
            #expect(report.outcome == .ok, "night \(night): \(report.summaryText)")
            let store = try StoreEngine.open(job.storePath)
            let lookup = try store.records(source: "lookup").filter { $0.entity == .episode }
            let feeds = try store.records(source: "feeds").filter { $0.entity == .episode }
            #expect(lookup.count > 50 && feeds.count > 20, "night \(night): \(lookup.count) lookup, \(feeds.count) feed episodes")
            // Every Lookup row of the simulator has a GUID: keyed by podcast and GUID, as the feed keys its item.
            for record in lookup {
                let wire = try #require(try JSONParser.parse(Array(record.payload.utf8)).objectValue)
                #expect(record.key == "\(wire["collectionId"]?.integerText ?? "?")|\(wire["episodeGuid"]?.stringValue ?? "?")")
            }
            let both = Set(lookup.map(\.key)).intersection(feeds.map(\.key))
            #expect(both.count > 20, "night \(night): the crawled feeds' episodes are Lookup's too")

            let episodes = try store.engine.read { db in
                try db.rows("SELECT key, fields FROM entities WHERE entity = 'episode'", []).map { (key: $0[0] as String, fields: $0[1] as String) }
            }
            #expect(episodes.count == Set(lookup.map(\.key)).union(feeds.map(\.key)).count, "night \(night): one row per episode")
            var identities = Set<String>()
            var merged = 0
            for episode in episodes {
                let fields = try #require(try JSONParser.parse(Array(episode.fields.utf8)).objectValue)
                if let podcast = fields["podcast_id"]?.stringValue, let guid = fields["guid"]?.stringValue {
                    #expect(identities.insert("\(podcast)|\(guid)").inserted, "night \(night): two rows for \(podcast)|\(guid)")
                }
                // Lookup's iTunes id and the feed's own fields, in one row.
                if both.contains(episode.key) {
                    #expect(fields["track_id"] != nil && fields["link"] != nil, "night \(night): \(episode.key) \(fields.keys.sorted())")
                    merged += 1
                }
            }
            #expect(merged == both.count)
        }
    }

    /// A store written by the release before (mapping 2: Lookup's episodes
    /// keyed by `trackId`, two rows for one episode) runs its next night and
    /// ends where a store this release wrote from the start ends: the same
    /// records, entities and misses, and the same change log for the night.
    @Test(arguments: StoreEngine.tested)
    func aStoreWithTheEpisodesApartComesTogetherOnUpgradeWithoutAPhantomChange(engine: StoreEngine) async throws {
        let directory = TestPaths.temporaryDirectory("episode-upgrade-\(engine)")
        let control = try Self.job(directory.appendingPathComponent("control"), store: await Self.store(engine, directory.appendingPathComponent("control")))
        let upgraded = try Self.job(directory.appendingPathComponent("upgraded"), store: await Self.store(engine, directory.appendingPathComponent("upgraded")))
        for job in [control, upgraded] {
            #expect(try await Self.night(job).outcome == .ok)
        }

        // The older release's store: every Lookup episode under its trackId, its
        // history there too, entities rebuilt by the old rule, the old fingerprint.
        let old = try StoreEngine.open(upgraded.storePath)
        let moved = try old.engine.write { db -> Int in
            var moved = 0
            for row in try db.rows("SELECT key, payload FROM records WHERE source = 'lookup' AND entity = 'episode'", []) {
                let key: String = row[0]
                let payload: String = row[1]
                let trackID = try #require(try JSONParser.parse(Array(payload.utf8)).objectValue?["trackId"]?.integerText)
                try db.execute("UPDATE records SET key = ? WHERE source = 'lookup' AND entity = 'episode' AND key = ?", [trackID, key])
                try db.execute("UPDATE changes SET key = ? WHERE source = 'lookup' AND entity = 'episode' AND key = ?", [trackID, key])
                try db.execute("UPDATE misses SET key = ? WHERE source = 'lookup' AND entity = 'episode' AND key = ?", [trackID, key])
                moved += 1
            }
            try db.execute("DELETE FROM entities", [])
            try db.execute("INSERT INTO store_meta (name, value) VALUES ('entities', 'rebuild')", [])
            return moved
        }
        #expect(moved > 50)
        var oldMappings = upgraded.sourceMappings
        for name in oldMappings.keys { oldMappings[name]!.keyRules = [:] }
        try old.prepareEntities(oldMappings)
        try old.engine.write { db in
            _ = try db.execute("UPDATE store_meta SET value = 'mapping 2; artwork 3000' WHERE name = 'mapping'", [])
        }
        let apart = try Self.rows(upgraded.storePath, "SELECT key FROM entities WHERE entity = 'episode'")
        let together = try Self.rows(control.storePath, "SELECT key FROM entities WHERE entity = 'episode'")
        #expect(apart.count > together.count, "the older store holds two rows for an episode both sources list")

        for job in [control, upgraded] {
            #expect(try await Self.night(job).outcome == .ok)
        }
        for (table, columns) in [("records", "source, entity, key, hash, payload, added_run, changed_run"),
                                 ("entities", "entity, key, fields, sources, added_run, changed_run"),
                                 ("misses", "source, entity, key, count"),
                                 // Night 1's history followed its episodes to their new keys.
                                 ("changes WHERE run_id = 1", "source, entity, key, op, field, before, after"),
                                 ("changes WHERE run_id = 2", "source, entity, key, op, field, before, after")] {
            let sql = "SELECT \(columns) FROM \(table)"
            let ours = try Self.rows(upgraded.storePath, sql)
            let theirs = try Self.rows(control.storePath, sql)
            #expect(ours.count == theirs.count, "\(table): \(ours.count) rows upgraded, \(theirs.count) from the start")
            let first = zip(ours, theirs).first { $0 != $1 }.map { "\($0.0.prefix(300)) ≠ \($0.1.prefix(300))" }
            #expect(ours == theirs, "\(table): first difference \(first ?? "in length")")
        }
        // Night 2's log has no episode removed and added again by the re-keying.
        let changes = try Self.rows(upgraded.storePath, "SELECT op, entity, key FROM changes WHERE run_id = 2 AND entity = 'episode'")
        #expect(!changes.isEmpty, "the simulator changes episodes every night")
    }
}
