import Catalog

/// A response before it meets HTTP: the endpoints are pure functions of the
/// world, the night and the request, so they are tested without sockets and
/// the server stays a thin adapter.
struct SimResponse: Sendable, Equatable {
    var status: Int
    var contentType: String?
    /// A strong validator, where the real service sends one.
    var etag: String?
    /// An HTTP date, where the real service sends one.
    var lastModified: String?
    /// Other headers (`Retry-After`, `Cache-Control`), in order.
    var headers: [(String, String)] = []
    var body: [UInt8]

    init(status: Int, contentType: String? = nil, etag: String? = nil, lastModified: String? = nil,
         headers: [(String, String)] = [], body: [UInt8]) {
        self.status = status
        self.contentType = contentType
        self.etag = etag
        self.lastModified = lastModified
        self.headers = headers
        self.body = body
    }

    var text: String { String(decoding: body, as: UTF8.self) }

    static func == (a: SimResponse, b: SimResponse) -> Bool {
        a.status == b.status && a.contentType == b.contentType && a.etag == b.etag && a.lastModified == b.lastModified
            && a.headers.map { "\($0.0): \($0.1)" } == b.headers.map { "\($0.0): \($0.1)" } && a.body == b.body
    }

    /// The value of header `name` (case-insensitive), among the named fields and `headers`.
    func header(_ name: String) -> String? {
        switch name.lowercased() {
        case "content-type": return contentType
        case "etag": return etag
        case "last-modified": return lastModified
        default: return headers.first { $0.0.lowercased() == name.lowercased() }?.1
        }
    }
}

/// Per-request changes a list endpoint makes on the fault engine's say-so
/// (they hit one request, never the world).
struct PageEffects: Sendable, Equatable {
    /// Rows inserted above the list since the crawl started (`drift`).
    var shift = 0
    /// Repeat the last row of the previous page first (`duplicate`).
    var duplicatePrevious = false
    /// Serve no rows while still claiming a next page (`empty-page`).
    var empty = false

    static let none = PageEffects()
    var isNone: Bool { self == .none }
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

    /// The real Search and Lookup APIs label their JSON as JavaScript.
    static let searchContentType = "text/javascript; charset=utf-8"

    /// `GET /search?term=&media=&entity=&limit=&offset=&country=&explicit=`.
    ///
    /// An item matches when any whitespace-separated word of the term equals
    /// (case-insensitively) a word of its name, artist or genre; results keep
    /// index ("relevance") order, interleaved across kinds for `media=all`,
    /// and are sliced `[offset, offset + limit)` with `limit` clamped to 1…200.
    /// `resultCount` counts this page's rows only, like the real service. No
    /// ETag or Last-Modified: the real one sends none.
    static func search(world: World, night: Int, query: QueryParameters, baseURL: String,
                       effects: PageEffects = .none) -> SimResponse {
        guard let term = query["term"] else {
            return searchError(missing: ["term"])
        }
        guard let entities = World.searchEntities(media: query["media"], entity: query["entity"]) else {
            return searchError(missing: [query["media"].map { World.searchEntities(media: $0, entity: nil) == nil } == true
                ? "mediaType" : "entity"])
        }
        guard let country = Storefront.named(query["country"]) else { return searchError(missing: ["country"]) }
        guard let allowExplicit = parseExplicit(query["explicit"]) else { return searchError(missing: ["explicit"]) }
        let limit = min(max(query["limit"].flatMap { Int($0) } ?? 50, 1), 200)
        let offset = max(query["offset"].flatMap { Int($0) } ?? 0, 0)

        let hits = world.searchHits(entities: entities, words: World.searchWords(term), country: country,
                                    allowExplicit: allowExplicit, night: night)
        var rows: [[UInt8]] = []
        if offset < hits.count {
            // The duplicate fault repeats the row before this page first.
            let start = effects.duplicatePrevious && offset > 0 ? offset - 1 : offset
            for hit in hits[start..<min(offset + limit, hits.count)] {
                var row = world.row(of: hit, night: night, country: country)
                if hit.entity == "podcast", baseURL != World.defaultBaseURL {
                    row = country.localize(world.podcasts.row(hit.index, night: night, baseURL: baseURL))
                }
                rows.append(JSONWriter.bytes(.object(row), layout: .itunes))
            }
        }
        return SimResponse(status: 200, contentType: searchContentType, body: rawSearchBody(rows))
    }

