import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing
import TestSupport

/// Maps `record` as `kind` would and checks that the canonical output is
/// within the model: every field named in ``CanonicalSchema`` for the mapped
/// entity, every value of its declared kind (text a string, integer an
/// integer, real a double). Returns the canonical fields.
@discardableResult
func mapped(_ record: Record, by kind: any SourceKind, sourceLocation: SourceLocation = #_sourceLocation) throws
    -> CanonicalRecord {
    let canonical = kind.canonical(record.entity, try record.fields())
    expectWithinSchema(canonical, label: "\(type(of: kind).name) \(record.entity.rawValue) \(record.key)",
                       sourceLocation: sourceLocation)
    return canonical
}

func expectWithinSchema(_ canonical: CanonicalRecord, label: String, sourceLocation: SourceLocation = #_sourceLocation) {
    let schema = Dictionary(uniqueKeysWithValues: CanonicalSchema.fields(of: canonical.entity).map { ($0.name, $0.kind) })
    for (name, value) in canonical.fields.sorted(by: { $0.key < $1.key }) {
        guard let kind = schema[name] else {
            Issue.record("\(label): '\(name)' is not a canonical field of \(canonical.entity.rawValue)",
                         sourceLocation: sourceLocation)
            continue
        }
        let fits = switch (kind, value) {
        case (.text, .string), (.integer, .int), (.real, .double): true
        default: false
        }
        #expect(fits, "\(label): \(name) is \(kind.rawValue) but holds \(value)", sourceLocation: sourceLocation)
    }
}

/// The canonical fields of the record of `entity` keyed `key` among `records`.
func canonicalFields(_ records: [Record], _ entity: EntityKind, _ key: String, by kind: any SourceKind,
                     sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: JSONValue] {
    let record = try #require(records.first { $0.entity == entity && $0.key == key }, "\(entity.rawValue) \(key)",
                              sourceLocation: sourceLocation)
    return try mapped(record, by: kind, sourceLocation: sourceLocation).fields
}

