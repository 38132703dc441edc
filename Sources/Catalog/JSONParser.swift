/// Where a JSON document stopped making sense, for error messages that let a
/// user find the byte in the response they saved.
public struct JSONSyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    /// Zero-based byte offset into the document.
    public var offset: Int
    /// One-based line and column (columns count bytes).
    public var line: Int
    public var column: Int

    public var description: String { "\(message) at line \(line), column \(column) (byte \(offset))" }
}

/// A strict RFC 8259 parser straight from UTF-8 bytes to ``JSONValue``.
///
/// Hand-written rather than `JSONSerialization`/`JSONDecoder` because the
/// crawler needs three things those do not give: the exact position of a
/// syntax error (Invariant 6), integers kept apart from doubles without
/// `NSNumber` bridging ambiguities on Linux, and one pass over raw bytes
/// without an intermediate `Any` tree. Leading whitespace (iTunes sends three
/// newlines), CRLF and a UTF-8 BOM are accepted; invalid UTF-8 inside strings
/// is replaced by U+FFFD rather than failing the whole page.
package enum JSONParser {
    /// Nesting deeper than this is rejected instead of overflowing the stack.
    package static let maxDepth = 512

    package static func parse(_ bytes: some Collection<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        let array = Array(bytes)
        return try array.withUnsafeBufferPointer { buffer throws(JSONSyntaxError) in
            var parser = Parser(buffer: buffer)
            return try parser.parseDocument()
        }
    }

    package static func parse(_ text: String) throws(JSONSyntaxError) -> JSONValue {
        try parse(Array(text.utf8))
    }

    /// Parses bytes in place (no copy): for a row sliced out of a larger page.
    package static func parse(_ buffer: UnsafeBufferPointer<UInt8>) throws(JSONSyntaxError) -> JSONValue {
        var parser = Parser(buffer: buffer)
        return try parser.parseDocument()
    }

    /// The value of the top-level member `name` of the object in `buffer`,
    /// found by skipping over the other members without building them: the
    /// key of a JSON Lines row at a fraction of the cost of parsing the row.
    ///
    /// Nil when the member is absent, or when anything in the way is out of
    /// the ordinary (an escaped key, malformed bytes): the caller then parses
    /// the row in full, which reports errors properly. The bytes skipped are
    /// not validated, so use the result only as a hint that the full parse
    /// (or a byte-exact match with a row parsed before) confirms.
    package static func member(_ name: String, ofObjectIn buffer: UnsafeBufferPointer<UInt8>) -> JSONValue? {
        var parser = Parser(buffer: buffer)
        return parser.findMember(Array(name.utf8))
    }

    /// Calls `body` with each top-level member of the object in `buffer`: its
    /// name (the bytes between its quotes) and its value (its whole JSON text)
    /// as ranges of `buffer`, and whether each holds an escape; nested values
    /// are skipped, not built. Returns how many members it passed to `body`, or
    /// nil when `buffer` holds no object.
    ///
    /// It stops quietly at the first byte out of place instead of reporting it:
    /// it reads what the store wrote (canonical JSON, well-formed by
    /// construction) once per row of an export, where validating the row again
    /// would cost a full parse. Input from outside goes through ``parse(_:)-swift.type.method``.
    @discardableResult
    package static func members(ofObjectIn buffer: UnsafeBufferPointer<UInt8>,
                                _ body: (_ name: Range<Int>, _ nameEscaped: Bool,
                                         _ value: Range<Int>, _ valueEscaped: Bool) -> Void) -> Int? {
        var parser = Parser(buffer: buffer)
        guard parser.enterObject() else { return nil }
        var count = 0
        while let member = parser.nextMember() {
            let valueStart = parser.index
            guard let valueEscaped = parser.skipValue() else { break }
            body(member.name, member.escaped, valueStart..<min(parser.index, buffer.count), valueEscaped)
            count += 1
            guard parser.leaveMember() else { break }
        }
        return count
    }

    /// The rows of a page of rows, `{"<rowsMember>": [row, …], …}`: each
    /// row's whole text as a range of `buffer`, unread, and the page's other
    /// members parsed (its paging flags, small values).
    ///
    /// Strict where it reads (every byte outside the rows is checked; a row's
    /// text is delimited, not validated, so its caller parses it strictly),
    /// and nil wherever the page is not plainly that: not one object, an
    /// escaped member name, `rowsMember` twice or not an array, malformed
    /// bytes between the rows. The caller then parses the page in full, which
    /// reports an error where there is one.
    package static func rows(ofPageIn buffer: UnsafeBufferPointer<UInt8>, rowsMember: String)
        -> (rows: [Range<Int>], others: [String: JSONValue])? {
        var parser = Parser(buffer: buffer)
        return parser.pageRows(Array(rowsMember.utf8))
    }

    /// The text of a JSON string's contents (the bytes between its quotes) with
    /// its escapes decoded, as parsing the string makes it; the bytes as text
    /// (invalid UTF-8 repaired) when they are not a valid string's contents.
    package static func stringContents(_ bytes: Slice<UnsafeBufferPointer<UInt8>>) -> String {
        // The quoted string in one scratch buffer, parsed in place: building it from
        // three arrays cost more than the parse, for every escaped value of an export.
        let decoded = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: bytes.count + 2) { quoted -> String? in
            quoted[0] = UInt8(ascii: "\"")
            _ = UnsafeMutableBufferPointer(rebasing: quoted[1...]).initialize(from: bytes)
            quoted[bytes.count + 1] = UInt8(ascii: "\"")
            var decoded: [UInt8] = []
            return decodeString(UnsafeBufferPointer(quoted), into: &decoded) ? String(decoding: decoded, as: UTF8.self) : nil
        }
        return decoded ?? String(decoding: bytes, as: UTF8.self)
    }

    /// Decodes the JSON string `json` (its quotes included) into `decoded`, as
    /// parsing it does but before invalid UTF-8 is repaired (a String made of
    /// `decoded` is the parsed string); false when `json` is not exactly one
    /// valid JSON string.
    package static func decodeString(_ json: UnsafeBufferPointer<UInt8>, into decoded: inout [UInt8]) -> Bool {
        guard json.first == UInt8(ascii: "\"") else { return false }
        var parser = Parser(buffer: json)
        do {
            try parser.parseStringBytes { bytes in
                decoded.removeAll(keepingCapacity: true)
                decoded.append(contentsOf: bytes)
            }
        } catch {
            return false
        }
        return parser.index == json.count
    }

    /// The canonical encoding (``CanonicalJSON``) of the object in `buffer`,
    /// written straight from its bytes with no ``JSONValue`` built, and the
    /// shape of its top-level members; the value of member `keyField` too.
    ///
    /// It writes exactly what `CanonicalJSON.encodeObject` writes for the
    /// parsed object, and returns nil, leaving the caller to parse the row,
    /// wherever that is not certain by construction: a document that is not
    /// one well-formed object, a key that is not plain ASCII (a Swift
    /// dictionary holds two keys that differ in bytes but not as text as one
    /// member), a key twice in one object, or a top-level number no Int64
    /// or Double holds (its entity keeps it as text). A records file's rows are
    /// decoded this way on a first load: a million rows decoded into
    /// dictionaries and encoded again was most of the decoders' time, and
    /// the dictionaries held 3.6 KB a row while their page waited to be written.
    package static func canonicalObject(_ buffer: UnsafeBufferPointer<UInt8>, keyField: String,
                                        scratch: inout CanonicalScratch) -> CanonicalObject? {
        var parser = Parser(buffer: buffer)
        return parser.canonicalDocument(keyField: Array(keyField.utf8), scratch: &scratch)
    }

    private struct Parser {
        let buffer: UnsafeBufferPointer<UInt8>
        var index = 0
        var depth = 0
        var scratch: [UInt8] = []

        init(buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
            skipLeadingBOMAndWhitespace()
            if index >= buffer.count { throw error("empty document") }
            let value = try parseValue()
            skipWhitespace()
            if index < buffer.count { throw error("unexpected data after the JSON value") }
            return value
        }

        func error(_ message: String) -> JSONSyntaxError {
            var line = 1
            var lineStart = 0
            let end = min(index, buffer.count)
            var i = 0
            while i < end {
                if buffer[i] == 0x0A { line += 1; lineStart = i + 1 }
                i += 1
            }
            return JSONSyntaxError(message: message, offset: index, line: line, column: index - lineStart + 1)
        }

        /// Moves past a UTF-8 byte order mark at the document's start, then whitespace.
        mutating func skipLeadingBOMAndWhitespace() {
            if index == 0, buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { index = 3 }
            skipWhitespace()
        }

        mutating func skipWhitespace() {
            while index < buffer.count {
                switch buffer[index] {
                case 0x20, 0x09, 0x0A, 0x0D: index += 1
                default: return
                }
            }
        }

        mutating func parseValue() throws(JSONSyntaxError) -> JSONValue {
            guard index < buffer.count else { throw error("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: "{"): return try parseObject()
            case UInt8(ascii: "["): return try parseArray()
            case UInt8(ascii: "\""): return .string(try parseString())
            case UInt8(ascii: "t"): try expectLiteral("true"); return .bool(true)
            case UInt8(ascii: "f"): try expectLiteral("false"); return .bool(false)
            case UInt8(ascii: "n"): try expectLiteral("null"); return .null
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
            default: throw error("unexpected character '\(printable(buffer[index]))'")
            }
        }

        func printable(_ byte: UInt8) -> String {
            (0x20..<0x7F).contains(byte) ? String(UnicodeScalar(byte)) : "\\x" + String(byte, radix: 16)
        }

        mutating func expectLiteral(_ literal: StaticString) throws(JSONSyntaxError) {
            let count = literal.utf8CodeUnitCount
            guard index + count <= buffer.count else { throw error("unexpected end of data") }
            let p = literal.utf8Start
            for i in 0..<count where buffer[index + i] != p[i] {
                throw error("invalid literal")
            }
            index += count
        }

        /// After a member or element: true past the closing `bracket`, false
        /// past a comma (another follows).
        mutating func closes(_ bracket: UInt8, inside what: String) throws(JSONSyntaxError) -> Bool {
            skipWhitespace()
            guard index < buffer.count else { throw error("unexpected end of data inside \(what)") }
            if buffer[index] == UInt8(ascii: ",") { index += 1; return false }
            if buffer[index] == bracket { index += 1; return true }
            throw error("expected ',' or '\(Character(Unicode.Scalar(bracket)))' in \(what)")
        }

        mutating func enter() throws(JSONSyntaxError) {
            depth += 1
            if depth > JSONParser.maxDepth { throw error("nesting deeper than \(JSONParser.maxDepth)") }
        }

        mutating func parseObject() throws(JSONSyntaxError) -> JSONValue {
            try enter()
            index += 1
            var members: [String: JSONValue] = [:]
            skipWhitespace()
            if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
                index += 1; depth -= 1
                return .object(members)
            }
            while true {
                skipWhitespace()
                guard index < buffer.count else { throw error("unexpected end of data inside an object") }
                guard buffer[index] == UInt8(ascii: "\"") else { throw error("expected a key string") }
                let key = try parseString()
                skipWhitespace()
                guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
                index += 1
                skipWhitespace()
                members[key] = try parseValue()
                if try closes(UInt8(ascii: "}"), inside: "an object") { break }
            }
            depth -= 1
            return .object(members)
        }

        mutating func parseArray() throws(JSONSyntaxError) -> JSONValue {
            try enter()
            index += 1
            var elements: [JSONValue] = []
            skipWhitespace()
            if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
                index += 1; depth -= 1
                return .array(elements)
            }
            while true {
                skipWhitespace()
                elements.append(try parseValue())
                if try closes(UInt8(ascii: "]"), inside: "an array") { break }
            }
            depth -= 1
            return .array(elements)
        }

        mutating func parseString() throws(JSONSyntaxError) -> String {
            try parseStringBytes { String(decoding: $0, as: UTF8.self) }
        }

        /// Reads the string whose opening quote is at `index` and hands `body`
        /// its decoded UTF-8 (as the document has it: invalid bytes not yet repaired).
        mutating func parseStringBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) -> R) throws(JSONSyntaxError) -> R {
            index += 1
            let start = index
            // Fast path: no escapes.
            skipPlainStringBytes()
            if index < buffer.count {
                let b = buffer[index]
                if b == UInt8(ascii: "\"") {
                    let s = body(UnsafeBufferPointer(rebasing: buffer[start..<index]))
                    index += 1
                    return s
                }
                if b < 0x20 { throw error("unescaped control character in a string") }
            }
            scratch.removeAll(keepingCapacity: true)
            scratch.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[start..<index]))
            while index < buffer.count {
                let b = buffer[index]
                switch b {
                case UInt8(ascii: "\""):
                    index += 1
                    return scratch.withUnsafeBufferPointer(body)
                case UInt8(ascii: "\\"):
                    index += 1
                    guard index < buffer.count else { throw error("unterminated escape") }
                    let e = buffer[index]
                    index += 1
                    switch e {
                    case UInt8(ascii: "\""): scratch.append(0x22)
                    case UInt8(ascii: "\\"): scratch.append(0x5C)
                    case UInt8(ascii: "/"): scratch.append(0x2F)
                    case UInt8(ascii: "b"): scratch.append(0x08)
                    case UInt8(ascii: "f"): scratch.append(0x0C)
                    case UInt8(ascii: "n"): scratch.append(0x0A)
                    case UInt8(ascii: "r"): scratch.append(0x0D)
                    case UInt8(ascii: "t"): scratch.append(0x09)
                    case UInt8(ascii: "u"):
                        var scalar = try parseHex4()
                        if (0xD800...0xDBFF).contains(scalar),
                           index + 1 < buffer.count, buffer[index] == UInt8(ascii: "\\"), buffer[index + 1] == UInt8(ascii: "u") {
                            let save = index
                            index += 2
                            let low = try parseHex4()
                            if (0xDC00...0xDFFF).contains(low) {
                                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                            } else {
                                index = save
                            }
                        }
                        // Lone surrogates cannot be represented in UTF-8: U+FFFD.
                        let unicode = Unicode.Scalar(scalar) ?? "\u{FFFD}"
                        scratch.append(contentsOf: Array(String(Character(unicode)).utf8))
                    default:
                        index -= 1
                        throw error("invalid escape '\\\(printable(e))'")
                    }
                default:
                    if b < 0x20 { throw error("unescaped control character in a string") }
                    let run = index
                    index += 1
                    skipPlainStringBytes()
                    scratch.append(contentsOf: UnsafeBufferPointer(rebasing: buffer[run..<index]))
                }
            }
            throw error("unterminated string")
        }

        /// Moves `index` past string bytes that stand for themselves (not a
        /// quote, a backslash or a control character), eight at a time where it can:
        /// most of a page's bytes are the text of its strings.
        mutating func skipPlainStringBytes() {
            let count = buffer.count
            if let base = buffer.baseAddress {
                while index + 8 <= count {
                    let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                    if SWAR.hasByte(word, UInt8(ascii: "\"")) || SWAR.hasByte(word, UInt8(ascii: "\\"))
                        || SWAR.hasByteBelow(word, 0x20) { break }
                    index += 8
                }
            }
            while index < count {
                let b = buffer[index]
                if b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b < 0x20 { return }
                index += 1
            }
        }

        mutating func parseHex4() throws(JSONSyntaxError) -> UInt32 {
            guard index + 4 <= buffer.count else { throw error("truncated \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let c = buffer[index]
                let digit: UInt32
                switch c {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(c - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(c - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(c - UInt8(ascii: "A") + 10)
                default: throw error("invalid hex digit in \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }

        mutating func findMember(_ name: [UInt8]) -> JSONValue? {
            guard enterObject() else { return nil }
            while let member = nextMember() {
                guard !member.escaped else { return nil }
                if buffer[member.name].elementsEqual(name) { return try? parseValue() }
                guard skipValue() != nil, leaveMember() else { return nil }
            }
            return nil
        }

        mutating func pageRows(_ rowsMember: [UInt8]) -> (rows: [Range<Int>], others: [String: JSONValue])? {
            guard enterObject() else { return nil }
            var rows: [Range<Int>]?
            var others: [String: JSONValue] = [:]
            skipWhitespace()
            if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    guard let member = nextMember(), !member.escaped else { return nil }
                    if buffer[member.name].elementsEqual(rowsMember) {
                        guard rows == nil, buffer[index] == UInt8(ascii: "[") else { return nil }
                        index += 1
                        var found: [Range<Int>] = []
                        skipWhitespace()
                        if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
                            index += 1
                        } else {
                            while true {
                                skipWhitespace()
                                let start = index
                                guard skipValue() != nil, index <= buffer.count else { return nil }
                                found.append(start..<index)
                                guard let closed = try? closes(UInt8(ascii: "]"), inside: "an array") else { return nil }
                                if closed { break }
                            }
                        }
                        rows = found
                    } else {
                        guard let value = try? parseValue() else { return nil }
                        // A name twice: the last is the one a parse keeps.
                        others[String(decoding: buffer[member.name], as: UTF8.self)] = value
                    }
                    guard let closed = try? closes(UInt8(ascii: "}"), inside: "an object") else { return nil }
                    if closed { break }
                }
            }
            skipWhitespace()
            guard index == buffer.count, let rows else { return nil }
            return (rows, others)
        }

        /// Moves past a BOM, whitespace and the `{` of the object the buffer holds; false when it holds none.
        mutating func enterObject() -> Bool {
            skipLeadingBOMAndWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "{") else { return false }
            index += 1
            return true
        }

        /// The next member's name (the bytes between its quotes) and whether it holds an escape,
        /// leaving `index` at its value; nil at the object's end or at anything out of place.
        mutating func nextMember() -> (name: Range<Int>, escaped: Bool)? {
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { return nil }
            let nameStart = index + 1
            guard let name = skipString() else { return nil }
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { return nil }
            index += 1
            skipWhitespace()
            guard index < buffer.count else { return nil }
            return (nameStart..<name.end, name.escaped)
        }

        /// Moves past the comma after a member's value; false at the object's end.
        mutating func leaveMember() -> Bool {
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: ",") else { return false }
            index += 1
            return true
        }

        /// Moves past the string starting at `index`: where its closing quote
        /// stands and whether it holds an escape. Eight bytes at a time while
        /// none is a quote or a backslash: a payload is mostly its strings' text.
        mutating func skipString() -> (end: Int, escaped: Bool)? {
            index += 1
            var escaped = false
            let count = buffer.count
            while index < count {
                if let base = buffer.baseAddress {
                    while index + 8 <= count {
                        let word = UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self)
                        if SWAR.hasByte(word, UInt8(ascii: "\"")) || SWAR.hasByte(word, UInt8(ascii: "\\")) { break }
                        index += 8
                    }
                    guard index < count else { break }
                }
                switch buffer[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return (index - 1, escaped)
                case UInt8(ascii: "\\"):
                    escaped = true
                    index += 2
                default: index += 1
                }
            }
            return nil
        }

        /// Moves past one value of any kind without building it; whether a string in it held an escape.
        mutating func skipValue() -> Bool? {
            guard index < buffer.count else { return nil }
            switch buffer[index] {
            case UInt8(ascii: "\""):
                return skipString()?.escaped
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                var escaped = false
                repeat {
                    guard index < buffer.count else { return nil }
                    switch buffer[index] {
                    case UInt8(ascii: "\""):
                        guard let string = skipString() else { return nil }
                        escaped = escaped || string.escaped
                    case UInt8(ascii: "{"), UInt8(ascii: "["):
                        depth += 1
                        index += 1
                    case UInt8(ascii: "}"), UInt8(ascii: "]"):
                        depth -= 1
                        index += 1
                    default:
                        index += 1
                    }
                } while depth > 0
                return escaped
            default:
                // A number or a literal: up to the next delimiter.
                while index < buffer.count {
                    switch buffer[index] {
                    case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: return false
                    default: index += 1
                    }
                }
                return false
            }
        }

        // MARK: Canonical bytes, no values built

        mutating func canonicalDocument(keyField: [UInt8], scratch: inout CanonicalScratch) -> CanonicalObject? {
            skipLeadingBOMAndWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "{") else { return nil }
            var out: [UInt8] = []
            out.reserveCapacity(buffer.count)
            var top: TopLevel? = TopLevel(keyField: keyField, recent: scratch.recentShapes)
            do {
                guard try writeCanonicalObject(into: &out, arenas: &scratch.arenas, level: 0, top: &top) else { return nil }
            } catch {
                return nil
            }
            skipWhitespace()
            guard index == buffer.count, let top, let shape = top.shape else { return nil }
            if top.sharedShape == nil {
                scratch.recentShapes.insert(shape, at: 0)
                if scratch.recentShapes.count > CanonicalScratch.recentShapeCount { scratch.recentShapes.removeLast() }
            }
            return CanonicalObject(bytes: out, shape: shape, key: top.key)
        }

        /// What the top-level object's members are, gathered as it is written.
        struct TopLevel {
            let keyField: [UInt8]
            /// The shapes of the rows before: rows of one file nearly all have
            /// one of a few (a price of `0.0` reads back as an integer, `7.99` as
            /// a real), which is then shared, not made again (16 names a row).
            let recent: [FieldShape]
            var shape: FieldShape?
            /// Which of `recent` the row has, if one.
            var sharedShape: Int?
            var key: JSONValue?
        }

        /// Writes the value at `index` canonically; false where the canonical
        /// form must go through a dictionary (see ``JSONParser/canonicalObject(_:keyField:scratch:)``).
        mutating func writeCanonicalValue(into out: inout [UInt8], arenas: inout [[UInt8]], level: Int) throws(JSONSyntaxError) -> Bool {
            guard index < buffer.count else { throw error("unexpected end of data") }
            switch buffer[index] {
            case UInt8(ascii: "{"):
                var unused: TopLevel? = nil
                return try writeCanonicalObject(into: &out, arenas: &arenas, level: level, top: &unused)
            case UInt8(ascii: "["):
                try enter()
                index += 1
                out.append(UInt8(ascii: "["))
                skipWhitespace()
                if index < buffer.count, buffer[index] == UInt8(ascii: "]") {
                    index += 1; depth -= 1
                    out.append(UInt8(ascii: "]"))
                    return true
                }
                var first = true
                while true {
                    skipWhitespace()
                    if !first { out.append(UInt8(ascii: ",")) }
                    first = false
                    guard try writeCanonicalValue(into: &out, arenas: &arenas, level: level + 1) else { return false }
                    if try closes(UInt8(ascii: "]"), inside: "an array") { break }
                }
                depth -= 1
                out.append(UInt8(ascii: "]"))
                return true
            case UInt8(ascii: "\""):
                _ = try writeCanonicalString(into: &out)
                return true
            case UInt8(ascii: "t"): try expectLiteral("true"); out.append(contentsOf: [0x74, 0x72, 0x75, 0x65])
            case UInt8(ascii: "f"): try expectLiteral("false"); out.append(contentsOf: [0x66, 0x61, 0x6C, 0x73, 0x65])
            case UInt8(ascii: "n"): try expectLiteral("null"); out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): CanonicalJSON.write(try parseNumber(), into: &out)
            default: throw error("unexpected character '\(printable(buffer[index]))'")
            }
            return true
        }

        /// Writes the string at `index` as the canonical form writes the
        /// String parsing it gives (invalid UTF-8 repaired); returns its type
        /// when `typed` (a top-level member's: only those are registered).
        mutating func writeCanonicalString(into out: inout [UInt8], typed: Bool = false) throws(JSONSyntaxError) -> FieldType {
            try parseStringBytes { bytes -> FieldType in
                func write(_ bytes: UnsafeBufferPointer<UInt8>) -> FieldType {
                    CanonicalJSON.writeString(bytes: bytes, into: &out)
                    return typed && FieldType.isISO8601Date(bytes: bytes) ? .date : .text
                }
                if UTF8Check.isValid(bytes) { return write(bytes) }
                var repaired = String(decoding: bytes, as: UTF8.self)
                return repaired.withUTF8(write)
            }
        }

        /// An object's members are written into an arena of their level, then
        /// copied out in canonical order.
        mutating func writeCanonicalObject(into out: inout [UInt8], arenas: inout [[UInt8]], level: Int,
                                           top: inout TopLevel?) throws(JSONSyntaxError) -> Bool {
            try enter()
            index += 1
            while arenas.count <= level { arenas.append([]) }
            // Taken out while in use, so that appending to it never copies it.
            var arena: [UInt8] = []
            swap(&arena, &arenas[level])
            arena.removeAll(keepingCapacity: true)
            defer { swap(&arena, &arenas[level]) }
            var members: [CanonicalMember] = []
            skipWhitespace()
            if index < buffer.count, buffer[index] == UInt8(ascii: "}") {
                index += 1
            } else {
                while true {
                    skipWhitespace()
                    guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { throw error("expected a key string") }
                    index += 1
                    let keyStart = index
                    while index < buffer.count, buffer[index] != UInt8(ascii: "\""), buffer[index] >= 0x20, buffer[index] < 0x80,
                          buffer[index] != UInt8(ascii: "\\") { index += 1 }
                    guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { return false }
                    let keyEnd = index
                    index += 1
                    skipWhitespace()
                    guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { throw error("expected ':' after a key") }
                    index += 1
                    skipWhitespace()
                    let valueStart = arena.count
                    var type: FieldType?
                    guard index < buffer.count else { throw error("unexpected end of data") }
                    if top != nil {
                        let valueIndex = index
                        switch buffer[index] {
                        case UInt8(ascii: "\""):
                            type = try writeCanonicalString(into: &arena, typed: true)
                        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                            let number = try parseNumber()
                            // One no Int64 or Double holds is its entity's field as text (CanonicalRecord): not a row's own canonical fields.
                            if case .number = number { return false }
                            // As the value reads back from the canonical text (an integral `3500.0` is `3500`): the
                            // type a parsed record's field registers, so either way of decoding a row registers one type.
                            type = FieldType.of(CanonicalJSON.readBack(number))
                            CanonicalJSON.write(number, into: &arena)
                        default:
                            guard try writeCanonicalValue(into: &arena, arenas: &arenas, level: level + 1) else { return false }
                            let lead = buffer[valueIndex]
                            type = lead == UInt8(ascii: "n") ? nil : lead == UInt8(ascii: "t") || lead == UInt8(ascii: "f") ? .integer : .text
                        }
                        if top!.key == nil, buffer[keyStart..<keyEnd].elementsEqual(top!.keyField) {
                            var keyParser = Parser(buffer: buffer)
                            keyParser.index = valueIndex
                            top!.key = try keyParser.parseValue()
                        }
                    } else {
                        guard try writeCanonicalValue(into: &arena, arenas: &arenas, level: level + 1) else { return false }
                    }
                    members.append(CanonicalMember(
                        prefix: CanonicalJSON.utf8Prefix(bytes: UnsafeBufferPointer(rebasing: buffer[keyStart..<keyEnd])),
                        keys: keyStart..<keyEnd, values: valueStart..<arena.count, type: type))
                    if try closes(UInt8(ascii: "}"), inside: "an object") { break }
                }
            }
            depth -= 1
            let buffer = self.buffer
            func key(_ member: CanonicalMember) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: buffer[member.keys]) }
            // The order CanonicalJSON.writeObject sorts by.
            members.sort { a, b in a.prefix != b.prefix ? a.prefix < b.prefix : CanonicalJSON.utf8Precedes(bytes: key(a), key(b)) }
            out.append(UInt8(ascii: "{"))
            for (n, member) in members.enumerated() {
                if n > 0 {
                    // A key twice: the dictionary keeps the last, which the caller's parse decides.
                    if members[n - 1].prefix == member.prefix, key(members[n - 1]).elementsEqual(key(member)) { return false }
                    out.append(UInt8(ascii: ","))
                }
                out.append(UInt8(ascii: "\""))
                out.append(contentsOf: key(member))
                out.append(UInt8(ascii: "\""))
                out.append(UInt8(ascii: ":"))
                out.append(contentsOf: arena[member.values])
            }
            out.append(UInt8(ascii: "}"))
            if top != nil {
                if let match = top!.recent.firstIndex(where: { previous in
                    previous.names.count == members.count && zip(previous.types, members).allSatisfy({ $0 == $1.type })
                        && zip(previous.names, members).allSatisfy({ $0.utf8.elementsEqual(key($1)) })
                }) {
                    top!.shape = top!.recent[match]
                    top!.sharedShape = match
                } else {
                    top!.shape = FieldShape(names: members.map { String(decoding: key($0), as: UTF8.self) }, types: members.map(\.type))
                }
            }
            return true
        }

        mutating func parseNumber() throws(JSONSyntaxError) -> JSONValue {
            let start = index
            var isInteger = true
            if buffer[index] == UInt8(ascii: "-") { index += 1 }
            guard index < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[index]) else {
                throw error("invalid number")
            }
            if buffer[index] == UInt8(ascii: "0") {
                index += 1
            } else {
                while index < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[index]) { index += 1 }
            }
            if index < buffer.count, buffer[index] == UInt8(ascii: ".") {
                isInteger = false
                index += 1
                let fractionStart = index
                while index < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[index]) { index += 1 }
                if index == fractionStart { throw error("invalid number: digits expected after '.'") }
            }
            if index < buffer.count, buffer[index] == UInt8(ascii: "e") || buffer[index] == UInt8(ascii: "E") {
                isInteger = false
                index += 1
                if index < buffer.count, buffer[index] == UInt8(ascii: "+") || buffer[index] == UInt8(ascii: "-") { index += 1 }
                let expStart = index
                while index < buffer.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(buffer[index]) { index += 1 }
                if index == expStart { throw error("invalid number: digits expected in exponent") }
            }
            let text = String(decoding: UnsafeBufferPointer(rebasing: buffer[start..<index]), as: UTF8.self)
            if isInteger {
                if let i = Int64(text) { return .int(i) }
                // Beyond Int64 a Double would round it: an id must stay exact.
                return .number(text)
            }
            guard let d = Double(text), d.isFinite else { return .number(text) }
            return .double(d)
        }
    }
}

