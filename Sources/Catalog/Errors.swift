/// A problem in a job file, with the place to fix it.
public struct JobFileIssue: Sendable, Equatable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var column: Int?
    /// Dotted path of the key, e.g. `sources[1].terms`.
    public var keyPath: String
    public var message: String

    public init(file: String, line: Int?, column: Int?, keyPath: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var place = file
        if let line { place += ":\(line)" }
        if let column { place += ":\(column)" }
        return keyPath.isEmpty ? "\(place): \(message)" : "\(place): \(keyPath): \(message)"
    }
}

/// Where an error happened, as precisely as the thrower knows it.
public enum ErrorPlace: Sendable, Equatable, CustomStringConvertible {
    /// A URL that was fetched.
    case url(String)
    /// A file, with the line and column where known (a records file, a job file).
    case file(path: String, line: Int? = nil, column: Int? = nil)
    /// A scope of a job's source.
    case scope(source: String, scope: String)
    /// A file an export writes.
    case export(path: String)
    /// The snapshot store.
    case store(String)

    public var description: String {
        switch self {
        case .url(let url): url
        case .file(let path, let line, let column):
            path + (line.map { ":\($0)" } ?? "") + (column.map { ":\($0)" } ?? "")
        case .scope(let source, let scope): "\(source)/\(scope)"
        case .export(let path): path
        case .store(let path): path
        }
    }
}

/// Everything that can make a run fail: a code to branch on, what failed,
/// where, what to do about it (written where the error is thrown, so it is
/// true for the case at hand), and the underlying cause.
///
/// Modelled on SwiftNIO's `FileSystemError`; codes are an extensible set of
/// static values (like AsyncHTTPClient's `HTTPClientError`), so a new code
/// is not a breaking change for code that switches over the known ones.
public struct StoreSyncError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        private init(_ name: String) { self.name = name }
        public var description: String { name }

        /// The job file could not be read or is invalid.
        public static let invalidJob = Code("invalid-job")
        /// A page could not be fetched after retries.
        public static let fetchFailed = Code("fetch-failed")
        /// The server did not answer within `http.timeoutSeconds`, at every attempt
        /// (a slow or stalled server, where `fetch-failed` is one that answered badly).
        public static let timeout = Code("timeout")
        /// The server says the resource does not exist (HTTP 404 or 410).
        public static let gone = Code("gone")
        /// A page arrived but could not be understood.
        public static let malformedPage = Code("malformed-page")
        /// The server rate-limited us for longer than we were willing to wait.
        public static let throttled = Code("throttled")
        /// The host's name does not resolve or it refused the connection: not
        /// retried, and nothing more is sent to it in this run.
        public static let hostUnreachable = Code("host-unreachable")
        /// The run's deadline (`http.deadlineMinutes`, `--deadline`) passed: the
        /// scope stopped at a page boundary and stays resumable.
        public static let deadlineReached = Code("deadline-reached")
        /// The circuit breaker stopped a source after consecutive failures.
        public static let circuitOpen = Code("circuit-open")
        /// The services a run talks to could not be brought up (the simulator).
        public static let upstreamUnavailable = Code("upstream-unavailable")
        /// A records file or other local input could not be read.
        public static let inputUnreadable = Code("input-unreadable")
        /// The snapshot store failed.
        public static let storage = Code("storage")
        /// Another run holds the store's lock.
        public static let locked = Code("locked")
        /// A worker's lease on a scope expired or another worker took the scope
        /// over (it was paused, partitioned or started twice): it committed
        /// nothing after that and stopped.
        public static let leaseLost = Code("lease-lost")
        /// An export could not be written; the previous file is intact.
        public static let exportFailed = Code("export-failed")
        /// The store is missing or empty where a store with history was expected
        /// (a failed copy or restore); the run refused to start over.
        public static let historyMissing = Code("history-missing")
        /// The command's arguments contradict the state they act on (e.g. `--new-store` on a store with history).
        public static let invalidArguments = Code("invalid-arguments")
        /// The run was asked to stop (SIGTERM/SIGINT) and stopped at a page
        /// boundary, unfinished; the next run resumes it.
        public static let interrupted = Code("interrupted")
        /// The store holds another job's history: two jobs on one store would
        /// overwrite each other's records and mix their exports.
        public static let storeOfAnotherJob = Code("store-of-another-job")
        /// The store's file was removed or replaced while a run wrote it.
        public static let storeLost = Code("store-lost")
        /// The store's server could not be reached or refused the connection (PostgreSQL down,
        /// a wrong password, TLS refused): nothing was read or written; the next run tries again.
        public static let storeUnreachable = Code("store-unreachable")
    }

    public var code: Code
    /// What failed, in a sentence without the place.
    public var message: String
    public var place: ErrorPlace?
    /// What the reader can do, or what happens next.
    public var remedy: String?
    /// The error underneath, if this one wraps another.
    public var cause: (any Error & Sendable)?
    /// Every problem of an invalid job file.
    public var issues: [JobFileIssue] = []
    /// The HTTP status that decided the error, where one did.
    public var httpStatus: Int?
    /// For `.throttled`: how long the server asked us to wait.
    public var retryAfterSeconds: Double?
    /// For `.locked`: who holds the lock.
    public var holder: String?

    public init(_ code: Code, _ message: String, place: ErrorPlace? = nil, remedy: String? = nil,
                cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.place = place
        self.remedy = remedy
        self.cause = cause
    }

    public var description: String {
        var text = place.map { "\($0): \(message)" } ?? message
        // A wrapper whose message already quotes its cause (most do) says it once.
        if let cause, case let said = "\(cause)", !said.isEmpty, !message.contains(said) { text += " (cause: \(said))" }
        guard !issues.isEmpty else { return remedy.map { text + ". " + $0 } ?? text }
        // A list of problems reads best with the remedy on a line of its own after it.
        text += issues.map { "\n  - \($0)" }.joined()
        return remedy.map { text + "\n" + $0 } ?? text
    }

    /// The URL in ``place``, if the error happened at one.
    public var url: String? {
        if case .url(let url)? = place { return url }
        return nil
    }

    /// The place's address alone: a URL, a file path, `source/scope`, or "".
    public var location: String {
        switch place {
        case .url(let url)?: url
        case .file(let path, _, _)?, .export(let path)?, .store(let path)?: path
        case .scope(let source, let scope)?: "\(source)/\(scope)"
        case nil: ""
        }
    }
}

