import Catalog
@testable import Connectors
import Crawl
import Foundation
import StoreSim
import Testing
import TestSupport

@Suite struct ITunesLookupTests {
    let base = URL(string: "http://127.0.0.1:9000")!

    func source(_ settings: ITunesLookupSettings) -> SourceSpec {
        SourceSpec(name: "detail", settings: (settings))
    }

    func items(_ keys: [String], _ entity: EntityKind = .podcast) -> [Record] {
        keys.map { Record(entity: entity, key: $0, fields: [:]) }
    }

    @Test func idsAreBatchedInOrderAndOnlyOnce() {
        let keys = ["10", "11", "12", "abc", "13", "11", "14", "", "15", "16"]
        let scopes = source(ITunesLookupSettings(from: "charts", batchSize: 3, country: "GB")).scopes(baseURL: base, inputs: items(keys))
        #expect(scopes.count == 3)
        #expect(scopes.map { $0.pageURL(0)?.query } == [
            "id=10,11,12&country=gb", "id=13,14,15&country=gb", "id=16&country=gb",
        ])
        #expect(scopes.allSatisfy { !$0.sweeps }, "a batch is a chosen subset: it proves nothing about absence")
        #expect(scopes[0].id.hasPrefix("lookup:10-12:3:"))
        #expect(Set(scopes.map(\.id)).count == 3)
        // The id is a function of the batch, so a resumed run finds the same scopes.
        let again = source(ITunesLookupSettings(from: "charts", batchSize: 3, country: "gb")).scopes(baseURL: base, inputs: items(keys))
        #expect(again.map(\.id) == scopes.map(\.id))
        #expect(ITunesLookup.batchScopeID(["1", "2", "3"]) != ITunesLookup.batchScopeID(["1", "5", "3"]))
    }

    @Test func batchSizeIsClampedToWhatTheServiceServes() {
        let keys = (1...450).map(String.init)
        let scopes = source(ITunesLookupSettings(from: "x", batchSize: 1_000)).scopes(baseURL: base,
                                       inputs: items(keys))
        #expect(scopes.count == 3)
        #expect(scopes[0].pageURL(0)?.query?.split(separator: ",").count == 200)
        #expect(source(ITunesLookupSettings(from: "x")).scopes(baseURL: base, inputs: []).isEmpty)
    }

    @Test func withAnEntityEachItemIsItsOwnSweepingScope() {
        let settings = ITunesLookupSettings(from: "podcasts", lookupEntity: "podcastEpisode", limit: 20)
        let scopes = source(settings).scopes(baseURL: base, inputs: items(["7", "8"]))
        #expect(scopes.map(\.id) == ["lookup:podcastEpisode:7", "lookup:podcastEpisode:8"])
        #expect(scopes[0].pageURL(0)?.absoluteString == "http://127.0.0.1:9000/lookup?id=7&entity=podcastEpisode&limit=20")
        #expect(scopes.allSatisfy { $0.sweeps })
    }

    /// A batch scope is one request that ends complete, however many rows it holds.
    @Test func aBatchEndsCompleteAfterOneRequest() async throws {
        let scope = try #require(source(ITunesLookupSettings(from: "x", batchSize: 2)).scopes(baseURL: base,
                                                   inputs: items(["1", "2"])).first)
        let body = #"{"resultCount":2,"results":[{"wrapperType":"track","kind":"podcast","trackId":1},{"wrapperType":"track","kind":"podcast","trackId":2}]}"#
        let (outcome, fetched) = await walkOffline(scope) { _ in page(body) }
        #expect(outcome.isComplete)
        #expect(fetched == 1)
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func theRealEpisodeLookupKeepsOnlyTheEpisodesAndFillsItsLimit() async throws {
        let body = try TestPaths.sample("itunes-lookup-podcast-episodes-1535809341-limit20.json")
        let url = URL(string: "https://itunes.apple.com/lookup?id=1535809341&media=podcast&entity=podcastEpisode&limit=20")!
        let decoded = try ITunesLookup.decodeChildren(HTTPResponse(url: url, status: 200, body: body), parentKey: "1535809341")
        #expect(decoded.items.count == 20)
        #expect(decoded.rowCount == 20, "limit counts children only")
        #expect(decoded.items.allSatisfy { $0.entity == .episode && $0.key != "1535809341" })
        #expect(decoded.items.allSatisfy { fields($0)["collectionId"] == .int(1535809341) })
        // Keyed as the podcast's feed keys its items: the show's id and the item's GUID.
        #expect(decoded.items.allSatisfy { $0.key == "1535809341|\(fields($0)["episodeGuid"]?.stringValue ?? "")" })
        #expect(decoded.items.first?.key == "1535809341|4f33356e-512b-44e4-a65b-578dfabf8827")

        // Twenty episodes at limit=20: there may be more, so the scope is capped, never complete.
        for (limit, complete) in [(20, false), (21, true), (200, true)] {
            let settings = ITunesLookupSettings(from: "p", lookupEntity: "podcastEpisode", limit: limit)
            let scope = try #require(source(settings).scopes(baseURL: base, inputs: items(["1535809341"])).first)
            let (outcome, fetched) = await walkOffline(scope) { _ in HTTPResponse(url: url, status: 200, body: body) }
            #expect(outcome.isComplete == complete, "limit \(limit): \(outcome)")
            #expect(outcome.isCapped == !complete, "limit \(limit): \(outcome)")
            #expect(fetched == 1)
        }
    }

    /// An episode row is keyed by its podcast and GUID, as the podcast's feed
    /// keys the same item, so the two are one entity (issue 28, item 8); a row
    /// without a usable GUID keeps its trackId. The id stays a field.
    @Test func anEpisodeRowIsKeyedByItsPodcastAndGUIDLikeTheFeedsItem() throws {
        func row(_ guid: JSONValue?, collection: JSONValue? = .int(77), kind: String = "podcast-episode") -> JSONValue {
            var fields: [String: JSONValue] = ["wrapperType": .string("podcastEpisode"), "kind": .string(kind),
                                               "trackId": .int(1_000_555), "trackName": .string("Ep")]
            if let guid { fields["episodeGuid"] = guid }
            if let collection { fields["collectionId"] = collection }
            return .object(fields)
        }
        let cases: [(JSONValue, String)] = [
            (row(.string("4f33356e-512b")), "77|4f33356e-512b"),
            (row(.string("  tag:example.com,2024:ep-1\n")), "77|tag:example.com,2024:ep-1"),
            (row(.string("https://example.com/?p=12&x=1")), "77|https://example.com/?p=12&x=1"),
            (row(.string("   ")), "1000555"),
            (row(.string("")), "1000555"),
            (row(nil), "1000555"),
            (row(.string("g"), collection: nil), "1000555"),
            (row(.int(5)), "77|5"),
            (row(.string("g"), collection: .string("77")), "77|g"),
        ]
        for (input, key) in cases {
            let record = try ITunesSearch.record(fromRow: input).get()
            #expect(record.entity == .episode && record.key == key, "\(input) keyed \(record.key)")
            #expect(ITunesCanonical.item(.episode, try record.fields()).fields["track_id"] == .int(1_000_555))
        }
        // The same item as the feed gives it (PodcastFeed keys `<podcast key>|<guid>`, trimmed).
        let feed = """
            <rss version="2.0"><channel><title>T</title>
            <item><title>Ep</title><guid isPermaLink="false">  tag:example.com,2024:ep-1 </guid></item>
            </channel></rss>
            """
        let page = try PodcastFeed.decodeFeed(HTTPResponse(url: URL(string: "https://example.com/feed.xml")!, status: 200,
                                                           body: Array(feed.utf8)), podcastKey: "77")
        #expect(page.items.first { $0.entity == EntityKind.episode }?.key == "77|tag:example.com,2024:ep-1")
        // A store written before keyed every row by trackId: the rule gives it the key a crawl gives it now.
        let stored = try ITunesSearch.record(fromRow: row(.string("g"))).get()
        let rule = try #require(ITunesLookupSettings(from: "p", lookupEntity: "podcastEpisode").keyRules[.episode])
        #expect(rule("1000555", try stored.fields()) == "77|g")
        #expect(rule("1000555", try ITunesSearch.record(fromRow: row(nil)).get().fields()) == "1000555")
        #expect(ITunesSearchSettings(terms: ["x"]).keyRules[.episode] != nil)
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func theRealAlbumLookupKeepsOnlyTheSongs() throws {
        let body = try TestPaths.sample("itunes-lookup-album-with-songs-1440742903.json")
        let response = HTTPResponse(url: URL(string: "https://itunes.apple.com/lookup?id=1440742903&entity=song")!,
                                    status: 200, body: body)
        let decoded = try ITunesLookup.decodeChildren(response, parentKey: "1440742903")
        #expect(decoded.items.count == 14 && decoded.rowCount == 14)
        #expect(decoded.items.allSatisfy { $0.entity == .song })
        // Without an entity every row is a looked-up item: nothing is dropped.
        #expect(try ITunesSearch.decodePage(response).items.count == 15)
    }

    @Test func anUnknownIdGivesNoRowsAndAnErrorPageIsMalformed() throws {
        let empty = try ITunesLookup.decodeChildren(page("\n\n\n{\"resultCount\":0,\"results\":[]}\n"), parentKey: "5")
        #expect(empty.items.isEmpty && empty.rowCount == 0)
        let url = "https://itunes.apple.com/lookup?id=5&entity=podcastEpisode"
        do {
            _ = try ITunesLookup.decodeChildren(page(#"{"errorMessage":"Invalid value(s) for key(s): [id]"}"#, url: url),
                                                parentKey: "5")
            Issue.record("an error answer decoded")
        } catch {
            guard error.code == .malformedPage, case let (failedURL, reason) = (error.location, error.message) else {
                Issue.record("unexpected \(error)")
                return
            }
            #expect(failedURL == url && reason.contains("Invalid value(s)"))
        }
    }

    /// Episodes of every podcast of the world, one scope each, equal the world's
    /// episodes; a podcast whose window fills `limit` is capped.
    @Test func episodeLookupsOfTheSimulatorMatchItsEpisodes() async throws {
        let world = ConnectorWorlds.small()
        let night = 2
        let podcasts = world.orderedKeys(entity: "podcast", night: night).sorted()
        let settings = ITunesLookupSettings(from: "podcasts", lookupEntity: "podcastEpisode", limit: 200)
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let crawled = await sim.crawl(sim.scopes(source(settings), inputs: items(podcasts)))
            #expect(crawled.count == podcasts.count)
            var found: [String: String] = [:]
            for scope in crawled {
                let parent = String(scope.scope.id.split(separator: ":").last ?? "")
                #expect(scope.skipped.isEmpty)
                #expect(scope.records.allSatisfy { $0.entity == .episode }, "\(scope.scope.id)")
                #expect(scope.outcome.isCapped == (scope.records.count == 200), "\(scope.scope.id): \(scope.outcome)")
                #expect(scope.outcome.isComplete == (scope.records.count < 200), "\(scope.scope.id): \(scope.outcome)")
                for record in scope.records {
                    #expect(fields(record)["collectionId"]?.integerText == parent)
                    #expect(record.key == "\(parent)|\(fields(record)["episodeGuid"]?.stringValue ?? "")")
                    found[fields(record)["trackId"]?.integerText ?? ""] = parent
                }
            }
            #expect(Set(found.keys) == world.aliveKeys(entity: "episode", night: night))
            #expect(crawled.contains { $0.outcome.isComplete && !$0.records.isEmpty })
            #expect(crawled.contains { $0.outcome.isCapped }, "the world has podcasts with a full window")
        }
    }

    @Test func batchLookupsOfTheSimulatorReturnExactlyTheLiveItemsAsked() async throws {
        let world = ConnectorWorlds.small()
        let night = 4
        let albums = Array(world.orderedKeys(entity: "album", night: night).prefix(7))
        let apps = Array(world.orderedKeys(entity: "app", night: night).prefix(6))
        let removed = world.diff(entity: "app", night: night).removed.sorted().prefix(2)
        let asked = (albums + apps + removed + ["987654321098"]).sorted()
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let scopes = sim.scopes(source(ITunesLookupSettings(from: "charts", batchSize: 5)),
                                    inputs: asked.map { Record(entity: .album, key: $0, fields: [:]) })
            #expect(scopes.count == (asked.count + 4) / 5)
            let crawled = await sim.crawl(scopes)
            #expect(crawled.allSatisfy { $0.outcome.isComplete && $0.outcome.pages == 1 && $0.skipped.isEmpty })
            let records = crawled.flatMap(\.records)
            #expect(Set(records.map(\.key)) == Set(albums + apps), "removed and unknown ids are simply absent")
            #expect(Set(records.filter { $0.entity == .album }.map(\.key)) == Set(albums))
            #expect(Set(records.filter { $0.entity == .app }.map(\.key)) == Set(apps))
            #expect(sim.server.requestCount == scopes.count)
        }
    }
}
