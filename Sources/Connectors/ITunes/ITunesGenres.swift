import Catalog
import Crawl
import Foundation

/// iTunes genre tree (`/WebObjects/MZStoreServices.woa/ws/genres?id=`): one
/// scope per root, every genre of the tree a `genre` record.
public struct ITunesGenresSettings: Sendable, Equatable {
    /// Root genre ids: 26 Podcasts, 34 Music, 33 Movies, 36 Apps.
    public var roots: [Int]
    public var country: String?

    public init(roots: [Int] = [26], country: String? = nil) {
        self.roots = roots
        self.country = country
    }
}

extension ITunesGenresSettings: SourceKind {
    public static let name = "itunes-genres"
    public static let settingKeys = ["roots", "country"]
    static let roots = [26: "Podcasts", 34: "Music", 33: "Movies", 36: "Apps"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        var genres = ITunesGenresSettings()
        if let roots = reader.ints(fields, "roots", path: path, range: 1...Int(Int32.max)) {
            for (n, root) in roots.enumerated() where !Self.roots.keys.contains(root) {
                reader.issue(reader.value(fields, "roots"), "\(reader.join(path, "roots"))[\(n)]",
                             "\(root) is not a genre root; roots are "
                             + Self.roots.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
            }
            genres.roots = roots
        }
        genres.country = reader.countries(fields, path: path)?.first
        return genres
    }

    public var defaultBaseURL: URL? { ITunesSearch.itunesBaseURL }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        ITunesGenres.scopes(settings: self, baseURL: baseURL)
    }

    /// A genre node's `name`, `parentId` (empty for a root) and `url`; its
    /// `rssUrls` and `chartUrls` stay in the payload.
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        guard entity == .genre else { return CanonicalRecord(entity: entity, fields: [:]) }
        var c = CanonicalFields(wire)
        c.text("name", from: "name")
        c.text("parent_id", from: "parentId")
        c.text("url", from: "url")
        return CanonicalRecord(entity: .genre, fields: c.fields)
    }
}

