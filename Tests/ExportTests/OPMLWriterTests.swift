import CLibXML2
import Foundation
import Testing
@testable import Export

@Suite struct OPMLWriterTests {
    typealias X = FeedXML

    static let groups: [(group: String, feeds: [OPMLFeed])] = [
        (group: "Society & Culture", feeds: [
            OPMLFeed(title: "Joe <Live> & \"friends\" ]]> 🎙️", xmlURL: "https://feeds.example.com/joe.xml?a=1&b=2",
                     htmlURL: "https://example.com/joe?x=<1>"),
            OPMLFeed(title: "Tab\tand\nnewline\u{1} 'quoted'", xmlURL: "https://feeds.example.com/tab.xml"),
        ]),
        (group: "Technology/Tech News <b>", feeds: [
            OPMLFeed(title: "&amp; is literal", xmlURL: "https://feeds.example.com/amp.xml",
                     htmlURL: "https://example.com/amp", description: "a < b & c"),
        ]),
    ]

    static let flat: [OPMLFeed] = [
        OPMLFeed(title: "Joe <Live> & \"friends\" 🎙️", xmlURL: "https://feeds.example.com/joe.xml?a=1&b=2",
                 htmlURL: "https://example.com/joe"),
        OPMLFeed(title: "&amp; is literal\tTab", xmlURL: "https://feeds.example.com/amp.xml"),
    ]

    @Test func goldenGrouped() throws {
        let bytes = try OPMLWriter().render(title: "Podcasts <Live> & more", dateCreated: FeedFixtures.buildDate, groups: Self.groups)
        try FeedGolden.check(bytes, against: "opml-grouped.opml")
    }

    @Test func goldenFlatTwoFeeds() throws {
        let bytes = try OPMLWriter().render(title: "Podcasts <Live> & more", dateCreated: FeedFixtures.buildDate, feeds: Self.flat)
        try FeedGolden.check(bytes, against: "opml-2-feeds.opml")
    }

    @Test func groupedStructureReadsBackExactly() throws {
        let bytes = try OPMLWriter().render(title: "Podcasts <Live> & more", dateCreated: FeedFixtures.buildDate, groups: Self.groups)
        try XMLValidator.validateStrict(Data(bytes), name: "feeds.opml")
        let tree = try FeedXMLTree(bytes)
        defer { withExtendedLifetime(tree) {} }
        let root = tree.root
        #expect(X.qualifiedName(root) == "opml")
        #expect(X.attribute(root, "version") == "2.0")
        #expect(X.namespaceDeclarations(root).isEmpty)
        #expect(X.descendants(root).allSatisfy { X.namespaceURI($0) == nil })
        #expect(X.children(root).map(X.qualifiedName) == ["head", "body"])
        let head = try #require(X.child(root, "head"))
        #expect(X.children(head).map(X.qualifiedName) == ["title", "dateCreated"])
        #expect(X.text(X.child(head, "title")) == "Podcasts <Live> & more")
        #expect(X.text(X.child(head, "dateCreated")) == "Sun, 22 Nov 2026 00:54:46 +0000")

        let body = try #require(X.child(root, "body"))
        let groupNodes = X.children(body, "outline")
        #expect(groupNodes.count == Self.groups.count)
        for (node, group) in zip(groupNodes, Self.groups) {
            #expect(X.attribute(node, "text") == group.group)
            #expect(X.attribute(node, "title") == group.group)
            #expect(X.attribute(node, "type") == nil)
            let feeds = X.children(node, "outline")
            #expect(feeds.count == group.feeds.count)
            for (feedNode, feed) in zip(feeds, group.feeds) {
                // Attribute values are plain text, read back exactly (minus what XML cannot hold).
                #expect(X.attribute(feedNode, "text") == XMLText.xmlSafe(feed.title))
                #expect(X.attribute(feedNode, "title") == XMLText.xmlSafe(feed.title))
                #expect(X.attribute(feedNode, "type") == "rss")
                #expect(X.attribute(feedNode, "xmlUrl") == feed.xmlURL)
                #expect(X.attribute(feedNode, "htmlUrl") == feed.htmlURL)
                #expect(X.attribute(feedNode, "description") == feed.description)
                #expect(Array(X.attributeNames(feedNode).prefix(4)) == ["text", "title", "type", "xmlUrl"])
                #expect(X.children(feedNode).isEmpty)
            }
        }
        // Tab and newline in an attribute survive as character references.
        #expect(X.attribute(X.children(groupNodes[0], "outline")[1], "text") == "Tab\tand\nnewline 'quoted'")
    }

