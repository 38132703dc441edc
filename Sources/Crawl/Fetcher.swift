import Catalog
import Foundation
import Logging
import Synchronization

/// Request counters of a run, for the summary and the run report.
public struct FetchStats: Sendable, Equatable {
    public var requests = 0
    public var retries = 0
    /// 403-with-empty-body and 429 answers.
    public var throttled = 0
    public var notModified = 0
    public var failures = 0

    public init() {}
}

/// Fetches pages politely: paced per host, retried with exponential backoff
/// and full jitter, honouring `Retry-After`, treating iTunes' empty-body 403
/// as "slow down" rather than "forbidden".
public final class Fetcher: Sendable {
    public let settings: HTTPSettings
    private let transport: any HTTPTransport
    private let clock: any CrawlClock
    private let limiter: RateLimiter
    private let random: @Sendable () -> Double
    private let logger: Logger
    private let counters = Mutex(FetchStats())

    /// - Parameter random: uniform in [0, 1), for backoff jitter; injectable for tests.
    public init(
        transport: any HTTPTransport, settings: HTTPSettings, clock: any CrawlClock = SystemCrawlClock(),
        logger: Logger = Logger(label: "storesync.crawl"),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) }
    ) {
        self.transport = transport
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.random = random
        let settingsCopy = settings
        self.limiter = RateLimiter(clock: clock, burst: settings.burst) { settingsCopy.requestsPerMinute(forHost: $0) }
    }

    public var stats: FetchStats { counters.withLock { $0 } }

    /// Returns a 2xx or 304 response; throws ``StoreSyncError`` naming the URL otherwise.
    public func get(_ url: URL, headers: [String: String] = [:]) async throws(StoreSyncError) -> HTTPResponse {
        var request = HTTPRequest(url: url, headers: headers)
        request.headers["User-Agent"] = settings.userAgent
        request.headers["Accept-Encoding"] = "gzip"
        let host = url.host ?? ""
        var attempt = 0
        while true {
            attempt += 1
            do {
                try await limiter.acquire(host: host)
            } catch {
                throw .fetchFailed(url: url.absoluteString, reason: "cancelled")
            }
            counters.withLock { $0.requests += 1 }
            let outcome: Result<HTTPResponse, TransportError>
            do {
                outcome = .success(try await transport.get(request, timeoutSeconds: settings.timeoutSeconds))
            } catch {
                outcome = .failure(error)
            }
            let verdict = Self.classify(outcome)
            switch verdict {
            case .done(let response):
                if response.status == 304 { counters.withLock { $0.notModified += 1 } }
                return response
            case .fatal(let reason):
                counters.withLock { $0.failures += 1 }
                throw .fetchFailed(url: url.absoluteString, reason: reason)
            case .retry(let reason, let throttled, let retryAfter):
                if throttled { counters.withLock { $0.throttled += 1 } }
                guard attempt < settings.maxAttempts else {
                    counters.withLock { $0.failures += 1 }
                    if throttled { throw .throttled(url: url.absoluteString, retryAfterSeconds: retryAfter) }
                    throw .fetchFailed(url: url.absoluteString, reason: "\(reason) (gave up after \(attempt) attempts)")
                }
                let delay = backoff(attempt: attempt, retryAfter: retryAfter)
                if throttled { limiter.penalize(host: host, seconds: delay) }
                counters.withLock { $0.retries += 1 }
                logger.info("retrying", metadata: [
                    "url": "\(url.absoluteString)", "reason": "\(reason)",
                    "attempt": "\(attempt + 1)", "delay_s": "\(String(format: "%.2f", delay))",
                ])
                do {
                    try await clock.sleep(seconds: delay)
                } catch {
                    throw .fetchFailed(url: url.absoluteString, reason: "cancelled")
                }
            }
        }
    }

    /// Full jitter (AWS architecture blog): uniform in [0, min(cap, base·2^n)],
    /// so clients that failed together do not retry together. A server's
    /// `Retry-After` is a floor, not a suggestion.
    func backoff(attempt: Int, retryAfter: Double?) -> Double {
        let ceiling = min(settings.backoffMaxSeconds, settings.backoffBaseSeconds * pow(2, Double(attempt - 1)))
        let jittered = random() * ceiling
        if let retryAfter { return max(retryAfter, jittered) }
        return jittered
    }

    enum Verdict {
        case done(HTTPResponse)
        case retry(reason: String, throttled: Bool, retryAfter: Double?)
        case fatal(String)
    }

    static func classify(_ outcome: Result<HTTPResponse, TransportError>) -> Verdict {
        switch outcome {
        case .failure(let error):
            switch error {
            case .invalidURL, .bodyTooLarge: return .fatal(error.description)
            case .timedOut, .connectionFailed: return .retry(reason: error.description, throttled: false, retryAfter: nil)
            }
        case .success(let response):
            let retryAfter = response.header("retry-after").flatMap(parseRetryAfter)
            switch response.status {
            case 200..<300, 304:
                return .done(response)
            case 429:
                return .retry(reason: "HTTP 429 Too Many Requests", throttled: true, retryAfter: retryAfter)
            case 403 where response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }):
                // iTunes answers an over-eager client with an empty 403.
                return .retry(reason: "HTTP 403 with an empty body (iTunes throttling)", throttled: true, retryAfter: retryAfter)
            case 500..<600:
                return .retry(reason: "HTTP \(response.status)", throttled: false, retryAfter: retryAfter)
            default:
                let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
                    .replacingOccurrences(of: "\n", with: " ")
                return .fatal("HTTP \(response.status)" + (snippet.isEmpty ? "" : ": \(snippet)"))
            }
        }
    }

    /// `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    static func parseRetryAfter(_ value: String) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed) { return max(0, seconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return max(0, date.timeIntervalSinceNow)
    }
}
