import Catalog
import Foundation

/// The one place feed exports meet the XML writers.
enum FeedWriters {
    static func writeRSS(channel: FeedChannel, items: [FeedItem], podcast: Bool, to url: URL) throws -> FeedWriteResult {
        try PodcastFeedWriter().write(channel: channel, items: items, to: url)
    }

    static func writeAtom(channel: FeedChannel, items: [FeedItem], to url: URL) throws -> FeedWriteResult {
        throw StoreSyncError.exportFailed(path: url.path, reason: "Atom writer pending")
    }

    static func writeOPML(title: String, date: Date, groups: [(String, [(title: String, xmlURL: String, htmlURL: String?)])],
                          nested: Bool, to url: URL) throws -> (bytes: Int64, count: Int) {
        throw StoreSyncError.exportFailed(path: url.path, reason: "OPML writer pending")
    }
}
