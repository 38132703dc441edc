import Catalog
import Crawl
import Foundation

/// One independently crawlable slice of a source (a search term in a
/// country, the marketplace list). Removals are decided per scope.
public struct CrawlScope: Sendable {
    /// Stable across runs: checkpoints and record membership are filed under it.
    public var id: String
    public var pagination: Pagination
    /// The URL of the zero-based page `index`.
    public var pageURL: @Sendable (Int) -> URL
    public var decode: @Sendable (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record>

    public init(
        id: String, pagination: Pagination, pageURL: @escaping @Sendable (Int) -> URL,
        decode: @escaping @Sendable (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record>
    ) {
        self.id = id
        self.pagination = pagination
        self.pageURL = pageURL
        self.decode = decode
    }
}

/// Turns a source of a job into scopes; the only place that knows an API's URLs.
public enum Connectors {
    public static func scopes(for source: SourceSpec, baseURL: URL) -> [CrawlScope] {
        switch source.settings {
        case .itunesSearch(let settings):
            ITunesSearch.scopes(settings: settings, baseURL: baseURL)
        case .marketplace(let settings):
            MarketplaceList.scopes(settings: settings, baseURL: baseURL)
        }
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
public enum Normalize {
    /// Removes per-request tracking parameters (`uo`, `at`, `ct`) from URL strings
    /// anywhere in the value, so the same record fetched twice hashes the same.
    public static func stripTrackingParameters(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let s) where s.hasPrefix("http") && s.contains("?"):
            return .string(stripTracking(fromURL: s))
        case .array(let elements):
            return .array(elements.map(stripTrackingParameters))
        case .object(let members):
            return .object(members.mapValues(stripTrackingParameters))
        default:
            return value
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
