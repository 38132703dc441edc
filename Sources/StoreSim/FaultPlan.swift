import Foundation

/// Misbehaviour on demand, deterministic by seed and request sequence.
///
/// Two families, decided so that "a crawl, then a clean re-run, ends equal
/// to the truth" always holds:
/// - **Transient** faults hit one request, never the world: a retry or a
///   re-run gets the clean answer. A URL that just got a transient fault is
///   answered cleanly the next time it is asked (bursts excepted: they are
///   meant to outlast a retry budget), so one retry always suffices.
/// - **Content** faults (huge fields, invalid UTF-8, XML-invalid characters,
///   formula strings) are part of the world: a fixed fraction of records
///   carry them on every night, `World.rowJSON` shows them and `World.diff`
///   is unchanged, so the truth still describes what a crawler sees.
///
/// Specs are `NAME[:VALUE]`; see ``documentation`` for every name and value.
public struct FaultPlan: Sendable, Equatable, CustomStringConvertible {
    /// Every fault the simulator knows, in the order a request is checked for them.
    enum Kind: String, CaseIterable, Sendable {
        case reset, timeout
        case rateLimit403 = "rate-limit-403", rateLimit429 = "rate-limit-429"
        case burst500 = "burst-500", burst502 = "burst-502", burst503 = "burst-503"
        case http500 = "http-500", http502 = "http-502", http503 = "http-503"
        case html200 = "html-200", truncate, malformedJSON = "malformed-json"
        case emptyPage = "empty-page", duplicate, drift, latency
        case hugeField = "huge-field", invalidUTF8 = "invalid-utf8", xmlInvalidChars = "xml-invalid-chars"
        case formulaStrings = "formula-strings"
        case feedVariants = "feed-variants", deadFeedHost = "dead-feed-host"

        enum Value {
            /// A probability in 0...1 (per request, or per record for content faults).
            case probability
            /// A whole number in the range.
            case count(ClosedRange<Int>)
            /// Milliseconds in the range.
            case milliseconds(ClosedRange<Double>)
        }

        var value: Value {
            switch self {
            case .burst500, .burst502, .burst503: .count(1...50)
            case .drift: .count(1...100)
            case .latency: .milliseconds(0...5_000)
            default: .probability
            }
        }

        /// The value used when a spec names the fault without one.
        var defaultValue: Double {
            switch self {
            case .burst500, .burst502, .burst503: 3
            case .drift: 2
            case .latency: 100
            case .hugeField, .invalidUTF8, .xmlInvalidChars, .formulaStrings: 0.01
            case .feedVariants, .deadFeedHost: 0.1
            default: 0.1
            }
        }

        /// Part of the world's content rather than of one request.
        var isContent: Bool {
            switch self {
            case .hugeField, .invalidUTF8, .xmlInvalidChars, .formulaStrings, .feedVariants, .deadFeedHost: true
            default: false
            }
        }

        /// Separates the faults' random streams.
        var tag: UInt64 { UInt64(Kind.allCases.firstIndex(of: self) ?? 0) &+ 0xFA17_0000 }

        var summary: String {
            switch self {
            case .reset:
                "VALUE = probability per request (0–1). The connection is closed without any response."
            case .timeout:
                "VALUE = probability per request. The answer is held \(FaultPlan.timeoutHoldSeconds) s (bounded) before "
                    + "it is sent, so a client with a shorter timeout gives up."
            case .rateLimit403:
                "VALUE = probability per request. 403 with an empty body, as iTunes throttles."
            case .rateLimit429:
                "VALUE = probability per request. 429 Too Many Requests with `Retry-After: 1`."
            case .burst500, .burst502, .burst503:
                "VALUE = N consecutive requests (1–50, default 3). Runs of N answers with HTTP \(rawValue.suffix(3)) "
                    + "(503 adds `Retry-After: 1`), the first starting at a seeded request among the first ten, then "
                    + "after every 20 clean requests; N ≥ a client's attempts fails that page."
            case .http500, .http502, .http503:
                "VALUE = probability per request. HTTP \(rawValue.suffix(3)) with a short HTML error body."
            case .html200:
                "VALUE = probability per request. Status 200 with an HTML maintenance page instead of the API body."
            case .truncate:
                "VALUE = probability per request. Status 200 with the body cut at a seeded byte (Content-Length "
                    + "matches the cut body, so only the parser notices)."
            case .malformedJSON:
                "VALUE = probability per request. Status 200 with one structural character removed (a comma in "
                    + "JSON, a `>` in XML), like the hand-edited INVALID sample."
            case .emptyPage:
                "VALUE = probability per request. A marketplace list page with no rows whose page keys still "
                    + "claim a next page."
            case .duplicate:
                "VALUE = probability per request. A page after the first (marketplace list, Search with "
                    + "offset > 0) also repeats the last row of the page before it."
            case .drift:
                "VALUE = N new products (1–100, default 2) inserted at the top of the marketplace list between "
                    + "consecutive list requests of one crawl (requests since the last page_no=1), for at most "
                    + "\(FaultPlan.maxDriftSteps) requests: later pages shift down, so rows repeat, never vanish. The "
                    + "inserted products sit above page 1 and are never served, so the night's truth is unchanged."
            case .latency:
                "VALUE = milliseconds (0–5000, default 100). Every answer waits a seeded VALUE/2…VALUE ms."
            case .hugeField:
                "VALUE = fraction of records (content). ~1 MB of text in a string field (a listing's "
                    + "description — its name in the snake era —, a podcast's trackCensoredName, other kinds' "
                    + "descriptions), on every night."
            case .invalidUTF8:
                "VALUE = fraction of records (content). Raw bytes that are not UTF-8 (0xFF, 0xC3 0x28, an encoded "
                    + "surrogate) in the title; World.rowJSON shows them as U+FFFD."
            case .xmlInvalidChars:
                "VALUE = fraction of records (content). Characters XML 1.0 cannot hold (U+0001, U+0008, U+001B, "
                    + "U+FFFE, U+FFFF) in the title; JSON escapes them, podcast feeds carry them raw."
            case .formulaStrings:
                "VALUE = fraction of records (content). Titles that start with =, +, - or @ (spreadsheet formulas)."
            case .feedVariants:
                "VALUE = fraction of podcast feeds (content). Each carries one of what real hosts serve, in turn by "
                    + "podcast: a NUL byte, which XML cannot hold (in itunes:keywords, before the items), enclosures relative to an xml:base, "
                    + "a move announced by <redirect><newLocation> or itunes:new-feed-url, a 301 to "
                    + "/feeds/moved/{id}.xml (the new address serves the plain feed), a second enclosure per item, "
                    + "a Latin-1 body with neither an encoding declaration nor a charset."
            case .deadFeedHost:
                "VALUE = fraction of podcasts (content). Their feedUrl is on feeds2.storesim.test (mapped to "
                    + "/feeds2 on the simulator), a host that answers every request with 503."
            }
        }
    }