extension StoreSyncError {
    /// The job file could not be read or is invalid; every problem found is listed.
    public static func invalidJob(file: String, issues: [JobFileIssue]) -> StoreSyncError {
        var error = StoreSyncError(.invalidJob, "invalid job file (\(issues.count) problem\(issues.count == 1 ? "" : "s")):",
                                   place: .file(path: file), remedy: "Fix the file and check it with `storesync validate \(file)`")
        error.issues = issues
        return error
    }

    /// No answer came within the timeout, at the last of `attempts` tries.
    public static func timedOut(url: String, seconds: Double, attempts: Int) -> StoreSyncError {
        StoreSyncError(.timeout, "could not fetch: no answer within \(CanonicalJSON.numberText(seconds)) s (gave up after \(attempts) attempt\(attempts == 1 ? "" : "s"))",
                       place: .url(url),
                       remedy: "The scope is marked incomplete, so nothing is removed; the next run fetches it again. "
                           + "A server this slow every night needs a longer http.timeoutSeconds or a lower rate")
    }

    /// A page could not be fetched (after the retries the job allows).
    public static func fetchFailed(url: String, reason: String,
                                   remedy: String = "The scope is marked incomplete, so nothing is removed; the next run fetches it again",
                                   cause: (any Error & Sendable)? = nil) -> StoreSyncError {
        StoreSyncError(.fetchFailed, "could not fetch: \(reason)", place: .url(url), remedy: remedy, cause: cause)
    }

    /// `host` cannot be reached at all (`reason`: its name does not resolve, or
    /// the connection was refused); `sent` is false for a page not asked for
    /// because an earlier request of the run found the host unreachable.
    public static func hostUnreachable(url: String, host: String, reason: String, sent: Bool = true) -> StoreSyncError {
        StoreSyncError(.hostUnreachable,
                       sent ? "could not fetch: \(host) is unreachable: \(reason)"
                            : "not sent: \(host) was found unreachable earlier in this run (\(reason))",
                       place: .url(url),
                       remedy: "Not retried, as asking again would get the same answer; the scope is marked incomplete, "
                           + "so nothing is removed, and the next run asks again. Check the host name in the job file, "
                           + "DNS and the network (or the proxy settings: HTTPS_PROXY, NO_PROXY)")
    }

    /// The server says the resource does not exist (HTTP 404 or 410).
    public static func gone(url: String, status: Int) -> StoreSyncError {
        var error = StoreSyncError(.gone, "answered HTTP \(status): it does not exist (any more)", place: .url(url),
                                   remedy: "Check the address in the job file; the scope is marked incomplete, so nothing is removed")
        error.httpStatus = status
        return error
    }

    /// A page arrived but could not be understood.
    public static func malformedPage(url: String, reason: String,
                                     remedy: String = "The scope is marked incomplete and this page changed nothing stored; "
                                         + "if every run fails here, the service changed its format") -> StoreSyncError {
        StoreSyncError(.malformedPage, "malformed page: \(reason)", place: .url(url), remedy: remedy)
    }

