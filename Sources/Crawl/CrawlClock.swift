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
        try await Task.sleep(for: .nanoseconds(Int64(seconds * 1e9)))
    }

    private static let origin = ContinuousClock.now
}
