#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The canonical byte encoding that content hashes are computed over.
///
/// It must never change between releases: a change would make every stored
/// record look changed on the next run. Rules: object keys sorted by their
/// UTF-8 bytes; no whitespace; integral numbers below 2^53 written as integers
/// (so `0`, `0.0` and `-0.0` are one value); other doubles in Swift's
/// shortest round-trip form; strings with only `"`, `\` and C0 controls
/// escaped, everything else as raw UTF-8.
package enum CanonicalJSON {
    package static func encode(_ value: JSONValue) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        write(value, into: &out)
        return out
    }

    package static func encodeObject(_ members: [String: JSONValue]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(512)
        writeObject(members, into: &out)
        return out
    }

    /// The canonical encoding of an object whose members come in canonical
    /// order already (a mapping that writes fixed names in that order), so
    /// nothing is sorted; each name once.
    package static func encodeMembers(_ members: [(name: String, value: JSONValue)]) -> [UInt8] {
        var out: [UInt8] = [UInt8(ascii: "{")]
        out.reserveCapacity(512)
        for (n, member) in members.enumerated() {
            if n > 0 {
                assert(utf8Precedes(members[n - 1].name, member.name), "members out of canonical order")
                out.append(UInt8(ascii: ","))
            }
            writeString(member.name, into: &out)
            out.append(UInt8(ascii: ":"))
            write(member.value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }

    package static func string(_ value: JSONValue) -> String {
        String(decoding: encode(value), as: UTF8.self)
    }

    package static func write(_ value: JSONValue, into out: inout [UInt8]) {
        switch value {
        case .null: out.append(contentsOf: [0x6E, 0x75, 0x6C, 0x6C])
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d): out.append(contentsOf: Array(numberText(d).utf8))
        // Valid JSON as it came (the parser checked its grammar), so it round-trips exactly.
        case .number(let text): out.append(contentsOf: Array(text.utf8))
        case .string(let s): writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (n, element) in elements.enumerated() {
                if n > 0 { out.append(UInt8(ascii: ",")) }
                write(element, into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members): writeObject(members, into: &out)
        }
    }

    static func writeObject(_ members: [String: JSONValue], into out: inout [UInt8]) {
        out.append(UInt8(ascii: "{"))
        // Sorted by each key's first 8 UTF-8 bytes as one integer, whole keys
        // compared only on a tie, and the members reached by index: sorting the
        // members themselves retained and released two strings per comparison,
        // a tenth of a cold load.
        var order: [(prefix: UInt64, index: Dictionary<String, JSONValue>.Index)] = []
        order.reserveCapacity(members.count)
        var index = members.startIndex
        while index != members.endIndex {
            order.append((utf8Prefix(members[index].key), index))
            members.formIndex(after: &index)
        }
        order.sort { a, b in
            a.prefix != b.prefix ? a.prefix < b.prefix : utf8Precedes(members[a.index].key, members[b.index].key)
        }
        for (n, entry) in order.enumerated() {
            if n > 0 { out.append(UInt8(ascii: ",")) }
            let member = members[entry.index]
            writeString(member.key, into: &out)
            out.append(UInt8(ascii: ":"))
            write(member.value, into: &out)
        }
        out.append(UInt8(ascii: "}"))
    }

    /// The first 8 UTF-8 bytes of `key` as a big-endian integer, zero-padded:
    /// integers order as the byte strings they start (a shorter key's
    /// padding sorts it first, as its end does), so only equal prefixes need
    /// the whole keys compared.
    static func utf8Prefix(_ key: String) -> UInt64 {
        var key = key
        return key.withUTF8 { utf8Prefix(bytes: $0) }
    }

    static func utf8Prefix(bytes: UnsafeBufferPointer<UInt8>) -> UInt64 {
        var prefix: UInt64 = 0
        for position in 0..<8 {
            prefix <<= 8
            if position < bytes.count { prefix |= UInt64(bytes[position]) }
        }
        return prefix
    }

    /// Byte order of the UTF-8 encodings (what the canonical form sorts by),
    /// compared with memcmp rather than element by element.
    static func utf8Precedes(_ a: String, _ b: String) -> Bool {
        var a = a, b = b
        return a.withUTF8 { pa in b.withUTF8 { pb in utf8Precedes(bytes: pa, pb) } }
    }

    static func utf8Precedes(bytes pa: UnsafeBufferPointer<UInt8>, _ pb: UnsafeBufferPointer<UInt8>) -> Bool {
        let common = min(pa.count, pb.count)
        if common > 0, let x = pa.baseAddress, let y = pb.baseAddress {
            let order = memcmp(x, y, common)
            if order != 0 { return order < 0 }
        }
        return pa.count < pb.count
    }

    /// `members` as parsing their canonical encoding gives them back: an
    /// integral double below 2^53 is written as an integer, so it reads back
    /// as one (every other value reads back as it is). A record's decoded
    /// fields are kept in this form, so that what is mapped from them is what
    /// would be mapped from its stored payload.
    package static func readBack(_ members: [String: JSONValue]) -> [String: JSONValue] {
        guard members.values.contains(where: changesOnReadBack) else { return members }
        return members.mapValues(readBack)
    }

    package static func readBack(_ value: JSONValue) -> JSONValue {
        switch value {
        case .double(let d) where isWrittenAsInteger(d): .int(Int64(d))
        case .array(let elements) where elements.contains(where: changesOnReadBack): .array(elements.map(readBack))
        case .object(let members): .object(readBack(members))
        default: value
        }
    }

    private static func changesOnReadBack(_ value: JSONValue) -> Bool {
        switch value {
        case .double(let d): isWrittenAsInteger(d)
        case .array(let elements): elements.contains(where: changesOnReadBack)
        case .object(let members): members.values.contains(where: changesOnReadBack)
        default: false
        }
    }

    /// Whether `d` is written as an integer: integral and below 2^53.
    private static func isWrittenAsInteger(_ d: Double) -> Bool {
        d.rounded() == d && abs(d) < 9_007_199_254_740_992
    }

    /// Integral values print without a fraction so a price of `0` and `0.0`
    /// (the marketplace changed its number format between eras) hash alike.
    package static func numberText(_ d: Double) -> String {
        if isWrittenAsInteger(d) {
            return String(Int64(d))
        }
        return d.description
    }

    static func writeString(_ s: String, into out: inout [UInt8]) {
        var s = s
        s.withUTF8 { writeString(bytes: $0, into: &out) }
    }

    /// Copies runs of bytes that need no escape in one append each: most
    /// strings are one run, and a byte-by-byte append was a tenth of a cold load.
    static func writeString(bytes: UnsafeBufferPointer<UInt8>, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var runStart = 0
        for index in 0..<bytes.count {
            let byte = bytes[index]
            guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
            if runStart < index { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index])) }
            runStart = index + 1
            switch byte {
            case UInt8(ascii: "\""): out.append(0x5C); out.append(0x22)
            case UInt8(ascii: "\\"): out.append(0x5C); out.append(0x5C)
            case 0x0A: out.append(0x5C); out.append(UInt8(ascii: "n"))
            case 0x0D: out.append(0x5C); out.append(UInt8(ascii: "r"))
            case 0x09: out.append(0x5C); out.append(UInt8(ascii: "t"))
            default:
                let hex: StaticString = "0123456789abcdef"
                let digits = hex.utf8Start
                out.append(contentsOf: [0x5C, UInt8(ascii: "u"), 0x30, 0x30, digits[Int(byte >> 4)], digits[Int(byte & 0xF)]])
            }
        }
        if runStart < bytes.count { out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...])) }
        out.append(UInt8(ascii: "\""))
    }
}