/// Every real sample a connector reads, decoded by that connector and mapped
/// into the canonical model: the important fields by value.
@Suite(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent: canonical sample mapping skipped"))
struct CanonicalSampleMappingTests {
    let search = ITunesSearchSettings(terms: ["x"])
    let lookup = ITunesLookupSettings(from: "upstream")
    let episodeLookup = ITunesLookupSettings(from: "podcasts", lookupEntity: "podcastEpisode")
    let charts = ITunesChartsSettings()
    let genres = ITunesGenresSettings()
    let market = MarketplaceSettings(detail: true)
    let feeds = PodcastFeedSettings(from: "podcasts")

    func response(_ name: String, url: String = "https://itunes.apple.com/search") throws -> HTTPResponse {
        HTTPResponse(url: URL(string: url)!, status: 200, body: try TestPaths.sample(name))
    }

    /// Maps every record of a decoded sample (so the schema check covers them all).
    func mapAll(_ records: [Record], by kind: any SourceKind) throws {
        #expect(!records.isEmpty)
        for record in records { try mapped(record, by: kind) }
    }

    // MARK: iTunes Search

    @Test func searchPodcasts() throws {
        let records = try ITunesSearch.decodePage(try response("itunes-search-podcast-apple.json")).items
        try mapAll(records, by: search)
        let podcast = try canonicalFields(records, .podcast, "275834665", by: search)
        #expect(podcast["name"] == .string("Apple Keynotes"))
        #expect(podcast["artist"] == .string("Apple"))
        #expect(podcast["artist_id"] == .int(706424103))
        #expect(podcast["genre"] == .string("Tech News"))
        #expect(podcast["genre_id"] == .string("1448"))
        #expect(podcast["feed_url"] == .string("http://podcasts.apple.com/apple_keynotes/apple_keynotes.xml"))
        #expect(podcast["release_date"] == .string("2015-06-08T14:01:00Z"))
        #expect(podcast["track_count"] == .int(31))
        #expect(podcast["explicit"] == .int(0))
        #expect(podcast["content_advisory"] == nil, "this row has no contentAdvisoryRating")
        #expect(podcast["country"] == .string("USA"))
        #expect(podcast["view_url"] == .string("https://itunes.apple.com/us/podcast/apple-keynotes/id275834665?mt=2"))
        #expect(podcast["artwork_url"] == .string(
            "http://is4.mzstatic.com/image/pf/us/r30/Features2/v4/17/6c/22/176c22ea-cd7e-7aaa-9d3b-d79367ac0d51/mza_1385861382197247159.600x600-75.jpg"))
        #expect(podcast["genres"] == .string(#"["Tech News","Podcasts","Technology"]"#))
        #expect(podcast["description"] == nil, "Search gives no description: absent, not empty")
        #expect(search.role(of: .podcast) == .lists)
    }

    @Test func searchApps() throws {
        let records = try ITunesSearch.decodePage(try response("itunes-search-software-yelp-2020.json")).items
        try mapAll(records, by: search)
        let app = try canonicalFields(records, .app, "284910350", by: search)
        #expect(app["name"] == .string("Yelp Food & Services Around Me"))
        #expect(app["artist"] == .string("Yelp"))
        #expect(app["artist_id"] == .int(284910353))
        #expect(app["genre"] == .string("Travel"))
        #expect(app["price"] == .double(0))
        #expect(app["track_price"] == nil)
        #expect(app["currency"] == .string("USD"))
        #expect(app["release_date"] == .string("2019-02-11T08:00:00Z"))
        #expect(app["view_url"] == .string("https://apps.apple.com/us/app/yelp-food-services-around-me/id284910350"))
        #expect(app["artwork_url"] == .string(
            "https://is5-ssl.mzstatic.com/image/thumb/Purple114/v4/be/7f/a6/be7fa6e5-ade9-12d4-c797-5f3e286bc937/source/512x512bb.jpg"))
        #expect(app["description"]?.stringValue?.hasPrefix("Yelp has over 135 million reviews") == true)
        #expect(app["content_advisory"] == .string("12+"))
        #expect(app["version"] == .string("12.56.0"))
        #expect(app["bundle_id"] == .string("com.yelp.yelpiphone"))
        #expect(app["rating"] == .double(4.0))
        #expect(app["rating_count"] == .int(701835))
    }

    @Test func searchSongs() throws {
        let records = try ITunesSearch.decodePage(try response("itunes-search-music-songs-50-karla215.json")).items
        try mapAll(records, by: search)
        let song = try canonicalFields(records, .song, "422478211", by: search)
        #expect(song["name"] == .string("Sail"))
        #expect(song["artist"] == .string("AWOLNATION"))
        #expect(song["album"] == .string("Megalithic Symphony"))
        #expect(song["album_id"] == .int(422478077))
        #expect(song["artist_id"] == .int(371362363))
        #expect(song["genre"] == .string("Alternative"))
        #expect(song["price"] == .double(1.29))
        #expect(song["currency"] == .string("USD"))
        #expect(song["release_date"] == .string("2011-01-04T08:00:00Z"))
        #expect(song["duration_ms"] == .int(259093))
        #expect(song["track_number"] == .int(10))
        #expect(song["disc_number"] == .int(1))
        #expect(song["view_url"] == .string("https://music.apple.com/us/album/sail/422478077?i=422478211"))
        #expect(song["preview_url"]?.stringValue?.hasSuffix("mzaf_3978460830346050475.plus.aac.p.m4a") == true)
        #expect(song["artwork_url"]?.stringValue?.hasSuffix("/100x100bb.jpg") == true)
        // The track is clean although its album (collectionExplicitness) is explicit.
        #expect(song["explicit"] == .int(0))
        #expect(song["country"] == .string("USA"))
    }

    @Test func searchMoviesAndAudiobooksOnOnePage() throws {
        let records = try ITunesSearch.decodePage(try response("itunes-search-movie-starwars-mixed-audiobook.json")).items
        try mapAll(records, by: search)
        let movie = try canonicalFields(records, .movie, "1063466898", by: search)
        #expect(movie["name"] == .string("Star Wars: The Force Awakens"))
        #expect(movie["artist"] == .string("J.J. Abrams"))
        #expect(movie["genre"] == .string("Action & Adventure"))
        // The movie's own price, not its 9-movie collection's (collectionPrice 69.99).
        #expect(movie["price"] == .double(7.99))
        #expect(movie["track_price"] == .double(7.99))
        #expect(movie["duration_ms"] == .int(8302127))
        #expect(movie["content_advisory"] == .string("PG-13"))
        #expect(movie["description"]?.stringValue?.hasPrefix("Visionary director J.J. Abrams") == true)
        #expect(movie["preview_url"]?.stringValue?.hasPrefix("https://video-ssl.itunes.apple.com/") == true)
        #expect(movie["view_url"] == .string("https://itunes.apple.com/us/movie/star-wars-the-force-awakens/id1063466898"))
        #expect(movie["release_date"] == .string("2015-12-18T08:00:00Z"))

        let book = try canonicalFields(records, .audiobook, "1547319878", by: search)
        #expect(book["name"] == .string("Star Wars: Light of the Jedi (The High Republic) (Unabridged)"))
        #expect(book["artist"] == .string("Charles Soule"))
        #expect(book["artist_id"] == .int(578357641))
        #expect(book["price"] == .double(14.99))
        #expect(book["explicit"] == .int(0))
        #expect(book["track_count"] == .int(1))
        #expect(book["genre"] == .string("Sci-Fi & Fantasy"))
        #expect(book["release_date"] == .string("2021-01-05T08:00:00Z"))
        #expect(book["description"]?.stringValue?.hasPrefix("<b>#1 <i>NEW YORK TIMES") == true)
        #expect(book["view_url"] == .string(
            "https://books.apple.com/us/audiobook/star-wars-light-of-the-jedi-the-high-republic-unabridged/id1547319878"))
    }

    // MARK: iTunes Lookup

    @Test func lookupAlbumAndItsSongs() throws {
        let records = try ITunesSearch.decodePage(try response("itunes-lookup-album-with-songs-1440742903.json")).items
        try mapAll(records, by: lookup)
        let album = try canonicalFields(records, .album, "1440742903", by: lookup)
        #expect(album["name"] == .string("My Beautiful Dark Twisted Fantasy"))
        #expect(album["artist"] == .string("Kanye West"))
        #expect(album["artist_id"] == .int(2715720))
        #expect(album["price"] == .double(9.99))
        #expect(album["currency"] == .string("USD"))
        #expect(album["track_count"] == .int(15))
        #expect(album["explicit"] == .int(1))
        #expect(album["copyright"] == .string("℗ 2010 Roc-A-Fella Records, LLC"))
        #expect(album["release_date"] == .string("2010-11-22T08:00:00Z"))
        #expect(album["genre"] == .string("Hip-Hop/Rap"))
        #expect(album["view_url"] == .string("https://music.apple.com/us/album/my-beautiful-dark-twisted-fantasy/1440742903"))
        #expect(album["artwork_url"] == .string(
            "https://is3-ssl.mzstatic.com/image/thumb/Music113/v4/1d/8a/2e/1d8a2e21-254a-09d9-7489-0c120b8df1aa/source/100x100bb.jpg"))

        let song = try canonicalFields(records, .song, "1440742904", by: lookup)
        #expect(song["name"] == .string("Dark Fantasy"))
        #expect(song["album"] == .string("My Beautiful Dark Twisted Fantasy"))
        #expect(song["album_id"] == .int(1440742903))
        #expect(song["track_number"] == .int(1))
        #expect(song["disc_number"] == .int(1))
        #expect(song["price"] == .double(1.29))
        #expect(song["explicit"] == .int(1))
        #expect(song["duration_ms"] == .int(280787))
        #expect(song["release_date"] == .string("2010-11-22T12:00:00Z"))
        #expect(records.filter { $0.entity == .song }.count == 14)

        // Looked up by the upstream's ids, Lookup describes; asked for children, it lists them.
        #expect(lookup.role(of: .album) == .describes)
        #expect(ITunesLookupSettings(from: "albums", lookupEntity: "song").role(of: .song) == .lists)
    }

    @Test func lookupPodcastAndItsEpisodes() throws {
        let sample = try response("itunes-lookup-podcast-episodes-1535809341-limit20.json",
                                  url: "https://itunes.apple.com/lookup?id=1535809341&entity=podcastEpisode&limit=20")
        let podcastRecords = try ITunesSearch.decodePage(sample).items
        let podcast = try canonicalFields(podcastRecords, .podcast, "1535809341", by: lookup)
        #expect(podcast["name"] == .string("The Joe Budden Podcast"))
        #expect(podcast["artist"] == .string("The Joe Budden Network"))
        #expect(podcast["artist_id"] == .int(1535844019))
        #expect(podcast["genre"] == .string("Music"))
        #expect(podcast["genre_id"] == .string("1310"))
        #expect(podcast["genres"] == .string(#"["Music","Podcasts"]"#))
        #expect(podcast["feed_url"] == .string("https://jbpod.libsyn.com/applepodcast"))
        #expect(podcast["track_count"] == .int(381))
        #expect(podcast["release_date"] == .string("2023-04-15T07:00:00Z"))
        // trackExplicitness explicit (what its advisory rating says), collectionExplicitness notExplicit.
        #expect(podcast["explicit"] == .int(1))
        #expect(podcast["content_advisory"] == .string("Explicit"))
        #expect(podcast["artwork_url"]?.stringValue?.hasSuffix("/600x600bb.jpg") == true)

        let episodes = try ITunesLookup.decodeChildren(sample, parentKey: "1535809341").items
        #expect(episodes.count == 20)
        try mapAll(episodes, by: episodeLookup)
        // Keyed by show and GUID, as the show's feed keys the item; the iTunes id is a field.
        let episode = try canonicalFields(episodes, .episode, "1535809341|4f33356e-512b-44e4-a65b-578dfabf8827", by: episodeLookup)
        #expect(episode["track_id"] == .int(1000609597323))
        #expect(episode["name"] == .string(#"Episode 619 | "Hate to be Frank""#))
        #expect(episode["podcast"] == .string("The Joe Budden Podcast"))
        #expect(episode["podcast_id"] == .string("1535809341"))
        #expect(episode["guid"] == .string("4f33356e-512b-44e4-a65b-578dfabf8827"))
        #expect(episode["enclosure_url"] == .string(
            "https://traffic.libsyn.com/secure/jbpod/Joe_Budden_Podcast_619.mp3?dest-id=2422538"))
        #expect(episode["enclosure_type"] == .string("audio/mpeg"), "episodeContentType audio + episodeFileExtension mp3")
        #expect(episode["enclosure_length"] == nil, "Lookup gives no file size here: absent, never 0")
        #expect(episode["release_date"] == .string("2023-04-19T07:00:00Z"))
        #expect(episode["duration_ms"] == .int(10192000))
        #expect(episode["explicit"] == .int(1))
        #expect(episode["description"]?.stringValue?.hasPrefix("The JBP starts this episode by recapping Coachella") == true)
        #expect(episode["view_url"] == .string(
            "https://podcasts.apple.com/us/podcast/episode-619-hate-to-be-frank/id1535809341?i=1000609597323"))
        #expect(episode["image_url"]?.stringValue?.hasSuffix("/600x600bb.jpg") == true)
        // Every episode of the sample has the triple a feed writer needs.
        for record in episodes {
            let fields = try mapped(record, by: episodeLookup).fields
            #expect(fields["guid"]?.stringValue?.isEmpty == false, "\(record.key)")
            #expect(fields["enclosure_url"]?.stringValue?.hasPrefix("https://") == true, "\(record.key)")
            #expect(fields["enclosure_type"] == .string("audio/mpeg"), "\(record.key)")
        }
        #expect(episodeLookup.role(of: .episode) == .lists)
        #expect(lookup.role(of: .podcast) == .describes)
    }

    // MARK: Genres

    @Test func genreTree() throws {
        let records = try ITunesGenres.decodePage(
            try response("itunes-genres-id26-podcasts-tree-2018.json",
                         url: "https://itunes.apple.com/WebObjects/MZStoreServices.woa/ws/genres?id=26"),
            root: "26").items
        try mapAll(records, by: genres)
        let root = try canonicalFields(records, .genre, "26", by: genres)
        #expect(root == ["name": .string("Podcasts"), "parent_id": .string(""),
                         "url": .string("https://itunes.apple.com/us/genre/podcasts/id26?mt=2")])
        let arts = try canonicalFields(records, .genre, "1301", by: genres)
        #expect(arts["name"] == .string("Arts"))
        #expect(arts["parent_id"] == .string("26"))
        #expect(genres.role(of: .genre) == .lists)
    }

    // MARK: Charts

    @Test func legacyJSONChart() throws {
        let context = ITunesCharts.ChartContext(chart: "toppodcasts", country: "us", genreID: "1310", genreName: "Music",
                                                defaultEntity: .podcast)
        let records = try ITunesCharts.decodeLegacyJSON(
            try response("itunes-rss-legacy-toppodcasts-100-genre1310-2023-04.json",
                         url: "https://itunes.apple.com/us/rss/toppodcasts/limit=100/genre=1310/json"),
            context: context).items
        try mapAll(records, by: charts)
        let entry = try canonicalFields(records, .chartEntry, "toppodcasts|us|1310|podcast|1535809341", by: charts)
        #expect(entry["chart"] == .string("toppodcasts"))
        #expect(entry["country"] == .string("us"))
        #expect(entry["genre_id"] == .string("1310"))
        #expect(entry["genre"] == .string("Music"))
        #expect(entry["rank"] == .int(1))
        #expect(entry["item_entity"] == .string("podcast"))
        #expect(entry["item_key"] == .string("1535809341"))
        #expect(entry["name"] == .string("The Joe Budden Podcast"))
        #expect(entry["artist"] == .string("The Joe Budden Network"))
        #expect(entry["link"] == .string("https://podcasts.apple.com/us/podcast/the-joe-budden-podcast/id1535809341"))
        #expect(entry["artwork_url"]?.stringValue?.hasSuffix("/170x170bb.png") == true)
        #expect(entry["release_date"] == .string("2023-04-15T07:00:00Z"))
        let ranks = try records.filter { $0.entity == .chartEntry }.map { try mapped($0, by: charts).fields["rank"] }
        #expect(ranks == (1...100).map { .int(Int64($0)) })

        // The charted item maps as Lookup's row of the same show does.
        let item = try canonicalFields(records, .podcast, "1535809341", by: charts)
        #expect(item["name"] == .string("The Joe Budden Podcast"))
        #expect(item["artist"] == .string("The Joe Budden Network"))
        #expect(item["artist_id"] == .int(1535844019))
        #expect(item["genre"] == .string("Music"))
        #expect(item["genre_id"] == .string("1310"))
        #expect(item["release_date"] == .string("2023-04-15T07:00:00Z"))
        #expect(item["view_url"] == entry["link"])
        #expect(item["artwork_url"] == entry["artwork_url"])
        #expect(item["description"] == .string(
            "Tune into Joe Budden and his friends. Follow along the crazy adventures of these very random friends."))
        let lookedUp = try canonicalFields(
            try ITunesSearch.decodePage(try response("itunes-lookup-podcast-episodes-1535809341-limit20.json")).items,
            .podcast, "1535809341", by: lookup)
        for name in ["name", "artist", "artist_id", "genre", "genre_id", "release_date"] {
            #expect(item[name] == lookedUp[name], "\(name): chart and Lookup agree")
        }
        #expect(charts.role(of: .chartEntry) == .ranks)
        #expect(charts.role(of: .podcast) == .ranks)
    }

    @Test func legacyAtomChart() throws {
        let context = ITunesCharts.ChartContext(chart: "topalbums", country: "us", defaultEntity: .album)
        let records = try ITunesCharts.decodeLegacyXML(
            try response("itunes-rss-legacy-topalbums-10-xml-2013.xml",
                         url: "https://itunes.apple.com/us/rss/topalbums/limit=10/explicit=true/xml"),
            context: context).items
        try mapAll(records, by: charts)
        let entry = try canonicalFields(records, .chartEntry, "topalbums|us||album|647928068", by: charts)
        #expect(entry["rank"] == .int(1))
        #expect(entry["genre_id"] == .string(""))
        #expect(entry["genre"] == nil)
        #expect(entry["name"] == .string("The Gifted"))
        #expect(entry["artist"] == .string("Wale"))
        #expect(entry["item_entity"] == .string("album"))
        let album = try canonicalFields(records, .album, "647928068", by: charts)
        #expect(album["name"] == .string("The Gifted"))
        #expect(album["artist"] == .string("Wale"))
        #expect(album["artist_id"] == .int(129335935))
        #expect(album["genre"] == .string("Hip-Hop/Rap"))
        #expect(album["price"] == .double(9.99))
        #expect(album["currency"] == .string("USD"))
        #expect(album["track_count"] == .int(16))
        #expect(album["release_date"] == .string("2013-06-24T07:00:00Z"))
        #expect(album["copyright"]?.stringValue?.hasPrefix("\u{2117} 2013 Maybach Music Group") == true)
        #expect(album["view_url"] == .string("https://itunes.apple.com/us/album/the-gifted/id647928068"))
        #expect(album["artwork_url"]?.stringValue?.contains("170x170") == true)
    }

    @Test func v2Chart() throws {
        let context = ITunesCharts.ChartContext(chart: "music/most-played/albums", country: "us", defaultEntity: .album)
        let records = try ITunesCharts.decodeV2(
            try response("rssv2-music-most-played-100-albums-us-2025-01.json",
                         url: "https://rss.applemarketingtools.com/api/v2/us/music/most-played/100/albums.json"),
            context: context).items
        try mapAll(records, by: charts)
        let entry = try canonicalFields(records, .chartEntry, "music/most-played/albums|us||album|1787022393", by: charts)
        #expect(entry["chart"] == .string("music/most-played/albums"))
        #expect(entry["rank"] == .int(1))
        #expect(entry["item_key"] == .string("1787022393"))
        #expect(entry["name"] == .string("DeBÍ TiRAR MáS FOToS"))
        #expect(entry["artist"] == .string("Bad Bunny"))
        #expect(entry["release_date"] == .string("2025-01-05"), "a bare date stays a bare date")
        #expect(entry["link"] == .string("https://music.apple.com/us/album/deb%C3%AD-tirar-m%C3%A1s-fotos/1787022393"))
        let album = try canonicalFields(records, .album, "1787022393", by: charts)
        #expect(album["name"] == .string("DeBÍ TiRAR MáS FOToS"))
        #expect(album["artist"] == .string("Bad Bunny"))
        #expect(album["artist_id"] == .int(1126808565))
        #expect(album["genre"] == .string("Latin"))
        #expect(album["release_date"] == .string("2025-01-05"))
        // The feed's "Explict" advisory reads as explicit.
        #expect(album["explicit"] == .int(1))
        #expect(album["artwork_url"]?.stringValue?.hasSuffix("/100x100bb.jpg") == true)
    }

    // MARK: Marketplace

    @Test func marketplaceListsOfBothEras() throws {
        let snake = try MarketplaceList.decodePage(
            try response("openmarket-list-snake-p1-of-93.json", url: "https://m.example/api/products?page_no=1")).items
        try mapAll(snake, by: market)
        let first = try canonicalFields(snake, .listing, "2094", by: market)
        #expect(first["name"] == .string("ㄴㄴㄴㄴㄴㄴ"))
        #expect(first["vendor_id"] == .int(6))
        #expect(first["price"] == .double(123123))
        #expect(first["bargain_price"] == .double(123122))
        #expect(first["discounted_price"] == .double(1))
        #expect(first["currency"] == .string("KRW"))
        #expect(first["stock"] == .int(1))
        #expect(first["created_at"] == .string("2022-05-14T00:00:00"))
        #expect(first["issued_at"] == .string("2022-05-14T00:00:00"))
        #expect(first["thumbnail"]?.stringValue?.hasSuffix("/thumb/ef2a5592d33111ec9676d7a49354f5e5.jpg") == true)
        #expect(first["vendor_name"] == nil, "the early list names no vendor")

        let camel = try MarketplaceList.decodePage(
            try response("openmarket-list-camel-p3-of-6.json", url: "https://m.example/api/products?page_no=3")).items
        try mapAll(camel, by: market)
        let airpods = try canonicalFields(camel, .listing, "130", by: market)
        #expect(airpods["name"] == .string("에어팟 3"))
        #expect(airpods["vendor_id"] == .int(28))
        #expect(airpods["vendor_name"] == .string("OmarketTeam"))
        #expect(airpods["description"] == .string("에어팟 3"))
        #expect(airpods["price"] == .double(20000))
        #expect(airpods["bargain_price"] == .double(10000))
        #expect(airpods["created_at"] == .string("2022-11-04T00:00:00"))
        #expect(market.role(of: .listing) == .lists)
    }

    @Test(arguments: [
        ("openmarket-detail-camel-era-1.json", "32", "red123", 15, 3500.0, "2022-10-18T00:00:00", 2),
        ("openmarket-detail-snake-era-spacedates.json", "16", "dacodaco", 2, 2000.0, "2022-01-03T00:00:00", 1),
    ])
    func marketplaceDetailIsPartOfItsListing(file: String, id: String, vendor: String, vendorID: Int64, price: Double,
                                              created: String, images: Int) throws {
        let decoded = try MarketplaceDetail.decodeDetail(
            try response(file, url: "https://m.example/api/products/\(id)"), id: id)
        let record = try #require(decoded.items.first)
        #expect(record.entity == .listingDetail)
        let canonical = try mapped(record, by: market)
        #expect(canonical.entity == .listing, "a detail maps to its listing's row")
        #expect(market.role(of: .listingDetail) == .describes)
        let fields = canonical.fields
        #expect(fields["vendor_name"] == .string(vendor))
        #expect(fields["vendor_id"] == .int(vendorID))
        #expect(fields["price"] == .double(price))
        #expect(fields["created_at"] == .string(created))
        #expect(fields["issued_at"] == .string(created))
        #expect(fields["currency"] == .string("KRW"))
        let imageText = try #require(fields["images"]?.stringValue)
        let urls = try #require(try JSONParser.parse(imageText).arrayValue).compactMap(\.stringValue)
        #expect(urls.count == images)
        #expect(urls.allSatisfy { $0.hasPrefix("https://s3.ap-northeast-2.amazonaws.com/") && $0.contains("origin") })
        #expect(fields["vendors"] == nil && fields["vendorName"] == nil, "no wire names in the canonical record")
    }

    @Test func marketplaceDetailTextByValue() throws {
        let decoded = try MarketplaceDetail.decodeDetail(
            try response("openmarket-detail-camel-era-1.json", url: "https://m.example/api/products/32"), id: "32")
        let fields = try mapped(try #require(decoded.items.first), by: market).fields
        #expect(fields["name"] == .string("우유병 텀블러"))
        #expect(fields["description"]?.stringValue?.hasPrefix("하얀 우유병 모양의 텀블러!") == true)
        #expect(fields["bargain_price"] == .double(3400))
        #expect(fields["discounted_price"] == .double(100))
        #expect(fields["stock"] == .int(2))
        #expect(fields["images"] == .string(
            #"["https://s3.ap-northeast-2.amazonaws.com/media.yagom-academy.kr/training-resources/15/20221018/951468774f1a11eda200afcab21bff61_origin","#
            + #""https://s3.ap-northeast-2.amazonaws.com/media.yagom-academy.kr/training-resources/15/20221018/956d84f94f1a11eda2009d4c2abd0743_origin"]"#))
    }

    // MARK: Podcast feed

    @Test func feedEpisodes() throws {
        let body = try TestPaths.sample("podcast-rss-radiofeed-rss_mock.xml")
        let records = try PodcastFeed.decodeFeed(
            HTTPResponse(url: URL(string: "https://mysteriousuniverse.org/feed/podcast/")!, status: 200, body: body),
            podcastKey: "42").items.filter { $0.entity == .episode }
        #expect(records.count == 20)
        try mapAll(records, by: feeds)
        let episode = try canonicalFields(records, .episode, "42|https://mysteriousuniverse.org/?p=168097", by: feeds)
        #expect(episode["name"] == .string("23.24 \u{2013} MU Podcast \u{2013} Tibetan Zombie"))
        #expect(episode["podcast"] == .string("Mysterious Universe"))
        #expect(episode["podcast_id"] == .string("42"))
        #expect(episode["guid"] == .string("https://mysteriousuniverse.org/?p=168097"))
        #expect(episode["enclosure_url"] == .string(
            "https://traffic.omny.fm/d/clips/aaea4e69-af51-495e-afc9-a9760146922b/385fb0e9-a063-4cc3-ba05-ab0a01597557/4cfb35cd-084e-45e0-bb77-abdf0105fafe/audio.mp3"))
        #expect(episode["enclosure_length"] == .int(84875981))
        #expect(episode["enclosure_type"] == .string("audio/mpeg"))
        #expect(episode["release_date"] == .string("2020-06-19T16:58:03Z"))
        #expect(episode["duration_ms"] == .int(5_300_000), "1:28:20")
        #expect(episode["link"] == .string("https://mysteriousuniverse.org/2020/06/23-24-mu-podcast-tibetan-zombie/"))
        #expect(episode["season"] == .int(23))
        #expect(episode["episode_number"] == .int(24))
        #expect(episode["image_url"] == .string("https://mysteriousuniverse.org/wp-content/uploads/2020/06/23.24_cover.jpg"))
        #expect(episode["description"]?.stringValue?.contains("Encounters with unrecognised abilities") == true)
        #expect(episode["explicit"] == nil, "the item says nothing (only the channel does)")
        // Every item's guid/enclosure triple comes through under its canonical names.
        for record in records {
            let fields = try mapped(record, by: feeds).fields
            #expect(fields["guid"] != nil && fields["enclosure_url"] != nil, "\(record.key)")
            #expect(fields["enclosure_type"] == .string("audio/mpeg"), "\(record.key)")
            #expect(fields["enclosure_length"]?.intValue.map { $0 > 0 } == true, "\(record.key)")
        }
        #expect(feeds.role(of: .episode) == .lists)
    }
}

