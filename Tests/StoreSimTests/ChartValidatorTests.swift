import Catalog
import Foundation
@testable import StoreSim
import Testing

@Suite struct ChartTests {
    let world = Worlds.media()

    func feed(_ path: String, night: Int = 2) throws -> [String: JSONValue] {
        let response = request(world, night: night, path)
        #expect(response.status == 200, "\(path)")
        return try #require(try parseObject(response.body)["feed"]?.objectValue)
    }

    @Test func oneEntryIsAnObjectAndNoneIsAbsent() throws {
        let one = try feed("/us/rss/topsongs/limit=1/json")
        #expect(one["entry"]?.objectValue != nil, "one entry: an object")
        let ten = try feed("/us/rss/topsongs/limit=10/json")
        #expect(ten["entry"]?.arrayValue?.count == 10)
        // Nothing to chart: no `entry` at all (not an empty array).
        for path in ["/us/rss/topvideopodcasts/limit=10/json", "/us/rss/toppodcasts/limit=10/genre=424242/json"] {
            let empty = try feed(path)
            #expect(empty["entry"] == nil && empty["title"] != nil, "\(path)")
        }
        // The XML feed of an empty chart has no <entry>, and one entry is one element.
        #expect(xmlElementNames(request(world, night: 2, "/us/rss/topvideopodcasts/xml").body)?.contains("entry") == false)
        #expect(xmlElementNames(request(world, night: 2, "/us/rss/topalbums/limit=1/xml").body)?
            .filter { $0 == "entry" }.count == 1)
    }

    @Test func legacyChartsHoldAtMostAHundred() throws {
        #expect(try feed("/us/rss/toppodcasts/limit=200/json")["entry"]?.arrayValue?.count == 100)
        #expect(try feed("/us/rss/toppodcasts/json")["entry"]?.arrayValue?.count == 10, "default limit 10")
        #expect(try feed("/us/rss/toppodcasts/explicit=true/limit=3/json")["entry"]?.arrayValue?.count == 3,
                "parts in any order")
        #expect(request(world, night: 2, "/us/rss/topnothing/limit=3/json").status == 404)
        #expect(request(world, night: 2, "/zz/rss/toppodcasts/limit=3/json").status == 404)
    }

    @Test func v2AboveAHundredIsAServerError() throws {
        #expect(request(world, night: 2, "/api/v2/us/music/most-played/101/albums.json").status == 500)
        #expect(request(world, night: 2, "/api/v2/us/music/most-played/100/albums.json").status == 200)
        #expect(request(world, night: 2, "/api/v2/us/music/most-played/10/videos.json").status == 404)
        let v2 = try feed("/api/v2/us/music/most-played/10/albums.json")
        let ids = v2["results"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
        #expect(ids == world.chartKeys(chart: "topalbums", limit: 10, night: 2), "v2 ranks like the legacy chart")
    }

    @Test func entriesFollowTheTruthAndGenres() throws {
        let entries = try feed("/us/rss/toppodcasts/limit=25/genre=1303/json")["entry"]?.arrayValue ?? []
        let ids = entries.compactMap { $0["id"]?["attributes"]?["im:id"]?.stringValue }
        #expect(ids == world.chartKeys(chart: "toppodcasts", genre: "1303", limit: 25, night: 2))
        #expect(entries.allSatisfy { $0["category"]?["attributes"]?["im:id"] == .string("1303") })
        // A parent genre holds its subgenres' podcasts.
        let arts = try feed("/us/rss/toppodcasts/limit=100/genre=1301/json")["entry"]?.arrayValue ?? []
        let artsGenres = Set(arts.compactMap { $0["category"]?["attributes"]?["im:id"]?.stringValue })
        #expect(artsGenres.count > 1 && artsGenres.isSubset(of: world.genres.subtreeIDs("1301", night: 2)))
        // Free and paid app charts hold what their names say.
        let free = try feed("/us/rss/topfreeapplications/limit=50/json")["entry"]?.arrayValue ?? []
        let paid = try feed("/us/rss/toppaidapplications/limit=50/json")["entry"]?.arrayValue ?? []
        #expect(!free.isEmpty && free.allSatisfy { $0["im:price"]?["attributes"]?["amount"] == .string("0") })
        #expect(!paid.isEmpty && paid.allSatisfy { $0["im:price"]?["attributes"]?["amount"] != .string("0") })
    }

    @Test func positionsMoveEachNight() {
        for chart in ["toppodcasts", "topsongs", "topalbums", "topmovies", "topfreeapplications"] {
            var previous = world.chartKeys(chart: chart, night: 1)
            for night in 2...4 {
                let now = world.chartKeys(chart: chart, night: night)
                #expect(now != previous, "\(chart) night \(night)")
                previous = now
            }
        }
    }
}

