import Catalog
@testable import Connectors
import Foundation
import Testing
import TestSupport

@Suite struct CSVValueTests {
    @Test(arguments: [
        // Integers: exactly as Int64 prints them.
        ("0", JSONValue.int(0)), ("7", .int(7)), ("-12", .int(-12)), ("9223372036854775807", .int(.max)),
        ("-9223372036854775808", .int(.min)),
        // Codes: a leading zero, a sign, past Int64.
        ("007", .string("007")), ("00501", .string("00501")), ("-0", .string("-0")), ("+5", .string("+5")),
        ("9223372036854775808", .string("9223372036854775808")), ("12345678901234567890123", .string("12345678901234567890123")),
        // Reals whose double is the number written.
        ("1.5", .double(1.5)), ("1.50", .double(1.5)), ("-0.25", .double(-0.25)), ("1e5", .double(100_000)), ("2.5E-3", .double(0.0025)),
        (".5", .double(0.5)), ("0.1", .double(0.1)), ("3.141592653589793", .double(3.141592653589793)), ("1e300", .double(1e300)),
        // More digits than a double keeps, or no finite double: text, as written.
        ("0.10000000000000001", .string("0.10000000000000001")), ("1e400", .string("1e400")), ("1e-400", .string("1e-400")),
        ("NaN", .string("NaN")), ("inf", .string("inf")), ("-Infinity", .string("-Infinity")),
        // Not numbers by the grammar.
        ("5.", .string("5.")), ("00.5", .string("00.5")), ("1,5", .string("1,5")), ("1,000", .string("1,000")), ("1 000", .string("1 000")),
        ("0x10", .string("0x10")), (" 12", .string(" 12")), ("12 ", .string("12 ")), ("1e", .string("1e")), ("-", .string("-")),
        ("1.2.3", .string("1.2.3")), ("--1", .string("--1")),
        // Exponents at Int's edges: a zero whose exponent overflows the digit count stays text, never traps.
        ("0.0e-9223372036854775808", .string("0.0e-9223372036854775808")), ("1.5e-9223372036854775808", .string("1.5e-9223372036854775808")),
        ("1e-99999999999999999999", .string("1e-99999999999999999999")),
        // Dates and other text stay text.
        ("2024-05-01", .string("2024-05-01")), ("2024-05-01T12:00:00Z", .string("2024-05-01T12:00:00Z")), ("12:30", .string("12:30")),
        ("hello", .string("hello")), ("Ünïcode", .string("Ünïcode")),
    ])
    func inference(text: String, expected: JSONValue) {
        #expect(CSVValue.inferred(text) == expected)
    }

    @Test func inferenceIsIdempotentOnWhatItLeavesAsText() {
        for text in ["007", "0.10000000000000001", "1,5", "hello", "2024-05-01"] {
            guard case .string(let kept) = CSVValue.inferred(text) else {
                Issue.record("\(text) was typed")
                continue
            }
            #expect(CSVValue.inferred(kept) == .string(text))
        }
    }

    @Test(arguments: [
        ("007", FieldType.integer, JSONValue.int(7)), (" 12 ", .integer, .int(12)), ("+5", .integer, .int(5)), ("-0", .integer, .int(0)),
        ("1.5", .integer, nil), ("1e3", .integer, nil), ("", .integer, nil), ("99999999999999999999", .integer, nil),
        ("12", .real, .double(12)), ("007.50", .real, .double(7.5)), ("+.5", .real, .double(0.5)), ("5.", .real, .double(5)),
        ("-1.25e2", .real, .double(-125)), ("0.10000000000000001", .real, .double(0.1)),
        ("NaN", .real, nil), ("inf", .real, nil), ("1e400", .real, nil), ("0x1p3", .real, nil), ("1,5", .real, nil), (".", .real, nil),
        ("2024-02-29", .date, .string("2024-02-29")), (" 2024-05-01T08:30Z ", .date, .string("2024-05-01T08:30Z")),
        ("2023-02-29", .date, nil), ("01/05/2024", .date, nil), ("yesterday", .date, nil),
        ("007", .text, .string("007")), (" a ", .text, .string(" a ")),
    ] as [(String, FieldType, JSONValue?)])
    func declared(text: String, type: FieldType, expected: JSONValue?) {
        #expect(CSVValue.declared(text, as: type) == expected)
    }
}

@Suite struct FieldTypeTests {
    @Test(arguments: [
        "2024-05-01", "2024-02-29", "2000-02-29", "0001-01-01", "9999-12-31", "2024-05-01T12:00", "2024-05-01T12:00:00",
        "2024-05-01T12:00:00Z", "2024-05-01T23:59:60Z", "2024-05-01 12:00:00", "2024-05-01T12:00:00.123456Z",
        "2024-05-01T12:00:00+02:00", "2024-05-01T12:00:00-0530", "2024-05-01T12:00+02", "2024-05-01T12:00:00,5Z",
    ])
    func dates(text: String) {
        #expect(FieldType.isISO8601Date(text))
        #expect(FieldType.of(.string(text)) == .date)
    }