/// The value conventions, case by case.
@Suite struct CanonicalValueTests {
    @Test(arguments: [
        ("explicit", 1), ("Explicit", 1), ("yes", 1), ("true", 1), ("Explict", 1),
        ("notExplicit", 0), ("cleaned", 0), ("clean", 0), ("Clean", 0), ("no", 0), ("false", 0),
    ])
    func explicitWords(word: String, flag: Int64) {
        #expect(CanonicalValue.explicit(.string(word)) == .int(flag))
    }

    @Test func explicitOtherForms() {
        #expect(CanonicalValue.explicit(.bool(true)) == .int(1))
        #expect(CanonicalValue.explicit(.int(0)) == .int(0))
        for unknown: JSONValue in [.string(""), .string("PG-13"), .string("12+"), .int(7), .null] {
            #expect(CanonicalValue.explicit(unknown) == nil, "\(unknown)")
        }
    }

    @Test(arguments: [
        ("audio", "mp3", "audio/mpeg"), ("audio", "m4a", "audio/x-m4a"), ("video", "mp4", "video/mp4"),
        ("video", "m4v", "video/mp4"), ("audio", "mp4", "audio/mp4"), (nil, "MP3", "audio/mpeg"),
        ("video", "mov", "video/quicktime"), ("audio", "ogg", "audio/ogg"), ("audio/ogg", "mp3", "audio/ogg"),
    ] as [(String?, String, String)])
    func mimeTypes(contentType: String?, fileExtension: String, expected: String) {
        #expect(CanonicalValue.mimeType(contentType: contentType, fileExtension: fileExtension) == expected)
    }