/// A member of an object being written canonically: its key's bytes in the
/// document, its value's canonical bytes in its level's arena, the value's type.
private struct CanonicalMember {
    /// The key's first 8 bytes as one integer (``CanonicalJSON/utf8Prefix(bytes:)``).
    var prefix: UInt64
    var keys: Range<Int>
    var values: Range<Int>
    var type: FieldType?
}

/// Buffers ``JSONParser/canonicalObject(_:keyField:scratch:)`` reuses from
/// one row to the next: one arena per nesting level.
package struct CanonicalScratch {
    var arenas: [[UInt8]] = []
    /// The last few distinct shapes, newest first.
    var recentShapes: [FieldShape] = []
    static let recentShapeCount = 4

    package init() {}
}

/// A JSON object in canonical form, as a decoder writes it straight from the bytes it read.
package struct CanonicalObject: Sendable {
    /// The canonical encoding (``CanonicalJSON``).
    package var bytes: [UInt8]
    /// The top-level members' names and types, in canonical order.
    package var shape: FieldShape
    /// The value of the key field the caller named, if the object has it.
    package var key: JSONValue?
}

/// The names of a record's top-level fields and the types of their values,
/// in canonical (UTF-8 byte) order: what the field registry needs of a
/// record whose fields were never built as values.
public struct FieldShape: Sendable, Equatable {
    public var names: [String]
    public var types: [FieldType?]

