import Catalog
import Snapshot

/// The one rule for characters in every export.
///
/// A text cell of any export — CSV tables, `changes.csv`, `storesync changes
/// --csv/--json`, the consumer SQLite database, `report.json`, feeds and OPML —
/// holds only XML 1.0 characters: NUL and the other C0 controls except tab, LF
/// and CR are removed, as are U+FFFE and U+FFFF. (A lone surrogate escape such as
/// `\ud800` never gets this far: the JSON reader stores it as U+FFFD.) One rule
/// for all formats, so the CSV, the database and the feeds show the same text for
/// a field; NUL in particular truncates C strings in SQLite tools, spreadsheet
/// importers and shell pipelines. The snapshot keeps every value exactly as the
/// source sent it: the change log compares those, and a later fix of this rule
/// does not show up as a change.
package enum ExportText {
    /// `s` without the characters no export writes (see the type's documentation);
    /// `s` itself, after one pass over its bytes, when it has none.
    @inline(__always)
    package static func clean(_ s: String) -> String { XMLText.xmlSafe(s) }

    /// Whether `s` is already clean.
    package static func isClean(_ s: String) -> Bool { XMLText.isXMLSafe(s) }

    /// A stored value with its text cleaned; numbers and null as they are.
    package static func clean(_ value: StoredValue) -> StoredValue {
        if case .text(let s) = value, !isClean(s) { return .text(clean(s)) }
        return value
    }

    /// A JSON value with every string (and object key) cleaned.
    package static func clean(_ value: JSONValue) -> JSONValue {
        switch value {
        case .string(let s): return isClean(s) ? value : .string(clean(s))
        case .array(let elements): return .array(elements.map(clean))
        case .object(let members):
            var cleaned: [String: JSONValue] = [:]
            cleaned.reserveCapacity(members.count)
            for (key, member) in members { cleaned[clean(key)] = clean(member) }
            return .object(cleaned)
        default: return value
        }
    }
}

/// The one rule for links in feeds and OPML: only absolute `http`/`https` URLs
/// are published.
///
/// A feed reader or podcast app follows, downloads or renders what a feed links
/// to; a `javascript:`, `data:`, `file:` or `vbscript:` link from a store record
/// (or a relative path, or text with spaces or controls in it) is at best a
/// broken link and at worst script run by a reader that trusts the feed. Writers
/// omit such a link's element; an item that *is* its link (an episode's
/// enclosure, an OPML outline's `xmlUrl`) is withheld instead.
package enum PublishableURL {
    /// `url` when it is an absolute `http://` or `https://` URL with a host and
    /// no whitespace or control character anywhere; nil otherwise.
    package static func http(_ url: String?) -> String? {
        guard let url, isHTTP(url) else { return nil }
        return url
    }

    /// Whether `url` is publishable (see ``http(_:)``).
    package static func isHTTP(_ url: String) -> Bool {
        var url = url
        // Almost every link is ASCII: bytes decide it without the Unicode property
        // tables, which were 40% of a 100k-item feed's time.
        if let ascii = url.withUTF8({ isASCIIHTTP($0) }) { return ascii }
        return isHTTPScalars(url)
    }

    /// ``isHTTP(_:)`` of ASCII text on its bytes; nil when `bytes` hold a non-ASCII byte.
    ///
    /// In ASCII the characters that fail are exactly the controls, space and DEL
    /// (`0x00–0x20`, `0x7F`), and no two bytes make one `Character` except CR LF
    /// (a control anyway), so the byte reading matches the `Character` one.
    package static func isASCIIHTTP(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool? {
        var printable = true
        for byte in bytes {
            if byte >= 0x80 { return nil }
            if byte <= 0x20 || byte == 0x7F { printable = false }
        }
        guard printable else { return false }
        func lower(_ byte: UInt8) -> UInt8 { byte >= 0x41 && byte <= 0x5A ? byte + 0x20 : byte }
        func hasScheme(_ scheme: StaticString) -> Bool {
            let count = scheme.utf8CodeUnitCount
            guard bytes.count >= count else { return false }
            for i in 0..<count where lower(bytes[i]) != scheme.utf8Start[i] { return false }
            return true
        }
        let authorityStart: Int
        if hasScheme("https://") {
            authorityStart = 8
        } else if hasScheme("http://") {
            authorityStart = 7
        } else {
            return false
        }
        // The authority runs to the first /, ?, # or \; the host is what follows its
        // last @ (userinfo), up to a : (port) unless it is a bracketed IPv6 literal.
        var authorityEnd = authorityStart
        while authorityEnd < bytes.count {
            let byte = bytes[authorityEnd]
            if byte == UInt8(ascii: "/") || byte == UInt8(ascii: "?") || byte == UInt8(ascii: "#") || byte == UInt8(ascii: "\\") { break }
            authorityEnd += 1
        }
        var hostStart = authorityStart
        for i in authorityStart..<authorityEnd where bytes[i] == UInt8(ascii: "@") { hostStart = i + 1 }
        return hostStart < authorityEnd && bytes[hostStart] != UInt8(ascii: ":")
    }

    /// ``isHTTP(_:)`` by Unicode scalars and `Character`s: any text.
    package static func isHTTPScalars(_ url: String) -> Bool {
        let scalars = url.unicodeScalars
        for scalar in scalars {
            // Spaces, controls (C0, DEL, C1), format characters such as U+200B/U+202E
            // (which hide what a link says) and non-characters.
            switch scalar.properties.generalCategory {
            case .control, .format, .spaceSeparator, .lineSeparator, .paragraphSeparator, .surrogate, .unassigned: return false
            default: break
            }
            if scalar.properties.isWhitespace || scalar.properties.isNoncharacterCodePoint { return false }
        }
        let lower = url.prefix(8).lowercased()
        let rest: Substring
        if lower.hasPrefix("https://") {
            rest = url.dropFirst(8)
        } else if lower.hasPrefix("http://") {
            rest = url.dropFirst(7)
        } else {
            return false
        }
        // The authority runs to the first /, ? or #; its host (after any userinfo,
        // before any port) must not be empty.
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" && $0 != "\\" }
        let hostAndPort = authority.split(separator: "@", omittingEmptySubsequences: false).last ?? ""
        let host = hostAndPort.hasPrefix("[") ? hostAndPort : (hostAndPort.split(separator: ":", omittingEmptySubsequences: false).first ?? "")
        return !host.isEmpty
    }
}
