import Catalog
import Foundation

/// Builds one record's canonical fields from its wire fields, applying the
/// conventions of ``CanonicalSchema`` (ISO 8601 dates, prices as numbers,
/// `explicit` as 1/0, JSON arrays in text columns as JSON text) so every
/// connector writes a canonical value the same way.
///
/// Every setter takes the wire members in order of preference and uses the
/// first one that holds a usable value; a field none of them gives is left
/// absent, never written as null or a guess.
struct CanonicalFields {
    let wire: [String: JSONValue]
    private(set) var fields: [String: JSONValue] = [:]

    init(_ wire: [String: JSONValue]) {
        self.wire = wire
    }

    /// The first of `names` the wire record holds with a non-null value.
    func first(_ names: [String]) -> JSONValue? {
        for name in names {
            if let value = wire[name], value != .null { return value }
        }
        return nil
    }

    /// Sets `name` to a value computed elsewhere (nil leaves it absent).
    mutating func set(_ name: String, _ value: JSONValue?) {
        if let value { fields[name] = value }
    }

    /// Text as sent; numbers (ids sent as numbers) become their decimal text.
    /// An empty string is kept: for some fields (`parent_id`, `genre_id`) it means something.
    mutating func text(_ name: String, from names: String...) {
        set(name, first(names)?.stringValue.map(JSONValue.string))
    }

    /// A whole number, also from integral doubles and numeric strings (`"352058368"`).
    mutating func integer(_ name: String, from names: String...) {
        set(name, first(names).flatMap(CanonicalValue.integer))
    }

    /// A non-negative price as a double, whether the source sent `3500`, `3500.0`
    /// or `"3500"`, so an era that switches ints for floats is not a change.
    /// iTunes sends −1 for "not sold on its own": that is no price, so absent.
    mutating func price(_ name: String, from names: String...) {
        set(name, first(names).flatMap(CanonicalValue.price))
    }

    /// A number that is not a price (an average rating): a double, whatever form it came in.
    mutating func real(_ name: String, from names: String...) {
        set(name, first(names).flatMap { $0.doubleValue }.flatMap { $0.isFinite ? JSONValue.double($0) : nil })
    }

    /// A date as ISO 8601 text (see ``CanonicalValue/date(_:)``).
    mutating func date(_ name: String, from names: String...) {
        set(name, first(names).flatMap(CanonicalValue.date))
    }

    /// 1 or 0 from the first member that reads as explicit or not (see ``CanonicalValue/explicit(_:)``).
    /// Text in a vocabulary that is lower case (`full`, `episodic`), however the source capitalised it.
    mutating func lowercased(_ name: String, from names: String...) {
        set(name, first(names)?.stringValue.map { .string($0.lowercased()) })
    }

    mutating func explicit(_ name: String, from names: String...) {
        for member in names {
            if let value = wire[member].flatMap(CanonicalValue.explicit) {
                fields[name] = value
                return
            }
        }
    }
}

/// The value conventions of the canonical model, one function per kind of value.
enum CanonicalValue {
    static func integer(_ value: JSONValue) -> JSONValue? {
        value.intValue.map(JSONValue.int)
    }

    static func price(_ value: JSONValue) -> JSONValue? {
        guard let amount = value.doubleValue, amount.isFinite, amount >= 0 else { return nil }
        return .double(amount)
    }

    /// ISO 8601 text: a timestamp with a zone or offset becomes UTC
    /// (`2023-04-15T00:00:00-07:00` → `2023-04-15T07:00:00Z`), an RFC 822 date
    /// (feeds) the same; a bare date (`2025-01-05`) stays a bare date, since
    /// the source gave no time. Text that reads as neither is kept as sent:
    /// losing a date is worse than an odd format.
    static func date(_ value: JSONValue) -> JSONValue? {
        guard let text = value.stringValue?.trimmingCharacters(in: .whitespacesAndNewlines), !text.isEmpty else {
            return nil
        }
        if isBareDate(text) { return .string(text) }
        return .string(FeedDate.iso8601UTC(text) ?? text)
    }

    static func isBareDate(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard bytes.count == 10, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-") else { return false }
        return bytes.enumerated().allSatisfy { $0.offset == 4 || $0.offset == 7 || (0x30...0x39).contains($0.element) }
    }

    /// 1 or 0 from the ways the sources say it: iTunes `explicit` / `cleaned` /
    /// `notExplicit` (a cleaned version is not explicit), feeds' `yes` / `no` /
    /// `true` / `false` / `clean`, booleans and 1/0. Anything else (an empty
    /// tag, a typo) says nothing, so nil.
    static func explicit(_ value: JSONValue) -> JSONValue? {
        switch value {
        case .bool(let flag): return .int(flag ? 1 : 0)
        case .int(let n) where n == 0 || n == 1: return .int(n)
        case .string(let text):
            switch text.trimmingCharacters(in: .whitespacesAndNewlines).lowercased() {
            // "Explict" is how the v2 charts spell an advisory rating.
            case "explicit", "explict", "yes", "true", "1": return .int(1)
            case "notexplicit", "cleaned", "clean", "no", "false", "0": return .int(0)
            default: return nil
            }
        default: return nil
        }
    }

    /// A JSON array stored in a text column: its canonical JSON text, so a
    /// consumer's column is plain text and equal arrays are equal strings.
    static func jsonArrayText(_ elements: [JSONValue]) -> JSONValue {
        .string(CanonicalJSON.string(.array(elements)))
    }

    /// The URL of the largest `artworkUrlNNN` member (`artworkUrl600` over
    /// `artworkUrl100`), whatever sizes the record has.
    static func largestArtwork(_ wire: [String: JSONValue]) -> JSONValue? {
        var best: (size: Int, url: String)?
        for (name, value) in wire where name.hasPrefix("artworkUrl") {
            guard let size = Int(name.dropFirst("artworkUrl".count)), let url = value.stringValue, !url.isEmpty else {
                continue
            }
            if best.map({ size > $0.size }) ?? true { best = (size, url) }
        }
        return best.map { .string($0.url) }
    }

    /// The MIME type of a media file from what iTunes Lookup says about an
    /// episode's file: `episodeContentType` (`audio` or `video`, sometimes a
    /// full type) and `episodeFileExtension` (`mp3`). Nil when the extension is
    /// unknown: a wrong type is worse than none.
    static func mimeType(contentType: String?, fileExtension: String?) -> String? {
        let kind = contentType?.trimmingCharacters(in: .whitespaces).lowercased()
        if let kind, kind.contains("/") { return kind }
        guard var ext = fileExtension?.trimmingCharacters(in: .whitespaces).lowercased(), !ext.isEmpty else {
            return nil
        }
        if ext.hasPrefix(".") { ext.removeFirst() }
        let video = kind == "video"
        switch ext {
        case "mp3": return "audio/mpeg"
        case "m4a": return "audio/x-m4a"
        case "aac": return "audio/aac"
        case "mp4": return kind == "audio" ? "audio/mp4" : "video/mp4"
        case "m4v": return "video/mp4"
        case "mov": return "video/quicktime"
        case "ogg", "oga": return video ? "video/ogg" : "audio/ogg"
        case "opus": return "audio/opus"
        case "wav": return "audio/wav"
        case "flac": return "audio/flac"
        case "webm": return video ? "video/webm" : "audio/webm"
        case "pdf": return "application/pdf"
        default: return nil
        }
    }
}
