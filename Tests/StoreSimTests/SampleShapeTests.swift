import Catalog
import Foundation
@testable import StoreSim
import Testing
import TestSupport

/// Every endpoint and kind against the recorded real responses in
/// ../shared/api-samples: key sets (simulated ⊆ the sample's union, covering
/// the keys every sample row has) and JSON types (one the sample uses).
@Suite(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is not present"))
struct SampleShapeTests {
    let world = Worlds.media()
    let night = 3

    func search(_ query: String) throws -> [[String: JSONValue]] {
        try resultRows(request(world, night: night, "/search?\(query)&limit=200"))
    }

    func expectNoProblems(_ problems: [String], sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(problems.isEmpty, "\(problems.prefix(8).joined(separator: "\n"))", sourceLocation: sourceLocation)
    }

    @Test func songsMatchTheSongSearchSample() throws {
        let rows = try search("term=love+night+star&media=music&entity=song")
        #expect(rows.count > 50)
        // Like the sample, some rows credit a compilation artist and only explicit tracks carry an advisory.
        expectNoProblems(shapeProblems(simulated: rows, sample: try sampleResults("itunes-search-music-songs-50-karla215.json"),
                                       optional: ["collectionArtistName", "contentAdvisoryRating"], "song"))
        // Songs from Lookup (album + songs) have the lookup sample's shape too.
        let lookupSongs = try sampleResults("itunes-lookup-album-with-songs-1440742903.json", wrapperType: "track")
        expectNoProblems(shapeProblems(simulated: rows, sample: lookupSongs,
                                       optional: ["collectionArtistName", "contentAdvisoryRating"], "lookup song")
            .filter { !$0.contains("collectionArtistName") })
        #expect(rows.contains { $0["trackPrice"]?.doubleValue == -1 }, "album-only tracks are priced -1")
        #expect(rows.contains { $0["contentAdvisoryRating"] != nil } && rows.contains { $0["contentAdvisoryRating"] == nil })
    }

    @Test func albumsMatchTheLookupCollectionSample() throws {
        let rows = try search("term=love+night+star&media=music&entity=album")
        let sample = try sampleResults("itunes-lookup-album-with-songs-1440742903.json", wrapperType: "collection")
        // The one recorded album is explicit; clean albums carry no advisory, as clean songs do.
        expectNoProblems(shapeProblems(simulated: rows, sample: sample, optional: ["contentAdvisoryRating"], "album"))
    }

    @Test func moviesAndAudiobooksMatchTheMixedSample() throws {
        let sample = "itunes-search-movie-starwars-mixed-audiobook.json"
        let movies = try search("term=star+night+love&media=movie")
        // shortDescription is absent on some real rows; old simulated rows hold null there.
        expectNoProblems(shapeProblems(simulated: movies, sample: try sampleResults(sample, kind: "feature-movie"),
                                       optional: ["shortDescription"], nullable: ["shortDescription"], "movie"))
        #expect(movies.contains { $0["shortDescription"] == .null }, "old rows hold nulls")
        let audiobooks = try search("term=love+night+star&media=audiobook")
        expectNoProblems(shapeProblems(simulated: audiobooks, sample: try sampleResults(sample, wrapperType: "audiobook"),
                                       "audiobook"))
        #expect(audiobooks.allSatisfy { $0["kind"] == nil }, "kind is absent on audiobooks")
    }

    @Test func appsMatchTheSoftwareSample() throws {
        let rows = try search("term=news+music+daily+star&entity=software")
        expectNoProblems(shapeProblems(simulated: rows, sample: try sampleResults("itunes-search-software-yelp-2020.json"),
                                       "software"))
        #expect(rows.allSatisfy { $0["fileSizeBytes"]?.stringValue.flatMap { Int($0) } != nil }, "fileSizeBytes is a numeric string")
        #expect(rows.allSatisfy { $0["genreIds"]?.arrayValue?.allSatisfy { $0.stringValue != nil } == true })
        // The raw layout breaks lines before the long members, as the sample does.
        let raw = request(world, night: night, "/search?term=news&entity=software&limit=1").text
        #expect(raw.contains(",\n\"screenshotUrls\":[") && raw.contains(",\n\"description\":\""))
        #expect(raw.contains("\"price\":0.00") || raw.range(of: #""price":[0-9]+\.[0-9]{2},"#, options: .regularExpression) != nil)
    }

    @Test func podcastLookupMatchesTheEpisodeSample() throws {
        let sampleName = "itunes-lookup-podcast-episodes-1535809341-limit20.json"
        let ids = world.orderedKeys(entity: "podcast", night: night).prefix(30).joined(separator: ",")
        let rows = try resultRows(request(world, night: night, "/lookup?id=\(ids)&entity=podcastEpisode&limit=20"))
        let episodes = rows.filter { $0["wrapperType"]?.stringValue == "podcastEpisode" }
        let podcasts = rows.filter { $0["kind"]?.stringValue == "podcast" }
        // A podcast whose artist has no page has no artistViewUrl, as on real podcast rows.
        expectNoProblems(shapeProblems(simulated: episodes, sample: try sampleResults(sampleName, wrapperType: "podcastEpisode"),
                                       optional: ["artistViewUrl"], "episode"))
        let parents = try sampleResults(sampleName, kind: "podcast") + sampleResults("itunes-search-podcast-apple.json")
        expectNoProblems(shapeProblems(simulated: podcasts, sample: parents,
                                       optional: ["feedUrl", "artistId", "artistViewUrl", "contentAdvisoryRating",
                                                  "trackTimeMillis"], "lookup podcast"))
        #expect(episodes.allSatisfy { $0["genres"]?.arrayValue?.first?["id"]?.stringValue != nil })
    }

    @Test func ebooksHaveTheRealEbookShape() throws {
        // No e-book row was recorded; the shape is the real service's as documented by its users.
        let rows = try search("term=love+night+star&media=ebook")
        #expect(!rows.isEmpty)
        for row in rows {
            #expect(row["kind"] == .string("ebook") && row["wrapperType"] == nil)
            #expect(row["trackId"]?.intValue != nil && row["price"]?.doubleValue != nil)
            #expect(row["genreIds"]?.arrayValue?.allSatisfy { $0.stringValue != nil } == true)
            #expect(row["artistIds"]?.arrayValue?.allSatisfy { $0.intValue != nil } == true)
        }
    }

    @Test func legacyChartJSONMatchesTheSample() throws {
        let sample = try parse(TestPaths.sample("itunes-rss-legacy-toppodcasts-100-genre1310-2023-04.json"))
        let served = try parse(request(world, night: night, "/us/rss/toppodcasts/limit=100/json").body)
        expectNoProblems(treeProblems(served, [sample]))
        // Feed keys are the sample's; entry keys are the sample's union.
        #expect(Set(served["feed"]?.objectValue?.keys ?? [:].keys) == Set(sample["feed"]?.objectValue?.keys ?? [:].keys))
        let sampleEntries = (sample["feed"]?["entry"]?.arrayValue ?? []).compactMap(\.objectValue)
        let entries = (served["feed"]?["entry"]?.arrayValue ?? []).compactMap(\.objectValue)
        #expect(entries.count > 10)
        expectNoProblems(shapeProblems(simulated: entries, sample: sampleEntries, "chart entry"))
        // Other charts: the same wrapping everywhere. Music entries add what the XML sample
        // shows for albums: a nested content type (Music › Album) and an item count.
        for chart in ["topsongs", "topalbums", "topfreeapplications", "toppaidapplications", "topmovies"] {
            let other = try parse(request(world, night: night, "/us/rss/\(chart)/limit=5/json").body)
            expectNoProblems(treeProblems(other, [sample])
                .filter { !$0.contains("im:itemCount") && !$0.contains("im:contentType.im:contentType") }
                .map { "\(chart): \($0)" })
        }
    }

    @Test func legacyChartXMLMatchesTheSample() throws {
        let sample = try #require(xmlElementNames(try TestPaths.sample("itunes-rss-legacy-topalbums-10-xml-2013.xml")))
        for chart in ["topalbums", "topsongs", "toppodcasts"] {
            let response = request(world, night: night, "/us/rss/\(chart)/limit=10/xml")
            let names = try #require(xmlElementNames(response.body), "\(chart): not well-formed XML")
            // Podcast entries add a summary, as the JSON podcast sample does.
            #expect(Set(names).subtracting(["summary"]).isSubset(of: Set(sample)),
                    "\(chart): \(Set(names).subtracting(sample))")
            #expect(names.filter { $0 == "entry" }.count == 10)
            #expect(response.text.contains("xmlns:im=\"http://itunes.apple.com/rss\""))
        }
    }

    @Test func v2ChartsMatchTheSample() throws {
        let sample = try parse(TestPaths.sample("rssv2-music-most-played-100-albums-us-2025-01.json"))
        let paths = ["music/most-played/100/albums", "music/most-played/50/songs", "podcasts/top/25/podcasts",
                     "apps/top-free/10/apps", "apps/top-paid/10/apps", "books/top-paid/10/books"]
        for path in paths {
            let served = try parse(request(world, night: night, "/api/v2/us/\(path).json").body)
            expectNoProblems(treeProblems(served, [sample]).map { "\(path): \($0)" })
            let results = (served["feed"]?["results"]?.arrayValue ?? []).compactMap(\.objectValue)
            #expect(!results.isEmpty, "\(path)")
            let sampleResults = (sample["feed"]?["results"]?.arrayValue ?? []).compactMap(\.objectValue)
            expectNoProblems(shapeProblems(simulated: results, sample: sampleResults,
                                           optional: ["artistId", "artistUrl"], "v2 \(path)"))
            #expect(results.allSatisfy { $0["id"]?.stringValue != nil && $0["kind"]?.stringValue?.hasSuffix("s") == true })
            let updated = try #require(served["feed"]?["updated"]?.stringValue)
            #expect(updated.hasSuffix(" +0000") && updated.count == "Sat, 11 Jan 2025 04:14:12 +0000".count)
        }
    }

    @Test func genreTreeMatchesTheSample() throws {
        let sample = try parse(TestPaths.sample("itunes-genres-id26-podcasts-tree-2018.json"))
        let served = try parse(request(world, night: 1, "\(Endpoints.genresPath)?id=26").body)
        expectNoProblems(treeProblems(served, [sample]).filter { !$0.contains("subgenres.") })
        // Night 1 is the 2018 taxonomy: the same ids and names as the recorded tree.
        func flatten(_ node: JSONValue) -> [String: String] {
            var out = [node["id"]?.stringValue ?? "?": node["name"]?.stringValue ?? "?"]
            for child in node["subgenres"]?.objectValue?.values ?? [:].values { out.merge(flatten(child)) { a, _ in a } }
            return out
        }
        #expect(flatten(try #require(served["26"])) == flatten(try #require(sample["26"])))
        // Node key sets: leaves lack subgenres, others have them; rssUrls and chartUrls have the sample's keys.
        let top = try #require(served["26"]?.objectValue)
        #expect(Set(top.keys) == ["name", "id", "url", "rssUrls", "chartUrls", "subgenres"])
        #expect(Set(top["rssUrls"]?.objectValue?.keys ?? [:].keys) == Set(sample["26"]?["rssUrls"]?.objectValue?.keys ?? [:].keys))
        #expect(Set(top["chartUrls"]?.objectValue?.keys ?? [:].keys) == Set(sample["26"]?["chartUrls"]?.objectValue?.keys ?? [:].keys))
        let comedy = try #require(top["subgenres"]?["1303"]?.objectValue)
        #expect(Set(comedy.keys) == ["name", "id", "url", "rssUrls", "chartUrls"])
        // Every feed URL inside points at the simulator's fixed origin and resolves there.
        let url = try #require(comedy["rssUrls"]?["topPodcasts"]?.stringValue)
        #expect(url.hasPrefix(GenreTrees.origin + "/"))
        let path = String(url.dropFirst(GenreTrees.origin.count))
        #expect(request(world, night: 1, path).status == 200)
        // The other trees have the same node shape; their feed names are their media's
        // (only the podcast tree was recorded), every one a URL on the fixed origin.
        for id in ["34", "33", "36"] {
            let tree = try parse(request(world, night: 1, "\(Endpoints.genresPath)?id=\(id)").body)
            let node = try #require(tree[id]?.objectValue)
            #expect(Set(node.keys) == ["name", "id", "url", "rssUrls", "chartUrls", "subgenres"], "tree \(id)")
            #expect(node["subgenres"]?.objectValue?.isEmpty == false, "tree \(id)")
            for links in ["rssUrls", "chartUrls"] {
                let urls = node[links]?.objectValue?.values.compactMap(\.stringValue) ?? []
                #expect(!urls.isEmpty && urls.allSatisfy { $0.hasPrefix(GenreTrees.origin + "/") }, "tree \(id) \(links)")
            }
        }
        #expect(try parseObject(request(world, night: 1, "\(Endpoints.genresPath)?id=999999").body).isEmpty)
    }

    @Test func podcastFeedIsShapedLikeTheRealFeed() throws {
        let sample = try #require(xmlElementNames(try TestPaths.sample("podcast-rss-radiofeed-rss_mock.xml")))
        let key = try #require(world.orderedKeys(entity: "podcast", night: night).first {
            world.podcasts.episodeNumbers(world.podcasts.index(forKey: $0) ?? -1, night: night) != nil
        })
        let response = request(world, night: night, "/feeds/\(key).xml")
        #expect(response.status == 200 && response.contentType == SimulatedFeed.contentType)
        let names = try #require(xmlElementNames(response.body), "the feed is not well-formed XML")
        // The recorded feed predates Podcasting 2.0; the simulator's `podcast:` tags are the namespace's own.
        let shaped = Set(names).filter { !$0.hasPrefix("podcast:") }
        #expect(shaped.isSubset(of: Set(sample)), "\(shaped.subtracting(sample))")
        for required in ["channel", "item", "enclosure", "guid", "pubDate", "itunes:duration", "itunes:image",
                         "itunes:category", "itunes:author"] {
            #expect(names.contains(required), "\(required)")
        }
    }

    /// The raw layout of every iTunes row kind: one row per line (software rows
    /// break before long members), three leading newlines.
    @Test func rawLayoutHoldsForEveryKind() throws {
        for query in ["term=love&media=music", "term=star&media=movie", "term=love&media=audiobook", "term=love&media=ebook",
                      "term=love&media=music&entity=album"] {
            let text = request(world, night: night, "/search?\(query)&limit=3").text
            #expect(text.hasPrefix("\n\n\n{\n \"resultCount\":3,\n \"results\": [\n{"), "\(query)")
            #expect(text.split(separator: "\n").count == 4 + 3, "\(query)")
        }
    }
}
