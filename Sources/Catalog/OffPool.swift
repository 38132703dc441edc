import Foundation

/// Runs `work` on a thread of its own and awaits it.
///
/// For long synchronous work called from async code (a night's exports, a
/// wait on a child process): Swift's cooperative pool has one thread per
/// core, and one held for seconds runs none of the other tasks meanwhile (a
/// crawl's fetches, a webhook, a simulator's answers), which then miss
/// their timeouts. The work itself is not cancelled with the task.
package func awaitOffPool<T: Sendable, Failure: Error>(_ work: @escaping @Sendable () throws(Failure) -> T) async throws(Failure) -> T {
    let result: Result<T, Failure> = await withCheckedContinuation { continuation in
        Thread {
            do throws(Failure) {
                continuation.resume(returning: .success(try work()))
            } catch {
                continuation.resume(returning: .failure(error))
            }
        }.start()
    }
    return try result.get()
}

/// An executor whose jobs run on a dispatch queue of its own, outside Swift's
/// cooperative pool: for async work that a thread blocked in synchronous
/// code waits on (a PostgreSQL `COPY`, whose client API is async, sent by a
/// store whose interface is synchronous). On the cooperative pool, such a
/// task may find every thread of the pool blocked waiting for it, and never run.
package final class OffPoolExecutor: TaskExecutor {
    package static let shared = OffPoolExecutor()
    private let queue = DispatchQueue(label: "storesync.off-pool")

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
