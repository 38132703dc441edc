import Catalog
import Crawl
import Foundation
import Logging
import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// Passes requests to the real network stack, except those `failing` picks,
/// which get a 503 as if the server were overloaded.
final class FaultInjectingTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    let failing: @Sendable (URL) -> Bool

    init(failing: @escaping @Sendable (URL) -> Bool) { self.failing = failing }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        if failing(request.url) { return HTTPResponse(url: request.url, status: 503) }
        return try await inner.get(request, timeoutSeconds: timeoutSeconds)
    }
}

@Suite struct PartialCrawlTests {
    let directory = TestPaths.temporaryDirectory("partial")

    func job() throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: partial
            store: snapshot.sqlite
            output: out
            simulator: { seed: 11, podcasts: 600, products: 200, changed: 0.05, added: 0.05, removed: 0.05 }
            http: { maxAttempts: 2 }
            sources:
              - name: podcasts
                kind: itunes-search
                terms: [news]
                pageSize: 20
                removal: { afterMisses: 1, maxRatio: 1 }
              - name: market
                kind: marketplace
                itemsPerPage: 50
                removal: { afterMisses: 1, maxRatio: 1 }
            """, file: "partial.yml", baseDirectory: directory.path)
    }

    /// Invariant 2 and 6: a scope with a failed page removes nothing, keeps
    /// what its earlier pages stored, names the URL, and the run is partial.
    @Test func aFailedPageNeverCausesRemovals() async throws {
        let job = try job()
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.outcome == .ok)
        let store = try SQLSnapshotStore(path: job.storePath)
        let podcastsBefore = try store.records(source: "podcasts").count

        let transport = FaultInjectingTransport { $0.path == "/search" && $0.query?.contains("offset=40") == true }
        let second = try await Runner(job: job, logger: .quiet, transport: transport, clock: ManualClock()).run()
        await transport.inner.shutdown()
        #expect(second.outcome == .partial)
        let podcasts = try #require(second.sources.first { $0.name == "podcasts" })
        #expect(podcasts.counts.removed == 0)
        #expect(podcasts.scopesComplete == 0)
        #expect(podcasts.errors.first?.message.contains("offset=40") == true, "\(podcasts.errors)")
        #expect(try store.records(source: "podcasts").count >= podcastsBefore, "nothing removed")
        #expect(try store.changes(runID: second.runID).filter { $0.source == "podcasts" && $0.op == "removed" }.isEmpty)

        // The other source is unaffected and exact.
        let truth = World(config: SimulatorConfig(seed: 11, podcastCount: 600, productCount: 200,
                                                  churn: Churn(changed: 0.05, added: 0.05, removed: 0.05)))
            .diff(entity: "listing", night: 2)
        let market = try #require(second.sources.first { $0.name == "market" })
        #expect(market.counts.removed == truth.removed.count)
        #expect(market.counts.changed == truth.changed.count)
        #expect(second.summaryText.contains("error:"))
    }

    /// A detail or lookup that failed is retried by later runs until it
    /// succeeds, although its upstream record no longer changes: a
    /// dependent working on "new or changed" records must not lose one.
    @Test func aFailedDetailOrLookupIsRetriedByTheNextRuns() async throws {
        let job = try JobLoader.parse(yaml: """
            name: follow
            store: snapshot.sqlite
            output: out
            simulator: { seed: 11, podcasts: 300, products: 60, changed: 0, added: 0, removed: 0 }
            http: { maxAttempts: 2 }
            sources:
              - { name: podcasts, kind: itunes-search, terms: [news], pageSize: 50 }
              - { name: details, kind: itunes-lookup, from: podcasts }
              - { name: market, kind: marketplace, itemsPerPage: 50, detail: true }
            """, file: "follow.yml", baseDirectory: directory.path)
        let store = try SQLSnapshotStore(path: job.storePath)
        func detailKeys() throws -> Set<String> {
            Set(try store.records(source: "market").filter { $0.entity == .listingDetail }.map(\.key))
        }
        func listingKeys() throws -> Set<String> {
            Set(try store.records(source: "market").filter { $0.entity == .listing }.map(\.key))
        }

        // Night 1: one product's detail and every lookup fail.
        let failing = FaultInjectingTransport { $0.path.hasSuffix("/api/products/7") || $0.path == "/lookup" }
        let first = try await Runner(job: job, logger: .quiet, transport: failing, clock: ManualClock()).run(RunOptions(night: 1))
        await failing.inner.shutdown()
        #expect(first.outcome == .partial)
        let listings = try listingKeys()
        #expect(listings.contains("7"))
        #expect(try detailKeys() == listings.subtracting(["7"]))
        #expect(try store.records(source: "details").isEmpty)

        // Night 2: nothing changed upstream, yet the failed work is done, and only it.
        let second = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        #expect(second.outcome == .ok, "\(second.errors) \(second.warnings)")
        #expect(try detailKeys() == listings)
        let podcasts = Set(try store.records(source: "podcasts").map(\.key))
        #expect(Set(try store.records(source: "details").map(\.key)) == podcasts)
        let market = try #require(second.sources.first { $0.name == "market" })
        #expect(market.counts.pages == (listings.count + 49) / 50 + 1, "the list, then the one missing detail")

        // Night 3: everything followed up, nothing changed: no detail, no lookup.
        let third = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 3))
        #expect(third.outcome == .ok)
        #expect(try #require(third.sources.first { $0.name == "market" }).counts.pages == (listings.count + 49) / 50)
        #expect(try #require(third.sources.first { $0.name == "details" }).counts.pages == 0)
    }
}
