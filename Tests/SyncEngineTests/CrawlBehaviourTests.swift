import Catalog
import Crawl
import Foundation
import GRDB
import Logging
import Snapshot
import StoreSim
import SyncEngine
import Synchronization
import Testing
import TestSupport

/// Real network stack, but every answer waits a random few milliseconds, so
/// concurrent scopes finish in an order unrelated to the order they started.
final class ShufflingTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    private let generator: Mutex<UInt64>

    init(seed: UInt64) { generator = Mutex(seed) }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        let millis = generator.withLock { state -> UInt64 in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return (state >> 33) % 8
        }
        try? await Task.sleep(for: .milliseconds(millis))
        return try await inner.get(request, timeoutSeconds: timeoutSeconds)
    }
}

/// Counts requests per path on their way to the real network stack.
final class CountingTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    let failing: @Sendable (URL) -> Bool
    private let counts = Mutex<[String: Int]>([:])

    init(failing: @escaping @Sendable (URL) -> Bool = { _ in false }) { self.failing = failing }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        counts.withLock { $0[request.url.path, default: 0] += 1 }
        if failing(request.url) { return HTTPResponse(url: request.url, status: 503) }
        return try await inner.get(request, timeoutSeconds: timeoutSeconds)
    }

    func requests(path: String) -> Int { counts.withLock { $0[path] ?? 0 } }
}

/// The crawl's promises beyond a single clean run: the same snapshot at any
/// concurrency, conditional requests that save work but hide no change, dry
/// runs that write nothing, a circuit breaker, and `status`.
@Suite struct CrawlBehaviourTests {
    static let world = SimulatorConfig(seed: 5, podcastCount: 500, productCount: 240,
                                       churn: Churn(changed: 0.08, added: 0.04, removed: 0.04))

