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
