/// A minimal XML byte writer for the simulator's feeds. It escapes what XML
/// requires and nothing more, and passes fault-carrying bytes through
/// untouched: a world with the `xml-invalid-chars` or `invalid-utf8` fault
/// serves feeds that no strict XML parser accepts, as broken real feeds do.
struct XMLOut {
    private(set) var bytes: [UInt8] = []

    mutating func raw(_ text: String) { bytes.append(contentsOf: text.utf8) }

    /// Character data: `&`, `<` and `>` escaped.
    mutating func text(_ text: String) { escape(text.utf8, quotes: false) }
    mutating func text(_ text: FaultyText) { escape(text.bytes, quotes: false) }

    /// An attribute value (quotes escaped too).
    mutating func attributeValue(_ text: String) { escape(text.utf8, quotes: true) }

    private mutating func escape(_ input: some Sequence<UInt8>, quotes: Bool) {
        for byte in input {
            switch byte {
            case UInt8(ascii: "&"): bytes.append(contentsOf: "&amp;".utf8)
            case UInt8(ascii: "<"): bytes.append(contentsOf: "&lt;".utf8)
            case UInt8(ascii: ">"): bytes.append(contentsOf: "&gt;".utf8)
            case UInt8(ascii: "\"") where quotes: bytes.append(contentsOf: "&quot;".utf8)
            default: bytes.append(byte)
            }
        }
    }

    /// `<name a="1">text</name>`, or `<name a="1"/>` without text.
    mutating func element(_ name: String, _ attributes: [(String, String)] = [], text: String? = nil) {
        open(name, attributes, selfClosing: text == nil)
        if let text {
            self.text(text)
            close(name)
        }
    }

    mutating func element(_ name: String, _ attributes: [(String, String)] = [], faulty: FaultyText) {
        open(name, attributes)
        text(faulty)
        close(name)
    }

    mutating func open(_ name: String, _ attributes: [(String, String)] = [], selfClosing: Bool = false) {
        raw("<\(name)")
        for (key, value) in attributes {
            raw(" \(key)=\"")
            attributeValue(value)
            raw("\"")
        }
        raw(selfClosing ? "/>" : ">")
    }

    mutating func close(_ name: String) { raw("</\(name)>") }

    /// CDATA, with `]]>` split so the section cannot end early.
    mutating func cdata(_ text: String) {
        raw("<![CDATA[")
        raw(text.split(separator: "]]>", omittingEmptySubsequences: false).joined(separator: "]]]]><![CDATA[>"))
        raw("]]>")
    }
}
