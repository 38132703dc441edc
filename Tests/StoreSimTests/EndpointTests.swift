import Catalog
import Foundation
@testable import StoreSim
import Testing
import TestSupport

@Suite struct SearchEndpointTests {
    let world = World(config: SimulatorConfig(seed: 21, podcastCount: 2_000, productCount: 10))

    /// Each search-friendly word matches a useful share of the catalog (5–40%).
    @Test(arguments: ["news", "music", "history", "tech", "comedy", "science", "daily", "show"])
    func searchWordsMatchASubset(word: String) {
        let alive = world.aliveKeys(entity: "podcast", night: 1).count
        let share = Double(world.podcastsMatching([word], night: 1).count) / Double(alive)
        #expect(share >= 0.05 && share <= 0.40, "\(word) matches \(share)")
    }

    @Test func matchingIsCaseInsensitiveOnWholeWords() throws {
        let lower = world.podcastsMatching(["news"], night: 1)
        #expect(try searchResults(world, night: 1, [("term", "NeWs"), ("media", "podcast"), ("limit", "200")]).count
            == min(lower.count, 200))
        #expect(world.podcastsMatching(["new"], night: 1).isEmpty, "a prefix is not a word")
        for i in lower.prefix(50) {
            #expect(world.podcasts.searchWords(i, night: 1).contains("news"))
        }
        // Any word of the term may match: the union of the words' matches.
        let union = Set(lower).union(world.podcastsMatching(["music"], night: 1))
        #expect(Set(world.podcastsMatching(["news", "music"], night: 1)) == union)
    }

    @Test func nonASCIIWordsAreSearchable() {
        let matches = world.podcastsMatching(["café"], night: 1) + world.podcastsMatching(["坂本"], night: 1)
        #expect(!matches.isEmpty)
    }

    /// Offset pages are disjoint, cover every match in order, and the last page is short.
    @Test func pagingCoversAllMatches() throws {
        let limit = 37
        var seen: [Int] = []
        var offset = 0
        var lastCount = limit
        while lastCount == limit {
            let page = try searchResults(world, night: 1, [("term", "history"), ("media", "podcast"),
                                                          ("limit", "\(limit)"), ("offset", "\(offset)")])
            #expect(page.count == page.rows.count, "resultCount is this page's row count")
            seen += page.rows.compactMap { $0["trackId"]?.intValue.map(Int.init) }
            lastCount = page.count
            offset += limit
        }
        #expect(lastCount < limit)
        #expect(Set(seen).count == seen.count, "pages are disjoint")
        let expected = world.podcastsMatching(["history"], night: 1).map { world.podcasts.trackID($0) }
        #expect(seen == expected)
        #expect(expected.count > limit * 2)
    }

    @Test func limitAndOffsetAreClamped() throws {
        #expect(try searchResults(world, night: 1, [("term", "show"), ("media", "podcast"), ("limit", "1000")]).count == 200)
        #expect(try searchResults(world, night: 1, [("term", "show"), ("media", "podcast"), ("limit", "0")]).count == 1)
        #expect(try searchResults(world, night: 1, [("term", "show"), ("media", "podcast")]).count == 50)
        #expect(try searchResults(world, night: 1, [("term", "show"), ("media", "podcast"), ("offset", "-5")]).count == 50)
        #expect(try searchResults(world, night: 1, [("term", "show"), ("media", "podcast"),
                                                    ("offset", "\(Int.max)")]).count == 0)
    }

    @Test func rawLayoutIsLikeTheRealService() throws {
        let response = Endpoints.search(world: world, night: 1,
                                        query: QueryParameters([("term", "tech"), ("media", "podcast"), ("limit", "3")]),
                                        baseURL: "http://127.0.0.1:4242")
        #expect(response.status == 200)
        #expect(response.contentType == "text/javascript; charset=utf-8")
        #expect(response.etag == nil, "the real Search API sends no validators")
        let text = response.text
        #expect(text.hasPrefix("\n\n\n{\n \"resultCount\":3,\n \"results\": [\n{\"wrapperType\":\"track\", \"kind\":\"podcast\", "))
        #expect(text.hasSuffix("}]\n}\n\n\n\n"))
        // "{", the count, "results": [, one line per row (the last one closing
        // the array), and "}".
        let lines = text.split(separator: "\n")
        #expect(lines.count == 4 + 3)
        #expect(lines[3].hasPrefix("{") && lines[3].hasSuffix("},") && lines[5].hasSuffix("}]"))
        #expect(text.contains("\"collectionPrice\":0.00, "))
        let row = try #require(try searchResults(world, night: 1, [("term", "tech"), ("media", "podcast")],
                                                 baseURL: "http://127.0.0.1:4242").rows.first)
        if let feed = row["feedUrl"]?.stringValue, let id = row["trackId"]?.intValue {
            #expect(feed == "http://127.0.0.1:4242/feeds/\(id).xml")
        }
        #expect(row["trackViewUrl"]?.stringValue?.hasSuffix("?mt=2&uo=4") == true)
    }

    /// Known entities the simulator has no catalog for answer an empty result set, in the same layout.
    @Test func unsimulatedEntitiesAreEmptyInTheSameLayout() {
        for query in [[("term", "news"), ("media", "tvShow")], [("term", "news"), ("media", "podcast"), ("entity", "podcastEpisode")],
                      [("term", "news"), ("media", "music"), ("entity", "musicVideo")]] {
            let response = Endpoints.search(world: world, night: 1, query: QueryParameters(query), baseURL: "http://x")
            #expect(response.status == 200)
            #expect(response.text == "\n\n\n{\n \"resultCount\":0,\n \"results\": []\n}\n\n\n\n")
        }
    }

    @Test func missingTermIsA400LikeTheRealService() throws {
        let response = Endpoints.search(world: world, night: 1, query: QueryParameters([("media", "podcast")]), baseURL: "http://x")
        #expect(response.status == 400)
        let body = try parseObject(response.body)
        #expect(body["errorMessage"] == .string("Invalid value(s) for key(s): [term]"))
        #expect(body["queryParameters"]?["term"] != nil)
    }

    @Test func queryStringsAreFormDecoded() {
        let query = QueryParameters("term=jack+johnson&media=podcast&x=%C3%A9%2B&bad=%zz&flag")
        #expect(query["term"] == "jack johnson")
        #expect(query["x"] == "é+")
        #expect(query["bad"] == "%zz")
        #expect(query["flag"] == "")
        #expect(query["missing"] == nil)
    }
}

