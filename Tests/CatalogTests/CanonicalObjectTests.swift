@testable import Catalog
import Testing
import TestSupport

/// A first load writes each records-file row straight to canonical bytes
/// (``JSONParser/canonicalObject(_:keyField:scratch:)``). Whatever it writes
/// must be, byte for byte, what parsing the row and encoding its fields
/// writes (the hash every later night compares with), with the types the
/// field registry would read from those fields; where it cannot be sure it
/// must step aside (nil), never guess.
@Suite struct CanonicalObjectTests {
    /// What the parse-then-encode path gives for `row`: the reference.
    func reference(_ row: [UInt8], keyField: String) -> (bytes: [UInt8], shape: FieldShape, key: JSONValue?)? {
        guard case .object(let fields)? = try? JSONParser.parse(row) else { return nil }
        let names = fields.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        // The registry reads a parsed record's fields as they read back from its payload
        // (``Record/fields()``: an integral `2.0` is `2`), so those are the types to match.
        return (CanonicalJSON.encodeObject(fields),
                FieldShape(names: names, types: names.map { FieldType.of(CanonicalJSON.readBack(fields[$0]!)) }),
                fields[keyField])
    }

    func canonical(_ row: [UInt8], keyField: String = "id") -> CanonicalObject? {
        var scratch = CanonicalScratch()
        return row.withUnsafeBufferPointer { JSONParser.canonicalObject($0, keyField: keyField, scratch: &scratch) }
    }