    @Test func flatListHasNoGroups() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("feeds.opml")
            let result = try OPMLWriter().write(title: "t", dateCreated: FeedFixtures.buildDate, feeds: Self.flat, to: url)
            #expect(result.feedCount == 2)
            #expect(result.groupCount == 0)
            let bytes = try Array(Data(contentsOf: url))
            #expect(result.byteCount == Int64(bytes.count))
            let tree = try FeedXMLTree(bytes)
            defer { withExtendedLifetime(tree) {} }
            let body = try #require(X.child(tree.root, "body"))
            #expect(X.children(body, "outline").map { X.attribute($0, "xmlUrl") } == Self.flat.map(\.xmlURL))
        }
    }

    @Test func countsAndEmptyGroups() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("feeds.opml")
            let groups = Self.groups + [(group: "Empty", feeds: [])]
            let result = try OPMLWriter().write(title: "t", dateCreated: FeedFixtures.buildDate, groups: groups, to: url)
            #expect(result.feedCount == 3)
            #expect(result.groupCount == 3)
            let tree = try FeedXMLTree(try Array(Data(contentsOf: url)))
            defer { withExtendedLifetime(tree) {} }
            let body = try #require(X.child(tree.root, "body"))
            #expect(X.children(try #require(X.children(body, "outline").last)).isEmpty)
        }
    }

    @Test func sameInputSameBytesOnDisk() throws {
        try withTemporaryDirectory { dir throws in
            let a = dir.appendingPathComponent("a/feeds.opml")
            let b = dir.appendingPathComponent("b/feeds.opml")
            let resultA = try OPMLWriter().write(title: "t & u", dateCreated: FeedFixtures.buildDate, groups: Self.groups, to: a)
            let resultB = try OPMLWriter().write(title: "t & u", dateCreated: FeedFixtures.buildDate, groups: Self.groups, to: b)
            let bytesA = try Array(Data(contentsOf: a))
            #expect(bytesA == Array(try Data(contentsOf: b)))
            #expect(bytesA == (try OPMLWriter().render(title: "t & u", dateCreated: FeedFixtures.buildDate, groups: Self.groups)))
            #expect(resultA == resultB)
            #expect(try directoryListing(dir.appendingPathComponent("a")) == ["feeds.opml"])
        }
    }

    @Test func compactOutputIsValidToo() throws {
        let bytes = try OPMLWriter(indent: false).render(title: "t", dateCreated: FeedFixtures.buildDate, groups: Self.groups)
        try XMLValidator.validateStrict(Data(bytes), name: "compact.opml")
        // The declaration, then the whole document on one line.
        #expect(String(decoding: bytes, as: UTF8.self).split(separator: "\n").count == 2)
    }

    @Test func invalidInputIsNeverPublished() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("feeds.opml")
            try OPMLWriter().write(title: "t", dateCreated: FeedFixtures.buildDate, groups: Self.groups, to: url)
            let before = try Array(Data(contentsOf: url))

            var groups = Self.groups
            groups[1].feeds.append(OPMLFeed(title: "No URL", xmlURL: "  "))
            do {
                try OPMLWriter().write(title: "t", dateCreated: FeedFixtures.buildDate, groups: groups, to: url)
                Issue.record("expected invalidInput")
            } catch let ExportError.invalidInput(path, reason) {
                #expect(path == "feeds.opml")
                #expect(reason.contains("No URL"))
            }
            #expect(try Array(Data(contentsOf: url)) == before)
            #expect(try directoryListing(dir) == ["feeds.opml"])
        }
    }
}
