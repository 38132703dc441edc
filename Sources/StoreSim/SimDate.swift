import Catalog

/// Calendar arithmetic for the simulated world, without Foundation's
/// `DateFormatter` (locale- and time-zone-sensitive, slow for a million rows).
/// A date is a day number counted from 1970-01-01 (proleptic Gregorian, UTC).
struct SimDate: Sendable, Equatable, Comparable {
    var day: Int
    /// Seconds since midnight.
    var seconds: Int = 0

    init(day: Int, seconds: Int = 0) {
        self.day = day
        self.seconds = seconds
    }

    init(year: Int, month: Int, day: Int) {
        self.day = SimDate.days(year: year, month: month, day: day)
    }

    static func < (a: SimDate, b: SimDate) -> Bool { (a.day, a.seconds) < (b.day, b.seconds) }

    func adding(days: Int) -> SimDate { SimDate(day: day + days, seconds: seconds) }

    /// Later by `hours` (carrying into the next days).
    func adding(hours: Int) -> SimDate {
        let total = seconds + hours * 3600
        let carry = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        return SimDate(day: day + carry, seconds: total - carry * 86_400)
    }

    /// Day count from a civil date.
    static func days(year: Int, month: Int, day: Int) -> Int {
        CivilDate.days(year: year, month: month, day: day)
    }

    /// Civil date from the day count.
    var civil: (year: Int, month: Int, day: Int) { CivilDate.date(fromDays: day) }

    private static func pad(_ value: Int, _ width: Int) -> String {
        let text = String(value)
        return text.count >= width ? text : String(repeating: "0", count: width - text.count) + text
    }

    private var dateText: String {
        let c = civil
        return "\(Self.pad(c.year, 4))-\(Self.pad(c.month, 2))-\(Self.pad(c.day, 2))"
    }

    private var timeText: String {
        "\(Self.pad(seconds / 3600, 2)):\(Self.pad(seconds / 60 % 60, 2)):\(Self.pad(seconds % 60, 2))"
    }

    /// `2015-06-08T14:01:00Z` (iTunes).
    var iso8601: String { "\(dateText)T\(timeText)Z" }
    /// `2022-01-04T00:00:00.00` (marketplace list, snake era).
    var snakeEraText: String { "\(dateText)T\(timeText).00" }
    /// `2022-01-03 00:00:00.000` (marketplace detail, snake era).
    var spacedText: String { "\(dateText) \(timeText).000" }
    /// `2022-11-04T00:00:00` (marketplace, camel era).
    var camelEraText: String { "\(dateText)T\(timeText)" }
    /// `20221104`, as in the marketplace's image paths.
    var compactDay: String {
        let c = civil
        return "\(Self.pad(c.year, 4))\(Self.pad(c.month, 2))\(Self.pad(c.day, 2))"
    }

    // MARK: Mail and HTTP dates

    static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]
    static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
    static let monthNames = ["January", "February", "March", "April", "May", "June", "July", "August", "September",
                             "October", "November", "December"]

    /// 1970-01-01 was a Thursday.
    var weekday: String { Self.weekdays[((day % 7) + 7) % 7] }

    private var mailPrefix: String {
        let c = civil
        return "\(weekday), \(Self.pad(c.day, 2)) \(Self.months[c.month - 1]) \(Self.pad(c.year, 4)) \(timeText)"
    }

    /// `Mon, 01 Jan 2024 03:00:00 GMT` (HTTP's IMF-fixdate: Last-Modified).
    var httpDate: String { mailPrefix + " GMT" }
    /// `Sat, 11 Jan 2025 04:14:12 +0000` (RFC 2822: RSS pubDate, the v2 charts' `updated`).
    var rfc2822: String { mailPrefix + " +0000" }
    /// `2023-04-19T03:00:00-07:00`: the legacy charts write Cupertino time;
    /// the clock time is shown as is, so the instant is 7 hours later than UTC's.
    var pacificText: String { "\(dateText)T\(timeText)-07:00" }
    /// `2025-01-05`.
    var dateOnly: String { dateText }
    /// `April 15, 2023`.
    var longDate: String {
        let c = civil
        return "\(Self.monthNames[c.month - 1]) \(c.day), \(c.year)"
    }

    /// Seconds since 1970 (UTC).
    var epochSeconds: Int { day * 86_400 + seconds }

    /// Parses an HTTP date (IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`,
    /// RFC 850 `Sunday, 06-Nov-94 08:49:37 GMT` or asctime
    /// `Sun Nov  6 08:49:37 1994`) into seconds since 1970; nil when it is none of them.
    static func parseHTTPDate(_ text: String) -> Int? {
        let parts = text.split(whereSeparator: { $0 == " " || $0 == "-" || $0 == "," }).map(String.init)
        var day: Int?, month: Int?, year: Int?, clock: [Int]?
        for part in parts.dropFirst() {
            if let m = months.firstIndex(of: part) {
                month = m + 1
            } else if part.contains(":") {
                let fields = part.split(separator: ":").compactMap { Int($0) }
                guard fields.count == 3 else { return nil }
                clock = fields
            } else if let number = Int(part) {
                // Day first, then year, in all three formats.
                if day == nil {
                    day = number
                } else if year == nil {
                    year = number < 100 ? (number < 70 ? 2000 + number : 1900 + number) : number
                } else {
                    return nil
                }
            } else if part != "GMT" && part != "UTC" {
                return nil
            }
        }
        guard let day, let month, let year, let clock else { return nil }
        // A client's header: years outside 1…9999 would overflow the arithmetic below.
        guard (1...9999).contains(year), (1...31).contains(day), (0...23).contains(clock[0]), (0...59).contains(clock[1]),
              (0...60).contains(clock[2]) else { return nil }
        return SimDate(year: year, month: month, day: day).day * 86_400 + clock[0] * 3600 + clock[1] * 60 + clock[2]
    }
}
