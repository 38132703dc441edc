import Catalog
import Foundation
@testable import StoreSim
import Testing

/// Search over every media, and Lookup with its parent-then-children rows.
@Suite struct MediaSearchTests {
    let world = Worlds.media()

    func rows(_ query: String, night: Int = 2) throws -> [[String: JSONValue]] {
        try resultRows(request(world, night: night, "/search?\(query)"))
    }

    @Test(arguments: [
        ("media=music", "track", "song"), ("media=music&entity=song", "track", "song"),
        ("media=music&entity=album", "collection", nil), ("media=movie", "track", "feature-movie"),
        ("media=software", "software", "software"), ("entity=software", "software", "software"),
        ("media=audiobook", "audiobook", nil), ("media=ebook", nil, "ebook"), ("media=podcast", "track", "podcast"),
    ] as [(String, String?, String?)])
    func eachMediaServesItsKind(query: String, wrapperType: String?, kind: String?) throws {
        let found = try rows("term=love+news+star+night&\(query)&limit=200")
        #expect(!found.isEmpty, "\(query)")
        for row in found {
            #expect(row["wrapperType"]?.stringValue == wrapperType, "\(query)")
            #expect(row["kind"]?.stringValue == kind, "\(query)")
        }
    }

    @Test func allMixesTheKinds() throws {
        let found = try rows("term=love+news+star&limit=60")
        let kinds = Set(found.map { ($0["kind"] ?? $0["wrapperType"])?.stringValue ?? "?" })
        #expect(kinds.isSuperset(of: ["podcast", "song", "feature-movie", "software", "audiobook", "ebook"]), "\(kinds)")
        // Interleaved: the first rows already hold several kinds.
        #expect(Set(found.prefix(6).map { ($0["kind"] ?? $0["wrapperType"])?.stringValue ?? "?" }).count >= 4)
    }

    @Test func invalidParametersAre400LikeTheRealService() throws {
        for (query, key) in [("term=a&media=vinyl", "mediaType"), ("term=a&media=movie&entity=song", "entity"),
                             ("term=a&entity=nonsense", "entity"), ("term=a&country=zz", "country"),
                             ("term=a&explicit=maybe", "explicit")] {
            let response = request(world, night: 1, "/search?\(query)")
            #expect(response.status == 400, "\(query)")
            #expect(try parseObject(response.body)["errorMessage"] == .string("Invalid value(s) for key(s): [\(key)]"))
        }
    }

    @Test func explicitNoLeavesExplicitRowsOut() throws {
        let all = try rows("term=love+night+star&media=music&limit=200")
        let clean = try rows("term=love+night+star&media=music&limit=200&explicit=No")
        #expect(all.contains { $0["trackExplicitness"] == .string("explicit") })
        #expect(!clean.isEmpty && clean.allSatisfy { $0["trackExplicitness"] != .string("explicit") })
        #expect(clean.count < all.count)
    }

    @Test func countriesSellASubsetWithTheirCurrencyAndPaths() throws {
        let us = try rows("term=star&media=music&limit=200")
        let gb = try rows("term=star&media=music&limit=200&country=GB")
        #expect(us.count < 200, "one page holds every US match")
        #expect(!gb.isEmpty && gb.count < us.count)
        let usIDs = Set(us.compactMap { $0["trackId"]?.intValue })
        #expect(gb.allSatisfy { usIDs.contains($0["trackId"]?.intValue ?? -1) })
        #expect(gb.allSatisfy { $0["country"] == .string("GBR") && $0["currency"] == .string("GBP") })
        #expect(gb.allSatisfy { $0["trackViewUrl"]?.stringValue?.contains("apple.com/gb/") == true })
    }