    /// A page of a local file could not be understood; `line`/`column` where known.
    public static func malformedFile(path: String, line: Int?, column: Int? = nil, reason: String) -> StoreSyncError {
        StoreSyncError(.malformedPage, "malformed row: \(reason)", place: .file(path: path, line: line, column: column),
                       remedy: "Fix the file at that line; nothing from this page was stored and nothing was removed")
    }

    /// A local input (a records file) could not be read.
    public static func inputUnreadable(path: String, reason: String,
                                       remedy: String = "Check that the file exists and is readable; the scope is marked incomplete, so nothing is removed")
        -> StoreSyncError {
        StoreSyncError(.inputUnreadable, "cannot read: \(reason)", place: .file(path: path), remedy: remedy)
    }

    /// The server refused us (rate limit) for longer than we were willing to wait.
    public static func throttled(url: String, host: String, retryAfterSeconds: Double?) -> StoreSyncError {
        let wait = retryAfterSeconds.map { " (the server asked to wait \($0.wholeSecondsText) s)" } ?? ""
        var error = StoreSyncError(.throttled, "rate-limited by the server\(wait)", place: .url(url),
                                   remedy: "Lower http.requestsPerMinute for \(host) in the job file; the next run fetches this scope again")
        error.retryAfterSeconds = retryAfterSeconds
        return error
    }

    /// The store's server could not be reached (``Code/storeUnreachable``).
    public static func storeUnreachable(path: String, reason: String, remedy: String? = nil,
                                        cause: (any Error & Sendable)? = nil) -> StoreSyncError {
        StoreSyncError(.storeUnreachable, reason, place: .store(path), remedy: remedy, cause: cause)
    }

    /// The snapshot store failed.
    public static func storage(path: String, reason: String, remedy: String? = nil,
                               cause: (any Error & Sendable)? = nil) -> StoreSyncError {
        StoreSyncError(.storage, reason, place: .store(path), remedy: remedy, cause: cause)
    }

    /// A worker lost its claim on `scope` (its lease ran out, or `holder` took it over).
    public static func leaseLost(store: String, scope: String, worker: String, holder: String?) -> StoreSyncError {
        StoreSyncError(.leaseLost, "worker \(worker) no longer holds \(scope): "
                       + (holder.map { "worker \($0) took it over" } ?? "its lease ran out")
                       + "; nothing more was committed, and this worker stops",
                       place: .store(store),
                       remedy: "Nothing to repair: the scope resumes from its last committed page under its new holder. "
                           + "If this repeats, raise the lease (--lease) above the longest pause a worker can see")
    }

    /// Another run holds the store's lock.
    public static func locked(store: String, holder: String) -> StoreSyncError {
        // The store leads the sentence: this is what a cron mail shows, so it reads as one.
        var error = StoreSyncError(.locked, "another run is using \(store) (\(holder)); it was left alone",
                                   remedy: "Try again when it has finished (`storesync status` shows it)")
        error.holder = holder
        return error
    }

    /// The store at `store` is missing or empty (`state`), but `evidence` (the
    /// marker a finished run left beside it) says it held history.
    public static func historyMissing(store: String, state: String, evidence: String, command: String) -> StoreSyncError {
        StoreSyncError(.historyMissing, "the store is \(state), but it held history (\(evidence)); nothing was crawled or written",
                       place: .store(store),
                       remedy: "Restore the store from a backup (the .sqlite file with its -wal file, if any) and run again; "
                           + "to start over on purpose, with every record new again, run once: \(command) --new-store")
    }

    /// The store's runs are another job's.
    public static func storeOfAnotherJob(store: String, owner: String, job: String, jobFile: String) -> StoreSyncError {
        StoreSyncError(.storeOfAnotherJob, "the store belongs to job '\(owner)' (its runs are that job's); job '\(job)' was refused and nothing was crawled or written",
                       place: .store(store),
                       remedy: "Give job '\(job)' a store of its own (`store:` in \(jobFile)). If the job was renamed, or the store is handed "
                           + "to it on purpose, run once: storesync run \(jobFile) --take-over-from \(owner)")
    }

    /// `--new-store` was given, but the store at `store` holds history (its last run is `lastRun`).
    public static func newStoreHasHistory(store: String, lastRun: Int64) -> StoreSyncError {
        StoreSyncError(.invalidArguments, "--new-store was given, but the store holds history (its last run is run \(lastRun)); it was left alone",
                       place: .store(store),
                       remedy: "Drop --new-store (it only accepts a missing or empty store, so it cannot stay in a crontab); "
                           + "to start over, move the store away first")
    }

    /// An export could not be written; the previous file is intact.
    public static func exportFailed(path: String, reason: String, remedy: String = "The previous file was left intact",
                                    cause: (any Error & Sendable)? = nil) -> StoreSyncError {
        StoreSyncError(.exportFailed, "export failed: \(reason)", place: .export(path: path), remedy: remedy, cause: cause)
    }
}
