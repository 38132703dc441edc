import Foundation
import Testing
@testable import Export

/// The direct XML engine writes, byte for byte, what libxml2's xmlTextWriter
/// writes for the same calls: every feed and OPML writer, indented or not, over
/// the tricky fixtures, and hand-built documents for the cases they do not reach.
@Suite struct XMLEngineTests {
    static func both(indent: Bool, _ body: (XMLDocumentWriter) throws -> Void) throws -> (direct: [UInt8], libxml2: [UInt8]) {
        (try XMLDocumentWriter.render(name: "d.xml", indent: indent, engine: .bytes, body),
         try XMLDocumentWriter.render(name: "d.xml", indent: indent, engine: .libxml2, body))
    }

    static func expectSame(indent: Bool, _ body: (XMLDocumentWriter) throws -> Void, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let (direct, libxml2) = try both(indent: indent, body)
        #expect(String(decoding: direct, as: UTF8.self) == String(decoding: libxml2, as: UTF8.self), sourceLocation: sourceLocation)
        #expect(direct == libxml2, sourceLocation: sourceLocation)
    }

    @Test(arguments: [true, false])
    func feedsAreTheSameBytes(indent: Bool) throws {
        let tricky = PodcastFeedWriterTests.trickyItems() + FeedFixtures.trickyItems()
        for style in [RSSTextStyle.podcastApps, .legacyPodcast] {
            try Self.expectSame(indent: indent) { doc in
                _ = try PodcastFeedWriter.writeFeed(channel: PodcastFeedWriterTests.channel,
                                                    items: tricky + PodcastFeedWriterTests.twoItems, textStyle: style, into: doc)
            }
        }
        try Self.expectSame(indent: indent) { doc in
            _ = try RSSFeedWriter.writeFeed(channel: FeedFixtures.channel, items: tricky + FeedFixtures.twoItems, into: doc)
        }
        try Self.expectSame(indent: indent) { doc in
            _ = try AtomFeedWriter.writeFeed(channel: FeedFixtures.channel, items: tricky + FeedFixtures.twoItems, into: doc)
        }
        let feeds = [
            OPMLFeed(title: "Joe <Live> & \"friends\" ]]> 🎙️", xmlURL: "https://feeds.example.com/joe.xml?a=1&b=2",
                     htmlURL: "https://example.com/é", description: "Tab\tLF\nCR\rCRLF\r\n"),
            OPMLFeed(title: "", xmlURL: "https://feeds.example.com/x.xml"),
        ]
        try Self.expectSame(indent: indent) { doc in
            _ = try OPMLWriter.writeDocument(title: "Feeds & more", dateCreated: FeedFixtures.buildDate, body: .flat(feeds), into: doc)
        }
        try Self.expectSame(indent: indent) { doc in
            _ = try OPMLWriter.writeDocument(title: "G", dateCreated: FeedFixtures.buildDate,
                                             body: .grouped([("A & B", feeds), ("", [])]), into: doc)
        }
    }

    @Test(arguments: [true, false])
    func handBuiltDocumentsAreTheSameBytes(indent: Bool) throws {
        let texts = ["", " ", "plain", "<&>\"'", "a\r\nb\tc\rd\ne", "]]>", "naïve 中文 🎙️", "\u{1}\u{0}x\u{FFFE}", "&#13; &amp;"]
        try Self.expectSame(indent: indent) { doc in
            try doc.startElement("root")
            try doc.attribute("a", "1")
            for text in texts {
                try doc.element("t", text)
                try doc.startElement("e")
                try doc.attribute("v", text)
                try doc.attribute("w", text)
                try doc.endElement()
                try doc.startElement("mixed")
                try doc.attribute("v", text)
                try doc.text(text)
                try doc.text(text)
                try doc.endElement()
                try doc.startElement("outer")
                try doc.startElement("inner")
                try doc.startElement("leaf")
                try doc.endElement()
                try doc.element("x", text)
                try doc.endElement()
                try doc.emptyElement("empty", attributes: ["k": text])
                try doc.endElement()
            }
            // Elements left open are closed by the end of the document, as xmlTextWriter does.
            try doc.startElement("open")
            try doc.startElement("deeper")
            try doc.text("left open")
        }
        try Self.expectSame(indent: indent) { doc in
            try doc.startElement("only")
            try doc.endElement()
        }
    }

    @Test func anUnbalancedEndIsAnError() throws {
        #expect(throws: ExportError.self) {
            _ = try XMLDocumentWriter.render(name: "x.xml", engine: .bytes) { doc in
                try doc.element("root", "x")
                try doc.endElement()
            }
        }
    }
}