@Suite struct MarketplaceEndpointTests {
    func world(_ era: PageKeyEra) -> World {
        World(config: SimulatorConfig(seed: 8, podcastCount: 10, productCount: 95, pageKeyEra: era))
    }

    func page(_ world: World, _ pageNo: Int, _ perPage: Int, night: Int = 1) throws -> [String: JSONValue] {
        try parseObject(Endpoints.productList(world: world, night: night,
                                              query: QueryParameters([("page_no", "\(pageNo)"), ("items_per_page", "\(perPage)")]),
                                              ifNoneMatch: nil).body)
    }

    @Test func snakeEraPageKeys() throws {
        let first = try page(world(.snake), 1, 20)
        #expect(Set(first.keys) == ["page_no", "items_per_page", "total_count", "offset", "limit", "last_page", "has_next",
                                    "has_prev", "pages"])
        #expect(first["page_no"] == .int(1) && first["total_count"] == .int(95) && first["last_page"] == .int(5))
        #expect(first["has_next"] == .bool(true) && first["has_prev"] == .bool(false))
        let last = try page(world(.snake), 5, 20)
        #expect(last["pages"]?.arrayValue?.count == 15)
        #expect(last["has_next"] == .bool(false) && last["has_prev"] == .bool(true) && last["offset"] == .int(80))
        let row = try #require(first["pages"]?.arrayValue?.first)
        #expect(row["created_at"]?.stringValue?.hasSuffix(".00") == true)
        #expect(row["description"] == nil && row["vendorName"] == nil)
    }

    @Test func camelEraPageKeys() throws {
        let first = try page(world(.camel), 2, 30)
        #expect(Set(first.keys) == ["pageNo", "itemsPerPage", "totalCount", "offset", "limit", "lastPage", "hasNext",
                                    "hasPrev", "pages"])
        #expect(first["pageNo"] == .int(2) && first["itemsPerPage"] == .int(30) && first["offset"] == .int(30))
        #expect(first["lastPage"] == .int(4) && first["hasNext"] == .bool(true) && first["hasPrev"] == .bool(true))
        let row = try #require(first["pages"]?.arrayValue?.first)
        #expect(row["vendorName"]?.stringValue != nil && row["description"]?.stringValue != nil)
        let created = try #require(row["created_at"]?.stringValue)
        #expect(created.count == 19 && created.contains("T"))
    }

    @Test func newestFirstAndPricesAreFloats() throws {
        let body = Endpoints.productList(world: world(.camel), night: 1, query: QueryParameters([("items_per_page", "100")]),
                                         ifNoneMatch: nil)
        let ids = try parseObject(body.body)["pages"]?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
        #expect(ids == Array((1...95).reversed()).map(Int64.init))
        #expect(body.text.contains("\"price\":") && !body.text.contains(#""price":0,"#))
        #expect(body.text.range(of: #""price":[0-9]+\.[0-9]+"#, options: .regularExpression) != nil)
    }

    @Test func pagePastTheEndIsEmpty() throws {
        let past = try page(world(.snake), 99, 20)
        #expect(past["pages"] == .array([]))
        #expect(past["has_next"] == .bool(false))
        #expect(try page(world(.snake), Int.max, 100)["pages"] == .array([]))
    }

    @Test func itemsPerPageIsClampedAndBadInputIs400() throws {
        #expect(try page(world(.snake), 1, 1000)["items_per_page"] == .int(100))
        let defaults = try parseObject(Endpoints.productList(world: world(.snake), night: 1, query: QueryParameters(nil),
                                                             ifNoneMatch: nil).body)
        #expect(defaults["items_per_page"] == .int(20) && defaults["page_no"] == .int(1))
        for bad in [[("page_no", "0")], [("page_no", "x")], [("items_per_page", "-1")]] {
            let response = Endpoints.productList(world: world(.snake), night: 1, query: QueryParameters(bad), ifNoneMatch: nil)
            #expect(response.status == 400)
            #expect(try parseObject(response.body)["code"] == .int(400))
        }
    }

    @Test func etagIsStrongAndHonoured() {
        let world = world(.snake)
        let query = QueryParameters([("page_no", "1"), ("items_per_page", "10")])
        let first = Endpoints.productList(world: world, night: 1, query: query, ifNoneMatch: nil)
        let etag = first.etag ?? ""
        #expect(etag.hasPrefix("\"") && etag.hasSuffix("\"") && etag.count == 18)
        let again = Endpoints.productList(world: world, night: 1, query: query, ifNoneMatch: etag)
        #expect(again.status == 304 && again.body.isEmpty && again.etag == etag)
        #expect(Endpoints.productList(world: world, night: 1, query: query, ifNoneMatch: "\"other\", W/\(etag)").status == 304)
        #expect(Endpoints.productList(world: world, night: 1, query: query, ifNoneMatch: "\"other\"").status == 200)
        // A later night with changes on page 1 gets a new ETag.
        let busy = Worlds.busy(era: .snake)
        let night1 = Endpoints.productList(world: busy, night: 1, query: QueryParameters([("items_per_page", "100")]), ifNoneMatch: nil)
        let night2 = Endpoints.productList(world: busy, night: 2, query: QueryParameters([("items_per_page", "100")]),
                                           ifNoneMatch: night1.etag)
        #expect(night2.status == 200 && night2.etag != night1.etag)
    }

    @Test(arguments: [PageKeyEra.snake, .camel])
    func detailOfAliveProductsOnly(era: PageKeyEra) throws {
        let world = Worlds.busy(era: era)
        let key = try #require(world.aliveKeys(entity: "listing", night: 3).sorted().first)
        let detail = Endpoints.productDetail(world: world, night: 3, id: key, ifNoneMatch: nil)
        #expect(detail.status == 200 && detail.etag != nil)
        let object = try parseObject(detail.body)
        #expect(object["id"]?.intValue.map(String.init) == key)
        let images = try #require(object["images"]?.arrayValue)
        #expect(!images.isEmpty && images.allSatisfy { $0["url"]?.stringValue != nil && $0["thumbnail_url"] != nil })
        #expect(images.first?["thumbnail_url"] == object["thumbnail"])
        #expect(object["vendors"]?["id"] == object["vendor_id"])
        // The list row's fields agree with the detail's (dates up to the era's detail format).
        let listRow = try parse(Array(try #require(world.rowJSON(entity: "listing", key: key, night: 3)).utf8))
        for field in ["name", "price", "bargain_price", "discounted_price", "stock", "thumbnail", "currency"] {
            #expect(listRow[field] == object[field], "\(field)")
        }

        let removed = try #require(world.diff(entity: "listing", night: 3).removed.first)
        for missing in [removed, "0", "999999", "abc"] {
            let response = Endpoints.productDetail(world: world, night: 3, id: missing, ifNoneMatch: nil)
            #expect(response.status == 404)
            #expect(try parseObject(response.body)["code"] == .int(404))
        }
    }
}

/// The simulated rows have the real services' shapes (from ../shared/api-samples).
@Suite(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is not present"))
struct WireFormatTests {
    func sampleRows(_ name: String, _ field: String) throws -> [[String: JSONValue]] {
        let document = try parse(TestPaths.sample(name))
        return (document[field]?.arrayValue ?? []).compactMap(\.objectValue)
    }

    func keyStats(_ rows: [[String: JSONValue]]) -> (union: Set<String>, common: Set<String>) {
        let sets = rows.map { Set($0.keys) }
        return (sets.reduce(Set()) { $0.union($1) }, sets.dropFirst().reduce(sets.first ?? []) { $0.intersection($1) })
    }

    /// Every simulated key exists in the sample with the same JSON type, and
    /// every key all sample rows have is simulated (feedUrl is absent on a few
    /// simulated rows on purpose, as on some real ones).
    func compare(simulated: [[String: JSONValue]], sample: [[String: JSONValue]], optional: Set<String> = [],
                 _ label: String) {
        let (union, common) = keyStats(sample)
        let simulatedUnion = keyStats(simulated).union
        #expect(simulatedUnion.isSubset(of: union), "\(label): keys not in the sample: \(simulatedUnion.subtracting(union))")
        #expect(common.isSubset(of: simulatedUnion), "\(label): missing \(common.subtracting(simulatedUnion))")
        for row in simulated {
            let missing = common.subtracting(row.keys).subtracting(optional)
            #expect(missing.isEmpty, "\(label): a row lacks \(missing)")
            for (key, value) in row {
                if let real = sample.lazy.compactMap({ $0[key] }).first(where: { $0 != .null }) {
                    #expect(jsonKind(value) == jsonKind(real), "\(label).\(key): \(jsonKind(value)) vs \(jsonKind(real))")
                }
            }
        }
    }

    @Test func podcastRowsMatchTheRealSearchRows() throws {
        let world = World(config: SimulatorConfig(seed: 4, podcastCount: 600, productCount: 1))
        let rows = try servedPodcastRows(world, night: 1).values.compactMap(\.objectValue)
        compare(simulated: rows, sample: try sampleRows("itunes-search-podcast-apple.json", "results"),
                optional: ["feedUrl"], "podcast")
        // The real variations occur: rows without an artist page, advisory ratings, no feed.
        #expect(rows.contains { $0["artistId"] == nil } && rows.contains { $0["artistId"] != nil })
        #expect(rows.contains { $0["contentAdvisoryRating"] != nil })
        #expect(rows.contains { $0["feedUrl"] == nil })
        #expect(rows.allSatisfy { $0["genreIds"]?.arrayValue?.allSatisfy { $0.stringValue != nil && $0.intValue != nil } == true })
        #expect(rows.allSatisfy { $0["genres"]?.arrayValue?.contains(.string("Podcasts")) == true })
        #expect(rows.allSatisfy { $0["collectionId"] == $0["trackId"] })
    }

    @Test func listRowsMatchTheRealListRowsOfTheirEra() throws {
        for (era, sample, pageKeys) in [(PageKeyEra.snake, "openmarket-list-snake-p1-of-93.json", 9),
                                        (.camel, "openmarket-list-camel-p3-of-6.json", 9)] {
            let world = World(config: SimulatorConfig(seed: 4, podcastCount: 1, productCount: 200, pageKeyEra: era))
            let rows = try servedProductRows(world, night: 1).values.compactMap(\.objectValue)
            let real = try sampleRows(sample, "pages")
            compare(simulated: rows, sample: real, "\(era) list")
            #expect(Set(rows.flatMap(\.keys)) == keyStats(real).union, "\(era): same product keys as the sample")
            let realPage = try parseObject(TestPaths.sample(sample))
            let page = try parseObject(Endpoints.productList(world: world, night: 1, query: QueryParameters(nil),
                                                             ifNoneMatch: nil).body)
            #expect(Set(page.keys) == Set(realPage.keys) && page.count == pageKeys, "\(era) page keys")
        }
    }

    @Test func detailsMatchTheRealDetailOfTheirEra() throws {
        for (era, sample) in [(PageKeyEra.camel, "openmarket-detail-camel-era-1.json"),
                              (.snake, "openmarket-detail-snake-era-spacedates.json")] {
            let world = World(config: SimulatorConfig(seed: 4, podcastCount: 1, productCount: 20, pageKeyEra: era))
            let real = try parseObject(TestPaths.sample(sample))
            let detail = try parseObject(Endpoints.productDetail(world: world, night: 1, id: "7", ifNoneMatch: nil).body)
            #expect(Set(detail.keys) == Set(real.keys), "\(era) detail keys")
            let image = try #require(detail["images"]?.arrayValue?.first?.objectValue)
            let realImage = try #require(real["images"]?.arrayValue?.first?.objectValue)
            #expect(Set(image.keys) == Set(realImage.keys), "\(era) image keys")
            #expect(Set(detail["vendors"]?.objectValue?.keys ?? [:].keys) == Set(real["vendors"]?.objectValue?.keys ?? [:].keys))
            #expect(detail["created_at"]?.stringValue?.count == real["created_at"]?.stringValue?.count, "\(era) date format")
        }
    }
}
