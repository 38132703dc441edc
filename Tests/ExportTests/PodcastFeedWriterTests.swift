import CLibXML2
import Foundation
import Testing
@testable import Export

/// A parsed document, read back with libxml2's own tree (strict: no RECOVER).
private final class ParsedFeed {
    let doc: xmlDocPtr

    init(_ bytes: [UInt8]) throws {
        XMLValidator.ensureInitialized()
        let doc = bytes.withUnsafeBytes { raw in
            xmlReadMemory(raw.baseAddress!.assumingMemoryBound(to: CChar.self), Int32(raw.count), "feed.xml", nil,
                          Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
        }
        guard let doc else { throw ExportError.invalidXML(name: "feed.xml", line: 0, column: 0, message: "xmlReadMemory failed") }
        self.doc = doc
    }

    deinit { xmlFreeDoc(doc) }

    var root: xmlNodePtr { xmlDocGetRootElement(doc)! }
}

/// What an HTML renderer makes of the escaped text (the four entities we produce).
private func htmlUnescaped(_ s: String) -> String {
    s.replacingOccurrences(of: "&lt;", with: "<").replacingOccurrences(of: "&gt;", with: ">")
        .replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&amp;", with: "&")
}


@Suite struct PodcastFeedWriterTests {
    /// 2026-11-22 00:54:46 UTC, a Sunday.
    static let buildDate = Date(timeIntervalSince1970: 1_795_308_886)

    static let channel = FeedChannel(
        title: "Joe <Live> & Co \u{1}",
        link: "https://example.com/show?a=1&b=2",
        description: "Joe <Live> Show & friends — \"quoted\" ]]> end",
        language: "en-us",
        selfURL: "https://feeds.example.com/joe.xml",
        imageURL: "https://example.com/art.jpg?w=600&h=600",
        author: "Joe & Ann",
        categories: [["Technology", "Tech News"], [], ["Society & Culture"]],
        explicit: false,
        type: .episodic,
        lastBuildDate: buildDate,
        generator: "storesync tests"
    )

    static let trickyTexts: [String] = [
        "Joe <Live> Show & friends",
        "Ends with ]]> and <![CDATA[ starts",
        "Control\u{0}\u{1}\u{8}\u{B}\u{C}\u{1F} chars\u{FFFE}\u{FFFF} gone",
        "Tab\tLF\nCR\rCRLF\r\n kept",
        "Emoji 🎙️🎧👩‍👩‍👧 and 中文 / 日本語",
        "&amp; is literal text, so is &lt;b&gt; and <b>bold</b>",
        "\"double\" and 'single' quotes",
        "",
    ]

    static func trickyItems() -> [FeedItem] {
        trickyTexts.enumerated().map { index, text in
            FeedItem(guid: "guid-\(index) <&>", title: text, link: "https://example.com/ep/\(index)?q=<&>",
                     description: text, pubDate: buildDate.addingTimeInterval(Double(-index) * 3600),
                     author: text, imageURL: "https://example.com/\(index).jpg",
                     enclosure: FeedEnclosure(url: "https://cdn.example.com/\(index).mp3?x=1&y=2", length: 1000 + Int64(index), type: "audio/mpeg"),
                     explicit: index % 2 == 0, durationSeconds: 60 * index)
        }
    }

    static let twoItems: [FeedItem] = [
        FeedItem(guid: "urn:storesync:episode:1001", title: "Episode 1: <Live> & unplugged",
                 link: "https://example.com/episodes/1", description: "First line\nJoe <Live> Show & friends",
                 pubDate: Date(timeIntervalSince1970: 1_795_222_486), author: "Joe",
                 imageURL: "https://example.com/ep1.jpg",
                 enclosure: FeedEnclosure(url: "https://cdn.example.com/ep1.mp3", length: 12_345_678, type: "audio/mpeg"),
                 explicit: true, durationSeconds: 3723),
        FeedItem(guid: "urn:storesync:episode:1000", title: "Episode 0 🎙️",
                 description: "Pilot \u{7}bell", pubDate: Date(timeIntervalSince1970: 1_795_136_086.75)),
    ]

