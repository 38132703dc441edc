import Catalog
import Synchronization

/// A request in flight that later callers for the same URL and headers wait
/// on instead of sending their own.
///
/// The caller that started it does the work in its own task (so the pacing
/// and backoff sleeps happen where the caller's cancellation and clock apply)
/// and hands the result to the waiters when done.
final class Flight: Sendable {
    enum Outcome: Sendable {
        case finished(Result<HTTPResponse, StoreSyncError>)
        /// The leading task was cancelled: says nothing about the page itself.
        case leaderCancelled
    }

    private struct State {
        var outcome: Outcome?
        var waiters: [Int: CheckedContinuation<Outcome?, Never>] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())

    /// Waits for the outcome; nil if the waiting task itself was cancelled
    /// first (it stops waiting at once rather than sit out the leader's backoff).
    func wait() async -> Outcome? {
        let id = state.withLock { state -> Int in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Outcome?, Never>) in
                enum Now { case ready(Outcome?), registered }
                let now = state.withLock { state -> Now in
                    if let outcome = state.outcome { return .ready(outcome) }
                    // Checked under the lock: a cancellation whose handler ran
                    // before this registration found nothing to resume, but it
                    // set the flag before running it.
                    if Task.isCancelled { return .ready(nil) }
                    state.waiters[id] = continuation
                    return .registered
                }
                if case .ready(let outcome) = now { continuation.resume(returning: outcome) }
            }
        } onCancel: {
            let continuation = state.withLock { $0.waiters.removeValue(forKey: id) }
            continuation?.resume(returning: nil)
        }
    }

    /// Hands `outcome` to every waiter, present and future. Call once.
    func finish(_ outcome: Outcome) {
        let waiters = state.withLock { state in
            state.outcome = outcome
            defer { state.waiters = [:] }
            return state.waiters
        }
        for continuation in waiters.values { continuation.resume(returning: outcome) }
    }
}