    func job(_ directory: URL, concurrency: Int = 4, extraHTTP: String = "") throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: behaviour
            store: store/snapshot.sqlite
            output: out
            simulator:
              seed: \(Self.world.seed)
              podcasts: \(Self.world.podcastCount)
              products: \(Self.world.productCount)
              changed: \(Self.world.churn.changed)
              added: \(Self.world.churn.added)
              removed: \(Self.world.churn.removed)
            http: { concurrency: \(concurrency)\(extraHTTP) }
            sources:
              - name: podcasts
                kind: itunes-search
                terms: [news, history, science, comedy, tech, sports]
                pageSize: 15
                removal: { afterMisses: 1, maxRatio: 1 }
              - name: market
                kind: marketplace
                itemsPerPage: 30
                removal: { afterMisses: 1, maxRatio: 1 }
            exports:
              - kind: changes-csv
                path: changes.csv
            """, file: "behaviour.yml", baseDirectory: directory.path)
    }

    /// Everything a run leaves in the store that must not depend on timing.
    func contents(_ storePath: String) throws -> [String] {
        let queue = try DatabaseQueue(path: storePath)
        defer { try? queue.close() }
        return try queue.read { db in
            let records = try Row.fetchAll(db, sql: """
                SELECT source, entity, key, scope, hash, payload, added_run, changed_run FROM records ORDER BY source, entity, key
                """).map { "record \($0)" }
            let changes = try Row.fetchAll(db, sql: """
                SELECT run_id, source, entity, key, op, field, before, after FROM changes
                ORDER BY run_id, source, entity, key, op, field
                """).map { "change \($0)" }
            let counts = try Row.fetchAll(db, sql: """
                SELECT run_id, source, pages, added, changed, unchanged, removed, record_writes FROM run_sources ORDER BY run_id, source
                """).map { "counts \($0)" }
            let misses = try Row.fetchAll(db, sql: "SELECT * FROM misses ORDER BY source, entity, key").map { "miss \($0)" }
            return records + changes + counts + misses
        }
    }

    @Test func theSnapshotIsTheSameAtConcurrencyOneAndEightWhateverOrderAnswersArriveIn() async throws {
        let sequential = TestPaths.temporaryDirectory("sequential")
        let concurrent = TestPaths.temporaryDirectory("concurrent")
        defer {
            try? FileManager.default.removeItem(at: sequential)
            try? FileManager.default.removeItem(at: concurrent)
        }
        let one = try job(sequential, concurrency: 1)
        let eight = try job(concurrent, concurrency: 8)
        let shuffling = ShufflingTransport(seed: 99)
        for night in 1...2 {
            let a = try await Runner(job: one, logger: .quiet).run(RunOptions(night: night))
            let b = try await Runner(job: eight, logger: .quiet, transport: shuffling).run(RunOptions(night: night))
            #expect(a.outcome == .ok && b.outcome == .ok, "night \(night): \(a.errors) \(b.errors)")
            #expect(a.recordRowsWritten == b.recordRowsWritten)
        }
        try await shuffling.inner.shutdown()
        let left = try contents(one.storePath), right = try contents(eight.storePath)
        #expect(left.count == right.count)
        #expect(left == right, "first difference: \(zip(left, right).first { $0 != $1 }.map { "\($0.0)\n  vs \($0.1)" } ?? "lengths")")
    }

    @Test func anUnchangedNightIsAnsweredByConditionalRequestsAndWritesNothing() async throws {
        let directory = TestPaths.temporaryDirectory("conditional")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job(directory)
        let first = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        #expect(first.outcome == .ok)
        #expect(first.fetch.notModified == 0)
        let before = try contents(job.storePath).filter { $0.hasPrefix("record") }

        let again = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        #expect(again.outcome == .ok)
        #expect(again.recordRowsWritten == 0)
        let market = try #require(again.sources.first { $0.name == "market" })
        let podcasts = try #require(again.sources.first { $0.name == "podcasts" })
        // The marketplace sends ETags: every page is a 304.
        #expect(again.fetch.notModified == market.counts.pages && market.counts.pages > 1)
        // iTunes Search sends no validators: an identical body is recognised by its hash.
        #expect(podcasts.unchangedPages == podcasts.counts.pages)
        #expect(market.counts.unchanged == first.sources.first { $0.name == "market" }?.counts.added)
        #expect(try contents(job.storePath).filter { $0.hasPrefix("record") } == before)

        // The next night's changes still all arrive, exactly.
        let second = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        let truth = World(config: Self.world).diff(entity: "listing", night: 2)
        let market2 = try #require(second.sources.first { $0.name == "market" })
        #expect(market2.counts.added == truth.added.count)
        #expect(market2.counts.changed == truth.changed.count)
        #expect(market2.counts.removed == truth.removed.count)
        let search = World(config: Self.world).searchDiff(terms: ["news", "history", "science", "comedy", "tech", "sports"], night: 2)
        let podcasts2 = try #require(second.sources.first { $0.name == "podcasts" })
        #expect(podcasts2.counts.added == search.added.count)
        #expect(podcasts2.counts.changed == search.changed.count)
        #expect(podcasts2.counts.removed == search.removed.count)
    }

    @Test func aDryRunReportsTheChangesOfARealRunAndWritesNothing() async throws {
        let directory = TestPaths.temporaryDirectory("dry-run")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try job(directory)
        _ = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        let changesCSV = URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("changes.csv")
        let csvBefore = try Data(contentsOf: changesCSV)
        let storeBefore = try contents(job.storePath)
        let runsBefore = try SQLSnapshotStore(path: job.storePath).runs().count

        let dry = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2, dryRun: true))
        #expect(dry.dryRun)
        #expect(dry.exports.isEmpty)
        #expect(dry.recordRowsWritten > 0)
        #expect(dry.fetch.requests > 0)
        #expect(dry.summaryText.contains("dry run"))
        #expect(try contents(job.storePath) == storeBefore)
        #expect(try SQLSnapshotStore(path: job.storePath).runs().count == runsBefore)
        #expect(try Data(contentsOf: changesCSV) == csvBefore)

        let real = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        #expect(real.recordRowsWritten == dry.recordRowsWritten)
        for (a, b) in zip(real.sources, dry.sources) {
            #expect(a.counts.added == b.counts.added && a.counts.changed == b.counts.changed && a.counts.removed == b.counts.removed)
        }
    }

    @Test func theCircuitBreakerStopsAFailingSourceAndRemovesNothing() async throws {
        let directory = TestPaths.temporaryDirectory("breaker")
        defer { try? FileManager.default.removeItem(at: directory) }
        let healthy = try job(directory, concurrency: 1)
        _ = try await Runner(job: healthy, logger: .quiet).run(RunOptions(night: 1))

        let job = try self.job(directory, concurrency: 1, extraHTTP: ", maxAttempts: 1, circuitBreakerThreshold: 2")
        let transport = CountingTransport { $0.path == "/search" }
        let report = try await Runner(job: job, logger: .quiet, transport: transport, clock: ManualClock())
            .run(RunOptions(night: 2))
        try await transport.inner.shutdown()
        #expect(report.outcome == .partial)
        // Two failed pages open the breaker; the other four terms are never asked for.
        #expect(transport.requests(path: "/search") == 2)
        let podcasts = try #require(report.sources.first { $0.name == "podcasts" })
        #expect(podcasts.scopesComplete == 0)
        #expect(podcasts.counts.removed == 0)
        #expect(podcasts.errors.filter { $0.message.contains("circuit breaker") }.count == 4, "\(podcasts.errors)")
        // The breaker is per source: the marketplace is crawled in full.
        let market = try #require(report.sources.first { $0.name == "market" })
        #expect(market.scopesComplete == market.scopesTotal)

        let status = try JobStatus.load(job: job).text
        #expect(status.contains("partial"))
        #expect(status.contains("podcasts: 6 scopes"))
        #expect(status.contains("circuit breaker"))
    }
}