    @Test func trickyFeedParsesStrictlyAndReadsBackExactly() throws {
        let items = Self.trickyItems()
        let bytes = try PodcastFeedWriter(textStyle: .legacyPodcast).render(channel: Self.channel, items: items)
        try XMLValidator.validateStrict(Data(bytes), name: "tricky.xml")

        let parsed = try ParsedFeed(bytes)
        #expect(FeedXML.qualifiedName(parsed.root) == "rss")
        #expect(FeedXML.attribute(parsed.root, "version") == "2.0")
        let channel = try #require(FeedXML.child(parsed.root, "channel"))
        #expect(FeedXML.text(FeedXML.child(channel, "title")) == "Joe <Live> & Co ")
        #expect(htmlUnescaped(FeedXML.text(FeedXML.child(channel, "description")) ?? "") == Self.channel.description)
        #expect(FeedXML.text(FeedXML.child(channel, "link")) == Self.channel.link)
        #expect(FeedXML.text(FeedXML.child(channel, "itunes:author")) == "Joe & Ann")

        let readItems = FeedXML.children(channel, "item")
        #expect(readItems.count == items.count)
        for (node, item) in zip(readItems, items) {
            let expected = XMLText.xmlSafe(item.title)
            #expect(FeedXML.text(FeedXML.child(node, "title")) == expected)
            #expect(FeedXML.text(FeedXML.child(node, "itunes:author")) == expected)
            // Feed readers render <description> as HTML: after HTML-unescaping, the text is the input.
            #expect(htmlUnescaped(FeedXML.text(FeedXML.child(node, "description")) ?? "<missing>") == XMLText.xmlSafe(item.description))
            #expect(FeedXML.text(FeedXML.child(node, "guid")) == item.guid)
            #expect(FeedXML.attribute(FeedXML.child(node, "guid"), "isPermaLink") == "false")
            #expect(FeedXML.text(FeedXML.child(node, "link")) == item.link)
            #expect(FeedXML.attribute(FeedXML.child(node, "enclosure"), "url") == item.enclosure?.url)
            #expect(FeedXML.attribute(FeedXML.child(node, "enclosure"), "length") == item.enclosure.map { String($0.length) })
            #expect(FeedXML.attribute(FeedXML.child(node, "itunes:image"), "href") == item.imageURL)
            #expect(FeedXML.text(FeedXML.child(node, "itunes:explicit")) == (item.explicit == true ? "true" : "false"))
            #expect(FeedXML.text(FeedXML.child(node, "itunes:duration")) == item.durationSeconds.map(String.init))
        }
        // The carriage returns survive the round trip (escaped as &#13; by the writer).
        #expect(FeedXML.text(FeedXML.child(readItems[3], "title")) == "Tab\tLF\nCR\rCRLF\r\n kept")
    }

    @Test func descriptionIsDoubleEscapedOnTheWire() throws {
        let item = FeedItem(guid: "g", title: "t", description: "Joe <Live> Show & friends", pubDate: Self.buildDate)
        let text = String(decoding: try PodcastFeedWriter(textStyle: .legacyPodcast).render(channel: Self.channel, items: [item]), as: UTF8.self)
        #expect(text.contains("<description>Joe &amp;lt;Live&amp;gt; Show &amp;amp; friends</description>"))
    }