/// ETag and Last-Modified where the real services send them (charts,
/// marketplace, podcast feeds), 304s for matching conditional requests, and
/// stable validators for unchanged bodies.
@Suite struct ValidatorTests {
    let world = Worlds.media()

    /// One path per validated endpoint kind, alive on nights 2 and 3.
    func validatedPaths(night: Int) throws -> [String] {
        let podcast = try #require(world.orderedKeys(entity: "podcast", night: night).first {
            world.podcasts.episodeNumbers(world.podcasts.index(forKey: $0) ?? -1, night: night) != nil
                && world.podcasts.episodeNumbers(world.podcasts.index(forKey: $0) ?? -1, night: night - 1) != nil
        })
        let product = try #require(world.orderedKeys(entity: "listing", night: night).last)
        return ["/us/rss/toppodcasts/limit=10/json", "/us/rss/topalbums/limit=10/xml",
                "/api/v2/us/music/most-played/10/songs.json", "/api/products?page_no=2&items_per_page=20",
                "/api/products/\(product)", "/feeds/\(podcast).xml"]
    }

    @Test func validatedEndpointsAnswerConditionalRequests() throws {
        for path in try validatedPaths(night: 3) {
            let full = request(world, night: 3, path)
            let etag = try #require(full.etag, "\(path)")
            let modified = try #require(full.lastModified, "\(path)")
            #expect(full.status == 200 && etag.hasPrefix("\"") && SimDate.parseHTTPDate(modified) != nil)
            let byTag = request(world, night: 3, path, conditions: Conditions(ifNoneMatch: etag))
            #expect(byTag.status == 304 && byTag.body.isEmpty && byTag.etag == etag && byTag.lastModified == modified)
            let byDate = request(world, night: 3, path, conditions: Conditions(ifModifiedSince: modified))
            #expect(byDate.status == 304, "\(path): If-Modified-Since the Last-Modified date")
            let older = try #require(SimDate.parseHTTPDate(modified)) - 1
            let olderDate = SimDate(day: older / 86_400, seconds: older % 86_400).httpDate
            #expect(request(world, night: 3, path, conditions: Conditions(ifModifiedSince: olderDate)).status == 200)
            // If-None-Match wins over If-Modified-Since.
            #expect(request(world, night: 3, path,
                            conditions: Conditions(ifNoneMatch: "\"other\"", ifModifiedSince: modified)).status == 200)
            #expect(request(world, night: 3, path, conditions: Conditions(ifNoneMatch: "*")).status == 304)
        }
    }

    @Test func genresSearchAndLookupSendNone() {
        let key = world.orderedKeys(entity: "album", night: 2)[0]
        for path in ["/search?term=love&media=music", "/lookup?id=\(key)", "\(Endpoints.genresPath)?id=34"] {
            let response = request(world, night: 2, path, conditions: Conditions(ifNoneMatch: "*"))
            #expect(response.status == 200 && response.etag == nil && response.lastModified == nil, "\(path)")
        }
    }

    /// In a world that stands still every body stays the same, so every
    /// validator stays the same, however many nights pass.
    @Test func unchangedBodiesKeepTheirValidators() throws {
        let still = World(config: SimulatorConfig(seed: 4, podcastCount: 80, productCount: 60,
                                                  churn: Churn(changed: 0, added: 0, removed: 0), songCount: 100,
                                                  movieCount: 10, appCount: 10, audiobookCount: 5, ebookCount: 5))
        let podcast = try #require(still.orderedKeys(entity: "podcast", night: 1).first {
            still.podcasts.episodeNumbers(still.podcasts.index(forKey: $0) ?? -1, night: 1) != nil
        })
        for path in ["/us/rss/toppodcasts/limit=10/json", "/api/v2/us/music/most-played/10/albums.json",
                     "/api/products?page_no=1&items_per_page=20", "/api/products/3", "/feeds/\(podcast).xml"] {
            let first = request(still, night: 1, path)
            let later = request(still, night: 9, path)
            #expect(first.etag == later.etag && first.lastModified == later.lastModified && first.body == later.body,
                    "\(path)")
            #expect(request(still, night: 9, path, conditions: Conditions(ifNoneMatch: first.etag)).status == 304)
        }
    }

    /// In a busy world: a product detail that did not change keeps its
    /// validators; one that changed gets a new ETag dated that night.
    @Test func validatorsFollowEachBody() throws {
        let night = 4
        let diff = world.diff(entity: "listing", night: night)
        let unchanged = try #require(world.orderedKeys(entity: "listing", night: night).first {
            !diff.changed.contains($0) && !diff.added.contains($0)
        })
        let changed = try #require(diff.changed.sorted().first)
        let sameBefore = request(world, night: night - 1, "/api/products/\(unchanged)")
        let sameAfter = request(world, night: night, "/api/products/\(unchanged)")
        #expect(sameBefore.etag == sameAfter.etag && sameBefore.lastModified == sameAfter.lastModified)
        let before = request(world, night: night - 1, "/api/products/\(changed)")
        let after = request(world, night: night, "/api/products/\(changed)")
        #expect(before.etag != after.etag)
        #expect(after.lastModified == Endpoints.marketStamp(world, night).httpDate)
        #expect(request(world, night: night, "/api/products/\(changed)",
                        conditions: Conditions(ifModifiedSince: before.lastModified)).status == 200)
        // A chart's `updated` is its Last-Modified, so it only moves with the entries.
        let chart = try parseObject(request(world, night: night, "/us/rss/toppodcasts/limit=5/json").body)
        let updated = try #require(chart["feed"]?["updated"]?["label"]?.stringValue)
        let modified = try #require(request(world, night: night, "/us/rss/toppodcasts/limit=5/json").lastModified)
        #expect(SimDate.parseHTTPDate(modified).map { $0 - 7 * 3600 }
            == World.parseISODate(String(updated.prefix(19)) + "Z")?.epochSeconds)
    }

    /// Details and feeds date themselves from their record's last change; that
    /// must be exactly the first night of the current run of identical bodies.
    @Test func lastChangeDatingMatchesTheBodies() throws {
        let night = 6
        for key in world.orderedKeys(entity: "listing", night: night).prefix(40) {
            let i = try #require(world.products.index(forKey: key))
            let since = world.versionNight(resource: "test-detail|\(i)", night: night) { n in
                world.products.timeline.isAlive(i, night: n)
                    ? JSONWriter.bytes(.object(world.products.detail(i, night: n)), layout: .compact) : nil
            }
            #expect(request(world, night: night, "/api/products/\(key)").lastModified
                == Endpoints.marketStamp(world, since).httpDate, "product \(key)")
        }
        for key in world.orderedKeys(entity: "podcast", night: night).prefix(30) {
            let i = try #require(world.podcasts.index(forKey: key))
            guard world.podcasts.episodeNumbers(i, night: night) != nil else { continue }
            let since = world.versionNight(resource: "test-feed|\(i)", night: night) {
                SimulatedFeed.body(world.podcasts, i, night: $0, lastBuild: nil)
            }
            #expect(request(world, night: night, "/feeds/\(key).xml").lastModified
                == Endpoints.itunesStamp(since).adding(hours: 7).httpDate, "podcast \(key)")
        }
    }

    @Test func httpDatesParseInAllThreeFormats() {
        let expected = SimDate(year: 1994, month: 11, day: 6).day * 86_400 + 8 * 3600 + 49 * 60 + 37
        for text in ["Sun, 06 Nov 1994 08:49:37 GMT", "Sunday, 06-Nov-94 08:49:37 GMT", "Sun Nov  6 08:49:37 1994"] {
            #expect(SimDate.parseHTTPDate(text) == expected, "\(text)")
        }
        #expect(SimDate.parseHTTPDate("yesterday") == nil)
        #expect(SimDate(day: 0).httpDate == "Thu, 01 Jan 1970 00:00:00 GMT")
        #expect(SimDate(year: 2025, month: 1, day: 11).rfc2822 == "Sat, 11 Jan 2025 00:00:00 +0000")
    }
}
