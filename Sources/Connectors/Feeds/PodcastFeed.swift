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

    /// The upstream's podcasts, then this source's own podcast records (a
    /// feed's recorded move: see ``PodcastFeed/scopes(settings:podcasts:)``).
    public var inputRequest: InputRequest? {
        InputRequest(source: from, entities: [.podcast], selection: select, ownEntities: [.podcast],
                     fields: ["feedUrl", PodcastFeed.listedFeedURLField, "collectionName", "trackName"])
    }

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
    /// order, then this source's own podcast records): those
    /// `settings.podcasts` names (all when empty), with a usable http(s)
    /// `feedUrl`, at most `settings.maxFeeds` of them. Podcasts without a feed
    /// are not scopes at all: there is nothing to crawl, and their missing
    /// episodes say nothing.
    ///
    /// A feed that moved is fetched from where it moved to: this source's own
    /// podcast record says where (`feedUrl`) and which upstream address it
    /// moved from (`listedFeedUrl`). The move holds while the upstream still
    /// lists that old address; once the upstream lists another one (the
    /// directory learnt of the move, or of a newer one), the upstream's wins.
    static func scopes(settings: PodcastFeedSettings, podcasts: [Record]) -> [CrawlScope] {
        let wanted = Set(settings.podcasts)
        let limit = settings.maxFeeds.map { max(0, $0) } ?? Int.max
        var moves: [String: (from: String, to: URL)] = [:]
        var upstream: [Record] = []
        for podcast in podcasts where podcast.entity == .podcast {
            guard let fields = try? podcast.fields() else { continue }
            if let listed = fields[Self.listedFeedURLField]?.stringValue {
                if let to = feedURL(fields["feedUrl"]) { moves[podcast.key] = (listed, to) }
            } else {
                upstream.append(podcast)
            }
        }
        var seen = Set<String>()
        var scopes: [CrawlScope] = []
        for podcast in upstream {
            guard scopes.count < limit else { break }
            guard wanted.isEmpty || wanted.contains(podcast.key), seen.insert(podcast.key).inserted,
                  let fields = try? podcast.fields(), let listed = feedURL(fields["feedUrl"]) else { continue }
            let key = podcast.key
            var url = listed
            if let move = moves[key], move.from == listed.absoluteString { url = move.to }
            // The channel title is the podcast's name; the catalogue's name stands in when a feed has none.
            let name = (fields["collectionName"] ?? fields["trackName"])?.stringValue
            let fetchURL = url
            var scope = CrawlScope(
                id: "feed:\(key)", pagination: onePage, pageURL: { _ in fetchURL }, toleratesGone: true,
                decode: { response throws(StoreSyncError) in
                    try decodeFeed(response, podcastKey: key, podcastName: name, listedFeedURL: listed.absoluteString)
                }
            )
            scope.inputs = [podcast.identity]
            scopes.append(scope)
        }
        return scopes
    }

    /// The wire field of this source's podcast record naming the upstream
    /// feed address the scope was built from (see ``scopes(settings:podcasts:)``).
    static let listedFeedURLField = "listedFeedUrl"

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
    ///   - listedFeedURL: the feed address the upstream lists (the scope's own
    ///     unless the feed moved earlier); recorded with the podcast record.
    package static func decodeFeed(_ response: HTTPResponse, podcastKey: String, podcastName: String? = nil,
                                  listedFeedURL: String? = nil) throws(StoreSyncError) -> DecodedPage<Record> {
        let url = response.url.absoluteString
        let document = try FeedDocument.parse(response.body, url: url, contentType: response.header("content-type"))
        guard let root = document.root.map(FeedNode.init) else {
            throw .malformedPage(url: url, reason: "the XML document has no root element")
        }
        let channelTitle: String?
        let items: [FeedNode]
        let atom: Bool
        var channelNode: FeedNode?
        switch (root.namespace, root.name) {
        case (.core, "rss"):
            atom = false
            if let channel = root.first(.core, "channel") {
                channelTitle = channel.first(.core, "title")?.trimmedText ?? channel.first(.itunes, "title")?.trimmedText
                items = channel.all(.core, "item")
                channelNode = channel
            } else {
                // A stub left behind after a move, or a broken generator: what it
                // holds is read (its move, items written straight into <rss>).
                channelTitle = nil
                items = root.all(.core, "item")
            }
        case (.rdf, "RDF"):
            // RSS 1.0: items are siblings of the channel, not its children.
            let channel = root.first(.core, "channel")
            channelTitle = channel?.first(.core, "title")?.trimmedText
            items = root.all(.core, "item") + (channel?.all(.core, "item") ?? [])
            atom = false
            channelNode = channel
        case (.atom, "feed"):
            channelTitle = root.first(.atom, "title")?.trimmedText
            items = root.all(.atom, "entry")
            atom = true
            channelNode = root
        default:
            let shown = root.namespace == .core ? root.name : "\(root.name) (namespace \(root.namespace))"
            // A recovered tree of something else (an HTML error page) is no feed; the XML error says more.
            let xml = document.recoveredErrors.first.map { "; not well-formed XML at \($0)" } ?? ""
            throw .malformedPage(url: url, reason: "not an RSS or Atom feed: the document element is <\(shown)>\(xml)")
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
        // The podcast as its own feed describes it, and where the feed lives now.
        let announced = announcedMove(root: root, channel: channelNode)
        let moved = announced ?? ((response.redirect?.permanent ?? false) ? url : nil)
        let current = moved ?? response.redirect?.from.absoluteString ?? url
        // Without a channel the feed describes nothing but where it lives now.
        if channelNode != nil || moved != nil {
            var podcast = channelNode.map { Channel($0, atom: atom).fields } ?? [:]
            if let podcastName { podcast["collectionName"] = .string(podcastName) }
            podcast["feedUrl"] = .string(current)
            podcast[listedFeedURLField] = .string(listedFeedURL ?? response.redirect?.from.absoluteString ?? url)
            records.append(Record(entity: .podcast, key: podcastKey, fields: podcast))
        }
        var page = DecodedPage(items: records, rowCount: items.count, hasNext: false, skipped: skipped)
        page.recoveredErrors = document.recoveredErrors
        // A recovered tree may lack items; a feed that announces its move is
        // often a stub whose items are no longer kept up. Neither is the whole
        // list of the podcast's episodes, so neither may remove any.
        // An <rss> without its <channel> is no full list either.
        page.mayLackItems = !document.recoveredErrors.isEmpty || announced != nil
            || (root.namespace == .core && root.name == "rss" && channelNode == nil)
        return page
    }

    /// The new address a feed announces for itself, as an absolute http(s) URL:
    /// `<itunes:new-feed-url>` in the channel, or `<redirect><newLocation>` in
    /// the channel or directly in `<rss>` (the convention of several hosts).
    static func announcedMove(root: FeedNode, channel: FeedNode?) -> String? {
        if let channel, let node = channel.first(.itunes, "new-feed-url"), let url = node.absoluteURL(node.trimmedText) {
            return url
        }
        for parent in [channel, root].compactMap({ $0 }) {
            if let redirect = parent.first(.core, "redirect"), let node = redirect.first(.core, "newLocation"),
               let url = node.absoluteURL(node.trimmedText) {
                return url
            }
        }
        return nil
    }
}

