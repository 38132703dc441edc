/// The content faults of a world: which records carry them and what they
/// look like. A record's marks are drawn once from `(seed, fault, entity,
/// index)`, so a record carries the same fault on every night and a change
/// of its title keeps the fault: the truth (`World.diff`) is unaffected and
/// `World.rowJSON` shows exactly what is served.
struct ContentFaults: Sendable {
    struct Marks: OptionSet, Sendable {
        let rawValue: UInt8
        static let huge = Marks(rawValue: 1)
        static let invalidUTF8 = Marks(rawValue: 2)
        static let xmlInvalid = Marks(rawValue: 4)
        static let formula = Marks(rawValue: 8)
    }

    let seed: UInt64
    let huge: Double
    let invalidUTF8: Double
    let xmlInvalid: Double
    let formula: Double
    /// Fraction of podcast feeds served as one of ``FeedVariant``.
    let feedVariants: Double
    /// Fraction of podcasts whose feed is on ``deadFeedHost``.
    let deadFeedHostShare: Double

    /// Where real feed hosts differ from the tidy feed: one per faulted feed.
    enum FeedVariant: CaseIterable, Sendable {
        case invalidCharacter, relativeEnclosure, newLocation, newFeedURL, movedPermanently, twoEnclosures, latin1
    }

    /// The feed host the `dead-feed-host` fault puts feeds on; it answers 503.
    static let deadFeedHost = "feeds2.storesim.test"

    init(seed: UInt64, plan: FaultPlan) {
        self.seed = seed
        huge = plan.value(.hugeField) ?? 0
        invalidUTF8 = plan.value(.invalidUTF8) ?? 0
        xmlInvalid = plan.value(.xmlInvalidChars) ?? 0
        formula = plan.value(.formulaStrings) ?? 0
        feedVariants = plan.value(.feedVariants) ?? 0
        deadFeedHostShare = plan.value(.deadFeedHost) ?? 0
    }

    static let none = ContentFaults(seed: 0, plan: .none)

    var isEmpty: Bool { huge == 0 && invalidUTF8 == 0 && xmlInvalid == 0 && formula == 0 }

    /// The variant podcast `index`'s feed is served as, if any. Consecutive
    /// faulted podcasts take the variants in turn (from a seeded start), so a
    /// handful of feeds shows every one.
    func feedVariant(podcast index: Int) -> FeedVariant? {
        guard feedVariants > 0, StableRandom.chance(feedVariants, draw(.feedVariants, 0, index)) else { return nil }
        let all = FeedVariant.allCases
        let offset = Int(StableRandom.hash(seed, FaultPlan.Kind.feedVariants.tag) % UInt64(all.count))
        return all[(index + offset) % all.count]
    }

    /// Whether podcast `index`'s feed lives on the dead host.
    func onDeadFeedHost(podcast index: Int) -> Bool {
        deadFeedHostShare > 0 && StableRandom.chance(deadFeedHostShare, draw(.deadFeedHost, 0, index))
    }

    private func draw(_ kind: FaultPlan.Kind, _ tag: UInt64, _ index: Int) -> UInt64 {
        StableRandom.hash(seed, kind.tag, tag, UInt64(index))
    }

    /// The faults record `index` of the entity `tag` carries.
    func marks(tag: UInt64, index: Int) -> Marks {
        if isEmpty { return [] }
        var marks: Marks = []
        if StableRandom.chance(huge, draw(.hugeField, tag, index)) { marks.insert(.huge) }
        if StableRandom.chance(invalidUTF8, draw(.invalidUTF8, tag, index)) { marks.insert(.invalidUTF8) }
        if StableRandom.chance(xmlInvalid, draw(.xmlInvalidChars, tag, index)) { marks.insert(.xmlInvalid) }
        if StableRandom.chance(formula, draw(.formulaStrings, tag, index)) { marks.insert(.formula) }
        return marks
    }

    /// Spreadsheet formulas and the characters a CSV export must neutralise.
    static let formulaPrefixes = [
        "=1+2 ", "+SUM(1,2) ", "-3+4 ", "@SUM(1) ", "=HYPERLINK(\"http://formula.storesim.test\",\"click\") ",
        "=cmd|' /C calc'!A0 ",
    ]
    /// Characters outside XML 1.0's Char production.
    static let xmlInvalidCharacters: [String] = ["\u{1}", "\u{8}", "\u{1B}", "\u{FFFE}", "\u{FFFF}"]
    /// Byte sequences that are not UTF-8: a lone 0xFF, a lead byte followed
    /// by ASCII, an encoded surrogate (CESU), a truncated 4-byte sequence.
    static let invalidSequences: [[UInt8]] = [[0xFF], [0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF0, 0x9F, 0x98]]

    /// A title as served: formula prefix, an XML-invalid character and
    /// invalid bytes as the record's marks say. The clean title stays what
    /// Search matches and URL slugs are made from.
    func title(_ clean: String, marks: Marks, tag: UInt64, index: Int) -> FaultyText {
        guard !marks.isDisjoint(with: [.formula, .xmlInvalid, .invalidUTF8]) else { return FaultyText(clean) }
        var dice = Dice(StableRandom.hash(seed, tag, UInt64(index), 0xC0_4E47))
        var text = clean
        if marks.contains(.formula) { text = dice.pick(Self.formulaPrefixes) + text }
        if marks.contains(.xmlInvalid) {
            let character = dice.pick(Self.xmlInvalidCharacters)
            if let space = text.firstIndex(of: " ") {
                text.replaceSubrange(space...space, with: character + " ")
            } else {
                text += character
            }
        }
        var bytes = Array(text.utf8)
        if marks.contains(.invalidUTF8) {
            bytes += [UInt8(ascii: " ")] + dice.pick(Self.invalidSequences)
        }
        return FaultyText(bytes: bytes)
    }

    /// `text` followed by about a megabyte when the record is marked huge.
    func huge(_ text: String, marks: Marks) -> String {
        marks.contains(.huge) ? text + "\n" + Self.hugeText : text
    }

    /// A little over 1 MiB of varied, non-ASCII, markup-laden text.
    static let hugeText: String = {
        let sentences = [
            "Ceci n'est pas une pipe — ", "坂本の長い説明。", "<b>bold</b> & <i>italic</i> ", "Zoë's \"quoted\" café. ",
            "세척이 쉬워요. ", "Line\nbreak\tand tab. ", "😗 emoji ",
        ]
        var out = ""
        out.reserveCapacity(1_100_000)
        var n = 0
        while out.utf8.count < 1_048_576 {
            out += sentences[n % sentences.count]
            n += 1
        }
        return out
    }()
}

/// Text that may hold bytes that are not UTF-8.
struct FaultyText: Sendable, Equatable {
    let bytes: [UInt8]

    init(_ text: String) { bytes = Array(text.utf8) }
    init(bytes: [UInt8]) { self.bytes = bytes }

    /// Valid UTF-8 goes out as a normal JSON string, anything else byte for byte.
    var json: JSONOut {
        if let text = String(validating: bytes, as: UTF8.self) { return .string(text) }
        return .rawString(bytes)
    }

    /// What a lenient UTF-8 reader sees (invalid sequences become U+FFFD).
    var text: String { String(decoding: bytes, as: UTF8.self) }
}
