/// The type of a column of a user's own table (a records file): what a job
/// declares a column to hold (`columns: {price: real}`), or what a value shows.
///
/// Dates are kept as ISO 8601 text (the canonical convention), so `date` is
/// text that is recognised as a date; ``FieldType/of(_:)`` tells it apart.
public enum FieldType: String, Sendable, Hashable, CaseIterable {
    case integer, real, date, text

    /// The type `value` shows: a JSON integer is `integer`, any other number
    /// `real`, text that is an ISO 8601 date or date-time `date`, other text
    /// `text`. Booleans read as `integer` (0/1, as SQLite stores them), arrays
    /// and objects as `text` (their JSON); nil for null, which has no type.
    public static func of(_ value: JSONValue) -> FieldType? {
        switch value {
        case .null: nil
        case .int, .bool: .integer
        case .double: .real
        case .number(let text): text.contains(where: { $0 == "." || $0 == "e" || $0 == "E" }) ? .real : .integer
        case .string(let text): isISO8601Date(text) ? .date : .text
        case .array, .object: .text
        }
    }

    /// Whether `text` is an ISO 8601 calendar date in extended form
    /// (`2024-05-01`) or such a date with a time: `T` or a space, `hh:mm`,
    /// optional `:ss` and fraction, optional `Z` or `±hh[:mm]`
    /// (`2024-05-01T12:00:00Z`, `2024-05-01 12:00:00.5+02:00`). The date must
    /// exist (no `2023-02-29`); the time must be a time of day (a leap second
    /// `:60` is allowed).
    public static func isISO8601Date(_ text: String) -> Bool {
        var text = text
        return text.withUTF8 { isISO8601Date(bytes: $0) }
    }

    package static func isISO8601Date(bytes b: UnsafeBufferPointer<UInt8>) -> Bool {
        // The shortest form is YYYY-MM-DD; the longest sensible one is well under 64 bytes.
        guard b.count >= 10, b.count <= 64 else { return false }
        func digits(_ at: Int, _ count: Int) -> Int? {
            guard at + count <= b.count else { return nil }
            var n = 0
            for i in at..<(at + count) {
                let d = b[i] &- UInt8(ascii: "0")
                guard d < 10 else { return nil }
                n = n * 10 + Int(d)
            }
            return n
        }
        guard let year = digits(0, 4), b[4] == UInt8(ascii: "-"), let month = digits(5, 2), b[7] == UInt8(ascii: "-"),
              let day = digits(8, 2), (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year)
        else { return false }
        if b.count == 10 { return true }
        guard b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: " "),
              let hour = digits(11, 2), b.count > 13, b[13] == UInt8(ascii: ":"), let minute = digits(14, 2),
              hour < 24, minute < 60
        else { return false }
        var i = 16
        if i < b.count, b[i] == UInt8(ascii: ":") {
            guard let second = digits(i + 1, 2), second <= 60 else { return false }
            i += 3
            if i < b.count, b[i] == UInt8(ascii: ".") || b[i] == UInt8(ascii: ",") {
                i += 1
                let start = i
                while i < b.count, b[i] &- UInt8(ascii: "0") < 10 { i += 1 }
                guard i > start else { return false }
            }
        }
        if i == b.count { return true }
        switch b[i] {
        case UInt8(ascii: "Z"):
            return i + 1 == b.count
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard let offsetHours = digits(i + 1, 2), offsetHours <= 14 else { return false }
            i += 3
            if i == b.count { return true }
            if b[i] == UInt8(ascii: ":") { i += 1 }
            guard let offsetMinutes = digits(i, 2), offsetMinutes < 60 else { return false }
            return i + 2 == b.count
        default:
            return false
        }
    }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}
