import Catalog
import Foundation
import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// The sources that start from other sources' records (feeds, lookups,
/// details) and the records-file source, through whole runs.
@Suite struct SourcesEndToEndTests {
    static let world = SimulatorConfig(seed: 13, podcastCount: 400, productCount: 120,
                                       churn: Churn(changed: 0.1, added: 0.05, removed: 0.05))

    @Test func feedsLookupsAndDetailsFollowTheRecordsOfTheirUpstreamSource() async throws {
        let directory = TestPaths.temporaryDirectory("dependent")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: """
            name: dependent
            store: snapshot.sqlite
            output: out
            simulator: { seed: \(Self.world.seed), podcasts: \(Self.world.podcastCount), products: \(Self.world.productCount),
                         changed: \(Self.world.churn.changed), added: \(Self.world.churn.added), removed: \(Self.world.churn.removed) }
            sources:
              - {name: podcasts, kind: itunes-search, terms: [news], pageSize: 50}
              - {name: episodes, kind: podcast-feed, from: podcasts, maxFeeds: 8}
              - {name: details, kind: itunes-lookup, from: podcasts}
              - {name: market, kind: marketplace, itemsPerPage: 50, detail: true}
            """, file: "dependent.yml", baseDirectory: directory.path)
        let first = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        #expect(first.outcome == .ok, "\(first.errors) \(first.warnings)")
        let store = try SQLSnapshotStore(path: job.storePath)
        let podcasts = try store.records(source: "podcasts")
        let world = World(config: Self.world)

        // Feeds: the simulator's fixed feeds.storesim.test host reached the simulator.
        let episodes = try #require(first.sources.first { $0.name == "episodes" })
        #expect(episodes.scopesTotal == 8 && episodes.scopesComplete == 8)
        let episodeKeys = Set(try store.records(source: "episodes").map(\.key))
        let feedPodcasts = Set(episodeKeys.map { String($0.split(separator: "|")[0]) })
        #expect(feedPodcasts.count == 8)
        #expect(feedPodcasts.isSubset(of: Set(podcasts.map(\.key))))

        // Lookup: every podcast found, detailed in batches of up to 200 ids.
        let details = try #require(first.sources.first { $0.name == "details" })
        #expect(details.counts.pages == (podcasts.count + 199) / 200)
        #expect(Set(try store.records(source: "details").map(\.key)) == Set(podcasts.map(\.key)))

        // Marketplace details: one per listing on the first night.
        let listings = try store.records(source: "market").filter { $0.entity == .listing }
        let listingDetails = try store.records(source: "market").filter { $0.entity == .listingDetail }
        #expect(Set(listingDetails.map(\.key)) == Set(listings.map(\.key)))
        #expect(listings.count == world.aliveKeys(entity: "listing", night: 1).count)

