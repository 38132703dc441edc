import Catalog

/// A response before it meets HTTP: the endpoints are pure functions of the
/// world, the night and the request, so they are tested without sockets and
/// the server stays a thin adapter.
struct SimResponse: Sendable, Equatable {
    var status: Int
    var contentType: String?
    /// A strong validator, where the real service sends one.
    var etag: String?
    var body: [UInt8]

    init(status: Int, contentType: String? = nil, etag: String? = nil, body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.etag = etag
        self.body = body
    }

    var text: String { String(decoding: body, as: UTF8.self) }
}

/// A form-encoded query string (`a=1&b=two+words&c=%C3%A9`), decoded like a
/// web server does: `+` is a space, `%XX` a byte, the first occurrence wins.
struct QueryParameters: Sendable {
    private(set) var pairs: [(name: String, value: String)] = []

    init(_ rawQuery: String?) {
        guard let rawQuery, !rawQuery.isEmpty else { return }
        for part in rawQuery.split(separator: "&", omittingEmptySubsequences: true) {
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = Self.decode(pieces[0])
            let value = pieces.count > 1 ? Self.decode(pieces[1]) : ""
            pairs.append((name, value))
        }
    }

    init(_ pairs: [(String, String)]) {
        self.pairs = pairs.map { (name: $0.0, value: $0.1) }
    }

    subscript(name: String) -> String? {
        pairs.first { $0.name == name }?.value
    }

