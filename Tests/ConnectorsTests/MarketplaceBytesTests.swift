import Catalog
@testable import Connectors
import Crawl
import Foundation
import StoreSim
import Testing
import TestSupport

/// The marketplace list is read from its bytes (issue 26: one decode): each
/// row written straight to its canonical payload, and its listing's
/// canonical fields written from that. Whatever a page holds, that reading
/// gives what parsing the page into values gives, record for record, byte
/// for byte, or steps aside to the parse.
@Suite struct MarketplaceBytesTests {
    /// What one decoder made of a page: its records and flags, or its error.
    struct Outcome: Equatable {
        var records: [Record] = []
        var skipped: [String] = []
        var rowCount = 0
        var hasNext: Bool?
        var lastPage: Int?
        var error: String?

        init(_ decode: () throws(StoreSyncError) -> DecodedPage<Record>) {
            do {
                let page = try decode()
                (records, skipped, rowCount, hasNext, lastPage) = (page.items, page.skipped, page.rowCount, page.hasNext, page.lastPage)
            } catch {
                self.error = "\(error)"
            }
        }
    }

    /// Checks one page both ways; returns how many of its records the byte
    /// reader wrote itself (with their listing's fields).
    @discardableResult
    func check(_ body: [UInt8], _ label: String, sourceLocation: SourceLocation = #_sourceLocation) throws -> Int {
        let response = HTTPResponse(url: URL(string: "https://m/api/products?page_no=1")!, status: 200, body: body)
        let read = Outcome { () throws(StoreSyncError) in try MarketplaceList.decodePage(response) }
        let parsed = Outcome { () throws(StoreSyncError) in try MarketplaceList.decodeParsed(response) }
        #expect(read == parsed, "\(label)", sourceLocation: sourceLocation)
        var written = 0
        for record in read.records {
            guard let fields = record.entityFields else { continue }
            written += 1
            // The listing's fields are what the mapping makes of the record's payload, parsed.
            let wire = try JSONParser.parse(record.payload).objectValue ?? [:]
            let mapped = MarketplaceSettings().canonical(.listing, wire)
            #expect(fields.entity == mapped.entity, "\(label) \(record.key)", sourceLocation: sourceLocation)
            #expect(fields.text == String(decoding: CanonicalJSON.encodeObject(mapped.fields), as: UTF8.self),
                    "\(label) \(record.key)", sourceLocation: sourceLocation)
            #expect(fields.hash == ContentHash(bytes: Array(fields.text.utf8)), sourceLocation: sourceLocation)
            #expect(fields.names == mapped.fields.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) },
                    sourceLocation: sourceLocation)
            // And its shape (for the field registry) is the payload's own, dates rewritten included.
            var scratch = CanonicalScratch()
            let reread = Array(record.payload.utf8).withUnsafeBufferPointer {
                JSONParser.canonicalObject($0, keyField: "id", scratch: &scratch)
            }
            #expect(reread?.shape == record.shape, "\(label) \(record.key)", sourceLocation: sourceLocation)
        }
        return written
    }

    func page(_ rows: [String], keys: String = #""has_next":true,"last_page":93"#) -> [UInt8] {
        Array("{\"page_no\":1,\(keys),\"pages\":[\(rows.joined(separator: ","))]}".utf8)
    }

    static let snakeRow = #"""
        {"id": 2094, "vendor_id": 6, "name": "ㄴㄴㄴ", "thumbnail": "https://s3.example/6/thumb/ef.jpg", "currency": "KRW",
         "price": 123123.0, "bargain_price": 123122.0, "discounted_price": 1.0, "stock": 1,
         "created_at": "2022-05-14T00:00:00.00", "issued_at": "2022-05-14T00:00:00.00"}
        """#

    @Test func everyKindOfRowReadsAsItsParse() throws {
        let rows: [(String, Bool)] = [
            // (row, whether the byte reader writes it itself)
            (Self.snakeRow, true),
            (#"{"id":130,"vendor_id":28,"vendorName":"OmarketTeam","name":"에어팟 3","description":"에어팟 3","currency":"KRW","price":20000.0,"bargain_price":10000.0,"discounted_price":10000.0,"stock":3,"created_at":"2022-11-04T00:00:00","issued_at":"2022-11-04T00:00:00"}"#, true),
            (#"{"id":1,"created_at":"2021-12-29 00:00:00.000","issued_at":"2021-12-29 10:11:12.500","price":0,"stock":0}"#, true),
            (#"{"id":2,"created_at":"2021-12-29T00:00:00.10","issued_at":"2021-12-29T00:00:00.","price":-1,"bargain_price":null}"#, true),
            (#"{"id":3,"price":"3500","bargain_price":" 12.5 ","stock":"7","vendor_id":6.0,"discounted_price":1e3}"#, true),
            (#"{"id":4,"stock":5.5,"price":12.345678901234567,"name":123,"currency":true,"description":null,"thumbnail":[1]}"#, true),
            (#"{"id":"42","name":"a\"b\\c\n\u0001\t\u00e9\ud83d\ude00","vendorName":"\ud800 lone"}"#, true),
            (#"{"id":43.0,"created_at":20220101,"issued_at":"2022-01-04T00:00:00.00é","name":"=SUM(A1)"}"#, true),
            (#"{"id":44,"name":"x","tags":["a",{"z":1,"a":[0.0,-0.0]}],"meta":{"b":null,"a":"\u2028"}}"#, true),
            (#"{"id":45,"price":9007199254740993,"stock":9007199254740993,"created_at":"2022-01-04T00:00:00.000000"}"#, true),
            // Stepped aside to the parse: a detail's nested seller and images, a name twice,
            // an escaped key, a number no Double holds, an id past Int64.
            (#"{"id":50,"vendors":{"id":3,"name":"v"},"images":[{"url":"u1"},"u2"]}"#, false),
            (#"{"id":51,"vendors":[{"id":"4","name":"w"}],"name":"n"}"#, false),
            (#"{"id":52,"name":"a","name":"b"}"#, false),
            (#"{"id":53,"n\u0061me":"escaped key"}"#, false),
            (#"{"id":54,"price":1e400}"#, false),
            (#"{"id":18446744073709551616,"name":"big id"}"#, false),
            (#"{"id":"0042","name":"padded"}"#, true),
        ]
        var written = 0
        for (row, byBytes) in rows {
            let count = try check(page([row]), row)
            #expect(count == (byBytes ? 1 : 0), "\(row)")
            written += count
        }
        #expect(written == rows.filter(\.1).count)
        // Skipped rows, with their reasons, in place.
        try check(page([#"{"name":"no id"}"#, "5", "null", #"{"id":null}"#, #"{"id":"x1"}"#, Self.snakeRow, "[1]", #"{"id":true}"#]),
                  "skipped rows")
        // Invalid UTF-8 inside a string (repaired), raw controls (refused).
        var invalid = page([#"{"id":60,"name":"ab"}"#])
        let at = invalid.firstIndex(of: UInt8(ascii: "b"))!
        invalid.replaceSubrange(at...at, with: [0xFF, 0xC3])
        try check(invalid, "invalid UTF-8")
        try check(Array("{\"pages\":[{\"id\":61,\"name\":\"tab\there\"}]}".utf8), "raw control in a string")
    }

    @Test func pagesOfEveryShapeReadAsTheirParse() throws {
        let row = Self.snakeRow
        let pages: [String] = [
            #"{"pages":[]}"#, "{}", #"{"pages":null}"#, #"{"pages":5}"#, #"{"pages":{}}"#, "[]", "",
            "<html><body>Service Unavailable</body></html>",
            "{\"pages\":[\(row)", "{\"pages\":[\(row)]", "{\"pages\":[\(row),]}", "{\"pages\":[\(row)]} x",
            "{\"pages\":[\(row)],\"pages\":[]}", "{\"hasNext\":false,\"hasNext\":true,\"pages\":[\(row)],\"lastPage\":2.0}",
            "\u{FEFF}{\"pages\":[\(row)]}", " \n{ \"pages\" : [ \(row) , \(row) ] , \"has_next\" : false }\n",
            "{\"pages\":[\(row)],\"has_next\":tru}", "{\"pages\":[\(row) \(row)]}", "{\"pages\":[\(row)}",
            "{\"p\\u0061ges\":[\(row)]}", "{\"pages\":[{\"id\":1,\"a\":[}]}", "{\"pages\":[{\"id\":1}]]}",
            "{\"last_page\":1e400,\"pages\":[\(row)]}", "{\"pages\":[\(row)],\"nested\":{\"pages\":[]}}",
        ]
        for text in pages { try check(Array(text.utf8), text) }
    }

    /// Pages as the simulator serves them, both key eras, several nights,
    /// with its record faults (long fields, invalid UTF-8, characters XML
    /// cannot hold, spreadsheet formulas) and its page faults.
    @Test func simulatorPagesReadAsTheirParse() async throws {
        for era in [PageKeyEra.snake, .camel] {
            let faults = try FaultPlan.parse(["huge-field:0.005", "invalid-utf8:0.05", "xml-invalid-chars:0.05", "formula-strings:0.05",
                                              "html-200:0.05", "malformed-json:0.05", "duplicate:0.1"])
            let world = World(config: SimulatorConfig(seed: 11, podcastCount: 10, productCount: 400,
                                                      churn: Churn(changed: 0.1, added: 0.05, removed: 0.05), pageKeyEra: era,
                                                      songCount: 10, movieCount: 10, appCount: 10, audiobookCount: 10,
                                                      ebookCount: 10, faults: faults))
            var written = 0
            for night in [1, 2, 5] {
                try await SimulatorHarness.with(world: world, night: night) { sim in
                    for pageNo in 1...5 {
                        let url = URL(string: "\(sim.server.baseURL.absoluteString)/api/products?page_no=\(pageNo)&items_per_page=100")!
                        guard let response = try? await sim.fetcher.get(url) else { continue }
                        written += try check(response.body, "\(era) night \(night) page \(pageNo)")
                    }
                }
            }
            #expect(written > 1_000, "the byte reader wrote \(written) rows itself (\(era))")
        }
    }
}