    @Test func unknownMediaHasNoType() {
        #expect(CanonicalValue.mimeType(contentType: "audio", fileExtension: "xyz") == nil)
        #expect(CanonicalValue.mimeType(contentType: "audio", fileExtension: nil) == nil)
    }

    @Test func dates() {
        #expect(CanonicalValue.date(.string("2023-04-15T00:00:00-07:00")) == .string("2023-04-15T07:00:00Z"))
        #expect(CanonicalValue.date(.string("2015-06-08T14:01:00Z")) == .string("2015-06-08T14:01:00Z"))
        #expect(CanonicalValue.date(.string("Fri, 19 Jun 2020 16:58:03 +0200")) == .string("2020-06-19T14:58:03Z"))
        #expect(CanonicalValue.date(.string("2025-01-05")) == .string("2025-01-05"))
        #expect(CanonicalValue.date(.string("mid-April")) == .string("mid-April"), "unreadable: kept as sent")
        #expect(CanonicalValue.date(.string("  ")) == nil)
    }

    @Test func pricesAreDoublesAndMinusOneIsNoPrice() {
        #expect(CanonicalValue.price(.int(3500)) == .double(3500))
        #expect(CanonicalValue.price(.double(1.29)) == .double(1.29))
        #expect(CanonicalValue.price(.string("9.99")) == .double(9.99))
        #expect(CanonicalValue.price(.int(-1)) == nil)
        #expect(CanonicalValue.price(.null) == nil)
    }

