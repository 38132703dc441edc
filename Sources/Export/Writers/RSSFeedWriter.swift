import Foundation

/// How an RSS feed encodes its human-readable text (`<title>`, `<description>`).
///
/// RSS 2.0 never says whether these elements hold plain text or HTML, and readers
/// disagree. What we measured (see `Tests/scripts/check_feeds.py`):
/// - feedparser (and the many readers that behave like it) treats `<description>` as
///   HTML always, and `<title>` as HTML only when it *looks* like HTML (it contains a
///   closing tag or an entity reference such as `&amp;`); otherwise as plain text.
/// - podcastparser (gPodder) treats `<title>` as plain text always, and `<description>`
///   as HTML only when it contains a tag; otherwise as plain text, so an HTML-escaped
///   description without a tag shows `&amp;` and `&lt;` literally.
/// - Every reader that renders HTML folds line breaks into spaces unless they are `<br>`.
///
/// A style picks, per element, the encoding that makes the intended readers show the
/// original text. Whatever the style, the XML itself is always correct: every value
/// goes through ``XMLText/xmlSafe(_:)`` and the writer's escaping.
package struct RSSTextStyle: Sendable, Hashable {
    /// How `<title>` is written.
    package enum TitleEncoding: Sendable, Hashable {
        /// The text as is (escaped once, for XML). Right for readers that treat titles
        /// as plain text (podcast apps); a guessing reader renders the rare title that
        /// looks like HTML (`&amp;`, `</b>`) as HTML.
        case plainText
        /// Plain text, except that a title a guessing reader would take for HTML (it
        /// contains `</` or an entity-like `&…;`) is HTML-escaped first, so that reader
        /// renders it back to the original. A reader that never treats titles as HTML
        /// then shows the entities of those (rare) titles.
        case htmlWhenAmbiguous
    }

    /// How `<description>` is written.
    package enum DescriptionEncoding: Sendable, Hashable {
        /// HTML-escaped (``XMLText/htmlEscaped(_:)``), line breaks left as they are.
        /// The original podcast encoding: HTML readers show the characters but fold
        /// line breaks; podcastparser shows the entities literally unless a tag happens
        /// to be present.
        case htmlEscaped
        /// ``RSSFeedWriter/readerSafeHTML(_:)``: text without `& < > "` or line breaks is
        /// written as is; any other text becomes `<p>escaped text</p>` with every line
        /// break as `<br>`. Every reader we tested then shows exactly the original
        /// characters and line breaks (HTML still folds runs of spaces and tabs).
        case readerSafeHTML
    }

    package var titles: TitleEncoding
    package var descriptions: DescriptionEncoding

    package init(titles: TitleEncoding, descriptions: DescriptionEncoding) {
        self.titles = titles
        self.descriptions = descriptions
    }

    /// For feed readers (plain RSS): titles HTML-escaped only when ambiguous, reader-safe HTML descriptions.
    package static let feedReaders = RSSTextStyle(titles: .htmlWhenAmbiguous, descriptions: .readerSafeHTML)
    /// For podcast apps: plain-text titles (as Apple and podcastparser read them), reader-safe HTML descriptions.
    package static let podcastApps = RSSTextStyle(titles: .plainText, descriptions: .readerSafeHTML)
    /// ``PodcastFeedWriter``'s original encoding, kept as its default so its output does not change.
    package static let legacyPodcast = RSSTextStyle(titles: .plainText, descriptions: .htmlEscaped)

    /// The `<title>` text for `title` (before XML escaping, which the writer adds).
    package func titleText(_ title: String) -> String {
        switch titles {
        case .plainText: return title
        case .htmlWhenAmbiguous:
            // Decide on the text readers will get: removed characters can join `<` and `/`.
            let safe = XMLText.xmlSafe(title)
            return RSSFeedWriter.looksLikeMarkup(safe) ? XMLText.htmlEscaped(safe) : safe
        }
    }

    /// The `<description>` text for `description` (before XML escaping).
    package func descriptionText(_ description: String) -> String {
        switch descriptions {
        case .htmlEscaped: return XMLText.htmlEscaped(description)
        case .readerSafeHTML: return RSSFeedWriter.readerSafeHTML(description)
        }
    }
}