    /// Asserts the fast path equals the reference, or stepped aside; returns whether it took the row.
    @discardableResult
    func check(_ text: [UInt8], _ comment: Comment? = nil) -> Bool {
        guard let fast = canonical(text) else { return false }
        let expected = reference(text, keyField: "id")
        #expect(expected != nil, "took a row the parser rejects: \(String(decoding: text, as: UTF8.self))")
        guard let expected else { return true }
        #expect(fast.bytes == expected.bytes,
                "\(String(decoding: fast.bytes, as: UTF8.self)) != \(String(decoding: expected.bytes, as: UTF8.self)) for \(String(decoding: text, as: UTF8.self))")
        #expect(fast.shape == expected.shape, "shape of \(String(decoding: text, as: UTF8.self))")
        #expect(fast.key == expected.key, "key of \(String(decoding: text, as: UTF8.self))")
        return true
    }

    /// Rows of one file have a few shapes (a price of `0.0` reads back as an
    /// integer, `7.99` as a real): each is built once and shared by the rows
    /// that have it, even when they alternate, not made again for every row.
    @Test func alternatingShapesAreShared() {
        var scratch = CanonicalScratch()
        let shapes = (0..<6).map { n -> FieldShape? in
            let row = Array(#"{"id":\#(n),"name":"r","price":\#(n % 2 == 0 ? "0.0" : "7.99")}"#.utf8)
            return row.withUnsafeBufferPointer { JSONParser.canonicalObject($0, keyField: "id", scratch: &scratch)?.shape }
        }
        func storage(_ shape: FieldShape?) -> UnsafeRawPointer? {
            shape?.names.withUnsafeBufferPointer { UnsafeRawPointer($0.baseAddress) }
        }
        #expect(shapes[0]?.types.last == .integer && shapes[1]?.types.last == .real)
        #expect(storage(shapes[0]) != nil && storage(shapes[0]) == storage(shapes[2]) && storage(shapes[2]) == storage(shapes[4]))
        #expect(storage(shapes[1]) != nil && storage(shapes[1]) == storage(shapes[3]) && storage(shapes[3]) == storage(shapes[5]))
    }

    @Test func writesWhatParsingAndEncodingWritesForEveryKindOfValue() {
        let rows = [
            #"{"id": 12, "name": "Zoë \"quoted\" \\ back\/slash \n\t\u0001 \u00e9 \ud83d\ude00", "b": true, "c": false, "d": null}"#,
            #"{"z": [1, 2.50, -0, -0.0, 1e3, 1E-2, 1.5e300, 12345678901234567890, -9223372036854775808, 9223372036854775808], "a": {"y": {"b": [], "a": {}}, "x": [[{"q": 1, "p": 2}]]}, "id": "k"}"#,
            #"{"id": 1.0, "when": "2024-05-01", "at": "2024-05-01T12:00:00Z", "notADate": "2023-02-29", "lone": "\ud800 x \udc00", "big": [1e400]}"#,
            #"{"id": 7, "aaaaaaaaa1": 1, "aaaaaaaaa": 2, "aaaaaaaab": 3, "": 4}"#,
            "\u{FEFF}  {\"id\" : 3 , \"x\":\"y\"}  \r\n",
            #"{}"#,
        ]
        for row in rows {
            #expect(check(Array(row.utf8)), "stepped aside for a plain row: \(row)")
        }
        // Invalid UTF-8 in a value is repaired as the parser repairs it.
        #expect(check([UInt8](#"{"id": 1, "v": "a"#.utf8) + [0xFF, 0xC3, 0x28, 0xED, 0xA0, 0x80] + [UInt8](#" b"}"#.utf8)))
    }

    @Test func stepsAsideWhereADictionaryCouldDisagree() {
        for row in [
            #"{"id": 1, "é": 2}"#,                 // a key that is not ASCII (é and e + U+0301 are one String key)
            #"{"id": 1, "a\"b": 2}"#,             // an escaped key
            #"{"id": 1, "a": 2, "a": 3}"#,          // a key twice: the dictionary keeps the last
            #"{"id": 1, "o": {"k": 1, "k": 2}}"#,   // also within a nested object
            #"{"id": 18446744073709551616}"#,     // a top-level number its entity keeps as text
            #"[1, 2]"#, #"{"id": 1"#, #"{"id": 1} x"#, #"{"id": 01}"#, #"{"id": "\x"}"#, "",
        ] {
            #expect(canonical(Array(row.utf8)) == nil, "took \(row)")
        }
    }

    /// Rows of every shape the generator can make: each either written as
    /// the reference writes it or stepped aside, and most taken.
    @Test func agreesWithTheParserOnGeneratedRows() {
        var random = SeededGenerator(seed: 26)
        let pieces = ["a", "\\\"", "\\\\", "\\n", "\\u00e9", "\\ud83d\\ude00", "\\ud800", "é", "日本", "\\t", "2024-05-01", " ", "<b>&amp;", "=1+2"]
        func string() -> String {
            "\"" + (0..<Int.random(in: 0...4, using: &random)).map { _ in pieces.randomElement(using: &random)! }.joined() + "\""
        }
        let numbers = ["0", "-0", "1", "-17", "3.25", "2.50", "1e2", "1.5E-3", "-2.0", "9007199254740993", "9007199254740992.0",
                       "123456789012345678901234", "-9223372036854775809", "0.1", "1e308", "4.9e-324"]
        func value(_ depth: Int) -> String {
            switch Int.random(in: 0..<(depth > 2 ? 5 : 7), using: &random) {
            case 0: string()
            case 1: numbers.randomElement(using: &random)!
            case 2: ["true", "false", "null"].randomElement(using: &random)!
            case 3, 4: string()
            case 5: "[" + (0..<Int.random(in: 0...3, using: &random)).map { _ in value(depth + 1) }.joined(separator: ", ") + "]"
            default: object(depth + 1)
            }
        }
        func object(_ depth: Int) -> String {
            let names = ["id", "name", "price", "a", "b", "ab", "aaaaaaaa", "aaaaaaaab", "Z", "_x", "trackTimeMillis", "contentAdvisoryRating"]
            let chosen = names.shuffled(using: &random).prefix(Int.random(in: 0...names.count, using: &random))
            return "{" + chosen.map { "\"\($0)\": \(value(depth))" }.joined(separator: ",") + "}"
        }
        var taken = 0
        for _ in 0..<3_000 {
            let row = Array(object(0).utf8)
            if check(row) {
                taken += 1
                continue
            }
            // Stepped aside: only for a top-level number no Int64 or Double holds (the generator's keys are plain and distinct).
            let fields = try? JSONParser.parse(row).objectValue
            #expect(fields?.values.contains { if case .number = $0 { true } else { false } } == true,
                    "stepped aside for \(String(decoding: row, as: UTF8.self))")
        }
        #expect(taken > 1_500, "the fast path took only \(taken) of 3,000 generated rows")
    }
}
