import CLibXML2
import CSV
import Catalog
import Foundation
import Logging
import GRDB
import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// Whole runs against the simulator over real loopback HTTP.
@Suite struct EndToEndTests {
    let directory = TestPaths.temporaryDirectory("e2e")
    static let seed: UInt64 = 7
    /// Churn high enough that each of added, changed and removed is non-empty
    /// within the searched terms on night 2.
    static let simulator = SimulatorConfig(seed: seed, podcastCount: 400, productCount: 300,
                                           churn: Churn(changed: 0.10, added: 0.03, removed: 0.03))

    var jobYAML: String {
        """
        name: e2e
        store: store/snapshot.sqlite
        output: out
        simulator:
          seed: \(Self.seed)
          podcasts: \(Self.simulator.podcastCount)
          products: \(Self.simulator.productCount)
          changed: \(Self.simulator.churn.changed)
          added: \(Self.simulator.churn.added)
          removed: \(Self.simulator.churn.removed)
        sources:
          - name: market
            kind: marketplace
            itemsPerPage: 40
            removal: { afterMisses: 1, maxRatio: 0.5 }
          - name: podcasts
            kind: itunes-search
            terms: [news, history, science, comedy]
            pageSize: 50
            removal: { afterMisses: 1, maxRatio: 0.5 }
        exports:
          - kind: sqlite
            path: e2e.sqlite
          - kind: csv
            directory: csv
          - kind: changes-csv
            path: changes.csv
          - kind: feed
            feed: podcasts-updated
            rss: feeds/podcasts.xml
            title: "Top <podcasts> & more"
            selfURL: https://example.com/podcasts.xml
          - kind: run-report
            path: report.json
          - kind: metrics
            path: storesync.prom
        """
    }

    func job() throws -> JobSpec {
        try JobLoader.parse(yaml: jobYAML, file: "e2e.yml", baseDirectory: directory.path)
    }

    func source(_ report: RunReport, _ name: String) throws -> SourceCounts {
        try #require(report.sources.first { $0.name == name }).counts
    }

    @Test func secondNightWritesExactlyWhatTheWorldChanged() async throws {
        let job = try job()
        let world = World(config: Self.simulator)
        let runner = Runner(job: job, logger: .quiet)

        let first = try await runner.run()
        #expect(first.outcome == .ok, "\(first.summaryText)")
        #expect(first.night == 1)
        #expect(try source(first, "market").added == world.aliveKeys(entity: "listing", night: 1).count)

        let second = try await runner.run()
        #expect(second.outcome == .ok, "\(second.summaryText)")
        #expect(second.night == 2)
        let truth = world.diff(entity: "listing", night: 2)
        let market = try source(second, "market")
        #expect(market.added == truth.added.count)
        #expect(market.changed == truth.changed.count)
        #expect(market.removed == truth.removed.count)
        #expect(market.unchanged == world.aliveKeys(entity: "listing", night: 2).count - truth.added.count - truth.changed.count)
        #expect(truth.added.count + truth.changed.count + truth.removed.count > 0, "the world must change overnight")

        // The change log names exactly the truth's keys.
        let store = try SQLSnapshotStore(path: job.storePath)
        let changes = try store.changes(runID: second.runID).filter { $0.source == "market" }
        #expect(Set(changes.filter { $0.op == "added" }.map(\.key)) == truth.added)
        #expect(Set(changes.filter { $0.op == "changed" }.map(\.key)) == truth.changed)
        #expect(Set(changes.filter { $0.op == "removed" }.map(\.key)) == truth.removed)

        // The search source sees the podcasts its terms match: its truth is the
        // simulator's own diff of those result sets.
        let searchTruth = world.searchDiff(terms: ["news", "history", "science", "comedy"], night: 2)
        let podcasts = try source(second, "podcasts")
        #expect(podcasts.added == searchTruth.added.count)
        #expect(podcasts.changed == searchTruth.changed.count)
        #expect(podcasts.removed == searchTruth.removed.count)
        let podcastChanges = try store.changes(runID: second.runID).filter { $0.source == "podcasts" }
        #expect(Set(podcastChanges.filter { $0.op == "added" }.map(\.key)) == searchTruth.added)
        #expect(Set(podcastChanges.filter { $0.op == "changed" }.map(\.key)) == searchTruth.changed)
        #expect(Set(podcastChanges.filter { $0.op == "removed" }.map(\.key)) == searchTruth.removed)
        #expect(!searchTruth.added.isEmpty && !searchTruth.changed.isEmpty && !searchTruth.removed.isEmpty)

        // Rows written, counted by SQLite, are exactly added + changed + removed.
        for report in second.sources {
            let c = report.counts
            #expect(c.recordRowsWritten == c.added + c.changed + c.removed, "\(report.name)")
        }
        let touched = try await DatabaseQueue(path: job.storePath).read { db in
            try Int.fetchOne(db, sql: "SELECT count(*) FROM records WHERE changed_run = ?", arguments: [second.runID])
        }
        let totals = second.sources.reduce((0, 0)) { ($0.0 + $1.counts.added, $0.1 + $1.counts.changed) }
        #expect(touched == totals.0 + totals.1)

        // The same night again: nothing changed, nothing written.
        let third = try await runner.run(RunOptions(night: 2))
        #expect(third.outcome == .ok)
        #expect(third.recordRowsWritten == 0)
        #expect(third.sources.allSatisfy { $0.counts.added == 0 && $0.counts.changed == 0 && $0.counts.removed == 0 })
        #expect(try store.changes(runID: third.runID).isEmpty)
        #expect(try store.integrityCheck() == "ok")
    }