/// Writes a plain RSS 2.0 feed (no `itunes:` elements) for non-podcast feeds: new
/// marketplace listings, price drops, "what changed tonight".
///
/// Same inputs and guarantees as ``PodcastFeedWriter`` — the two share one RSS
/// core, the podcast writer adding Apple's extension elements:
/// - every string is filtered with ``XMLText/xmlSafe(_:)`` and escaped by
///   ``XMLDocumentWriter``; titles and descriptions are encoded by ``RSSTextStyle``
///   (default ``RSSTextStyle/feedReaders``);
/// - the feed is streamed into ``AtomicFile`` and strictly re-parsed on the way; an
///   invalid feed throws and the previous file stays in place;
/// - deterministic: the same input gives the same bytes.
///
/// Element order inside `<channel>`: title, link, description, language, generator,
/// lastBuildDate, atom:link, [image], [dc:creator], category…, then the items. Inside
/// `<item>`: title, [link], description, guid, pubDate, [dc:creator], [enclosure].
/// Channel categories are written RSS-style, as one `/`-separated path each
/// (`Technology/Tech News`). RSS `<author>` must be an e-mail address, so authors go
/// in Dublin Core `dc:creator`, which readers show as the author.
package struct RSSFeedWriter: Sendable {
    package static let atomNamespace = "http://www.w3.org/2005/Atom"
    package static let dublinCoreNamespace = "http://purl.org/dc/elements/1.1/"
    package static let mediaNamespace = "http://search.yahoo.com/mrss/"

    /// Indent nested elements by two spaces (default). Off gives the smallest file.
    package var indent: Bool
    /// How titles and descriptions are encoded for readers.
    package var textStyle: RSSTextStyle

    package init(indent: Bool = true, textStyle: RSSTextStyle = .feedReaders) {
        self.indent = indent
        self.textStyle = textStyle
    }

    /// Atomically writes the feed to `url`.
    /// - Throws: ``ExportError`` — I/O (naming the path), a libxml2 writer failure, or
    ///   ``ExportError/invalidXML(name:line:column:message:)`` if the result would not parse.
    @discardableResult
    package func write(channel: FeedChannel, items: some Sequence<FeedItem>, to url: URL) throws -> FeedWriteResult {
        try RSSCore.write(channel: channel, items: items, style: textStyle, profile: PlainRSSProfile(thumbnails: channel.itemThumbnails), indent: indent, to: url)
    }

    /// The feed's bytes, in memory (validated the same way).
    package func render(channel: FeedChannel, items: some Sequence<FeedItem>, name: String = "feed.xml") throws -> [UInt8] {
        try RSSCore.render(channel: channel, items: items, style: textStyle, profile: PlainRSSProfile(thumbnails: channel.itemThumbnails), indent: indent, name: name)
    }

    /// Writes `<rss>…</rss>` into `doc`; returns the number of items.
    package static func writeFeed(channel: FeedChannel, items: some Sequence<FeedItem>,
                                 textStyle: RSSTextStyle = .feedReaders, into doc: XMLDocumentWriter) throws -> Int {
        try RSSCore.writeFeed(channel: channel, items: items, style: textStyle, profile: PlainRSSProfile(thumbnails: channel.itemThumbnails), into: doc)
    }

    // MARK: Text encodings

    /// Whether a reader that guesses (feedparser's `looks_like_html`) could take `text`
    /// for HTML: it contains `</` or an entity-like `&name;` / `&#…;`.
    ///
    /// Deliberately broader than feedparser's own test (which also requires every tag and
    /// entity to be known HTML): escaping a title that did not need it is harmless to a
    /// guessing reader (the escaped text contains entities, so it is rendered as HTML and
    /// shows the original), while missing one would let the reader render it as markup.
    package static func looksLikeMarkup(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { bytes in
            var i = 0
            while i < bytes.count {
                if bytes[i] == UInt8(ascii: "<"), i + 1 < bytes.count, bytes[i + 1] == UInt8(ascii: "/") { return true }
                if bytes[i] == UInt8(ascii: "&"), entityLikeEnd(bytes, after: i) { return true }
                i += 1
            }
            return false
        }
    }

    /// Whether `&` at `start` is followed by one or more bytes that are not `;`, `&`, `<`,
    /// `>` or ASCII white space, then `;`.
    private static func entityLikeEnd(_ bytes: UnsafeBufferPointer<UInt8>, after start: Int) -> Bool {
        var j = start + 1
        while j < bytes.count {
            switch bytes[j] {
            case UInt8(ascii: ";"): return j > start + 1
            case UInt8(ascii: "&"), UInt8(ascii: "<"), UInt8(ascii: ">"), 0x20, 0x09, 0x0A, 0x0C, 0x0D: return false
            default: j += 1
            }
        }
        return false
    }

    /// Plain text as HTML that every reader we tested shows exactly as the text.
    ///
    /// - Text with none of `& < > "` and no line break is returned unchanged: as HTML and
    ///   as plain text it reads the same, so even readers that guess get it right.
    /// - Otherwise the text is HTML-escaped, each line break (`\r\n`, `\r` or `\n`) becomes
    ///   `<br>`, and the whole is wrapped in `<p>…</p>`. The tag matters: podcastparser
    ///   (gPodder) only renders a description as HTML when it contains one, and would
    ///   otherwise show `&amp;` literally; `<br>` keeps line breaks, which HTML folds.
    ///
    /// Characters XML cannot carry (see ``XMLText/xmlSafe(_:)``) are removed first.
    /// Runs of spaces and tabs still display as one space, as HTML always does.
    package static func readerSafeHTML(_ text: String) -> String {
        var text = XMLText.xmlSafe(text)
        func needsMarkup(_ b: UInt8) -> Bool {
            b == 0x26 || b == 0x3C || b == 0x3E || b == 0x22 || b == 0x0A || b == 0x0D // & < > " LF CR
        }
        guard text.withUTF8({ $0.contains(where: needsMarkup) }) else { return text }
        // Copies unchanged runs in one append: descriptions are most of a feed's text.
        return text.withUTF8 { bytes -> String in
            var out = [UInt8]()
            out.reserveCapacity(bytes.count + 64)
            out.append(contentsOf: "<p>".utf8)
            var runStart = 0
            for index in 0..<bytes.count where needsMarkup(bytes[index]) {
                if runStart < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
                runStart = index + 1
                switch bytes[index] {
                case UInt8(ascii: "&"): out.append(contentsOf: "&amp;".utf8)
                case UInt8(ascii: "<"): out.append(contentsOf: "&lt;".utf8)
                case UInt8(ascii: ">"): out.append(contentsOf: "&gt;".utf8)
                case UInt8(ascii: "\""): out.append(contentsOf: "&quot;".utf8)
                case 0x0D: out.append(contentsOf: "<br>".utf8)
                default:
                    // LF: the LF of a CRLF was already written as the CR's <br>.
                    if index == 0 || bytes[index - 1] != 0x0D { out.append(contentsOf: "<br>".utf8) }
                }
            }
            if runStart < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...])) }
            out.append(contentsOf: "</p>".utf8)
            return String(decoding: out, as: UTF8.self)
        }
    }
}

