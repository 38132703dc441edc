import Synchronization

/// Counts the HTTP requests made on behalf of one piece of work (a page),
/// retries included, even while other work shares the same ``Fetcher``: the
/// fetcher adds to the tally of the task that asked (a task-local), so
/// concurrent pages never see each other's requests.
package final class RequestTally: Sendable {
    private let count = Mutex(0)

    package init() {}

    /// Requests made so far under this tally.
    package var requests: Int { count.withLock { $0 } }

    func add() { count.withLock { $0 += 1 } }

    /// The tally of the current task, if one is bound.
    @TaskLocal package static var current: RequestTally?
}