    @Test func pagingCoversEveryMatchOnce() throws {
        let expected = world.searchResultKeys(term: "love night", media: "music", entity: "song", night: 2)
        #expect(expected.count > 60)
        var seen: [String] = []
        var offset = 0
        while true {
            let page = try rows("term=love+night&media=music&entity=song&limit=25&offset=\(offset)")
            seen += page.compactMap { $0["trackId"]?.intValue.map(String.init) }
            if page.count < 25 { break }
            offset += 25
        }
        #expect(seen == expected)
        #expect(try rows("term=love&media=music&limit=5000").count == min(200, world.searchResultKeys(
            term: "love", media: "music", night: 2).count))
    }

    @Test func searchSendsNoValidators() {
        let response = request(world, night: 1, "/search?term=love&media=music")
        #expect(response.etag == nil && response.lastModified == nil)
        let conditional = request(world, night: 1, "/search?term=love&media=music",
                                  conditions: Conditions(ifNoneMatch: "*", ifModifiedSince: "Fri, 01 Jan 2100 00:00:00 GMT"))
        #expect(conditional.status == 200 && conditional.body == response.body)
    }
}

@Suite struct LookupTests {
    let world = Worlds.media()
    let night = 3

    func lookup(_ query: String) throws -> [[String: JSONValue]] {
        try resultRows(request(world, night: night, "/lookup?\(query)"))
    }

