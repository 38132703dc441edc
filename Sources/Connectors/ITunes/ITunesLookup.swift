import Catalog
import Crawl
import Foundation

/// iTunes Lookup (`/lookup?id=`): detail for records of an earlier source.
public struct ITunesLookupSettings: Sendable, Equatable {
    /// The source whose records are looked up.
    public var from: String
    /// Only upstream records of these entities (empty = all).
    public var entities: [EntityKind]
    public var select: InputSelection
    /// `entity=` of the lookup, e.g. `podcastEpisode` for a podcast's episodes
    /// (then each looked-up id is its own scope, so missing episodes can be removed).
    public var lookupEntity: String?
    /// Ids per request, 1...200.
    public var batchSize: Int
    /// Children per looked-up id (`limit=`), with `lookupEntity`.
    public var limit: Int
    public var country: String?

    public init(from: String, entities: [EntityKind] = [], select: InputSelection = .newOrChanged,
                lookupEntity: String? = nil, batchSize: Int = 200, limit: Int = 200, country: String? = nil) {
        self.from = from
        self.entities = entities
        self.select = select
        self.lookupEntity = lookupEntity
        self.batchSize = batchSize
        self.limit = limit
        self.country = country
    }
}

extension ITunesLookupSettings: SourceKind {
    public static let name = "itunes-lookup"
    public static let settingKeys = ["from", "entities", "select", "lookupEntity", "batchSize", "limit", "country"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        let from = reader.string(fields, "from", path: path, required: true) ?? ""
        var lookup = ITunesLookupSettings(from: from)
        if let entities = reader.entityKinds(fields, "entities", path: path) { lookup.entities = entities }
        if let select = reader.selection(fields, path: path) { lookup.select = select }
        lookup.lookupEntity = reader.string(fields, "lookupEntity", path: path)
        if let n = reader.int(fields, "batchSize", path: path, range: 1...200) { lookup.batchSize = n }
        if let n = reader.int(fields, "limit", path: path, range: 1...200) { lookup.limit = n }
        lookup.country = reader.countries(fields, path: path)?.first
        return lookup
    }

    public var defaultBaseURL: URL? { ITunesSearch.itunesBaseURL }

    public var inputRequest: InputRequest? { InputRequest(source: from, entities: entities, selection: select) }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        ITunesLookup.scopes(settings: self, baseURL: baseURL, items: inputs)
    }

    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        ITunesCanonical.item(entity, wire)
    }

    public var keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String] { ITunesSearch.keyRules }

    /// Without `lookupEntity` a Lookup answers for the upstream's own items: it
    /// describes what another source lists. With it, every record is a child
    /// of a looked-up item (the item's own row is dropped, see
    /// ``ITunesLookup/decodeChildren(_:parentKey:)``), and the sweeping
    /// per-item scope lists those children: an episode gone from it is gone.
    public func role(of entity: EntityKind) -> RecordRole {
        lookupEntity == nil ? .describes : .lists
    }
}

/// iTunes Lookup (`/lookup?id=`): detail for the records of an earlier source.
///
/// Two shapes, chosen by `lookupEntity`:
/// - without it, the items' ids in batches of up to `batchSize`
///   (`/lookup?id=1,2,3`), one non-sweeping scope per batch: an answer for a
///   chosen subset says nothing about records outside it;
/// - with it (e.g. `podcastEpisode`), one sweeping scope per item
///   (`/lookup?id=…&entity=…&limit=…`) holding the item's children only, so
///   an episode gone from a podcast is removed. A child list that fills
///   `limit` may have been cut short, so such a scope ends capped and
///   removes nothing.
package enum ITunesLookup {
    static func scopes(settings: ITunesLookupSettings, baseURL: URL, items: [Record]) -> [CrawlScope] {
        // Only numeric ids are Lookup ids, and one bad id makes the service
        // reject the whole request; each id is asked for once.
        var seen = Set<String>()
        let keys = items.map(\.key).filter { ITunesCharts.isDigits($0) && seen.insert($0).inserted }
        // Every upstream record a key stands for (one id may be a podcast and its chart entry's item).
        let identities = Dictionary(grouping: items.map(\.identity), by: \.key)
        let country = settings.country?.lowercased()

        if let entity = settings.lookupEntity {
            let limit = min(max(settings.limit, 1), 200)
            return keys.map { key in
                var query = [("id", key), ("entity", entity), ("limit", String(limit))]
                if let country { query.append(("country", country)) }
                let url = URL.make(baseURL, path: "/lookup", query: query)
                var scope = CrawlScope(
                    id: "lookup:\(entity):\(key)",
                    // The walker calls a page "short" (complete) below pageSize and
                    // stops at maxItems: a full page of children ends `.capped`.
                    pagination: .offset(pageSize: limit, maxItems: limit),
                    pageURL: { _ in url },
                    sweeps: true,
                    // "The latest `limit` episodes" is what was asked for.
                    capIsIntended: true,
                    decode: { response throws(StoreSyncError) in try decodeChildren(response, parentKey: key) }
                )
                scope.inputs = identities[key] ?? []
                return scope
            }
        }

        let batchSize = min(max(settings.batchSize, 1), 200)
        return stride(from: 0, to: keys.count, by: batchSize).map { start in
            let batch = Array(keys[start..<min(start + batchSize, keys.count)])
            var query = [("id", batch.joined(separator: ","))]
            if let country { query.append(("country", country)) }
            let url = URL.make(baseURL, path: "/lookup", query: query)
            var scope = CrawlScope(
                id: batchScopeID(batch),
                pagination: SinglePage.pagination,
                pageURL: { _ in url },
                sweeps: false,
                decode: { response throws(StoreSyncError) in
                    var page = try ITunesSearch.decodePage(response)
                    page.hasNext = false
                    return page
                }
            )
            scope.inputs = batch.flatMap { identities[$0] ?? [] }
            return scope
        }
    }

    /// `lookup:<first>-<last>:<count>:<hash>`: readable in logs, and a function
    /// of the batch's content only, so a resumed run finds its checkpoints.
    static func batchScopeID(_ keys: [String]) -> String {
        let hash = ContentHash(bytes: Array(keys.joined(separator: ",").utf8)).description.prefix(8)
        return "lookup:\(keys.first ?? "")-\(keys.last ?? ""):\(keys.count):\(hash)"
    }

    /// Decodes a Lookup with `entity=`: the rows of the looked-up item's
    /// children, without the item's own row (it leads the answer and belongs
    /// to the upstream source). `rowCount` counts child rows only, since
    /// `limit` counts children (`limit=200` gives 201 rows).
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` as ``ITunesSearch/decodePage(_:)`` does.
    package static func decodeChildren(_ response: HTTPResponse, parentKey: String) throws(StoreSyncError)
        -> DecodedPage<Record> {
        var page = try ITunesSearch.decodePage(response)
        // The parent is the row keyed by the looked-up id (a podcast's trackId, an
        // album's collectionId); children are keyed by their own ids.
        let parents = page.items.filter { $0.key == parentKey }.count
        page.items.removeAll { $0.key == parentKey }
        page.rowCount -= parents
        page.hasNext = nil
        return page
    }
}
