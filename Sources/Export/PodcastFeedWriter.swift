import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Apple's podcast type: how apps order episodes.
package enum PodcastType: String, Sendable, Equatable, CaseIterable {
    /// Newest first (the default).
    case episodic
    /// Oldest first, in sequence.
    case serial
}

/// The `<channel>` of a podcast feed. All text is plain text (not HTML).
package struct FeedChannel: Sendable, Equatable {
    package var title: String
    /// The podcast's web page.
    package var link: String
    /// Shown by readers as HTML: it is HTML-escaped so it displays exactly as given.
    package var description: String
    /// An RFC 5646 language tag, e.g. `en-us`.
    package var language: String
    /// Where this feed itself is published (`atom:link rel="self"`).
    package var selfURL: String
    /// Artwork (`itunes:image` and RSS `<image>`).
    package var imageURL: String?
    package var author: String?
    /// Apple categories, each a path from top level down:
    /// `[["Technology", "Tech News"], ["News"]]`. Empty paths are skipped.
    package var categories: [[String]]
    package var explicit: Bool
    package var type: PodcastType
    /// When the feed's content was produced — taken from the run, never "now".
    package var lastBuildDate: Date
    /// `<generator>`, e.g. `storesync 1.0`.
    package var generator: String
    /// The Atom feed's permanent `<id>` (an IRI). Nil uses ``selfURL``: stable as long as
    /// the feed is published at the same address. RSS has no feed id and ignores it.
    package var id: String?
    /// `itunes:owner`: who Apple Podcasts contacts about the feed (never shown to listeners).
    package var ownerName: String?
    package var ownerEmail: String?
    /// `<copyright>`.
    package var copyright: String?
    /// `podcast:guid` (the Podcasting 2.0 namespace): the show's permanent identity,
    /// which survives a move of the feed. Nil omits it and the namespace.
    package var podcastGUID: String?
    /// The publisher's own Podcasting 2.0 channel tags (`podcast:locked`,
    /// `funding`, `medium`, `txt`, `trailer`, `podroll`…), written after `podcast:guid`.
    package var podcastTags: [PodcastTag] = []
    /// Some item carries ``FeedItem/podcastTags``: the namespace is declared
    /// even without a ``podcastGUID`` (items' tags are not written otherwise).
    package var itemsCarryPodcastTags = false
    /// RFC 5005 archive links (`atom:link rel="prev-archive"`, …), written after `atom:link rel="self"`.
    package var archiveLinks: [FeedLink] = []
    /// The WebSub hub subscribers may ask to be told of changes
    /// (`atom:link rel="hub"`, written after the self link); nil: none.
    package var hubURL: String?
    /// An RFC 5005 archive document (`fh:archive`): its items never change once written.
    package var isArchive = false
    /// Plain RSS only: item artwork as Media RSS `media:thumbnail`, which feed readers show.
    package var itemThumbnails = false

    package init(title: String, link: String, description: String, language: String, selfURL: String,
                imageURL: String? = nil, author: String? = nil, categories: [[String]] = [],
                explicit: Bool = false, type: PodcastType = .episodic, lastBuildDate: Date, generator: String,
                id: String? = nil) {
        self.id = id
        self.title = title
        self.link = link
        self.description = description
        self.language = language
        self.selfURL = selfURL
        self.imageURL = imageURL
        self.author = author
        self.categories = categories
        self.explicit = explicit
        self.type = type
        self.lastBuildDate = lastBuildDate
        self.generator = generator
    }
}

/// A link from a feed document to a related one (`atom:link`).
package struct FeedLink: Sendable, Equatable {
    package var rel: String
    package var href: String

    package init(rel: String, href: String) {
        self.rel = rel
        self.href = href
    }
}

/// A media file attached to an item.
package struct FeedEnclosure: Sendable, Equatable {
    package var url: String
    /// Size in bytes (0 when unknown, as the RSS profile recommends; negative values are written as 0).
    package var length: Int64
    /// MIME type, e.g. `audio/mpeg`.
    package var type: String

    package init(url: String, length: Int64, type: String) {
        self.url = url
        self.length = length
        self.type = type
    }
}

