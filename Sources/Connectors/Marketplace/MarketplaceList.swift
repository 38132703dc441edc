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
        var scope = CrawlScope(
            id: "products",
            pagination: .pageNumber(firstPage: 1, pageSize: perPage, maxPages: settings.maxPages),
            pageURL: { index in
                URL.make(baseURL, path: "/api/products", query: [
                    ("page_no", String(index + 1)), ("items_per_page", String(perPage)),
                ])
            },
            decode: { response throws(StoreSyncError) in try decodePage(response) }
        )
        // A page number names one page of one night's list: nothing asks for it twice.
        scope.sharesResponses = false
        return [scope]
    }

    /// Decodes a list page in either key era: the server renamed its page keys
    /// from snake_case to camelCase in late 2022; product keys stayed snake_case.
    ///
    /// Each row is read once, from its bytes: written straight to its canonical
    /// payload, and its listing's canonical fields written from that
    /// (``listingRecord(_:scratch:)``). A row (or page) that is not plainly what
    /// that reads goes through ``decodeParsed(_:)``, which gives every record the
    /// same bytes and reports what is wrong the same way: a page of 100 rows
    /// parsed into dictionaries, mapped and encoded again was most of an HTTP
    /// crawl's CPU beside the store's writes.
    package static func decodePage(_ response: HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record> {
        if let page = decodedFromBytes(response) { return page }
        return try decodeParsed(response)
    }

    /// The page read from its bytes, or nil for ``decodeParsed(_:)`` to read.
    package static func decodedFromBytes(_ response: HTTPResponse) -> DecodedPage<Record>? {
        response.body.withUnsafeBufferPointer { buffer -> DecodedPage<Record>? in
            guard let (rows, others) = JSONParser.rows(ofPageIn: buffer, rowsMember: "pages") else { return nil }
            var scratch = CanonicalScratch()
            var records: [Record] = []
            records.reserveCapacity(rows.count)
            var skipped: [String] = []
            for (position, range) in rows.enumerated() {
                let row = UnsafeBufferPointer(rebasing: buffer[range])
                if let record = listingRecord(row, scratch: &scratch) {
                    records.append(record)
                    continue
                }
                // Malformed: the page's own parse reports where.
                guard let value = try? JSONParser.parse(row) else { return nil }
                switch listingRecord(value, position: position, url: response.url) {
                case .success(let record): records.append(record)
                case .failure(let skip): skipped.append(skip.reason)
                }
            }
            var page = DecodedPage(items: records, rowCount: rows.count, hasNext: (others["has_next"] ?? others["hasNext"])?.boolValue,
                                   skipped: skipped)
            page.lastPage = (others["last_page"] ?? others["lastPage"])?.intValue.flatMap { Int(exactly: $0) }
            return page
        }
    }

    /// The page parsed whole into values: what ``decodePage(_:)`` does with a
    /// page its byte reader steps aside from, and the reference it matches.
    package static func decodeParsed(_ response: HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record> {
        let document = try PageJSON.parse(response)
        guard let rows = document["pages"]?.arrayValue else {
            throw .malformedPage(url: response.url.absoluteString, reason: "expected an object with a 'pages' array")
        }
        let hasNext = (document["has_next"] ?? document["hasNext"])?.boolValue
        var records: [Record] = []
        var skipped: [String] = []
        for (position, row) in rows.enumerated() {
            switch listingRecord(row, position: position, url: response.url) {
            case .success(let record): records.append(record)
            case .failure(let skip): skipped.append(skip.reason)
            }
        }
        var page = DecodedPage(items: records, rowCount: rows.count, hasNext: hasNext, skipped: skipped)
        page.lastPage = (document["last_page"] ?? document["lastPage"])?.intValue.flatMap { Int(exactly: $0) }
        return page
    }

    struct SkippedRow: Error { var reason: String }

    /// The record of a parsed row, or why the row is skipped.
    static func listingRecord(_ row: JSONValue, position: Int, url: URL) -> Result<Record, SkippedRow> {
        guard case .object(let fields) = row else {
            return .failure(SkippedRow(reason: "\(url.absoluteString) row \(position): not a JSON object"))
        }
        guard let id = fields["id"]?.integerText else {
            return .failure(SkippedRow(reason: "\(url.absoluteString) row \(position): no product id"))
        }
        return .success(Record(entity: .listing, key: id, fields: normalize(fields)))
    }

    /// The wire members the listing's mapping reads, by name.
    private static let mappedMembers: [[UInt8]] = MarketplaceCanonical.wireNames.map { Array($0.utf8) }
    /// Each mapped member's position in ``mappedMembers``, for the mapping's lookups by name.
    private static let mappedPositions = Dictionary(uniqueKeysWithValues: MarketplaceCanonical.wireNames.enumerated().map { ($1, $0) })

    /// A row written straight to its canonical payload and its listing's
    /// canonical fields, or nil where the row needs its parse: the canonical
    /// writer steps aside, no usable `id`, a nested seller or images (a
    /// detail's shape), a mapped member that is not plain.
    static func listingRecord(_ row: UnsafeBufferPointer<UInt8>, scratch: inout CanonicalScratch) -> Record? {
        guard var canonical = JSONParser.canonicalObject(row, keyField: "id", scratch: &scratch),
              let key = canonical.key?.integerText else { return nil }
        var wire = [JSONValue?](repeating: nil, count: mappedMembers.count)
        // Dates whose text `normalize` rewrites: the member's value range, its name and the new text.
        var rewrites: [(value: Range<Int>, name: String, text: String)] = []
        var plain = true
        canonical.bytes.withUnsafeBufferPointer { bytes in
            JSONParser.members(ofObjectIn: bytes) { name, nameEscaped, value, _ in
                guard plain, !nameEscaped,
                      let member = mappedMembers.firstIndex(where: { bytes[name].elementsEqual($0) }) else { return }
                let wireName = MarketplaceCanonical.wireNames[member]
                guard wireName != "vendors", wireName != "images",
                      let parsed = try? JSONParser.parse(UnsafeBufferPointer(rebasing: bytes[value])) else {
                    plain = false
                    return
                }
                wire[member] = parsed
                if normalizedDates.contains(wireName), case .string(let text) = parsed {
                    let normal = canonicalTimestamp(text)
                    if normal != text {
                        rewrites.append((value, wireName, normal))
                        wire[member] = .string(normal)
                    }
                }
            }
        }
        guard plain else { return nil }
        for rewrite in rewrites.reversed() {
            canonical.bytes.replaceSubrange(rewrite.value, with: CanonicalJSON.encode(.string(rewrite.text)))
            if let at = canonical.shape.names.firstIndex(of: rewrite.name) {
                canonical.shape.types[at] = FieldType.of(.string(rewrite.text))
            }
        }
        let fields = MarketplaceCanonical.listingFields { name in
            mappedPositions[name].flatMap { wire[$0] }
        }
        return Record(entity: .listing, key: key, canonical: canonical,
                      entityFields: EntityFields(entity: .listing, bytes: CanonicalJSON.encodeMembers(fields),
                                                 names: fields.map(\.name)))
    }

    static let normalizedDates: Set<String> = ["created_at", "issued_at"]

    /// Dates arrive as `2022-01-04T00:00:00.00`, `2021-12-29 00:00:00.000` or
    /// `2022-11-04T00:00:00` depending on the era; one canonical form keeps an
    /// era switch from looking like a change to every product.
    static func normalize(_ fields: [String: JSONValue]) -> [String: JSONValue] {
        var out = fields
        for key in normalizedDates {
            if case .string(let s)? = fields[key] { out[key] = .string(canonicalTimestamp(s)) }
        }
        return out
    }

    /// `YYYY-MM-DD[T ]hh:mm:ss[.fff]` → `YYYY-MM-DDThh:mm:ss[.fff]`, trailing zero fractions dropped.
    static func canonicalTimestamp(_ s: String) -> String {
        var bytes = Array(s.utf8)
        // The rule counts characters: in printable ASCII a byte is one.
        guard bytes.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return canonicalTimestamp(characters: s) }
        guard bytes.count >= 19, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[13] == UInt8(ascii: ":"),
              bytes[16] == UInt8(ascii: ":") else { return s }
        var changed = false
        if bytes[10] == UInt8(ascii: " ") {
            bytes[10] = UInt8(ascii: "T")
            changed = true
        }
        if bytes.count > 19, bytes[19] == UInt8(ascii: ".") {
            var end = bytes.count
            while end > 20, bytes[end - 1] == UInt8(ascii: "0") { end -= 1 }
            if end == 20 { end = 19 }
            if end < bytes.count {
                bytes.removeSubrange(end...)
                changed = true
            }
        }
        return changed ? String(decoding: bytes, as: UTF8.self) : s
    }

    static func canonicalTimestamp(characters s: String) -> String {
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
