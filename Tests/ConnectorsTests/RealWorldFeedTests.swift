import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing

/// Feeds as publishers really write them (issue 28, items 1–5 and 9): each
/// case a family of inputs that shows the rule, read as podcast apps read it.
@Suite struct RealWorldFeedTests {
    static let feedURL = URL(string: "https://feeds.example.com/shows/show.xml")!
    static let itunes = #"xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd""#

    static func decode(_ body: [UInt8], headers: [String: String] = [:]) throws -> DecodedPage<Record> {
        try PodcastFeed.decodeFeed(HTTPResponse(url: feedURL, status: 200, headers: headers, body: body), podcastKey: "42",
                                   listedFeedURL: feedURL.absoluteString)
    }

    static func decode(_ text: String, headers: [String: String] = [:]) throws -> DecodedPage<Record> {
        try decode(Array(text.utf8), headers: headers)
    }

    static func episodes(_ page: DecodedPage<Record>) throws -> [[String: JSONValue]] {
        try page.items.filter { $0.entity == .episode }.map { try $0.fields() }
    }

    static func feed(_ items: String, prolog: String = "", declaration: String = #"<?xml version="1.0" encoding="UTF-8"?>"#) -> String {
        """
        \(declaration)\(prolog)
        <rss version="2.0" \(itunes)>
        <channel><title>Show</title>
        \(items)
        </channel>
        </rss>
        """
    }

    /// A complete read: nothing recovered, so the feed may drive removals.
    static func expectComplete(_ page: DecodedPage<Record>, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(page.recoveredErrors.isEmpty, "\(page.recoveredErrors)", sourceLocation: sourceLocation)
        #expect(!page.mayLackItems, sourceLocation: sourceLocation)
    }

    // MARK: 1. A label that lies

    /// Windows-1252 bytes where Latin-1 has C1 controls: €, ‚, „, ’, “, ”, –, —, ™.
    static let windows1252Sample: [(byte: UInt8, scalar: Unicode.Scalar)] = [
        (0x80, "\u{20AC}"), (0x82, "\u{201A}"), (0x84, "\u{201E}"), (0x92, "\u{2019}"), (0x93, "\u{201C}"),
        (0x94, "\u{201D}"), (0x96, "\u{2013}"), (0x97, "\u{2014}"), (0x99, "\u{2122}"),
    ]

    /// `Caf\u{E9} ` followed by the sample's bytes, and the text they mean.
    static func windows1252Title() -> (bytes: [UInt8], text: String) {
        var bytes = Array("Caf".utf8) + [0xE9, 0x20]
        var text = "Caf\u{E9} "
        for (byte, scalar) in windows1252Sample {
            bytes.append(byte)
            text.unicodeScalars.append(scalar)
        }
        return (bytes, text)
    }

    static func feedBytes(title: [UInt8], declaration: String) -> [UInt8] {
        let parts = feed("<item><guid>1</guid><title>TITLE</title></item>", declaration: declaration).components(separatedBy: "TITLE")
        return Array(parts[0].utf8) + title + Array(parts[1].utf8)
    }