/// One `<item>` (episode). All text is plain text (not HTML).
package struct FeedItem: Sendable, Equatable {
    /// Stable identity, written as `<guid isPermaLink="false">`.
    package var guid: String
    package var title: String
    package var link: String?
    /// Plain text; HTML-escaped so readers display it exactly.
    package var description: String
    package var pubDate: Date
    /// `itunes:author`. (RSS `<author>` must be an e-mail address, so it is not used.)
    package var author: String?
    /// Episode artwork (`itunes:image`).
    package var imageURL: String?
    package var enclosure: FeedEnclosure?
    /// `itunes:explicit`; nil leaves it to the channel.
    package var explicit: Bool?
    /// `itunes:duration` in whole seconds; nil or negative omits it.
    package var durationSeconds: Int?
    /// `itunes:episode`; nil, zero or negative omits it (Apple wants a non-zero integer).
    package var episodeNumber: Int?
    /// `itunes:season`; nil, zero or negative omits it.
    package var season: Int?
    /// `itunes:episodeType`: `full`, `trailer` or `bonus` (any case); anything else omits it.
    package var episodeType: String?
    /// When the item last changed in a way readers should notice (Atom `<updated>`).
    /// Nil uses ``pubDate``. RSS has no such element and ignores it.
    package var updated: Date?
    /// The Atom entry's permanent `<id>` (an IRI). Nil derives it from ``guid``
    /// (``AtomFeedWriter/entryID(for:)``), so one list of items gives matching RSS and Atom feeds.
    package var id: String?
    /// Podcasting 2.0 item tags (transcripts, chapters, persons…), as the source gave them.
    package var podcastTags: [PodcastTag] = []

    package init(guid: String, title: String, link: String? = nil, description: String, pubDate: Date,
                author: String? = nil, imageURL: String? = nil, enclosure: FeedEnclosure? = nil,
                explicit: Bool? = nil, durationSeconds: Int? = nil, episodeNumber: Int? = nil, season: Int? = nil,
                episodeType: String? = nil, updated: Date? = nil, id: String? = nil) {
        self.episodeNumber = episodeNumber
        self.season = season
        self.episodeType = episodeType
        self.updated = updated
        self.id = id
        self.guid = guid
        self.title = title
        self.link = link
        self.description = description
        self.pubDate = pubDate
        self.author = author
        self.imageURL = imageURL
        self.enclosure = enclosure
        self.explicit = explicit
        self.durationSeconds = durationSeconds
    }
}

/// What a feed write produced.
package struct FeedWriteResult: Sendable, Equatable {
    package var itemCount: Int
    package var byteCount: Int64
}

/// Writes an RSS 2.0 podcast feed with Apple's `itunes:` namespace
/// (`http://www.itunes.com/dtds/podcast-1.0.dtd`) and `atom:link rel="self"`.
///
/// - Uses libxml2's xmlTextWriter through ``XMLDocumentWriter``: every string is
///   filtered with ``XMLText/xmlSafe(_:)`` and escaped by the writer; descriptions are
///   additionally ``XMLText/htmlEscaped(_:)`` because readers render them as HTML
///   (the default ``RSSTextStyle/podcastApps`` keeps line breaks and satisfies
///   podcastparser and feedparser alike — see ``RSSTextStyle``).
/// - The RSS elements are the core shared with ``RSSFeedWriter``; this writer adds the
///   `itunes:` elements.
/// - The feed is streamed into ``AtomicFile`` and strictly re-parsed on the way; an
///   invalid feed throws and the previous file stays in place.
/// - Deterministic: the same input gives the same bytes (dates are formatted by hand
///   in UTC, nothing reads the clock, items keep the given order).
///
/// Element order inside `<channel>`: title, link, description, language, generator,
/// lastBuildDate, atom:link, [image], [itunes:author], [itunes:image], itunes:category…,
/// itunes:explicit, itunes:type, then the items. Inside `<item>`: title, [link],
/// description, guid, pubDate, [itunes:author], [itunes:image], [enclosure],
/// [itunes:explicit], [itunes:duration], [itunes:episode], [itunes:season], [itunes:episodeType].
package struct PodcastFeedWriter: Sendable {
    package static let itunesNamespace = "http://www.itunes.com/dtds/podcast-1.0.dtd"
    package static let atomNamespace = "http://www.w3.org/2005/Atom"
    package static let podcastNamespace = "https://podcastindex.org/namespace/1.0"
    /// RFC 5005's feed history namespace (`fh:archive` marks an archive document).
    package static let feedHistoryNamespace = "http://purl.org/syndication/history/1.0"

    /// Indent nested elements by two spaces (default). Off gives the smallest file.
    package var indent: Bool
    /// How titles and descriptions are encoded. The default, ``RSSTextStyle/podcastApps``,
    /// is what podcastparser and feedparser both display exactly, and what the
    /// exports publish; ``RSSTextStyle/legacyPodcast`` (HTML-escaped descriptions,
    /// shown with literal entities by podcastparser) only reproduces older files.
    package var textStyle: RSSTextStyle

    package init(indent: Bool = true, textStyle: RSSTextStyle = .podcastApps) {
        self.indent = indent
        self.textStyle = textStyle
    }

    /// Atomically writes the feed to `url`.
    /// - Throws: ``ExportError`` — I/O (naming the path), a libxml2 writer failure, or
    ///   ``ExportError/invalidXML(name:line:column:message:)`` if the result would not parse.
    @discardableResult
    package func write(channel: FeedChannel, items: some Sequence<FeedItem>, to url: URL) throws -> FeedWriteResult {
        try RSSCore.write(channel: channel, items: items, style: textStyle, profile: ITunesRSSProfile(channel), indent: indent, to: url)
    }

    /// The feed's bytes, in memory (validated the same way).
    package func render(channel: FeedChannel, items: some Sequence<FeedItem>, name: String = "feed.xml") throws -> [UInt8] {
        try RSSCore.render(channel: channel, items: items, style: textStyle, profile: ITunesRSSProfile(channel), indent: indent, name: name)
    }

    /// Writes `<rss>…</rss>` into `doc` with `textStyle`; returns the number of items.
    ///
    /// The RSS elements come from the core shared with ``RSSFeedWriter``; this writer
    /// only adds the `itunes:` namespace and elements.
    package static func writeFeed(channel: FeedChannel, items: some Sequence<FeedItem>,
                                 textStyle: RSSTextStyle = .podcastApps, into doc: XMLDocumentWriter) throws -> Int {
        try RSSCore.writeFeed(channel: channel, items: items, style: textStyle, profile: ITunesRSSProfile(channel), into: doc)
    }

    private static let weekdays = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// RFC 822 (with a four-digit year, as RFC 1123 and the RSS profile ask) in UTC:
    /// `Sun, 22 Nov 2026 00:54:46 +0000`. Fractions of a second are dropped (floor).
    package static func rfc822(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : String(n) }
        let year = Int(parts.tm_year) + 1900
        let yearText = year >= 0 && year < 1000 ? String(repeating: "0", count: 4 - String(year).count) + String(year) : String(year)
        return "\(weekdays[Int(parts.tm_wday)]), \(two(parts.tm_mday)) \(months[Int(parts.tm_mon)]) \(yearText) "
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)) +0000"
    }
}

