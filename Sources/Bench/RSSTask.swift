import Catalog
import Export
import Foundation

/// The RSS task of the benchmark, the same work as the peers' `rss_gen.py`:
/// read the first N records of a JSON Lines file and write one RSS 2.0
/// podcast feed (`itunes:` namespace) with the same channel and item fields,
/// through the writer the exports use (libxml2's xmlTextWriter, text
/// filtered to XML characters, the result re-parsed strictly before it is
/// published).
package enum RSSTask {
    package static func run(records limit: Int, input: String, output: String) throws {
        let data = try Data(contentsOf: URL(fileURLWithPath: input), options: .alwaysMapped)
        let items = try data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> [FeedItem] in
            let bytes = raw.bindMemory(to: UInt8.self)
            // Lines first (a cheap scan), then parsed on every core, as the peers' json.loads is C.
            var lines: [Range<Int>] = []
            lines.reserveCapacity(limit)
            var start = 0
            while lines.count < limit, start < bytes.count {
                let end = bytes[start...].firstIndex(of: 0x0A) ?? bytes.count
                if end > start { lines.append(start..<end) }
                start = end + 1
            }
            let chunks = ParallelChunks.map(lines.count) { range in
                Result { try range.compactMap { try item(UnsafeBufferPointer(rebasing: bytes[lines[$0]])) } }
            }
            return try chunks.flatMap { try $0.get() }
        }
        let channel = FeedChannel(
            title: "Catalog Feed & Friends", link: "https://music.example.com/feed",
            description: "Synthetic catalog export <test>", language: "en", selfURL: "https://music.example.com/feed.xml",
            imageURL: "https://is1-ssl.mzstatic.com/image/thumb/channel/600x600bb.jpg", author: "Example Catalog",
            categories: [["Technology"]], lastBuildDate: Date(timeIntervalSince1970: 1_800_000_000), generator: "storesync bench")
        _ = try PodcastFeedWriter(indent: false)
            .write(channel: channel, items: items, to: URL(fileURLWithPath: output))
    }

    static let iso = Date.ISO8601FormatStyle()

    static func item(_ line: UnsafeBufferPointer<UInt8>) throws -> FeedItem? {
        guard case .object(let r) = try JSONParser.parse(line) else { return nil }
        let id = r["id"]?.intValue.map(String.init) ?? ""
        let millis = r["trackTimeMillis"]?.intValue ?? 0
        let date = (r["releaseDate"]?.stringValue).flatMap { try? iso.parse($0) } ?? Date(timeIntervalSince1970: 0)
        return FeedItem(
            guid: id, title: r["name"]?.stringValue ?? "", link: r["trackViewUrl"]?.stringValue,
            description: r["description"]?.stringValue ?? "", pubDate: date, author: r["artist"]?.stringValue,
            imageURL: r["artworkUrl"]?.stringValue,
            enclosure: FeedEnclosure(url: "https://cdn.example.com/audio/\(id).mp3", length: Int64(millis * 16), type: "audio/mpeg"),
            explicit: r["contentAdvisoryRating"]?.stringValue == "Explicit", durationSeconds: Int(millis / 1000))
    }
}
