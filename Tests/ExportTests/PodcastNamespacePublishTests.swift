import Catalog
@testable import Export
import Foundation
import Testing

/// Podcasting 2.0 in published feeds (issue 28): an episode's tags as the
/// source gave them, malformed ones withheld; every `podcast:` tag of a feed
/// linted by the namespace's rules.
@Suite struct PodcastNamespacePublishTests {
    /// Canonical episode fields as the store holds them (JSON text columns).
    static let episode: JSONValue = .object([
        "transcripts": .string(#"[{"language":"en","rel":"captions","type":"text/vtt","url":"https://example.com/1.vtt"},{"url":"https://example.com/1.txt"}]"#),
        "chapters_url": .string("https://example.com/1.json"), "chapters_type": .string("application/json+chapters"),
        "soundbites": .string(#"[{"duration":"30","startTime":"61","title":"Best bit"},{"startTime":"5","title":"no duration"}]"#),
        "persons": .string(#"[{"name":"Ann","role":"host"},{"role":"guest"},{"href":"javascript:alert(1)","name":"Bob"}]"#),
        "season": .int(2), "season_name": .string("Two"), "episode_number": .int(7), "episode_display": .string("Ch. 7"),
        "alternate_enclosures": .string(#"[{"default":"true","integrity":{"type":"sri","value":"sha384-x"},"sources":[{"uri":"https://example.com/1.opus"},{"uri":"ipfs://Qm"}],"type":"audio/opus"},{"type":"audio/flac"}]"#),
        "location": .string(#"{"geo":"geo:30.2,-97.7","name":"Austin, TX"}"#),
        "license": .string("cc-by-4.0"), "license_url": .string("https://creativecommons.org/licenses/by/4.0/"),
        "txt": .string(#"[{"purpose":"verify","text":"abc"}]"#),
    ])

    @Test func wellFormedTagsArePublishedAndMalformedOnesWithheld() throws {
        let (tags, withheld) = PodcastItemTags.tags(of: Self.episode)
        #expect(tags.map(\.name) == ["transcript", "chapters", "soundbite", "person", "season", "episode", "alternateEnclosure",
                                     "location", "license", "txt"])
        #expect(withheld.count == 5, "\(withheld)")
        #expect(withheld.contains("podcast:transcript has no type"))
        #expect(withheld.contains("podcast:soundbite duration must be seconds above 0"))
        #expect(withheld.contains("podcast:person has no text"))
        #expect(withheld.contains("podcast:person href 'javascript:alert(1)' is not an absolute http(s) URL"))
        #expect(withheld.contains("podcast:alternateEnclosure has no podcast:source"))

        var item = ApplePodcastsTests.item(1)
        item.podcastTags = tags
        var channel = ApplePodcastsTests.channel()
        channel.podcastTags = [PodcastTag("locked", attributes: [("owner", "host@example.com")], text: "yes"),
                               PodcastTag("funding", attributes: [("url", "https://example.com/give")], text: "Give")]
        let bytes = try PodcastFeedWriter().render(channel: channel, items: [item])
        let text = String(decoding: bytes, as: UTF8.self)
        #expect(text.contains(#"<podcast:transcript language="en" rel="captions" type="text/vtt" url="https://example.com/1.vtt"/>"#), "\(text)")
        #expect(text.contains(#"<podcast:season name="Two">2</podcast:season>"#))
        #expect(text.contains(#"<podcast:source uri="ipfs://Qm"/>"#))
        #expect(text.contains(#"<podcast:locked owner="host@example.com">yes</podcast:locked>"#))
        #expect(PodcastFeedLint.check(bytes) == [], "\(PodcastFeedLint.check(bytes))")
    }

    @Test func theLintChecksEveryPodcastTagByTheNamespacesRules() {
        let feed = Array("""
            <?xml version="1.0" encoding="UTF-8"?>
            <rss version="2.0" xmlns:podcast="https://podcastindex.org/namespace/1.0">
            <channel><title>t</title>
              <podcast:locked>maybe</podcast:locked>
              <podcast:medium>radio</podcast:medium>
              <podcast:funding url="/give">Give</podcast:funding>
              <podcast:transcript url="https://example.com/t.vtt" type="text/vtt"/>
              <item><title>x</title>
                <podcast:chapters url="chapters.json"/>
                <podcast:season>0</podcast:season>
                <podcast:location>\(String(repeating: "x", count: 129))</podcast:location>
                <podcast:medium>podcast</podcast:medium>
              </item>
            </channel></rss>
            """.utf8)
        let findings = PodcastFeedLint.check(feed).filter { $0.rule.hasPrefix("podcast-") }
        #expect(Set(findings.map(\.rule)) == ["podcast-locked", "podcast-medium", "podcast-funding", "podcast-transcript",
                                             "podcast-chapters", "podcast-season", "podcast-location"], "\(findings)")
        #expect(findings.contains { $0.place == "channel" && $0.message == "podcast:transcript belongs in an <item>, not the <channel>" })
        #expect(findings.contains { $0.place == "item 1" && $0.message == "podcast:medium belongs in the <channel>, not an <item>" })
        #expect(findings.contains { $0.message == "podcast:chapters has no type (application/json+chapters)" })
        #expect(findings.allSatisfy { $0.severity == .requirement })
    }
}
