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
