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
