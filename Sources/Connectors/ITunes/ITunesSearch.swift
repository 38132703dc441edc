import Catalog
import Crawl
import Foundation

/// iTunes Search: every term × country is one scope, paged by `offset`.
public struct ITunesSearchSettings: Sendable, Equatable {
    public var terms: [String]
    public var media: String
    public var entity: String?
    public var countries: [String]
    /// Rows per request, 1...200.
    public var pageSize: Int
    /// Stop a scope after this many rows even if pages keep coming.
    public var maxResults: Int

    public init(terms: [String], media: String = "podcast", entity: String? = nil,
                countries: [String] = ["us"], pageSize: Int = 200, maxResults: Int = 2_000) {
        self.terms = terms
        self.media = media
        self.entity = entity
        self.countries = countries
        self.pageSize = pageSize
        self.maxResults = maxResults
    }
}

extension ITunesSearchSettings: SourceKind {
    public static let name = "itunes-search"
    public static let settingKeys = ["terms", "media", "entity", "country", "countries", "pageSize", "maxResults"]
    static let media = ["movie", "podcast", "music", "musicVideo", "audiobook", "shortFilm", "tvShow", "software", "ebook", "all"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        let terms = reader.strings(fields, "terms", path: path) ?? []
        if terms.isEmpty {
            reader.issue(reader.value(fields, "terms") ?? reader.anchor(fields), reader.join(path, "terms"), "is required: a list of search terms")
        }
        var search = ITunesSearchSettings(terms: terms)
        if let media = reader.string(fields, "media", path: path) {
            if Self.media.contains(media) { search.media = media } else {
                reader.issue(reader.value(fields, "media"), reader.join(path, "media"),
                             SettingsReader.unknown("media", media, among: Self.media))
            }
        }
        search.entity = reader.string(fields, "entity", path: path)
        if let countries = reader.countries(fields, path: path) { search.countries = countries }
        if let n = reader.int(fields, "pageSize", path: path, range: 1...200) { search.pageSize = n }
        if let n = reader.int(fields, "maxResults", path: path, range: 1...1_000_000) { search.maxResults = n }
        return search
    }

    public var defaultBaseURL: URL? { ITunesSearch.itunesBaseURL }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        ITunesSearch.scopes(settings: self, baseURL: baseURL)
    }

    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        ITunesCanonical.item(entity, wire)
    }

    public var keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String] { ITunesSearch.keyRules }
}

/// iTunes Search API (`/search`) and the shared row mapping of Search and Lookup.
package enum ITunesSearch {
    /// The real iTunes Store services (Search, Lookup, genres, legacy charts).
    static let itunesBaseURL = URL(string: "https://itunes.apple.com")!

    static func scopes(settings: ITunesSearchSettings, baseURL: URL) -> [CrawlScope] {
        let pageSize = min(max(settings.pageSize, 1), 200)
        var scopes: [CrawlScope] = []
        for country in settings.countries {
            for term in settings.terms {
                var id = "search:media=\(settings.media)"
                if let entity = settings.entity { id += "&entity=\(entity)" }
                id += "&country=\(country)&term=\(term)"
                scopes.append(CrawlScope(
                    id: id,
                    pagination: .offset(pageSize: pageSize, maxItems: settings.maxResults),
                    pageURL: { index in
                        var query = [("term", term), ("media", settings.media), ("country", country)]
                        if let entity = settings.entity { query.append(("entity", entity)) }
                        query += [("limit", String(pageSize)), ("offset", String(index * pageSize))]
                        return URL.make(baseURL, path: "/search", query: query)
                    },
                    decode: { response throws(StoreSyncError) in try decodePage(response) }
                ))
            }
        }
        return scopes
    }

    /// Decodes a Search or Lookup response: `{"resultCount": n, "results": [...]}`.
    package static func decodePage(_ response: HTTPResponse) throws(StoreSyncError) -> DecodedPage<Record> {
        let document = try PageJSON.parse(response)
        guard let results = document["results"]?.arrayValue else {
            if let message = document["errorMessage"]?.stringValue {
                throw .malformedPage(url: response.url.absoluteString, reason: "the service answered an error: \(message)")
            }
            throw .malformedPage(url: response.url.absoluteString, reason: "expected an object with a 'results' array")
        }
        var records: [Record] = []
        records.reserveCapacity(results.count)
        var skipped: [String] = []
        for (position, row) in results.enumerated() {
            switch record(fromRow: row) {
            case .success(let record): records.append(record)
            case .failure(let reason): skipped.append("\(response.url.absoluteString) row \(position): \(reason)")
            }
        }
        return DecodedPage(items: records, rowCount: results.count, skipped: skipped)
    }

    enum RowError: Error, CustomStringConvertible {
        case notAnObject, noIdentity(String)
        var description: String {
            switch self {
            case .notAnObject: "row is not a JSON object"
            case .noIdentity(let what): "row has no \(what)"
            }
        }
    }

    /// Maps one result row to a record: its entity from `wrapperType`/`kind`
    /// (which decide the row's key set), its key from the matching id field.
    static func record(fromRow row: JSONValue) -> Result<Record, RowError> {
        guard case .object(let fields) = row else { return .failure(.notAnObject) }
        let (entity, idField) = classify(wrapperType: fields["wrapperType"]?.stringValue, kind: fields["kind"]?.stringValue)
        guard let id = fields[idField]?.integerText else { return .failure(.noIdentity(idField)) }
        guard case .object(let normalized) = Normalize.stripTrackingParameters(.object(fields)) else {
            return .failure(.notAnObject)
        }
        let key = entity == .episode ? episodeKey(normalized) ?? id : id
        return .success(Record(entity: entity, key: key, fields: normalized))
    }

    /// An episode's key: `<collectionId>|<episodeGuid>`, the key its podcast's
    /// feed gives the same item (``PodcastFeed``), so Lookup's row and the
    /// feed's item are one entity. Nil when the row lacks either (then its
    /// `trackId` keys it). The GUID is trimmed as the feed reader trims it.
    ///
    /// Releases before mapping 3 keyed every episode row by `trackId`; a store
    /// they wrote is re-keyed by this rule once (``SourceKind/keyRules``).
    static func episodeKey(_ fields: [String: JSONValue]) -> String? {
        guard let podcast = fields["collectionId"]?.integerText,
              let guid = fields["episodeGuid"]?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines), !guid.isEmpty
        else { return nil }
        return "\(podcast)|\(guid)"
    }

    /// ``SourceKind/keyRules`` of the kinds whose rows ``record(fromRow:)`` maps.
    static let keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String] = [
        .episode: { storedKey, wire in episodeKey(wire) ?? storedKey },
    ]

    static func classify(wrapperType: String?, kind: String?) -> (EntityKind, String) {
        switch wrapperType {
        case "collection": return (.album, "collectionId")
        case "artist": return (.artist, "artistId")
        case "audiobook": return (.audiobook, "collectionId")
        case "podcastEpisode": return (.episode, "trackId")
        default: break
        }
        switch kind {
        case "podcast": return (.podcast, "trackId")
        case "podcast-episode": return (.episode, "trackId")
        case "song": return (.song, "trackId")
        case "music-video": return (.musicVideo, "trackId")
        case "feature-movie", "tv-episode": return (.movie, "trackId")
        case "software", "mac-software": return (.app, "trackId")
        case "ebook": return (.ebook, "trackId")
        default: return (.record, "trackId")
        }
    }
}
