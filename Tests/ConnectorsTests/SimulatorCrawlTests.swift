import Catalog
import Connectors
import Crawl
import Foundation
import Logging
import StoreSim
import Testing
import TestSupport

/// The connectors against the running simulator, over real HTTP, checked
/// against what the simulator's `World` says it serves.
@Suite struct SimulatorCrawlTests {
    static func quietLogger() -> Logger {
        var logger = Logger(label: "connectors-test")
        logger.logLevel = .critical
        return logger
    }

    /// Crawls every page of `scope` through `fetcher`, returning how it ended and what it decoded.
    static func crawl(_ scope: CrawlScope, _ fetcher: Fetcher) async -> (ScopeOutcome, [DecodedPage<Record>]) {
        var pages: [DecodedPage<Record>] = []
        let outcome = await PageWalker.walk(
            pagination: scope.pagination,
            fetch: { index throws(StoreSyncError) in try await fetcher.get(scope.pageURL(index)!) },
            decode: scope.decode, onPage: { _, _, page throws(StoreSyncError) in pages.append(page) })
        return (outcome, pages)
    }

    static func object(_ json: String) throws -> [String: JSONValue] {
        try #require(try JSONParser.parse(json).objectValue)
    }

    @Test func podcastFeedsParseToTheEpisodesTheWorldHas() async throws {
        let night = 3
        let world = World(config: SimulatorConfig(seed: 11, podcastCount: 40, productCount: 5,
                                                  churn: Churn(changed: 0.2, added: 0.05, removed: 0.05)))
        let server = try await SimulatorServer.start(world: world, night: night, logger: Self.quietLogger())
        let transport = AsyncHTTPTransport()
        let fetcher = Fetcher(transport: transport, settings: HTTPSettings(maxAttempts: 1), logger: Self.quietLogger())

        // Podcast records as a Search source would have stored them, their feedUrl
        // pointed at this server (the runner maps the fixed feeds host the same way).
        var podcasts: [Record] = []
        for key in world.orderedKeys(entity: "podcast", night: night).sorted() {
            var fields = try Self.object(try #require(world.rowJSON(entity: "podcast", key: key, night: night)))
            if fields["feedUrl"] != nil {
                fields["feedUrl"] = .string(server.baseURL.appendingPathComponent("feeds/\(key).xml").absoluteString)
            }
            podcasts.append(Record(entity: .podcast, key: key, fields: fields))
        }
        // What the world says each podcast's feed holds: its Lookup episode rows.
        var expected: [String: [String: [String: JSONValue]]] = [:]
        for key in world.orderedKeys(entity: "episode", night: night) {
            let row = try Self.object(try #require(world.rowJSON(entity: "episode", key: key, night: night)))
            let podcast = try #require(row["collectionId"]?.intValue)
            let guid = try #require(row["episodeGuid"]?.stringValue)
            expected["\(podcast)", default: [:]]["\(podcast)|\(guid)"] = row
        }

        let source = SourceSpec(name: "feeds", settings: (PodcastFeedSettings(from: "search")))
        let scopes = source.scopes(baseURL: nil, inputs: podcasts)
        let withFeeds = podcasts.filter { (try? $0.fields()["feedUrl"]) != nil }
        #expect(scopes.map(\.id) == withFeeds.map { "feed:\($0.key)" })
        #expect(scopes.count >= 10, "too few podcasts with feeds to mean anything")

        var compared = 0
        for scope in scopes {
            let podcastKey = String(scope.id.dropFirst("feed:".count))
            let (outcome, pages) = await Self.crawl(scope, fetcher)
            guard case .complete(let count) = outcome else {
                Issue.record("\(scope.id): \(outcome)")
                continue
            }
            #expect(count == 1)
            // The episodes; the podcast record the channel describes is FeedResilienceTests' subject.
            let records = pages.flatMap(\.items).filter { $0.entity == .episode }
            let truth = expected[podcastKey] ?? [:]
            #expect(Set(records.map(\.key)) == Set(truth.keys), "\(scope.id)")
            #expect(pages.allSatisfy { $0.skipped.isEmpty })
            compared += records.count
            for record in records {
                let fields = try record.fields()
                let row = try #require(truth[record.key])
                // The feed's RFC 822 dates, normalised, are the instants Lookup states in ISO 8601.
                #expect(fields["releaseDate"] == row["releaseDate"], "\(record.key)")
                #expect(fields["trackTimeMillis"] == row["trackTimeMillis"], "\(record.key)")
                #expect(fields["episodeUrl"] == row["episodeUrl"], "\(record.key)")
                #expect(fields["trackName"] == row["trackName"], "\(record.key)")
                #expect(fields["collectionId"] == row["collectionId"], "\(record.key)")
                #expect(fields["collectionName"] == row["collectionName"], "\(record.key)")
            }
        }
        // Every episode the world serves was compared (and there are plenty of them).
        #expect(compared == expected.values.reduce(0) { $0 + $1.count })
        #expect(compared > 500, "\(compared) episodes")
        await transport.shutdown()
        await server.shutdown()
    }

    @Test func productDetailsDecodeAndAVanishedProductIsSkipped() async throws {
        let night = 2
        let world = World(config: SimulatorConfig(seed: 5, podcastCount: 1, productCount: 25,
                                                  churn: Churn(changed: 0.1, added: 0.1, removed: 0.1)))
        let server = try await SimulatorServer.start(world: world, night: night, logger: Self.quietLogger())
        let transport = AsyncHTTPTransport()
        let fetcher = Fetcher(transport: transport, settings: HTTPSettings(maxAttempts: 1), logger: Self.quietLogger())

        let keys = world.orderedKeys(entity: "listing", night: night)
        let listings = try keys.map { key in
            Record(entity: .listing, key: key,
                   fields: try Self.object(try #require(world.rowJSON(entity: "listing", key: key, night: night))))
        }
        let source = SourceSpec(name: "market", settings: (MarketplaceSettings(detail: true)))
        let scopes = source.followUpScopes(baseURL: server.baseURL, newOrChanged: listings)
        #expect(scopes.map(\.id) == keys.map { "detail:\($0)" })
        for (scope, listing) in zip(scopes, listings) {
            let (outcome, pages) = await Self.crawl(scope, fetcher)
            #expect(outcome.isComplete, "\(scope.id): \(outcome)")
            let record = try #require(pages.first?.items.first)
            #expect(record.entity == .listingDetail)
            #expect(record.key == listing.key)
            let detail = try record.fields()
            let row = try listing.fields()
            // The detail repeats the list row's fields (dates in the same canonical form) and adds images and the vendor.
            for field in ["name", "price", "bargain_price", "stock", "currency", "vendor_id"] {
                #expect(detail[field] == row[field], "\(scope.id) \(field)")
            }
            for field in ["created_at", "issued_at"] {
                let text = try #require(detail[field]?.stringValue)
                #expect(!text.contains(" ") && text.count == 19, "\(scope.id) \(field) \(text)")
            }
            #expect(detail["images"]?.arrayValue?.isEmpty == false)
            #expect(detail["vendors"]?["name"] != nil)
        }

        // A product that is gone by the time its detail is asked for: the server
        // says 404. The Fetcher reports that as a failed fetch today; the decoder
        // itself turns it into a skipped row.
        let gone = try #require(world.diff(entity: "listing", night: night + 1).removed.first
            ?? world.diff(entity: "listing", night: night).removed.first)
        server.setNight(night + 1)
        let vanished = try #require(source.followUpScopes(
            baseURL: server.baseURL,
            newOrChanged: [Record(entity: .listing, key: gone, fields: [:])]).first)
        let response = try await transport.get(HTTPRequest(url: vanished.pageURL(0)!), timeoutSeconds: 10)
        #expect(response.status == 404)
        let page = try vanished.decode(response)
        #expect(page.items.isEmpty && page.hasNext == false && page.skipped.count == 1)

        await transport.shutdown()
        await server.shutdown()
    }
}