    @Test func channelStructure() throws {
        let bytes = try PodcastFeedWriter(textStyle: .legacyPodcast).render(channel: Self.channel, items: [])
        let parsed = try ParsedFeed(bytes)
        let root = parsed.root
        // The namespaces are declared on <rss>.
        var namespaces: [String: String] = [:]
        var ns = root.pointee.nsDef
        while let n = ns {
            namespaces[n.pointee.prefix.map { String(cString: $0) } ?? ""] = String(cString: n.pointee.href)
            ns = n.pointee.next
        }
        #expect(namespaces == ["itunes": PodcastFeedWriter.itunesNamespace, "atom": PodcastFeedWriter.atomNamespace])
        let channel = try #require(FeedXML.child(root, "channel"))
        let selfLink = FeedXML.child(channel, "atom:link")
        #expect(FeedXML.attribute(selfLink, "href") == Self.channel.selfURL)
        #expect(FeedXML.attribute(selfLink, "rel") == "self")
        #expect(FeedXML.attribute(selfLink, "type") == "application/rss+xml")
        #expect(FeedXML.attribute(FeedXML.child(channel, "itunes:image"), "href") == Self.channel.imageURL)
        #expect(FeedXML.text(FeedXML.child(channel, "itunes:explicit")) == "false")
        #expect(FeedXML.text(FeedXML.child(channel, "itunes:type")) == "episodic")
        #expect(FeedXML.text(FeedXML.child(channel, "lastBuildDate")) == "Sun, 22 Nov 2026 00:54:46 +0000")
        #expect(FeedXML.text(FeedXML.child(channel, "language")) == "en-us")

        let categories = FeedXML.children(channel, "itunes:category")
        #expect(categories.map { FeedXML.attribute($0, "text") } == ["Technology", "Society & Culture"])
        #expect(FeedXML.children(categories[0], "itunes:category").map { FeedXML.attribute($0, "text") } == ["Tech News"])
        #expect(FeedXML.children(categories[1], "itunes:category").isEmpty)
        #expect(FeedXML.children(channel, "item").isEmpty)
    }

    @Test func rfc822Dates() {
        #expect(PodcastFeedWriter.rfc822(Self.buildDate) == "Sun, 22 Nov 2026 00:54:46 +0000")
        #expect(PodcastFeedWriter.rfc822(Date(timeIntervalSince1970: 0)) == "Thu, 01 Jan 1970 00:00:00 +0000")
        #expect(PodcastFeedWriter.rfc822(Date(timeIntervalSince1970: 951_782_400.999)) == "Tue, 29 Feb 2000 00:00:00 +0000")
        #expect(PodcastFeedWriter.rfc822(Date(timeIntervalSince1970: -1)) == "Wed, 31 Dec 1969 23:59:59 +0000")
    }

    @Test func goldenTwoItemFeed() throws {
        let bytes = try PodcastFeedWriter(textStyle: .legacyPodcast).render(channel: Self.channel, items: Self.twoItems)
        let url = FeedGolden.url("podcast-feed-2-items.xml")
        if ProcessInfo.processInfo.environment["STORESYNC_UPDATE_GOLDENS"] == "1" {
            try AtomicFile.write(bytes, to: url)
        }
        let golden = try Array(Data(contentsOf: url))
        if bytes != golden {
            let actual = FileManager.default.temporaryDirectory.appendingPathComponent("podcast-feed-2-items.actual.xml")
            try? Data(bytes).write(to: actual)
            Issue.record("feed differs from \(url.path); actual output in \(actual.path) (STORESYNC_UPDATE_GOLDENS=1 rewrites the golden)")
        }
    }

    /// The encoding the exports publish (the default): its own golden file, so
    /// a change to what podcast apps receive is always a reviewed change.
    @Test func goldenTwoItemFeedForPodcastApps() throws {
        let bytes = try PodcastFeedWriter().render(channel: Self.channel, items: Self.twoItems)
        let url = FeedGolden.url("podcast-apps-feed-2-items.xml")
        if ProcessInfo.processInfo.environment["STORESYNC_UPDATE_GOLDENS"] == "1" {
            try AtomicFile.write(bytes, to: url)
        }
        let golden = try Array(Data(contentsOf: url))
        #expect(bytes == golden, "feed differs from \(url.path) (STORESYNC_UPDATE_GOLDENS=1 rewrites the golden)")
        #expect(bytes != (try PodcastFeedWriter(textStyle: .legacyPodcast).render(channel: Self.channel, items: Self.twoItems)))
    }

