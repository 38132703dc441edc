import Catalog
import Foundation
import SyncEngine

/// SIGTERM, SIGINT and SIGHUP for `run` and `export` (README: exit codes 143,
/// 130 and 129). SIGHUP is what a closed terminal or a `nohup`-less ssh
/// session sends a cron-like run: it is a request to stop, handled exactly as
/// SIGTERM is, not a reason to leave the run "running" with its temporaries.
///
/// `run`: the first signal asks the run to stop at the next page boundary
/// (``RunStop``); the run then marks itself interrupted, prints its summary and
/// the command exits 128 + the signal's number. A second signal exits at once,
/// after removing this process's temporaries. `export` has no page boundary
/// to stop at: the first signal removes its temporaries and exits at once
/// (every file is published by a rename, so the previous files stay whole).
final class GracefulStop: Sendable {
    let stop = RunStop()
    private let task: Task<Void, Never>

    init(job: JobSpec, exitAtFirst: Bool = false) {
        let watcher = SignalWatcher(signals: Self.stopSignals)
        let stop = self.stop
        task = Task.detached {
            for await number in watcher.stream {
                let name = Self.name(of: number)
                if !exitAtFirst, !stop.isRequested {
                    stop.request(name)
                    printToStandardError("storesync: \(name) received: stopping at the next page boundary "
                                         + "(the run resumes next time; send it again to exit at once)")
                    continue
                }
                RunStop.removeOwnTemporaries(of: job)
                printToStandardError("storesync: \(name) received: exiting now; the previous exported files are unchanged")
                // At once: the writers still running are abandoned, their temporaries are gone.
                _exit(Self.exitCode(for: number))
            }
        }
    }

    deinit { task.cancel() }

    /// The signals that ask a run to stop: the table the store's `stopped` and the exit codes are read by.
    static let stopSignals: [Int32] = NightOutcome.stopSignals.map(\.number)

    /// "SIGINT", "SIGTERM" or "SIGHUP", as the summary and the store name the reason.
    static func name(of signal: Int32) -> String {
        NightOutcome.stopSignals.first { $0.number == signal }?.name ?? "SIGTERM"
    }

    /// The shell's convention: 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
    static func exitCode(for signal: Int32) -> Int32 { 128 + signal }
}
