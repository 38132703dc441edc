import Catalog
import Foundation

/// The one place feed exports meet the XML writers.
enum FeedWriters {
    /// Podcast feeds use the text encoding that both feedparser and podcastparser
    /// (gPodder) display as written; plain feeds the one feed readers need.
    static func writeRSS(channel: FeedChannel, items: [FeedItem], podcast: Bool, to url: URL) throws -> FeedWriteResult {
        podcast
            ? try PodcastFeedWriter().write(channel: channel, items: items, to: url)
            : try RSSFeedWriter().write(channel: channel, items: items, to: url)
    }

    static func writeAtom(channel: FeedChannel, items: [FeedItem], to url: URL) throws -> FeedWriteResult {
        try AtomFeedWriter().write(channel: channel, items: items, to: url)
    }

    /// Nested: one outline per group; otherwise the feeds of all groups, flat.
    static func writeOPML(title: String, date: Date, groups: [(String, [(title: String, xmlURL: String, htmlURL: String?)])],
                          nested: Bool, to url: URL) throws -> (bytes: Int64, count: Int) {
        let converted = groups.map { group in
            (group: group.0, feeds: group.1.filter { !$0.xmlURL.isEmpty }.map { OPMLFeed(title: $0.title, xmlURL: $0.xmlURL, htmlURL: $0.htmlURL) })
        }
        let writer = OPMLWriter()
        let result = nested
            ? try writer.write(title: title, dateCreated: date, groups: converted, to: url)
            : try writer.write(title: title, dateCreated: date, feeds: converted.flatMap(\.feeds), to: url)
        return (result.byteCount, result.feedCount)
    }
}
