/// What a charset label names, read as browsers and feed readers read it:
/// the WHATWG Encoding Standard's label table (labels are trimmed and
/// compared without case).
///
/// The table matters for one family above all: `ISO-8859-1`, `latin1`,
/// `US-ASCII` and their aliases all mean windows-1252 there. Feeds so labelled
/// are written by Windows tools in windows-1252 nearly always (`0x92` for ’);
/// read as true Latin-1 that byte would become U+0092, an invisible control
/// character, in a title.
enum FeedCharset: Equatable {
    case utf8
    case windows1252
    /// Another encoding, by a name iconv (behind libxml2) knows.
    case other(String)

    init?(label raw: String) {
        let label = raw.trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        guard !label.isEmpty else { return nil }
        if Self.utf8Labels.contains(label) {
            self = .utf8
        } else if Self.windows1252Labels.contains(label) {
            self = .windows1252
        } else if let superset = Self.supersets[label] {
            self = .other(superset)
        } else {
            self = .other(raw.trimmingCharacters(in: .whitespacesAndNewlines))
        }
    }

    /// Every label the WHATWG table maps to UTF-8.
    static let utf8Labels: Set<String> = [
        "unicode-1-1-utf-8", "unicode11utf8", "unicode20utf8", "utf-8", "utf8", "x-unicode20utf8",
    ]

    /// Every label the WHATWG table maps to windows-1252.
    static let windows1252Labels: Set<String> = [
        "ansi_x3.4-1968", "ascii", "cp1252", "cp819", "csisolatin1", "ibm819", "iso-8859-1", "iso-ir-100",
        "iso8859-1", "iso88591", "iso_8859-1", "iso_8859-1:1987", "l1", "latin1", "us-ascii", "windows-1252",
        "x-cp1252",
    ]

    /// The table's other labels that name a subset of what is meant: Latin-5
    /// read as windows-1254, TIS-620 as windows-874, GB 2312 as GBK.
    static let supersets: [String: String] = {
        var table: [String: String] = [:]
        for label in ["cp1254", "csisolatin5", "iso-8859-9", "iso-ir-148", "iso8859-9", "iso88599", "iso_8859-9",
                      "iso_8859-9:1989", "l5", "latin5", "windows-1254", "x-cp1254"] {
            table[label] = "WINDOWS-1254"
        }
        for label in ["dos-874", "iso-8859-11", "iso8859-11", "iso885911", "tis-620", "windows-874"] {
            table[label] = "WINDOWS-874"
        }
        for label in ["chinese", "csgb2312", "csiso58gb231280", "gb2312", "gb_2312", "gb_2312-80", "gbk", "iso-ir-58",
                      "x-gbk"] {
            table[label] = "GBK"
        }
        return table
    }()
}
