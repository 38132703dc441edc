import Foundation
import Synchronization

/// Per-host request pacing: requests to one host are spaced at least
/// `60 / requestsPerMinute` seconds apart, so no window of a minute ever
/// holds more than the configured number (the real iTunes limit is about 20
/// a minute per client address, enforced by rate, not by quota).
///
/// Spacing rather than a bursty bucket is deliberate: iTunes throttles on
/// rate, and a burst at the start of each minute is what gets clients a 403.
public final class RateLimiter: Sendable {
    private let clock: any CrawlClock
    private let limits: @Sendable (String) -> Double?
    private let nextSlot = Mutex<[String: Double]>([:])

    /// - Parameter limits: requests per minute for a host, nil for unlimited.
    public init(clock: any CrawlClock, limits: @escaping @Sendable (String) -> Double?) {
        self.clock = clock
        self.limits = limits
    }

    /// Waits until a request to `host` may go out, and books its slot.
    public func acquire(host: String) async throws {
        guard let perMinute = limits(host), perMinute > 0 else { return }
        let interval = 60 / perMinute
        let now = clock.now()
        let slot = nextSlot.withLock { slots -> Double in
            let slot = max(now, slots[host] ?? now)
            slots[host] = slot + interval
            return slot
        }
        try await clock.sleep(seconds: slot - now)
    }

    /// Pushes every later request to `host` back (the server asked us to slow down).
    public func penalize(host: String, seconds: Double) {
        let until = clock.now() + seconds
        nextSlot.withLock { slots in slots[host] = max(slots[host] ?? until, until) }
    }
}
