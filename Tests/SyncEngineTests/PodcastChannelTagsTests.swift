import Catalog
import Foundation
import SyncEngine
import Testing

/// A feed export's `podcast:` key (issue 28): the publisher's own
/// Podcasting 2.0 channel tags, checked by the namespace's rules when the job
/// is read, so a published feed never carries one a podcast app would refuse.
@Suite struct PodcastChannelTagsTests {
    static func job(_ podcast: String, feed: String = "episodes-new", owner: String = "{name: Me, email: me@example.com}") -> String {
        """
        name: x
        store: s.sqlite
        output: out
        sources: [{name: m, kind: marketplace}]
        exports:
          - kind: feed
            feed: \(feed)
            rss: feed.xml
            selfURL: https://example.com/feed.xml
            owner: \(owner)
            podcast:
        \(podcast.split(separator: "\n").map { "      " + $0 }.joined(separator: "\n"))
        """
    }

    static func spec(_ yaml: String) throws -> FeedExportSpec {
        let job = try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs")
        guard case .feed(let spec)? = job.exports.first else { throw StoreSyncError.invalidJob(file: "job.yml", issues: []) }
        return spec
    }

    static func issues(_ yaml: String) -> [String] {
        do {
            _ = try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs")
            return []
        } catch {
            return error.issues.map { "\($0.keyPath): \($0.message)" }
        }
    }

    @Test func everyChannelTagIsReadInOrder() throws {
        let spec = try Self.spec(Self.job("""
            locked: true
            medium: podcast
            guid: 917393E3-1B1E-5CEF-ACE4-EDAA54E1F810
            funding: [{url: https://example.com/support, text: Support the show}]
            txt: [{text: S6lpp-7ZCn8, purpose: verify}]
            trailers: [{url: https://example.com/t.mp3, title: Soon, pubdate: "Thu, 01 Apr 2026 08:00:00 +0000", length: 12, type: audio/mpeg, season: 2}]
            podroll: [{feedGuid: abc, feedUrl: https://other.example/feed.xml}]
            """))
        #expect(spec.podcastGUID == "917393e3-1b1e-5cef-ace4-edaa54e1f810")
        #expect(spec.podcastTags.map(\.name) == ["locked", "medium", "funding", "txt", "trailer", "podroll"])
        #expect(spec.podcastTags.first == PodcastTag("locked", attributes: [("owner", "me@example.com")], text: "yes"))
        #expect(spec.podcastTags.last?.children.first?.attribute("feedGuid") == "abc")
        #expect(spec.podcastTags[4].attribute("season") == "2" && spec.podcastTags[4].text == "Soon")
    }

    @Test(arguments: [
        ("medium: radio", "is not a medium"),
        ("guid: not-a-uuid", "is not a UUID"),
        ("funding: [{url: ftp://example.com/x, text: Give}]", "is not an absolute http(s) URL"),
        ("funding: [{text: Give}]", "has no url"),
        ("funding: [{url: https://example.com/x, text: \(String(repeating: "x", count: 129))}]", "longer than 128"),
        ("txt: [{purpose: verify}]", "has no text"),
        ("trailers: [{url: https://example.com/t.mp3, title: Soon}]", "has no pubdate"),
        ("trailers: [{url: https://example.com/t.mp3, title: Soon, pubdate: x, lenght: 3}]", "unknown key"),
        ("podroll: [{feedUrl: https://other.example/feed.xml}]", "needs its feedGuid"),
        ("funding: https://example.com", "expected a list of mappings"),
        ("lockd: true", "did you mean 'locked'"),
    ])
    func aTagBreakingTheNamespacesRulesIsAnErrorNamingIt(line: String, message: String) {
        let issues = Self.issues(Self.job(line))
        #expect(issues.contains { $0.hasPrefix("exports[0].podcast") && $0.contains(message) }, "\(issues)")
    }

    @Test func lockedNeedsTheOwnersEmail() {
        let issues = Self.issues(Self.job("locked: true", owner: "{name: Me}"))
        #expect(issues.contains { $0.contains("podcast:locked names its owner: set owner.email") }, "\(issues)")
    }

    @Test func onlyFeedsPodcastAppsSubscribeToTakeChannelTags() {
        let issues = Self.issues(Self.job("medium: podcast", feed: "podcasts-new"))
        #expect(issues.contains { $0.contains("belong to feeds podcast apps subscribe to") }, "\(issues)")
    }
}