/// Apple's podcast extension on top of the shared RSS core: the `itunes:` namespace
/// (declared before `atom:`, as this writer always did) and its channel and item elements.
struct ITunesRSSProfile: RSSProfile {
    /// Whether `<rss>` declares `podcast:`: items' tags are written only then
    /// (the root is written before any item is seen).
    let declaresPodcast: Bool

    init(_ channel: FeedChannel) {
        declaresPodcast = channel.podcastGUID != nil || !channel.podcastTags.isEmpty || channel.itemsCarryPodcastTags
    }

    func writeNamespaces(_ channel: FeedChannel, into doc: XMLDocumentWriter) throws {
        try doc.attribute("xmlns:itunes", PodcastFeedWriter.itunesNamespace)
        try doc.attribute("xmlns:atom", PodcastFeedWriter.atomNamespace)
        if declaresPodcast { try doc.attribute("xmlns:podcast", PodcastFeedWriter.podcastNamespace) }
    }

    func writeChannelExtensions(_ channel: FeedChannel, into doc: XMLDocumentWriter) throws {
        if let author = channel.author { try doc.element("itunes:author", author) }
        if channel.ownerName != nil || channel.ownerEmail != nil {
            try doc.startElement("itunes:owner")
            if let name = channel.ownerName { try doc.element("itunes:name", name) }
            if let email = channel.ownerEmail { try doc.element("itunes:email", email) }
            try doc.endElement()
        }
        if let guid = channel.podcastGUID { try doc.element("podcast:guid", guid) }
        try PodcastTagWriter.write(channel.podcastTags, into: doc)
        if let image = PublishableURL.http(channel.imageURL) { try doc.emptyElement("itunes:image", attributes: ["href": image]) }
        for path in channel.categories where !path.isEmpty {
            for name in path {
                try doc.startElement("itunes:category")
                try doc.attribute("text", name)
            }
            for _ in path { try doc.endElement() }
        }
        try doc.element("itunes:explicit", channel.explicit ? "true" : "false")
        try doc.element("itunes:type", channel.type.rawValue)
    }

    func writeItemExtensionsBeforeEnclosure(_ item: FeedItem, into doc: XMLDocumentWriter) throws {
        if let author = item.author { try doc.element("itunes:author", author) }
        if let image = PublishableURL.http(item.imageURL) {
            try doc.startElement("itunes:image")
            try doc.attribute("href", image)
            try doc.endElement()
        }
    }

    func writeItemExtensionsAfterEnclosure(_ item: FeedItem, into doc: XMLDocumentWriter) throws {
        if let explicit = item.explicit { try doc.element("itunes:explicit", explicit ? "true" : "false") }
        if let seconds = item.durationSeconds, seconds >= 0 { try doc.element("itunes:duration", String(seconds)) }
        if let number = item.episodeNumber, number > 0 { try doc.element("itunes:episode", String(number)) }
        if let season = item.season, season > 0 { try doc.element("itunes:season", String(season)) }
        if let type = item.episodeType?.lowercased(), ["full", "trailer", "bonus"].contains(type) {
            try doc.element("itunes:episodeType", type)
        }
        if declaresPodcast { try PodcastTagWriter.write(item.podcastTags, into: doc) }
    }
}
