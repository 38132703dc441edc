import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing

/// Crawled feeds as real hosts serve them: not well-formed, in Latin-1,
/// with relative URLs, moved, with several enclosures. Each is stored as
/// podcast apps would read it (issue 14, "Resilient feed crawling").
@Suite struct FeedResilienceTests {
    static let feedURL = URL(string: "https://feeds.example.com/shows/show.xml")!
    static let itunes = #"xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd""#

    static func feed(_ items: String, channel: String = "<title>Show</title>", rssExtra: String = "",
                     declaration: String = #"<?xml version="1.0" encoding="UTF-8"?>"#) -> String {
        """
        \(declaration)
        <rss version="2.0" \(itunes)>
        <channel>\(channel)
        \(items)
        </channel>\(rssExtra)
        </rss>
        """
    }

    static func decode(_ body: [UInt8], url: URL = feedURL, headers: [String: String] = [:],
                       redirect: HTTPResponse.Redirect? = nil) throws -> DecodedPage<Record> {
        var response = HTTPResponse(url: url, status: 200, headers: headers, body: body)
        response.redirect = redirect
        return try PodcastFeed.decodeFeed(response, podcastKey: "42", listedFeedURL: feedURL.absoluteString)
    }

    static func episodes(_ page: DecodedPage<Record>) throws -> [[String: JSONValue]] {
        try page.items.filter { $0.entity == .episode }.map { try $0.fields() }
    }

    static func podcast(_ page: DecodedPage<Record>) throws -> [String: JSONValue] {
        try #require(page.items.first { $0.entity == .podcast }).fields()
    }

    @Test func anInvalidCharacterIsRecoveredWithItsLineAndColumn() throws {
        let body = Self.feed("""
            <item><guid>1</guid><title>one</title></item>
            <item><guid>2</guid><title>bad \u{1} title</title></item>
            <item><guid>3</guid><title>three</title></item>
            """)
        let page = try Self.decode(Array(body.utf8))
        #expect(try Self.episodes(page).map { $0["guid"] } == [.string("1"), .string("2"), .string("3")])
        #expect(page.mayLackItems)
        let error = try #require(page.recoveredErrors.first)
        #expect(error.hasPrefix("line 5, column "), "\(error)")
        #expect(error.contains("invalid Char value 1"), "\(error)")
    }

    @Test func aRelativeEnclosureIsResolvedAgainstXMLBaseAndTheFeedURL() throws {
        let body = Self.feed("""
            <item xml:base="media/"><guid>1</guid><enclosure url="one.mp3" length="10" type="audio/mpeg"/>
              <link>../episodes/1</link><itunes:image href="/art/1.jpg"/></item>
            <item><guid>2</guid><enclosure url="two.mp3" length="20" type="audio/mpeg"/></item>
            <item xml:base="https://cdn.example.net/a/"><guid>3</guid><enclosure url="b/three.mp3"/></item>
            <item><guid>4</guid><enclosure url="javascript:alert(1)"/></item>
            """, channel: "<title>Show</title><link>/home</link>")
        let page = try Self.decode(Array(body.utf8))
        let items = try Self.episodes(page)
        #expect(items[0]["episodeUrl"] == .string("https://feeds.example.com/shows/media/one.mp3"))
        #expect(items[0]["link"] == .string("https://feeds.example.com/shows/episodes/1"))
        #expect(items[0]["itunesImage"] == .string("https://feeds.example.com/art/1.jpg"))
        #expect(items[1]["episodeUrl"] == .string("https://feeds.example.com/shows/two.mp3"))
        #expect(items[2]["episodeUrl"] == .string("https://cdn.example.net/a/b/three.mp3"))
        // Not http(s): dropped, not stored as written.
        #expect(items[3]["episodeUrl"] == nil)
        #expect(try Self.podcast(page)["link"] == .string("https://feeds.example.com/home"))
        #expect(!page.mayLackItems)
    }

