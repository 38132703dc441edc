import Foundation
import Synchronization

/// Per-host request pacing: a token bucket refilled at `requestsPerMinute / 60`
/// tokens a second and holding at most `burst` tokens.
///
/// With the default `burst` of 1 this is plain spacing, `60 / requestsPerMinute`
/// seconds between requests, and no 60-second window ever holds more than the
/// configured number. That default is deliberate: iTunes (about 20 a minute
/// per client address) throttles on rate, and a burst at the start of each
/// minute is what gets clients an empty 403. A larger `burst` lets that many
/// requests go back to back after an idle spell; any window of 60 s then holds
/// at most `requestsPerMinute + burst - 1`.
///
/// The bucket is kept as a "theoretical arrival time" (GCRA): each caller
/// books its slot under a lock and only then sleeps on the clock, so any
/// number of concurrent callers for one host together still keep the pace;
/// the order in which they wake does not matter.
package final class RateLimiter: Sendable {
    private struct HostState {
        /// When the bucket would be full again if nobody asked in between; a
        /// request may go once `tat - tolerance` has come.
        var tat: Double
        /// The end of the latest pause the server asked for.
        var pausedUntil: Double
    }

    private let clock: any CrawlClock
    private let burst: Int
    private let limits: @Sendable (String) -> Double?
    private let hosts = Mutex<[String: HostState]>([:])

    /// - Parameters:
    ///   - burst: bucket size, the requests a host may get back to back; values below 1 count as 1.
    ///   - limits: requests per minute for a host, nil (or not positive) for unlimited.
    package init(clock: any CrawlClock, burst: Int = 1, limits: @escaping @Sendable (String) -> Double?) {
        self.clock = clock
        self.burst = max(1, burst)
        self.limits = limits
    }

    /// Waits until a request to `host` may go out, and books its slot.
    ///
    /// Throws only when the waiting task is cancelled (whatever the clock's
    /// sleep throws). Returns whether the request had to wait for its slot.
    @discardableResult
    package func acquire(host: String) async throws -> Bool {
        let host = host.lowercased()
        let perMinute = limits(host).flatMap { $0 > 0 ? $0 : nil }
        var waited = false
        while true {
            let now = clock.now()
            let slot = hosts.withLock { hosts -> Double in
                var state = hosts[host] ?? HostState(tat: now, pausedUntil: -.infinity)
                let slot: Double
                if let perMinute {
                    let interval = 60 / perMinute
                    let tolerance = Double(burst - 1) * interval
                    slot = max(now, state.tat - tolerance, state.pausedUntil)
                    state.tat = max(state.tat, slot) + interval
                    hosts[host] = state
                } else {
                    // Unlimited hosts keep no state unless paused: a run may
                    // touch thousands of podcast hosts once each.
                    slot = max(now, state.pausedUntil)
                }
                return slot
            }
            if slot > now {
                waited = true
                try await clock.sleep(seconds: slot - now)
            }
            // A pause asked for while this caller slept overrides the slot it
            // had booked: going out now would be exactly the request the
            // server just told us not to send.
            let paused = hosts.withLock { $0[host]?.pausedUntil ?? -.infinity }
            if paused <= slot { return waited }
        }
    }

    /// Pauses `host` for `seconds` from now (the server asked us to slow down):
    /// no request to it goes out before then, including those already waiting,
    /// and afterwards the pace resumes with a single token, not a full burst.
    /// Applies to unlimited hosts too.
    package func penalize(host: String, seconds: Double) {
        let host = host.lowercased()
        let now = clock.now()
        let until = now + max(0, seconds)
        let perMinute = limits(host).flatMap { $0 > 0 ? $0 : nil }
        hosts.withLock { hosts in
            var state = hosts[host] ?? HostState(tat: now, pausedUntil: -.infinity)
            state.pausedUntil = max(state.pausedUntil, until)
            if let perMinute {
                let interval = 60 / perMinute
                state.tat = max(state.tat, until + Double(burst - 1) * interval)
            }
            hosts[host] = state
        }
    }
}
