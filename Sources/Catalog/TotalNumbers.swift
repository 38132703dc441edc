/// Conversions that cannot trap, for numbers that came from outside (a
/// header, a page, a file, a job file, the environment).
///
/// Swift's `Int(someDouble)` traps on NaN, on an infinity and outside Int's
/// range, and a server decides what `Double("1e20")` is: one hostile
/// `Retry-After` would end the night with SIGILL. Every number read from
/// outside goes through one of these before it becomes an integer.
extension Double {
    /// The whole number nearest toward zero, clamped to Int's range; nil for NaN.
    /// `+inf` and anything above `Int.max` give `Int.max`; `-inf` gives `Int.min`.
    public var clampedInt: Int? {
        guard !isNaN else { return nil }
        // Int.max is not exactly a Double: 2^63 is the first Double that does not fit.
        if self >= 9_223_372_036_854_775_808.0 { return Int.max }
        if self < -9_223_372_036_854_775_808.0 { return Int.min }
        return Int(self)
    }

    /// This value kept within `range`; NaN gives nil.
    public func clamped(to range: ClosedRange<Double>) -> Double? {
        guard !isNaN else { return nil }
        return Swift.min(Swift.max(self, range.lowerBound), range.upperBound)
    }

    /// Whole seconds for a message ("wait 30 s"): total for any value.
    public var wholeSecondsText: String {
        guard let whole = clampedInt else { return "an unreadable number of" }
        return String(whole)
    }
}