    @Test func aNewLocationMoveIsTheFeedURLAndRemovesNothing() throws {
        let body = Self.feed("<item><guid>1</guid></item>",
                             rssExtra: "<redirect><newLocation>https://new.example.org/show.rss</newLocation></redirect>")
        let page = try Self.decode(Array(body.utf8))
        let podcast = try Self.podcast(page)
        #expect(podcast["feedUrl"] == .string("https://new.example.org/show.rss"))
        #expect(podcast["listedFeedUrl"] == .string(Self.feedURL.absoluteString))
        #expect(page.mayLackItems, "a feed that announces a move is no complete list of episodes")
        let canonical = PodcastFeedSettings(from: "p").canonical(.podcast, podcast)
        #expect(canonical.fields["feed_url"] == .string("https://new.example.org/show.rss"))
    }

    @Test func anItunesNewFeedURLInTheChannelIsAMoveToo() throws {
        let body = Self.feed("<item><guid>1</guid></item>",
                             channel: "<title>Show</title><itunes:new-feed-url>https://moved.example/feed</itunes:new-feed-url>")
        let page = try Self.decode(Array(body.utf8))
        #expect(try Self.podcast(page)["feedUrl"] == .string("https://moved.example/feed"))
    }

    @Test func aPermanentRedirectMovesTheFeedAndATemporaryOneDoesNot() throws {
        let body = Array(Self.feed("<item><guid>1</guid><enclosure url=\"e.mp3\"/></item>").utf8)
        let final = URL(string: "https://cdn.example.com/v2/show.xml")!
        let moved = try Self.decode(body, url: final, redirect: .init(from: Self.feedURL, permanent: true, hops: 1))
        #expect(try Self.podcast(moved)["feedUrl"] == .string(final.absoluteString))
        // Relative URLs resolve against where the body came from.
        #expect(try Self.episodes(moved)[0]["episodeUrl"] == .string("https://cdn.example.com/v2/e.mp3"))
        #expect(!moved.mayLackItems, "a 301's body is the feed itself, complete")

        let temporary = try Self.decode(body, url: final, redirect: .init(from: Self.feedURL, permanent: false, hops: 1))
        #expect(try Self.podcast(temporary)["feedUrl"] == .string(Self.feedURL.absoluteString))
    }

