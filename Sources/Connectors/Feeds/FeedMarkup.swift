import Catalog

/// Lossless repairs of a feed's bytes before libxml2 reads them: the two
/// ways real feeds break XML where what the publisher meant is certain.
///
/// - **Bare ampersands.** `url="…mp3?aid=rss_feed&awEpisodeId=…"` is common in
///   hand-made feeds. libxml2's recovery drops each `&name` it cannot resolve,
///   so the stored URL would point elsewhere; an `&` that starts no reference
///   is escaped instead, and the value is exactly the publisher's text.
/// - **Internal entities.** A feed may declare `<!ENTITY id "tag:example.com,">`
///   in its internal DTD subset and write `&id;`. Those general entities are
///   expanded here, within bounds (count, nesting, bytes), so that libxml2
///   never expands anything: a billion-laughs document is refused before it
///   can grow. External and parameter entities are never expanded: a feed
///   declaring one is refused whole, as it was before any entity was read.
///
/// CDATA sections, comments and processing instructions are copied as they
/// are: an `&` there is text. Line numbers are kept (the DTD subset removed is
/// replaced by its line breaks) so that libxml2's errors still point at the
/// publisher's lines.
enum FeedMarkup {
    /// Entities a feed may declare.
    static let maxEntities = 10_000
    /// How deep entity references may nest within entity values.
    static let maxNesting = 16
    /// Bytes the expansion may add: to one entity's value, and to the whole
    /// document (or the document's own size, when larger).
    static let maxGrowth = 10 << 20

