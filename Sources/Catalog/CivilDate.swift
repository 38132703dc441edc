/// Proleptic Gregorian dates as day counts since 1970-01-01, by Howard
/// Hinnant's `days_from_civil`/`civil_from_days` algorithms: exact for every
/// year, no calendar object, no time zone database, no locale. Feed, chart
/// and simulator dates all go through here, so they agree to the second.
package enum CivilDate {
    /// Days since 1970-01-01 of `year-month-day`.
    package static func days(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date `days` after 1970-01-01.
    package static func date(fromDays days: Int) -> (year: Int, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }

    /// A local time at `offsetSeconds` east of UTC as `YYYY-MM-DDThh:mm:ssZ`
    /// in UTC; the offset may move the day, month or year, and a leap second
    /// rolls into the next minute. Nil when the UTC year leaves 1...9999.
    package static func utcTimestamp(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int,
                                    offsetSeconds: Int) -> String? {
        let utc = days(year: year, month: month, day: day) * 86_400 + hour * 3_600 + minute * 60 + second - offsetSeconds
        let dayCount = utc >= 0 ? utc / 86_400 : (utc - 86_399) / 86_400
        let secondsOfDay = utc - dayCount * 86_400
        let (y, m, d) = date(fromDays: dayCount)
        guard (1...9999).contains(y) else { return nil }
        return pad(y, 4) + "-" + pad(m, 2) + "-" + pad(d, 2) + "T" + pad(secondsOfDay / 3_600, 2) + ":"
            + pad(secondsOfDay / 60 % 60, 2) + ":" + pad(secondsOfDay % 60, 2) + "Z"
    }

    private static func pad(_ n: Int, _ width: Int) -> String {
        let s = String(n)
        return s.count >= width ? s : String(repeating: "0", count: width - s.count) + s
    }
}
