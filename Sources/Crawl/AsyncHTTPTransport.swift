import AsyncHTTPClient
import Foundation
import NIOCore
// Named for its connection errors only (a dependency of AsyncHTTPClient, not a new one).
import NIOPosix

/// ``HTTPTransport`` over AsyncHTTPClient (connection pooling, TLS with
/// certificate verification, gzip), with one timeout for the whole exchange,
/// the body included.
public final class AsyncHTTPTransport: HTTPTransport {
    private let client: HTTPClient
    /// One client per proxy the environment names (at most two: http, https);
    /// hosts that `NO_PROXY` excludes use `client`, which has none.
    private let proxied: [ProxyEnvironment.Server: HTTPClient]
    private let proxies: ProxyEnvironment
    private let maxBodyBytes: Int

    /// - Parameters:
    ///   - maxBodyBytes: a page larger than this is refused instead of filling memory.
    ///   - proxies: the proxies to use (by default `HTTPS_PROXY`, `HTTP_PROXY` and `NO_PROXY` from the environment).
    public init(maxBodyBytes: Int = 64 << 20, proxies: ProxyEnvironment = ProxyEnvironment()) {
        var configuration = HTTPClient.Configuration()
        configuration.decompression = .enabled(limit: .ratio(200))
        // The Fetcher follows redirects itself: it paces each hop by its
        // host's rate limit and must know a feed moved for good (301/308).
        configuration.redirectConfiguration = .disallow
        configuration.httpVersion = .automatic
        // A failed connect fails the request at once with its own error: by
        // default the pool keeps retrying until the request's deadline, so a
        // refused port or a name that does not resolve cost the whole timeout
        // and arrived as a timeout, which the Fetcher retries. The Fetcher
        // decides about retries (a reset or a connect timeout is still retried).
        configuration.connectionPool.retryConnectionEstablishment = false
        self.client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var proxied: [ProxyEnvironment.Server: HTTPClient] = [:]
        for server in Set([proxies.http, proxies.https].compactMap { $0 }) {
            var withProxy = configuration
            let authorization = server.username.map { HTTPClient.Authorization.basic(username: $0, password: server.password ?? "") }
            withProxy.proxy = .server(host: server.host, port: server.port, authorization: authorization)
            proxied[server] = HTTPClient(eventLoopGroupProvider: .singleton, configuration: withProxy)
        }
        self.proxied = proxied
        self.proxies = proxies
        self.maxBodyBytes = maxBodyBytes
    }

    public func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        if let refusal = TransportError.refusal(of: request.url) { throw refusal }
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = request.method == .head ? .HEAD : .GET
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        // One deadline for the whole exchange: AsyncHTTPClient's covers the
        // request up to the response head, so the body is held to what is
        // left of it (a server trickling a byte every few seconds would
        // otherwise hold the run for as long as it likes).
        let timeout = TimeAmount.nanoseconds(Int64(timeoutSeconds * 1_000_000_000))
        let deadline = NIODeadline.now() + timeout
        let maxBodyBytes = self.maxBodyBytes
        do {
            let client = proxies.proxy(for: request.url).flatMap { proxied[$0] } ?? self.client
            let response = try await client.execute(outgoing, deadline: deadline)
            let body = try await withThrowingTaskGroup(of: ByteBuffer?.self) { group in
                // The deadline is checked as every chunk arrives, as well as raced by
                // a timer: a timer alone depends on a free thread to fire in time,
                // and a body that ends after the deadline must fail however the
                // tasks were scheduled. The timer covers a server that goes silent.
                group.addTask {
                    var collected = ByteBuffer()
                    for try await chunk in response.body {
                        guard NIODeadline.now() <= deadline else { throw TransportError.timedOut(seconds: timeoutSeconds) }
                        guard collected.readableBytes + chunk.readableBytes <= maxBodyBytes else {
                            throw TransportError.bodyTooLarge(limit: maxBodyBytes)
                        }
                        collected.writeImmutableBuffer(chunk)
                    }
                    guard NIODeadline.now() <= deadline else { throw TransportError.timedOut(seconds: timeoutSeconds) }
                    return collected
                }
                group.addTask {
                    let left = deadline - NIODeadline.now()
                    try await Task.sleep(nanoseconds: UInt64(max(0, left.nanoseconds)))
                    return nil
                }
                defer { group.cancelAll() }
                guard let first = try await group.next(), let body = first else {
                    throw TransportError.timedOut(seconds: timeoutSeconds)
                }
                return body
            }
            var headers: [String: String] = [:]
            for header in response.headers {
                let name = header.name.lowercased()
                headers[name] = headers[name].map { "\($0), \(header.value)" } ?? header.value
            }
            return HTTPResponse(url: request.url, status: Int(response.status.code), headers: headers, body: Array(body.readableBytesView))
        } catch let error as TransportError {
            throw error
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            throw .timedOut(seconds: timeoutSeconds)
        } catch {
            if let reason = Self.unreachableReason(error) {
                throw .unreachable(host: request.url.host ?? request.url.absoluteString, reason: reason)
            }
            throw .connectionFailed(String(describing: error))
        }
    }

    /// Why `error` says the host cannot be reached at all (its name does not
    /// resolve, or every address refused the connection), or nil for errors
    /// worth retrying (timeouts, resets, unreachable networks, TLS).
    static func unreachableReason(_ error: any Error) -> String? {
        if let error = error as? NIOConnectionError {
            if error.connectionErrors.isEmpty {
                // No address to try: both lookups failed or returned nothing.
                let dns = error.dnsAError ?? error.dnsAAAAError
                // The host named is the one connected to: a proxy, when one is used.
                return "\(error.host) does not resolve" + (dns.map { " (\($0))" } ?? "")
            }
            let refused = error.connectionErrors.allSatisfy { failure in
                (failure.error as? IOError)?.errnoCode == ECONNREFUSED
            }
            return refused ? "connection refused by \(error.host):\(error.port)" : nil
        }
        if let error = error as? IOError, error.errnoCode == ECONNREFUSED {
            return "connection refused"
        }
        if error is SocketAddressError.UnknownHost {
            return "its name does not resolve"
        }
        return nil
    }

    /// Closes pooled connections; call once when the run ends.
    public func shutdown() async {
        try? await client.shutdown()
        for other in proxied.values { try? await other.shutdown() }
    }
}