    /// `Yes` (default) or `No`, as the service spells them; nil when invalid.
    static func parseExplicit(_ value: String?) -> Bool? {
        switch value?.lowercased() {
        case nil, "yes": true
        case "no": false
        default: nil
        }
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

    // MARK: iTunes Lookup

    /// Lookup serves at most this many ids per request; later ones are ignored.
    static let maxLookupIDs = 200

    /// `GET /lookup?id=1,2,3[&entity=song|album|podcastEpisode][&limit=][&country=]`.
    ///
    /// Each id found gives its row; with `entity`, a parent is followed by its
    /// children (an album's songs, a podcast's newest episodes, an artist's
    /// albums or songs), `limit` (1–200, default 50) counting children only.
    /// Unknown or removed ids are left out. Like Search: the raw layout, no
    /// validators, and the real service's day-long `Cache-Control`.
    static func lookup(world: World, night: Int, query: QueryParameters) -> SimResponse {
        guard let idList = query["id"], !idList.isEmpty else { return searchError(missing: ["id"]) }
        let ids = idList.split(separator: ",", omittingEmptySubsequences: true)
            .map { $0.trimmingCharacters(in: " ") }
        guard !ids.isEmpty, ids.allSatisfy({ Int($0).map { $0 > 0 } ?? false }) else {
            return searchError(missing: ["id"])
        }
        let entity = query["entity"]?.lowercased()
        guard entity == nil || ["song", "album", "podcastepisode", "musictrack"].contains(entity ?? "") else {
            return searchError(missing: ["entity"])
        }
        guard let country = Storefront.named(query["country"]) else { return searchError(missing: ["country"]) }
        let limit = min(max(query["limit"].flatMap { Int($0) } ?? 50, 1), 200)

        var rows: [JSONObject] = []
        for id in ids.prefix(maxLookupIDs) {
            rows += world.lookupRows(key: id, childEntity: entity, limit: limit, night: night)
                .map { country.localize($0) }
        }
        return SimResponse(status: 200, contentType: searchContentType, headers: [("Cache-Control", "max-age=86400")],
                           body: rawSearchBody(rows.map { JSONWriter.bytes(.object($0), layout: .itunes) }))
    }

    // MARK: Genres

    static let genresPath = "/WebObjects/MZStoreServices.woa/ws/genres"

    /// `GET /WebObjects/MZStoreServices.woa/ws/genres?id=26`: the tree under
    /// each id (comma-separated ids allowed; none = the four media roots);
    /// unknown ids are left out (`{}` when none is known).
    static func genres(world: World, night: Int, query: QueryParameters) -> SimResponse {
        let ids = query["id"].map { $0.split(separator: ",").map { $0.trimmingCharacters(in: " ") } }
            ?? GenreTrees.roots.map(\.id)
        var document = JSONObject()
        for id in ids {
            if let tree = world.genres.tree(id, night: night) { document.add(id, .object(tree)) }
        }
        return SimResponse(status: 200, contentType: "application/json; charset=utf-8",
                           body: JSONWriter.bytes(.object(document), layout: .compact))
    }

    // MARK: Charts

    /// `GET /{cc}/rss/{chart}/limit={n}/genre={id}/explicit={bool}/{json|xml}`
    /// (every `key=value` part optional, in any order): the legacy feeds.
    static func legacyChart(world: World, night: Int, segments: [String], conditions: Conditions) -> SimResponse {
        guard segments.count >= 4, segments[1] == "rss", let country = Storefront.named(segments[0]),
              let spec = ChartSpec.legacy(named: segments[2]),
              let format = segments.last.map({ $0.lowercased() }), format == "json" || format == "xml" else {
            return notFound()
        }
        var limit = 10
        var genre: String?
        var allowExplicit = true
        for part in segments[3..<(segments.count - 1)] {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            guard pair.count == 2 else { return notFound() }
            switch pair[0].lowercased() {
            case "limit": limit = min(max(Int(pair[1]) ?? 10, 1), ChartSpec.maxEntries)
            case "genre": genre = pair[1]
            case "explicit": allowExplicit = pair[1].lowercased() != "false"
            default: return notFound()
            }
        }
        let resource = "legacy|\(country.code)|\(spec.name)|\(limit)|\(genre ?? "")|\(allowExplicit)|\(format)"
        func body(_ n: Int, updated: SimDate?) -> [UInt8] {
            let items = world.chartItems(spec, genre: genre, country: country, allowExplicit: allowExplicit, limit: limit,
                                         night: n)
            let genreName = genre.flatMap { world.genres.name($0, night: n) }
            return format == "json"
                ? ChartWriter.legacyJSON(spec: spec, items: items, country: country.code, limit: limit, genre: genre,
                                         genreName: genreName, updated: updated)
                : ChartWriter.legacyXML(spec: spec, items: items, country: country.code, limit: limit, genre: genre,
                                        genreName: genreName, updated: updated)
        }
        let since = world.versionNight(resource: resource, night: night) { body($0, updated: nil) }
        let stamp = itunesStamp(since)
        return validated(body(night, updated: stamp),
                         contentType: format == "json" ? "application/json; charset=utf-8" : "application/atom+xml; charset=utf-8",
                         lastModified: stamp.adding(hours: 7), conditions: conditions)
    }

    /// The moment a night's iTunes feeds were built (03:00 Cupertino time).
    static func itunesStamp(_ night: Int) -> SimDate {
        SimDate(day: ITunesText.epoch.day + night - 1, seconds: 3 * 3600)
    }

    /// `GET /api/v2/{cc}/{media}/{chart}/{n}/{type}.json`: marketing-tools v2.
    /// `n` above 100 is a server error, as on the real service.
    static func v2Chart(world: World, night: Int, segments: [String], conditions: Conditions) -> SimResponse {
        // segments: api, v2, cc, media, chart, n, type.json
        guard segments.count == 7, let country = Storefront.named(segments[2]), segments[6].hasSuffix(".json"),
              let limit = Int(segments[5]), limit >= 1,
              let (spec, title, kind) = ChartSpec.v2(media: segments[3], chart: segments[4],
                                                     type: String(segments[6].dropLast(5))) else {
            return notFound()
        }
        guard limit <= ChartSpec.maxEntries else {
            var error = JSONObject()
            error.add("status", "500")
            error.add("title", "Internal Server Error")
            error.add("detail", "limit \(limit) is above \(ChartSpec.maxEntries)")
            var document = JSONObject()
            document.add("errors", .array([.object(error)]))
            return SimResponse(status: 500, contentType: "application/json; charset=utf-8",
                               body: JSONWriter.bytes(.object(document), layout: .compact))
        }
        let selfURL = World.rssBaseURL + "/" + segments.joined(separator: "/")
        let resource = "v2|" + segments.joined(separator: "/")
        func body(_ n: Int, updated: SimDate?) -> [UInt8] {
            let items = world.chartItems(spec, genre: nil, country: country, allowExplicit: true, limit: limit, night: n)
            return ChartWriter.v2(title: title, kind: kind, items: items, selfURL: selfURL, country: country.code,
                                  updated: updated)
        }
        let since = world.versionNight(resource: resource, night: night) { body($0, updated: nil) }
        let stamp = itunesStamp(since).adding(hours: 7)
        return validated(body(night, updated: stamp), contentType: "application/json; charset=utf-8",
                         lastModified: stamp, conditions: conditions)
    }

    // MARK: Podcast feeds

    /// `GET /feeds/{trackId}.xml`: the podcast's RSS feed, with validators;
    /// 404 for podcasts without a feed or not alive.
    ///
    /// A feed with the `feed-variants` fault `.movedPermanently` answers 301 to
    /// `/feeds/moved/{trackId}.xml`; that address (`atNewAddress`) serves the
    /// plain feed of any moved variant.
    static func podcastFeed(world: World, night: Int, file: String, conditions: Conditions,
                            atNewAddress: Bool = false) -> SimResponse {
        guard file.hasSuffix(".xml"), let i = world.podcasts.index(forKey: String(file.dropLast(4))),
              world.podcasts.episodeNumbers(i, night: night) != nil else {
            return notFound()
        }
        let variant = world.podcasts.faults.feedVariant(podcast: i)
        if atNewAddress, ![.newLocation, .newFeedURL, .movedPermanently].contains(variant) { return notFound() }
        if !atNewAddress, variant == .movedPermanently {
            var moved = SimResponse(status: 301, contentType: "text/plain", body: Array("Moved Permanently".utf8))
            moved.headers = [("Location", SimulatedFeed.newAddress(world.podcasts, i))]
            return moved
        }
        // Every change of a podcast shows in its feed (title, category, image or a
        // new item), so the feed last changed on its last change night or birth.
        let timeline = world.podcasts.timeline
        let since = timeline.history(i, night: night).lastAnyChange ?? timeline.birthNight(i)
        let stamp = itunesStamp(since).adding(hours: 7)
        guard let body = SimulatedFeed.body(world.podcasts, i, night: night, lastBuild: stamp, atNewAddress: atNewAddress) else {
            return notFound()
        }
        let contentType = !atNewAddress && variant == .latin1 ? SimulatedFeed.contentTypeWithoutCharset : SimulatedFeed.contentType
        return validated(body, contentType: contentType, lastModified: stamp, conditions: conditions)
    }

    static func notFound() -> SimResponse {
        SimResponse(status: 404, contentType: "text/plain; charset=utf-8", body: Array("Not Found".utf8))
    }

    // MARK: Marketplace

    static let jsonContentType = "application/json"

    /// `GET /api/products?page_no=&items_per_page=`: newest (highest id) first,
    /// page keys in the world's era, with a strong ETag and Last-Modified.
    static func productList(world: World, night: Int, query: QueryParameters, ifNoneMatch: String?) -> SimResponse {
        productList(world: world, night: night, query: query, conditions: Conditions(ifNoneMatch: ifNoneMatch))
    }

    static func productList(world: World, night: Int, query: QueryParameters, conditions: Conditions,
                            effects: PageEffects = .none) -> SimResponse {
        guard let pageNo = parsePositive(query["page_no"], default: 1) else {
            return marketError(400, "page_no must be a positive integer")
        }
        guard let requested = parsePositive(query["items_per_page"], default: 20) else {
            return marketError(400, "items_per_page must be a positive integer")
        }
        let perPage = min(requested, 100)
        guard effects.isNone else {
            // A faulted page is a one-off: it carries no validators.
            let body = productListBody(world: world, night: night, pageNo: pageNo, perPage: perPage, effects: effects)
            return SimResponse(status: 200, contentType: jsonContentType, body: body)
        }
        let since = world.versionNight(resource: "list|\(pageNo)|\(perPage)", night: night) {
            productListBody(world: world, night: $0, pageNo: pageNo, perPage: perPage, effects: .none)
        }
        return validated(productListBody(world: world, night: night, pageNo: pageNo, perPage: perPage, effects: .none),
                         contentType: jsonContentType, lastModified: marketStamp(world, since), conditions: conditions)
    }

    /// The moment the marketplace's night `night` began.
    static func marketStamp(_ world: World, _ night: Int) -> SimDate {
        SimDate(day: world.products.epoch.day + night - 1)
    }

    static func productListBody(world: World, night: Int, pageNo: Int, perPage: Int, effects: PageEffects) -> [UInt8] {
        let alive = world.aliveIndices(entity: "listing", night: night)
        // Drift: `shift` products (never served) sit above the real list.
        let total = alive.count + effects.shift
        let lastPage = max(1, (total + perPage - 1) / perPage)
        // Multiplying huge page numbers would overflow; such pages are past the end anyway.
        let (product, overflow) = (pageNo - 1).multipliedReportingOverflow(by: perPage)
        let offset = overflow ? Int.max : product
        var rows: [JSONOut] = []
        if !effects.empty, offset < total {
            // Positions in the drifted list; the first `shift` are the unseen new products.
            let first = effects.duplicatePrevious && offset > 0 ? offset - 1 : offset
            let end = min(offset + perPage, total)
            for position in first..<end where position >= effects.shift {
                // `alive` is ascending; newest first reads it from the end.
                let i = alive[alive.count - 1 - (position - effects.shift)]
                rows.append(.object(world.products.listRow(i, night: night)))
            }
        }
        var page = JSONObject()
        let hasNext = pageNo < lastPage || (effects.empty && pageNo <= lastPage)
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
        return JSONWriter.bytes(.object(page), layout: .compact)
    }

    /// `GET /api/products/{id}`: the detail of a product alive on `night`, else 404.
    static func productDetail(world: World, night: Int, id: String, ifNoneMatch: String?) -> SimResponse {
        productDetail(world: world, night: night, id: id, conditions: Conditions(ifNoneMatch: ifNoneMatch))
    }

    static func productDetail(world: World, night: Int, id: String, conditions: Conditions) -> SimResponse {
        guard let i = world.products.index(forKey: id), world.products.timeline.isAlive(i, night: night) else {
            return marketError(404, "product not found: \(id)")
        }
        // Every change moves `issued_at`, so the detail last changed on the product's
        // last change night (or its birth).
        let timeline = world.products.timeline
        let since = timeline.history(i, night: night).lastAnyChange ?? timeline.birthNight(i)
        return validated(JSONWriter.bytes(.object(world.products.detail(i, night: night)), layout: .compact),
                         contentType: jsonContentType, lastModified: marketStamp(world, since), conditions: conditions)
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

    // MARK: Routing

    /// What the simulator serves at each path, for `storesync simulate --help`.
    static let documentation: [(path: String, description: String)] = [
        ("GET /search?term=&media=&entity=&country=&explicit=&limit=&offset=",
         "iTunes Search, raw layout; media podcast|music|movie|software|audiobook|ebook|all; limit 1–200; no validators. "
            + "e.g. /search?term=love&media=music&entity=song&limit=50"),
        ("GET /lookup?id=ID[,ID…]&entity=&limit=&country=",
         "iTunes Lookup (≤ 200 ids); entity song|album|podcastEpisode lists children after each parent, limit counts "
            + "children only. e.g. /lookup?id=123456789&entity=podcastEpisode&limit=200"),
        ("GET \(genresPath)?id=26|34|33|36",
         "Genre trees keyed by id strings; rssUrls/chartUrls point at http://itunes.storesim.test (map *.storesim.test "
            + "to the simulator). e.g. \(genresPath)?id=26"),
        ("GET /{cc}/rss/{chart}/limit={n}/genre={id}/{json|xml}",
         "Legacy charts (toppodcasts, topsongs, topalbums, topfreeapplications, toppaidapplications, topmovies, …), "
            + "≤ 100 entries, ETag/Last-Modified. e.g. /us/rss/toppodcasts/limit=100/genre=1310/json"),
        ("GET /api/v2/{cc}/{media}/{chart}/{n}/{type}.json",
         "Marketing-tools RSS v2; n > 100 → HTTP 500; ETag/Last-Modified. e.g. /api/v2/us/music/most-played/100/albums.json"),
        ("GET /feeds/{trackId}.xml",
         "A podcast's RSS 2.0 feed (itunes: namespace), the episodes Lookup serves; ETag/Last-Modified. "
            + "Podcast rows' feedUrl is http://feeds.storesim.test/feeds/{trackId}.xml."),
        ("GET /api/products?page_no=&items_per_page=",
         "Marketplace list, newest first, snake or camel page keys; ETag/Last-Modified. e.g. /api/products?page_no=1&items_per_page=100"),
        ("GET /api/products/{id}", "Marketplace detail with images and vendor; ETag/Last-Modified. e.g. /api/products/7"),
        ("GET /healthChecker", "Marketplace health check: \"OK\"."),
        ("POST \(PushEndpoints.hubPath)",
         "A WebSub hub's publish endpoint: a form with hub.mode=publish and hub.url=FEED → 204; anything else 400. "
            + "Map *.storesim.test to the simulator: a feed's push.hub http://hub.storesim.test\(PushEndpoints.hubPath)"),
        ("GET \(PushEndpoints.podpingPath)?url=FEED&reason=update&medium=podcast",
         "A Podping-style notifier: needs an Authorization header (the publisher's token) → 200 \"Success!\"; 401 without."),
        ("GET /image/{thumb|pf}/…/{W}x{H}….{jpg|png}",
         "Artwork (mzstatic.com image service): a flat-colour JPEG or PNG of the size in the name, ETag/Last-Modified; "
            + "map *.mzstatic.com to the simulator. e.g. /image/thumb/Podcasts1/v4/ab/cd/ef/x/mza_1.jpg/3000x3000bb.jpg"),
    ]

    /// One request, routed: the pure part of the server.
    static func respond(world: World, night: Int, path: String, query rawQuery: String?, conditions: Conditions,
                        effects: PageEffects = .none) -> SimResponse {
        let query = QueryParameters(rawQuery)
        let segments = path.split(separator: "/", omittingEmptySubsequences: true).map { QueryParameters.decode($0) }
        switch segments.first {
        case "search" where segments.count == 1:
            return search(world: world, night: night, query: query, baseURL: World.defaultBaseURL, effects: effects)
        case "lookup" where segments.count == 1:
            return lookup(world: world, night: night, query: query)
        case "healthChecker" where segments.count == 1:
            return healthCheck()
        case "image" where segments.count >= 3:
            return ArtworkImages.respond(path: path, conditions: conditions)
        case "feeds" where segments.count == 2:
            return podcastFeed(world: world, night: night, file: segments[1], conditions: conditions)
        case "feeds" where segments.count == 3 && segments[1] == "moved":
            return podcastFeed(world: world, night: night, file: segments[2], conditions: conditions, atNewAddress: true)
        case "feeds2":
            // The dead feed host (`dead-feed-host`): nothing it serves ever works.
            return SimResponse(status: 503, contentType: "text/html", body: Array("<html><body>503 Service Unavailable</body></html>".utf8))
        case "api" where segments.count == 2 && segments[1] == "products":
            return productList(world: world, night: night, query: query, conditions: conditions, effects: effects)
        case "api" where segments.count == 3 && segments[1] == "products":
            return productDetail(world: world, night: night, id: segments[2], conditions: conditions)
        case "api" where segments.count >= 2 && segments[1] == "v2":
            return v2Chart(world: world, night: night, segments: segments, conditions: conditions)
        case "WebObjects" where "/" + segments.joined(separator: "/") == genresPath:
            return genres(world: world, night: night, query: query)
        case .some(let first) where first.count == 2 && segments.count >= 4 && segments[1] == "rss":
            return legacyChart(world: world, night: night, segments: segments, conditions: conditions)
        default:
            return notFound()
        }
    }

    /// The kind of page a path serves, for the faults that only make sense on some.
    enum PageKind { case productList, search, other }

    static func pageKind(path: String) -> PageKind {
        switch path {
        case "/api/products", "/api/products/": .productList
        case "/search", "/search/": .search
        default: .other
        }
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