    @Test(arguments: FeedCharset.windows1252Labels.sorted())
    func everyLabelTheWHATWGTableMapsToWindows1252ReadsWindows1252(label: String) throws {
        let (title, text) = Self.windows1252Title()
        // In the document's declaration, as the label was written (case and all)…
        for spelling in [label, label.uppercased()] {
            let page = try Self.decode(Self.feedBytes(title: title, declaration: "<?xml version=\"1.0\" encoding=\"\(spelling)\"?>"))
            // `iso_8859-1:1987` is no XML encoding name (no colon allowed): that
            // declaration is an XML error of its own, read in recovery, text intact.
            if !label.contains(":") { Self.expectComplete(page) }
            #expect(try Self.episodes(page).first?["trackName"] == .string(text), "declared \(spelling)")
        }
        // …and in the HTTP header, which overrides a declaration.
        let page = try Self.decode(Self.feedBytes(title: title, declaration: #"<?xml version="1.0" encoding="UTF-8"?>"#),
                                   headers: ["Content-Type": "application/rss+xml; charset=\"\(label)\""])
        Self.expectComplete(page)
        #expect(try Self.episodes(page).first?["trackName"] == .string(text), "header \(label)")
    }

    @Test func noC1ControlCharacterIsEverStoredFromALatin1LabelledFeed() throws {
        // Every byte 0x80–0xFF under the most common lying label.
        // (Windows-1252 leaves five undefined; they keep their C1 meaning, as in browsers.)
        let undefined: Set<UInt8> = [0x81, 0x8D, 0x8F, 0x90, 0x9D]
        let bytes: [UInt8] = (0x80...0xFF).map { UInt8($0) }.filter { !undefined.contains($0) }
        let page = try Self.decode(Self.feedBytes(title: bytes, declaration: #"<?xml version="1.0" encoding="ISO-8859-1"?>"#))
        let title = try #require(try Self.episodes(page).first?["trackName"]?.stringValue)
        let values: [UInt32] = title.unicodeScalars.map { $0.value }
        #expect(values.count == bytes.count)
        #expect(!values.contains { $0 >= 0x80 && $0 <= 0x9F }, "\(values)")
    }

    @Test func aUTF8HeaderOverABodyThatIsNotUTF8DefersToTheDeclaration() throws {
        let (title, text) = Self.windows1252Title()
        let page = try Self.decode(Self.feedBytes(title: title, declaration: #"<?xml version="1.0" encoding="latin1"?>"#),
                                   headers: ["Content-Type": "text/xml; charset=utf-8"])
        Self.expectComplete(page)
        #expect(try Self.episodes(page).first?["trackName"] == .string(text))
    }

    @Test(arguments: ["iso-8859-9", "latin5", "windows-1254"])
    func latin5LabelsReadAsWindows1254(label: String) throws {
        // 0x80 is € in windows-1254 and a C1 control in ISO-8859-9; 0xF0 is ğ in both.
        let page = try Self.decode(Self.feedBytes(title: [0x80, 0x20, 0xF0], declaration: "<?xml version=\"1.0\" encoding=\"\(label)\"?>"))
        #expect(try Self.episodes(page).first?["trackName"] == .string("\u{20AC} \u{11F}"))
    }

    // MARK: 2. A bare & in an attribute

    @Test(arguments: [
        "https://cdn.example.com/default.mp3?aid=rss_feed&awCollectionId=1234&awEpisodeId=5678&feed=abc",
        "https://cdn.example.com/a.mp3?x=1&",
        "https://cdn.example.com/a.mp3?a&b&&c=&#",
        "https://cdn.example.com/a.mp3?q=&1abc;&#x;&;",
        "https://cdn.example.com/a.mp3?t=Tom&Jerry=1&amp=2&lt",
    ])
    func aBareAmpersandIsThePublishersText(url: String) throws {
        let text = Self.feed("""
            <item><guid>1</guid><title>Tom & Jerry &copy 2024</title>
            <enclosure url="\(url)" length="1" type="audio/mpeg"/>
            <link>\(url)</link></item>
            <item><guid>2</guid><title><![CDATA[Kept & as is &amp; in CDATA]]></title><description>a &amp; b &#38; c &lt;</description></item>
            """)
        let page = try Self.decode(text)
        Self.expectComplete(page)
        let items = try Self.episodes(page)
        #expect(items.count == 2)
        let expected = URL(string: url)?.absoluteString ?? url.addingPercentEncoding(withAllowedCharacters: .urlFragmentAllowed)
        #expect(items.first?["episodeUrl"] == expected.map(JSONValue.string), "\(url)")
        #expect(items.first?["trackName"] == .string("Tom & Jerry &copy 2024"))
        #expect(items.last?["trackName"] == .string("Kept & as is &amp; in CDATA"))
        #expect(items.last?["description"] == .string("a & b & c <"))
    }

    // MARK: 3. Internal DTD entities

    @Test func internalEntitiesAreExpandedInTextAndAttributes() throws {
        let text = Self.feed("""
            <item><guid isPermaLink="false">&id;2024:1</guid><title>&show; #1</title>
            <enclosure url="&cdn;one.mp3" length="1" type="audio/mpeg"/></item>
            <item><guid isPermaLink="false">&id;2024:2</guid><title>&quoted;</title>
            <enclosure url="&cdn;two.mp3?a=&quoted;" length="1" type="audio/mpeg"/></item>
            """, prolog: """

            <!DOCTYPE rss [
              <!-- the publisher's shorthands -->
              <!ENTITY id "tag:example.com,">
              <!ENTITY cdn 'https://cdn.example.com/&year;/'>
              <!ENTITY year "2024">
              <!ENTITY show "The &lt;Best&gt; Show &amp; Friends">
              <!ENTITY quoted 'say "hi" &#38; bye'>
              <!ELEMENT rss ANY>
            ]>
            """)
        let page = try Self.decode(text)
        Self.expectComplete(page)
        let items = try Self.episodes(page)
        #expect(items.map { $0["guid"] } == [.string("tag:example.com,2024:1"), .string("tag:example.com,2024:2")])
        #expect(items.first?["trackName"] == .string("The <Best> Show & Friends #1"))
        #expect(items.first?["episodeUrl"] == .string("https://cdn.example.com/2024/one.mp3"))
        #expect(items.last?["trackName"] == .string("say \"hi\" & bye"))
        #expect(items.last?["episodeUrl"]?.stringValue?.hasPrefix("https://cdn.example.com/2024/two.mp3?a=say") == true)
    }

    @Test func aBillionLaughsFeedIsRefusedAtOnceWithNothingStored() throws {
        var declarations = #"<!ENTITY lol0 "lol">"#
        for level in 1...9 {
            declarations += "\n<!ENTITY lol\(level) \"" + String(repeating: "&lol\(level - 1);", count: 10) + "\">"
        }
        let text = Self.feed("<item><guid>1</guid><title>&lol9;</title></item>", prolog: "\n<!DOCTYPE rss [\(declarations)]>")
        let started = ContinuousClock.now
        #expect {
            _ = try Self.decode(text)
        } throws: { error in
            (error as? StoreSyncError)?.message.contains("billion-laughs") == true
        }
        // Bounded work, not a timing assertion: the refusal comes long before 3 GB are built.
        #expect(ContinuousClock.now - started < .seconds(30))
    }

    @Test(arguments: [
        ("<!ENTITY secret SYSTEM \"file:///etc/passwd\">", "&secret;", "external entity 'secret'"),
        ("<!ENTITY pub PUBLIC \"-//X//EN\" \"http://x.example/e\">", "&pub;", "external entity 'pub'"),
        ("<!ENTITY % pe \"<!ENTITY x 'y'>\"> %pe;", "&x;", "parameter entity"),
        ("<!ENTITY a \"&b;\"><!ENTITY b \"&a;\">", "&a;", "refers to itself"),
        ("<!ENTITY big \"" + String(repeating: "x", count: 200_000) + "\">", String(repeating: "&big;", count: 60), "expand past"),
    ])
    func entitiesOutsideTheBoundsRefuseTheFeed(declaration: String, use: String, reason: String) throws {
        let text = Self.feed("<item><guid>1</guid><title>\(use)</title></item>", prolog: "\n<!DOCTYPE rss [\(declaration)]>")
        #expect {
            _ = try Self.decode(text)
        } throws: { error in
            guard let error = error as? StoreSyncError, error.code == .malformedPage else { return false }
            return error.message.contains(reason) && error.location == Self.feedURL.absoluteString
        }
    }

    @Test func entitiesNestedDeeperThanTheBoundAreRefused() throws {
        var declarations = #"<!ENTITY e0 "deep">"#
        for level in 1...(FeedMarkup.maxNesting + 1) { declarations += "<!ENTITY e\(level) \"&e\(level - 1);\">" }
        let deep = Self.feed("<item><guid>1</guid><title>&e\(FeedMarkup.maxNesting + 1);</title></item>",
                             prolog: "\n<!DOCTYPE rss [\(declarations)]>")
        #expect(throws: StoreSyncError.self) { try Self.decode(deep) }
        let fine = Self.feed("<item><guid>1</guid><title>&e\(FeedMarkup.maxNesting - 1);</title></item>",
                             prolog: "\n<!DOCTYPE rss [\(declarations)]>")
        #expect(try Self.episodes(try Self.decode(fine)).first?["trackName"] == .string("deep"))
    }

    // MARK: 4. Moves without a channel

    @Test func aMoveWithoutAChannelIsTheFeedsNewAddress() throws {
        let page = try Self.decode("""
            <?xml version="1.0"?>
            <rss version="2.0"><redirect><newLocation>https://new.example.com/feed.xml</newLocation></redirect></rss>
            """)
        let podcast = try #require(page.items.first { $0.entity == .podcast }).fields()
        #expect(podcast["feedUrl"] == .string("https://new.example.com/feed.xml"))
        #expect(page.mayLackItems, "a stub removes nothing")
    }

    @Test func itemsWrittenStraightIntoRSSAreStoredAndRemoveNothing() throws {
        let page = try Self.decode("""
            <rss version="2.0"><item><guid>a</guid><title>A</title></item><item><guid>b</guid><title>B</title></item></rss>
            """)
        #expect(try Self.episodes(page).map { $0["guid"] } == [.string("a"), .string("b")])
        #expect(page.mayLackItems)
        let empty = try Self.decode(#"<rss version="2.0"></rss>"#)
        #expect(empty.items.isEmpty && empty.mayLackItems, "an empty <rss> is read, and removes nothing")
    }

    // MARK: 9. A NUL byte

    @Test(arguments: [[0x00], [0x00, 0x00, 0x00], [0x01, 0x0B, 0x1F], [0x00, 0x0C]] as [[UInt8]])
    func aFeedIsReadPastBytesXMLCannotHold(bad: [UInt8]) throws {
        let parts = Self.feed("""
            <item><guid>1</guid><title>oneBAD</title></item>
            <item><guid>2</guid><title>two</title></item>
            <item><guid>3</guid><title>three</title></item>
            """).components(separatedBy: "BAD")
        let page = try Self.decode(Array(parts[0].utf8) + bad + Array(parts[1].utf8))
        #expect(try Self.episodes(page).map { $0["trackName"] } == [.string("one"), .string("two"), .string("three")])
        #expect(page.mayLackItems, "read in recovery mode")
        let first = try #require(page.recoveredErrors.first)
        let count = bad.count
        #expect(first.contains("line 4") && first.contains("\(count) byte\(count == 1 ? "" : "s") XML cannot hold"), "\(first)")
    }
}
