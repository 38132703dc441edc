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

    @Test func aDeclaredUTF16OverAnEightBitBodyIsLeftToLibxml2() throws {
        // A known lie: `encoding="UTF-16"` on a UTF-8 file; libxml2 reads the bytes it has.
        let page = try Self.decode(Self.feed("<item><guid>1</guid><title>Caf\u{E9}</title></item>",
                                             declaration: #"<?xml version="1.0" encoding="UTF-16"?>"#))
        #expect(try Self.episodes(page).first?["trackName"] == .string("Caf\u{E9}"))
    }

    @Test func aRecoveredFeedInAnotherDeclaredEncodingKeepsItsCharacters() throws {
        // Mac Roman (0x8E is é), not well-formed further down: recovery must not read it as broken UTF-8.
        var bytes = Self.feedBytes(title: Array("Caf".utf8) + [0x8E], declaration: #"<?xml version="1.0" encoding="macintosh"?>"#)
        bytes += Array("<item><guid>2</guid><title>open".utf8)
        let page = try Self.decode(bytes)
        #expect(page.mayLackItems, "read in recovery mode")
        #expect(try Self.episodes(page).first?["trackName"] == .string("Caf\u{E9}"))
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

/// Podcasting 2.0 (issue 28): the `podcast:` tags a feed carries, read into
/// the canonical model as written, under either of the namespace's URIs.
@Suite struct PodcastNamespaceReadingTests {
    static let namespaces = [
        "https://podcastindex.org/namespace/1.0",
        "https://github.com/Podcastindex-org/podcast-namespace/blob/main/docs/1.0.md",
    ]

    static func feed(namespace: String) -> String {
        """
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:podcast="\(namespace)">
        <channel><title>Show</title>
          <podcast:locked owner="owner@example.com">yes</podcast:locked>
          <podcast:guid>917393e3-1b1e-5cef-ace4-edaa54e1f810</podcast:guid>
          <podcast:medium>Podcast</podcast:medium>
          <podcast:funding url="https://example.com/donate">Support the show!</podcast:funding>
          <podcast:funding url="/members">Members</podcast:funding>
          <podcast:person role="host" img="https://example.com/ann.jpg" href="https://example.com/ann">Ann Host</podcast:person>
          <podcast:location geo="geo:30.2672,97.7431" osm="R113314">Austin, TX</podcast:location>
          <podcast:trailer pubdate="Thu, 01 Apr 2021 08:00:00 EST" url="https://example.com/trailer.mp3" length="12345678" type="audio/mp3">Coming April 1st</podcast:trailer>
          <podcast:license url="https://creativecommons.org/licenses/by/4.0/">cc-by-4.0</podcast:license>
          <podcast:txt purpose="verify">S6lpp-7ZCn8-dZfGc-OoyaG</podcast:txt>
          <podcast:podroll><podcast:remoteItem feedGuid="abc-123" feedUrl="https://other.example/feed.xml"/></podcast:podroll>
          <item><guid>1</guid><title>One</title>
            <podcast:transcript url="https://example.com/ep1.vtt" type="text/vtt" language="en" rel="captions"/>
            <podcast:transcript url="transcripts/ep1.srt" type="application/x-subrip"/>
            <podcast:chapters url="https://example.com/ep1.json" type="application/json+chapters"/>
            <podcast:soundbite startTime="73.0" duration="60.0">The best minute</podcast:soundbite>
            <podcast:person role="guest" href="https://example.com/bob">Bob Guest</podcast:person>
            <podcast:season name="Volume Two">2</podcast:season>
            <podcast:episode display="Ch. 3">3</podcast:episode>
            <podcast:alternateEnclosure type="audio/opus" length="32400000" bitrate="96000" default="true" title="Opus">
              <podcast:source uri="https://example.com/ep1.opus"/>
              <podcast:source uri="ipfs://QmdwGqd3d2gFPGeJNLLCshdiPert45fMu84552Y4XHTy4y"/>
              <podcast:integrity type="sri" value="sha384-ExVqijgYHm15PqQqdXfW95x+Rs6C+d6E/ICxyQOeFevnxNLR/wtJNrNYTjIysUBo"/>
            </podcast:alternateEnclosure>
            <podcast:transcript/>
          </item>
          <item><guid>2</guid><title>Two</title><podcast:episode>315.5</podcast:episode><podcast:season>x</podcast:season></item>
        </channel></rss>
        """
    }

    @Test(arguments: namespaces)
    func everyTagIsReadIntoTheCanonicalModel(namespace: String) throws {
        let url = URL(string: "https://feeds.example.com/show.xml")!
        let page = try PodcastFeed.decodeFeed(HTTPResponse(url: url, status: 200, body: Array(Self.feed(namespace: namespace).utf8)),
                                              podcastKey: "42")
        let settings = PodcastFeedSettings(from: "podcasts")
        let podcast = settings.canonical(.podcast, try #require(page.items.first { $0.entity == .podcast }).fields()).fields
        #expect(podcast["locked"] == .int(1))
        #expect(podcast["locked_owner"] == .string("owner@example.com"))
        #expect(podcast["podcast_guid"] == .string("917393e3-1b1e-5cef-ace4-edaa54e1f810"))
        #expect(podcast["medium"] == .string("podcast"))
        #expect(podcast["funding"] == .string(#"[{"text":"Support the show!","url":"https://example.com/donate"},{"text":"Members","url":"https://feeds.example.com/members"}]"#))
        #expect(podcast["persons"] == .string(#"[{"href":"https://example.com/ann","img":"https://example.com/ann.jpg","name":"Ann Host","role":"host"}]"#))
        #expect(podcast["location"] == .string(#"{"geo":"geo:30.2672,97.7431","name":"Austin, TX","osm":"R113314"}"#))
        #expect(podcast["trailers"]?.stringValue?.contains(#""title":"Coming April 1st""#) == true)
        #expect(podcast["license"] == .string("cc-by-4.0"))
        #expect(podcast["license_url"] == .string("https://creativecommons.org/licenses/by/4.0/"))
        #expect(podcast["txt"] == .string(#"[{"purpose":"verify","text":"S6lpp-7ZCn8-dZfGc-OoyaG"}]"#))
        #expect(podcast["podroll"] == .string(#"[{"feedGuid":"abc-123","feedUrl":"https://other.example/feed.xml"}]"#))

        let episodes = try page.items.filter { $0.entity == .episode }.map { settings.canonical(.episode, try $0.fields()).fields }
        let one = try #require(episodes.first)
        // Both transcripts, the relative one resolved; the empty tag is nothing.
        #expect(one["transcripts"] == .string(#"[{"language":"en","rel":"captions","type":"text/vtt","url":"https://example.com/ep1.vtt"},{"type":"application/x-subrip","url":"https://feeds.example.com/transcripts/ep1.srt"}]"#))
        #expect(one["chapters_url"] == .string("https://example.com/ep1.json"))
        #expect(one["chapters_type"] == .string("application/json+chapters"))
        #expect(one["soundbites"] == .string(#"[{"duration":"60.0","startTime":"73.0","title":"The best minute"}]"#))
        #expect(one["persons"] == .string(#"[{"href":"https://example.com/bob","name":"Bob Guest","role":"guest"}]"#))
        #expect(one["season"] == .int(2) && one["season_name"] == .string("Volume Two"))
        #expect(one["episode_number"] == .int(3) && one["episode_display"] == .string("Ch. 3"))
        let alternate = try #require(one["alternate_enclosures"]?.stringValue)
        #expect(alternate.contains(#""uri":"https://example.com/ep1.opus""#) && alternate.contains(#""uri":"ipfs://"#), "\(alternate)")
        #expect(alternate.contains(#""integrity":{"type":"sri""#), "\(alternate)")
        // A number that is not whole (or not a number) stays in the raw payload only.
        let two = try #require(episodes.last)
        #expect(two["episode_number"] == nil && two["season"] == nil)
        let rawTwo = try #require(page.items.last { $0.entity == .episode }).fields()
        #expect(rawTwo["podcastEpisode"] == .object(["number": .string("315.5")]))
    }

    @Test func tagsOfAnotherNamespaceAreNotPodcasting20() throws {
        // Same local names, another namespace: none of them is read.
        let text = Self.feed(namespace: "https://example.com/not-podcasting")
        let page = try PodcastFeed.decodeFeed(HTTPResponse(url: URL(string: "https://f.example/x.xml")!, status: 200,
                                                           body: Array(text.utf8)), podcastKey: "42")
        #expect(page.items.count == 3)
        for record in page.items {
            #expect(try !record.fields().keys.contains { $0.hasPrefix("podcast") }, "\(record.payload)")
        }
    }
}