        // Night 2: only what is new or changed is looked up or detailed.
        let second = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        #expect(second.outcome == .ok, "\(second.errors) \(second.warnings)")
        let search = world.searchDiff(terms: ["news"], night: 2)
        let secondDetails = try #require(second.sources.first { $0.name == "details" })
        #expect(secondDetails.counts.pages == 1)
        #expect(secondDetails.counts.added + secondDetails.counts.changed + secondDetails.counts.unchanged
                == search.added.count + search.changed.count)
        let market = world.diff(entity: "listing", night: 2)
        let marketReport = try #require(second.sources.first { $0.name == "market" })
        let listPages = (world.aliveKeys(entity: "listing", night: 2).count + 49) / 50
        #expect(marketReport.counts.pages == listPages + market.added.count + market.changed.count)
    }

    /// Writes `rows` as JSON Lines, one record per id.
    func writeJSONL(_ rows: [(id: Int, name: String, price: Double)], to url: URL) throws {
        let text = rows.map { row in
            let name = row.name.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            return #"{"id": \#(row.id), "name": "\#(name)", "price": \#(row.price), "tags": ["a", "b"]}"#
        }
            .joined(separator: "\n") + "\n"
        try text.write(to: url, atomically: true, encoding: .utf8)
    }

    @Test func aRecordsFileIsDiffedExactlyNightAfterNight() async throws {
        let directory = TestPaths.temporaryDirectory("records-file")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("catalog.jsonl")
        var rows = (0..<1_000).map { (id: 9_000_000_000 + $0 * 7919, name: "Item \($0) \"quoted\", ü", price: Double($0 % 17) + 0.99) }
        try writeJSONL(rows, to: file)
        let job = try JobLoader.parse(yaml: """
            name: file
            store: snapshot.sqlite
            output: out
            sources:
              - {name: catalog, kind: records-file, path: catalog.jsonl, pageSize: 128}
            exports:
              - {kind: csv, directory: csv}
            """, file: "file.yml", baseDirectory: directory.path)
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.outcome == .ok, "\(first.errors)")
        #expect(first.recordRowsWritten == 1_000)
        #expect(first.sources[0].counts.pages == 8)

        // 10 changed, 5 removed (twice missed: the default afterMisses is 2), 7 added.
        for i in stride(from: 3, to: 1_000, by: 100) { rows[i].price += 1 }
        let removed = Set([rows[10].id, rows[500].id, rows[501].id, rows[998].id, rows[999].id])
        rows.removeAll { removed.contains($0.id) }
        rows += (0..<7).map { (id: 1_000 + $0, name: "New \($0)", price: 5) }
        try writeJSONL(rows, to: file)
        let second = try await Runner(job: job, logger: .quiet).run()
        #expect(second.sources[0].counts.added == 7)
        #expect(second.sources[0].counts.changed == 10)
        #expect(second.sources[0].counts.removed == 0, "one miss is not enough by default")
        #expect(second.recordRowsWritten == 17)

        let third = try await Runner(job: job, logger: .quiet).run()
        #expect(third.sources[0].counts.removed == 5)
        #expect(third.recordRowsWritten == 5)
        // Unchanged pages are recognised by their bytes and not decoded again.
        #expect(third.sources[0].unchangedPages == third.sources[0].counts.pages)
        let stored = try SQLSnapshotStore(path: job.storePath).records(source: "catalog")
        let expected = Set(rows.map { String($0.id) })
        #expect(Set(stored.map(\.key)).symmetricDifference(expected).isEmpty)
        #expect(stored.count == expected.count)
        #expect(try SQLSnapshotStore(path: job.storePath).changes(runID: third.runID).allSatisfy { $0.op == "removed" })
    }

    /// Night 2 applied with rows passed over by their bytes must store what a
    /// full decode of night 2 stores, row for row, including a key met twice
    /// in one run whose later version is byte for byte the stored one.
    @Test func rowsPassedOverByTheirBytesEndAsAFullDecodeWould() async throws {
        let directory = TestPaths.temporaryDirectory("records-raw")
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("catalog.jsonl")
        var rows = (0..<600).map { (id: 5_000_000_000 + $0 * 104_729, name: "Item \($0) ü \"q\"", price: Double($0 % 13) + 0.5) }
        try writeJSONL(rows, to: file)
        func job(_ store: String) throws -> JobSpec {
            try JobLoader.parse(yaml: """
                name: raw
                store: \(store)
                output: out
                sources:
                  - {name: catalog, kind: records-file, path: catalog.jsonl, pageSize: 50, removal: {afterMisses: 1}}
                """, file: "raw.yml", baseDirectory: directory.path)
        }
        let nightly = try job("nightly.sqlite")
        #expect(try await Runner(job: nightly, logger: .quiet).run().recordRowsWritten == 600)

        for i in stride(from: 7, to: 600, by: 40) { rows[i].price += 1 }
        rows.removeAll { $0.id % 11 == 0 }
        rows += (0..<9).map { (id: 7_000 + $0, name: "New \($0)", price: 1) }
        // Row 1 twice: first changed, then (on a later page) its stored bytes again: last wins.
        let twice = rows[1]
        rows[1].name = "Renamed"
        rows.append(twice)
        try writeJSONL(rows, to: file)
        let second = try await Runner(job: nightly, logger: .quiet).run()
        #expect(second.outcome == .ok, "\(second.errors)")

        let fresh = try job("fresh.sqlite")
        _ = try await Runner(job: fresh, logger: .quiet).run()
        let incremental = try SQLSnapshotStore(path: nightly.storePath).records(source: "catalog")
        let full = try SQLSnapshotStore(path: fresh.storePath).records(source: "catalog")
        #expect(incremental.count == full.count)
        #expect(incremental.map(\.key) == full.map(\.key))
        #expect(zip(incremental, full).allSatisfy { $0.payload == $1.payload && $0.hash == $1.hash })
        let stored = try #require(incremental.first { $0.key == String(twice.id) })
        #expect(try stored.fields()["name"] == .string(twice.name))
    }
}
