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
    case array([JSONOut])
    case object(JSONObject)
}

/// An ordered JSON object.
struct JSONObject: Sendable, Equatable {
    private(set) var members: [(key: String, value: JSONOut)] = []

    init() {}

    mutating func add(_ key: String, _ value: JSONOut) {
        members.append((key, value))
    }

    mutating func add(_ key: String, _ value: String) { add(key, .string(value)) }
    mutating func add(_ key: String, _ value: Int) { add(key, .int(value)) }

    subscript(key: String) -> JSONOut? {
        members.first { $0.key == key }?.value
    }

    var keys: [String] { members.map(\.key) }

    static func == (a: JSONObject, b: JSONObject) -> Bool {
        a.members.count == b.members.count
            && zip(a.members, b.members).allSatisfy { $0.key == $1.key && $0.value == $1.value }
    }
}

/// Byte layouts of the two services.
enum JSONLayout {
    /// `{"a":1,"b":[1,2]}`: the marketplace.
    case compact
    /// `{"a":1, "b":[1, 2]}`: iTunes' raw rows, a space after each comma.
    case itunes

    var separator: [UInt8] {
        switch self {
        case .compact: [UInt8(ascii: ",")]
        case .itunes: [UInt8(ascii: ","), UInt8(ascii: " ")]
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
        switch value {
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
                if n > 0 { out.append(contentsOf: layout.separator) }
                writeString(member.key, into: &out)
                out.append(UInt8(ascii: ":"))
                write(member.value, layout: layout, into: &out)
            }
            out.append(UInt8(ascii: "}"))
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
        out.append(UInt8(ascii: "\""))
        for byte in s.utf8 {
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
