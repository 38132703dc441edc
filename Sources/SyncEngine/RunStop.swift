import Catalog
import Export
import Foundation
import Snapshot

/// A request to stop a run early (SIGTERM/SIGINT in the CLI), checked at page
/// boundaries: pages already fetched are stored or abandoned whole (each page
/// is one transaction), no new page is fetched, no removal pass runs and no
/// export starts. The run is left unfinished in the store, as a kill at a page
/// boundary leaves it, so the next run resumes it.
///
/// Safe to request from any thread (a signal handler's queue) while the run reads it.
public final class RunStop: @unchecked Sendable {
    // Guarded by `lock`: written by whoever requests the stop, read by the run's tasks.
    private let lock = NSLock()
    private var reason: String?

    public init() {}

    /// Asks the run to stop; `reason` says why, for the summary and the store
    /// (e.g. "SIGTERM"). The first request's reason is kept.
    public func request(_ reason: String) {
        lock.withLock { if self.reason == nil { self.reason = reason } }
    }

    /// Why a stop was requested; nil while the run may go on.
    public var requested: String? { lock.withLock { reason } }

    /// True once a stop was requested.
    public var isRequested: Bool { requested != nil }
}

extension RunStop {
    /// Removes what this process has half written for `job`: export
    /// temporaries under its output folder and its dry-run store copies.
    /// For a process about to exit at once (a second signal), whose writers
    /// will never finish; a later run or export removes any it races with.
    /// Returns how many were removed.
    @discardableResult
    public static func removeOwnTemporaries(of job: JobSpec) -> Int {
        AtomicFile.removeOwnTemporaries(under: URL(fileURLWithPath: job.outputDirectory))
            + SQLiteBackend.removeStaleDryRunCopies(own: true)
    }
}
