/// JSON as the simulator writes it: members keep the order they were added,
/// because the real services have a fixed key order and a byte-exact imitation
/// needs it (Foundation's encoders sort or shuffle keys and escape `/`).
indirect enum JSONOut: Sendable, Equatable {
    case string(String)
    case int(Int)
    /// A double written in Swift's shortest round-trip form, always with a
    /// fraction (`20000.0`), as the marketplace writes prices.
    case double(Double)
    /// Number text written verbatim (e.g. iTunes' `0.00` prices).
    case literal(String)
    case bool(Bool)
    case null
    /// String content given as bytes, written between quotes with JSON's
    /// escapes but otherwise verbatim: the only way to put bytes that are not
    /// UTF-8 on the wire (the `invalid-utf8` fault).
    case rawString([UInt8])
    case array([JSONOut])
    case object(JSONObject)
}

/// An ordered JSON object.
struct JSONObject: Sendable, Equatable {
    struct Member: Sendable, Equatable {
        var key: String
        var value: JSONOut
        /// In the iTunes layout, start this member on a new line (the raw
        /// software rows break lines before their long members).
        var breakBefore = false
    }

    private(set) var members: [Member] = []

    init() {}

    mutating func add(_ key: String, _ value: JSONOut, breakBefore: Bool = false) {
        members.append(Member(key: key, value: value, breakBefore: breakBefore))
    }

    /// Replaces the value of `key` if present.
    mutating func set(_ key: String, _ value: JSONOut) {
        if let n = members.firstIndex(where: { $0.key == key }) { members[n].value = value }
    }

    /// Rewrites every string value (recursively) with `transform`.
    mutating func mapStrings(_ transform: (String) -> String) {
        for n in members.indices { members[n].value = members[n].value.mappingStrings(transform) }
    }

    func mappingStrings(_ transform: (String) -> String) -> JSONObject {
        var copy = self
        copy.mapStrings(transform)
        return copy
    }

    mutating func add(_ key: String, _ value: String) { add(key, .string(value)) }
    mutating func add(_ key: String, _ value: Int) { add(key, .int(value)) }

    subscript(key: String) -> JSONOut? {
        members.first { $0.key == key }?.value
    }

    var keys: [String] { members.map(\.key) }

}

extension JSONOut {
    func mappingStrings(_ transform: (String) -> String) -> JSONOut {
        switch self {
        case .string(let s): .string(transform(s))
        case .array(let items): .array(items.map { $0.mappingStrings(transform) })
        case .object(let object):
            .object(object.mappingStrings(transform))
        default: self
        }
    }
}

/// Byte layouts of the two services.
enum JSONLayout {
    /// `{"a":1,"b":[1,2]}`: the marketplace.
    case compact
    /// `{"a":1, "b":[1, 2]}`: iTunes' raw rows, a space after each comma.
    case itunes
    /// Two-space indentation, `"key": value` (the marketing-tools RSS v2 feeds).
    case pretty

    var separator: [UInt8] {
        switch self {
        case .compact: [UInt8(ascii: ",")]
        case .itunes: [UInt8(ascii: ","), UInt8(ascii: " ")]
        case .pretty: [UInt8(ascii: ",")]
        }
    }
}

enum JSONWriter {
    static func bytes(_ value: JSONOut, layout: JSONLayout) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1024)
        write(value, layout: layout, into: &out)
        return out
    }

    static func string(_ value: JSONOut, layout: JSONLayout) -> String {
        String(decoding: bytes(value, layout: layout), as: UTF8.self)
    }

    static func write(_ value: JSONOut, layout: JSONLayout, into out: inout [UInt8]) {
        if layout == .pretty {
            writePretty(value, indent: 0, into: &out)
            return
        }
        switch value {
        case .rawString(let bytes): writeEscaped(bytes, into: &out)
        case .string(let s): writeString(s, into: &out)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): out.append(contentsOf: doubleText(d).utf8)
        case .literal(let text): out.append(contentsOf: text.utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .null: out.append(contentsOf: "null".utf8)
        case .array(let items):
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(contentsOf: layout.separator) }
                write(item, layout: layout, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let object):
            out.append(UInt8(ascii: "{"))
            for (n, member) in object.members.enumerated() {
                if n > 0 {
                    if member.breakBefore, layout == .itunes {
                        out.append(contentsOf: [UInt8(ascii: ","), 0x0A])
                    } else {
                        out.append(contentsOf: layout.separator)
                    }
                }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, layout: layout, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private static func newline(_ indent: Int, into out: inout [UInt8]) {
        out.append(0x0A)
        out.append(contentsOf: repeatElement(UInt8(ascii: " "), count: indent * 2))
    }

    static func writePretty(_ value: JSONOut, indent: Int, into out: inout [UInt8]) {
        switch value {
        case .array(let items) where !items.isEmpty:
            out.append(UInt8(ascii: "["))
            for (n, item) in items.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1, into: &out)
                writePretty(item, indent: indent + 1, into: &out)
            }
            newline(indent, into: &out)
            out.append(UInt8(ascii: "]"))
        case .object(let object) where !object.members.isEmpty:
            out.append(UInt8(ascii: "{"))
            for (n, member) in object.members.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                newline(indent + 1, into: &out)
                writeString(member.key, into: &out)
                out.append(contentsOf: [UInt8(ascii: ":"), UInt8(ascii: " ")])
                writePretty(member.value, indent: indent + 1, into: &out)
            }
            newline(indent, into: &out)
            out.append(UInt8(ascii: "}"))
        default:
            write(value, layout: .compact, into: &out)
        }
    }

    /// `20000.0`, `19.99`: integral values keep one fractional digit, as the marketplace sends them.
    static func doubleText(_ d: Double) -> String {
        precondition(d.isFinite, "JSON has no representation for \(d)")
        return d.description
    }

    /// Escapes what JSON requires (`"`, `\`, control characters) and nothing
    /// else: `/`, `&`, `<` and non-ASCII text go out raw, as both services send them.
    static func writeString(_ s: String, into out: inout [UInt8]) {
        writeEscaped(s.utf8, into: &out)
    }

    static func writeEscaped(_ bytes: some Sequence<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "\""): out.append(contentsOf: [0x5C, 0x22])
            case UInt8(ascii: "\\"): out.append(contentsOf: [0x5C, 0x5C])
            case 0x0A: out.append(contentsOf: [0x5C, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [0x5C, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [0x5C, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
            default: out.append(byte)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}