    public init(names: [String], types: [FieldType?]) {
        self.names = names
        self.types = types
    }
}

/// UTF-8 validity, eight bytes at a time over ASCII.
package enum UTF8Check {
    package static func isValid(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        var index = 0
        let count = bytes.count
        guard let base = bytes.baseAddress else { return true }
        while index < count {
            if index + 8 <= count, UnsafeRawPointer(base + index).loadUnaligned(as: UInt64.self) & 0x8080_8080_8080_8080 == 0 {
                index += 8
                continue
            }
            let lead = bytes[index]
            if lead < 0x80 { index += 1; continue }
            let length: Int, minimum: UInt32
            var scalar: UInt32
            switch lead {
            case 0xC2...0xDF: (length, minimum, scalar) = (2, 0x80, UInt32(lead & 0x1F))
            case 0xE0...0xEF: (length, minimum, scalar) = (3, 0x800, UInt32(lead & 0x0F))
            case 0xF0...0xF4: (length, minimum, scalar) = (4, 0x10000, UInt32(lead & 0x07))
            default: return false
            }
            guard index + length <= count else { return false }
            for offset in 1..<length {
                let next = bytes[index + offset]
                guard next & 0xC0 == 0x80 else { return false }
                scalar = scalar << 6 | UInt32(next & 0x3F)
            }
            guard scalar >= minimum, scalar <= 0x10FFFF, !(0xD800...0xDFFF).contains(scalar) else { return false }
            index += length
        }
        return true
    }
}
