import Catalog
import Testing
import TestSupport

@Suite struct CanonicalHashTests {
    /// Reference values from the xxHash reference implementation (python-xxhash).
    @Test(arguments: [
        ("", 0xEF46_DB37_51D8_E999),
        ("a", 0xD24E_C4F1_A98C_6E5B),
        ("abc", 0x44BC_2CF5_AD77_0999),
        (String(repeating: "0123456789", count: 5), 0x4F7C_A659_1462_3935),
    ] as [(String, UInt64)])
    func xxh64MatchesReference(input: String, expected: UInt64) {
        #expect(ContentHash(bytes: Array(input.utf8)).rawValue == expected)
    }

    @Test func xxh64LongInputMatchesReference() {
        let bytes = (0..<768).map { UInt8($0 % 256) }
        #expect(ContentHash(bytes: bytes).rawValue == 0x8E03_C838_C596_036F)
    }

    @Test func keyOrderAndNumberSpellingDoNotChangeTheHash() throws {
        let a = Record(entity: .podcast, key: "1", fields: try JSONParser.parse(#"{"b":0.0,"a":"x","c":[1,2.50]}"#).objectValue!)
        let b = Record(entity: .podcast, key: "1", fields: try JSONParser.parse(#"{"a":"x","c":[1.0,2.5],"b":0}"#).objectValue!)
        #expect(a.payload == #"{"a":"x","b":0,"c":[1,2.5]}"#)
        #expect(a.hash == b.hash)
    }

    /// Keys sort by their UTF-8 bytes, whatever they share: a common 8-byte
    /// prefix, a NUL where another key ends, bytes above 0x7F, an empty key.
    @Test func objectKeysSortByTheirUTF8Bytes() {
        let alphabet: [String] = ["a", "b", "\u{0}", "é", "😀", "artist", "artistId", "collecti", "collection", "Z", "~", "\u{7f}"]
        var generator = SeededGenerator(seed: 26)
        for _ in 0..<300 {
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int.random(in: 0...20, using: &generator) {
                let key = (0..<Int.random(in: 0...4, using: &generator)).map { _ in alphabet.randomElement(using: &generator)! }.joined()
                members[key] = .int(Int64(members.count))
            }
            let expected = members.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
            let written = expected.map { CanonicalJSON.string(.string($0)) + ":" + CanonicalJSON.string(members[$0]!) }
            #expect(CanonicalJSON.string(.object(members)) == "{" + written.joined(separator: ",") + "}")
        }
    }

    @Test func anyContentChangeChangesTheHash() throws {
        let base = try JSONParser.parse(#"{"name":"Café","price":0.99}"#).objectValue!
        var renamed = base
        renamed["name"] = .string("Cafe")
        var repriced = base
        repriced["price"] = .double(1.29)
        let hashes = Set([base, renamed, repriced].map { Record(entity: .song, key: "1", fields: $0).hash })
        #expect(hashes.count == 3)
    }

    @Test func canonicalStringsEscapeOnlyWhatJSONRequires() {
        let text = CanonicalJSON.string(.string("a\"b\\c\n\u{01}é😀"))
        #expect(text == "\"a\\\"b\\\\c\\n\\u0001é😀\"")
    }

    @Test func fieldDiffListsChangedAddedAndRemovedFields() {
        let old: [String: JSONValue] = ["a": .int(1), "b": .string("x"), "gone": .null]
        let new: [String: JSONValue] = ["a": .int(2), "b": .string("x"), "new": .bool(true)]
        #expect(FieldChange.between(old, new) == [
            FieldChange(field: "a", before: "1", after: "2"),
            FieldChange(field: "gone", before: "null", after: nil),
            FieldChange(field: "new", before: nil, after: "true"),
        ])
    }

    /// The marketplace writes `3100.0`; the store reads its canonical `3100`
    /// back as an integer. Found by a user-level run of the demo: every listing
    /// whose name changed also logged its three prices as changed, to the same value.
    @Test func oneNumberInTwoSpellingsIsNoChange() throws {
        let stored = try #require(try JSONParser.parse(Array(#"{"price":3100,"list":[1,2],"name":"a"}"#.utf8)).objectValue)
        let wire = try #require(try JSONParser.parse(Array(#"{"price":3100.0,"list":[1.0,2],"name":"b"}"#.utf8)).objectValue)
        #expect(stored["price"] != wire["price"], "the two spellings parse apart, or this test tests nothing")
        #expect(FieldChange.between(stored, wire) == [FieldChange(field: "name", before: #""a""#, after: #""b""#)])
        #expect(FieldChange.between(["price": .int(3100)], ["price": .double(3100.5)])
                == [FieldChange(field: "price", before: "3100", after: "3100.5")])
    }
}
