/// A JSON value as the APIs send it, kept whole so fields the connectors do
/// not know yet survive into the snapshot (schema evolution without loss).
///
/// Integers and non-integral numbers stay distinct so ids above 2^53 are exact.
public enum JSONValue: Sendable, Equatable, Hashable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    /// A number neither `Int64` nor a finite `Double` holds exactly (an id
    /// above 2^63, `1e400`, 5,000 digits), kept as the text the source wrote:
    /// a page is never failed, nor an id rounded, for a value it can store.
    case number(String)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    /// The member `key` of an object, or nil for absent keys and non-objects.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// A string, or the decimal text of a number (the APIs mix both for ids).
    public var stringValue: String? {
        switch self {
        case .string(let s): return s
        case .int(let i): return String(i)
        case .double(let d): return CanonicalJSON.numberText(d)
        case .number(let text): return text
        default: return nil
        }
    }

    /// An identifier's exact decimal text: an integer of any size (`.number`
    /// ids above 2^63 included), an integral double below 2^53, or a string of
    /// digits. Nil for anything that is not a whole number.
    public var integerText: String? {
        switch self {
        case .number(let text):
            let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
            return !digits.isEmpty && digits.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) ? text : nil
        case .string(let s):
            if let i = Int64(s.trimmingSpaces) { return String(i) }
            let trimmed = s.trimmingSpaces
            guard !trimmed.isEmpty, trimmed.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
            // Leading zeros go, as Int64 parsing drops them for shorter ids.
            let significant = trimmed.drop { $0 == "0" }
            return significant.isEmpty ? "0" : String(significant)
        default:
            return intValue.map { String($0) }
        }
    }

    /// An integer, also from integral doubles and numeric strings
    /// (`fileSizeBytes` and `genreIds` arrive as strings).
    public var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d):
            guard d.rounded() == d, abs(d) < 9.0e15 else { return nil }
            return Int64(d)
        case .string(let s): return Int64(s.trimmingSpaces)
        default: return nil
        }
    }

    public var doubleValue: Double? {
        switch self {
        case .int(let i): return Double(i)
        case .double(let d): return d
        case .number(let text): return Double(text).flatMap { $0.isFinite ? $0 : nil }
        case .string(let s): return Double(s.trimmingSpaces)
        default: return nil
        }
    }

    public var boolValue: Bool? {
        switch self {
        case .bool(let b): return b
        case .int(let i): return i != 0
        case .string(let s):
            switch s.lowercased() {
            case "true", "yes", "1": return true
            case "false", "no", "0": return false
            default: return nil
            }
        default: return nil
        }
    }

    public var arrayValue: [JSONValue]? {
        if case .array(let a) = self { return a }
        return nil
    }

    public var objectValue: [String: JSONValue]? {
        if case .object(let o) = self { return o }
        return nil
    }

    public var isNull: Bool { self == .null }
}

extension String {
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f == "\t" || f == "\r" || f == "\n" { s.removeFirst() }
        while let l = s.last, l == " " || l == "\t" || l == "\r" || l == "\n" { s.removeLast() }
        return s
    }
}

// Literals make fields written in code (tests, simulators, defaults) read as JSON does.
extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral, ExpressibleByBooleanLiteral {
    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int64) { self = .int(value) }
    public init(floatLiteral value: Double) { self = .double(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
