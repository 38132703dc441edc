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

    /// Day count from a civil date (H. Hinnant's `days_from_civil`).
    static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let mp = (month + 9) % 12
        let doy = (153 * mp + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// Civil date from a day count (H. Hinnant's `civil_from_days`).
    var civil: (year: Int, month: Int, day: Int) {
        let z = day + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let d = doy - (153 * mp + 2) / 5 + 1
        let m = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (m <= 2 ? 1 : 0), m, d)
    }

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
}
