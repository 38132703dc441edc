import Catalog
@testable import Connectors
import Crawl
import Foundation
import StoreSim
import Testing
import TestSupport

@Suite struct ITunesGenresTests {
    let genresURL = "https://itunes.apple.com/WebObjects/MZStoreServices.woa/ws/genres?id=26"

    func source(_ settings: ITunesGenresSettings) -> SourceSpec {
        SourceSpec(name: "genres", settings: (settings))
    }

    @Test func oneSinglePageScopePerRootOnTheGivenBaseURL() throws {
        let base = URL(string: "http://127.0.0.1:8123/prefix/")!
        let scopes = source(ITunesGenresSettings(roots: [26, 34, 26])).scopes(baseURL: base)
        #expect(scopes.map(\.id) == ["genres:26", "genres:34"])
        #expect(scopes.first?.pageURL(0)?.absoluteString
            == "http://127.0.0.1:8123/prefix/WebObjects/MZStoreServices.woa/ws/genres?id=26")
        #expect(scopes.allSatisfy { $0.sweeps })

        let withCountry = source(ITunesGenresSettings(roots: [36], country: "GB")).scopes(baseURL: base)
        #expect(withCountry.map(\.id) == ["genres:36:gb"])
        #expect(withCountry.first?.pageURL(0)?.query == "id=36&cc=gb")
    }

    /// A single-page scope must end complete (so it may sweep), after exactly one request.
    @Test func theWalkerEndsASinglePageScopeComplete() async throws {
        let scope = try #require(source(ITunesGenresSettings(roots: [26])).scopes(baseURL: URL(string: "http://x")!).first)
        let body = #"{"26":{"name":"Podcasts","id":"26","subgenres":{"1301":{"name":"Arts","id":"1301"}}}}"#
        let (outcome, fetched) = await walkOffline(scope) { _ in page(body, url: "http://x/genres?id=26") }
        #expect(outcome.isComplete)
        #expect(fetched == 1)
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func theRealPodcastTreeDecodes() throws {
        let response = HTTPResponse(url: URL(string: genresURL)!, status: 200,
                                    body: try TestPaths.sample("itunes-genres-id26-podcasts-tree-2018.json"))
        let decoded = try ITunesGenres.decodePage(response, root: "26")
        #expect(decoded.items.count == 68)
        #expect(decoded.rowCount == 68)
        #expect(decoded.skipped.isEmpty)
        #expect(decoded.hasNext == false)
        #expect(decoded.items.allSatisfy { $0.entity == .genre })
        #expect(Set(decoded.items.map(\.key)).count == 68)

        let byKey = Dictionary(uniqueKeysWithValues: decoded.items.map { ($0.key, $0) })
        let root = fields(byKey["26"])
        #expect(root["name"] == .string("Podcasts"))
        #expect(root["parentId"] == .string(""))
        #expect(root["subgenres"] == nil, "a parent's record must not change when a child is added")
        #expect(root["url"] == .string("https://itunes.apple.com/us/genre/podcasts/id26?mt=2"))
        #expect(root["rssUrls"]?["topPodcasts"] == .string("https://itunes.apple.com/us/rss/toppodcasts/genre=26/json"))
        #expect(root["chartUrls"]?["podcasts"] != nil)

        let design = fields(byKey["1402"])
        #expect(design["name"] == .string("Design"))
        #expect(design["parentId"] == .string("1301"))
        #expect(fields(byKey["1310"])["parentId"] == .string("26"))
        // Every parent is itself a record of the tree.
        for record in decoded.items {
            let parent = fields(record)["parentId"]?.stringValue ?? "?"
            #expect(parent.isEmpty || byKey[parent] != nil, "\(record.key) has parent \(parent)")
        }
    }

    @Test func numbersAsIdsNullsAndAbsentMembersAreAccepted() throws {
        let body = """
            \r\n  {"26": {"name": "Podcasts", "id": 26, "url": null,
              "subgenres": {
                "1301": {"id": "1301", "name": "Arts", "rssUrls": {"topPodcasts": "https://itunes.apple.com/us/rss/toppodcasts/genre=1301/json?uo=4"},
                         "subgenres": null},
                "1483": {"name": "Fiction"},
                "1488": {"id": " 1488 ", "name": null, "subgenres": {}}
              }}}\r\n
            """
        let decoded = try ITunesGenres.decodePage(page(body), root: "26")
        #expect(decoded.items.map(\.key) == ["26", "1301", "1483", "1488"])
        let byKey = Dictionary(uniqueKeysWithValues: decoded.items.map { ($0.key, fields($0)) })
        #expect(byKey["26"]?["id"] == .string("26"), "ids are stored as strings whatever the wire type")
        #expect(byKey["26"]?["url"] == .null)
        #expect(byKey["1483"]?["id"] == .string("1483"), "the member key stands in for an absent id")
        #expect(byKey["1488"]?["name"] == .null)
        #expect(byKey["1301"]?["rssUrls"]?["topPodcasts"]
            == .string("https://itunes.apple.com/us/rss/toppodcasts/genre=1301/json"), "tracking parameters are stripped")
    }

    @Test func brokenNodesAreSkippedAndDuplicatesKeptOnce() throws {
        let body = #"{"26":{"id":"26","name":"Podcasts","subgenres":{"1301":{"id":"1301","name":"Arts","subgenres":{"1402":{"id":"1402","name":"Design"}}},"1402":{"id":"1402","name":"Design again"},"9":7,"1303":{"id":"1303","subgenres":"oops"}}}}"#
        let decoded = try ITunesGenres.decodePage(page(body), root: "26")
        #expect(decoded.items.map(\.key) == ["26", "1301", "1402", "1303"])
        #expect(fields(decoded.items.first { $0.key == "1402" })["parentId"] == .string("1301"))
        #expect(decoded.skipped.count == 3, "\(decoded.skipped)")
        #expect(decoded.skipped.allSatisfy { $0.hasPrefix("https://itunes.apple.com/x at $[\"26\"]") }, "\(decoded.skipped)")
    }

    @Test func aMissingRootOrAnHTMLPageIsMalformedAndNamesTheURL() {
        for body in ["{}", #"{"34":{"id":"34","name":"Music"}}"#, #"{"26":null}"#, #"{"26":"Podcasts"}"#,
                     "[]", "<html><body>Service Unavailable</body></html>"] {
            do {
                _ = try ITunesGenres.decodePage(page(body, url: genresURL), root: "26")
                Issue.record("\(body) decoded")
            } catch {
                guard error.code == .malformedPage, case let (url, reason) = (error.location, error.message) else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(url == genresURL)
                #expect(reason.contains("$") || reason.contains("line"), "\(reason)")
            }
        }
    }

    @Test func withoutARootEveryTreeOfTheAnswerIsRead() throws {
        let body = #"{"34":{"id":"34","name":"Music","subgenres":{"14":{"id":"14","name":"Pop"}}},"26":{"id":"26","name":"Podcasts"}}"#
        let decoded = try ITunesGenres.decodePage(page(body))
        #expect(decoded.items.map(\.key) == ["26", "34", "14"])
    }

    /// Every root's tree from the simulator, on a night after its taxonomy
    /// change, equals the world's genres: ids, names and parent links.
    @Test func aCrawlOfTheSimulatorMatchesItsGenres() async throws {
        let world = ConnectorWorlds.small()
        let night = 7
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let crawled = await sim.crawl(sim.scopes(source(ITunesGenresSettings(roots: [26, 34, 33, 36]))))
            #expect(crawled.count == 4)
            #expect(crawled.allSatisfy { $0.outcome.isComplete && $0.outcome.pages == 1 && $0.skipped.isEmpty })
            let records = crawled.flatMap(\.records)
            #expect(Set(records.map(\.key)) == world.aliveKeys(entity: "genre", night: night))
            #expect(records.count == Set(records.map(\.key)).count)
            let keys = Set(records.map(\.key))
            for record in records {
                let served = try JSONParser.parse(try #require(world.rowJSON(entity: "genre", key: record.key, night: night)))
                let stored = fields(record)
                #expect(stored["name"] == served["name"], "\(record.key)")
                #expect(stored["url"] == served["url"], "\(record.key)")
                let parent = stored["parentId"]?.stringValue ?? "?"
                #expect(parent.isEmpty == ["26", "34", "33", "36"].contains(record.key), "\(record.key)")
                #expect(parent.isEmpty || keys.contains(parent))
            }
            // Bodies name a fixed host; nothing of it leaks into what the crawl needs.
            #expect(sim.server.requestCount == 4)
        }
    }
}
