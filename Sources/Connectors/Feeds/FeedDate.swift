import Catalog
import Foundation

/// Dates and durations as podcast feeds write them.
///
/// Hand-parsed rather than through `DateFormatter`: a formatter needs one
/// pattern per variant (with or without weekday, seconds, zone…), is slow to
/// create and its behaviour depends on the platform's ICU; feeds need a
/// forgiving reader and a fixed output.
package enum FeedDate {
    /// A feed date (`pubDate`, `dc:date`, Atom `published`) as ISO 8601 UTC,
    /// `yyyy-MM-ddTHH:mm:ssZ`, or nil when it cannot be read.
    ///
    /// Reads RFC 822/2822 dates and the variants feeds really send: with or
    /// without (or with a full or wrong) weekday, one- or two-digit day, month
    /// names in any case (full names and `Sept` too), two-digit years, missing
    /// seconds or time, numeric offsets (`+0200`, `+02:00`, `+02`), named zones
    /// (`GMT`, `UT`, `Z`, US and common European/Asian abbreviations,
    /// `GMT+2`), a zone comment in parentheses, `day-Mon-year`, month before
    /// day; and ISO 8601 (`2020-06-19T16:58:03.5+02:00`, a bare date). A
    /// missing zone is taken as UTC. The weekday is never checked: feeds get it
    /// wrong often, and the numbers are what the author meant.
    package static func iso8601UTC(_ raw: String) -> String? {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        let bytes = Array(text.utf8)
        if bytes.count >= 10, (0x30...0x39).contains(bytes[0]), bytes[4] == UInt8(ascii: "-") {
            return iso8601(text)
        }
        return rfc822(text)
    }

    /// Milliseconds of an `itunes:duration`, read as podcast apps read it,
    /// or nil when it is none of their forms:
    /// - seconds: `3600`, with a fraction `3600.5` (or `3600,5`);
    /// - `M:SS` and `H:MM:SS`, where only the first part may be long and the
    ///   others have one or two digits whatever their value (`00:60:05` is
    ///   3605 s, `75:30` 75 minutes): apps add the parts up, they do not
    ///   check them; the last part may carry a fraction;
    /// - ISO 8601 durations (`PT1H2M3S`, `PT45M`), which some generators write.
    package static func durationMillis(_ raw: String) -> Int? {
        let text = raw.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { return nil }
        if text.first == "P" || text.first == "p" { return iso8601DurationMillis(text) }
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count <= 3 else { return nil }
        var seconds = 0.0
        for (n, part) in parts.enumerated() {
            let isLast = n == parts.count - 1
            var whole = Substring(part)
            var fraction: Substring = ""
            if isLast, let mark = part.firstIndex(where: { $0 == "." || $0 == "," }) {
                whole = part[..<mark]
                fraction = part[part.index(after: mark)...]
                guard !fraction.isEmpty, fraction.allSatisfy(\.isASCIIDigit) else { return nil }
            }
            guard !whole.isEmpty, whole.allSatisfy(\.isASCIIDigit), n == 0 || whole.count <= 2,
                  let value = Double(whole + (fraction.isEmpty ? "" : "." + fraction)) else { return nil }
            seconds = seconds * 60 + value
        }
        return millis(seconds)
    }

    /// `PnDTnHnMnS` (each part optional, at least one; a fraction on the last).
    private static func iso8601DurationMillis(_ text: String) -> Int? {
        var rest = Substring(text.uppercased()).dropFirst()
        var seconds = 0.0
        var inTime = false
        var sawPart = false
        while !rest.isEmpty {
            if rest.first == "T", !inTime {
                inTime = true
                rest = rest.dropFirst()
                continue
            }
            let number = rest.prefix { $0.isASCIIDigit || $0 == "." || $0 == "," }
            guard !number.isEmpty, let value = Double(number.replacingOccurrences(of: ",", with: ".")),
                  let unit = rest.dropFirst(number.count).first else { return nil }
            switch (unit, inTime) {
            case ("D", false): seconds += value * 86_400
            case ("H", true): seconds += value * 3_600
            case ("M", true): seconds += value * 60
            case ("S", true): seconds += value
            default: return nil  // years, months and weeks are no episode lengths
            }
            sawPart = true
            rest = rest.dropFirst(number.count + 1)
        }
        return sawPart ? millis(seconds) : nil
    }

    /// Whole milliseconds, nil beyond any plausible episode (about 31 years).
    private static func millis(_ seconds: Double) -> Int? {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else { return nil }
        return Int((seconds * 1000).rounded())
    }

    // MARK: RFC 822

    static func rfc822(_ text: String) -> String? {
        // Drop comments such as "(PDT)"; they restate the zone at best.
        var cleaned = ""
        var depth = 0
        for c in text {
            if c == "(" { depth += 1; continue }
            if c == ")" { depth = max(0, depth - 1); continue }
            if depth == 0 { cleaned.append(c == "," ? " " : c) }
        }
        var tokens = cleaned.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }).map(String.init)
        // "19-Jun-2020".
        if let dashed = tokens.firstIndex(where: { token in
            let pieces = token.split(separator: "-")
            return pieces.count == 3 && month(String(pieces[1])) != nil
        }) {
            tokens.replaceSubrange(dashed...dashed, with: tokens[dashed].split(separator: "-").map(String.init))
        }
        // A leading weekday (any alphabetic word that is not a month), checked against nothing.
        if let first = tokens.first, first.allSatisfy(\.isLetter), month(first) == nil, first.count >= 3 {
            tokens.removeFirst()
        }
        guard tokens.count >= 3 else { return nil }
        var day: Int
        var monthNumber: Int
        if let d = Int(tokens[0]), let m = month(tokens[1]) {
            day = d
            monthNumber = m
        } else if let m = month(tokens[0]), let d = Int(tokens[1]) {
            // "Jun 19 2020" (and ctime-like orders) appear in hand-written feeds.
            day = d
            monthNumber = m
        } else {
            return nil
        }
        var rest = Array(tokens[2...])
        // ctime order puts the time before the year: "Jun 19 16:58:03 2020".
        if rest.count >= 2, rest[0].contains(":"), Int(rest[1]) != nil { rest.swapAt(0, 1) }
        guard let yearToken = rest.first, yearToken.allSatisfy(\.isASCII), var year = Int(yearToken), year >= 0 else {
            return nil
        }
        // RFC 2822 §4.3: two-digit years below 50 are 20xx, others 19xx; three-digit years add 1900.
        if yearToken.count <= 2 { year += year < 50 ? 2000 : 1900 } else if yearToken.count == 3 { year += 1900 }
        rest.removeFirst()
        var hour = 0, minute = 0, second = 0
        var offsetSeconds = 0
        if let time = rest.first, time.contains(":") {
            rest.removeFirst()
            guard let hms = clock(time) else { return nil }
            (hour, minute, second) = hms
            // "4:58 PM" (rare, but cheap to honour).
            if let meridian = rest.first?.uppercased(), meridian == "AM" || meridian == "PM" {
                rest.removeFirst()
                guard (1...12).contains(hour) else { return nil }
                hour = hour % 12 + (meridian == "PM" ? 12 : 0)
            }
        }
        if let zone = rest.first {
            rest.removeFirst()
            guard let offset = zoneOffset(zone) else { return nil }
            offsetSeconds = offset
        }
        guard rest.isEmpty else { return nil }
        return format(year: year, month: monthNumber, day: day, hour: hour, minute: minute, second: second,
                      offsetSeconds: offsetSeconds)
    }

    /// `HH:MM` or `HH:MM:SS` (fractions of a second are dropped).
    static func clock(_ text: String) -> (Int, Int, Int)? {
        let parts = text.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2 || parts.count == 3 else { return nil }
        var numbers: [Int] = []
        for (n, part) in parts.enumerated() {
            var digits = Substring(part)
            if n == 2, let dot = digits.firstIndex(of: ".") { digits = digits[..<dot] }
            guard !digits.isEmpty, digits.count <= 2, digits.allSatisfy({ $0.isASCII && $0.isNumber }),
                  let value = Int(digits) else { return nil }
            numbers.append(value)
        }
        return (numbers[0], numbers[1], numbers.count == 3 ? numbers[2] : 0)
    }

    static func month(_ name: String) -> Int? {
        let key = name.lowercased()
        let months = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"]
        let full = ["january", "february", "march", "april", "may", "june", "july", "august", "september",
                    "october", "november", "december"]
        if let i = months.firstIndex(of: key) ?? full.firstIndex(of: key) { return i + 1 }
        if key == "sept" { return 9 }
        // "Jun." and similar abbreviations with a full stop.
        if key.hasSuffix("."), let i = months.firstIndex(of: String(key.dropLast())) { return i + 1 }
        return nil
    }

    /// Named zones feeds use, in seconds east of UTC. RFC 822's own names
    /// plus common abbreviations; ambiguous ones (IST, CST in Asia) take the
    /// meaning RFC 822 or the most common feed usage gives them. Military
    /// letters other than Z are read as UTC, as RFC 2822 §4.3 advises
    /// (RFC 822 had their signs backwards).
    static let namedZones: [String: Int] = {
        let hours: [String: Double] = [
            "UT": 0, "UTC": 0, "GMT": 0, "Z": 0, "WET": 0,
            "EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
            "AKST": -9, "AKDT": -8, "HST": -10, "AST": -4, "ADT": -3, "NST": -3.5, "NDT": -2.5,
            "BST": 1, "CET": 1, "CEST": 2, "MET": 1, "MEST": 2, "WEST": 1, "EET": 2, "EEST": 3, "MSK": 3,
            // India rather than Ireland: the far more common meaning in feeds.
            "IST": 5.5, "JST": 9, "KST": 9, "HKT": 8, "SGT": 8, "AWST": 8, "ACST": 9.5, "ACDT": 10.5,
            "AEST": 10, "AEDT": 11, "NZST": 12, "NZDT": 13,
        ]
        return hours.mapValues { Int($0 * 3600) }
    }()

    /// `+0200`, `-05:00`, `+02`, `GMT`, `GMT+2`, `UTC-05:30`, a military letter.
    static func zoneOffset(_ zone: String) -> Int? {
        let upper = zone.uppercased()
        if let named = namedZones[upper] { return named }
        if upper.count == 1, let c = upper.first, c.isLetter, c != "J" { return 0 }
        var rest = Substring(upper)
        for prefix in ["GMT", "UTC", "UT"] where rest.hasPrefix(prefix) && rest.count > prefix.count {
            rest = rest.dropFirst(prefix.count)
            break
        }
        guard let sign = rest.first, sign == "+" || sign == "-" else { return nil }
        let digits = rest.dropFirst().filter { $0 != ":" }
        guard !digits.isEmpty, digits.count <= 4, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        let hours: Int
        let minutes: Int
        switch digits.count {
        case 1, 2: hours = Int(digits)!; minutes = 0
        case 3: hours = Int(digits.prefix(1))!; minutes = Int(digits.suffix(2))!
        default: hours = Int(digits.prefix(2))!; minutes = Int(digits.suffix(2))!
        }
        guard hours <= 18, minutes < 60 else { return nil }
        return (sign == "-" ? -1 : 1) * (hours * 3600 + minutes * 60)
    }

    // MARK: ISO 8601

    /// `YYYY-MM-DD[Thh:mm[:ss[.fff]]][Z|±hh[:]mm]`, `T` or a space between.
    static func iso8601(_ text: String) -> String? {
        let chars = Array(text.utf8)
        func number(_ from: Int, _ count: Int) -> Int? {
            guard from + count <= chars.count else { return nil }
            var value = 0
            for i in from..<(from + count) {
                guard chars[i] >= 0x30, chars[i] <= 0x39 else { return nil }
                value = value * 10 + Int(chars[i] - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), chars[4] == UInt8(ascii: "-"), let month = number(5, 2),
              chars.count > 7, chars[7] == UInt8(ascii: "-"), let day = number(8, 2) else { return nil }
        var i = 10
        var hour = 0, minute = 0, second = 0
        if i < chars.count, chars[i] == UInt8(ascii: "T") || chars[i] == UInt8(ascii: "t") || chars[i] == 0x20 {
            guard let h = number(i + 1, 2), i + 3 < chars.count, chars[i + 3] == UInt8(ascii: ":"),
                  let m = number(i + 4, 2) else { return nil }
            hour = h
            minute = m
            i += 6
            if i < chars.count, chars[i] == UInt8(ascii: ":") {
                guard let s = number(i + 1, 2) else { return nil }
                second = s
                i += 3
                if i < chars.count, chars[i] == UInt8(ascii: ".") || chars[i] == UInt8(ascii: ",") {
                    i += 1
                    while i < chars.count, chars[i] >= 0x30, chars[i] <= 0x39 { i += 1 }
                }
            }
        }
        var offset = 0
        if i < chars.count {
            let zone = String(decoding: chars[i...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
            if !zone.isEmpty {
                // ISO 8601 knows only Z and numeric offsets.
                guard zone == "Z" || zone == "z" || zone.hasPrefix("+") || zone.hasPrefix("-"),
                      let parsed = zoneOffset(zone) else { return nil }
                offset = parsed
            }
        }
        return format(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                      offsetSeconds: offset)
    }

    // MARK: Output

    static func format(year: Int, month: Int, day: Int, hour: Int, minute: Int, second: Int,
                       offsetSeconds: Int) -> String? {
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second),
              (1...9999).contains(year) else { return nil }
        return CivilDate.utcTimestamp(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                                      offsetSeconds: offsetSeconds)
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
