import Catalog
import Synchronization

/// A request budget per client, as the iTunes Store keeps one (about 20
/// requests a minute per client): past it, a client is answered
/// `429 Too Many Requests` with `Retry-After` until its bucket refills,
/// while other clients are served as usual.
///
/// A client is named by its `User-Agent`: several workers on one machine
/// share an address, and the user agent is what each can set differently
/// (`--set http.userAgent=…`). Requests without one share the empty name.
public struct ClientRateLimit: Sendable, Equatable {
    /// The sustained rate each client may have.
    public var requestsPerMinute: Double
    /// Requests a client may send at once after being idle (the bucket's size).
    public var burst: Int

    /// `burst` defaults to one second's worth of requests (at least one).
    public init(requestsPerMinute: Double, burst: Int? = nil) {
        self.requestsPerMinute = requestsPerMinute
        self.burst = max(1, burst ?? min(100_000, (requestsPerMinute / 60).clampedInt ?? 1))
    }
}

/// One token bucket per client. Time is passed in (seconds on any monotonic
/// clock), so the arithmetic is checked without waiting.
final class ClientRateLimiter: Sendable {
    let limit: ClientRateLimit
    private let buckets = Mutex<[String: (tokens: Double, at: Double)]>([:])

    init(limit: ClientRateLimit) {
        self.limit = limit
    }

    /// Spends one of `client`'s tokens at time `now`: nil when the request
    /// may be served, else the seconds until the client's next token.
    func take(client: String, now: Double) -> Double? {
        let perSecond = limit.requestsPerMinute / 60
        let capacity = Double(limit.burst)
        return buckets.withLock { buckets in
            let bucket = buckets[client] ?? (capacity, now)
            // A clock read before another thread's later read can arrive second: never refill backwards.
            let elapsed = max(0, now - bucket.at)
            let tokens = min(capacity, bucket.tokens + elapsed * perSecond)
            guard tokens >= 1 else {
                buckets[client] = (tokens, max(now, bucket.at))
                return perSecond > 0 ? (1 - tokens) / perSecond : .infinity
            }
            buckets[client] = (tokens - 1, max(now, bucket.at))
            return nil
        }
    }

    /// The answer to a client past its budget. `Retry-After` is whole seconds
    /// (as HTTP has it), rounded up so a client that waits as told is served.
    static func refusal(retryAfter seconds: Double) -> SimResponse {
        let whole = seconds.rounded(.up).clampedInt.map { max(1, min($0, 366 * 86_400)) } ?? 3600
        return SimResponse(status: 429, contentType: "text/plain; charset=utf-8",
                           headers: [("Retry-After", String(whole))],
                           body: Array("Too Many Requests: this client's rate limit is exceeded".utf8))
    }
}