    @Test func everyEnclosureIsKeptAndTheFirstIsPrimary() throws {
        let body = Self.feed("""
            <item><guid>1</guid>
              <enclosure url="https://x.example/a.mp3" length="100" type="audio/mpeg"/>
              <enclosure url="https://x.example/a.m4a" length="200" type="audio/x-m4a"/>
            </item>
            """)
        let item = try #require(try Self.episodes(try Self.decode(Array(body.utf8))).first)
        #expect(item["episodeUrl"] == .string("https://x.example/a.mp3"))
        #expect(item["enclosureLength"] == .int(100))
        let canonical = PodcastFeedSettings(from: "p").canonical(.episode, item).fields
        #expect(canonical["enclosure_url"] == .string("https://x.example/a.mp3"))
        #expect(canonical["enclosure_type"] == .string("audio/mpeg"))
        let list = try #require(canonical["enclosures"]?.stringValue)
        let parsed = try JSONParser.parse(Array(list.utf8))
        #expect(parsed == .array([
            .object(["url": .string("https://x.example/a.mp3"), "length": .int(100), "type": .string("audio/mpeg")]),
            .object(["url": .string("https://x.example/a.m4a"), "length": .int(200), "type": .string("audio/x-m4a")]),
        ]))
    }

    @Test func aLatin1BodyWithoutDeclarationIsReadAsWindows1252() throws {
        let text = Self.feed("<item><guid>1</guid><title>Caf\u{E9} \u{2019}n\u{2019} cr\u{E8}me</title></item>",
                             channel: "<title>Z\u{FC}rich</title>", declaration: #"<?xml version="1.0"?>"#)
        var bytes: [UInt8] = []
        for scalar in text.unicodeScalars {
            switch scalar.value {
            case 0x2019: bytes.append(0x92)  // Windows-1252's right single quote
            case 0..<0x100: bytes.append(UInt8(scalar.value))
            default: Issue.record("not Latin-1: \(scalar)")
            }
        }
        let page = try Self.decode(bytes, headers: ["Content-Type": "application/rss+xml"])
        #expect(page.recoveredErrors.isEmpty, "\(page.recoveredErrors)")
        let item = try #require(try Self.episodes(page).first)
        #expect(item["trackName"] == .string("Caf\u{E9} \u{2019}n\u{2019} cr\u{E8}me"))
        #expect(item["collectionName"] == .string("Z\u{FC}rich"))
    }

    @Test func aContentTypeCharsetIsHonoured() throws {
        let text = Self.feed("<item><guid>1</guid><title>na\u{EF}ve</title></item>", declaration: #"<?xml version="1.0"?>"#)
        let latin1 = text.unicodeScalars.map { UInt8($0.value) }
        let page = try Self.decode(latin1, headers: ["Content-Type": "application/rss+xml; charset=ISO-8859-1"])
        #expect(page.recoveredErrors.isEmpty)
        #expect(try Self.episodes(page).first?["trackName"] == .string("na\u{EF}ve"))
    }

    @Test func theChannelDescribesThePodcast() throws {
        let body = Self.feed("<item><guid>1</guid></item>", channel: """
            <title>Show</title><language>de-CH</language><copyright>© Someone</copyright>
            <itunes:summary>All about it</itunes:summary><itunes:author>Ann Author</itunes:author>
            <itunes:image href="https://img.example/1400.jpg"/><itunes:explicit>yes</itunes:explicit>
            <itunes:owner><itunes:name>Owen</itunes:name><itunes:email>owen@example.com</itunes:email></itunes:owner>
            <itunes:type>Serial</itunes:type>
            <itunes:category text="Society &amp; Culture"><itunes:category text="Documentary"/></itunes:category>
            <itunes:category text="History"/>
            """)
        let page = try Self.decode(Array(body.utf8))
        let record = try #require(page.items.first { $0.entity == .podcast })
        #expect(record.key == "42")
        let settings = PodcastFeedSettings(from: "p")
        #expect(settings.role(of: .podcast) == .describes)
        #expect(settings.role(of: .episode) == .lists)
        let c = settings.canonical(.podcast, try record.fields()).fields
        #expect(c["language"] == .string("de-CH"))
        #expect(c["description"] == .string("All about it"))
        #expect(c["artist"] == .string("Ann Author"))
        #expect(c["artwork_url"] == .string("https://img.example/1400.jpg"))
        #expect(c["explicit"] == .int(1))
        #expect(c["owner_name"] == .string("Owen"))
        #expect(c["owner_email"] == .string("owen@example.com"))
        #expect(c["copyright"] == .string("© Someone"))
        #expect(c["podcast_type"] == .string("serial"))
        #expect(c["categories"] == .string(#"["Society & Culture/Documentary","History"]"#))
        #expect(c["feed_url"] == .string(Self.feedURL.absoluteString))
        for name in c.keys {
            #expect(CanonicalSchema.fields(of: .podcast).contains { $0.name == name }, "\(name) is not a canonical podcast field")
        }
    }

    @Test func aMovedFeedIsFetchedFromItsNewAddressWhileTheUpstreamListsTheOldOne() throws {
        let old = "https://feeds.example.com/old.xml"
        let upstream = Record(entity: .podcast, key: "42", fields: ["feedUrl": .string(old), "collectionName": .string("Show")])
        let own = Record(entity: .podcast, key: "42", fields: ["feedUrl": .string("https://new.example/feed"),
                                                               "listedFeedUrl": .string(old)])
        let settings = PodcastFeedSettings(from: "p")
        #expect(settings.scopes(baseURL: Self.feedURL, inputs: [upstream, own]).first?.pageURL(0)?.absoluteString
                == "https://new.example/feed")
        // The directory lists another address now: it wins over the move recorded earlier.
        let relisted = Record(entity: .podcast, key: "42", fields: ["feedUrl": .string("https://third.example/rss")])
        #expect(settings.scopes(baseURL: Self.feedURL, inputs: [relisted, own]).first?.pageURL(0)?.absoluteString
                == "https://third.example/rss")
        // Only upstream podcasts are scopes: the own record alone is none.
        #expect(settings.scopes(baseURL: Self.feedURL, inputs: [own]).isEmpty)
    }
}
