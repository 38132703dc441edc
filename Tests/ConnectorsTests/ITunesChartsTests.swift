import Catalog
@testable import Connectors
import Crawl
import Foundation
import StoreSim
import Testing
import TestSupport

typealias ChartContext = ITunesCharts.ChartContext

/// Genre records as a genres source stores them (the shape ITunesGenres produces).
func genreRecord(_ id: String, name: String, parent: String, feeds: [String] = ["toppodcasts"]) -> Record {
    var rss: [String: JSONValue] = [:]
    for feed in feeds { rss[feed] = .string("http://itunes.storesim.test/us/rss/\(feed)/genre=\(id)/json") }
    return Record(entity: .genre, key: id, fields: [
        "id": .string(id), "name": .string(name), "parentId": .string(parent), "rssUrls": .object(rss),
    ])
}

@Suite struct ITunesChartScopeTests {
    let base = URL(string: "http://127.0.0.1:9000")!

    func source(_ settings: ITunesChartsSettings) -> SourceSpec {
        SourceSpec(name: "charts", settings: (settings))
    }

    @Test func legacyScopesCoverEveryChartCountryAndGenre() {
        let settings = ITunesChartsSettings(charts: ["toppodcasts", "topsongs"], countries: ["us", "GB"], limit: 50,
                                            genres: [1310, 1301])
        let scopes = source(settings).scopes(baseURL: base)
        #expect(scopes.map(\.id) == [
            "chart:toppodcasts:us:all", "chart:toppodcasts:us:1310", "chart:toppodcasts:us:1301",
            "chart:toppodcasts:gb:all", "chart:toppodcasts:gb:1310", "chart:toppodcasts:gb:1301",
            "chart:topsongs:us:all", "chart:topsongs:us:1310", "chart:topsongs:us:1301",
            "chart:topsongs:gb:all", "chart:topsongs:gb:1310", "chart:topsongs:gb:1301",
        ])
        #expect(scopes[0].pageURL(0)?.absoluteString == "http://127.0.0.1:9000/us/rss/toppodcasts/limit=50/json")
        #expect(scopes[1].pageURL(0)?.absoluteString == "http://127.0.0.1:9000/us/rss/toppodcasts/limit=50/genre=1310/json")
        #expect(scopes[3].pageURL(0)?.absoluteString == "http://127.0.0.1:9000/gb/rss/toppodcasts/limit=50/json")
        #expect(scopes.allSatisfy { $0.sweeps })
        #expect(scopes.allSatisfy { $0.pagination == .pageNumber(firstPage: 1, pageSize: 1, maxPages: 1) })
    }

    @Test func withoutTheAllGenresChartOnlyGenresAreCrawled() {
        let settings = ITunesChartsSettings(genres: [1310], includeAllGenres: false)
        #expect(source(settings).scopes(baseURL: base).map(\.id) == ["chart:toppodcasts:us:1310"])
        #expect(source(ITunesChartsSettings(includeAllGenres: false)).scopes(baseURL: base).isEmpty)
    }

    /// Genres from a genres source: filtered by `genres`, by the feeds each node
    /// lists (no top podcasts for a music genre), roots folded into the all-genres chart.
    @Test func genresFromASourceAreFilteredByTheirOwnFeeds() {
        let records = [
            genreRecord("26", name: "Podcasts", parent: ""),
            genreRecord("1301", name: "Arts", parent: "26"),
            genreRecord("1310", name: "Music", parent: "26"),
            genreRecord("14", name: "Pop", parent: "34", feeds: ["topsongs", "topalbums"]),
            Record(entity: .genre, key: "1402", fields: ["name": .string("Design"), "parentId": .string("1301")]),
            Record(entity: .genre, key: "bad/id", fields: ["name": .string("x")]),
            Record(entity: .podcast, key: "77", fields: [:]),
        ]
        var settings = ITunesChartsSettings(charts: ["toppodcasts", "topsongs"], genresFrom: "genres")
        #expect(source(settings).scopes(baseURL: base, inputs: records).map(\.id) == [
            "chart:toppodcasts:us:all", "chart:toppodcasts:us:1301", "chart:toppodcasts:us:1310",
            "chart:toppodcasts:us:1402", "chart:topsongs:us:all", "chart:topsongs:us:14", "chart:topsongs:us:1402",
        ])
        let names = ITunesCharts.legacyGenres(for: "toppodcasts", settings: settings, records: records)
        #expect(names.map(\.name) == ["Arts", "Music", "Design"])

        settings.genres = [1310, 26]
        settings.includeAllGenres = false
        #expect(source(settings).scopes(baseURL: base, inputs: records).map(\.id) == [
            "chart:toppodcasts:us:26", "chart:toppodcasts:us:1310",
        ])
    }

    @Test func v2ScopesBuildTheMarketingToolsPath() {
        let settings = ITunesChartsSettings(format: .v2, charts: ["music/most-played/albums", "broken"],
                                            countries: ["us", "jp"], limit: 250)
        let scopes = source(settings).scopes(baseURL: base)
        #expect(scopes.map(\.id) == ["chart:v2:music/most-played/albums:us", "chart:v2:music/most-played/albums:jp"])
        #expect(scopes[0].pageURL(0)?.absoluteString == "http://127.0.0.1:9000/api/v2/us/music/most-played/100/albums.json",
                "above 100 the real service fails, so the limit is clamped")
    }

    @Test func aChartScopeEndsCompleteAfterOneRequestEvenWhenFull() async throws {
        let scope = try #require(source(ITunesChartsSettings(limit: 1)).scopes(baseURL: base).first)
        let body = #"{"feed":{"entry":{"im:name":{"label":"A"},"id":{"label":"https://x/id5","attributes":{"im:id":"5"}}}}}"#
        let (outcome, fetched) = await walkOffline(scope) { _ in page(body) }
        #expect(outcome.isComplete)
        #expect(fetched == 1)
    }
}

