import Catalog
import Export
import Foundation

/// The RSS task of the benchmark, the same work as the peers' `rss_gen.py`:
/// read the first N records of a JSON Lines file and write one RSS 2.0
/// podcast feed (`itunes:` namespace) with the same channel and item fields,
/// through the writer the exports use (``XMLDocumentWriter``: text filtered
/// to XML characters, escaped as libxml2's xmlTextWriter escapes it, the
/// result re-parsed strictly by libxml2 before it is published).
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

    /// `YYYY-MM-DDTHH:MM:SSZ`, the form every record of the benchmark has, read
    /// by hand (Foundation's parser was a tenth of the task); nil for any other
    /// form, which Foundation then reads.
    static func utcDate(_ text: String) -> Date? {
        var text = text
        return text.withUTF8 { b -> Date? in
            guard b.count == 20, b[4] == UInt8(ascii: "-"), b[7] == UInt8(ascii: "-"), b[10] == UInt8(ascii: "T"),
                  b[13] == UInt8(ascii: ":"), b[16] == UInt8(ascii: ":"), b[19] == UInt8(ascii: "Z") else { return nil }
            func number(_ range: Range<Int>) -> Int? {
                var value = 0
                for i in range {
                    guard b[i] >= 0x30, b[i] <= 0x39 else { return nil }
                    value = value * 10 + Int(b[i] - 0x30)
                }
                return value
            }
            guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10), let hour = number(11..<13),
                  let minute = number(14..<16), let second = number(17..<19),
                  (1...12).contains(month), day >= 1, hour < 24, minute < 60, second < 60 else { return nil }
            let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
            guard day <= [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1] else { return nil }
            // Days from the civil date (Howard Hinnant's algorithm), proleptic Gregorian as ISO 8601.
            let y = month <= 2 ? year - 1 : year
            let era = (y >= 0 ? y : y - 399) / 400
            let yearOfEra = y - era * 400
            let dayOfYear = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
            let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
            let days = era * 146_097 + dayOfEra - 719_468
            return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3_600 + minute * 60 + second))
        }
    }

    static func item(_ line: UnsafeBufferPointer<UInt8>) throws -> FeedItem? {
        guard case .object(let r) = try JSONParser.parse(line) else { return nil }
        let id = r["id"]?.intValue.map(String.init) ?? ""
        let millis = r["trackTimeMillis"]?.intValue ?? 0
        let date = (r["releaseDate"]?.stringValue).flatMap { utcDate($0) ?? (try? iso.parse($0)) } ?? Date(timeIntervalSince1970: 0)
        return FeedItem(
            guid: id, title: r["name"]?.stringValue ?? "", link: r["trackViewUrl"]?.stringValue,
            description: r["description"]?.stringValue ?? "", pubDate: date, author: r["artist"]?.stringValue,
            imageURL: r["artworkUrl"]?.stringValue,
            enclosure: FeedEnclosure(url: "https://cdn.example.com/audio/\(id).mp3", length: Int64(millis * 16), type: "audio/mpeg"),
            explicit: r["contentAdvisoryRating"]?.stringValue == "Explicit", durationSeconds: Int(millis / 1000))
    }
}