/// The iTunes genres service (`/WebObjects/MZStoreServices.woa/ws/genres?id=`):
/// one single-page scope per root genre, every node of its tree a `genre` record.
///
/// The taxonomy is crawled, never assumed: Apple renumbered the podcast genres
/// in 2019, so chart sources take their genre ids from these records.
package enum ITunesGenres {
    /// The service's path under the iTunes base URL.
    package static let path = "/WebObjects/MZStoreServices.woa/ws/genres"

    /// One scope per root: `genres:<root>` (`genres:<root>:<cc>` with a country).
    static func scopes(settings: ITunesGenresSettings, baseURL: URL) -> [CrawlScope] {
        let country = settings.country?.lowercased()
        var seen = Set<Int>()
        return settings.roots.filter { seen.insert($0).inserted }.map { root in
            let rootID = String(root)
            var query = [("id", rootID)]
            if let country { query.append(("cc", country)) }
            let url = URL.make(baseURL, path: path, query: query)
            return CrawlScope(
                id: "genres:\(rootID)" + (country.map { ":\($0)" } ?? ""),
                pagination: SinglePage.pagination,
                pageURL: { _ in url },
                // A tree that loses a genre really lost it: the scope sweeps.
                sweeps: true,
                decode: { response throws(StoreSyncError) in try decodePage(response, root: rootID) }
            )
        }
    }

    /// Decodes a genres answer: an object keyed by id strings, each node holding
    /// `name`, `id`, `url`, `rssUrls`, `chartUrls` and (except leaves) `subgenres`.
    ///
    /// Each node becomes a `genre` record keyed by its id with every member the
    /// service sent except `subgenres` (so a parent's record does not change
    /// when a child is added), `id` as a string, and `parentId` (`""` for a
    /// root). Tracking parameters are stripped from every URL.
    ///
    /// - Parameter root: the requested root id. When given, the answer must hold
    ///   it: the service answers `{}` for ids it does not know, and a tree that
    ///   vanished wholesale is far likelier a bad answer than a real deletion.
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` naming the URL and
    ///   the JSON path of the problem.
    package static func decodePage(_ response: HTTPResponse, root: String? = nil) throws(StoreSyncError) -> DecodedPage<Record> {
        let url = response.url.absoluteString
        guard case .object(let document) = try PageJSON.parse(response) else {
            throw .malformedPage(url: url, reason: "at $: expected an object of genre trees keyed by id")
        }
        var tops: [(member: String, node: JSONValue)]
        if let root {
            guard let node = document[root] ?? document.first(where: { $0.value["id"]?.stringValue == root })?.value,
                  node != .null else {
                throw .malformedPage(url: url, reason: "at $: no genre tree for id \(root) (members: \(document.keys.sorted().prefix(5).joined(separator: ", ")))")
            }
            tops = [(root, node)]
        } else {
            tops = document.map { ($0.key, $0.value) }.sorted { idOrder($0.member, $1.member) }
        }

        var records: [Record] = []
        var skipped: [String] = []
        var seenIDs = Set<String>()
        var rowCount = 0
        // Depth-first with an explicit stack: the tree's depth comes from the wire.
        var stack: [(member: String, node: JSONValue, parentID: String, path: String)] =
            tops.reversed().map { ($0.member, $0.node, "", "$[\"\($0.member)\"]") }
        while let (member, node, parentID, path) = stack.popLast() {
            rowCount += 1
            guard case .object(var fields) = node else {
                if root != nil, parentID.isEmpty {
                    throw .malformedPage(url: url, reason: "at \(path): expected a genre object, got \(jsonTypeName(node))")
                }
                skipped.append("\(url) at \(path): not a genre object")
                continue
            }
            // The member's own `id` is what the service says about the node; the
            // key it is filed under is the fallback (some answers send numbers).
            guard let id = fields["id"]?.stringValue.map(trimmed).flatMap(nonEmpty) ?? nonEmpty(trimmed(member)) else {
                skipped.append("\(url) at \(path): genre without an id")
                continue
            }
            let children = fields.removeValue(forKey: "subgenres")
            if seenIDs.insert(id).inserted {
                fields["id"] = .string(id)
                fields["parentId"] = .string(parentID)
                guard case .object(let normalized) = Normalize.stripTrackingParameters(.object(fields)) else { continue }
                records.append(Record(entity: .genre, key: id, fields: normalized))
            } else {
                skipped.append("\(url) at \(path): genre \(id) listed twice; the first is kept")
                continue
            }
            switch children {
            case .object(let members)?:
                for (key, child) in members.sorted(by: { idOrder($0.key, $1.key) }).reversed() {
                    stack.append((key, child, id, "\(path).subgenres[\"\(key)\"]"))
                }
            case .array(let elements)?:
                // Not seen from the real service, but a list of nodes says the same thing.
                for (n, child) in elements.enumerated().reversed() {
                    stack.append(("", child, id, "\(path).subgenres[\(n)]"))
                }
            case nil, .null?:
                break
            case let other?:
                skipped.append("\(url) at \(path).subgenres: expected an object, got \(jsonTypeName(other))")
            }
        }
        return DecodedPage(items: records, rowCount: rowCount, hasNext: false, skipped: skipped)
    }

    /// Numeric ids in numeric order, then anything else as text: a stable record order.
    static func idOrder(_ a: String, _ b: String) -> Bool {
        switch (Int64(a), Int64(b)) {
        case let (x?, y?): x < y
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): a < b
        }
    }

    private static func trimmed(_ s: String) -> String { s.trimmingCharacters(in: .whitespacesAndNewlines) }
    private static func nonEmpty(_ s: String) -> String? { s.isEmpty ? nil : s }
}

/// Scopes that are one request: the walker must end them `.complete` (so they
/// may sweep) and never ask for a second page.
enum SinglePage {
    /// `PageWalker` checks `maxPages` only before fetching a page, and a decoded
    /// page with `hasNext == false` ends the walk as complete; so one page is
    /// fetched and the cap never turns a finished scope into a capped one.
    static let pagination = Pagination.pageNumber(firstPage: 1, pageSize: 1, maxPages: 1)
}

/// The JSON type of a value, for error messages.
func jsonTypeName(_ value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool: "a boolean"
    case .int, .double, .number: "a number"
    case .string: "a string"
    case .array: "an array"
    case .object: "an object"
    }
}