    @Test func largestArtworkWins() {
        let wire: [String: JSONValue] = ["artworkUrl30": .string("a"), "artworkUrl600": .string("c"),
                                         "artworkUrl100": .string("b"), "artworkUrlX": .string("x")]
        #expect(CanonicalValue.largestArtwork(wire) == .string("c"))
        #expect(CanonicalValue.largestArtwork([:]) == nil)
    }

    @Test func aMarketplaceEraSwitchIsNoCanonicalChange() {
        let market = MarketplaceSettings()
        let early: [String: JSONValue] = ["id": .int(1), "name": .string("a"), "price": .int(2000),
                                          "created_at": .string("2022-01-03 00:00:00.000")]
        let late: [String: JSONValue] = ["id": .int(1), "name": .string("a"), "price": .double(2000),
                                         "created_at": .string("2022-01-03T00:00:00")]
        #expect(market.canonical(.listing, early) == market.canonical(.listing, late))
    }

    @Test func unknownITunesKindsHaveNoCanonicalFields() {
        let row: [String: JSONValue] = ["trackId": .int(1), "trackName": .string("x"), "kind": .string("coached-audio")]
        #expect(ITunesSearchSettings(terms: ["x"]).canonical(.record, row) == CanonicalRecord(entity: .record, fields: [:]))
    }
}