    /// How long the `timeout` fault holds an answer: past a short client
    /// timeout, within the server's shutdown grace period.
    public static let timeoutHoldSeconds = 2.0
    /// `drift` stops inserting after this many requests of one crawl, so a
    /// crawl always reaches the end of the list.
    static let maxDriftSteps = 5

    private(set) var values: [Kind: Double] = [:]

    /// No faults.
    public static let none = FaultPlan()

    /// No faults (the same as ``none``); build plans with ``parse(_:)``.
    public init() {}

    /// True when no fault is configured.
    public var isEmpty: Bool { values.isEmpty }

    /// True when a fault that changes the world's content is configured.
    public var hasContentFaults: Bool { values.keys.contains { $0.isContent } }

    func value(_ kind: Kind) -> Double? { values[kind] }

    /// The canonical specs, in a fixed order (parses back to an equal plan).
    public var specs: [String] {
        Kind.allCases.compactMap { kind in
            values[kind].map { "\(kind.rawValue):\(Self.format($0))" }
        }
    }

    /// The specs joined by spaces, or `none`.
    public var description: String { isEmpty ? "none" : specs.joined(separator: " ") }

    private static func format(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e9 ? String(Int(value)) : String(value)
    }

    /// Parses specs such as `"rate-limit-403:0.2"`, `"http-500:0.1"`,
    /// `"burst-503:3"`, `"latency:50"`, `"drift:2"`; a name without a value
    /// takes its default. A probability of 0 leaves that fault off.
    /// - Throws: ``FaultPlanError`` for unknown names, bad values or a name given twice.
    public static func parse(_ specs: [String]) throws -> FaultPlan {
        var plan = FaultPlan()
        var seen = Set<Kind>()
        for raw in specs {
            let spec = raw.trimmingCharacters(in: .whitespaces)
            guard !spec.isEmpty else {
                throw FaultPlanError(spec: raw, reason: "an empty fault spec; give NAME[:VALUE], e.g. http-500:0.1")
            }
            let parts = spec.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            let name = parts[0].trimmingCharacters(in: .whitespaces).lowercased()
            guard let kind = Kind(rawValue: name) else {
                throw FaultPlanError(spec: raw, reason: "unknown fault '\(name)'; valid faults: "
                    + Kind.allCases.map(\.rawValue).joined(separator: ", "))
            }
            guard seen.insert(kind).inserted else {
                throw FaultPlanError(spec: raw, reason: "'\(name)' is given more than once")
            }
            var value = kind.defaultValue
            if parts.count > 1 {
                let text = parts[1].trimmingCharacters(in: .whitespaces)
                guard let number = Double(text), number.isFinite else {
                    throw FaultPlanError(spec: raw, reason: "'\(text)' is not a number; \(expectation(kind))")
                }
                value = number
            }
            switch kind.value {
            case .probability:
                guard (0...1).contains(value) else {
                    throw FaultPlanError(spec: raw, reason: expectation(kind))
                }
            case .count(let range):
                guard value == value.rounded(), range.contains(Int(exactly: value) ?? Int.min) else {
                    throw FaultPlanError(spec: raw, reason: expectation(kind))
                }
            case .milliseconds(let range):
                guard range.contains(value) else {
                    throw FaultPlanError(spec: raw, reason: expectation(kind))
                }
            }
            if value > 0 { plan.values[kind] = value }
        }
        return plan
    }

    private static func expectation(_ kind: Kind) -> String {
        switch kind.value {
        case .probability: "\(kind.rawValue) takes a probability between 0 and 1, e.g. \(kind.rawValue):0.1"
        case .count(let range):
            "\(kind.rawValue) takes a whole number from \(range.lowerBound) to \(range.upperBound), e.g. \(kind.rawValue):3"
        case .milliseconds(let range):
            "\(kind.rawValue) takes milliseconds from \(format(range.lowerBound)) to \(format(range.upperBound)), e.g. \(kind.rawValue):50"
        }
    }

    /// For `--help` and the README: every fault name with what it does and its VALUE.
    public static let documentation: [(name: String, description: String)] = Kind.allCases.map { kind in
        (name: kind.rawValue, description: (kind.isContent ? "[content] " : "[transient] ") + kind.summary)
    }
}

/// A fault spec that could not be parsed; the description says what is valid.
public struct FaultPlanError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The spec as given.
    public var spec: String
    /// What is wrong and what would be valid.
    public var reason: String

    /// `invalid fault spec 'X': why, and what would be valid`.
    public var description: String { "invalid fault spec '\(spec)': \(reason)" }
}
