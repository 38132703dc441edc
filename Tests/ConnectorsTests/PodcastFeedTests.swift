import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing
import TestSupport

/// Feed bodies for the robustness cases: an RSS 2.0 channel around `items`.
private func rss(_ items: String, channel: String = "<title>Show</title>",
                 namespaces: String = #"xmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd" xmlns:content="http://purl.org/rss/1.0/modules/content/""#) -> [UInt8] {
    Array("""
        <?xml version="1.0" encoding="UTF-8"?>
        <rss version="2.0" \(namespaces)>
        <channel>\(channel)
        \(items)
        </channel>
        </rss>
        """.utf8)
}

private let feedURL = URL(string: "https://feeds.example.com/show.xml")!

/// The feed's episodes (the podcast record the channel describes is left out: see FeedResilienceTests).
private func decode(_ body: [UInt8], key: String = "42") throws(StoreSyncError) -> DecodedPage<Record> {
    var page = try PodcastFeed.decodeFeed(HTTPResponse(url: feedURL, status: 200, body: body), podcastKey: key)
    page.items.removeAll { $0.entity == .podcast }
    return page
}

private func fields(_ record: Record) throws -> [String: JSONValue] { try record.fields() }

@Suite struct PodcastFeedDecodingTests {
    @Test(.enabled(if: TestPaths.hasSamples, "../shared/api-samples is absent"))
    func realFeedDecodesEveryItem() throws {
        let body = try TestPaths.sample("podcast-rss-radiofeed-rss_mock.xml")
        let page = try decode(body, key: "1234")
        #expect(page.rowCount == 20)
        #expect(page.items.count == 20)
        #expect(page.skipped.isEmpty)
        #expect(page.hasNext == false)
        #expect(page.items.allSatisfy { $0.entity == .episode && $0.key.hasPrefix("1234|") })
        #expect(Set(page.items.map(\.key)).count == 20)

        let first = try #require(page.items.first)
        #expect(first.key == "1234|https://mysteriousuniverse.org/?p=168097")
        let f = try fields(first)
        // &#8211; is a character reference: decoded, not kept as markup.
        #expect(f["trackName"] == .string("23.24 – MU Podcast – Tibetan Zombie"))
        #expect(f["collectionName"] == .string("Mysterious Universe"))
        #expect(f["collectionId"] == .int(1234))
        #expect(f["releaseDate"] == .string("2020-06-19T16:58:03Z"))
        #expect(f["trackTimeMillis"] == .int((3600 + 28 * 60 + 20) * 1000))
        #expect(f["itunesDuration"] == .string("1:28:20"))
        #expect(f["episodeUrl"]?.stringValue?.hasSuffix("/4cfb35cd-084e-45e0-bb77-abdf0105fafe/audio.mp3") == true)
        #expect(f["enclosureType"] == .string("audio/mpeg"))
        #expect(f["enclosureLength"] == .int(84_875_981))
        #expect(f["guid"] == .string("https://mysteriousuniverse.org/?p=168097"))
        #expect(f["link"] == .string("https://mysteriousuniverse.org/2020/06/23-24-mu-podcast-tibetan-zombie/"))
        // The escaped HTML of <description> arrives as HTML text.
        #expect(f["description"]?.stringValue?.hasPrefix("<img width=\"643\"") == true)
        // Every item's date is normalised.
        for record in page.items {
            let date = try #require(try fields(record)["releaseDate"]?.stringValue)
            #expect(FeedDate.iso8601UTC(date) == date, "\(date)")
            #expect(date.hasSuffix("Z") && date.count == 20)
        }
    }

    @Test func cdataEntitiesAndInlineMarkupBecomeText() throws {
        let page = try decode(rss("""
            <item>
              <title><![CDATA[Fish & Chips <live>]]></title>
              <guid>  abc-1
              </guid>
              <description>Tom &amp; Jerry &lt;b&gt;bold&lt;/b&gt; &#x1F600;</description>
              <content:encoded><![CDATA[<p>long notes</p>]]></content:encoded>
            </item>
            <item>
              <title>Second</title><guid>abc-2</guid>
              <itunes:summary><![CDATA[Summary <i>only</i>]]></itunes:summary>
            </item>
            <item>
              <title>Third</title><guid>abc-3</guid>
              <content:encoded><![CDATA[<p>encoded only</p>]]></content:encoded>
            </item>
            """))
        #expect(page.items.map(\.key) == ["42|abc-1", "42|abc-2", "42|abc-3"])
        let f = try fields(page.items[0])
        #expect(f["trackName"] == .string("Fish & Chips <live>"))
        #expect(f["description"] == .string("Tom & Jerry <b>bold</b> 😀"))
        #expect(try fields(page.items[1])["description"] == .string("Summary <i>only</i>"))
        #expect(try fields(page.items[2])["description"] == .string("<p>encoded only</p>"))
    }