/// Every source kind crawled from the simulator over HTTP: every record it
/// yields maps to canonical fields that are all in the schema, of their kinds.
@Suite struct CanonicalSimulatorCrawlTests {
    let world = ConnectorWorlds.small()
    let night = 3

    /// Maps every record of `crawled` by `kind`; returns how many were mapped per canonical entity.
    func mapEvery(_ crawled: [CrawledScope], by kind: any SourceKind, label: String) throws -> [EntityKind: Int] {
        var counts: [EntityKind: Int] = [:]
        for scope in crawled {
            #expect(scope.outcome.isComplete || scope.outcome.isCapped, "\(label) \(scope.scope.id): \(scope.outcome)")
            for record in scope.records {
                let canonical = try mapped(record, by: kind)
                counts[canonical.entity, default: 0] += 1
                // Every mapped record has a name where its entity has one.
                if CanonicalSchema.field("name", of: canonical.entity) != nil, canonical.entity != .chartEntry {
                    #expect(canonical.fields["name"]?.stringValue != nil, "\(label) \(record.entity.rawValue) \(record.key)")
                }
            }
        }
        return counts
    }

    @Test func everySourceKindMapsEverySimulatedRecordIntoTheSchema() async throws {
        try await SimulatorHarness.with(world: world, night: night) { sim in
            var seen: [EntityKind: Int] = [:]
            func crawl(_ name: String, _ kind: any SourceKind, inputs: [Record] = []) async throws -> [CrawledScope] {
                let crawled = await sim.crawl(sim.scopes(SourceSpec(name: name, settings: kind), inputs: inputs))
                seen.merge(try mapEvery(crawled, by: kind, label: name), uniquingKeysWith: +)
                return crawled
            }

            let genres = try await crawl("genres", ITunesGenresSettings(roots: [26, 34, 33, 36]))
            let genreRecords = genres.flatMap(\.records)
            _ = try await crawl("charts", ITunesChartsSettings(
                charts: ["toppodcasts", "topsongs", "topalbums", "topfreeapplications", "topmovies", "topaudiobooks",
                         "toppaidebooks"],
                countries: ["us", "gb"], limit: 20, genresFrom: "genres", genres: [1301, 1310], includeAllGenres: true),
                inputs: genreRecords)
            _ = try await crawl("charts-xml", ITunesChartsSettings(format: .legacyXML, charts: ["topalbums"], limit: 20))
            _ = try await crawl("charts-v2", ITunesChartsSettings(
                format: .v2, charts: ["music/most-played/songs", "podcasts/top/podcasts", "apps/top-paid/apps",
                                      "books/top-free/books", "audio-books/top/audio-books", "movies/top-movies/movies"],
                limit: 20))
            var podcasts: [Record] = []
            // Artists are found by their names' words: a song's artist is one the world has.
            let someSong = try #require(world.orderedKeys(entity: "song", night: night).first)
            let songRow = try JSONParser.parse(try #require(world.rowJSON(entity: "song", key: someSong, night: night)))
            let artistTerm = try #require(songRow["artistName"]?.stringValue)
            for (media, entity, term) in [
                ("podcast", nil, "love news star night"), ("music", "song", "love news star night"),
                ("music", "album", "love news star night"), ("music", "musicArtist", artistTerm),
                ("movie", nil, "love news star night"), ("software", nil, "love news star night"),
                ("audiobook", nil, "love news star night"), ("ebook", nil, "love news star night"),
            ] as [(String, String?, String)] {
                let crawled = try await crawl("search-\(media)", ITunesSearchSettings(
                    terms: [term], media: media, entity: entity, pageSize: 200, maxResults: 400))
                if media == "podcast" { podcasts = crawled.flatMap { $0.records(.podcast) } }
            }
            #expect(podcasts.count > 5)
            _ = try await crawl("lookup", ITunesLookupSettings(from: "search", batchSize: 50), inputs: podcasts)
            _ = try await crawl("episodes", ITunesLookupSettings(from: "search", lookupEntity: "podcastEpisode", limit: 50),
                                inputs: Array(podcasts.prefix(8)))
            // Feeds from this simulator: the fixed feed host is the runner's to map, so point feedUrl here.
            let withLocalFeeds = try podcasts.prefix(8).map { podcast in
                var fields = try podcast.fields()
                if let url = fields["feedUrl"]?.stringValue, let path = URL(string: url)?.path {
                    fields["feedUrl"] = .string(sim.server.baseURL.absoluteString + path)
                }
                return Record(entity: .podcast, key: podcast.key, fields: fields)
            }
            let feedScopes = try await crawl("feeds", PodcastFeedSettings(from: "search"), inputs: withLocalFeeds)
            #expect(feedScopes.contains { !$0.records.isEmpty })
            let market = MarketplaceSettings(itemsPerPage: 20, detail: true)
            let list = try await crawl("market", market)
            let listings = list.flatMap { $0.records(.listing) }
            let details = await sim.crawl(SourceSpec(name: "market", settings: market)
                .followUpScopes(baseURL: sim.server.baseURL, newOrChanged: Array(listings.prefix(10))))
            let detailCounts = try mapEvery(details, by: market, label: "market-detail")
            #expect(detailCounts == [.listing: 10], "details map to their listings")

            // Every entity the simulator serves came through at least once.
            for entity: EntityKind in [.genre, .chartEntry, .podcast, .episode, .song, .album, .artist, .movie, .app,
                                       .audiobook, .ebook, .listing] {
                #expect(seen[entity, default: 0] > 0, "no \(entity.rawValue) was mapped")
            }
        }
    }

    /// A feed episode and Lookup's row of the same episode map to the same
    /// canonical values where both sources know them.
    @Test func feedAndLookupAgreeOnAnEpisode() async throws {
        try await SimulatorHarness.with(world: world, night: night) { sim in
            let keys = world.orderedKeys(entity: "podcast", night: night).sorted()
            var podcasts: [Record] = []
            for key in keys {
                let row = try #require(world.rowJSON(entity: "podcast", key: key, night: night))
                var fields = try #require(try JSONParser.parse(row).objectValue)
                guard fields["feedUrl"] != nil else { continue }
                fields["feedUrl"] = .string(sim.server.baseURL.appendingPathComponent("feeds/\(key).xml").absoluteString)
                podcasts.append(Record(entity: .podcast, key: key, fields: fields))
                if podcasts.count == 3 { break }
            }
            let feed = PodcastFeedSettings(from: "search")
            let lookup = ITunesLookupSettings(from: "search", lookupEntity: "podcastEpisode", limit: 200)
            let fromFeeds = await sim.crawl(sim.scopes(SourceSpec(name: "feeds", settings: feed), inputs: podcasts))
                .flatMap(\.records)
            let fromLookup = await sim.crawl(sim.scopes(SourceSpec(name: "episodes", settings: lookup), inputs: podcasts))
                .flatMap(\.records)
            var byGUID: [String: [String: JSONValue]] = [:]
            for record in fromLookup {
                let fields = try mapped(record, by: lookup).fields
                if let guid = fields["guid"]?.stringValue { byGUID[guid] = fields }
            }
            var compared = 0
            for record in fromFeeds where record.entity == .episode {
                let fields = try mapped(record, by: feed).fields
                let guid = try #require(fields["guid"]?.stringValue)
                let other = try #require(byGUID[guid], "\(record.key)")
                for name in ["name", "podcast", "podcast_id", "release_date", "duration_ms", "enclosure_url",
                             "enclosure_type"] {
                    #expect(fields[name] != nil && fields[name] == other[name], "\(record.key) \(name)")
                }
                #expect(fields["enclosure_length"]?.intValue.map { $0 > 0 } == true)
                compared += 1
            }
            #expect(compared > 20)
        }
    }
}