@Suite struct ITunesChartDecodingTests {
    let podcastsURL = "https://itunes.apple.com/us/rss/toppodcasts/limit=100/genre=1310/json"

    func sample(_ name: String, url: String) throws -> HTTPResponse {
        HTTPResponse(url: URL(string: url)!, status: 200, body: try TestPaths.sample(name))
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func theRealLegacyPodcastChartDecodes() throws {
        let context = ChartContext(chart: "toppodcasts", country: "us", genreID: "1310", genreName: "Music",
                                   defaultEntity: .podcast)
        let decoded = try ITunesCharts.decodeLegacyJSON(
            sample("itunes-rss-legacy-toppodcasts-100-genre1310-2023-04.json", url: podcastsURL), context: context)
        #expect(decoded.rowCount == 100)
        #expect(decoded.skipped.isEmpty)
        #expect(decoded.hasNext == false)
        let entries = decoded.items.filter { $0.entity == .chartEntry }
        let podcasts = decoded.items.filter { $0.entity == .podcast }
        #expect(entries.count == 100 && podcasts.count == 100)
        // Entries are keyed by item; the rank is a field, 1…100 in feed order.
        #expect(entries.map(\.key) == podcasts.map { "toppodcasts|us|1310|podcast|\($0.key)" })
        #expect(entries.map { fields($0)[ChartEntry.rank] } == (1...100).map { .int(Int64($0)) })

        let first = fields(entries.first { $0.key == "toppodcasts|us|1310|podcast|1535809341" })
        #expect(first[ChartEntry.chart] == .string("toppodcasts"))
        #expect(first[ChartEntry.country] == .string("us"))
        #expect(first[ChartEntry.genreID] == .string("1310"))
        #expect(first[ChartEntry.genreName] == .string("Music"))
        #expect(first[ChartEntry.rank] == .int(1))
        #expect(first[ChartEntry.itemEntity] == .string("podcast"))
        #expect(first[ChartEntry.itemKey] == .string("1535809341"))
        #expect(first[ChartEntry.name] == .string("The Joe Budden Podcast"))
        #expect(first[ChartEntry.artistName] == .string("The Joe Budden Network"))
        #expect(first[ChartEntry.link] == .string("https://podcasts.apple.com/us/podcast/the-joe-budden-podcast/id1535809341"))
        #expect(first[ChartEntry.artworkURL]?.stringValue?.hasSuffix("/170x170bb.png") == true)
        #expect(first[ChartEntry.releaseDate] == .string("2023-04-15T07:00:00Z"))

        let item = fields(podcasts.first { $0.key == "1535809341" })
        #expect(item["trackId"] == .int(1535809341))
        #expect(item["trackName"] == .string("The Joe Budden Podcast"))
        #expect(item["artistId"] == .int(1535844019))
        #expect(item["primaryGenreId"] == .int(1310))
        #expect(item["primaryGenreName"] == .string("Music"))
        #expect(item["currency"] == .string("USD"))
        #expect(item["collectionViewUrl"] == first[ChartEntry.link])
        #expect(item["artworkUrl55"] != nil && item["artworkUrl60"] != nil && item["artworkUrl170"] != nil)
        #expect(item["entry"]?["im:name"]?["label"] == .string("The Joe Budden Podcast"), "the raw entry is kept")
        #expect(podcasts.allSatisfy { !$0.payload.contains("uo=2") })
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func theRealV2AlbumChartDecodes() throws {
        let context = ChartContext(chart: "music/most-played/albums", country: "us", defaultEntity: .album)
        let decoded = try ITunesCharts.decodeV2(
            sample("rssv2-music-most-played-100-albums-us-2025-01.json",
                   url: "https://rss.applemarketingtools.com/api/v2/us/music/most-played/100/albums.json"),
            context: context)
        #expect(decoded.rowCount == 100 && decoded.skipped.isEmpty)
        let albums = decoded.items.filter { $0.entity == .album }
        #expect(albums.count == 100)
        let slot = fields(decoded.items.first { $0.key == "music/most-played/albums|us||album|1787022393" })
        #expect(slot[ChartEntry.rank] == .int(1))
        #expect(slot[ChartEntry.itemKey] == .string("1787022393"))
        #expect(slot[ChartEntry.itemEntity] == .string("album"))
        #expect(slot[ChartEntry.genreID] == .string(""))
        #expect(slot[ChartEntry.genreName] == nil)
        #expect(slot[ChartEntry.releaseDate] == .string("2025-01-05"))
        let album = fields(albums.first { $0.key == "1787022393" })
        #expect(album["collectionId"] == .int(1787022393))
        #expect(album["collectionName"] == .string("DeBÍ TiRAR MáS FOToS"))
        #expect(album["artistName"] == .string("Bad Bunny"))
        #expect(album["artistId"] == .int(1126808565))
        #expect(album["genreIds"] == .array([.string("12"), .string("34")]))
        #expect(album["primaryGenreName"] == .string("Latin"))
        #expect(album["contentAdvisoryRating"] == .string("Explicit"))
        #expect(album["artworkUrl100"]?.stringValue?.hasSuffix("100x100bb.jpg") == true)
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func theRealLegacyAtomChartDecodes() throws {
        let context = ChartContext(chart: "topalbums", country: "us", defaultEntity: .album)
        let decoded = try ITunesCharts.decodeLegacyXML(
            sample("itunes-rss-legacy-topalbums-10-xml-2013.xml",
                   url: "https://itunes.apple.com/us/rss/topalbums/limit=10/explicit=true/xml"),
            context: context)
        #expect(decoded.rowCount == 10 && decoded.skipped.isEmpty)
        let albums = decoded.items.filter { $0.entity == .album }
        #expect(albums.count == 10)
        let slot = fields(decoded.items.first { $0.key == "topalbums|us||album|647928068" })
        #expect(slot[ChartEntry.rank] == .int(1))
        #expect(slot[ChartEntry.itemKey] == .string("647928068"))
        #expect(slot[ChartEntry.name] == .string("The Gifted"))
        #expect(slot[ChartEntry.artistName] == .string("Wale"))
        #expect(slot[ChartEntry.releaseDate] == .string("2013-06-24T07:00:00Z"))
        #expect(slot[ChartEntry.artworkURL]?.stringValue?.contains("170x170") == true)
        let album = fields(albums.first { $0.key == "647928068" })
        #expect(album["collectionName"] == .string("The Gifted"))
        #expect(album["trackCount"] == .int(16))
        #expect(album["collectionPrice"] == .double(9.99))
        #expect(album["primaryGenreId"] == .int(18))
        #expect(album["primaryGenreName"] == .string("Hip-Hop/Rap"))
        #expect(album["copyright"]?.stringValue?.hasPrefix("\u{2117} 2013") == true, "character references are decoded")
        #expect(album["entry"]?["updated"] == nil, "the feed's build time is not part of the item")
        #expect(album["entry"]?["im:contentType"]?["im:contentType"]?["attributes"]?["term"] == .string("Album"))
    }

    // MARK: Robustness

    let context = ChartContext(chart: "toppodcasts", country: "us", defaultEntity: .podcast)

    @Test func aSingleEntryIsAnObjectAndAnEmptyChartHasNoEntry() throws {
        let single = #"{"feed":{"entry":{"im:name":{"label":"Solo"},"id":{"label":"https://x/id42?uo=2","attributes":{"im:id":"42"}}}}}"#
        let one = try ITunesCharts.decodeLegacyJSON(page(single), context: context)
        #expect(one.rowCount == 1)
        #expect(one.items.map(\.key) == ["toppodcasts|us||podcast|42", "42"])

        for empty in [#"{"feed":{"author":{"name":{"label":"iTunes Store"}}}}"#, #"{"feed":{"entry":null}}"#,
                      #"{"feed":{"entry":[]}}"#] {
            let decoded = try ITunesCharts.decodeLegacyJSON(page(empty), context: context)
            #expect(decoded.items.isEmpty && decoded.rowCount == 0 && decoded.hasNext == false)
        }
    }

    @Test func idsAsNumbersMissingMembersAndCRLFAreAccepted() throws {
        let body = "\r\n\r\n{ \"feed\" :\r\n {\"entry\": [\r\n"
            + #"{"id":{"attributes":{"im:id":7}},"im:contentType":{"attributes":{"term":"Music"},"im:contentType":{"attributes":{"term":"Album"}}}},"#
            + "\r\n"
            + #"{"id":{"label":"https://music.apple.com/us/album/x/123?i=456&uo=2"},"im:name":null,"im:image":{"label":"https://a/1.jpg","attributes":{"height":"60"}}},"#
            + #"{"link":[{"attributes":{"rel":"enclosure","href":"https://a/preview.m4a"}},{"attributes":{"rel":"alternate","href":"https://itunes.apple.com/us/podcast/y/id99?uo=2"}}]}"#
            + "\r\n]}}\r\n"
        let decoded = try ITunesCharts.decodeLegacyJSON(page(body), context: context)
        #expect(decoded.skipped.isEmpty, "\(decoded.skipped)")
        let slots = decoded.items.filter { $0.entity == .chartEntry }.map(fields)
        #expect(slots.map { $0[ChartEntry.itemKey] } == [.string("7"), .string("456"), .string("99")])
        // The entry's own content type beats the chart's default.
        #expect(slots.map { $0[ChartEntry.itemEntity] } == [.string("album"), .string("podcast"), .string("podcast")])
        #expect(slots[1][ChartEntry.name] == nil)
        #expect(slots[1][ChartEntry.artworkURL] == .string("https://a/1.jpg"))
        #expect(slots[2][ChartEntry.link] == .string("https://itunes.apple.com/us/podcast/y/id99"))
        #expect(decoded.items.contains { $0.entity == .album && $0.key == "7" })
    }

    @Test func anEntryWithoutAnIdIsSkippedWithoutShiftingLaterRanks() throws {
        let body = #"{"feed":{"entry":[{"im:name":{"label":"no id"}},"not an entry",{"id":{"attributes":{"im:id":"3"}}}]}}"#
        let decoded = try ITunesCharts.decodeLegacyJSON(page(body, url: "https://itunes.apple.com/us/rss/toppodcasts/json"),
                                                        context: context)
        #expect(decoded.rowCount == 3)
        #expect(decoded.items.map(\.key) == ["toppodcasts|us||podcast|3", "3"])
        #expect(fields(decoded.items.first)[ChartEntry.rank] == .int(3))
        #expect(decoded.skipped.count == 2)
        #expect(decoded.skipped.first?.contains("https://itunes.apple.com/us/rss/toppodcasts/json at $.feed.entry[0]") == true)
    }

    /// Entries are keyed by item: between two nights an item that moved keeps
    /// its key with a new rank, one that entered is a new key, one that left a
    /// key no longer there; the entries around them are untouched.
    @Test func aMoveIsARankChangeAndEnteringOrLeavingIsAnotherKey() throws {
        func chart(_ ids: [Int]) throws -> [String: JSONValue] {
            let entries = ids.map { #"{"id":{"attributes":{"im:id":"\#($0)"}},"im:name":{"label":"Show \#($0)"}}"# }
            let decoded = try ITunesCharts.decodeLegacyJSON(page(#"{"feed":{"entry":["# + entries.joined(separator: ",") + "]}}"),
                                                            context: context)
            var ranks: [String: JSONValue] = [:]
            for entry in decoded.items where entry.entity == .chartEntry { ranks[entry.key] = fields(entry)[ChartEntry.rank] }
            return ranks
        }
        let before = try chart([10, 20, 30, 40])
        let after = try chart([30, 10, 20, 50])
        let key = { (id: Int) in "toppodcasts|us||podcast|\(id)" }
        #expect(before[key(30)] == .int(3) && after[key(30)] == .int(1), "moved from 3 to 1: one key, rank changed")
        #expect(before[key(10)] == .int(1) && after[key(10)] == .int(2))
        #expect(before[key(50)] == nil && after[key(50)] == .int(4), "entered")
        #expect(before[key(40)] == .int(4) && after[key(40)] == nil, "left")
    }

    @Test func anItemListedTwiceKeepsItsFirstRank() throws {
        let body = #"{"feed":{"entry":[{"id":{"attributes":{"im:id":"5"}}},{"id":{"attributes":{"im:id":"6"}}},{"id":{"attributes":{"im:id":"5"}}}]}}"#
        let decoded = try ITunesCharts.decodeLegacyJSON(page(body, url: "https://itunes.apple.com/us/rss/toppodcasts/json"),
                                                        context: context)
        let entries = decoded.items.filter { $0.entity == .chartEntry }
        #expect(entries.map(\.key) == ["toppodcasts|us||podcast|5", "toppodcasts|us||podcast|6"])
        #expect(entries.map { fields($0)[ChartEntry.rank] } == [.int(1), .int(2)])
        #expect(decoded.items.filter { $0.entity == .podcast }.map(\.key) == ["5", "6"])
        #expect(decoded.skipped == ["https://itunes.apple.com/us/rss/toppodcasts/json at $.feed.entry[2]: podcast 5 already ranked 1 in this chart"])
        #expect(decoded.rowCount == 3)
    }

    @Test func otherCountriesChartsRecordEntriesOnly() throws {
        let body = #"{"feed":{"entry":[{"id":{"attributes":{"im:id":"1"}}},{"id":{"attributes":{"im:id":"2"}}}]}}"#
        let gb = ChartContext(chart: "toppodcasts", country: "GB", genreID: "1301", defaultEntity: .podcast, emitsItems: false)
        let decoded = try ITunesCharts.decodeLegacyJSON(page(body), context: gb)
        #expect(decoded.items.map(\.key) == ["toppodcasts|gb|1301|podcast|1", "toppodcasts|gb|1301|podcast|2"])
    }

    @Test func malformedChartsNameTheURLAndPlace() {
        let url = "https://itunes.apple.com/us/rss/toppodcasts/limit=10/json"
        let cases: [(String, String)] = [
            ("<html><body>Service Unavailable</body></html>", "line"),
            (#"{"feed":{"entry":[{"id":"#, "line"),
            (#"{"nofeed":true}"#, "$.feed"),
            (#"{"feed":{"entry":"x"}}"#, "$.feed.entry"),
            ("[1]", "$"),
        ]
        for (body, place) in cases {
            do {
                _ = try ITunesCharts.decodeLegacyJSON(page(body, url: url), context: context)
                Issue.record("\(body) decoded")
            } catch {
                guard error.code == .malformedPage, case let (failedURL, reason) = (error.location, error.message) else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(failedURL == url)
                #expect(reason.contains(place), "\(reason)")
            }
        }
    }

    @Test func v2ErrorsAndMissingResultsAreMalformed() {
        let v2 = ChartContext(chart: "music/most-played/albums", country: "us", defaultEntity: .album)
        for (body, text) in [(#"{"errors":[{"status":"500","detail":"limit 200 is above 100"}]}"#, "limit 200"),
                             (#"{"feed":{"title":"Top Albums"}}"#, "$.feed.results"), (#"{}"#, "$.feed")] {
            do {
                _ = try ITunesCharts.decodeV2(page(body), context: v2)
                Issue.record("\(body) decoded")
            } catch {
                #expect(error.description.contains(text), "\(error)")
            }
        }
    }

    @Test func v2RowsWithoutKindOrIdFallBack() throws {
        let v2 = ChartContext(chart: "podcasts/top/podcasts", country: "us", defaultEntity: .podcast)
        let body = #"{"feed":{"results":[{"name":"A","url":"https://podcasts.apple.com/us/podcast/a/id11"},{"id":12,"kind":"songs"},{"name":"no id"}]}}"#
        let decoded = try ITunesCharts.decodeV2(page(body), context: v2)
        #expect(decoded.items.filter { $0.entity != .chartEntry }.map { "\($0.entity.rawValue):\($0.key)" }
            == ["podcast:11", "song:12"])
        #expect(decoded.skipped.count == 1)
    }

    @Test func badXMLIsMalformedWithLineAndColumn() {
        let url = "https://itunes.apple.com/us/rss/topalbums/limit=10/xml"
        for (body, text) in [("<feed><entry><id>1</entry></feed>", "line 1, column"), ("", "empty"),
                             (#"<?xml version="1.0"?><html><body/></html>"#, "<html>")] {
            do {
                _ = try ITunesCharts.decodeLegacyXML(page(body, url: url), context: context)
                Issue.record("\(body) decoded")
            } catch {
                guard error.code == .malformedPage, case let (failedURL, reason) = (error.location, error.message) else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(failedURL == url)
                #expect(reason.contains(text), "\(reason)")
            }
        }
    }

    @Test func releaseDatesBecomeUTC() {
        #expect(ITunesCharts.utcTimestamp("2023-04-15T00:00:00-07:00") == "2023-04-15T07:00:00Z")
        #expect(ITunesCharts.utcTimestamp("2013-12-31T20:30:00-07:00") == "2014-01-01T03:30:00Z")
        #expect(ITunesCharts.utcTimestamp("2020-03-01T01:00:00+0200") == "2020-02-29T23:00:00Z")
        #expect(ITunesCharts.utcTimestamp("2020-03-01T01:00:00Z") == "2020-03-01T01:00:00Z")
        #expect(ITunesCharts.utcTimestamp("2025-01-05") == "2025-01-05")
        #expect(ITunesCharts.utcTimestamp("April 15, 2023") == "April 15, 2023")
        #expect(ITunesCharts.utcTimestamp("2023-13-15T00:00:00-07:00") == "2023-13-15T00:00:00-07:00")
    }
}

/// Charts crawled from the simulator over HTTP equal the world's chart truth.
@Suite struct ITunesChartCrawlTests {
    let world = ConnectorWorlds.small()
    let night = 3

    func source(_ settings: ITunesChartsSettings) -> SourceSpec {
        SourceSpec(name: "charts", settings: (settings))
    }

    /// Checks one crawled chart scope against `world.chartKeys`: slot keys, ranks, items.
    func expectTruth(_ crawled: CrawledScope, truthChart: String, genre: String?, country: String, limit: Int,
                     emitsItems: Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        let label = crawled.scope.id
        #expect(crawled.outcome.isComplete && crawled.outcome.pages == 1, "\(label): \(crawled.outcome)",
                sourceLocation: sourceLocation)
        #expect(crawled.skipped.isEmpty, "\(label): \(crawled.skipped)", sourceLocation: sourceLocation)
        let truth = world.chartKeys(chart: truthChart, genre: genre, country: country, limit: limit, night: night)
        // A world this size fills every all-genres chart; genre charts may be short, single or empty.
        #expect(genre != nil || truth.count == limit, "\(label)", sourceLocation: sourceLocation)
        let slots = crawled.records(.chartEntry).map(fields)
        #expect(slots.compactMap { $0[ChartEntry.rank]?.intValue } == (0..<truth.count).map { Int64($0 + 1) },
                "\(label)", sourceLocation: sourceLocation)
        // Keyed by chart, country, genre and item: the rank is not in the key.
        let keys = zip(crawled.records(.chartEntry), slots).map { record, entry in
            (record.key, [entry[ChartEntry.chart], entry[ChartEntry.country], entry[ChartEntry.genreID],
                          entry[ChartEntry.itemEntity], entry[ChartEntry.itemKey]].compactMap { $0?.stringValue }
                .joined(separator: "|"))
        }
        #expect(keys.allSatisfy { $0.0 == $0.1 }, "\(label)", sourceLocation: sourceLocation)
        #expect(slots.compactMap { $0[ChartEntry.itemKey]?.stringValue } == truth, "\(label)", sourceLocation: sourceLocation)
        let items = crawled.records.filter { $0.entity != .chartEntry }
        #expect(Set(items.map(\.key)) == (emitsItems ? Set(truth) : []), "\(label)", sourceLocation: sourceLocation)
    }

    /// `format: legacy-xml` reads the Atom form of the same legacy feeds:
    /// the same scopes, the same chart records as the JSON form.
    @Test func legacyXMLFormatCrawlsTheSameChartsAsJSON() async throws {
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let json = ITunesChartsSettings(charts: ["toppodcasts"], countries: ["us"], limit: 25, genres: [1310])
            var xml = json
            xml.format = .legacyXML
            let xmlScopes = sim.scopes(source(xml))
            #expect(xmlScopes.map(\.id) == sim.scopes(source(json)).map(\.id))
            #expect(xmlScopes.allSatisfy { $0.pageURL(0)?.path.hasSuffix("/xml") == true })
            let fromXML = await sim.crawl(xmlScopes)
            let fromJSON = await sim.crawl(sim.scopes(source(json)))
            #expect(fromXML.allSatisfy { $0.outcome.isComplete })
            for (a, b) in zip(fromXML, fromJSON) {
                expectTruth(a, truthChart: "toppodcasts", genre: a.scope.id.hasSuffix(":all") ? nil : "1310", country: "us",
                            limit: 25, emitsItems: true)
                #expect(a.records(.chartEntry).map(\.key) == b.records(.chartEntry).map(\.key))
            }
        }
    }

    @Test func legacyChartsOverTheCrawledGenreTree() async throws {
        try await SimulatorHarness.with(world: world, night: night) { sim in
            // The genre tree comes from the simulator too, as a job's genres source would.
            let genres = await sim.crawl(sim.scopes(SourceSpec(name: "genres", settings: (ITunesGenresSettings(roots: [26])))))
            let genreRecords = genres.flatMap(\.records).sorted { $0.key < $1.key }
            #expect(genreRecords.count > 10)
            let picked = genreRecords.filter { fields($0)["parentId"] == .string("26") }.prefix(4).compactMap { Int($0.key) }

            let settings = ITunesChartsSettings(charts: ["toppodcasts", "topsongs"], countries: ["us", "gb"], limit: 25,
                                                genresFrom: "genres", genres: picked)
            let scopes = sim.scopes(source(settings), inputs: genreRecords)
            // topsongs: podcast genres do not list it, so only its all-genres chart.
            #expect(scopes.filter { $0.id.hasPrefix("chart:topsongs:") }.map(\.id) == ["chart:topsongs:us:all", "chart:topsongs:gb:all"])
            #expect(scopes.count == 2 * (1 + picked.count) + 2)
            let crawled = await sim.crawl(scopes)
            for scope in crawled {
                let parts = scope.scope.id.split(separator: ":").map(String.init)
                let genre = parts[3] == "all" ? nil : parts[3]
                expectTruth(scope, truthChart: parts[1], genre: genre, country: parts[2], limit: 25,
                            emitsItems: parts[2] == "us")
                let slots = scope.records(.chartEntry).map(fields)
                if let genre {
                    let name = genreRecords.first { $0.key == genre }.flatMap { fields($0)["name"] }
                    #expect(slots.allSatisfy { $0[ChartEntry.genreName] == name && $0[ChartEntry.genreID] == .string(genre) })
                }
                let entity: EntityKind = parts[1] == "toppodcasts" ? .podcast : .song
                #expect(scope.records.filter { $0.entity != .chartEntry }.allSatisfy { $0.entity == entity })
                #expect(slots.allSatisfy { $0[ChartEntry.itemEntity] == .string(entity.rawValue) })
            }
            // The item records agree with what Search/Lookup serve for the same ids.
            let podcast = try #require(crawled.first { $0.scope.id == "chart:toppodcasts:us:all" }?.records(.podcast).first)
            let served = try JSONParser.parse(try #require(world.rowJSON(entity: "podcast", key: podcast.key, night: night)))
            #expect(fields(podcast)["trackName"] == served["trackName"])
            #expect(fields(podcast)["artistName"] == served["artistName"])
            #expect(fields(podcast)["primaryGenreName"] == served["primaryGenreName"])
        }
    }

    @Test func v2ChartsRankLikeTheirLegacyCharts() async throws {
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let settings = ITunesChartsSettings(format: .v2, charts: ["music/most-played/albums", "podcasts/top/podcasts",
                                                                      "apps/top-free/apps"], limit: 30)
            let crawled = await sim.crawl(sim.scopes(source(settings)))
            #expect(crawled.count == 3)
            let expected: [(String, EntityKind)] = [("topalbums", .album), ("toppodcasts", .podcast),
                                                    ("topfreeapplications", .app)]
            for (scope, (legacy, entity)) in zip(crawled, expected) {
                expectTruth(scope, truthChart: legacy, genre: nil, country: "us", limit: 30, emitsItems: true)
                #expect(scope.records.filter { $0.entity != .chartEntry }.allSatisfy { $0.entity == entity })
            }
        }
    }

    /// The Atom rendering of a chart decodes to the same slots and items as its JSON.
    @Test func atomAndJSONOfOneChartGiveTheSameRecords() async throws {
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let context = ChartContext(chart: "topalbums", country: "us", defaultEntity: .album)
            let json = try await sim.fetcher.get(URL(string: sim.server.baseURL.absoluteString + "/us/rss/topalbums/limit=20/json")!)
            let xml = try await sim.fetcher.get(URL(string: sim.server.baseURL.absoluteString + "/us/rss/topalbums/limit=20/xml")!)
            let fromJSON = try ITunesCharts.decodeLegacyJSON(json, context: context)
            let fromXML = try ITunesCharts.decodeLegacyXML(xml, context: context)
            #expect(fromJSON.items.count == 40)
            let slotsJSON = fromJSON.items.filter { $0.entity == .chartEntry }
            #expect(slotsJSON == fromXML.items.filter { $0.entity == .chartEntry })
            let itemsJSON = fromJSON.items.filter { $0.entity == .album }
            let itemsXML = fromXML.items.filter { $0.entity == .album }
            #expect(itemsJSON.map(\.key) == itemsXML.map(\.key))
            for (a, b) in zip(itemsJSON, itemsXML) {
                var x = fields(a), y = fields(b)
                x["entry"] = nil
                y["entry"] = nil
                #expect(x == y, "\(a.key)")
            }
        }
    }
}

/// A chart's price that is no number JSON can hold (`inf`, `nan`, `1e999`,
/// Swift's own `infinity` spelling) is no price: it is left out, so every
/// payload the store keeps is JSON that SQLite's JSON functions and the next
/// night's parse read back exactly (it used to be written as `inf`, text no
/// JSON reader takes).
@Suite struct ChartPriceTests {
    @Test(arguments: ["inf", "-inf", "nan", "NaN", "1e999", "infinity", "0x1p3"])
    func aPriceNoJSONNumberHoldsIsNoPrice(_ amount: String) throws {
        let entry = #"{"im:name":{"label":"Show"},"id":{"label":"https://podcasts.apple.com/us/podcast/id77","attributes":{"im:id":"77"}},"im:price":{"label":"Get","attributes":{"amount":"\#(amount)","currency":"USD"}}}"#
        let body = #"{"feed":{"entry":[\#(entry)]}}"#
        let context = ITunesCharts.ChartContext(chart: "toppodcasts", country: "us", defaultEntity: .podcast)
        let decoded = try ITunesCharts.decodeLegacyJSON(page(body, url: "https://itunes.apple.com/us/rss/toppodcasts/json"),
                                                        context: context)
        #expect(decoded.items.count == 2)
        for record in decoded.items {
            let reread = try JSONParser.parse(record.payload)
            #expect(CanonicalJSON.encode(reread) == Array(record.payload.utf8), "\(record.entity): \(record.payload)")
            if record.entity == .podcast {
                #expect(reread["collectionPrice"] == nil, "\(record.payload)")
                #expect(reread["currency"] == .string("USD"))
            }
        }
    }

    @Test func anOrdinaryPriceIsKept() throws {
        let entry = #"{"im:name":{"label":"Show"},"id":{"label":"x","attributes":{"im:id":"78"}},"im:price":{"attributes":{"amount":"1.99000","currency":"USD"}}}"#
        let context = ITunesCharts.ChartContext(chart: "toppodcasts", country: "us", defaultEntity: .podcast)
        let decoded = try ITunesCharts.decodeLegacyJSON(page(#"{"feed":{"entry":[\#(entry)]}}"#, url: "https://itunes.apple.com/us/rss/toppodcasts/json"),
                                                        context: context)
        let item = try #require(decoded.items.first { $0.entity == .podcast })
        #expect(try item.fields()["collectionPrice"] == .double(1.99) || item.fields()["trackPrice"] == .double(1.99),
                "\(item.payload)")
    }
}
