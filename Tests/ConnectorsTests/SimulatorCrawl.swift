import Catalog
import Connectors
import Crawl
import Foundation
import Logging
import StoreSim
import Testing
import TestSupport

/// A scope crawled against the simulator: how it ended and what it yielded.
struct CrawledScope {
    var scope: CrawlScope
    var outcome: ScopeOutcome
    var records: [Record]
    var skipped: [String]

    func records(_ entity: EntityKind) -> [Record] { records.filter { $0.entity == entity } }
}

/// Crawls connectors' scopes over real HTTP against a simulator on port 0.
struct SimulatorHarness {
    let server: SimulatorServer
    let transport: AsyncHTTPTransport
    let fetcher: Fetcher

    static var quietLogger: Logger {
        var logger = Logger(label: "connectors-test")
        logger.logLevel = .critical
        return logger
    }

    /// Runs `body` with a started simulator serving `world` on `night`, and always shuts it down.
    static func with<T>(world: World, night: Int, _ body: (SimulatorHarness) async throws -> T) async throws -> T {
        let server = try await SimulatorServer.start(world: world, night: night, logger: quietLogger)
        let transport = AsyncHTTPTransport()
        // One attempt: the simulator serves no faults here, so a retry would hide a bug.
        let settings = HTTPSettings(maxAttempts: 1, requestsPerMinute: [:])
        let harness = SimulatorHarness(server: server, transport: transport,
                                       fetcher: Fetcher(transport: transport, settings: settings, clock: ManualClock(),
                                                        logger: quietLogger))
        do {
            let result = try await body(harness)
            await transport.shutdown()
            await server.shutdown()
            return result
        } catch {
            await transport.shutdown()
            await server.shutdown()
            throw error
        }
    }

    /// The scopes of `source` as the runner builds them, pointed at this simulator.
    func scopes(_ source: SourceSpec, inputs: [Record] = []) -> [CrawlScope] {
        source.scopes(baseURL: server.baseURL, inputs: inputs)
    }

    /// Walks every scope with the real ``PageWalker``, in order.
    func crawl(_ scopes: [CrawlScope]) async -> [CrawledScope] {
        var out: [CrawledScope] = []
        for scope in scopes {
            var records: [Record] = []
            var skipped: [String] = []
            let fetcher = self.fetcher
            let outcome = await PageWalker.walk(
                pagination: scope.pagination,
                fetch: { index throws(StoreSyncError) in
                    guard let url = scope.pageURL(index) else {
                        throw .fetchFailed(url: scope.id, reason: "not an HTTP scope")
                    }
                    return try await fetcher.get(url)
                },
                decode: scope.decode,
                onPage: { _, _, page in
                    records += page.items
                    skipped += page.skipped
                })
            out.append(CrawledScope(scope: scope, outcome: outcome, records: records, skipped: skipped))
        }
        return out
    }
}

extension ScopeOutcome {
    var isCapped: Bool {
        if case .capped = self { return true }
        return false
    }

    var pages: Int {
        switch self {
        case .complete(let pages), .capped(let pages), .failed(let pages, _): pages
        case .gone: 0
        }
    }
}

/// Small worlds with every catalog populated, cheap to serve.
enum ConnectorWorlds {
    static func small(seed: UInt64 = 5) -> World {
        World(config: SimulatorConfig(seed: seed, podcastCount: 60, productCount: 10,
                                      churn: Churn(changed: 0.1, added: 0.05, removed: 0.05), songCount: 300,
                                      movieCount: 40, appCount: 60, audiobookCount: 20, ebookCount: 20))
    }
}

/// A response built in memory, for decoder tests.
func page(_ text: String, url: String = "https://itunes.apple.com/x") -> HTTPResponse {
    HTTPResponse(url: URL(string: url)!, status: 200, body: Array(text.utf8))
}

/// Walks one scope whose page is answered from memory, to see how the walker ends it.
func walkOffline(_ scope: CrawlScope, answer: @escaping @Sendable (Int) -> HTTPResponse) async -> (ScopeOutcome, Int) {
    var fetched = 0
    let outcome = await PageWalker.walk(
        pagination: scope.pagination,
        fetch: { index throws(StoreSyncError) in
            fetched += 1
            return answer(index)
        },
        decode: scope.decode,
        onPage: { _, _, _ in })
    return (outcome, fetched)
}

/// The payload of a record as an object (test shorthand).
func fields(_ record: Record?) -> [String: JSONValue] {
    guard let record else { return [:] }
    return (try? record.fields()) ?? [:]
}