    @Test func crlfBomAndLeadingBlankLinesAreAccepted() throws {
        var body: [UInt8] = [0xEF, 0xBB, 0xBF]
        body += Array("\r\n\r\n".utf8)
        body += Array(String(decoding: rss("<item><title>A\nB</title><guid>g</guid></item>"), as: UTF8.self)
            .replacingOccurrences(of: "\n", with: "\r\n").utf8)
        let page = try decode(body)
        #expect(page.items.count == 1)
        // XML turns CRLF into LF inside text.
        #expect(try fields(page.items[0])["trackName"] == .string("A\nB"))
    }

    @Test func identityFallsBackFromGuidToEnclosureLinkAndTitleWithDate() throws {
        let page = try decode(rss("""
            <item><title>Has guid</title><guid isPermaLink="false">g-1</guid><enclosure url="https://cdn/1.mp3"/></item>
            <item><title>Enclosure only</title><guid>   </guid><enclosure url="https://cdn/2.mp3" length="" type="audio/mpeg"/><link>https://show/</link></item>
            <item><title>Link only</title><link>https://show/3</link></item>
            <item><title>Title and date</title><pubDate>Mon, 6 Jan 2020 10:00:00 GMT</pubDate></item>
            <item><title>Nothing to go by</title></item>
            <item><title>Repeat</title><guid>g-1</guid></item>
            """))
        #expect(page.items.map(\.key) == [
            "42|g-1", "42|https://cdn/2.mp3", "42|https://show/3", "42|Title and date|Mon, 6 Jan 2020 10:00:00 GMT",
        ])
        #expect(page.rowCount == 6)
        #expect(page.skipped.count == 2)
        #expect(page.skipped[0].contains("item 5") && page.skipped[0].contains(feedURL.absoluteString))
        #expect(page.skipped[1].contains("item 6") && page.skipped[1].contains("item 1"))
        let enclosureOnly = try fields(page.items[1])
        #expect(enclosureOnly["guid"] == nil)
        #expect(enclosureOnly["enclosureLength"] == nil)
        #expect(enclosureOnly["episodeUrl"] == .string("https://cdn/2.mp3"))
    }

    @Test func itunesFieldsWhenPresentAndAbsentOtherwise() throws {
        let page = try decode(rss("""
            <item><guid>1</guid><title>Full</title>
              <itunes:duration>42:07</itunes:duration><itunes:episode>12</itunes:episode><itunes:season>2</itunes:season>
              <itunes:episodeType>full</itunes:episodeType><itunes:explicit>no</itunes:explicit>
              <itunes:image href="https://img/1.jpg"/>
            </item>
            <item><guid>2</guid></item>
            """))
        let full = try fields(page.items[0])
        #expect(full["trackTimeMillis"] == .int((42 * 60 + 7) * 1000))
        #expect(full["itunesEpisode"] == .int(12))
        #expect(full["itunesSeason"] == .int(2))
        #expect(full["itunesEpisodeType"] == .string("full"))
        #expect(full["itunesExplicit"] == .string("no"))
        #expect(full["itunesImage"] == .string("https://img/1.jpg"))
        #expect(full["collectionName"] == .string("Show"))
        let bare = try fields(page.items[1])
        #expect(Set(bare.keys) == ["guid", "collectionId", "collectionName"])
    }

    @Test func undeclaredItunesPrefixIsStillRead() throws {
        let page = try decode(rss("<item><guid>1</guid><itunes:duration>61</itunes:duration></item>", namespaces: ""))
        #expect(try fields(page.items[0])["trackTimeMillis"] == .int(61_000))
    }

    @Test func uppercaseItunesNamespaceAndAtomLinks() throws {
        let page = try decode(rss("""
            <item><guid>1</guid><itunes:duration>10</itunes:duration>
              <link href="https://show/1"/>
              <atom:link rel="enclosure" href="https://cdn/1.m4a" type="audio/x-m4a" length="99"/>
            </item>
            """, namespaces: #"xmlns:itunes="http://www.itunes.com/DTDs/Podcast-1.0.dtd" xmlns:atom="http://www.w3.org/2005/Atom""#))
        let f = try fields(page.items[0])
        #expect(f["trackTimeMillis"] == .int(10_000))
        #expect(f["link"] == .string("https://show/1"))
        #expect(f["episodeUrl"] == .string("https://cdn/1.m4a"))
        #expect(f["enclosureLength"] == .int(99))
    }

    @Test func emptyChannelIsACompleteEmptyPage() throws {
        let page = try decode(rss(""))
        #expect(page.items.isEmpty)
        #expect(page.rowCount == 0)
        #expect(page.hasNext == false)
    }

    @Test func channelWithoutTitleFallsBackToThePodcastName() throws {
        let body = rss("<item><guid>1</guid></item>", channel: "")
        let page = try PodcastFeed.decodeFeed(HTTPResponse(url: feedURL, status: 200, body: body), podcastKey: "abc",
                                              podcastName: "From Search")
        let f = try fields(page.items[0])
        #expect(f["collectionName"] == .string("From Search"))
        // A non-numeric podcast key stays text.
        #expect(f["collectionId"] == .string("abc"))
    }

    @Test func atomFeedEntriesAreEpisodes() throws {
        let body = Array("""
            <?xml version="1.0" encoding="utf-8"?>
            <feed xmlns="http://www.w3.org/2005/Atom">
              <title>Atom Show</title>
              <entry>
                <id>urn:uuid:1</id><title>First</title><published>2021-03-04T05:06:07+01:00</published>
                <link rel="alternate" href="https://show/1"/>
                <link rel="enclosure" href="https://cdn/1.mp3" type="audio/mpeg" length="1000"/>
                <summary>Notes</summary>
              </entry>
            </feed>
            """.utf8)
        let page = try decode(body)
        #expect(page.items.map(\.key) == ["42|urn:uuid:1"])
        let f = try fields(page.items[0])
        #expect(f["collectionName"] == .string("Atom Show"))
        #expect(f["releaseDate"] == .string("2021-03-04T04:06:07Z"))
        #expect(f["episodeUrl"] == .string("https://cdn/1.mp3"))
        #expect(f["link"] == .string("https://show/1"))
        #expect(f["description"] == .string("Notes"))
    }

    @Test func rss1ItemsBesideTheChannel() throws {
        let body = Array("""
            <?xml version="1.0"?>
            <rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/"
                     xmlns:dc="http://purl.org/dc/elements/1.1/">
              <channel rdf:about="https://show/"><title>RDF Show</title></channel>
              <item rdf:about="https://show/1"><title>One</title><link>https://show/1</link><dc:date>2004-05-06</dc:date></item>
            </rdf:RDF>
            """.utf8)
        let page = try decode(body)
        #expect(page.items.map(\.key) == ["42|https://show/1"])
        #expect(try fields(page.items[0])["releaseDate"] == .string("2004-05-06T00:00:00Z"))
        #expect(try fields(page.items[0])["collectionName"] == .string("RDF Show"))
    }

    @Test func unparseableDateIsKeptAsWritten() throws {
        let page = try decode(rss("<item><guid>1</guid><pubDate>sometime last week</pubDate></item>"))
        #expect(try fields(page.items[0])["releaseDate"] == .string("sometime last week"))
    }

    @Test func sameFeedTwiceHashesTheSame() throws {
        let body = rss("<item><guid>1</guid><title>T</title><pubDate>Fri, 19 Jun 2020 16:58:03 +0000</pubDate></item>")
        #expect(try decode(body).items == decode(body).items)
    }
}

@Suite struct PodcastFeedErrorTests {
    func expectMalformed(_ body: [UInt8], _ check: (String) -> Bool, sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let page = try decode(body)
            Issue.record("decoded \(page.items.count) items from a bad feed", sourceLocation: sourceLocation)
        } catch {
            guard error.code == .malformedPage, case let (url, reason) = (error.location, error.message) else {
                Issue.record("unexpected error \(error)", sourceLocation: sourceLocation)
                return
            }
            #expect(url == feedURL.absoluteString, sourceLocation: sourceLocation)
            #expect(check(reason), "\(reason)", sourceLocation: sourceLocation)
        }
    }

    /// Not well-formed, but recovered (see FeedResilienceTests): the errors keep their line and column.
    func expectRecovered(_ body: [UInt8], items: Int, _ check: (String) -> Bool,
                         sourceLocation: SourceLocation = #_sourceLocation) {
        do {
            let page = try decode(body)
            #expect(page.items.count == items, sourceLocation: sourceLocation)
            #expect(page.mayLackItems, sourceLocation: sourceLocation)
            let first = page.recoveredErrors.first ?? ""
            #expect(check(first), "\(page.recoveredErrors)", sourceLocation: sourceLocation)
        } catch {
            Issue.record("not recovered: \(error)", sourceLocation: sourceLocation)
        }
    }

    @Test func brokenXMLNamesLineAndColumn() {
        // Line 4 of the document: the item's title is never closed.
        expectRecovered(rss("<item><guid>1</guid><title>Oops</item>"), items: 1) { $0.contains("line 4") && $0.contains("column ") }
    }

    @Test func truncatedFeedIsRecovered() {
        let body = rss("<item><guid>1</guid></item>")
        expectRecovered(Array(body.prefix(body.count - 20)), items: 1) { $0.hasPrefix("line ") }
    }

    @Test func controlCharactersAndInvalidUTF8AreRecovered() {
        expectRecovered(rss("<item><guid>1</guid><title>bad \u{1} char</title></item>"), items: 1) { $0.contains("line 4") }
        var body = rss("<item><guid>1</guid><title>bad XY</title></item>")
        let at = body.firstIndex(of: UInt8(ascii: "X"))!
        body[at] = 0xFF
        expectRecovered(body, items: 1) { $0.contains("line 4") }
    }

    @Test func internalEntityDeclarationsAreExpandedWithinBounds() throws {
        let laughs = Array("""
            <?xml version="1.0"?>
            <!DOCTYPE rss [
              <!ENTITY lol "lol">
              <!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
            ]>
            <rss version="2.0"><channel><title>&lol2;</title><item><guid>1</guid></item></channel></rss>
            """.utf8)
        let page = try PodcastFeed.decodeFeed(HTTPResponse(url: feedURL, status: 200, body: laughs), podcastKey: "42")
        #expect(page.recoveredErrors.isEmpty)
        let item = try #require(page.items.first { $0.entity == .episode })
        #expect(try item.fields()["collectionName"] == .string(String(repeating: "lol", count: 10)))
    }

    @Test func externalEntitiesAreNeverRead() {
        let xxe = Array("""
            <?xml version="1.0"?>
            <!DOCTYPE rss [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
            <rss version="2.0"><channel><title>&secret;</title></channel></rss>
            """.utf8)
        expectMalformed(xxe) { $0.contains("entity 'secret'") }
    }

    @Test func undeclaredEntityIsRecovered() {
        expectRecovered(rss("<item><guid>1</guid><title>caf&eacute;</title></item>"), items: 1) { $0.contains("eacute") }
    }

    @Test func htmlErrorPageIsNotAFeed() {
        expectMalformed(Array("<html><body><h1>502 Bad Gateway</h1></body></html>".utf8)) {
            $0.contains("not an RSS or Atom feed") && $0.contains("<html>")
        }
        expectMalformed(Array("<!DOCTYPE html><html><body><p>Hi<br></p></body></html>".utf8)) { $0.contains("line 1") }
    }

    @Test func emptyBodiesFail() {
        expectMalformed([]) { $0.contains("empty") }
        expectMalformed(Array(" \n ".utf8)) { $0.contains("empty") }
    }
}

