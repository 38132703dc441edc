import Catalog
import Crawl
import Foundation

/// Each selected podcast's own RSS feed (its `feedUrl`), one scope per podcast,
/// every `<item>` an `episode` record.
public struct PodcastFeedSettings: Sendable, Equatable {
    /// The source holding the podcasts (their `feedUrl`).
    public var from: String
    public var select: InputSelection
    /// Only these podcast keys (empty = every selected podcast).
    public var podcasts: [String]
    /// At most this many feeds per run, in key order.
    public var maxFeeds: Int?

    public init(from: String, select: InputSelection = .all, podcasts: [String] = [], maxFeeds: Int? = nil) {
        self.from = from
        self.select = select
        self.podcasts = podcasts
        self.maxFeeds = maxFeeds
    }
}

extension PodcastFeedSettings: SourceKind {
    public static let name = "podcast-feed"
    public static let settingKeys = ["from", "select", "podcasts", "maxFeeds"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        let from = reader.string(fields, "from", path: path, required: true) ?? ""
        var feeds = PodcastFeedSettings(from: from)
        if let select = reader.selection(fields, path: path) { feeds.select = select }
        if let podcasts = reader.strings(fields, "podcasts", path: path) { feeds.podcasts = podcasts }
        feeds.maxFeeds = reader.int(fields, "maxFeeds", path: path, range: 1...10_000_000)
        return feeds
    }

    public var inputRequest: InputRequest? { InputRequest(source: from, entities: [.podcast], selection: select) }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        PodcastFeed.scopes(settings: self, podcasts: inputs)
    }
}

