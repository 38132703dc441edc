import Catalog
import Crawl
import Foundation

/// Marketplace product list, paged by `page_no` until `has_next` is false.
public struct MarketplaceSettings: Sendable, Equatable {
    public var itemsPerPage: Int
    public var maxPages: Int
    /// Also fetch `/api/products/{id}` for products new or changed in this run
    /// (stored as `listing-detail` records).
    public var detail: Bool

    public init(itemsPerPage: Int = 100, maxPages: Int = 10_000, detail: Bool = false) {
        self.itemsPerPage = itemsPerPage
        self.maxPages = maxPages
        self.detail = detail
    }
}

extension MarketplaceSettings: SourceKind {
    public static let name = "marketplace"
    public static let settingKeys = ["itemsPerPage", "maxPages", "detail"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        var market = MarketplaceSettings()
        if let n = reader.int(fields, "itemsPerPage", path: path, range: 1...1000) { market.itemsPerPage = n }
        if let n = reader.int(fields, "maxPages", path: path, range: 1...1_000_000) { market.maxPages = n }
        if let flag = reader.bool(fields, "detail", path: path) { market.detail = flag }
        return market
    }

    public var defaultBaseURL: URL? { URL(string: "https://openmarket.yagom-academy.kr")! }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        MarketplaceList.scopes(settings: self, baseURL: baseURL)
    }

    public var hasFollowUps: Bool { detail }

    public func followUpScopes(baseURL: URL, newOrChanged: [Record]) -> [CrawlScope] {
        guard detail else { return [] }
        return MarketplaceDetail.scopes(baseURL: baseURL, listings: newOrChanged.filter { $0.entity == .listing })
    }
}

/// The marketplace product list (`/api/products?page_no=&items_per_page=`).
package enum MarketplaceList {
    static func scopes(settings: MarketplaceSettings, baseURL: URL) -> [CrawlScope] {
        let perPage = max(settings.itemsPerPage, 1)
        return [CrawlScope(
            id: "products",
            pagination: .pageNumber(firstPage: 1, pageSize: perPage, maxPages: settings.maxPages),
            pageURL: { index in
                URL.make(baseURL, path: "/api/products", query: [
                    ("page_no", String(index + 1)), ("items_per_page", String(perPage)),
                ])
            },
            decode: { response throws(StoreSyncError) in try decodePage(response) }
        )]
    }

    /// Decodes a list page in either key era: the server renamed its page keys
    /// from snake_case to camelCase in late 2022; product keys stayed snake_case.
    package static func decodePage(_ response: HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record> {
        let document = try PageJSON.parse(response)
        guard let rows = document["pages"]?.arrayValue else {
            throw .malformedPage(url: response.url.absoluteString, reason: "expected an object with a 'pages' array")
        }
        let hasNext = (document["has_next"] ?? document["hasNext"])?.boolValue
        var records: [Record] = []
        var skipped: [String] = []
        for (position, row) in rows.enumerated() {
            guard case .object(let fields) = row else {
                skipped.append("\(response.url.absoluteString) row \(position): not a JSON object")
                continue
            }
            guard let id = fields["id"]?.integerText else {
                skipped.append("\(response.url.absoluteString) row \(position): no product id")
                continue
            }
            records.append(Record(entity: .listing, key: id, fields: normalize(fields)))
        }
        var page = DecodedPage(items: records, rowCount: rows.count, hasNext: hasNext, skipped: skipped)
        page.lastPage = (document["last_page"] ?? document["lastPage"])?.intValue.flatMap { Int(exactly: $0) }
        return page
    }

    /// Dates arrive as `2022-01-04T00:00:00.00`, `2021-12-29 00:00:00.000` or
    /// `2022-11-04T00:00:00` depending on the era; one canonical form keeps an
    /// era switch from looking like a change to every product.
    static func normalize(_ fields: [String: JSONValue]) -> [String: JSONValue] {
        var out = fields
        for key in ["created_at", "issued_at"] {
            if case .string(let s)? = fields[key] { out[key] = .string(canonicalTimestamp(s)) }
        }
        return out
    }

    /// `YYYY-MM-DD[T ]hh:mm:ss[.fff]` → `YYYY-MM-DDThh:mm:ss[.fff]`, trailing zero fractions dropped.
    static func canonicalTimestamp(_ s: String) -> String {
        var chars = Array(s)
        guard chars.count >= 19, chars[4] == "-", chars[7] == "-", chars[13] == ":", chars[16] == ":" else { return s }
        if chars[10] == " " { chars[10] = "T" }
        if chars.count > 19, chars[19] == "." {
            var end = chars.count
            while end > 20, chars[end - 1] == "0" { end -= 1 }
            if end == 20 { end = 19 }
            chars = Array(chars[..<end])
        }
        return String(chars)
    }
}
