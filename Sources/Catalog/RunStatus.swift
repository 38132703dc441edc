/// How a run stands or ended: one type for the store, the report and the CLI.
public enum RunStatus: String, Sendable, CaseIterable {
    /// Still crawling or exporting (or killed while it was: the next start resumes it).
    case running
    /// Every scope crawled completely and every export written.
    case ok
    /// Something was left out (a scope failed or was capped, a removal was
    /// refused by the guard): what was crawled is stored, nothing was removed
    /// on the strength of an incomplete scope.
    case partial
    /// The run could not do its job (every scope failed, or an export failed).
    case failed

    /// The exit code the CLI ends with for a finished run (README: 0 ok, 1 failed, 2 partial).
    public var exitCode: Int32 {
        switch self {
        case .ok: 0
        case .partial: 2
        case .failed, .running: 1
        }
    }
}

/// What a run's requests came to: counted by the fetcher, stored with the
/// run, shown in the summary, the report and the metrics.
public struct RequestCounts: Sendable, Equatable {
    /// Requests handed to the transport, retries included.
    public var requests = 0
    public var retries = 0
    /// 403-with-empty-body and 429 answers.
    public var throttled = 0
    /// 304 Not Modified answers to conditional requests.
    public var notModified = 0
    /// Requests that ended without a usable answer after their retries.
    public var failures = 0
    /// Calls that waited for an identical request already in flight instead of sending their own.
    public var shared = 0
    /// Calls answered from the response cache, without a request.
    public var cacheHits = 0

    public init() {}
}

/// A night's outcome as every surface tells it (`run --json`, report.json,
/// the metrics, the webhook, `status`, `status --json`, the summary, the
/// exit code): one value, rendered by each, so none can disagree.
public enum NightOutcome: Sendable, Equatable {
    /// Crawling or exporting now (or a run whose exports are pending).
    case running
    /// Ended: ok, partial or failed.
    case ended(RunStatus)
    /// Stopped by a signal (its name: SIGTERM, SIGINT, SIGHUP) at a page
    /// boundary, or killed without a word (`signal` nil: the process died,
    /// no exit code is known); unfinished, the next run resumes it.
    case interrupted(signal: String?)
    /// Stopped at its deadline at a page boundary: partial now (exit 2), unfinished, resumed by the next run.
    case deadline
    /// Refused before a run began or could be read: the error's code
    /// (`locked`, `invalid-job`, `store-lost`, `store-unreachable`…) and the CLI's exit code for it.
    case refused(code: String, exitCode: Int32)

    /// A night refused by `error` before it began (or before its report could
    /// be read), with the exit code README gives: 64 an invalid job or
    /// arguments (or a store of another job), 3 the lock held, 75 a worker's
    /// lease lost, 1 anything else (the store lost or unreachable…).
    public static func refused(_ error: StoreSyncError) -> NightOutcome {
        let exitCode: Int32 = switch error.code {
        case .invalidJob, .invalidArguments, .storeOfAnotherJob: 64
        case .locked: 3
        case .leaseLost: 75
        default: 1
        }
        return .refused(code: error.code.name, exitCode: exitCode)
    }

    /// What `runs.stopped` holds for a run stopped at its deadline.
    public static let deadlineMark = "deadline"

    /// The outcome of a stored run: its status, how its last attempt stopped
    /// (`runs.stopped`: a signal's name or ``deadlineMark``), whether its
    /// exports are still to be written, and whether a process holds its lock now.
    public static func of(status: RunStatus, stopped: String?, exportsPending: Bool, runningNow: Bool) -> NightOutcome {
        if status == .running {
            if runningNow { return .running }
            if stopped == deadlineMark { return .deadline }
            return .interrupted(signal: stopped)
        }
        // A run whose exports were not written has not ended as a run ends (the next run writes them).
        if exportsPending && status != .failed { return .running }
        return .ended(status)
    }

    /// The status word: `running`, `ok`, `partial`, `failed`, `interrupted`, `deadline`, or the refusal's code.
    public var status: String {
        switch self {
        case .running: "running"
        case .ended(let status): status.rawValue
        case .interrupted: "interrupted"
        case .deadline: "deadline"
        case .refused(let code, _): code
        }
    }

    /// The exit code the night's command ended with; nil while it runs, or
    /// when its process died without one (killed).
    public var exitCode: Int32? {
        switch self {
        case .running: nil
        case .ended(let status): status.exitCode
        case .interrupted(let signal): signal.flatMap(Self.exitCode(forSignal:))
        case .deadline: RunStatus.partial.exitCode
        case .refused(_, let code): code
        }
    }

    /// Whether the night ended well: only `ok` does.
    public var isOK: Bool { self == .ended(.ok) }

    /// The signals that stop a run, by name, with their numbers on Linux.
    public static let stopSignals: [(name: String, number: Int32)] = [("SIGHUP", 1), ("SIGINT", 2), ("SIGTERM", 15)]

    /// The shell's convention: 128 + the signal's number (130 SIGINT, 143 SIGTERM, 129 SIGHUP).
    public static func exitCode(forSignal name: String) -> Int32? {
        stopSignals.first { $0.name == name }.map { 128 + $0.number }
    }
}

extension RequestCounts {
    /// Adds the counts of another attempt of the same run.
    public mutating func add(_ other: RequestCounts) {
        requests += other.requests
        retries += other.retries
        throttled += other.throttled
        notModified += other.notModified
        failures += other.failures
        shared += other.shared
        cacheHits += other.cacheHits
    }
}