// MARK: - The shared RSS core

/// What a flavour of RSS adds to the core elements: namespaces on `<rss>` and
/// extension elements at fixed points, so the podcast feed's element order (and
/// therefore its bytes) stays exactly what it was before the core was shared.
protocol RSSProfile {
    /// Writes the `xmlns:*` attributes of `<rss>`.
    func writeNamespaces(_ channel: FeedChannel, into doc: XMLDocumentWriter) throws
    /// After `atom:link` and `<image>`, before the first item.
    func writeChannelExtensions(_ channel: FeedChannel, into doc: XMLDocumentWriter) throws
    /// After `<pubDate>`, before `<enclosure>`.
    func writeItemExtensionsBeforeEnclosure(_ item: FeedItem, into doc: XMLDocumentWriter) throws
    /// After `<enclosure>`, before `</item>`.
    func writeItemExtensionsAfterEnclosure(_ item: FeedItem, into doc: XMLDocumentWriter) throws
}

/// The elements every RSS 2.0 feed we write has, in one place for both writers.
enum RSSCore {
    /// Streams the feed into `url` through ``XMLDocumentWriter`` (atomic, strictly re-parsed).
    static func write(channel: FeedChannel, items: some Sequence<FeedItem>, style: RSSTextStyle, profile: some RSSProfile,
                      indent: Bool, to url: URL) throws -> FeedWriteResult {
        var count = 0
        let bytes = try XMLDocumentWriter.write(to: url, indent: indent) { doc in
            count = try writeFeed(channel: channel, items: items, style: style, profile: profile, into: doc)
        }
        return FeedWriteResult(itemCount: count, byteCount: bytes)
    }

    /// The feed's bytes, in memory, validated the same way.
    static func render(channel: FeedChannel, items: some Sequence<FeedItem>, style: RSSTextStyle, profile: some RSSProfile,
                       indent: Bool, name: String) throws -> [UInt8] {
        try XMLDocumentWriter.render(name: name, indent: indent) { doc in
            _ = try writeFeed(channel: channel, items: items, style: style, profile: profile, into: doc)
        }
    }

