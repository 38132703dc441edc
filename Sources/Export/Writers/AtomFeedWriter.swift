import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Writes an Atom 1.0 feed (RFC 4287) from the same ``FeedChannel`` and ``FeedItem``s as
/// ``RSSFeedWriter`` and ``PodcastFeedWriter``, so one list of items gives every format.
///
/// Text: every text construct (`title`, `subtitle`, entry `content`) is written with
/// `type="text"`: the value is plain text, escaped once by the XML writer and **not**
/// HTML-escaped, because Atom readers show `type="text"` literally (no guessing, unlike
/// RSS — feedparser returns it as `text/plain`, character for character). HTML-escaping it
/// would make readers show `&lt;`. (RFC 4287 lets a reader fold white space in text
/// constructs; feedparser keeps line breaks.)
///
/// Identity and time (DESIGN Invariant 4: nothing reads the clock):
/// - feed `<id>`: ``FeedChannel/id``, else ``FeedChannel/selfURL``; an empty id throws;
/// - entry `<id>`: ``entryID(for:)`` — ``FeedItem/id``, else the guid when it already is
///   an absolute IRI, else a `storesync:guid:` IRI made from the percent-encoded guid;
/// - feed `<updated>` is ``FeedChannel/lastBuildDate``; entry `<updated>` is
///   ``FeedItem/updated`` (else the pubDate), `<published>` the pubDate; all RFC 3339 UTC.
///
/// Element order in `<feed>`: id, title, [subtitle], updated, link rel=self,
/// link rel=alternate, author, generator, [logo], category…, entries. In `<entry>`: id,
/// title, updated, published, [link rel=alternate], [link rel=enclosure], [author], content.
/// (Empty links are left out: `href=""` would point readers back at the feed itself.)
/// The feed always has an `<author>` (``FeedChannel/author``, else the feed's title),
/// because RFC 4287 requires one unless every entry has its own; each entry has a
/// `<content>`, which RFC 4287 requires of entries without an alternate link.
/// Enclosures are `link rel="enclosure"` with `type` and `length`.
///
/// Streams into ``AtomicFile`` through ``XMLDocumentWriter`` with the same strict re-parse
/// before the rename: an invalid feed never replaces the previous file.
package struct AtomFeedWriter: Sendable {
    package static let namespace = "http://www.w3.org/2005/Atom"

    /// Indent nested elements by two spaces (default). Off gives the smallest file.
    package var indent: Bool

    package init(indent: Bool = true) {
        self.indent = indent
    }

    /// Atomically writes the feed to `url`.
    /// - Throws: ``ExportError`` — ``ExportError/invalidInput(path:reason:)`` for an empty
    ///   feed id, I/O errors naming the path, a libxml2 writer failure, or
    ///   ``ExportError/invalidXML(name:line:column:message:)`` if the result would not parse.
    @discardableResult
    package func write(channel: FeedChannel, items: some Sequence<FeedItem>, to url: URL) throws -> FeedWriteResult {
        var count = 0
        let bytes = try XMLDocumentWriter.write(to: url, indent: indent) { doc in
            count = try Self.writeFeed(channel: channel, items: items, into: doc)
        }
        return FeedWriteResult(itemCount: count, byteCount: bytes)
    }

    /// The feed's bytes, in memory (validated the same way).
    package func render(channel: FeedChannel, items: some Sequence<FeedItem>, name: String = "feed.atom") throws -> [UInt8] {
        try XMLDocumentWriter.render(name: name, indent: indent) { doc in
            _ = try Self.writeFeed(channel: channel, items: items, into: doc)
        }
    }

    /// Writes `<feed>…</feed>` into `doc`; returns the number of entries.
    package static func writeFeed(channel: FeedChannel, items: some Sequence<FeedItem>,
                                 into doc: XMLDocumentWriter) throws -> Int {
        let id = feedID(for: channel)
        guard !id.allSatisfy(\.isWhitespace) else {
            // Readers key subscriptions and read state on it: a feed without one is not Atom.
            throw ExportError.invalidInput(path: doc.name, reason: "Atom feed id is empty (set FeedChannel.id or selfURL)")
        }
        try doc.startElement("feed")
        try doc.attribute("xmlns", namespace)
        if channel.isArchive { try doc.attribute("xmlns:fh", PodcastFeedWriter.feedHistoryNamespace) }
        if !channel.language.isEmpty { try doc.attribute("xml:lang", channel.language) }

        try doc.element("id", id)
        try textElement("title", channel.title, into: doc)
        if !channel.description.isEmpty { try textElement("subtitle", channel.description, into: doc) }
        try doc.element("updated", rfc3339(channel.lastBuildDate))
        try doc.emptyElement("link", attributes: ["rel": "self", "type": "application/atom+xml", "href": channel.selfURL])
        if let hub = channel.hubURL { try doc.emptyElement("link", attributes: ["rel": "hub", "href": hub]) }
        for link in channel.archiveLinks {
            try doc.emptyElement("link", attributes: ["rel": link.rel, "type": "application/atom+xml", "href": link.href])
        }
        if channel.isArchive { try doc.emptyElement("fh:archive", attributes: [:]) }
        if !channel.link.isEmpty {
            try doc.emptyElement("link", attributes: ["rel": "alternate", "type": "text/html", "href": channel.link])
        }
        try doc.startElement("author")
        try doc.element("name", channel.author ?? channel.title)
        try doc.endElement()
        try doc.element("generator", channel.generator)
        if let image = PublishableURL.http(channel.imageURL) { try doc.element("logo", image) }
        var seenCategories = Set<String>()
        for name in channel.categories.joined() where seenCategories.insert(name).inserted {
            try doc.emptyElement("category", attributes: ["term": name])
        }

        var count = 0
        for item in items {
            try writeEntry(item, into: doc)
            count += 1
        }
        try doc.endElement() // feed
        return count
    }

    private static func writeEntry(_ item: FeedItem, into doc: XMLDocumentWriter) throws {
        try doc.startElement("entry")
        try doc.element("id", entryID(for: item))
        try textElement("title", item.title, into: doc)
        try doc.element("updated", rfc3339(item.updated ?? item.pubDate))
        try doc.element("published", rfc3339(item.pubDate))
        if let link = PublishableURL.http(item.link) {
            try doc.emptyElement("link", attributes: ["rel": "alternate", "type": "text/html", "href": link])
        }
        if let enclosure = item.enclosure, PublishableURL.isHTTP(enclosure.url) {
            try doc.emptyElement("link", attributes: [
                "rel": "enclosure", "type": enclosure.type, "length": String(max(0, enclosure.length)), "href": enclosure.url,
            ])
        }
        if let author = item.author {
            try doc.startElement("author")
            try doc.element("name", author)
            try doc.endElement()
        }
        try textElement("content", item.description, into: doc)
        try doc.endElement()
    }

    /// `<name type="text">plain text</name>`: escaped once by the XML writer, never HTML-escaped.
    private static func textElement(_ name: StaticString, _ text: String, into doc: XMLDocumentWriter) throws {
        try doc.startElement(name)
        try doc.attribute("type", "text")
        try doc.text(text)
        try doc.endElement()
    }

    // MARK: Identity

    /// The feed's `<id>`: ``FeedChannel/id``, else ``FeedChannel/selfURL``.
    package static func feedID(for channel: FeedChannel) -> String {
        channel.id ?? channel.selfURL
    }

    /// The entry's `<id>`, stable for a stable guid.
    ///
    /// ``FeedItem/id`` when set; else the guid itself when it is an absolute IRI (our guids
    /// are `storesync:podcast:…`, store guids are often `urn:…` or `https://…`), so the RSS
    /// guid and the Atom id match; else `storesync:guid:` + the guid percent-encoded
    /// (every byte outside RFC 3986 unreserved characters), because `atom:id` must be an
    /// IRI and podcast guids are often not (`12345`, `Buzzsprout-99 a`).
    package static func entryID(for item: FeedItem) -> String {
        if let id = item.id { return id }
        if isAbsoluteIRI(item.guid) { return item.guid }
        var encoded = ""
        for byte in XMLText.xmlSafe(item.guid).utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."),
                 UInt8(ascii: "_"), UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += byte < 16 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return "storesync:guid:" + encoded
    }

    /// Whether `s` is an absolute IRI (RFC 3987) we can use as an id as is: a scheme
    /// (`ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )`), `:`, then a non-empty rest with no
    /// white space, controls, `<>"{}|\^` or backtick, and `%` only before two hex digits.
    /// Non-ASCII letters are allowed, as in IRIs.
    static func isAbsoluteIRI(_ s: String) -> Bool {
        let scalars = Array(s.unicodeScalars)
        guard let colon = scalars.firstIndex(of: ":"), colon > 0, colon + 1 < scalars.count else { return false }
        for (index, c) in scalars[..<colon].enumerated() {
            let isLetter = ("a"..."z").contains(c) || ("A"..."Z").contains(c)
            let isOther = ("0"..."9").contains(c) || c == "+" || c == "-" || c == "."
            if !(isLetter || (index > 0 && isOther)) { return false }
        }
        var i = colon + 1
        while i < scalars.count {
            let c = scalars[i]
            if c.value <= 0x20 || (0x7F...0x9F).contains(c.value) || "<>\"{}|\\^`".unicodeScalars.contains(c) {
                return false
            }
            if !XMLText.isXMLSafe(String(c)) || c.properties.isWhitespace { return false }
            if c == "%" {
                guard i + 2 < scalars.count, scalars[i + 1].properties.isASCIIHexDigit,
                      scalars[i + 2].properties.isASCIIHexDigit else { return false }
                i += 2
            }
            i += 1
        }
        return true
    }

    // MARK: Dates

    /// RFC 3339 in UTC with a `Z`: `2026-11-22T00:54:46Z`. Fractions of a second are
    /// dropped (floor), as in ``PodcastFeedWriter/rfc822(_:)``, so both formats of one
    /// feed name the same second.
    package static func rfc3339(_ date: Date) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ n: Int32) -> String { n < 10 ? "0\(n)" : String(n) }
        let year = Int(parts.tm_year) + 1900
        // RFC 3339 has four-digit years only; clamp what cannot be written.
        let yearText: String
        if year < 0 { yearText = "0000" } else if year > 9999 { yearText = "9999" } else {
            let digits = String(year)
            yearText = String(repeating: "0", count: 4 - digits.count) + digits
        }
        return "\(yearText)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T"
            + "\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec))Z"
    }
}
