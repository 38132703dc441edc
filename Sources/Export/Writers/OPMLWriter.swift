import Foundation

/// One subscription in an OPML file: an `<outline type="rss">`.
package struct OPMLFeed: Sendable, Equatable {
    /// Shown by the importing app (`text` and `title`). Plain text.
    package var title: String
    /// The feed's address (`xmlUrl`). Must not be empty.
    package var xmlURL: String
    /// The podcast's or site's web page (`htmlUrl`).
    package var htmlURL: String?
    /// Optional `description` attribute. Plain text.
    package var description: String?

    package init(title: String, xmlURL: String, htmlURL: String? = nil, description: String? = nil) {
        self.title = title
        self.xmlURL = xmlURL
        self.htmlURL = htmlURL
        self.description = description
    }
}

/// What an OPML write produced.
package struct OPMLWriteResult: Sendable, Equatable {
    /// `type="rss"` outlines written.
    package var feedCount: Int
    /// Group outlines written (0 for a flat list).
    package var groupCount: Int
    package var byteCount: Int64
}

/// Writes OPML 2.0 subscription lists of feed URLs, the format podcast apps and feed
/// readers import and export:
///
/// ```xml
/// <opml version="2.0">
///   <head><title>…</title><dateCreated>Sun, 22 Nov 2026 00:54:46 +0000</dateCreated></head>
///   <body>
///     <outline text="Technology" title="Technology">
///       <outline text="…" title="…" type="rss" xmlUrl="…" htmlUrl="…"/>
///     </outline>
///   </body>
/// </opml>
/// ```
///
/// - Text (titles, group names) is plain text in attributes: OPML readers show attribute
///   values literally, so they are only escaped for XML (and filtered by
///   ``XMLText/xmlSafe(_:)``), never HTML-escaped.
/// - `dateCreated` is the given date (RFC 822, as OPML 2.0 asks), never "now"; feeds and
///   groups keep the given order, so the same input gives the same bytes.
/// - A feed with an empty `xmlUrl` is refused (``ExportError/invalidInput(path:reason:)``)
///   rather than silently dropped: an importer cannot subscribe to it, and the caller's
///   selection should not have let it through.
/// - Streamed into ``AtomicFile`` with the strict re-parse of ``XMLDocumentWriter``: a
///   failed write leaves the previous file in place.
package struct OPMLWriter: Sendable {
    /// Indent nested elements by two spaces (default). Off gives the smallest file.
    package var indent: Bool

    package init(indent: Bool = true) {
        self.indent = indent
    }

    /// Atomically writes a flat list of feeds to `url`.
    @discardableResult
    package func write(title: String, dateCreated: Date, feeds: [OPMLFeed], to url: URL) throws -> OPMLWriteResult {
        try write(title: title, dateCreated: dateCreated, body: .flat(feeds), to: url)
    }

    /// Atomically writes feeds grouped into one outline per group (e.g. per genre), in the
    /// given order. Empty groups are written too (as empty outlines): the caller decides.
    @discardableResult
    package func write(title: String, dateCreated: Date, groups: [(group: String, feeds: [OPMLFeed])],
                      to url: URL) throws -> OPMLWriteResult {
        try write(title: title, dateCreated: dateCreated, body: .grouped(groups), to: url)
    }

    /// The flat document's bytes, in memory (validated the same way).
    package func render(title: String, dateCreated: Date, feeds: [OPMLFeed], name: String = "feeds.opml") throws -> [UInt8] {
        try XMLDocumentWriter.render(name: name, indent: indent) { doc in
            _ = try Self.writeDocument(title: title, dateCreated: dateCreated, body: .flat(feeds), into: doc)
        }
    }

    /// The grouped document's bytes, in memory (validated the same way).
    package func render(title: String, dateCreated: Date, groups: [(group: String, feeds: [OPMLFeed])],
                       name: String = "feeds.opml") throws -> [UInt8] {
        try XMLDocumentWriter.render(name: name, indent: indent) { doc in
            _ = try Self.writeDocument(title: title, dateCreated: dateCreated, body: .grouped(groups), into: doc)
        }
    }

    /// The two shapes of `<body>`.
    enum Body {
        case flat([OPMLFeed])
        case grouped([(group: String, feeds: [OPMLFeed])])
    }

    private func write(title: String, dateCreated: Date, body: Body, to url: URL) throws -> OPMLWriteResult {
        var counts = (feeds: 0, groups: 0)
        let bytes = try XMLDocumentWriter.write(to: url, indent: indent) { doc in
            counts = try Self.writeDocument(title: title, dateCreated: dateCreated, body: body, into: doc)
        }
        return OPMLWriteResult(feedCount: counts.feeds, groupCount: counts.groups, byteCount: bytes)
    }

    /// Writes `<opml>…</opml>` into `doc`; returns the number of feed and group outlines.
    static func writeDocument(title: String, dateCreated: Date, body: Body,
                              into doc: XMLDocumentWriter) throws -> (feeds: Int, groups: Int) {
        // Refuse before the first byte: nothing is written for a document that would be wrong.
        let all: [OPMLFeed]
        switch body {
        case .flat(let feeds): all = feeds
        case .grouped(let groups): all = groups.flatMap(\.feeds)
        }
        if let bad = all.first(where: { XMLText.xmlSafe($0.xmlURL).allSatisfy(\.isWhitespace) }) {
            throw ExportError.invalidInput(path: doc.name, reason: "OPML feed \"\(bad.title)\" has no xmlUrl")
        }

        try doc.startElement("opml")
        try doc.attribute("version", "2.0")
        try doc.startElement("head")
        try doc.element("title", title)
        try doc.element("dateCreated", PodcastFeedWriter.rfc822(dateCreated))
        try doc.endElement()
        try doc.startElement("body")
        var feedCount = 0
        var groupCount = 0
        switch body {
        case .flat(let feeds):
            for feed in feeds { try writeFeed(feed, into: doc) }
            feedCount = feeds.count
        case .grouped(let groups):
            for group in groups {
                try doc.startElement("outline")
                try doc.attribute("text", group.group)
                try doc.attribute("title", group.group)
                for feed in group.feeds { try writeFeed(feed, into: doc) }
                try doc.endElement()
                feedCount += group.feeds.count
                groupCount += 1
            }
        }
        try doc.endElement() // body
        try doc.endElement() // opml
        return (feedCount, groupCount)
    }

    private static func writeFeed(_ feed: OPMLFeed, into doc: XMLDocumentWriter) throws {
        try doc.startElement("outline")
        try doc.attribute("text", feed.title)
        try doc.attribute("title", feed.title)
        try doc.attribute("type", "rss")
        try doc.attribute("xmlUrl", feed.xmlURL)
        if let html = PublishableURL.http(feed.htmlURL) { try doc.attribute("htmlUrl", html) }
        if let description = feed.description { try doc.attribute("description", description) }
        try doc.endElement()
    }
}
