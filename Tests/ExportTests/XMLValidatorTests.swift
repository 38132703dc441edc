import Foundation
import Testing
@testable import Export

@Suite struct XMLTextTests {
    static let dropped: [UInt32] = Array(0x00...0x08) + [0x0B, 0x0C] + Array(0x0E...0x1F) + [0xFFFE, 0xFFFF]

    @Test(arguments: XMLTextTests.dropped)
    func xmlSafeDropsNonCharacters(_ value: UInt32) {
        let scalar = Unicode.Scalar(value)!
        let input = "a" + String(Character(scalar)) + "b" + String(Character(scalar))
        #expect(XMLText.xmlSafe(input) == "ab")
        #expect(!XMLText.isXMLSafe(input))
    }

    @Test func xmlSafeKeepsAllowedCharacters() {
        let kept = "tab\there\nline\r\ncr — emoji 🎙️👩‍👩‍👧🇯🇵 CJK 中文日本語한국어 del\u{7F} c1\u{85} edge\u{D7FF}\u{E000}\u{FFFD}\u{10000}\u{10FFFF}"
        #expect(XMLText.isXMLSafe(kept))
        #expect(XMLText.xmlSafe(kept) == kept)
        #expect(XMLText.xmlSafe("") == "")
    }

    @Test func xmlSafeMixedContent() {
        #expect(XMLText.xmlSafe("\u{0}Joe\u{1} <Live>\u{B}\u{FFFE} 🎧\u{1F}\t!\u{FFFF}") == "Joe <Live> 🎧\t!")
        // U+FFFD and neighbours of U+FFFE in UTF-8 (EF BF BD) are kept.
        #expect(XMLText.xmlSafe("\u{FFFD}\u{FFFE}\u{FFFD}") == "\u{FFFD}\u{FFFD}")
        // Long strings with many removals.
        let long = String(repeating: "ab\u{1}", count: 10_000)
        #expect(XMLText.xmlSafe(long) == String(repeating: "ab", count: 10_000))
    }

    @Test func htmlEscaping() {
        #expect(XMLText.htmlEscaped("Joe <Live> Show & friends") == "Joe &lt;Live&gt; Show &amp; friends")
        #expect(XMLText.htmlEscaped("say \"hi\" & <b>bye</b>") == "say &quot;hi&quot; &amp; &lt;b&gt;bye&lt;/b&gt;")
        #expect(XMLText.htmlEscaped("nothing to do ✓") == "nothing to do ✓")
        #expect(XMLText.htmlEscaped("&amp;") == "&amp;amp;")
    }
}

@Suite struct XMLValidatorTests {
    private func check(_ xml: String, name: String = "doc.xml") throws {
        try XMLValidator.validateStrict(Data(xml.utf8), name: name)
    }

    /// The error `xml` is rejected with (fails the test when it is accepted).
    private func rejection(_ xml: String) -> (line: Int, column: Int, message: String)? {
        do {
            try check(xml)
            Issue.record("accepted: \(xml)")
            return nil
        } catch let ExportError.invalidXML(name, line, column, message) {
            #expect(name == "doc.xml")
            return (line, column, message)
        } catch {
            Issue.record("unexpected \(error)")
            return nil
        }
    }

    @Test func acceptsWellFormedDocuments() throws {
        try check("<a/>")
        try check("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<rss version=\"2.0\"><channel><title>A &amp; B &lt;c&gt; &#x1F3A7; 中文</title></channel></rss>\n")
        try check("<r xmlns:itunes=\"http://www.itunes.com/dtds/podcast-1.0.dtd\"><itunes:explicit>false</itunes:explicit><![CDATA[ <x> & ]]></r>")
        try check("<a>\t\r\n</a><!-- trailing comment -->")
    }

    @Test func rejectsMismatchedTagWithLineNumber() {
        let error = rejection("<a>\n<b>\n</a>\n")
        #expect(error?.line == 3)
        #expect(error?.message.contains("mismatch") == true)
    }

    @Test func rejectsUnclosedDocument() {
        let error = rejection("<rss>\n  <channel>\n    <title>x</title>\n")
        #expect((error?.line ?? 0) >= 3)
    }

    @Test func rejectsBadCharactersAndEscapes() {
        #expect(rejection("<a>control \u{1} char</a>")?.line == 1)
        #expect(rejection("<a>\u{FFFE}</a>") != nil)
        #expect(rejection("<a>&#1;</a>") != nil)
        #expect(rejection("<a>a & b</a>") != nil)
        #expect(rejection("<a>x <b</a>") != nil)
        #expect(rejection("<a>]]></a>") != nil)
        #expect(rejection("<a>&nbsp;</a>") != nil)
        #expect(rejection("<a x=\"1\" x=\"2\"/>") != nil)
        #expect(rejection("<a/><b/>") != nil)
        #expect(rejection("") != nil)
    }

    @Test func rejectsNamespaceErrors() {
        // libxml2 returns a tree for this one; the collected error still fails it.
        let error = rejection("<rss>\n<itunes:explicit>true</itunes:explicit>\n</rss>")
        #expect(error?.line == 2)
        #expect(error?.message.contains("itunes") == true)
    }

    @Test func rejectsDoctype() {
        let error = rejection("<!DOCTYPE x [<!ENTITY e SYSTEM \"file:///etc/passwd\">]>\n<x>&e;</x>")
        #expect(error?.message.contains("DOCTYPE") == true)
    }

    @Test func errorDescriptionHasPosition() {
        let error = ExportError.invalidXML(name: "feed.xml", line: 12, column: 7, message: "Opening and ending tag mismatch\n")
        #expect(error.description == "feed.xml:12:7: invalid XML: Opening and ending tag mismatch")
    }

    @Test func streamingInPiecesMatchesWholeDocument() throws {
        let xml = Array("<root>\(String(repeating: "<item a=\"1\">text &amp; more</item>\n", count: 5_000))</root>".utf8)
        for pieceSize in [1, 3, 4096, 1 << 20] {
            let validator = try XMLStreamValidator(name: "pieces.xml")
            var offset = 0
            try xml.withUnsafeBytes { raw in
                while offset < raw.count {
                    let n = min(pieceSize, raw.count - offset)
                    validator.feed(UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + n)]))
                    offset += n
                }
                try validator.finish()
            }
        }
        // Larger than the parser's 10 MB look-ahead limit in one call.
        let big = Array("<r>\(String(repeating: "<i>0123456789</i>", count: 800_000))</r>".utf8)
        #expect(big.count > 10_000_000)
        try XMLValidator.validateStrict(Data(big), name: "big.xml")
    }

    @Test func concurrentValidationsDoNotShareErrors() async throws {
        let good = Data("<a><b>ok</b></a>".utf8)
        let bad = Data("<a>\n\n<b></a>".utf8)
        let results = await withTaskGroup(of: (Bool, Int?).self) { group in
            for i in 0..<64 {
                let isGood = i % 2 == 0
                group.addTask {
                    do {
                        try XMLValidator.validateStrict(isGood ? good : bad, name: "d\(i)")
                        return (isGood, nil)
                    } catch let ExportError.invalidXML(_, line, _, _) {
                        return (isGood, line)
                    } catch {
                        return (isGood, -1)
                    }
                }
            }
            var all: [(Bool, Int?)] = []
            for await result in group { all.append(result) }
            return all
        }
        #expect(results.count == 64)
        for (isGood, line) in results {
            #expect(isGood ? line == nil : line == 3)
        }
    }
}
