import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing

/// Item 7 of "Safe to leave in cron": a number JSON allows but Int64 and
/// Double cannot hold used to fail the whole page (a list scope stopped
/// there every night), and an id above 2^63 was rounded or its row skipped.
@Suite struct BadNumberTests {
    static let fiveThousandDigits = "9" + String(repeating: "0", count: 4_999)

    @Test func unrepresentableNumbersParseAndRoundTripExactly() throws {
        let text = "[1e400,-1e400,\(Self.fiveThousandDigits),18446744073709551616,-9223372036854775809,1.5,3,2e-400]"
        let value = try JSONParser.parse(text)
        let items = try #require(value.arrayValue)
        #expect(items[0] == .number("1e400"))
        #expect(items[1] == .number("-1e400"))
        #expect(items[2] == .number(Self.fiveThousandDigits))
        #expect(items[3] == .number("18446744073709551616"))
        #expect(items[4] == .number("-9223372036854775809"))
        #expect(items[5] == .double(1.5) && items[6] == .int(3))
        // Underflow rounds to zero, as every JSON reader does: finite, so an ordinary double.
        #expect(items[7] == .double(0))
        // What is stored is what the source wrote, digit for digit.
        #expect(CanonicalJSON.string(value) == "[1e400,-1e400,\(Self.fiveThousandDigits),18446744073709551616,-9223372036854775809,1.5,3,0]")
        #expect(items[3].integerText == "18446744073709551616" && items[3].intValue == nil)
        #expect(items[0].integerText == nil && items[0].doubleValue == nil)
        #expect(FieldType.of(items[3]) == .integer && FieldType.of(items[0]) == .real)
        // Grammar is still checked: these are not numbers.
        for bad in ["[1e]", "[-]", "[01]", "[1.]", "[.5]", "[1e+]"] {
            #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(bad) }
        }
    }

    @Test func aMarketplacePageWithBadValuesKeepsEveryRowAndExactIds() throws {
        let body = """
            {"page_no":1,"items_per_page":4,"has_next":false,"last_page":1,"pages":[
              {"id":18446744073709551616,"name":"huge id","price":1e400},
              {"id":2,"name":"long price","price":\(Self.fiveThousandDigits)},
              {"id":3,"name":"negative","price":-1e400},
              {"id":"000123456789012345678901234567890","name":"string id","price":1}
            ]}
            """
        let response = HTTPResponse(url: URL(string: "https://m.example/api/products?page_no=1")!, status: 200, body: Array(body.utf8))
        let page = try MarketplaceList.decodePage(response)
        #expect(page.skipped.isEmpty, "\(page.skipped)")
        #expect(page.items.map(\.key) == ["18446744073709551616", "2", "3", "123456789012345678901234567890"])
        #expect((try page.items[0].fields())["price"] == .number("1e400"))
        #expect((try page.items[1].fields())["price"] == .number(Self.fiveThousandDigits))
    }

    @Test func aProductDetailWithAHugeIdMatchesItsListing() throws {
        let response = HTTPResponse(url: URL(string: "https://m.example/api/products/18446744073709551616")!, status: 200,
                                    body: Array(#"{"id":18446744073709551616,"name":"x","price":1e400}"#.utf8))
        let page = try MarketplaceDetail.decodeDetail(response, id: "18446744073709551616")
        #expect(page.items.first?.key == "18446744073709551616")
    }

    @Test func anITunesRowWithAnIdBeyond2To63IsKeptExactly() throws {
        let body = #"{"resultCount":2,"results":[{"wrapperType":"track","kind":"podcast","trackId":99999999999999999999,"collectionId":99999999999999999999,"trackName":"a","trackPrice":1e400},{"wrapperType":"track","kind":"podcast","trackId":5,"collectionId":5,"trackName":"b"}]}"#
        let response = HTTPResponse(url: URL(string: "https://itunes.apple.com/search?term=x")!, status: 200, body: Array(body.utf8))
        let page = try ITunesSearch.decodePage(response)
        #expect(page.items.map(\.key) == ["99999999999999999999", "5"])
    }
}