    @Test(arguments: [
        "2023-02-29", "1900-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "2024-5-1", "24-05-01", "2024/05/01", "20240501",
        "2024-05-01T24:00", "2024-05-01T12:60", "2024-05-01T12", "2024-05-01T12:00:61", "2024-05-01T12:00:00.Z",
        "2024-05-01T12:00:00+2", "2024-05-01T12:00:00+15:00", "2024-05-01 ", "2024-05-01X", "2024-05-01T12:00:00Zulu",
        "2024-05-01t12:00", "", "hello",
    ])
    func notDates(text: String) {
        #expect(!FieldType.isISO8601Date(text))
    }

    @Test func typesOfValues() {
        #expect(FieldType.of(.int(3)) == .integer)
        #expect(FieldType.of(.bool(true)) == .integer)
        #expect(FieldType.of(.double(1.5)) == .real)
        #expect(FieldType.of(.string("x")) == .text)
        #expect(FieldType.of(.array([])) == .text)
        #expect(FieldType.of(.object([:])) == .text)
        #expect(FieldType.of(.null) == nil)
    }
}

@Suite struct RecordsFileEncodingCheckTests {
    /// Feeds `bytes` to a check in pieces cut at `cuts`.
    func check(_ bytes: [UInt8], _ encoding: RecordsFileEncoding, cuts: [Int] = []) -> Int? {
        var check = EncodingCheck(encoding)
        let bounds = [0] + cuts.filter { $0 > 0 && $0 < bytes.count } + [bytes.count]
        return bytes.withUnsafeBufferPointer { buffer in
            for (start, end) in zip(bounds, bounds.dropFirst()) {
                if let bad = check.feed(UnsafeBufferPointer(rebasing: buffer[start..<end]), at: start) { return bad }
            }
            return check.finish()
        }
    }

    /// The UTF-8 check agrees with the standard library's validation on
    /// random byte strings, however the bytes are cut into buffers.
    @Test func utf8CheckAgreesWithTheStandardLibrary() {
        var generator = SeededGenerator(seed: 13)
        // Mostly ASCII with every kind of lead and continuation byte mixed in.
        let pool: [UInt8] = Array(0x20...0x7E) + [0x0A, 0x80, 0x8F, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED, 0xEE,
                                                  0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xFF]
        for _ in 0..<3_000 {
            let count = Int(generator.next() % 40)
            var bytes = (0..<count).map { _ in pool[Int(generator.next() % UInt64(pool.count))] }
            // Some valid multi-byte characters too.
            if generator.next() % 2 == 0 { bytes.insert(contentsOf: Array("é€😀".utf8), at: Int(generator.next() % UInt64(bytes.count + 1))) }
            let valid = String(validating: bytes, as: UTF8.self) != nil
            let cut = Int(generator.next() % UInt64(bytes.count + 1))
            let whole = check(bytes, .utf8)
            #expect((whole == nil) == valid, "\(bytes)")
            #expect(check(bytes, .utf8, cuts: [cut]) == whole, "\(bytes) cut at \(cut)")
            // The offset is where the valid prefix ends.
            if let bad = whole {
                #expect(String(validating: bytes[..<bad], as: UTF8.self) != nil)
                #expect(String(validating: bytes[bad...], as: UTF8.self) == nil)
            }
        }
    }

    @Test func longASCIIRunsAndACharacterAcrossBuffers() {
        let text = Array((String(repeating: "abcdefgh", count: 100) + "é€😀" + String(repeating: "x", count: 13)).utf8)
        for cut in 795...812 { #expect(check(text, .utf8, cuts: [cut]) == nil, "cut \(cut)") }
        #expect(check(text + [0xF0, 0x9F], .utf8) == text.count)
        #expect(check(Array(repeating: 0x41, count: 64) + [0x81] + Array(repeating: 0x41, count: 9), .windows1252) == 64)
        #expect(check(Array(repeating: 0x41, count: 64) + [0x9F, 0xE9], .iso88591) == 64)
        #expect(check([0x80, 0x9F, 0xE9], .windows1252) == nil)
    }

    @Test func transcodingToUTF8() {
        let bytes: [UInt8] = Array("plain ".utf8) + [0x80, 0xE9, 0x93, 0x94, 0xFF]
        var out: [UInt8] = []
        #expect(bytes.withUnsafeBufferPointer { SingleByteTranscoder.append($0, from: .windows1252, to: &out) } == nil)
        #expect(String(decoding: out, as: UTF8.self) == "plain €é“”ÿ")
        out = []
        #expect(bytes.withUnsafeBufferPointer { SingleByteTranscoder.append($0, from: .iso88591, to: &out) } == 6)
        out = []
        #expect([0x41, 0x8D].withUnsafeBufferPointer { SingleByteTranscoder.append($0, from: .windows1252, to: &out) } == 1)
    }

    @Test func encodingNamesAndAliases() {
        let names: [(String, RecordsFileEncoding?)] = [
            ("utf-8", .utf8), ("UTF8", .utf8), ("windows-1252", .windows1252), ("cp1252", .windows1252), ("CP1252", .windows1252),
            ("iso-8859-1", .iso88591), ("latin1", .iso88591), ("Latin-1", .iso88591), (" utf-8 ", .utf8),
            ("utf-16", nil), ("ascii", nil), ("", nil),
        ]
        for (name, expected) in names { #expect(RecordsFileEncoding(name: name) == expected, "\(name)") }
    }
}