    /// The repaired body, or nil when it needs none.
    ///
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` for a feed
    ///   declaring an external or parameter entity, or whose entities exceed
    ///   the bounds.
    static func repaired(_ body: [UInt8], url: String) throws(StoreSyncError) -> [UInt8]? {
        // Most feeds need neither repair: an `&` is what either starts with.
        guard body.contains(UInt8(ascii: "&")) || containsDoctypeSubset(body) else { return nil }
        var scanner = Scanner(body: body, url: url)
        return try scanner.run()
    }

    private static func containsDoctypeSubset(_ body: [UInt8]) -> Bool {
        guard let doctype = firstIndex(of: Array("<!DOCTYPE".utf8), in: body, from: 0) else { return false }
        return body[doctype...].prefix(4096).contains(UInt8(ascii: "["))
    }

    static func firstIndex(of pattern: [UInt8], in body: [UInt8], from start: Int) -> Int? {
        guard let first = pattern.first, body.count >= pattern.count else { return nil }
        var i = start
        let last = body.count - pattern.count
        while i <= last {
            if body[i] == first, body[i..<(i + pattern.count)].elementsEqual(pattern) { return i }
            i += 1
        }
        return nil
    }

    static func isNameStart(_ byte: UInt8) -> Bool {
        (byte >= 0x61 && byte <= 0x7A) || (byte >= 0x41 && byte <= 0x5A) || byte == 0x5F || byte == 0x3A || byte >= 0x80
    }

    static func isNameByte(_ byte: UInt8) -> Bool {
        isNameStart(byte) || (byte >= 0x30 && byte <= 0x39) || byte == 0x2D || byte == 0x2E
    }

    static func isSpace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D
    }

    static let cdataStart = Array("<![CDATA[".utf8)
    static let commentStart = Array("<!--".utf8)

    /// XML's own entities: libxml2 reads them, and a feed may not redefine them.
    static let predefined: Set<String> = ["amp", "lt", "gt", "quot", "apos"]

    /// Where a reference stands: in an attribute value its replacement must not
    /// end the value or open a tag.
    enum Context: Equatable {
        case content
        case attribute(quote: UInt8)
    }

    /// What starts at an `&`.
    enum Reference {
        /// `&#…;` or `&#x…;`: libxml2 reads it.
        case character(length: Int)
        /// `&name;`.
        case named(String, length: Int)
        /// An `&` that starts no reference.
        case bare
    }

    static func reference(in bytes: [UInt8], at start: Int) -> Reference {
        var i = start + 1
        guard i < bytes.count else { return .bare }
        if bytes[i] == UInt8(ascii: "#") {
            i += 1
            let hex = i < bytes.count && (bytes[i] == UInt8(ascii: "x"))
            if hex { i += 1 }
            let digitsStart = i
            while i < bytes.count, hex ? bytes[i].isHexDigit : (bytes[i] >= 0x30 && bytes[i] <= 0x39) { i += 1 }
            guard i > digitsStart, i < bytes.count, bytes[i] == UInt8(ascii: ";") else { return .bare }
            return .character(length: i + 1 - start)
        }
        guard isNameStart(bytes[i]) else { return .bare }
        while i < bytes.count, isNameByte(bytes[i]) { i += 1 }
        guard i < bytes.count, bytes[i] == UInt8(ascii: ";") else { return .bare }
        return .named(String(decoding: bytes[(start + 1)..<i], as: UTF8.self), length: i + 1 - start)
    }

    /// One pass over a feed body.
    private struct Scanner {
        let body: [UInt8]
        let url: String
        /// Declared internal general entities: their literal values.
        var declared: [String: [UInt8]] = [:]
        /// Their replacement texts, once expanded.
        var expanded: [String: [UInt8]] = [:]
        var grown = 0
        var changed = false

        init(body: [UInt8], url: String) {
            self.body = body
            self.url = url
        }

        func refusal(_ reason: String) -> StoreSyncError {
            .malformedPage(url: url, reason: reason + "; nothing is read from it")
        }

        mutating func run() throws(StoreSyncError) -> [UInt8]? {
            var out: [UInt8] = []
            out.reserveCapacity(body.count + 64)
            var i = 0
            if let subset = try prologSubset() {
                out += body[..<subset.start]
                // The subset's line breaks stand in for it, so libxml2's line numbers stay true.
                out += body[subset.start..<subset.end].filter { $0 == 0x0A }
                i = subset.end
                changed = changed || !declared.isEmpty
                if declared.isEmpty {
                    // A subset without entities (element or attribute declarations) is kept as is.
                    out.removeAll(keepingCapacity: true)
                    out += body[..<subset.end]
                }
            }
            var context: Context? = .content  // nil inside a tag, between attributes
            while i < body.count {
                let byte = body[i]
                switch context {
                case .content?:
                    if byte == UInt8(ascii: "<") {
                        if let end = skipOpaque(from: i) {
                            out += body[i..<end]
                            i = end
                            continue
                        }
                        if i + 1 < body.count, Self.isTagStart(body[i + 1]) { context = nil }
                    } else if byte == UInt8(ascii: "&") {
                        i = try resolve(at: i, context: .content, into: &out)
                        continue
                    }
                case nil:
                    if byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "'") {
                        context = .attribute(quote: byte)
                    } else if byte == UInt8(ascii: ">") {
                        context = .content
                    }
                case .attribute(let quote)?:
                    if byte == quote {
                        context = nil
                    } else if byte == UInt8(ascii: "&") {
                        i = try resolve(at: i, context: .attribute(quote: quote), into: &out)
                        continue
                    }
                }
                out.append(byte)
                i += 1
            }
            return changed ? out : nil
        }

        static func isTagStart(_ byte: UInt8) -> Bool { FeedMarkup.isNameStart(byte) || byte == UInt8(ascii: "/") }

        /// The end of a CDATA section, comment, processing instruction or
        /// declaration starting at `start` (a `<`), or nil when a tag starts there.
        func skipOpaque(from start: Int) -> Int? {
            func after(_ terminator: String, from: Int) -> Int {
                FeedMarkup.firstIndex(of: Array(terminator.utf8), in: body, from: from).map { $0 + terminator.utf8.count }
                    ?? body.count
            }
            guard start + 1 < body.count else { return nil }
            switch body[start + 1] {
            case UInt8(ascii: "?"): return after("?>", from: start + 2)
            case UInt8(ascii: "!"):
                let rest = body[start...]
                if rest.starts(with: FeedMarkup.cdataStart) { return after("]]>", from: start + 9) }
                if rest.starts(with: FeedMarkup.commentStart) { return after("-->", from: start + 4) }
                return after(">", from: start + 2)
            default: return nil
            }
        }

        /// Handles the `&` at `start`: copies a reference libxml2 reads,
        /// expands a declared entity, escapes a bare ampersand. Returns where
        /// the scan goes on.
        mutating func resolve(at start: Int, context: Context, into out: inout [UInt8]) throws(StoreSyncError) -> Int {
            switch FeedMarkup.reference(in: body, at: start) {
            case .character(let length):
                out += body[start..<(start + length)]
                return start + length
            case .named(let name, let length):
                if declared[name] != nil {
                    let text = try expansion(of: name, depth: 0, chain: [])
                    let escaped = Self.escaped(text, for: context)
                    grown += escaped.count
                    guard grown <= max(FeedMarkup.maxGrowth, body.count) else {
                        throw refusal("the feed's entities expand past \(FeedMarkup.maxGrowth >> 20) MB (a billion-laughs document?)")
                    }
                    out += escaped
                    changed = true
                } else {
                    out += body[start..<(start + length)]
                }
                return start + length
            case .bare:
                out += Array("&amp;".utf8)
                changed = true
                return start + 1
            }
        }

        /// A replacement text where it is used: in an attribute value, the
        /// characters that would end the value or open a tag are escaped.
        static func escaped(_ text: [UInt8], for context: Context) -> [UInt8] {
            guard case .attribute = context,
                  text.contains(where: { $0 == UInt8(ascii: "\"") || $0 == UInt8(ascii: "'") || $0 == UInt8(ascii: "<") })
            else { return text }
            var out: [UInt8] = []
            for byte in text {
                switch byte {
                case UInt8(ascii: "\""): out += Array("&#34;".utf8)
                case UInt8(ascii: "'"): out += Array("&#39;".utf8)
                case UInt8(ascii: "<"): out += Array("&#60;".utf8)
                default: out.append(byte)
                }
            }
            return out
        }

        /// The entity's replacement text, every declared entity in it expanded
        /// and every bare `&` escaped; character references are left for libxml2.
        mutating func expansion(of name: String, depth: Int, chain: [String]) throws(StoreSyncError) -> [UInt8] {
            if let done = expanded[name] { return done }
            guard !chain.contains(name) else {
                throw refusal("the feed's entity '\(name)' refers to itself (\((chain + [name]).joined(separator: " → ")))")
            }
            guard depth < FeedMarkup.maxNesting else {
                throw refusal("the feed's entities nest deeper than \(FeedMarkup.maxNesting) levels at '\(name)'")
            }
            let literal = declared[name] ?? []
            var out: [UInt8] = []
            var i = 0
            while i < literal.count {
                guard literal[i] == UInt8(ascii: "&") else {
                    out.append(literal[i])
                    i += 1
                    continue
                }
                switch FeedMarkup.reference(in: literal, at: i) {
                case .character(let length):
                    out += literal[i..<(i + length)]
                    i += length
                case .named(let inner, let length):
                    if declared[inner] != nil {
                        out += try expansion(of: inner, depth: depth + 1, chain: chain + [name])
                    } else {
                        out += literal[i..<(i + length)]
                    }
                    i += length
                case .bare:
                    out += Array("&amp;".utf8)
                    i += 1
                }
                guard out.count <= FeedMarkup.maxGrowth else {
                    throw refusal("the feed's entity '\(name)' expands past \(FeedMarkup.maxGrowth >> 20) MB (a billion-laughs document?)")
                }
            }
            expanded[name] = out
            return out
        }

        /// The bounds of the internal DTD subset (`<!DOCTYPE name [ … ]>`,
        /// the whole declaration) when the prolog has one; its entity
        /// declarations go to ``declared``.
        mutating func prologSubset() throws(StoreSyncError) -> (start: Int, end: Int)? {
            var i = 0
            while i < body.count {
                if FeedMarkup.isSpace(body[i]) { i += 1; continue }
                guard body[i] == UInt8(ascii: "<") else { return nil }
                let rest = body[i...]
                if rest.starts(with: [UInt8(ascii: "<"), UInt8(ascii: "?")]) || rest.starts(with: FeedMarkup.commentStart) {
                    guard let end = skipOpaque(from: i) else { return nil }
                    i = end
                    continue
                }
                guard rest.starts(with: Array("<!DOCTYPE".utf8)) else { return nil }
                let start = i
                i += 9
                // Up to `[` or the end of a DOCTYPE without a subset, past quoted identifiers.
                while i < body.count, body[i] != UInt8(ascii: "["), body[i] != UInt8(ascii: ">") {
                    if body[i] == UInt8(ascii: "\"") || body[i] == UInt8(ascii: "'") { i = skipQuoted(from: i) } else { i += 1 }
                }
                guard i < body.count, body[i] == UInt8(ascii: "[") else { return nil }
                i += 1
                while i < body.count, body[i] != UInt8(ascii: "]") {
                    if body[i] == UInt8(ascii: "<") {
                        if body[i...].starts(with: Array("<!ENTITY".utf8)) {
                            i = try entityDeclaration(from: i)
                        } else if let end = skipDeclaration(from: i) {
                            i = end
                        } else {
                            return nil
                        }
                    } else if body[i] == UInt8(ascii: "%") {
                        throw refusal("the feed refers to a parameter entity in its DTD; such feeds are refused (only internal general entities are expanded)")
                    } else {
                        i += 1
                    }
                }
                guard i < body.count else { return nil }
                i += 1
                while i < body.count, body[i] != UInt8(ascii: ">") { i += 1 }
                guard i < body.count else { return nil }
                return (start, i + 1)
            }
            return nil
        }

        func skipQuoted(from start: Int) -> Int {
            let quote = body[start]
            var i = start + 1
            while i < body.count, body[i] != quote { i += 1 }
            return min(body.count, i + 1)
        }

        /// The end of a markup declaration or comment in the subset.
        func skipDeclaration(from start: Int) -> Int? {
            if body[start...].starts(with: FeedMarkup.commentStart) || body[start...].starts(with: [UInt8(ascii: "<"), UInt8(ascii: "?")]) {
                return skipOpaque(from: start)
            }
            var i = start + 1
            while i < body.count, body[i] != UInt8(ascii: ">") {
                if body[i] == UInt8(ascii: "\"") || body[i] == UInt8(ascii: "'") { i = skipQuoted(from: i) } else { i += 1 }
            }
            return i < body.count ? i + 1 : nil
        }

        /// Reads `<!ENTITY name "value">` at `start` into ``declared``.
        mutating func entityDeclaration(from start: Int) throws(StoreSyncError) -> Int {
            var i = start + 8
            while i < body.count, FeedMarkup.isSpace(body[i]) { i += 1 }
            if i < body.count, body[i] == UInt8(ascii: "%") {
                throw refusal("the feed declares a parameter entity; such feeds are refused (only internal general entities are expanded)")
            }
            let nameStart = i
            while i < body.count, FeedMarkup.isNameByte(body[i]) { i += 1 }
            let name = String(decoding: body[nameStart..<i], as: UTF8.self)
            while i < body.count, FeedMarkup.isSpace(body[i]) { i += 1 }
            guard !name.isEmpty, i < body.count, body[i] == UInt8(ascii: "\"") || body[i] == UInt8(ascii: "'") else {
                throw refusal("the feed declares the external entity '\(name)'; such feeds are refused (only internal general entities are expanded, never anything outside the feed)")
            }
            let valueEnd = skipQuoted(from: i)
            let value = Array(body[(i + 1)..<max(i + 1, valueEnd - 1)])
            i = valueEnd
            while i < body.count, body[i] != UInt8(ascii: ">") { i += 1 }
            // The first declaration of a name binds (XML 1.0 §4.2); XML's own may not be redefined.
            if !FeedMarkup.predefined.contains(name), declared[name] == nil {
                guard declared.count < FeedMarkup.maxEntities else {
                    throw refusal("the feed declares more than \(FeedMarkup.maxEntities) entities")
                }
                declared[name] = value
            }
            return min(body.count, i + 1)
        }
    }
}

extension UInt8 {
    fileprivate var isHexDigit: Bool {
        (self >= 0x30 && self <= 0x39) || (self >= 0x41 && self <= 0x46) || (self >= 0x61 && self <= 0x66)
    }
}
