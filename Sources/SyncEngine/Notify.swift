import Catalog
import Crawl
import Export
import Foundation
import Logging

/// `notify:` in a job file: a webhook that receives the run report (the
/// `report.json` document) as a JSON POST when a run ends failed or partial,
/// or after every run. Cron mails nobody reads; this reaches a chat or pager.
public struct NotifySpec: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// When the webhook is called.
    public enum When: String, Sendable, CaseIterable {
        /// After a run that ended failed or partial (the default).
        case failure
        /// After every run.
        case always
    }

    /// Where the report is POSTed. Only its scheme and host are ever printed:
    /// webhook URLs often carry their token in the path.
    public var url: URL
    public var on: When
    /// Headers sent with the POST, their values from the environment
    /// (`headers: {Authorization: {env: HOOK_TOKEN, prefix: "Bearer "}}`).
    public var headers: [SecretHeader]
    /// The limit of one attempt, the response included.
    public var timeoutSeconds: Double
    /// Attempts in all, the first included; a 4xx answer other than 408 and 429 is not retried.
    public var attempts: Int
    /// The wait before the second attempt, doubled before each one after.
    public var backoffSeconds: Double

    public static let defaultTimeoutSeconds = 10.0
    public static let defaultAttempts = 3
    public static let defaultBackoffSeconds = 2.0

    public init(url: URL, on: When = .failure, headers: [SecretHeader] = [], timeoutSeconds: Double = defaultTimeoutSeconds,
                attempts: Int = defaultAttempts, backoffSeconds: Double = defaultBackoffSeconds) {
        self.url = url
        self.on = on
        self.headers = headers
        self.timeoutSeconds = timeoutSeconds
        self.attempts = attempts
        self.backoffSeconds = backoffSeconds
    }

    /// The URL as messages show it: scheme and host (and port), never the path or query.
    public var displayURL: String {
        var text = "\(url.scheme ?? "https")://\(url.host ?? "?")"
        if let port = url.port { text += ":\(port)" }
        return text
    }

    /// What `validate`, dumps and reflection show: the URL without its path,
    /// the headers by their variables.
    public var description: String {
        "notify \(displayURL) on \(on.rawValue)" + (headers.isEmpty ? "" : " with " + headers.map(\.description).joined(separator: ", "))
    }

    public var customMirror: Mirror {
        Mirror(self, children: ["url": displayURL, "on": on, "headers": headers, "timeoutSeconds": timeoutSeconds,
                                "attempts": attempts, "backoffSeconds": backoffSeconds])
    }

    /// Whether a run that ended with `outcome` is reported.
    public func wants(_ outcome: RunStatus) -> Bool {
        on == .always || outcome != .ok
    }
}

/// What became of the webhook call after a run.
public struct NotifyOutcome: Sendable, Equatable, CustomStringConvertible {
    public var delivered: Bool
    /// Attempts made.
    public var attempts: Int
    /// The last HTTP status received, if any.
    public var status: Int?
    /// Why the last attempt failed (never a header value); nil when delivered.
    public var error: String?
    /// Where it went, as ``NotifySpec/displayURL`` shows it.
    public var target: String

    public var description: String {
        let tries = "\(attempts) attempt\(attempts == 1 ? "" : "s")"
        return delivered ? "notify: run report delivered to \(target) (\(tries))"
            : "notify: the run report could not be delivered to \(target) after \(tries): \(error ?? "unknown error"); "
              + "the run's exit code is unchanged (check the webhook URL, its token variable, and that the receiver answers 2xx)"
    }
}

/// Posts a run report to a ``NotifySpec``'s webhook, with retries and backoff.
package enum Notifier {
    /// Delivers `body`; never throws: a webhook that fails is reported, it never fails the run.
    package static func deliver(_ body: [UInt8], to spec: NotifySpec, poster: any HTTPPoster, clock: any CrawlClock,
                                logger: Logger) async -> NotifyOutcome {
        var headers: [(name: String, value: String)] = [("Content-Type", "application/json"),
                                                         ("User-Agent", "storesync/\(StoreSyncVersion.current)")]
        headers += spec.headers.map { ($0.name, $0.value) }
        let tried = await Delivery.attempt(spec.attempts, backoffSeconds: spec.backoffSeconds, clock: clock,
                                           refusal: { "the receiver answered HTTP \($0)" },
                                           failed: { attempt, error in logger.debug("notify: attempt \(attempt) to \(spec.displayURL) failed: \(error)") }) {
            try await poster.post(spec.url, headers: headers, body: body, timeoutSeconds: spec.timeoutSeconds)
        }
        return NotifyOutcome(delivered: tried.error == nil, attempts: tried.attempts, status: tried.status, error: tried.error,
                             target: spec.displayURL)
    }
}

/// One request sent until it gets through: what a webhook and a feed's
/// push share. Up to `attempts` tries, the wait between them doubling from
/// `backoffSeconds`; a 4xx answer other than 408 and 429 is a refusal (a bad
/// token, a wrong path), which asking again only delays, so it is not retried.
enum Delivery {
    /// Runs `send` (which returns the HTTP status); returns the last status,
    /// the last try's error (nil when a 2xx came back) and the tries made.
    static func attempt(_ attempts: Int, backoffSeconds: Double, clock: any CrawlClock,
                        refusal: (Int) -> String, failed: (Int, String) -> Void = { _, _ in },
                        _ send: () async throws -> Int) async -> (status: Int?, error: String?, attempts: Int) {
        var status: Int?
        var error: String?
        var wait = backoffSeconds
        for attempt in 1...max(1, attempts) {
            var retry = true
            do {
                let answer = try await send()
                status = answer
                if (200..<300).contains(answer) { return (answer, nil, attempt) }
                error = refusal(answer)
                retry = !(400..<500).contains(answer) || answer == 408 || answer == 429
            } catch let thrown {
                error = "\(thrown)"
            }
            failed(attempt, error ?? "")
            guard retry, attempt < attempts else { return (status, error, attempt) }
            try? await clock.sleep(seconds: wait)
            wait *= 2
        }
        return (status, error, max(1, attempts))
    }
}

extension Runner {
    /// Calls the job's webhook after a run, if `notify:` asks for this outcome,
    /// and records what became of it in the report. A run that threw (the
    /// store missing, the lock held…) is reported too, with a short document.
    func notifyAfter(_ result: Result<RunReport, StoreSyncError>) async -> Result<RunReport, StoreSyncError> {
        guard let notify = job.notify else { return result }
        let body: String
        switch result {
        case .success(let report):
            guard notify.wants(report.outcome) else { return result }
            do {
                body = try MachineOutput.runReportJSON(job: job, runID: report.runID, report: report, store: environment.store)
            } catch {
                logger.error("notify: cannot read the run report to send: \(error.description)")
                return result
            }
        case .failure(let error):
            // The account `run --json` prints for the same refusal.
            body = MachineOutput.refusedRunJSON(jobName: job.name, error: error)
        }
        let outcome = await Notifier.deliver(Array(body.utf8), to: notify, poster: AsyncHTTPPoster(),
                                             clock: environment.clock, logger: logger)
        if outcome.delivered { logger.info("\(outcome.description)") } else { logger.error("\(outcome.description)") }
        guard case .success(var report) = result else { return result }
        report.notify = outcome
        return .success(report)
    }
}
