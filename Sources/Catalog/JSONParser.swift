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

    private struct Parser {
        let buffer: UnsafeBufferPointer<UInt8>
        var index = 0
        var depth = 0
        var scratch: [UInt8] = []

        init(buffer: UnsafeBufferPointer<UInt8>) { self.buffer = buffer }

        mutating func parseDocument() throws(JSONSyntaxError) -> JSONValue {
            if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { index = 3 }
            skipWhitespace()
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
                skipWhitespace()
                guard index < buffer.count else { throw error("unexpected end of data inside an object") }
                if buffer[index] == UInt8(ascii: ",") { index += 1; continue }
                if buffer[index] == UInt8(ascii: "}") { index += 1; break }
                throw error("expected ',' or '}' in an object")
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
                skipWhitespace()
                guard index < buffer.count else { throw error("unexpected end of data inside an array") }
                if buffer[index] == UInt8(ascii: ",") { index += 1; continue }
                if buffer[index] == UInt8(ascii: "]") { index += 1; break }
                throw error("expected ',' or ']' in an array")
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
            if buffer.count >= 3, buffer[0] == 0xEF, buffer[1] == 0xBB, buffer[2] == 0xBF { index = 3 }
            skipWhitespace()
            guard index < buffer.count, buffer[index] == UInt8(ascii: "{") else { return nil }
            index += 1
            while true {
                skipWhitespace()
                guard index < buffer.count, buffer[index] == UInt8(ascii: "\"") else { return nil }
                let keyStart = index + 1
                guard let keyEnd = skipString(), !buffer[keyStart..<keyEnd].contains(UInt8(ascii: "\\")) else { return nil }
                skipWhitespace()
                guard index < buffer.count, buffer[index] == UInt8(ascii: ":") else { return nil }
                index += 1
                skipWhitespace()
                if buffer[keyStart..<keyEnd].elementsEqual(name) { return try? parseValue() }
                guard skipValue() else { return nil }
                skipWhitespace()
                guard index < buffer.count, buffer[index] == UInt8(ascii: ",") else { return nil }
                index += 1
            }
        }

        /// Moves past the string starting at `index`; returns where its closing quote stands.
        mutating func skipString() -> Int? {
            index += 1
            while index < buffer.count {
                switch buffer[index] {
                case UInt8(ascii: "\""):
                    index += 1
                    return index - 1
                case UInt8(ascii: "\\"): index += 2
                default: index += 1
                }
            }
            return nil
        }

        /// Moves past one value of any kind without building it.
        mutating func skipValue() -> Bool {
            guard index < buffer.count else { return false }
            switch buffer[index] {
            case UInt8(ascii: "\""):
                return skipString() != nil
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                var depth = 0
                repeat {
                    guard index < buffer.count else { return false }
                    switch buffer[index] {
                    case UInt8(ascii: "\""):
                        guard skipString() != nil else { return false }
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
                return true
            default:
                // A number or a literal: up to the next delimiter.
                while index < buffer.count {
                    switch buffer[index] {
                    case UInt8(ascii: ","), UInt8(ascii: "}"), UInt8(ascii: "]"), 0x20, 0x09, 0x0A, 0x0D: return true
                    default: index += 1
                    }
                }
                return true
            }
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