/// The channel (or Atom feed) as read: what a `podcast` record carries.
private struct Channel {
    var fields: [String: JSONValue] = [:]

    init(_ channel: FeedNode, atom: Bool) {
        func put(_ name: String, _ value: String?) {
            if let value { fields[name] = .string(value) }
        }
        if atom {
            put("link", channel.all(.atom, "link").first { ($0.attribute("rel") ?? "alternate") == "alternate" }
                .flatMap { $0.absoluteURL($0.attribute("href")) })
            put("description", channel.first(.atom, "subtitle")?.trimmedText ?? channel.first(.itunes, "summary")?.trimmedText)
            put("copyright", channel.first(.atom, "rights")?.trimmedText)
        } else {
            put("link", channel.first(.core, "link").flatMap { $0.absoluteURL($0.trimmedText) })
            put("description", channel.first(.itunes, "summary")?.trimmedText ?? channel.first(.core, "description")?.trimmedText)
            put("copyright", channel.first(.core, "copyright")?.trimmedText)
            put("language", channel.first(.core, "language")?.trimmedText ?? channel.first(.dublinCore, "language")?.trimmedText)
        }
        put("itunesAuthor", channel.first(.itunes, "author")?.trimmedText)
        if let image = channel.first(.itunes, "image") {
            put("itunesImage", image.absoluteURL(image.attribute("href")) ?? image.absoluteURL(image.trimmedText))
        }
        put("itunesExplicit", channel.first(.itunes, "explicit")?.trimmedText)
        if let owner = channel.first(.itunes, "owner") {
            put("itunesOwnerName", owner.first(.itunes, "name")?.trimmedText)
            put("itunesOwnerEmail", owner.first(.itunes, "email")?.trimmedText)
        }
        put("itunesType", channel.first(.itunes, "type")?.trimmedText)
        // "Parent/Child" for a subcategory, "Parent" for a top-level one with none.
        var categories: [JSONValue] = []
        for parent in channel.all(.itunes, "category") {
            guard let name = parent.attribute("text").flatMap(Self.nonEmpty) else { continue }
            let children = parent.all(.itunes, "category").compactMap { $0.attribute("text").flatMap(Self.nonEmpty) }
            if children.isEmpty {
                categories.append(.string(name))
            } else {
                categories += children.map { .string("\(name)/\($0)") }
            }
        }
        if !categories.isEmpty { fields["itunesCategories"] = .array(categories) }
        fields.merge(PodcastNamespace.channelFields(channel)) { own, _ in own }
    }

