import Catalog
import Crawl
import Foundation
import Snapshot
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// A memo must not outlive the data it vouches for: a product unlisted one
/// night and relisted unchanged the next gets its detail back that night,
/// though its detail answers 304 to the memo's validators.
@Suite struct RelistedDetailTests {
    /// A marketplace whose list is set per night; details carry an ETag and answer 304 to it.
    final class Market: Sendable {
        let listed = Mutex<[Int]>([])
        let detailRequests = Mutex<[String]>([])

        func product(_ id: Int) -> String {
            #"{"id": \#(id), "vendor_id": 1, "name": "Product \#(id)", "thumbnail": "https://market.test/\#(id).jpg", "currency": "USD", "price": 10.0, "bargain_price": 10.0, "discounted_price": 0.0, "stock": 3, "created_at": "2026-01-01T00:00:00.00", "issued_at": "2026-01-01T00:00:00.00"}"#
        }

        func respond(_ request: HTTPRequest) -> Result<HTTPResponse, TransportError> {
            let path = request.url.path
            if path == "/api/products" {
                let ids = listed.withLock { $0 }
                let body = #"{"page_no": 1, "items_per_page": 100, "total_count": \#(ids.count), "offset": 0, "limit": 100, "last_page": 1, "has_next": false, "has_prev": false, "pages": ["#
                    + ids.map(product).joined(separator: ", ") + "]}"
                return .success(HTTPResponse(url: request.url, status: 200, headers: ["content-type": "application/json"], body: Array(body.utf8)))
            }
            guard path.hasPrefix("/api/products/"), let id = Int(path.dropFirst("/api/products/".count)) else {
                return .success(HTTPResponse(url: request.url, status: 404))
            }
            let etag = "\"detail-\(id)\""
            let conditional = request.headers["If-None-Match"] == etag
            detailRequests.withLock { $0.append("\(id)" + (conditional ? " 304" : " 200")) }
            if conditional { return .success(HTTPResponse(url: request.url, status: 304, headers: ["etag": etag])) }
            let detail = String(product(id).dropLast()) + #", "description": "Detail of \#(id)", "images": []}"#
            return .success(HTTPResponse(url: request.url, status: 200, headers: ["content-type": "application/json", "etag": etag],
                                         body: Array(detail.utf8)))
        }
    }

    @Test func aRelistedProductGetsItsDetailBackTheNightItReturns() async throws {
        let directory = TestPaths.temporaryDirectory("relisted")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: """
            name: relist
            store: snapshot.sqlite
            output: out
            sources:
              - {name: market, kind: marketplace, baseURL: "http://market.test", itemsPerPage: 100, detail: true,
                 removal: {afterMisses: 1, maxRatio: 1}}
            """, file: "relist.yml", baseDirectory: directory.path)
        let market = Market()
        let transport = ScriptedTransport { request, _ in market.respond(request) }
        func night(_ ids: [Int]) async throws -> RunReport {
            market.listed.withLock { $0 = ids }
            let report = try await Runner(job: job, logger: .quiet, transport: transport, clock: ManualClock()).run()
            #expect(report.outcome == .ok, "\(report.summaryText)")
            return report
        }
        func details() throws -> [String] {
            try SQLSnapshotStore(path: job.storePath).records(source: "market")
                .filter { $0.entity == .listingDetail }.map(\.key).sorted()
        }
        _ = try await night([1, 2, 3])
        #expect(try details() == ["1", "2", "3"])
        _ = try await night([1, 3])
        #expect(try details() == ["1", "3"])
        market.detailRequests.withLock { $0 = [] }
        _ = try await night([1, 2, 3])
        // The detail is asked for without the memo of the removed one, and stored again.
        #expect(market.detailRequests.withLock { $0 } == ["2 200"])
        #expect(try details() == ["1", "2", "3"])
    }
}