    @Test func exportsParseWithRealParsers() async throws {
        let job = try job()
        _ = try await Runner(job: job, logger: .quiet).run()
        let report = try await Runner(job: job, logger: .quiet).run()
        let out = URL(fileURLWithPath: job.outputDirectory)
        let store = try SQLSnapshotStore(path: job.storePath)

        // CSV per entity: read back with an independent RFC 4180 parser.
        let listings = try store.records(source: "market").count
        let csvText = try String(contentsOf: out.appendingPathComponent("csv/listings.csv"), encoding: .utf8)
        let reader = try CSVReader(string: csvText, hasHeaderRow: true)
        var rows = 0
        while reader.next() != nil { rows += 1 }
        #expect(rows == listings)
        #expect(reader.headerRow?.first == "key")

        let changesText = try String(contentsOf: out.appendingPathComponent("changes.csv"), encoding: .utf8)
        let changesReader = try CSVReader(string: changesText, hasHeaderRow: true)
        var changeRows = 0
        while changesReader.next() != nil { changeRows += 1 }
        #expect(changeRows == (try store.changes(runID: report.runID).count))

        // The feed parses with libxml2 in strict mode.
        let feed = try Data(contentsOf: out.appendingPathComponent("feeds/podcasts.xml"))
        let parsed = feed.withUnsafeBytes { raw in
            xmlReadMemory(raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(raw.count), "podcasts.xml", "UTF-8",
                          Int32(XML_PARSE_NONET.rawValue))
        }
        #expect(parsed != nil)
        xmlFreeDoc(parsed)
        // A directory of podcasts is a feed for feed readers, not one a podcast app would subscribe to
        // (its items have no enclosures): plain RSS, with the hi-res artwork.
        let feedText = String(decoding: feed, as: UTF8.self)
        #expect(!feedText.contains("xmlns:itunes"))
        #expect(feedText.contains("3000x3000") && !feedText.contains("600x600"))

        // The consumer database has typed tables.
        let consumer = try DatabaseQueue(path: out.appendingPathComponent("e2e.sqlite").path)
        let exported = try await consumer.read { db in try Int.fetchOne(db, sql: "SELECT count(*) FROM listings") }
        #expect(exported == listings)
        let priceType = try await consumer.read { db in
            try String.fetchOne(db, sql: "SELECT typeof(price) FROM listings WHERE price IS NOT NULL LIMIT 1")
        }
        #expect(priceType == "real" || priceType == "integer")
    }

    @Test func aSecondRunOnALockedStoreExitsAtOnce() async throws {
        let job = try job()
        try FileManager.default.createDirectory(atPath: (job.storePath as NSString).deletingLastPathComponent,
                                                withIntermediateDirectories: true)
        let lock = try RunLock(storePath: job.storePath)
        do {
            _ = try await Runner(job: job, logger: .quiet).run()
            Issue.record("the run should have been refused")
        } catch {
            guard error.code == .locked else {
                Issue.record("expected .locked, got \(error)")
                return
            }
        }
        withExtendedLifetime(lock) {}
    }
}
