import Foundation

/// Time as the crawler sees it, injectable so pacing and backoff are tested
/// without real waiting.
public protocol CrawlClock: Sendable {
    /// Seconds since an arbitrary fixed origin.
    func now() -> Double
    func sleep(seconds: Double) async throws
}

/// The real clock (monotonic).
public struct SystemCrawlClock: CrawlClock {
    public init() {}

    public func now() -> Double {
        let t = ContinuousClock.now.duration(to: Self.origin)
        return -Double(t.components.seconds) - Double(t.components.attoseconds) / 1e18
    }

    public func sleep(seconds: Double) async throws {
        guard seconds > 0 else { return }
        // Bounded: a pause computed from outside numbers (a rate, a fleet size)
        // must neither trap the conversion nor outlast the night by years.
        let bounded = min(seconds, Self.longestSleepSeconds)
        try await Task.sleep(for: .nanoseconds(Int64(bounded * 1e9)))
    }

    private static let origin = ContinuousClock.now
    /// A year and a day: longer than any run's deadline allows.
    static let longestSleepSeconds: Double = 366 * 86_400
}
