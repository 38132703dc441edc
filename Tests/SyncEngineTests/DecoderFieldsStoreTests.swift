import Catalog
import Synchronization
@testable import Connectors
import Crawl
import Foundation
import GRDB
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// A marketplace list row read from its bytes carries its listing's
/// canonical fields (``Record/entityFields``), and the store writes them as
/// they are: the store that leaves is the store the parsed rows leave,
/// table for table, on a first load and through the diff, and no payload is
/// parsed but a changed record's (merged field by field).
@Suite struct DecoderFieldsStoreTests {
    let directory = TestPaths.temporaryDirectory("decoder-fields")

    func row(_ id: Int, price: Double, era: Int) -> String {
        // Night 2 serves another era's dates and number forms: no change by themselves.
        let date = era == 1 ? "2022-05-14T00:00:00.00" : "2022-05-14 00:00:00"
        let amount = era == 1 ? String(format: "%.1f", price) : String(Int(price))
        return """
            {"id":\(id),"vendor_id":\(id % 7),"name":"Product \(id)","currency":"KRW","price":\(amount),"bargain_price":\(amount),\
            "discounted_price":0.0,"stock":\(id % 5),"created_at":"\(date)","issued_at":"\(date)","thumbnail":"https://t/\(id).jpg"}
            """
    }

    /// A row the byte reader steps aside from (a nested seller), parsed either way.
    func detailShaped(_ id: Int, name: String) -> String {
        #"{"id":\#(id),"vendors":{"id":3,"name":"v"},"name":"\#(name)","price":10.0}"#
    }

    func pages(night: Int) -> [[UInt8]] {
        let ids = night == 1 ? Array(1...300) : Array(1...290) + Array(301...330)
        var rows = ids.map { row($0, price: Double($0 % 10 == 0 && night == 2 ? $0 * 200 : $0 * 100), era: night) }
        rows += [detailShaped(900, name: night == 1 ? "Seller" : "Seller renamed"), detailShaped(901, name: "Same")]
        return stride(from: 0, to: rows.count, by: 100).map { start in
            Array("{\"has_next\":true,\"pages\":[\(rows[start..<min(start + 100, rows.count)].joined(separator: ","))]}".utf8)
        }
    }

    func nights(_ name: String, decode: (HTTPResponse) throws -> DecodedPage<Catalog.Record>) async throws -> SQLSnapshotStore {
        let job = try JobLoader.parse(yaml: "name: t\nstore: x.sqlite\noutput: out\nsources:\n  - {name: market, kind: marketplace}\n",
                                      file: "t.yml", baseDirectory: directory.path)
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("\(name).sqlite").path)
        try store.prepareEntities(job.sourceMappings, fingerprint: job.mappingFingerprint)
        for night in 1...2 {
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: Double(night) * 86_400), simulated: false)
            let loading = night == 1 ? try store.beginFirstLoad() : false
            let bodies = pages(night: night)
            for (index, body) in bodies.enumerated() {
                let page = try decode(HTTPResponse(url: URL(string: "https://m/api/products?page_no=\(index + 1)")!, status: 200, body: body))
                var input = PageInput(runID: run.id, source: "market", scope: "products", page: index, records: page.items)
                input.completesScope = index == bodies.count - 1
                _ = try await store.apply(input)
            }
            if loading { try store.endFirstLoad() }
            try store.finishRun(run.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: Double(night) * 86_400 + 60),
                                exportsFollow: false)
        }
        return store
    }

    @Test func listingFieldsWrittenByTheDecoderStoreWhatTheParsedRowsStore() async throws {
        let parsed = try await nights("parsed") { try MarketplaceList.decodeParsed($0) }
        let read = try await nights("read") { response in
            let page = try MarketplaceList.decodePage(response)
            #expect(page.items.filter { $0.entityFields != nil }.count >= page.items.count - 2, "the byte reader wrote the rows")
            return page
        }
        func rows(_ name: String, _ sql: String) throws -> [Row] {
            var configuration = Configuration()
            configuration.readonly = true
            return try DatabaseQueue(path: directory.appendingPathComponent("\(name).sqlite").path, configuration: configuration)
                .read { try Row.fetchAll($0, sql: sql) }
        }
        for sql in ["SELECT entity, key, fields, hash, sources, parts, added_run, changed_run FROM entities ORDER BY entity, key",
                    "SELECT source, entity, key, scope, hash, payload, added_run, changed_run, raw_hash FROM records ORDER BY source, entity, key",
                    "SELECT run_id, source, entity, key, op, field, before, after FROM changes ORDER BY id",
                    "SELECT source, entity, field, kind, position, first_run, kind_changed_run, previous_kind FROM field_registry ORDER BY 1, 2, 3"] {
            let expected = try rows("parsed", sql)
            #expect(!expected.isEmpty)
            #expect(try rows("read", sql) == expected, "\(sql)")
        }
        // Night 2 changed 29 listings (prices) and renamed one seller; only those were parsed, to be merged.
        let changes = try rows("read", "SELECT count(DISTINCT key) AS n FROM changes WHERE run_id = 2 AND op = 'changed'")
        #expect(changes.first?["n"] == 30)
        #expect(read.payloadParses.load(ordering: .relaxed) == 29, "only the 29 changed listings read from bytes")
        #expect(parsed.payloadParses.load(ordering: .relaxed) == 0)
    }
}
