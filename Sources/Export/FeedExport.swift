import Catalog
import Foundation
import GRDB
import Snapshot

/// RSS feeds over the snapshot.
enum FeedExport {
    /// The newest podcasts (by their latest episode date) as an RSS 2.0 feed.
    static func writePodcastFeed(_ spec: PodcastFeedSpec, context: ExportContext) throws -> ExportedFile {
        let url = context.url(spec.path)
        let items: [FeedItem] = try context.store.reader.read { db in
            let rows = try Row.fetchAll(db, sql: """
                SELECT key, payload FROM records WHERE entity = 'podcast'
                ORDER BY json_extract(payload, '$.releaseDate') DESC, key LIMIT ?
                """, arguments: [spec.limit])
            return rows.compactMap { row in
                guard let fields = try? JSONParser.parse(Array((row["payload"] as String).utf8)) else { return nil }
                return podcastItem(key: row["key"], fields: fields, fallbackDate: context.runDate)
            }
        }
        let channel = FeedChannel(
            title: spec.title, link: spec.link, description: spec.description, language: "en-us",
            selfURL: spec.selfURL, lastBuildDate: context.runDate, generator: "storesync")
        let result = try PodcastFeedWriter().write(channel: channel, items: items, to: url)
        return ExportedFile(path: url.path, bytes: result.byteCount, rows: result.itemCount)
    }

    static func podcastItem(key: String, fields: JSONValue, fallbackDate: Date) -> FeedItem {
        let name = fields["trackName"]?.stringValue ?? fields["collectionName"]?.stringValue ?? "Podcast \(key)"
        var summary: [String] = []
        if let artist = fields["artistName"]?.stringValue { summary.append("By \(artist).") }
        if let genre = fields["primaryGenreName"]?.stringValue { summary.append("Genre: \(genre).") }
        if let count = fields["trackCount"]?.intValue { summary.append("\(count) episodes.") }
        if let feed = fields["feedUrl"]?.stringValue { summary.append("Feed: \(feed)") }
        return FeedItem(
            // Stable across runs and renames: readers must not see a renamed podcast as new.
            guid: "storesync:podcast:\(key)",
            title: name,
            link: fields["collectionViewUrl"]?.stringValue ?? fields["trackViewUrl"]?.stringValue,
            description: summary.joined(separator: " "),
            pubDate: fields["releaseDate"]?.stringValue.flatMap(parseISO8601) ?? fallbackDate,
            author: fields["artistName"]?.stringValue,
            imageURL: fields["artworkUrl600"]?.stringValue ?? fields["artworkUrl100"]?.stringValue,
            explicit: fields["trackExplicitness"]?.stringValue.map { $0 == "explicit" })
    }

    /// iTunes dates are ISO 8601 with `Z`, sometimes with fractional seconds.
    static func parseISO8601(_ text: String) -> Date? {
        let plain = ISO8601DateFormatter()
        if let date = plain.date(from: text) { return date }
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return fractional.date(from: text)
    }
}