    /// A podcast alive tonight with more than 200 episodes (and a feed).
    func bigPodcast() throws -> (key: String, index: Int) {
        let key = try #require(world.orderedKeys(entity: "podcast", night: night).first { key in
            guard let i = world.podcasts.index(forKey: key), let numbers = world.podcasts.episodeNumbers(i, night: night)
            else { return false }
            return numbers.upperBound > 210
        })
        return (key, try #require(world.podcasts.index(forKey: key)))
    }

    @Test func limitCountsChildrenOnly() throws {
        let (key, _) = try bigPodcast()
        let full = try lookup("id=\(key)&entity=podcastEpisode&limit=200")
        #expect(full.count == 201, "limit=200 gives the podcast and 200 episodes")
        #expect(full[0]["kind"] == .string("podcast") && full[0]["trackId"]?.intValue.map(String.init) == key)
        #expect(full.dropFirst().allSatisfy { $0["wrapperType"] == .string("podcastEpisode") })
        #expect(try lookup("id=\(key)&entity=podcastEpisode&limit=20").count == 21)
        #expect(try lookup("id=\(key)&entity=podcastEpisode").count == 51, "default limit 50")
        #expect(try lookup("id=\(key)&entity=podcastEpisode&limit=5000").count == 201, "limit is clamped to 200")
        #expect(try lookup("id=\(key)").count == 1, "no entity: no children")
        // Newest first.
        let dates = full.dropFirst().compactMap { $0["releaseDate"]?.stringValue }
        #expect(dates == dates.sorted(by: >))
    }

    @Test func episodesAgreeWithTheSearchRowAndTheFeed() throws {
        let (key, i) = try bigPodcast()
        let rows = try lookup("id=\(key)&entity=podcastEpisode&limit=200")
        let podcast = rows[0]
        let newest = rows[1]
        #expect(newest["releaseDate"] == podcast["releaseDate"], "the Search row's releaseDate is the newest episode's")
        #expect(newest["collectionId"] == podcast["trackId"] && newest["feedUrl"] == podcast["feedUrl"])
        // The trackCount is the newest episode's number: the window ends there.
        #expect(world.podcasts.episodeNumbers(i, night: night)?.upperBound == podcast["trackCount"]?.intValue.map(Int.init))

        let feed = request(world, night: night, "/feeds/\(key).xml")
        let elements = try #require(xmlElements(feed.body))
        let guids = elements.filter { $0.name == "guid" }.map(\.text)
        #expect(guids == rows.dropFirst().compactMap { $0["episodeGuid"]?.stringValue })
        let enclosures = elements.filter { $0.name == "enclosure" }.compactMap { $0.attributes["url"] }
        #expect(enclosures == rows.dropFirst().compactMap { $0["episodeUrl"]?.stringValue })
        let durations = elements.filter { $0.name == "itunes:duration" }.map(\.text)
        #expect(durations == rows.dropFirst().compactMap { $0["trackTimeMillis"]?.intValue }.map { SimulatedFeed.duration(Int($0)) })
        let pubDates = elements.filter { $0.name == "pubDate" }.map(\.text)
        let releaseDates = rows.dropFirst().compactMap { $0["releaseDate"]?.stringValue }
        #expect(pubDates == releaseDates.compactMap { World.parseISODate($0)?.rfc2822 })
        let titles = elements.filter { $0.name == "itunes:title" }.map(\.text)
        #expect(titles == rows.dropFirst().compactMap { $0["trackName"]?.stringValue })
    }

    /// A new episode each night a podcast's episode group changes: the count and
    /// the date move together, the new one tops Lookup, and the window slides.
    @Test func newEpisodesArriveConsistently() throws {
        let podcasts = world.podcasts
        let bit = UInt8(1) << UInt8(PodcastCatalog.Group.episode.rawValue)
        var checked = 0
        for i in world.aliveIndices(entity: "podcast", night: night) where podcasts.fixed(i).hasFeed {
            guard podcasts.timeline.changes(i, on: night), podcasts.timeline.groups(i, changingOn: night) & bit != 0 else {
                continue
            }
            let key = podcasts.key(i)
            let before = try resultRows(request(world, night: night - 1, "/lookup?id=\(key)&entity=podcastEpisode&limit=200"))
            let after = try lookup("id=\(key)&entity=podcastEpisode&limit=200")
            #expect(after[0]["trackCount"]?.intValue == (before[0]["trackCount"]?.intValue ?? 0) + 1)
            #expect(after[1]["releaseDate"] == after[0]["releaseDate"])
            #expect((after[0]["releaseDate"]?.stringValue ?? "") > (before[0]["releaseDate"]?.stringValue ?? "~"))
            #expect(after[2]["trackId"] == before[1]["trackId"], "yesterday's newest is second")
            checked += 1
        }
        #expect(checked > 3)
    }

    @Test func albumsAndArtistsListTheirChildren() throws {
        let albumKey = try #require(world.orderedKeys(entity: "album", night: night).first)
        let album = try lookup("id=\(albumKey)&entity=song")
        let trackCount = try #require(album[0]["trackCount"]?.intValue)
        #expect(album[0]["wrapperType"] == .string("collection"))
        #expect(album.count == Int(trackCount) + 1)
        #expect(album.dropFirst().map { $0["trackNumber"]?.intValue ?? 0 } == Array(1...trackCount))
        #expect(try lookup("id=\(albumKey)&entity=song&limit=2").count == 3)

        let artistID = try #require(album[0]["artistId"]?.intValue)
        let artist = try lookup("id=\(artistID)&entity=album")
        #expect(artist[0]["wrapperType"] == .string("artist") && artist[0]["artistId"]?.intValue == artistID)
        #expect(artist.count >= 2 && artist.dropFirst().allSatisfy { $0["artistId"]?.intValue == artistID })
    }

    @Test func manyIdsUnknownOnesAndTheCap() throws {
        let keys = Array(world.orderedKeys(entity: "movie", night: night).prefix(3))
            + Array(world.orderedKeys(entity: "app", night: night).prefix(2))
        let removed = try #require(world.diff(entity: "movie", night: night).removed.first)
        let rows = try lookup("id=\((keys + [removed, "1"]).joined(separator: ","))")
        #expect(rows.compactMap { $0["trackId"]?.intValue.map(String.init) } == keys, "unknown and removed ids are left out")
        // More than 200 ids: only the first 200 are served.
        let many = Array(world.orderedKeys(entity: "song", night: night).prefix(250))
        #expect(many.count == 250)
        #expect(try lookup("id=\(many.joined(separator: ","))").count == Endpoints.maxLookupIDs)
        #expect(request(world, night: night, "/lookup?id=abc").status == 400)
        #expect(request(world, night: night, "/lookup").status == 400)
    }

    @Test func lookupSendsNoValidatorsButCacheControl() {
        let key = world.orderedKeys(entity: "podcast", night: night)[0]
        let response = request(world, night: night, "/lookup?id=\(key)")
        #expect(response.etag == nil && response.lastModified == nil)
        #expect(response.header("Cache-Control") == "max-age=86400")
        #expect(response.text.hasPrefix("\n\n\n{\n \"resultCount\":1,"))
    }
}