    static func decode(_ text: Substring) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = Array(text.utf8)[...]
        while let byte = iterator.popFirst() {
            switch byte {
            case UInt8(ascii: "+"):
                bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                if iterator.count >= 2, let high = hexValue(iterator[iterator.startIndex]),
                   let low = hexValue(iterator[iterator.startIndex + 1]) {
                    bytes.append(high << 4 | low)
                    iterator.removeFirst(2)
                } else {
                    // A stray % is kept literally, as lenient servers do.
                    bytes.append(byte)
                }
            default:
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

enum Endpoints {
    // MARK: iTunes Search

    /// The real Search API labels its JSON as JavaScript.
    static let searchContentType = "text/javascript; charset=utf-8"

    /// `GET /search?term=&media=&entity=&limit=&offset=&country=`.
    ///
    /// Podcasts match when any whitespace-separated word of the term equals
    /// (case-insensitively) a word of their trackName, artistName or
    /// primaryGenreName; results keep index ("relevance") order and are sliced
    /// `[offset, offset + limit)`. `resultCount` counts this page's rows only,
    /// like the real service. No ETag or Last-Modified: the real one sends none.
    static func search(world: World, night: Int, query: QueryParameters, baseURL: String) -> SimResponse {
        guard let term = query["term"] else {
            return searchError(missing: ["term"])
        }
        let limit = min(max(query["limit"].flatMap { Int($0) } ?? 50, 1), 200)
        let offset = max(query["offset"].flatMap { Int($0) } ?? 0, 0)
        let media = (query["media"] ?? "all").lowercased()
        let entity = query["entity"]?.lowercased()
        // Only podcasts exist in this slice of the world; other media answer
        // an empty result set, in the same layout.
        let servesPodcasts = (media == "podcast" || media == "all") && (entity == nil || entity == "podcast")

        var rows: [[UInt8]] = []
        if servesPodcasts {
            let matches = world.podcastsMatching(World.searchWords(term), night: night)
            if offset < matches.count {
                for i in matches[offset..<min(offset + limit, matches.count)] {
                    rows.append(JSONWriter.bytes(.object(world.podcasts.row(i, night: night, baseURL: baseURL)),
                                                 layout: .itunes))
                }
            }
        }
        return SimResponse(status: 200, contentType: searchContentType, body: rawSearchBody(rows))
    }

    /// The raw Search layout: three newlines, then one result object per line.
    static func rawSearchBody(_ rows: [[UInt8]]) -> [UInt8] {
        var body = Array("\n\n\n{\n \"resultCount\":\(rows.count),\n \"results\": [".utf8)
        for (n, row) in rows.enumerated() {
            body.append(contentsOf: n == 0 ? [0x0A] : [UInt8(ascii: ","), 0x0A])
            body.append(contentsOf: row)
        }
        // The JSON text ends with a newline and, like the start, three more.
        body.append(contentsOf: "]\n}\n\n\n\n".utf8)
        return body
    }

    static func searchError(missing keys: [String]) -> SimResponse {
        var parameters = JSONObject()
        parameters.add("output", "json")
        parameters.add("callback", "A javascript function to handle your search results")
        parameters.add("country", "ISO-2A country code")
        parameters.add("limit", "The number of search results to return")
        parameters.add("term", "A search string")
        parameters.add("lang", "ISO-2A language code")
        var error = JSONObject()
        error.add("errorMessage", "Invalid value(s) for key(s): [\(keys.joined(separator: ", "))]")
        error.add("queryParameters", .object(parameters))
        return SimResponse(status: 400, contentType: searchContentType,
                           body: JSONWriter.bytes(.object(error), layout: .itunes))
    }

    // MARK: Marketplace

    static let jsonContentType = "application/json"

    /// `GET /api/products?page_no=&items_per_page=`: newest (highest id) first,
    /// page keys in the world's era, with a strong ETag.
    static func productList(world: World, night: Int, query: QueryParameters, ifNoneMatch: String?) -> SimResponse {
        guard let pageNo = parsePositive(query["page_no"], default: 1) else {
            return marketError(400, "page_no must be a positive integer")
        }
        guard let requested = parsePositive(query["items_per_page"], default: 20) else {
            return marketError(400, "items_per_page must be a positive integer")
        }
        let perPage = min(requested, 100)
        let alive = world.aliveIndices(entity: "listing", night: night)
        let total = alive.count
        let lastPage = max(1, (total + perPage - 1) / perPage)
        // Multiplying huge page numbers would overflow; such pages are past the end anyway.
        let (product, overflow) = (pageNo - 1).multipliedReportingOverflow(by: perPage)
        let offset = overflow ? Int.max : product
        var rows: [JSONOut] = []
        if offset < total {
            // `alive` is ascending; newest first reads it from the end.
            let end = total - offset
            let start = max(0, end - perPage)
            for i in alive[start..<end].reversed() {
                rows.append(.object(world.products.listRow(i, night: night)))
            }
        }
        var page = JSONObject()
        let hasNext = pageNo < lastPage
        let hasPrev = pageNo > 1
        switch world.pageKeyEra {
        case .snake:
            page.add("page_no", pageNo)
            page.add("items_per_page", perPage)
            page.add("total_count", total)
            page.add("offset", offset)
            page.add("limit", perPage)
            page.add("pages", .array(rows))
            page.add("last_page", lastPage)
            page.add("has_next", .bool(hasNext))
            page.add("has_prev", .bool(hasPrev))
        case .camel:
            page.add("pageNo", pageNo)
            page.add("itemsPerPage", perPage)
            page.add("totalCount", total)
            page.add("offset", offset)
            page.add("limit", perPage)
            page.add("lastPage", lastPage)
            page.add("hasNext", .bool(hasNext))
            page.add("hasPrev", .bool(hasPrev))
            page.add("pages", .array(rows))
        }
        return withETag(JSONWriter.bytes(.object(page), layout: .compact), ifNoneMatch: ifNoneMatch)
    }

    /// `GET /api/products/{id}`: the detail of a product alive on `night`, else 404.
    static func productDetail(world: World, night: Int, id: String, ifNoneMatch: String?) -> SimResponse {
        guard let i = world.products.index(forKey: id), world.products.timeline.isAlive(i, night: night) else {
            return marketError(404, "product not found: \(id)")
        }
        return withETag(JSONWriter.bytes(.object(world.products.detail(i, night: night)), layout: .compact),
                        ifNoneMatch: ifNoneMatch)
    }

    /// `GET /healthChecker`.
    static func healthCheck() -> SimResponse {
        SimResponse(status: 200, contentType: jsonContentType, body: Array("\"OK\"".utf8))
    }

    static func marketError(_ status: Int, _ message: String) -> SimResponse {
        var error = JSONObject()
        error.add("code", status)
        error.add("message", message)
        return SimResponse(status: status, contentType: jsonContentType,
                           body: JSONWriter.bytes(.object(error), layout: .compact))
    }

    /// nil for present but invalid values (not an integer, or below 1).
    private static func parsePositive(_ text: String?, default value: Int) -> Int? {
        guard let text else { return value }
        guard let number = Int(text), number >= 1 else { return nil }
        return number
    }

    /// A strong ETag over the body bytes; a matching `If-None-Match` gets 304.
    static func withETag(_ body: [UInt8], ifNoneMatch: String?) -> SimResponse {
        let etag = "\"\(ContentHash(bytes: body).description)\""
        if let ifNoneMatch, etagMatches(etag, ifNoneMatch) {
            return SimResponse(status: 304, etag: etag, body: [])
        }
        return SimResponse(status: 200, contentType: jsonContentType, etag: etag, body: body)
    }

    /// `If-None-Match` uses the weak comparison (RFC 9110 §13.1.2): `W/` is ignored; `*` matches anything.
    static func etagMatches(_ etag: String, _ header: String) -> Bool {
        for candidate in header.split(separator: ",") {
            var tag = candidate.trimmingCharacters(in: " \t")
            if tag == "*" { return true }
            if tag.hasPrefix("W/") { tag.removeFirst(2) }
            if tag == etag { return true }
        }
        return false
    }
}

extension Substring {
    fileprivate func trimmingCharacters(in set: String) -> String {
        var s = self
        while let first = s.first, set.contains(first) { s.removeFirst() }
        while let last = s.last, set.contains(last) { s.removeLast() }
        return String(s)
    }
}
