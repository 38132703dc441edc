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

/// Everything that can make a run fail, each saying what failed, where, and what to do.
public enum StoreSyncError: Error, Sendable, CustomStringConvertible {
    /// The job file could not be read or is invalid; every problem found is listed.
    case invalidJob(file: String, issues: [JobFileIssue])
    /// A page could not be fetched after retries.
    case fetchFailed(url: String, reason: String)
    /// The server says the resource does not exist (HTTP 404 or 410).
    case gone(url: String, status: Int)
    /// A page arrived but could not be understood.
    case malformedPage(url: String, reason: String)
    /// The server refused us (rate limit) for longer than we were willing to wait.
    case throttled(url: String, retryAfterSeconds: Double?)
    /// The snapshot database failed.
    case storage(path: String, reason: String)
    /// Another run holds the store's lock.
    case locked(store: String, holder: String)
    /// An export could not be written; the previous file is intact.
    case exportFailed(path: String, reason: String)

    public var description: String {
        switch self {
        case .invalidJob(let file, let issues):
            let list = issues.map { "  - \($0)" }.joined(separator: "\n")
            return "invalid job file \(file) (\(issues.count) problem\(issues.count == 1 ? "" : "s")):\n\(list)"
        case .fetchFailed(let url, let reason):
            return "could not fetch \(url): \(reason). The scope is marked incomplete; the next run retries it."
        case .gone(let url, let status):
            return "\(url) answered HTTP \(status): it does not exist (any more). Check the address; the scope is marked incomplete."
        case .malformedPage(let url, let reason):
            return "malformed page \(url): \(reason). The scope is marked incomplete; nothing stored was changed by this page."
        case .throttled(let url, let retry):
            let wait = retry.map { " (server asked to wait \(Int($0)) s)" } ?? ""
            return "rate-limited by the server at \(url)\(wait). Lower the source's rate limit in the job file."
        case .storage(let path, let reason):
            return "snapshot \(path): \(reason)"
        case .locked(let store, let holder):
            return "another run is using \(store) (\(holder)); it was left alone. Try again when it has finished."
        case .exportFailed(let path, let reason):
            return "export \(path) failed: \(reason). The previous file was left intact."
        }
    }
}
