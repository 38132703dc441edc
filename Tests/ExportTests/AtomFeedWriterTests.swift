import CLibXML2
import Foundation
import Testing
@testable import Export

@Suite struct AtomFeedWriterTests {
    typealias X = FeedXML

    /// Children of `node` in the Atom namespace named `name`.
    private func atom(_ node: xmlNodePtr?, _ name: String) -> [xmlNodePtr] {
        guard let node else { return [] }
        return X.children(node).filter { X.namespaceURI($0) == AtomFeedWriter.namespace && X.localName($0) == name }
    }

    private func first(_ node: xmlNodePtr?, _ name: String) -> xmlNodePtr? { atom(node, name).first }

    @Test func goldenTwoItemFeed() throws {
        let bytes = try AtomFeedWriter().render(channel: FeedFixtures.channel, items: FeedFixtures.twoItems)
        try FeedGolden.check(bytes, against: "atom-feed-2-items.xml")
    }

    @Test func structureAndNamespaces() throws {
        let bytes = try AtomFeedWriter().render(channel: FeedFixtures.channel, items: FeedFixtures.twoItems)
        let tree = try FeedXMLTree(bytes)
        defer { withExtendedLifetime(tree) {} }
        let feed = tree.root
        #expect(X.localName(feed) == "feed")
        #expect(X.namespaceURI(feed) == AtomFeedWriter.namespace)
        // One default namespace, no prefixes: every element is Atom.
        #expect(X.namespaceDeclarations(feed) == ["": AtomFeedWriter.namespace])
        #expect(X.descendants(feed).allSatisfy { X.namespaceURI($0) == AtomFeedWriter.namespace && $0.pointee.ns.pointee.prefix == nil })
        #expect(X.attribute(feed, "lang") == "en-us")

        #expect(X.children(feed).map(X.localName) == [
            "id", "title", "subtitle", "updated", "link", "link", "author", "generator", "logo",
            "category", "category", "category", "entry", "entry",
        ])
        #expect(X.text(first(feed, "id")) == FeedFixtures.channel.selfURL)
        #expect(X.attribute(first(feed, "title"), "type") == "text")
        #expect(X.text(first(feed, "title")) == FeedFixtures.channel.title)
        #expect(X.text(first(feed, "subtitle")) == FeedFixtures.channel.description)
        #expect(X.text(first(feed, "updated")) == "2026-11-22T00:54:46Z")
        let links = atom(feed, "link")
        #expect(links.map { X.attribute($0, "rel") } == ["self", "alternate"])
        #expect(X.attribute(links[0], "href") == FeedFixtures.channel.selfURL)
        #expect(X.attribute(links[0], "type") == "application/atom+xml")
        #expect(X.attribute(links[1], "href") == FeedFixtures.channel.link)
        #expect(X.text(first(first(feed, "author"), "name")) == "Deals & Co")
        #expect(X.text(first(feed, "generator")) == "storesync tests")
        #expect(atom(feed, "category").map { X.attribute($0, "term") } == ["Shopping", "Deals & Offers", "News"])

        let entries = atom(feed, "entry")
        #expect(X.children(entries[0]).map(X.localName) == [
            "id", "title", "updated", "published", "link", "link", "author", "content",
        ])
        #expect(X.children(entries[1]).map(X.localName) == ["id", "title", "updated", "published", "content"])
        let e0 = entries[0], e1 = entries[1]
        #expect(X.text(first(e0, "id")) == "urn:storesync:listing:1001")
        #expect(X.text(first(e1, "id")) == "storesync:guid:listing%201000%20%3C%26%3E")
        #expect(X.text(first(e0, "updated")) == "2026-11-21T01:54:46Z")
        #expect(X.text(first(e0, "published")) == "2026-11-21T00:54:46Z")
        // No `updated` given: the publication date; fractions of a second are dropped.
        #expect(X.text(first(e1, "updated")) == "2026-11-20T00:54:46Z")
        #expect(X.text(first(e1, "published")) == "2026-11-20T00:54:46Z")
        let entryLinks = atom(e0, "link")
        #expect(entryLinks.map { X.attribute($0, "rel") } == ["alternate", "enclosure"])
        #expect(X.attribute(entryLinks[0], "href") == FeedFixtures.twoItems[0].link)
        #expect(X.attribute(entryLinks[1], "href") == "https://cdn.example.com/1001.jpg?w=1&h=2")
        #expect(X.attribute(entryLinks[1], "type") == "image/jpeg")
        #expect(X.attribute(entryLinks[1], "length") == "12345")
        #expect(X.text(first(first(e0, "author"), "name")) == "Joe & Ann")
    }

    /// `type="text"`: the reader gets the plain text, character for character — escaped
    /// once for XML, never HTML-escaped, line breaks and all.
    @Test func textConstructsArePlainTextExactly() throws {
        let items = FeedFixtures.trickyItems()
        let bytes = try AtomFeedWriter().render(channel: FeedFixtures.channel, items: items)
        try XMLValidator.validateStrict(Data(bytes), name: "tricky.atom")
        let tree = try FeedXMLTree(bytes)
        defer { withExtendedLifetime(tree) {} }
        let entries = atom(tree.root, "entry")
        #expect(entries.count == items.count)
        for (entry, item) in zip(entries, items) {
            #expect(X.attribute(first(entry, "title"), "type") == "text")
            #expect(X.text(first(entry, "title")) == XMLText.xmlSafe(item.title))
            #expect(X.attribute(first(entry, "content"), "type") == "text")
            #expect(X.text(first(entry, "content")) == XMLText.xmlSafe(item.description))
            #expect(X.text(first(entry, "id")) == AtomFeedWriter.entryID(for: item))
        }
        let wire = String(decoding: bytes, as: UTF8.self)
        #expect(wire.contains("<content type=\"text\">Joe &lt;Live&gt; Show &amp; friends</content>"))
        #expect(!wire.contains("&amp;lt;Live"))
        // CR survives as a character reference (a raw CR would be normalised away by parsers).
        #expect(wire.contains("Line two&#13;\nLine three&#13;Line four"))
    }

    @Test func entryIDs() {
        func id(_ guid: String, _ explicit: String? = nil) -> String {
            AtomFeedWriter.entryID(for: FeedItem(guid: guid, title: "t", description: "d", pubDate: FeedFixtures.buildDate, id: explicit))
        }
        #expect(id("urn:storesync:episode:1") == "urn:storesync:episode:1")
        #expect(id("storesync:podcast:42") == "storesync:podcast:42")
        #expect(id("https://example.com/ep/1?a=b#c") == "https://example.com/ep/1?a=b#c")
        #expect(id("tag:example.com,2026:é") == "tag:example.com,2026:é")
        #expect(id("12345") == "storesync:guid:12345")
        #expect(id("Buzzsprout-99 a") == "storesync:guid:Buzzsprout-99%20a")
        #expect(id("x:has space") == "storesync:guid:x%3Ahas%20space")
        #expect(id("bad%zz:") == "storesync:guid:bad%25zz%3A")
        #expect(id("1:bad%zz") == "storesync:guid:1%3Abad%25zz")
        #expect(id("é") == "storesync:guid:%C3%A9")
        #expect(id("") == "storesync:guid:")
        #expect(id("anything", "tag:example.com,2026:x") == "tag:example.com,2026:x")
        // The same guid always gives the same id (no randomness, no clock).
        #expect(id("guid-1 <&>") == id("guid-1 <&>"))
    }

    @Test func rfc3339Dates() {
        #expect(AtomFeedWriter.rfc3339(FeedFixtures.buildDate) == "2026-11-22T00:54:46Z")
        #expect(AtomFeedWriter.rfc3339(Date(timeIntervalSince1970: 0)) == "1970-01-01T00:00:00Z")
        #expect(AtomFeedWriter.rfc3339(Date(timeIntervalSince1970: 951_782_400.999)) == "2000-02-29T00:00:00Z")
        #expect(AtomFeedWriter.rfc3339(Date(timeIntervalSince1970: -1)) == "1969-12-31T23:59:59Z")
        #expect(AtomFeedWriter.rfc3339(Date(timeIntervalSince1970: -62_135_596_800)) == "0001-01-01T00:00:00Z")
    }

    @Test func feedIDFallsBackToSelfURL() throws {
        var channel = FeedFixtures.channel
        #expect(AtomFeedWriter.feedID(for: channel) == channel.selfURL)
        channel.id = "tag:example.com,2026:deals"
        let tree = try FeedXMLTree(try AtomFeedWriter().render(channel: channel, items: []))
        defer { withExtendedLifetime(tree) {} }
        #expect(X.text(first(tree.root, "id")) == "tag:example.com,2026:deals")
        #expect(atom(tree.root, "entry").isEmpty)
    }

    @Test func feedAuthorFallsBackToTitle() throws {
        var channel = FeedFixtures.channel
        channel.author = nil
        channel.imageURL = nil
        channel.description = ""
        let tree = try FeedXMLTree(try AtomFeedWriter().render(channel: channel, items: []))
        defer { withExtendedLifetime(tree) {} }
        #expect(X.text(first(first(tree.root, "author"), "name")) == channel.title)
        #expect(first(tree.root, "logo") == nil)
        #expect(first(tree.root, "subtitle") == nil)
    }

    @Test func sameInputSameBytesOnDisk() throws {
        try withTemporaryDirectory { dir throws in
            let a = dir.appendingPathComponent("a/feed.atom")
            let b = dir.appendingPathComponent("b/feed.atom")
            let resultA = try AtomFeedWriter().write(channel: FeedFixtures.channel, items: FeedFixtures.trickyItems(), to: a)
            let resultB = try AtomFeedWriter().write(channel: FeedFixtures.channel, items: FeedFixtures.trickyItems(), to: b)
            let bytesA = try Array(Data(contentsOf: a))
            #expect(bytesA == Array(try Data(contentsOf: b)))
            #expect(bytesA == (try AtomFeedWriter().render(channel: FeedFixtures.channel, items: FeedFixtures.trickyItems())))
            #expect(resultA == resultB)
            #expect(resultA.itemCount == FeedFixtures.trickyTexts.count)
            #expect(resultA.byteCount == Int64(bytesA.count))
            #expect(try directoryListing(dir.appendingPathComponent("a")) == ["feed.atom"])
        }
    }

    @Test func compactOutputIsValidToo() throws {
        let bytes = try AtomFeedWriter(indent: false).render(channel: FeedFixtures.channel, items: FeedFixtures.trickyItems())
        try XMLValidator.validateStrict(Data(bytes), name: "compact.atom")
        let tree = try FeedXMLTree(bytes)
        defer { withExtendedLifetime(tree) {} }
        #expect(atom(tree.root, "entry").count == FeedFixtures.trickyTexts.count)
    }

    @Test func invalidInputIsNeverPublished() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("feed.atom")
            try AtomFeedWriter().write(channel: FeedFixtures.channel, items: FeedFixtures.twoItems, to: url)
            let before = try Array(Data(contentsOf: url))

            var channel = FeedFixtures.channel
            channel.selfURL = ""
            channel.id = nil
            do {
                try AtomFeedWriter().write(channel: channel, items: FeedFixtures.trickyItems(), to: url)
                Issue.record("expected invalidInput")
            } catch let ExportError.invalidInput(path, reason) {
                #expect(path == "feed.atom")
                #expect(reason.contains("id"))
            }
            #expect(try Array(Data(contentsOf: url)) == before)
            #expect(try directoryListing(dir) == ["feed.atom"])
        }
    }

    /// One list of items gives both formats, and they agree on identity and time.
    @Test func rssAndAtomFromTheSameItemsAgree() throws {
        let items = FeedFixtures.twoItems
        let rss = try FeedXMLTree(try RSSFeedWriter().render(channel: FeedFixtures.channel, items: items))
        defer { withExtendedLifetime(rss) {} }
        let atomTree = try FeedXMLTree(try AtomFeedWriter().render(channel: FeedFixtures.channel, items: items))
        defer { withExtendedLifetime(atomTree) {} }
        let rssItems = X.children(try #require(X.child(rss.root, "channel")), "item")
        let entries = atom(atomTree.root, "entry")
        #expect(rssItems.count == entries.count)
        // An IRI guid is the Atom id itself.
        #expect(X.text(X.child(rssItems[0], "guid")) == X.text(first(entries[0], "id")))
        for (item, entry) in zip(rssItems, entries) {
            let rssDate = X.text(X.child(item, "pubDate"))
            let atomDate = X.text(first(entry, "published"))
            // Same second in both formats.
            #expect(rssDate?.contains(String(atomDate?.dropFirst(11).prefix(8) ?? "")) == true)
        }
    }
}