    private static func nonEmpty(_ s: String) -> String? {
        let t = s.trimmingCharacters(in: .whitespacesAndNewlines)
        return t.isEmpty ? nil : t
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
    /// Every enclosure with a usable URL, in document order; the first is
    /// the primary (`enclosureURL`, `enclosureType`, `enclosureLength`).
    var enclosures: [(url: String, type: String?, length: String?)] = []
    /// The item's Podcasting 2.0 tags, as wire fields.
    var podcastIndex: [String: JSONValue] = [:]

    // URLs (enclosure, link, image) are resolved against the feed's address
    // and any `xml:base`; what does not resolve to http(s) is dropped, since
    // an export would otherwise point at storesync's own host.
    init(rssItem item: FeedNode) {
        title = item.first(.core, "title")?.trimmedText ?? item.first(.itunes, "title")?.trimmedText
        guid = item.first(.core, "guid")?.trimmedText
        // Atom-minded generators write <link href="…"/> or only <atom:link>.
        let linkNode = item.first(.core, "link")
        link = linkNode.flatMap { $0.absoluteURL($0.trimmedText) ?? $0.absoluteURL($0.attribute("href")) }
            ?? Self.atomLink(in: item, rel: "alternate").flatMap { $0.absoluteURL($0.attribute("href")) }
        pubDate = item.first(.core, "pubDate")?.trimmedText ?? item.first(.dublinCore, "date")?.trimmedText
            ?? item.first(.atom, "published")?.trimmedText ?? item.first(.atom, "updated")?.trimmedText
        description = item.first(.core, "description")?.trimmedText ?? item.first(.itunes, "summary")?.trimmedText
            ?? item.first(.content, "encoded")?.trimmedText
        enclosures = item.all(.core, "enclosure").compactMap { node in
            node.absoluteURL(node.attribute("url")).map {
                ($0, node.attribute("type").flatMap(Self.nonEmpty), node.attribute("length").flatMap(Self.nonEmpty))
            }
        }
        if enclosures.isEmpty {
            enclosures = item.all(.media, "content").compactMap { node in
                node.absoluteURL(node.attribute("url")).map {
                    ($0, node.attribute("type").flatMap(Self.nonEmpty), node.attribute("fileSize").flatMap(Self.nonEmpty))
                }
            }
        }
        if enclosures.isEmpty { enclosures = Self.atomEnclosures(in: item) }
        if let primary = enclosures.first {
            (enclosureURL, enclosureType, enclosureLength) = primary
        }
        readITunes(item)
    }

    init(atomEntry entry: FeedNode) {
        title = entry.first(.atom, "title")?.trimmedText ?? entry.first(.itunes, "title")?.trimmedText
        guid = entry.first(.atom, "id")?.trimmedText
        link = Self.atomLink(in: entry, rel: "alternate").flatMap { $0.absoluteURL($0.attribute("href")) }
        pubDate = entry.first(.atom, "published")?.trimmedText ?? entry.first(.atom, "updated")?.trimmedText
            ?? entry.first(.atom, "issued")?.trimmedText
        description = entry.first(.atom, "summary")?.trimmedText ?? entry.first(.itunes, "summary")?.trimmedText
            ?? entry.first(.atom, "content")?.trimmedText
        enclosures = Self.atomEnclosures(in: entry)
        if let primary = enclosures.first {
            (enclosureURL, enclosureType, enclosureLength) = primary
        }
        readITunes(entry)
    }

    /// Every Atom `rel="enclosure"` link with a usable URL.
    private static func atomEnclosures(in node: FeedNode) -> [(url: String, type: String?, length: String?)] {
        node.all(.atom, "link").filter { $0.attribute("rel") == "enclosure" }.compactMap { link in
            link.absoluteURL(link.attribute("href")).map {
                ($0, link.attribute("type").flatMap(Self.nonEmpty), link.attribute("length").flatMap(Self.nonEmpty))
            }
        }
    }

    private mutating func readITunes(_ node: FeedNode) {
        duration = node.first(.itunes, "duration")?.trimmedText
        episodeNumber = node.first(.itunes, "episode")?.trimmedText
        season = node.first(.itunes, "season")?.trimmedText
        episodeType = node.first(.itunes, "episodeType")?.trimmedText
        explicit = node.first(.itunes, "explicit")?.trimmedText
        let image = node.first(.itunes, "image")
        self.image = image.flatMap { $0.absoluteURL($0.attribute("href")) ?? $0.absoluteURL($0.trimmedText) }
        podcastIndex = PodcastNamespace.itemFields(node)
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
        // Only when there is more than the primary: a list of one would repeat
        // `episodeUrl` in every stored episode and rewrite them all on upgrade.
        if enclosures.count > 1 {
            fields["enclosures"] = .array(enclosures.map { enclosure in
                var object: [String: JSONValue] = ["url": .string(enclosure.url)]
                if let type = enclosure.type { object["type"] = .string(type) }
                if let length = enclosure.length { object["length"] = Int64(length).map(JSONValue.int) ?? .string(length) }
                return .object(object)
            })
        }
        fields.merge(podcastIndex) { own, _ in own }
        return fields
    }
}

extension PodcastFeedSettings {
    /// A feed item's fields (Lookup's names where it has one, the feed's own
    /// otherwise; see ``PodcastFeed``) in the episode's canonical names.
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        if entity == .podcast { return Self.canonicalPodcast(wire) }
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
        if c.fields["episode_number"] == nil { c.set("episode_number", PodcastNamespace.wholeNumber(wire["podcastEpisode"])) }
        c.integer("season", from: "itunesSeason")
        if c.fields["season"] == nil { c.set("season", PodcastNamespace.wholeNumber(wire["podcastSeason"])) }
        // Feeds write `Full` as often as `full`: the vocabulary is lower case.
        c.lowercased("episode_type", from: "itunesEpisodeType")
        c.explicit("explicit", from: "itunesExplicit")
        c.text("image_url", from: "itunesImage")
        if case .array(let enclosures)? = wire["enclosures"] {
            c.set("enclosures", CanonicalValue.jsonArrayText(enclosures.map(Self.canonicalEnclosure)))
        }
        PodcastNamespace.canonicalEpisode(&c)
        return CanonicalRecord(entity: .episode, fields: c.fields)
    }