@Suite struct FeedDateTests {
    @Test(arguments: [
        ("Fri, 19 Jun 2020 16:58:03 +0000", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 16:58:03 GMT", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 16:58:03 UT", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 16:58:03 Z", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 12:58:03 EDT", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 09:58:03 PDT", "2020-06-19T16:58:03Z"),
        ("Thu, 02 Jan 2020 23:30:00 EST", "2020-01-03T04:30:00Z"),
        ("Fri, 19 Jun 2020 18:58:03 +0200", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 18:58:03 +02:00", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 22:28:03 +0530", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 16:58 +0000", "2020-06-19T16:58:00Z"),
        ("Fri, 9 Jun 2020 16:58:03 +0000", "2020-06-09T16:58:03Z"),
        ("9 Jun 2020 16:58:03 +0000", "2020-06-09T16:58:03Z"),
        ("19 Jun 2020 16:58:03", "2020-06-19T16:58:03Z"),
        ("Friday, 19 June 2020 16:58:03 GMT", "2020-06-19T16:58:03Z"),
        ("Mon, 19 Jun 2020 16:58:03 +0000", "2020-06-19T16:58:03Z"),  // wrong weekday: the numbers win
        ("fri, 19 JUN 2020 16:58:03 gmt", "2020-06-19T16:58:03Z"),
        ("Fri,19 Jun 2020 16:58:03 +0000", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 20 16:58:03 +0000", "2020-06-19T16:58:03Z"),
        ("Sat, 19 Jun 99 16:58:03 +0000", "1999-06-19T16:58:03Z"),
        ("Tue, 01 Jan 2019 00:30:00 +0100", "2018-12-31T23:30:00Z"),
        ("Thu, 28 Feb 2019 23:00:00 -0200", "2019-03-01T01:00:00Z"),
        ("Thu, 19 Sept 2019 10:00:00 GMT", "2019-09-19T10:00:00Z"),
        ("Fri, 19 Jun 2020 16:58:03 +0000 (UTC)", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 16:58:03 GMT+2", "2020-06-19T14:58:03Z"),
        ("19-Jun-2020 16:58:03 +0000", "2020-06-19T16:58:03Z"),
        ("Jun 19 2020 16:58:03 GMT", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020", "2020-06-19T00:00:00Z"),
        ("  Fri, 19 Jun 2020 16:58:03 +0000\n", "2020-06-19T16:58:03Z"),
        ("Fri, 19 Jun 2020 4:58:03 PM +0000", "2020-06-19T16:58:03Z"),
        ("2020-06-19T16:58:03Z", "2020-06-19T16:58:03Z"),
        ("2020-06-19T18:58:03.250+02:00", "2020-06-19T16:58:03Z"),
        ("2020-06-19 16:58:03", "2020-06-19T16:58:03Z"),
        ("2020-06-19", "2020-06-19T00:00:00Z"),
        ("Sat, 29 Feb 2020 12:00:00 +0000", "2020-02-29T12:00:00Z"),
    ])
    func rfc822Variants(raw: String, expected: String) {
        #expect(FeedDate.iso8601UTC(raw) == expected, "\(raw)")
    }

    @Test(arguments: [
        "", "yesterday", "Fri, 31 Jun 2020 10:00:00 GMT", "Fri, 29 Feb 2019 10:00:00 GMT", "Fri, 19 Foo 2020 10:00:00 GMT",
        "Fri, 19 Jun 2020 25:00:00 GMT", "Fri, 19 Jun 2020 10:61:00 GMT", "Fri, 19 Jun 2020 10:00:00 XYZT",
        "Fri, 19 Jun 2020 10:00:00 +9999", "2020-13-01T00:00:00Z", "2020-06-19T16:58:03Q",
    ])
    func unreadableDates(raw: String) {
        #expect(FeedDate.iso8601UTC(raw) == nil, "\(raw)")
    }

    @Test(arguments: [
        ("3600", 3_600_000), ("0", 0), ("61", 61_000), ("42:07", 2_527_000), ("75:30", 4_530_000),
        ("1:28:20", 5_300_000), ("01:02:03", 3_723_000), ("3600.5", 3_600_500), (" 12:00 ", 720_000),
        ("1:02:03.5", 3_723_500),
        // Apps add the parts up: minutes and seconds past 59 are what the publisher wrote.
        ("00:60:05", 3_605_000), ("1:60", 120_000), ("1:60:00", 7_200_000), ("25:3:30", 90_210_000),
        ("0:00:61", 61_000), ("99:99", 6_039_000), ("3605,5", 3_605_500), ("01:02:03,250", 3_723_250),
        ("PT1H2M3S", 3_723_000), ("PT45M", 2_700_000), ("PT3605S", 3_605_000), ("P1DT1H", 90_000_000),
        ("pt1.5h", 5_400_000),
    ])
    func durations(raw: String, millis: Int) {
        #expect(FeedDate.durationMillis(raw) == millis, "\(raw)")
    }

    @Test(arguments: ["", "abc", "1h 2m", "1:2:3:4", "-5", "12:", ":30", "1e3", "1:100", "1:2:345", "1.5:00", "1:30.",
                      "PT", "P", "P1Y", "P1M", "PT1D", "PT-5S", "PTxS", "nan", "inf", "99999999999999999999"])
    func unreadableDurations(raw: String) {
        #expect(FeedDate.durationMillis(raw) == nil, "\(raw)")
    }
}

@Suite struct PodcastFeedScopeTests {
    func podcast(_ key: String, feedUrl: String?, name: String = "Pod") -> Record {
        var fields: [String: JSONValue] = ["trackId": .int(Int64(key) ?? 0), "trackName": .string(name)]
        if let feedUrl { fields["feedUrl"] = .string(feedUrl) }
        return Record(entity: .podcast, key: key, fields: fields)
    }

    func scopes(_ settings: PodcastFeedSettings, _ podcasts: [Record]) -> [CrawlScope] {
        SourceSpec(name: "feeds", settings: (settings)).scopes(baseURL: nil, inputs: podcasts)
    }

    let podcasts: [Record] = [
        Record(entity: .podcast, key: "1", fields: ["feedUrl": .string("https://a.example/1.xml")]),
        Record(entity: .podcast, key: "2", fields: ["feedUrl": .string("ftp://a.example/2.xml")]),
        Record(entity: .podcast, key: "3", fields: [:]),
        Record(entity: .podcast, key: "4", fields: ["feedUrl": .string("not a url")]),
        Record(entity: .podcast, key: "5", fields: ["feedUrl": .string("http://b.example/feed?id=5")]),
        Record(entity: .podcast, key: "6", fields: ["feedUrl": .string(" https://c.example/6.rss ")]),
        Record(entity: .episode, key: "7", fields: ["feedUrl": .string("https://c.example/7.rss")]),
    ]

    @Test func onlyPodcastsWithHTTPFeedsBecomeScopes() {
        let all = scopes(PodcastFeedSettings(from: "search"), podcasts)
        #expect(all.map(\.id) == ["feed:1", "feed:5", "feed:6"])
        #expect(all.map { $0.pageURL(0)?.absoluteString } == [
            "https://a.example/1.xml", "http://b.example/feed?id=5", "https://c.example/6.rss",
        ])
        #expect(all.allSatisfy { $0.sweeps })
    }

    @Test func keyFilterAndMaxFeedsCountOnlyUsableFeeds() {
        #expect(scopes(PodcastFeedSettings(from: "s", podcasts: ["5", "2", "9"]), podcasts).map(\.id) == ["feed:5"])
        #expect(scopes(PodcastFeedSettings(from: "s", maxFeeds: 2), podcasts).map(\.id) == ["feed:1", "feed:5"])
        #expect(scopes(PodcastFeedSettings(from: "s", maxFeeds: 0), podcasts).isEmpty)
    }

    /// A one-page scope must end `.complete` (not `.capped`), or no episode could ever be removed.
    @Test func aFeedIsOneCompletePage() async throws {
        let scope = try #require(scopes(PodcastFeedSettings(from: "s"), podcasts).first)
        let body = rss("<item><guid>x</guid></item>")
        var fetched: [Int] = []
        let outcome = await PageWalker.walk(
            pagination: scope.pagination,
            fetch: { index throws(StoreSyncError) in
                fetched.append(index)
                return HTTPResponse(url: scope.pageURL(index)!, status: 200, body: body)
            },
            decode: scope.decode, onPage: { _, _, _ throws(StoreSyncError) in })
        guard case .complete(let pages) = outcome else {
            Issue.record("outcome \(outcome)")
            return
        }
        #expect(pages == 1)
        #expect(fetched == [0])
        // An empty feed is complete too.
        let empty = await PageWalker.walk(
            pagination: scope.pagination,
            fetch: { index throws(StoreSyncError) in HTTPResponse(url: scope.pageURL(index)!, status: 200, body: rss("")) },
            decode: scope.decode, onPage: { _, _, _ throws(StoreSyncError) in })
        #expect(empty.isComplete)
    }

    @Test func scopeDecodeUsesThePodcastKeyAndName() throws {
        let records = [podcast("77", feedUrl: "https://x.example/77.xml", name: "Catalogue Name")]
        let scope = try #require(scopes(PodcastFeedSettings(from: "s"), records).first)
        let page = try scope.decode(HTTPResponse(url: scope.pageURL(0)!, status: 200,
                                                 body: rss("<item><guid>g</guid></item>", channel: "")))
        // The episode, then the podcast as its channel describes it (FeedResilienceTests).
        #expect(page.items.map(\.key) == ["77|g", "77"])
        #expect(try page.items[0].fields()["collectionName"] == .string("Catalogue Name"))
    }
}