    static func writeFeed(channel: FeedChannel, items: some Sequence<FeedItem>, style: RSSTextStyle,
                          profile: some RSSProfile, into doc: XMLDocumentWriter) throws -> Int {
        try doc.startElement("rss")
        try doc.attribute("version", "2.0")
        try profile.writeNamespaces(channel, into: doc)
        if channel.isArchive { try doc.attribute("xmlns:fh", PodcastFeedWriter.feedHistoryNamespace) }
        try doc.startElement("channel")

        let title = style.titleText(channel.title)
        try doc.element("title", title)
        try doc.element("link", channel.link)
        try doc.element("description", style.descriptionText(channel.description))
        try doc.element("language", channel.language)
        if let copyright = channel.copyright { try doc.element("copyright", copyright) }
        try doc.element("generator", channel.generator)
        try doc.element("lastBuildDate", PodcastFeedWriter.rfc822(channel.lastBuildDate))
        try doc.emptyElement("atom:link", attributes: ["href": channel.selfURL, "rel": "self", "type": "application/rss+xml"])
        if let hub = channel.hubURL { try doc.emptyElement("atom:link", attributes: ["href": hub, "rel": "hub"]) }
        for link in channel.archiveLinks {
            try doc.emptyElement("atom:link", attributes: ["href": link.href, "rel": link.rel, "type": "application/rss+xml"])
        }
        if channel.isArchive { try doc.emptyElement("fh:archive", attributes: [:]) }
        if let image = PublishableURL.http(channel.imageURL) {
            try doc.startElement("image")
            try doc.element("url", image)
            try doc.element("title", title)
            try doc.element("link", channel.link)
            try doc.endElement()
        }
        try profile.writeChannelExtensions(channel, into: doc)

        var count = 0
        for item in items {
            try writeItem(item, style: style, profile: profile, into: doc)
            count += 1
        }

        try doc.endElement() // channel
        try doc.endElement() // rss
        return count
    }

    private static func writeItem(_ item: FeedItem, style: RSSTextStyle, profile: some RSSProfile,
                                  into doc: XMLDocumentWriter) throws {
        try doc.startElement("item")
        try doc.element("title", style.titleText(item.title))
        if let link = PublishableURL.http(item.link) { try doc.element("link", link) }
        try doc.element("description", style.descriptionText(item.description))
        try doc.startElement("guid")
        try doc.attribute("isPermaLink", "false")
        try doc.text(item.guid)
        try doc.endElement()
        try doc.element("pubDate", PodcastFeedWriter.rfc822(item.pubDate))
        try profile.writeItemExtensionsBeforeEnclosure(item, into: doc)
        if let enclosure = item.enclosure, PublishableURL.isHTTP(enclosure.url) {
            try doc.startElement("enclosure")
            try doc.attribute("url", enclosure.url)
            try doc.attribute("length", String(max(0, enclosure.length)))
            try doc.attribute("type", enclosure.type)
            try doc.endElement()
        }
        try profile.writeItemExtensionsAfterEnclosure(item, into: doc)
        try doc.endElement()
    }
}

/// Plain RSS: `atom:link` and Dublin Core authors, RSS categories.
struct PlainRSSProfile: RSSProfile {
    /// Whether items carry `media:thumbnail` (``FeedChannel/itemThumbnails``).
    var thumbnails = false

    func writeNamespaces(_ channel: FeedChannel, into doc: XMLDocumentWriter) throws {
        try doc.attribute("xmlns:atom", RSSFeedWriter.atomNamespace)
        try doc.attribute("xmlns:dc", RSSFeedWriter.dublinCoreNamespace)
        if thumbnails { try doc.attribute("xmlns:media", RSSFeedWriter.mediaNamespace) }
    }

    func writeChannelExtensions(_ channel: FeedChannel, into doc: XMLDocumentWriter) throws {
        if let author = channel.author { try doc.element("dc:creator", author) }
        for path in channel.categories where !path.isEmpty {
            try doc.element("category", path.joined(separator: "/"))
        }
    }

    func writeItemExtensionsBeforeEnclosure(_ item: FeedItem, into doc: XMLDocumentWriter) throws {
        if let author = item.author { try doc.element("dc:creator", author) }
    }

    func writeItemExtensionsAfterEnclosure(_ item: FeedItem, into doc: XMLDocumentWriter) throws {
        if thumbnails, let image = PublishableURL.http(item.imageURL) { try doc.emptyElement("media:thumbnail", attributes: ["url": image]) }
    }
}