    @Test func sameInputSameBytesOnDisk() throws {
        try withTemporaryDirectory { dir throws in
            let writer = PodcastFeedWriter(textStyle: .legacyPodcast)
            let a = dir.appendingPathComponent("a/feed.xml")
            let b = dir.appendingPathComponent("b/feed.xml")
            let resultA = try writer.write(channel: Self.channel, items: Self.trickyItems(), to: a)
            let resultB = try writer.write(channel: Self.channel, items: Self.trickyItems(), to: b)
            let bytesA = try Array(Data(contentsOf: a))
            #expect(bytesA == Array(try Data(contentsOf: b)))
            #expect(bytesA == (try writer.render(channel: Self.channel, items: Self.trickyItems())))
            #expect(resultA == resultB)
            #expect(resultA.itemCount == Self.trickyTexts.count)
            #expect(resultA.byteCount == Int64(bytesA.count))
            #expect(try directoryListing(dir.appendingPathComponent("a")) == ["feed.xml"])
        }
    }

    @Test func compactOutputIsValidToo() throws {
        let bytes = try PodcastFeedWriter(indent: false, textStyle: .legacyPodcast).render(channel: Self.channel, items: Self.trickyItems())
        try XMLValidator.validateStrict(Data(bytes), name: "compact.xml")
        let parsed = try ParsedFeed(bytes)
        #expect(FeedXML.children(try #require(FeedXML.child(parsed.root, "channel")), "item").count == Self.trickyTexts.count)
    }

    @Test func invalidDocumentIsNeverPublished() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("feed.xml")
            let previous = try PodcastFeedWriter(textStyle: .legacyPodcast).write(channel: Self.channel, items: Self.twoItems, to: url)
            let before = try Array(Data(contentsOf: url))
            #expect(previous.byteCount == Int64(before.count))

            // An undeclared namespace prefix: libxml2's writer emits it happily, the strict
            // re-parse refuses it, and the rename never happens.
            do {
                try XMLDocumentWriter.write(to: url) { doc in
                    try doc.startElement("rss")
                    for i in 0..<2_000 { try doc.element("title", "filler \(i)") }
                    try doc.element("itunes:explicit", "true")
                    try doc.endElement()
                }
                Issue.record("expected invalidXML")
            } catch let ExportError.invalidXML(name, line, _, message) {
                #expect(name == "feed.xml")
                #expect(line == 2_003)
                #expect(message.contains("itunes"))
            }
            #expect(try Array(Data(contentsOf: url)) == before)
            #expect(try directoryListing(dir) == ["feed.xml"])
        }
    }

    @Test func outputErrorsPropagateUnchanged() throws {
        struct DiskFull: Error {}
        var received = 0
        do {
            try XMLDocumentWriter.produce(name: "feed.xml", emit: { chunk in
                received += chunk.count
                if received > 20_000 { throw DiskFull() }
            }, body: { doc in
                _ = try PodcastFeedWriter.writeFeed(channel: Self.channel, items: Self.trickyItems() + Self.trickyItems()
                    + Array(repeating: Self.twoItems[0], count: 200), into: doc)
            })
            Issue.record("expected DiskFull")
        } catch is DiskFull {
            // The sink's own error, not a generic "xmlTextWriter failed".
        }
    }

    @Test func writerUseAfterFinishThrows() throws {
        var escaped: XMLDocumentWriter?
        _ = try XMLDocumentWriter.render(name: "x.xml") { doc in
            escaped = doc
            try doc.element("root", "x")
        }
        #expect(throws: ExportError.self) { try escaped?.element("late", "y") }
    }

    @Test func lazySequencesStream() throws {
        let items = (0..<1_000).lazy.map { i in
            FeedItem(guid: "g\(i)", title: "Item \(i)", description: "d", pubDate: Self.buildDate)
        }
        try withTemporaryDirectory { dir throws in
            let result = try PodcastFeedWriter(textStyle: .legacyPodcast).write(channel: Self.channel, items: items, to: dir.appendingPathComponent("f.xml"))
            #expect(result.itemCount == 1_000)
        }
    }
}