    /// `{url, length, type}` with the length a number where it is one.
    private static func canonicalEnclosure(_ value: JSONValue) -> JSONValue {
        guard case .object(var object) = value else { return value }
        if let length = object["length"], let number = CanonicalValue.integer(length) { object["length"] = number }
        return .object(object)
    }

    /// The channel as the feed describes it: the fields the feed owns.
    static func canonicalPodcast(_ wire: [String: JSONValue]) -> CanonicalRecord {
        var c = CanonicalFields(wire)
        c.text("name", from: "collectionName")
        c.text("feed_url", from: "feedUrl")
        c.text("language", from: "language")
        c.text("description", from: "description")
        c.text("artist", from: "itunesAuthor")
        c.text("artwork_url", from: "itunesImage")
        c.explicit("explicit", from: "itunesExplicit")
        c.text("owner_name", from: "itunesOwnerName")
        c.text("owner_email", from: "itunesOwnerEmail")
        c.text("copyright", from: "copyright")
        // Apple's vocabulary is lower case; feeds write `Episodic` too.
        c.lowercased("podcast_type", from: "itunesType")
        if case .array(let categories)? = wire["itunesCategories"] {
            c.set("categories", CanonicalValue.jsonArrayText(categories))
        }
        PodcastNamespace.canonicalPodcast(&c)
        return CanonicalRecord(entity: .podcast, fields: c.fields)
    }

    /// A feed describes its podcast (the directory lists it); its items are the episodes.
    public func role(of entity: EntityKind) -> RecordRole {
        entity == .podcast ? .describes : .lists
    }

    /// Where a feed lives is the feed's to say: after a move (`itunes:new-feed-url`,
    /// a 301) the directory keeps listing the old address for weeks.
    public func ownedFields(of entity: EntityKind) -> Set<String> {
        entity == .podcast ? ["feed_url"] : []
    }
}
