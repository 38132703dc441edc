import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing
import TestSupport

@Suite struct MarketplaceDetailTests {
    func response(_ body: [UInt8], id: String, status: Int = 200) -> HTTPResponse {
        HTTPResponse(url: URL(string: "https://m.example/api/products/\(id)")!, status: status, body: body)
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"), arguments: [
        ("openmarket-detail-camel-era-1.json", "32", "2022-10-18T00:00:00", 2),
        ("openmarket-detail-snake-era-spacedates.json", "16", "2022-01-03T00:00:00", 1),
    ])
    func samplesOfBothErasDecode(file: String, id: String, created: String, images: Int) throws {
        let page = try MarketplaceDetail.decodeDetail(response(try TestPaths.sample(file), id: id), id: id)
        #expect(page.rowCount == 1)
        #expect(page.hasNext == false)
        let record = try #require(page.items.first)
        #expect(record.entity == .listingDetail)
        #expect(record.key == id)
        let fields = try record.fields()
        #expect(fields["created_at"] == .string(created))
        #expect(fields["issued_at"] == .string(created))
        #expect(fields["vendor_id"]?.intValue != nil)
        #expect(fields["price"]?.doubleValue != nil)
        let imageRows = try #require(fields["images"]?.arrayValue)
        #expect(imageRows.count == images)
        // Nested dates get the same canonical form as the top-level ones.
        for image in imageRows { #expect(image["issued_at"] == .string(created)) }
        #expect(fields["vendors"]?["name"]?.stringValue?.isEmpty == false)
    }

    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func snakeEraVendorDatesAreCanonical() throws {
        let page = try MarketplaceDetail.decodeDetail(
            response(try TestPaths.sample("openmarket-detail-snake-era-spacedates.json"), id: "16"), id: "16")
        let vendor = try #require(try page.items.first?.fields()["vendors"])
        #expect(vendor["created_at"] == .string("2021-12-26T00:00:00"))
    }

    @Test func eraDateFormatsHashAlike() throws {
        let spaced = #"{"id":5,"name":"a","price":100,"created_at":"2022-01-03 00:00:00.000","images":[{"id":1,"issued_at":"2022-01-03 00:00:00.000"}]}"#
        let camel = #"{"id":5,"name":"a","price":100.0,"created_at":"2022-01-03T00:00:00","images":[{"id":1,"issued_at":"2022-01-03T00:00:00.00"}]}"#
        let a = try MarketplaceDetail.decodeDetail(response(Array(spaced.utf8), id: "5"), id: "5").items
        let b = try MarketplaceDetail.decodeDetail(response(Array(camel.utf8), id: "5"), id: "5").items
        #expect(a == b)
    }

    @Test func vanishedProductIsASkippedRowNotAFailure() throws {
        let page = try MarketplaceDetail.decodeDetail(
            response(Array(#"{"code":404,"message":"product not found: 9"}"#.utf8), id: "9", status: 404), id: "9")
        #expect(page.items.isEmpty)
        #expect(page.rowCount == 0)
        #expect(page.hasNext == false)
        #expect(page.skipped.count == 1)
        #expect(page.skipped[0].contains("product 9") && page.skipped[0].contains("404"))
    }

    @Test func badBodiesFailNamingTheURL() {
        let cases: [(String, String)] = [
            ("<html>oops</html>", "not valid JSON"),
            ("[1,2]", "expected a product object"),
            (#"{"name":"no id"}"#, "no numeric 'id'"),
            (#"{"id":8}"#, "asked for product 7, got product 8"),
        ]
        for (body, expected) in cases {
            do {
                _ = try MarketplaceDetail.decodeDetail(response(Array(body.utf8), id: "7"), id: "7")
                Issue.record("decoded \(body)")
            } catch {
                guard error.code == .malformedPage, case let (url, reason) = (error.location, error.message) else {
                    Issue.record("unexpected \(error)")
                    continue
                }
                #expect(url == "https://m.example/api/products/7")
                #expect(reason.contains(expected), "\(reason)")
            }
        }
    }

    @Test func oneNonSweepingSinglePageScopePerNewOrChangedListing() throws {
        let source = SourceSpec(name: "market", settings: (MarketplaceSettings(detail: true)))
        let listings = [
            Record(entity: .listing, key: "12", fields: ["id": .int(12)]),
            Record(entity: .listing, key: "3", fields: ["id": .int(3)]),
            Record(entity: .listing, key: "12", fields: ["id": .int(12)]),
            Record(entity: .listing, key: "../admin", fields: [:]),
            Record(entity: .listingDetail, key: "4", fields: [:]),
        ]
        let scopes = source.followUpScopes(baseURL: URL(string: "http://127.0.0.1:8080/market/")!,
                                               newOrChanged: listings)
        #expect(scopes.map(\.id) == ["detail:12", "detail:3"])
        #expect(scopes.map { $0.pageURL(0)?.absoluteString } == [
            "http://127.0.0.1:8080/market/api/products/12", "http://127.0.0.1:8080/market/api/products/3",
        ])
        #expect(scopes.allSatisfy { !$0.sweeps })
        // Without `detail`, no follow-ups.
        let plain = SourceSpec(name: "market", settings: (MarketplaceSettings()))
        #expect(plain.followUpScopes(baseURL: nil, newOrChanged: listings).isEmpty)
    }

    @Test func aDetailScopeIsOneCompletePage() async throws {
        let source = SourceSpec(name: "market", settings: (MarketplaceSettings(detail: true)))
        let scope = try #require(source.followUpScopes(
            baseURL: URL(string: "http://m.example")!,
            newOrChanged: [Record(entity: .listing, key: "3", fields: [:])]).first)
        var stored: [Record] = []
        let outcome = await PageWalker.walk(
            pagination: scope.pagination,
            fetch: { index throws(StoreSyncError) in
                HTTPResponse(url: scope.pageURL(index)!, status: 200, body: Array(#"{"id":3,"name":"x"}"#.utf8))
            },
            decode: scope.decode, onPage: { _, _, page throws(StoreSyncError) in stored += page.items })
        #expect(outcome.isComplete)
        #expect(stored.map(\.key) == ["3"])
    }
}
