/// Text preparation for XML output.
///
/// libxml2's xmlTextWriter escapes `<`, `&`, `>` and quotes, but it writes every
/// other character raw — including U+0000–U+001F (except tab, LF, CR) and
/// U+FFFE/U+FFFF, which are not allowed anywhere in an XML 1.0 document. A single
/// such character from a store description makes the whole feed unreadable, so
/// every string goes through ``xmlSafe(_:)`` before it reaches the writer.
package enum XMLText {
    /// `s` with every character that is not an XML 1.0 `Char` removed.
    ///
    /// `Char ::= #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | [#x10000-#x10FFFF]`.
    /// Surrogates cannot occur in a Swift `String`, so what is dropped is U+0000–U+0008,
    /// U+000B, U+000C, U+000E–U+001F, U+FFFE and U+FFFF. (C1 controls U+007F–U+009F are
    /// `Char`s and are kept.) When nothing needs removing — the usual case — the
    /// argument is returned as is, after one pass over its UTF-8 bytes.
    package static func xmlSafe(_ s: String) -> String {
        var s = s
        let firstBad = s.withUTF8 { firstNonChar(in: $0, from: 0) }
        guard let firstBad else { return s }
        return s.withUTF8 { bytes in
            var out = [UInt8]()
            out.reserveCapacity(bytes.count)
            var runStart = 0
            var bad: Int? = firstBad
            while let b = bad {
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<b]))
                let skip = bytes[b] < 0x20 ? 1 : 3
                runStart = b + skip
                bad = firstNonChar(in: bytes, from: runStart)
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            return String(decoding: out, as: UTF8.self)
        }
    }

    /// Whether every character of `s` is an XML 1.0 `Char`.
    package static func isXMLSafe(_ s: String) -> Bool {
        var s = s
        return s.withUTF8 { firstNonChar(in: $0, from: 0) == nil }
    }

    /// Offset of the first byte that starts a non-`Char` in valid UTF-8, or nil.
    @inline(__always)
    static func firstNonChar(in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        var i = start
        let n = bytes.count
        while i < n {
            let b = bytes[i]
            if b < 0x20 {
                if b != 0x09 && b != 0x0A && b != 0x0D { return i }
            } else if b == 0xEF, i + 2 < n, bytes[i + 1] == 0xBF, bytes[i + 2] >= 0xBE {
                return i // EF BF BE = U+FFFE, EF BF BF = U+FFFF
            }
            i += 1
        }
        return nil
    }

    /// `s` with `&`, `<`, `>` and `"` replaced by `&amp;`, `&lt;`, `&gt;` and `&quot;`.
    ///
    /// For RSS `<description>` (and other elements feed readers render as HTML): the
    /// plain text is HTML-escaped first, then written as ordinary XML text, which the
    /// XML writer escapes a second time. `Joe <Live> Show & friends` therefore goes on
    /// the wire as `Joe &amp;lt;Live&amp;gt; Show &amp;amp; friends`; an XML parser
    /// gives the reader `Joe &lt;Live&gt; Show &amp; friends`, which it renders as
    /// HTML — showing exactly the original text. (We chose this over CDATA: it needs
    /// no `]]>` splitting, every character still goes through the one escaping path
    /// of the writer, and readers treat both forms the same.)
    package static func htmlEscaped(_ s: String) -> String {
        var s = s
        let needed = s.withUTF8 { (bytes: UnsafeBufferPointer<UInt8>) -> Bool in
            for byte in bytes {
                switch byte {
                case 0x26, 0x3C, 0x3E, 0x22: return true
                default: continue
                }
            }
            return false
        }
        guard needed else { return s }
        return s.withUTF8 { bytes in
            var out = [UInt8]()
            out.reserveCapacity(bytes.count + 16)
            for b in bytes {
                switch b {
                case 0x26: out.append(contentsOf: [0x26, 0x61, 0x6D, 0x70, 0x3B])             // &amp;
                case 0x3C: out.append(contentsOf: [0x26, 0x6C, 0x74, 0x3B])                   // &lt;
                case 0x3E: out.append(contentsOf: [0x26, 0x67, 0x74, 0x3B])                   // &gt;
                case 0x22: out.append(contentsOf: [0x26, 0x71, 0x75, 0x6F, 0x74, 0x3B])       // &quot;
                default: out.append(b)
                }
            }
            return String(decoding: out, as: UTF8.self)
        }
    }
}