/// Podcasts' own RSS feeds (`podcast-feed` sources): one single-page scope
/// `feed:<podcastKey>` per podcast, fetched from the podcast's `feedUrl`,
/// every `<item>` an `episode` record keyed `<podcastKey>|<guid>`.
///
/// Episode fields use the names of iTunes Lookup's episode rows where one
/// exists (`trackName`, `collectionName`, `collectionId`, `releaseDate`,
/// `trackTimeMillis`, `episodeUrl`, `description`), so episode exports read
/// feed episodes and Lookup episodes alike; the rest are the feed's own
/// (`guid`, `link`, `enclosureType`, `enclosureLength`, `itunesDuration`,
/// `itunesEpisode`, `itunesSeason`, `itunesEpisodeType`, `itunesExplicit`,
/// `itunesImage`), each only when the item has it.
package enum PodcastFeed {
    /// A feed is one document: one page that is always the last.
    private static let onePage = Pagination.pageNumber(firstPage: 1, pageSize: 1, maxPages: 1)

    /// The scopes for `podcasts` (records of the upstream source, in key
    /// order): those `settings.podcasts` names (all when empty), with a usable
    /// http(s) `feedUrl`, at most `settings.maxFeeds` of them. Podcasts without
    /// a feed are not scopes at all: there is nothing to crawl, and their
    /// missing episodes say nothing.
    static func scopes(settings: PodcastFeedSettings, podcasts: [Record]) -> [CrawlScope] {
        let wanted = Set(settings.podcasts)
        let limit = settings.maxFeeds.map { max(0, $0) } ?? Int.max
        var seen = Set<String>()
        var scopes: [CrawlScope] = []
        for podcast in podcasts where podcast.entity == .podcast {
            guard scopes.count < limit else { break }
            guard wanted.isEmpty || wanted.contains(podcast.key), seen.insert(podcast.key).inserted,
                  let fields = try? podcast.fields(), let url = feedURL(fields["feedUrl"]) else { continue }
            let key = podcast.key
            // The channel title is the podcast's name; the catalogue's name stands in when a feed has none.
            let name = (fields["collectionName"] ?? fields["trackName"])?.stringValue
            var scope = CrawlScope(
                id: "feed:\(key)", pagination: onePage, pageURL: { _ in url }, toleratesGone: true,
                decode: { response throws(StoreSyncError) in try decodeFeed(response, podcastKey: key, podcastName: name) }
            )
            scope.inputs = [podcast.identity]
            scopes.append(scope)
        }
        return scopes
    }

    /// An absolute http(s) URL with a host, or nil.
    static func feedURL(_ value: JSONValue?) -> URL? {
        guard let text = value?.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines),
              let url = URL(string: text), let scheme = url.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = url.host, !host.isEmpty else { return nil }
        return url
    }

    /// Decodes one podcast's feed (RSS 2.0, RSS 1.0 or Atom) into episode records.
    ///
    /// - Parameters:
    ///   - podcastKey: the podcast's record key; it prefixes every episode key
    ///     (a GUID is only unique within its feed) and, when numeric, is the
    ///     episodes' `collectionId`.
    ///   - podcastName: `collectionName` when the channel has no title.
    /// - Returns: a last page (`hasNext` false); a feed without items is a
    ///   valid empty page. Items that cannot be identified, or that repeat an
    ///   earlier item's identity, are skipped with the reason.
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` naming the URL,
    ///   with line and column for XML errors.
    package static func decodeFeed(_ response: HTTPResponse, podcastKey: String,
                                  podcastName: String? = nil) throws(StoreSyncError) -> DecodedPage<Record> {
        let url = response.url.absoluteString
        let document = try FeedDocument.parse(response.body, url: url)
        guard let root = document.root.map(FeedNode.init) else {
            throw .malformedPage(url: url, reason: "the XML document has no root element")
        }
        let channelTitle: String?
        let items: [FeedNode]
        let atom: Bool
        switch (root.namespace, root.name) {
        case (.core, "rss"):
            guard let channel = root.first(.core, "channel") else {
                throw .malformedPage(url: url, reason: "an <rss> document without a <channel>")
            }
            channelTitle = channel.first(.core, "title")?.trimmedText ?? channel.first(.itunes, "title")?.trimmedText
            items = channel.all(.core, "item")
            atom = false
        case (.rdf, "RDF"):
            // RSS 1.0: items are siblings of the channel, not its children.
            let channel = root.first(.core, "channel")
            channelTitle = channel?.first(.core, "title")?.trimmedText
            items = root.all(.core, "item") + (channel?.all(.core, "item") ?? [])
            atom = false
        case (.atom, "feed"):
            channelTitle = root.first(.atom, "title")?.trimmedText
            items = root.all(.atom, "entry")
            atom = true
        default:
            let shown = root.namespace == .core ? root.name : "\(root.name) (namespace \(root.namespace))"
            throw .malformedPage(url: url, reason: "not an RSS or Atom feed: the document element is <\(shown)>")
        }

        let podcastName = channelTitle ?? podcastName
        var records: [Record] = []
        var skipped: [String] = []
        var firstItemWithKey: [String: Int] = [:]
        for (position, item) in items.enumerated() {
            let episode = atom ? Episode(atomEntry: item) : Episode(rssItem: item)
            guard let identity = episode.identity else {
                skipped.append("\(url) item \(position + 1): no guid, enclosure URL, link, or title and date to identify it")
                continue
            }
            let key = "\(podcastKey)|\(identity)"
            if let earlier = firstItemWithKey[key] {
                // Feeds list newest first, so the first occurrence is the current one.
                skipped.append("\(url) item \(position + 1): same identity as item \(earlier + 1) (\(identity))")
                continue
            }
            firstItemWithKey[key] = position
            records.append(Record(entity: .episode, key: key,
                                  fields: episode.fields(podcastKey: podcastKey, podcastName: podcastName)))
        }
        return DecodedPage(items: records, rowCount: items.count, hasNext: false, skipped: skipped)
    }
}

/// One `<item>` or `<entry>` as read, before it becomes a record.
private struct Episode {
    var title: String?
    var guid: String?
    var link: String?
    var pubDate: String?
    var description: String?
    var enclosureURL: String?
    var enclosureType: String?
    var enclosureLength: String?
    var duration: String?
    var episodeNumber: String?
    var season: String?
    var episodeType: String?
    var explicit: String?
    var image: String?

    init(rssItem item: FeedNode) {
        title = item.first(.core, "title")?.trimmedText ?? item.first(.itunes, "title")?.trimmedText
        guid = item.first(.core, "guid")?.trimmedText
        // Atom-minded generators write <link href="…"/> or only <atom:link>.
        let linkNode = item.first(.core, "link")
        link = linkNode?.trimmedText ?? linkNode?.attribute("href").flatMap(Self.nonEmpty)
            ?? Self.atomLink(in: item, rel: "alternate")?.attribute("href").flatMap(Self.nonEmpty)
        pubDate = item.first(.core, "pubDate")?.trimmedText ?? item.first(.dublinCore, "date")?.trimmedText
            ?? item.first(.atom, "published")?.trimmedText ?? item.first(.atom, "updated")?.trimmedText
        description = item.first(.core, "description")?.trimmedText ?? item.first(.itunes, "summary")?.trimmedText
            ?? item.first(.content, "encoded")?.trimmedText
        if let enclosure = item.all(.core, "enclosure").first(where: { $0.attribute("url").flatMap(Self.nonEmpty) != nil }) {
            enclosureURL = enclosure.attribute("url").flatMap(Self.nonEmpty)
            enclosureType = enclosure.attribute("type").flatMap(Self.nonEmpty)
            enclosureLength = enclosure.attribute("length").flatMap(Self.nonEmpty)
        } else if let media = item.all(.media, "content").first(where: { $0.attribute("url").flatMap(Self.nonEmpty) != nil }) {
            enclosureURL = media.attribute("url").flatMap(Self.nonEmpty)
            enclosureType = media.attribute("type").flatMap(Self.nonEmpty)
            enclosureLength = media.attribute("fileSize").flatMap(Self.nonEmpty)
        } else if let enclosure = Self.atomLink(in: item, rel: "enclosure") {
            setEnclosure(fromAtomLink: enclosure)
        }
        readITunes(item)
    }

    init(atomEntry entry: FeedNode) {
        title = entry.first(.atom, "title")?.trimmedText ?? entry.first(.itunes, "title")?.trimmedText
        guid = entry.first(.atom, "id")?.trimmedText
        link = Self.atomLink(in: entry, rel: "alternate")?.attribute("href").flatMap(Self.nonEmpty)
        pubDate = entry.first(.atom, "published")?.trimmedText ?? entry.first(.atom, "updated")?.trimmedText
            ?? entry.first(.atom, "issued")?.trimmedText
        description = entry.first(.atom, "summary")?.trimmedText ?? entry.first(.itunes, "summary")?.trimmedText
            ?? entry.first(.atom, "content")?.trimmedText
        if let enclosure = Self.atomLink(in: entry, rel: "enclosure") { setEnclosure(fromAtomLink: enclosure) }
        readITunes(entry)
    }

    private mutating func setEnclosure(fromAtomLink link: FeedNode) {
        enclosureURL = link.attribute("href").flatMap(Self.nonEmpty)
        enclosureType = link.attribute("type").flatMap(Self.nonEmpty)
        enclosureLength = link.attribute("length").flatMap(Self.nonEmpty)
    }

    private mutating func readITunes(_ node: FeedNode) {
        duration = node.first(.itunes, "duration")?.trimmedText
        episodeNumber = node.first(.itunes, "episode")?.trimmedText
        season = node.first(.itunes, "season")?.trimmedText
        episodeType = node.first(.itunes, "episodeType")?.trimmedText
        explicit = node.first(.itunes, "explicit")?.trimmedText
        let image = node.first(.itunes, "image")
        self.image = image?.attribute("href").flatMap(Self.nonEmpty) ?? image?.trimmedText
    }

    /// An Atom link (`<link>` in an Atom entry, `<atom:link>` in an RSS item)
    /// with `rel` (a missing `rel` means "alternate").
    private static func atomLink(in node: FeedNode, rel: String) -> FeedNode? {
        node.all(.atom, "link").first { ($0.attribute("rel") ?? "alternate") == rel && $0.attribute("href") != nil }
    }

    private static func nonEmpty(_ s: String) -> String? {
        let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
        return t.isEmpty ? nil : t
    }

    /// What identifies the episode within its feed. The GUID is the feed's own
    /// identity for the item. Feeds without GUIDs are common; podcast apps then
    /// go by the enclosure URL, which names the audio file itself. The link
    /// comes after it because many feeds point every item's link at the show's
    /// home page. Title plus date is the last resort: it changes when either is
    /// edited, but still tells items apart where nothing else does.
    var identity: String? {
        if let guid { return guid }
        if let enclosureURL { return enclosureURL }
        if let link { return link }
        if let title, let pubDate { return "\(title)|\(pubDate)" }
        return nil
    }

    func fields(podcastKey: String, podcastName: String?) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        func put(_ name: String, _ value: String?) {
            if let value { fields[name] = .string(value) }
        }
        /// Whole numbers as numbers; anything else kept as the feed wrote it.
        func putNumber(_ name: String, _ value: String?) {
            guard let value else { return }
            if let n = Int64(value) { fields[name] = .int(n) } else { fields[name] = .string(value) }
        }
        put("trackName", title)
        put("collectionName", podcastName)
        if let id = Int64(podcastKey) { fields["collectionId"] = .int(id) } else { fields["collectionId"] = .string(podcastKey) }
        // An unreadable date is kept as written: losing it would be worse than an odd format.
        put("releaseDate", pubDate.map { FeedDate.iso8601UTC($0) ?? $0 })
        if let millis = duration.flatMap(FeedDate.durationMillis) { fields["trackTimeMillis"] = .int(Int64(millis)) }
        put("itunesDuration", duration)
        put("episodeUrl", enclosureURL)
        put("enclosureType", enclosureType)
        putNumber("enclosureLength", enclosureLength)
        put("description", description)
        put("guid", guid)
        put("link", link)
        putNumber("itunesEpisode", episodeNumber)
        putNumber("itunesSeason", season)
        put("itunesEpisodeType", episodeType)
        put("itunesExplicit", explicit)
        put("itunesImage", image)
        return fields
    }
}

extension PodcastFeedSettings {
    /// A feed item's fields (Lookup's names where it has one, the feed's own
    /// otherwise; see ``PodcastFeed``) in the episode's canonical names.
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        guard entity == .episode else { return CanonicalRecord(entity: entity, fields: [:]) }
        var c = CanonicalFields(wire)
        c.text("name", from: "trackName")
        c.text("podcast", from: "collectionName")
        c.text("podcast_id", from: "collectionId")
        c.date("release_date", from: "releaseDate")
        c.integer("duration_ms", from: "trackTimeMillis")
        c.text("enclosure_url", from: "episodeUrl")
        c.text("description", from: "description")
        c.text("guid", from: "guid")
        c.integer("enclosure_length", from: "enclosureLength")
        c.text("enclosure_type", from: "enclosureType")
        c.text("link", from: "link")
        c.integer("episode_number", from: "itunesEpisode")
        c.integer("season", from: "itunesSeason")
        // Feeds write `Full` as often as `full`: the vocabulary is lower case.
        c.set("episode_type", c.first(["itunesEpisodeType"])?.stringValue.map { .string($0.lowercased()) })
        c.explicit("explicit", from: "itunesExplicit")
        c.text("image_url", from: "itunesImage")
        return CanonicalRecord(entity: .episode, fields: c.fields)
    }
}
