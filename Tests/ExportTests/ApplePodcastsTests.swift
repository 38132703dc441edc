import Catalog
@testable import Export
import Foundation
import Testing
import TestSupport

/// What Apple Podcasts asks of a feed: hi-res artwork, its category list,
/// the channel fields, and the lint that checks them before publishing.
@Suite struct ApplePodcastsTests {
    // MARK: Artwork URLs

    @Test func itunesArtworkIsRewrittenToTheRequestedSizeOverHTTPS() {
        let legacy = "http://is3.mzstatic.com/image/pf/us/r30/Podcasts5/v4/3e/38/7c/3e387ce1/mza_104.600x600-75.jpg"
        #expect(ArtworkURL.hiRes(legacy)
            == "https://is3-ssl.mzstatic.com/image/pf/us/r30/Podcasts5/v4/3e/38/7c/3e387ce1/mza_104.3000x3000-75.jpg")
        let modern = "https://is1-ssl.mzstatic.com/image/thumb/Podcasts115/v4/ab/cd/ef/abcdef/mza_1.jpg/600x600bb.jpg"
        #expect(ArtworkURL.hiRes(modern, size: 1400)
            == "https://is1-ssl.mzstatic.com/image/thumb/Podcasts115/v4/ab/cd/ef/abcdef/mza_1.jpg/1400x1400bb.jpg")
        #expect(ArtworkURL.hiRes("https://is5-ssl.mzstatic.com/image/thumb/Music/v4/x/source/100x100bb.png")
            == "https://is5-ssl.mzstatic.com/image/thumb/Music/v4/x/source/3000x3000bb.png")
        // Idempotent, and the size is held to what Apple accepts.
        #expect(ArtworkURL.hiRes(ArtworkURL.hiRes(legacy)) == ArtworkURL.hiRes(legacy))
        #expect(ArtworkURL.hiRes(modern, size: 9000).hasSuffix("/3000x3000bb.jpg"))
        #expect(ArtworkURL.hiRes(modern, size: 100).hasSuffix("/1400x1400bb.jpg"))
        // A publisher's own image: neither its size nor an https twin can be guessed.
        let own = "http://example.com/art/cover-600x600.jpg"
        #expect(ArtworkURL.hiRes(own) == own)
        // No size in the name: nothing to rewrite.
        let plain = "http://is1.mzstatic.com/image/pf/us/r30/Podcasts/v4/cover.jpg"
        #expect(ArtworkURL.hiRes(plain) == plain)
        #expect(ArtworkURL.requestedSize(ArtworkURL.hiRes(legacy))! == (3000, 3000))
        #expect(ArtworkURL.requestedSize(own) == nil || ArtworkURL.requestedSize(own)! == (600, 600))
    }

    // MARK: Categories

    @Test func genresAreFiledUnderApplesCurrentList() {
        #expect(AppleCategories.path(for: ["Podcasts", "Arts", "Food"]) == ["Arts", "Food"])
        // A subgenre not listed under its parent goes to the parent.
        #expect(AppleCategories.path(for: ["Technology", "Tech News"]) == ["Technology"])
        #expect(AppleCategories.path(for: ["Technology", "Podcasting"]) == ["Technology"])
        // Pre-2019 top levels take their successor's name and keep a subgenre that exists there.
        #expect(AppleCategories.path(for: ["Games & Hobbies", "Video Games"]) == ["Leisure", "Video Games"])
        #expect(AppleCategories.path(for: ["Games & Hobbies", "Other Games"]) == ["Leisure"])
        #expect(AppleCategories.path(for: ["Science & Medicine", "Medicine"]) == ["Science"])
        #expect(AppleCategories.path(for: ["News & Politics"]) == ["News"])
        // A subcategory name alone, as feeds and charts write it.
        #expect(AppleCategories.path(for: ["Tech News"]) == ["News", "Tech News"])
        #expect(AppleCategories.path(for: ["how-to"]) == ["Education", "How To"])
        #expect(AppleCategories.path(for: ["Health and Fitness"]) == ["Health & Fitness"])
        #expect(AppleCategories.path(for: ["Underwater Basket Weaving"]) == nil)
        #expect(AppleCategories.path(forGenreID: "1528") == ["News", "Tech News"])
        #expect(AppleCategories.isListed(["News", "Tech News"]))
        #expect(!AppleCategories.isListed(["Technology", "Tech News"]))
        #expect(!AppleCategories.isListed(["Games & Hobbies"]))
        #expect(AppleCategories.all.count == 19)
    }

    @Test func storefrontsGiveTheirLanguage() {
        #expect(StorefrontLanguage.tag(forCountry: "USA") == "en-us")
        #expect(StorefrontLanguage.tag(forCountry: "de") == "de-de")
        #expect(StorefrontLanguage.tag(forCountry: "CHE") == "de-ch")
        #expect(StorefrontLanguage.tag(forCountry: "br") == "pt-br")
        #expect(StorefrontLanguage.tag(forCountry: "zz") == nil)
    }

    @Test func podcastGUIDFollowsThePodcastNamespace() {
        // The namespace's own example.
        #expect(PodcastGUID.forFeed("https://mp3s.nashownotes.com/pc20rss.xml") == "917393e3-1b1e-5cef-ace4-edaa54e1f810")
        #expect(PodcastGUID.forFeed("http://mp3s.nashownotes.com/pc20rss.xml/") == "917393e3-1b1e-5cef-ace4-edaa54e1f810")
        #expect(PodcastGUID.sha1(Array("abc".utf8)).map { String(format: "%02x", $0) }.joined()
            == "a9993e364706816aba3e25717850c26c9cd0d89d")
    }

    // MARK: Lint

    static let date = Date(timeIntervalSince1970: 1_790_000_000)

    static func channel() -> FeedChannel {
        var channel = FeedChannel(
            title: "Show", link: "https://example.com/", description: "About the show", language: "en-us",
            selfURL: "https://example.com/feed.xml",
            imageURL: "https://is1-ssl.mzstatic.com/image/thumb/Podcasts/v4/a/mza_1.jpg/3000x3000bb.jpg",
            author: "Host", categories: [["News", "Tech News"]], lastBuildDate: date, generator: "test")
        channel.ownerName = "Host"
        channel.ownerEmail = "host@example.com"
        channel.copyright = "© Host"
        channel.podcastGUID = PodcastGUID.forFeed(channel.selfURL)
        return channel
    }

    static func item(_ n: Int, length: Int64 = 1_000, type: String = "audio/mpeg") -> FeedItem {
        FeedItem(guid: "episode-\(n)", title: "Episode \(n)", link: "https://example.com/\(n)", description: "Notes \(n)",
                 pubDate: date, enclosure: FeedEnclosure(url: "https://cdn.example.com/\(n).mp3", length: length, type: type),
                 durationSeconds: 60)
    }

    static func lint(_ channel: FeedChannel, _ items: [FeedItem]) throws -> [FeedLintFinding] {
        PodcastFeedLint.check(try PodcastFeedWriter().render(channel: channel, items: items))
    }

    @Test func aCompleteFeedHasNoFindings() throws {
        #expect(try Self.lint(Self.channel(), [Self.item(1), Self.item(2)]) == [])
    }

    @Test func eachBrokenRequirementIsNamed() throws {
        var channel = Self.channel()
        channel.imageURL = "http://is1.mzstatic.com/image/pf/us/r30/Podcasts/v4/mza_1.600x600-75.jpg"
        channel.categories = [["Technology", "Tech News"], ["Games & Hobbies"]]
        channel.language = "english"
        channel.podcastGUID = nil
        channel.ownerEmail = nil
        let items = [Self.item(1, length: 0), Self.item(1, type: "audio/ogg")]
        let findings = try Self.lint(channel, items)
        let rules = Set(findings.filter { $0.severity == .requirement }.map(\.rule))
        #expect(rules == ["channel-image-size", "channel-category", "channel-language", "item-enclosure-length",
                          "item-guid-unique", "item-enclosure-type"])
        #expect(findings.contains { $0.severity == .recommendation && $0.rule == "channel-owner" })
        #expect(findings.contains { $0.message.contains("Technology › Tech News") })
        #expect(findings.contains { $0.place == "item 2 (guid episode-1)" && $0.rule == "item-guid-unique" })
    }

    @Test func missingElementsAndBrokenDocumentsAreFindings() {
        let bare = Array("""
            <rss version="2.0"><channel><title>t</title><item><title>x</title></item></channel></rss>
            """.utf8)
        let rules = Set(PodcastFeedLint.check(bare).filter { $0.severity == .requirement }.map(\.rule))
        #expect(rules == ["channel-description", "channel-language", "channel-image", "channel-category",
                          "channel-explicit", "item-enclosure"])
        #expect(PodcastFeedLint.check(Array("<rss><channel>".utf8)).map(\.rule) == ["xml"])
        // The mirror's header outranks the URL's claim.
        let feed = try! PodcastFeedWriter().render(channel: Self.channel(), items: [Self.item(1)])
        let small = PodcastFeedLint.check(feed, imageSize: { _ in (1000, 1000) })
        #expect(small.map(\.rule) == ["channel-image-size"])
    }
}
