import Catalog
import Crawl
import Foundation

/// Where a scope's pages come from.
public enum PageOrigin: Sendable {
    /// The URL of the zero-based page `index`.
    case http(@Sendable (Int) -> URL)
    /// Pages read from disk (records files), handed over as if they were HTTP
    /// bodies so the same decode/apply/checkpoint path serves them.
    case local(@Sendable (Int) throws(StoreSyncError) -> HTTPResponse)
}

/// One independently crawlable slice of a source (a search term in a
/// country, the marketplace list, one podcast's feed). Removals are decided per scope.
public struct CrawlScope: Sendable {
    /// Stable across runs: checkpoints and record membership are filed under it.
    public var id: String
    public var pagination: Pagination
    public var origin: PageOrigin
    public var decode: @Sendable (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record>
    /// Whether a complete crawl may remove records the scope no longer lists.
    /// False for scopes that fetch a chosen subset (lookup batches, details),
    /// where "not in this answer" says nothing about existence.
    public var sweeps: Bool
    /// The scope asks for the newest N on purpose (a podcast's latest
    /// episodes): reaching N is its normal end, not a warning. It still
    /// removes nothing, since what lies past N was not seen.
    public var capIsIntended: Bool
    /// A 404/410 is a normal answer for this scope (a podcast's feed taken
    /// down, a product deleted between list and detail): the scope ends
    /// "gone", without an error and without removing what it stored before.
    public var toleratesGone: Bool
    /// A decoder that passes over rows the store already holds byte for byte
    /// (see ``RowMemory``), where the format delimits rows cheaply; `decode`
    /// remains the full decoder, used when there is nothing to remember.
    public var decodeRemembering: (@Sendable (HTTPResponse, any RowMemory) throws(StoreSyncError) -> DecodedPage<Record>)?
    /// The upstream records this scope works for (a lookup batch's items, a
    /// product whose detail it fetches). A scope that does not end complete
    /// leaves them pending, and the next run works for them again.
    public var inputs: [RecordIdentity] = []
    /// Whether other requests of the run may ask for this scope's pages
    /// again, so the fetcher keeps them for `cacheTTLSeconds`. False for a
    /// list read page by page once a night (the marketplace's): kept, its
    /// pages were 64 MB of memory no request ever read.
    public var sharesResponses = true

    public init(
        id: String, pagination: Pagination, pageURL: @escaping @Sendable (Int) -> URL,
        sweeps: Bool = true, capIsIntended: Bool = false, toleratesGone: Bool = false,
        decode: @escaping @Sendable (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record>
    ) {
        self.init(id: id, pagination: pagination, origin: .http(pageURL), sweeps: sweeps, capIsIntended: capIsIntended,
                  toleratesGone: toleratesGone, decode: decode)
    }

    public init(
        id: String, pagination: Pagination, origin: PageOrigin, sweeps: Bool = true, capIsIntended: Bool = false,
        toleratesGone: Bool = false,
        decode: @escaping @Sendable (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record>
    ) {
        self.id = id
        self.pagination = pagination
        self.origin = origin
        self.sweeps = sweeps
        self.capIsIntended = capIsIntended
        self.toleratesGone = toleratesGone
        self.decode = decode
    }

    /// The URL of page `index`, for HTTP scopes.
    public func pageURL(_ index: Int) -> URL? {
        if case .http(let url) = origin { return url(index) }
        return nil
    }
}

extension URL {
    /// `base` + `path` + query items, percent-encoded once.
    static func make(_ base: URL, path: String, query: [(String, String)]) -> URL {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false) ?? URLComponents()
        let basePath = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = basePath + path
        components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) }
        // URLComponents leaves '+' alone, which servers read as a space.
        components.percentEncodedQuery = components.percentEncodedQuery?.replacingOccurrences(of: "+", with: "%2B")
        return components.url ?? base
    }
}

/// Parsing shared by the JSON connectors.
enum PageJSON {
    static func parse(_ response: HTTPResponse) throws(StoreSyncError) -> JSONValue {
        do {
            return try JSONParser.parse(response.body)
        } catch {
            let type = response.header("content-type").map { " (Content-Type \($0))" } ?? ""
            throw .malformedPage(url: response.url.absoluteString, reason: "not valid JSON\(type): \(error)")
        }
    }
}

/// Field normalisation that keeps content hashes free of request noise.
package enum Normalize {
    /// Removes per-request tracking parameters (`uo`, `at`, `ct`) from URL strings
    /// anywhere in the value, so the same record fetched twice hashes the same.
    package static func stripTrackingParameters(_ value: JSONValue) -> JSONValue {
        strippedOfTracking(value) ?? value
    }

    /// `value` with its URLs' tracking parameters removed, or nil when it has
    /// none: a record is copied only where it changes. Every record of every
    /// iTunes page goes through here, and most hold no URL with a query; the
    /// bytes are searched directly (`String.contains` of a string is
    /// Foundation's, which took 3% of a PostgreSQL worker's profile alone, and
    /// rebuilding every object 7%).
    static func strippedOfTracking(_ value: JSONValue) -> JSONValue? {
        switch value {
        case .string(let s):
            guard s.utf8.starts(with: "http".utf8), s.utf8.contains(UInt8(ascii: "?")) else { return nil }
            let stripped = stripTracking(fromURL: s)
            return stripped == s ? nil : .string(stripped)
        case .array(let elements):
            var changed: [JSONValue]?
            for (index, element) in elements.enumerated() {
                guard let stripped = strippedOfTracking(element) else { continue }
                if changed == nil { changed = elements }
                changed![index] = stripped
            }
            return changed.map(JSONValue.array)
        case .object(let members):
            var changed: [String: JSONValue]?
            for (key, member) in members {
                guard let stripped = strippedOfTracking(member) else { continue }
                if changed == nil { changed = members }
                changed![key] = stripped
            }
            return changed.map(JSONValue.object)
        default:
            return nil
        }
    }

    static let trackingParameters: Set<String> = ["uo", "at", "ct"]

    static func stripTracking(fromURL s: String) -> String {
        guard let q = s.firstIndex(of: "?") else { return s }
        let base = s[..<q]
        var query = s[s.index(after: q)...]
        var fragment = ""
        if let hash = query.firstIndex(of: "#") {
            fragment = String(query[hash...])
            query = query[..<hash]
        }
        let kept = query.split(separator: "&", omittingEmptySubsequences: true).filter { pair in
            let name = pair.split(separator: "=", maxSplits: 1).first.map(String.init) ?? ""
            return !trackingParameters.contains(name)
        }
        return kept.isEmpty ? String(base) + fragment : String(base) + "?" + kept.joined(separator: "&") + fragment
    }
}
