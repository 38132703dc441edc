import Catalog
import Testing

@Suite struct JSONParserTests {
    @Test func memberFindsATopLevelValueSkippingTheOthers() {
        let row = #"{"a":{"id":1,"x":[{"id":2}]},"s":"q\"}\\","n":-1.5e3,"t":true,"id":3106141041,"z":null}"#
        func member(_ name: String, _ text: String) -> JSONValue? {
            Array(text.utf8).withUnsafeBufferPointer { JSONParser.member(name, ofObjectIn: $0) }
        }
        #expect(member("id", row) == .int(3_106_141_041))
        #expect(member("s", row) == .string(#"q"}\"#))
        #expect(member("n", row) == .double(-1500))
        #expect(member("z", row) == .null)
        #expect(member("id", "\u{FEFF} \r\n{ \"k\" : [1, 2] , \"id\" : \"abc\" }") == .string("abc"))
        #expect(member("missing", row) == nil)
        // An escaped key or a malformed row: no guess, the caller parses in full.
        #expect(member("id", #"{"\u0069d":1}"#) == nil)
        #expect(member("id", #"{"a":1 "id":2}"#) == nil)
        #expect(member("id", "[1]") == nil)
        #expect(member("id", #"{"a":"unterminated"#) == nil)
    }

    /// The member scanner the exports read stored rows with: each top-level
    /// name and value text, as the full parse sees them.
    @Test func membersAreTheTopLevelNamesAndValueTextsTheParseSees() throws {
        struct Member: Equatable { var name: String; var value: String; var nameEscaped: Bool; var valueEscaped: Bool }
        func members(_ text: String) -> (count: Int?, members: [Member]) {
            var found: [Member] = []
            let count = Array(text.utf8).withUnsafeBufferPointer { bytes in
                JSONParser.members(ofObjectIn: bytes) { name, nameEscaped, value, valueEscaped in
                    found.append(Member(name: JSONParser.stringContents(bytes[name]), value: String(decoding: bytes[value], as: UTF8.self),
                                        nameEscaped: nameEscaped, valueEscaped: valueEscaped))
                }
            }
            return (count, found)
        }
        #expect(members("{}").count == 0)
        #expect(members("[1]").count == nil)
        #expect(members("").count == nil)
        let row = "\u{FEFF} {\"a\" : [1, {\"b\":\"}{,\"}] , \"c\":\"}{,\",\"d\\\"e\":\"x\\ny\",\"n\":-1.5e3,\"t\":true,\"z\":null}"
        let scanned = members(row)
        #expect(scanned.count == 6)
        #expect(scanned.members == [
            Member(name: "a", value: #"[1, {"b":"}{,"}]"#, nameEscaped: false, valueEscaped: false),
            Member(name: "c", value: #""}{,""#, nameEscaped: false, valueEscaped: false),
            Member(name: "d\"e", value: #""x\ny""#, nameEscaped: true, valueEscaped: true),
            Member(name: "n", value: "-1.5e3", nameEscaped: false, valueEscaped: false),
            Member(name: "t", value: "true", nameEscaped: false, valueEscaped: false),
            Member(name: "z", value: "null", nameEscaped: false, valueEscaped: false),
        ])
        let parsed = try #require(try JSONParser.parse(row).objectValue)
        for member in scanned.members {
            #expect(try JSONParser.parse(member.value) == parsed[member.name], "\(member.name)")
        }
        // Out of place: it stops there, having told only what came before.
        #expect(members(#"{"a":1 "b":2}"#).count == 1)
        #expect(members(#"{"a":"unterminated"#).count == 0)
        // Long plain strings are skipped eight bytes at a time; a quote or backslash at any offset still ends or escapes.
        for offset in 0..<17 {
            let text = String(repeating: "x", count: offset) + "\\\"" + String(repeating: "y", count: 9)
            let one = members("{\"k\":\"\(text)\",\"m\":1}")
            #expect(one.members.map(\.name) == ["k", "m"], "\(offset)")
            #expect(one.members.first?.valueEscaped == true)
            let decoded = Array(text.utf8).withUnsafeBufferPointer { JSONParser.stringContents($0[...]) }
            #expect(decoded == String(repeating: "x", count: offset) + "\"" + String(repeating: "y", count: 9))
        }
    }

    @Test func parsesEveryKindOfValue() throws {
        let value = try JSONParser.parse(#"{"a":1,"b":-2.5,"c":"x\u00e9\n","d":[true,false,null],"e":{}}"#)
        #expect(value["a"] == .int(1))
        #expect(value["b"] == .double(-2.5))
        #expect(value["c"] == .string("xé\n"))
        #expect(value["d"] == .array([.bool(true), .bool(false), .null]))
        #expect(value["e"] == .object([:]))
    }

    @Test func keepsLargeIdsExact() throws {
        #expect(try JSONParser.parse("9007199254740993") == .int(9_007_199_254_740_993))
    }

    @Test func acceptsLeadingNewlinesCRLFAndBOM() throws {
        #expect(try JSONParser.parse("\n\n\n{\r\n \"a\": 1\r\n}\r\n")["a"] == .int(1))
        #expect(try JSONParser.parse([0xEF, 0xBB, 0xBF] + Array("[1]".utf8)) == .array([.int(1)]))
    }

    @Test func decodesSurrogatePairsAndReplacesLoneOnes() throws {
        #expect(try JSONParser.parse(#""\ud83d\ude00""#) == .string("😀"))
        #expect(try JSONParser.parse(#""\ud83d x""#) == .string("\u{FFFD} x"))
    }

    @Test func replacesInvalidUTF8InsteadOfFailing() throws {
        let bytes: [UInt8] = Array("\"a".utf8) + [0xFF] + Array("b\"".utf8)
        #expect(try JSONParser.parse(bytes) == .string("a\u{FFFD}b"))
    }

    @Test(arguments: [
        ("{\"a\":1,}", 1, 8),
        ("{\n  \"a\": 1\n  \"b\": 2\n}", 3, 3),
        ("[1, 2", 1, 6),
        ("<html><body>Error</body></html>", 1, 1),
        ("{\"a\": tru}", 1, 7),
        ("", 1, 1),
        ("{\"a\":\"x\ny\"}", 1, 8),
    ])
    func reportsWhereItFailed(text: String, line: Int, column: Int) {
        do {
            _ = try JSONParser.parse(text)
            Issue.record("expected a syntax error for \(text)")
        } catch {
            #expect(error.line == line, "\(error)")
            #expect(error.column == column, "\(error)")
        }
    }

    @Test func rejectsTrailingGarbageAndDeepNesting() {
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse("{} x") }
        #expect(throws: JSONSyntaxError.self) { try JSONParser.parse(String(repeating: "[", count: 600)) }
    }
}
