import Catalog
import Foundation
import Logging
import Synchronization

/// Fetches pages politely: paced per host, retried with exponential backoff
/// and full jitter, honouring `Retry-After`, treating iTunes' empty-body 403
/// as "slow down" rather than "forbidden".
///
/// It also avoids asking twice: concurrent calls for the same URL and headers
/// share one request, and a 200 fetched within `cacheTTLSeconds` is answered
/// again without one. Requests carrying conditional headers (`If-None-Match`,
/// `If-Modified-Since`, any `If-*`) skip the cache, because their caller wants
/// the server's verdict on its validators, but they still share in-flight requests.
package final class Fetcher: Sendable {
    package let settings: HTTPSettings
    private let transport: any HTTPTransport
    private let clock: any CrawlClock
    private let limiter: RateLimiter
    private let random: @Sendable () -> Double
    private let logger: Logger
    /// The job's secrets, taken out of every error text a server could have put them in.
    package let redactor: Redactor

    private struct State {
        var stats = RequestCounts()
        var cache: ResponseCache
        var inFlight: [RequestKey: Flight] = [:]
        /// Hosts that asked for a pause longer than ``HTTPSettings/backoffMaxSeconds``,
        /// with when it ends: nothing more is sent to them in this run.
        var refusedUntil: [String: (until: Double, retryAfter: Double)] = [:]
        /// Hosts found unreachable (no such name, connection refused), with why:
        /// nothing more is sent to them in this run.
        var unreachable: [String: String] = [:]
        /// When a request last waited for its host's budget (its rate limit, a
        /// server's pause) or was refused for going too fast.
        var lastPacedAt = -Double.infinity
    }
    private let state: Mutex<State>

    /// - Parameters:
    ///   - random: uniform in [0, 1), for backoff jitter; injectable for tests.
    ///   - cacheMaxEntries: responses the TTL cache keeps at most (oldest dropped first).
    ///   - cacheMaxBytes: body bytes the TTL cache keeps at most (oldest dropped first).
    package init(
        transport: any HTTPTransport, settings: HTTPSettings, clock: any CrawlClock = SystemCrawlClock(),
        logger: Logger = Logger(label: "storesync.crawl"),
        random: @escaping @Sendable () -> Double = { Double.random(in: 0..<1) },
        cacheMaxEntries: Int = 4_096, cacheMaxBytes: Int = 64 << 20
    ) {
        self.transport = transport
        self.settings = settings
        self.clock = clock
        self.logger = logger
        self.random = random
        self.redactor = Redactor(secrets: settings.headers.flatMap { [$0.value, $0.secret] })
        let settingsCopy = settings
        self.limiter = RateLimiter(clock: clock, burst: settings.burst) { settingsCopy.requestsPerMinute(forHost: $0) }
        self.state = Mutex(State(cache: ResponseCache(
            ttl: settings.cacheTTLSeconds, maxEntries: cacheMaxEntries, maxBytes: cacheMaxBytes)))
    }

    package var stats: RequestCounts { state.withLock { $0.stats } }

    /// Whether, within the last `seconds`, a request waited for its host's
    /// budget (a rate limit, a server's pause) or was refused for going too
    /// fast: more requests at once would only queue behind the same budget.
    package func pacedRecently(within seconds: Double) -> Bool {
        let last = state.withLock { $0.lastPacedAt }
        return clock.now() - last <= seconds
    }

    /// Returns a 2xx or 304 response; throws ``StoreSyncError`` naming the URL otherwise.
    ///
    /// - Parameters:
    ///   - headers: sent as given; conditional GET validators are the caller's to supply.
    ///   - bypassCache: ignore (and drop) a cached response and send a fresh request whose
    ///     200 replaces it, e.g. to retry a page whose body did not decode. Such a call
    ///     does not join a request already in flight either, since that one may be
    ///     delivering the very body being retried.
    ///   - keepsResponse: false for a page nothing else in the run asks for: its 200
    ///     is not kept in the TTL cache (a cached one is still answered).
    package func get(_ url: URL, headers: [String: String] = [:], bypassCache: Bool = false, keepsResponse: Bool = true)
        async throws(StoreSyncError) -> HTTPResponse
    {
        try await fetch(url, headers: headers, bypassCache: bypassCache, keepsResponse: keepsResponse, method: .get)
    }

    /// A HEAD request, paced, retried and redirected like a GET; never cached
    /// nor shared (its answer has no body to share).
    package func head(_ url: URL, headers: [String: String] = [:]) async throws(StoreSyncError) -> HTTPResponse {
        try await fetchFromNetwork(url, headers: headers, method: .head).mapError { $0.redacted(redactor) }.get()
    }

    private func fetch(_ url: URL, headers: [String: String], bypassCache: Bool, keepsResponse: Bool, method: HTTPMethod)
        async throws(StoreSyncError) -> HTTPResponse
    {
        let key = RequestKey(url: url, headers: headers)
        let usesCache = !headers.keys.contains { $0.lowercased().hasPrefix("if-") }
        enum Step { case cached(HTTPResponse), join(Flight), lead(Flight) }
        while true {
            let now = clock.now()
            let step = state.withLock { state -> Step in
                if bypassCache {
                    state.cache.remove(key)
                } else {
                    if usesCache, let response = state.cache.lookup(key, now: now) {
                        state.stats.cacheHits += 1
                        return .cached(response)
                    }
                    if let flight = state.inFlight[key] {
                        state.stats.shared += 1
                        return .join(flight)
                    }
                }
                let flight = Flight()
                state.inFlight[key] = flight
                return .lead(flight)
            }
            switch step {
            case .cached(let response):
                return response
            case .join(let flight):
                switch await flight.wait() {
                case .finished(let result)?:
                    return try result.get()
                case .leaderCancelled?:
                    // The leader's task was cancelled, not the request refused:
                    // this caller still wants the page, so it asks again itself.
                    continue
                case nil:
                    throw .fetchFailed(url: url.absoluteString, reason: "cancelled", remedy: "The run was stopped; the next run fetches it again")
                }
            case .lead(let flight):
                let result = await fetchFromNetwork(url, headers: headers, method: method).mapError { $0.redacted(redactor) }
                let finishedAt = clock.now()
                state.withLock { state in
                    // A bypassing call that started meanwhile replaced this
                    // flight; its fresher answer is the one to keep.
                    guard state.inFlight[key] === flight else { return }
                    state.inFlight[key] = nil
                    if usesCache, keepsResponse, case .success(let response) = result, response.status == 200 {
                        state.cache.store(response, for: key, now: finishedAt)
                    }
                }
                if case .failure = result, Task.isCancelled {
                    flight.finish(.leaderCancelled)
                } else {
                    flight.finish(.finished(result))
                }
                return try result.get()
            }
        }
    }

    /// Redirects followed at most for one page, as browsers and podcast apps do.
    package static let maxRedirects = 5

    /// One page: its request with retries, then each redirect's. Redirects are
    /// followed here rather than in the transport so every hop is paced by
    /// its own host's rate limit and the caller learns where the page now
    /// lives and whether it moved for good (every hop 301 or 308).
    private func fetchFromNetwork(_ url: URL, headers: [String: String], method: HTTPMethod = .get)
        async -> Result<HTTPResponse, StoreSyncError>
    {
        var current = url
        var visited: Set<String> = [url.absoluteString]
        var permanent = true
        var hops = 0
        while true {
            let result = await fetchOnce(current, headers: headers, method: method)
            guard case .success(var response) = result else { return result }
            guard Self.redirectStatuses.contains(response.status) else {
                if hops > 0 { response.redirect = HTTPResponse.Redirect(from: url, permanent: permanent, hops: hops) }
                return .success(response)
            }
            let failure = { (reason: String) -> Result<HTTPResponse, StoreSyncError> in
                self.state.withLock { $0.stats.failures += 1 }
                return .failure(.fetchFailed(url: url.absoluteString, reason: reason,
                                             remedy: "The scope is marked incomplete, so nothing is removed; the next run asks again"))
            }
            guard let location = response.header("location")?.trimmingCharacters(in: .whitespaces),
                  let next = URL(string: location, relativeTo: current)?.absoluteURL,
                  let scheme = next.scheme?.lowercased(), scheme == "http" || scheme == "https", next.host != nil
            else {
                return failure("HTTP \(response.status) from \(current.absoluteString) without a usable http(s) Location header")
            }
            hops += 1
            guard hops <= Self.maxRedirects else {
                return failure("more than \(Self.maxRedirects) redirects (last to \(next.absoluteString))")
            }
            guard visited.insert(next.absoluteString).inserted else {
                return failure("redirect cycle: \(current.absoluteString) leads back to \(next.absoluteString)")
            }
            if response.status != 301 && response.status != 308 { permanent = false }
            logger.debug("following a redirect", metadata: [
                "from": "\(current.absoluteString)", "to": "\(next.absoluteString)", "status": "\(response.status)",
            ])
            current = next
        }
    }

    /// The statuses that send the client elsewhere with a `Location`.
    static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// One request with retries: the pacing, backoff and classification.
    private func fetchOnce(_ url: URL, headers: [String: String], method: HTTPMethod) async -> Result<HTTPResponse, StoreSyncError> {
        var request = HTTPRequest(url: url, headers: headers, method: method)
        request.headers["User-Agent"] = settings.userAgent
        request.headers["Accept-Encoding"] = "gzip"
        let host = url.host ?? ""
        // Per-host headers (an API token) go to their own host only: each
        // redirect hop comes through here with its own URL, so a hop to
        // another host does not carry them.
        for header in settings.headers(forHost: host) { request.headers[header.name] = header.value }
        var attempt = 0
        while true {
            attempt += 1
            // A host that asked for a pause longer than the job allows is not asked again this run.
            if let refusal = state.withLock({ $0.refusedUntil[host.lowercased()] }), clock.now() < refusal.until {
                state.withLock { $0.stats.failures += 1 }
                return .failure(overlongPause(url, host: host, retryAfter: refusal.retryAfter, sent: false))
            }
            // An unreachable host is not asked again this run, and costs no pacing.
            if let reason = state.withLock({ $0.unreachable[host.lowercased()] }) {
                state.withLock { $0.stats.failures += 1 }
                return .failure(.hostUnreachable(url: url.absoluteString, host: host, reason: reason, sent: false))
            }
            do {
                if try await limiter.acquire(host: host) {
                    let now = clock.now()
                    state.withLock { $0.lastPacedAt = now }
                }
            } catch {
                return .failure(.fetchFailed(url: url.absoluteString, reason: "cancelled", remedy: "The run was stopped; the next run fetches it again"))
            }
            state.withLock { $0.stats.requests += 1 }
            RequestTally.current?.add()
            let outcome: Result<HTTPResponse, TransportError>
            do {
                outcome = .success(try await transport.get(request, timeoutSeconds: settings.timeoutSeconds))
            } catch {
                outcome = .failure(error)
            }
            let verdict = Self.classify(outcome)
            switch verdict {
            case .done(let response):
                if response.status == 304 { state.withLock { $0.stats.notModified += 1 } }
                return .success(response)
            case .fatal(let reason):
                state.withLock { $0.stats.failures += 1 }
                return .failure(.fetchFailed(url: url.absoluteString, reason: reason))
            case .unreachable(let reason):
                // Paced retries would only hear the same answer (the issue measured 194 s
                // for a name that does not resolve): the page fails now, and so does
                // every later request to the host in this run.
                state.withLock {
                    $0.stats.failures += 1
                    $0.unreachable[host.lowercased()] = reason
                }
                logger.warning("\(host) is unreachable (\(reason)); nothing more is sent to it in this run")
                return .failure(.hostUnreachable(url: url.absoluteString, host: host, reason: reason))
            case .gone(let status):
                // Not retried: the server answered clearly. Counted as a failed
                // fetch (no page came of it); the caller decides whether it fails the scope.
                state.withLock { $0.stats.failures += 1 }
                return .failure(.gone(url: url.absoluteString, status: status))
            case .retry(let reason, let throttled, let retryAfter):
                if throttled {
                    let now = clock.now()
                    state.withLock {
                        $0.stats.throttled += 1
                        $0.lastPacedAt = now
                    }
                }
                if let retryAfter, retryAfter > settings.backoffMaxSeconds {
                    // Waiting would hold the run (and the store's lock) for as long as the
                    // server likes: the page fails now and the next night asks again.
                    let now = clock.now()
                    state.withLock {
                        $0.stats.failures += 1
                        $0.refusedUntil[host.lowercased()] = (now + retryAfter, retryAfter)
                    }
                    return .failure(overlongPause(url, host: host, retryAfter: retryAfter, sent: true))
                }
                guard attempt < settings.maxAttempts else {
                    state.withLock { $0.stats.failures += 1 }
                    if throttled { return .failure(.throttled(url: url.absoluteString, host: host, retryAfterSeconds: retryAfter)) }
                    if case .failure(.timedOut(let seconds)) = outcome {
                        return .failure(.timedOut(url: url.absoluteString, seconds: seconds, attempts: attempt))
                    }
                    return .failure(.fetchFailed(
                        url: url.absoluteString, reason: "\(reason) (gave up after \(attempt) attempts)"))
                }
                let delay = backoff(attempt: attempt, retryAfter: retryAfter)
                if throttled { limiter.penalize(host: host, seconds: delay) }
                state.withLock { $0.stats.retries += 1 }
                logger.info("retrying", metadata: [
                    "url": "\(url.absoluteString)", "reason": "\(reason)",
                    "attempt": "\(attempt + 1)", "delay_s": "\(String(format: "%.2f", delay))",
                ])
                do {
                    try await clock.sleep(seconds: delay)
                } catch {
                    return .failure(.fetchFailed(url: url.absoluteString, reason: "cancelled", remedy: "The run was stopped; the next run fetches it again"))
                }
            }
        }
    }

    /// The error for a server's demand to wait longer than the job allows.
    private func overlongPause(_ url: URL, host: String, retryAfter: Double, sent: Bool) -> StoreSyncError {
        var error = StoreSyncError.throttled(url: url.absoluteString, host: host, retryAfterSeconds: retryAfter)
        error.message = sent
            ? "the server asked to wait \(retryAfter.wholeSecondsText) s, more than http.backoffMaxSeconds (\(settings.backoffMaxSeconds.wholeSecondsText) s) allows"
            : "not sent: \(host) asked earlier in this run to wait \(retryAfter.wholeSecondsText) s, more than http.backoffMaxSeconds allows"
        error.remedy = "The scope is marked incomplete, so nothing is removed; the next run asks again. "
            + "Raise http.backoffMaxSeconds to wait longer, or lower http.requestsPerMinute for \(host)"
        return error
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
        /// The host's name does not resolve or it refused the connection: not retried.
        case unreachable(String)
        /// 404 or 410: the resource does not exist.
        case gone(Int)
    }

    static func classify(_ outcome: Result<HTTPResponse, TransportError>) -> Verdict {
        switch outcome {
        case .failure(let error):
            switch error {
            case .invalidURL, .bodyTooLarge: return .fatal(error.description)
            case .timedOut, .connectionFailed: return .retry(reason: error.description, throttled: false, retryAfter: nil)
            case .unreachable(_, let reason): return .unreachable(reason)
            }
        case .success(let response):
            let retryAfter = response.header("retry-after").flatMap(parseRetryAfter)
            switch response.status {
            case 200..<300, 304:
                return .done(response)
            case _ where redirectStatuses.contains(response.status):
                // Followed by the caller (``fetchFromNetwork``), one paced hop at a time.
                return .done(response)
            case 429:
                return .retry(reason: "HTTP 429 Too Many Requests", throttled: true, retryAfter: retryAfter)
            case 403 where response.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }):
                // iTunes answers an over-eager client with an empty 403.
                return .retry(reason: "HTTP 403 with an empty body (iTunes throttling)", throttled: true, retryAfter: retryAfter)
            case 500..<600:
                return .retry(reason: "HTTP \(response.status)", throttled: false, retryAfter: retryAfter)
            case 404, 410:
                return .gone(response.status)
            default:
                let snippet = String(decoding: response.body.prefix(200), as: UTF8.self)
                    .replacingOccurrences(of: "\n", with: " ")
                return .fatal("HTTP \(response.status)" + (snippet.isEmpty ? "" : ": \(snippet)"))
            }
        }
    }

    /// The longest pause a `Retry-After` is taken to ask for. Anything longer
    /// (`1e20`, `inf`, a date in year 9999) means "not tonight" just as well,
    /// and a bounded value keeps every later sum and conversion total.
    public static let longestRetryAfterSeconds: Double = 366 * 86_400

    /// `Retry-After` is either delta-seconds or an HTTP date (RFC 9110 §10.2.3).
    /// Servers also send decimals, exponents, hex floats and `inf`: any number is
    /// read, then clamped to `0 … longestRetryAfterSeconds`; NaN and text that is
    /// neither form are ignored (the ordinary backoff applies).
    public static func parseRetryAfter(_ value: String) -> Double? {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Double(trimmed) { return seconds.clamped(to: 0...longestRetryAfterSeconds) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: trimmed) else { return nil }
        return date.timeIntervalSinceNow.clamped(to: 0...longestRetryAfterSeconds)
    }
}
