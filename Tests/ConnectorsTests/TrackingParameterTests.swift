import Catalog
@testable import Connectors
import Testing

/// Tracking parameters (`uo`, `at`, `ct`) leave URLs anywhere in a record, and
/// nothing else does: a record with none comes back as it was.
@Suite struct TrackingParameterTests {
    @Test func trackingParametersLeaveEveryURLAndNothingElseChanges() throws {
        let record = try JSONParser.parse(#"""
            {"trackViewUrl": "https://podcasts.apple.com/us/podcast/x/id1?uo=4&at=10l&i=7#top",
             "feedUrl": "https://feeds.example.com/x.xml?ct=abc",
             "artworks": ["https://is1.example.com/a.jpg?uo=2", "https://is1.example.com/b.jpg"],
             "plain": "not a url ? at all", "ftp": "ftp://host/file?uo=4", "count": 3,
             "nested": {"link": "http://example.com/?keep=1&uo=4"}}
            """#)
        let stripped = Normalize.stripTrackingParameters(record)
        #expect(stripped["trackViewUrl"]?.stringValue == "https://podcasts.apple.com/us/podcast/x/id1?i=7#top")
        #expect(stripped["feedUrl"]?.stringValue == "https://feeds.example.com/x.xml")
        #expect(stripped["artworks"]?.arrayValue?.compactMap(\.stringValue)
                == ["https://is1.example.com/a.jpg", "https://is1.example.com/b.jpg"])
        #expect(stripped["nested"]?["link"]?.stringValue == "http://example.com/?keep=1")
        #expect(stripped["plain"] == record["plain"] && stripped["ftp"] == record["ftp"] && stripped["count"] == record["count"])
        // Nothing to strip: the same value, not a copy that differs.
        let clean = try JSONParser.parse(#"{"a": "https://x.example/?page=2", "b": [1, "two"]}"#)
        #expect(Normalize.stripTrackingParameters(clean) == clean)
        #expect(Normalize.strippedOfTracking(clean) == nil)
    }
}
