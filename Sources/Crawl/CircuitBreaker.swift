import Catalog
import Synchronization

/// Stops a source after repeated failures: once `threshold` pages in a row
/// have failed, the service is down or refusing us, and hammering it with the
/// remaining scopes would only add load and noise (those scopes end
/// incomplete, so nothing is removed on their account).
///
/// One breaker per source per run. It latches: once open it stays open, even
/// if a page already in flight succeeds afterwards, so concurrent scopes of the
/// source all see the same verdict. A success before that resets the count,
/// because only *consecutive* failures say the source is down.
package final class CircuitBreaker: Sendable {
    /// Consecutive failures that open the breaker; 0 never opens it.
    package let threshold: Int
    private let state = Mutex<(consecutive: Int, open: Bool, unreachable: Bool)>((0, false, false))

    /// Why an open breaker opened, as its messages say it.
    package var openedBecause: String {
        state.withLock { $0.unreachable ? "at once, as it was unreachable" : "after \(threshold) failed pages in a row" }
    }

    /// - Parameter threshold: consecutive failures that open the breaker; 0 (or less) never opens it.
    package init(threshold: Int) {
        self.threshold = max(0, threshold)
    }

    /// A breaker with the job's `circuitBreakerThreshold`.
    package convenience init(settings: HTTPSettings) {
        self.init(threshold: settings.circuitBreakerThreshold)
    }

    /// A page succeeded: the failure streak is over (an open breaker stays open).
    package func recordSuccess() {
        state.withLock { $0.consecutive = 0 }
    }

    /// A page failed.
    /// - Returns: whether the breaker is open now.
    @discardableResult
    package func recordFailure() -> Bool {
        state.withLock { state in
            state.consecutive += 1
            if threshold > 0, state.consecutive >= threshold { state.open = true }
            return state.open
        }
    }

    /// Opens the breaker at once (a host that does not resolve or refuses
    /// connections: no streak is needed to know it is down); a breaker whose
    /// threshold is 0 stays closed, as the job asked never to stop.
    /// - Returns: whether this call opened it (false if it was open already or never opens).
    @discardableResult
    package func trip() -> Bool {
        state.withLock { state in
            guard threshold > 0, !state.open else { return false }
            state.open = true
            state.unreachable = true
            return true
        }
    }

    /// True once `threshold` consecutive failures have happened; the source should stop.
    package var isOpen: Bool { state.withLock { $0.open } }

    /// The current failure streak (for the log line that says why a source stopped).
    package var consecutiveFailures: Int { state.withLock { $0.consecutive } }
}

/// One ``CircuitBreaker`` per host for a source's run: a dead feed host stops
/// the scopes on that host only, while the source's other hosts go on. All
/// iTunes scopes share one host, so there it behaves as a single breaker.
package final class HostCircuitBreakers: Sendable {
    package let threshold: Int
    private let breakers = Mutex<[String: CircuitBreaker]>([:])

    /// - Parameter threshold: consecutive failures on one host that open its breaker; 0 never opens one.
    package init(threshold: Int) {
        self.threshold = max(0, threshold)
    }

    /// The breaker of `host` (case-insensitive; "" for scopes that fetch nothing over HTTP).
    package func breaker(for host: String) -> CircuitBreaker {
        breakers.withLock { breakers in
            let key = host.lowercased()
            if let breaker = breakers[key] { return breaker }
            let breaker = CircuitBreaker(threshold: threshold)
            breakers[key] = breaker
            return breaker
        }
    }

    /// The hosts whose breaker is open, sorted.
    package var openHosts: [String] {
        breakers.withLock { $0.filter { $0.value.isOpen }.keys.sorted() }
    }
}
