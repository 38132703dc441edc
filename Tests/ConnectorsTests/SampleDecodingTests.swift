import Catalog
import Connectors
import Crawl
import Foundation
import Testing
import TestSupport

/// Every decoder reads the real responses in ../shared/api-samples.
@Suite(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent: sample decoding skipped"))
struct SampleDecodingTests {
    func response(_ name: String, url: String = "https://itunes.apple.com/search") throws -> HTTPResponse {
        HTTPResponse(url: URL(string: url)!, status: 200, body: try TestPaths.sample(name))
    }

    @Test(arguments: [
        ("itunes-search-podcast-apple.json", EntityKind.podcast, 50),
        ("itunes-search-software-yelp-2020.json", .app, 50),
        ("itunes-search-music-songs-50-karla215.json", .song, 50),
    ])
    func searchSamplesDecode(file: String, entity: EntityKind, count: Int) throws {
        let page = try ITunesSearch.decodePage(try response(file))
        #expect(page.rowCount == count)
        #expect(page.items.count == count)
        #expect(page.skipped.isEmpty)
        #expect(page.items.allSatisfy { $0.entity == entity })
        #expect(Set(page.items.map(\.key)).count == page.items.count)
    }

    @Test func mixedKindsOnOnePageKeepTheirOwnEntities() throws {
        let page = try ITunesSearch.decodePage(try response("itunes-search-movie-starwars-mixed-audiobook.json"))
        let kinds = Dictionary(grouping: page.items, by: \.entity).mapValues(\.count)
        #expect(kinds[.movie] == 7)
        #expect(kinds[.audiobook] == 3)
    }

    @Test func lookupSamplesDecodeParentAndChildren() throws {
        let album = try ITunesSearch.decodePage(try response("itunes-lookup-album-with-songs-1440742903.json"))
        #expect(album.items.filter { $0.entity == .album }.count == 1)
        #expect(album.items.filter { $0.entity == .song }.count == 14)
        let podcast = try ITunesSearch.decodePage(try response("itunes-lookup-podcast-episodes-1535809341-limit20.json"))
        #expect(podcast.items.filter { $0.entity == .podcast }.count == 1)
        #expect(podcast.items.filter { $0.entity == .episode }.count == 20)
    }

    @Test func trackingParametersDoNotReachTheHash() throws {
        let page = try ITunesSearch.decodePage(try response("itunes-search-podcast-apple.json"))
        let first = try #require(page.items.first)
        #expect(!first.payload.contains("uo=4"))
        #expect(first.payload.contains("mt=2"))
    }

    @Test func invalidSampleFailsWithItsPosition() throws {
        let url = "https://itunes.apple.com/search?term=yelp"
        let invalid = try response("itunes-search-software-yelp-INVALID-annotated.json", url: url)
        do {
            _ = try ITunesSearch.decodePage(invalid)
            Issue.record("the INVALID sample decoded")
        } catch {
            guard error.code == .malformedPage, case let (failedURL, reason) = (error.location, error.message) else {
                Issue.record("unexpected error \(error)")
                return
            }
            #expect(failedURL == url)
            #expect(reason.contains("line "), "\(reason)")
            #expect(reason.contains("column "), "\(reason)")
        }
    }

    @Test func marketplaceListDecodesBothKeyEras() throws {
        let snake = try MarketplaceList.decodePage(try response("openmarket-list-snake-p1-of-93.json", url: "https://m/api/products?page_no=1"))
        #expect(snake.hasNext == true)
        #expect(snake.items.count == 15)
        let camel = try MarketplaceList.decodePage(try response("openmarket-list-camel-p3-of-6.json", url: "https://m/api/products?page_no=3"))
        #expect(camel.hasNext == true)
        #expect(camel.items.count == camel.rowCount)
        #expect(camel.items.allSatisfy { $0.entity == .listing })
    }

    @Test func marketplaceDatesOfEveryEraBecomeOneForm() throws {
        let snake = try MarketplaceList.decodePage(try response("openmarket-list-snake-p1-of-93.json", url: "https://m/api/products"))
        let fields = try #require(try snake.items.first?.fields())
        #expect(fields["created_at"] == .string("2022-05-14T00:00:00"))
        let page = HTTPResponse(url: URL(string: "https://m/api/products")!, status: 200, body: Array("""
            {"pageNo":1,"hasNext":false,"pages":[{"id":7,"created_at":"2021-12-29 00:00:00.000","issued_at":"2022-11-04T00:00:00","price":100}]}
            """.utf8))
        let decoded = try MarketplaceList.decodePage(page)
        let row = try #require(try decoded.items.first?.fields())
        #expect(row["created_at"] == .string("2021-12-29T00:00:00"))
        #expect(row["issued_at"] == .string("2022-11-04T00:00:00"))
        #expect(decoded.hasNext == false)
    }
}

@Suite struct DecoderRobustnessTests {
    let url = URL(string: "https://itunes.apple.com/search?term=x")!

    @Test func rowsWithoutIdsAreSkippedNotFatal() throws {
        let body = #"{"resultCount":3,"results":[{"wrapperType":"track","kind":"podcast","trackId":1},{"wrapperType":"track","kind":"podcast","trackName":null},7]}"#
        let page = try ITunesSearch.decodePage(HTTPResponse(url: url, status: 200, body: Array(body.utf8)))
        #expect(page.items.map(\.key) == ["1"])
        #expect(page.rowCount == 3)
        #expect(page.skipped.count == 2)
    }

    @Test func stringIdsNullsAndAbsentKeysAreAccepted() throws {
        let body = "{\"results\":[{\"wrapperType\":\"audiobook\",\"collectionId\":\"42\",\"artistId\":null,\"description\":\"<b>x</b>\\r\\ny\"}]}"
        let page = try ITunesSearch.decodePage(HTTPResponse(url: url, status: 200, body: Array(body.utf8)))
        #expect(page.items.first?.entity == .audiobook)
        #expect(page.items.first?.key == "42")
    }

    @Test func htmlErrorPageWithStatus200IsMalformed() {
        #expect(throws: StoreSyncError.self) {
            try ITunesSearch.decodePage(HTTPResponse(url: url, status: 200, body: Array("<html><body>Service Unavailable</body></html>".utf8)))
        }
    }

    @Test func truncatedBodyIsMalformed() {
        #expect(throws: StoreSyncError.self) {
            try ITunesSearch.decodePage(HTTPResponse(url: url, status: 200, body: Array(#"{"resultCount":1,"results":[{"trackId":1,"#.utf8)))
        }
    }

    @Test func serviceErrorMessageIsReported() {
        do {
            _ = try ITunesSearch.decodePage(HTTPResponse(url: url, status: 200, body: Array(#"{"errorMessage":"Invalid value(s) for key(s): [term]"}"#.utf8)))
            Issue.record("expected an error")
        } catch {
            #expect(error.description.contains("Invalid value(s)"))
        }
    }
}
