import Catalog
import Foundation
import Logging

/// The services a run's requests go to: the real APIs, or a stand-in for
/// them (the simulator, a test server). The runner asks for them once per
/// run, after it knows which night it crawls, and closes them at its end.
public protocol UpstreamServices: Sendable {
    /// Whether each run crawls the next of a sequence of nights (a simulated
    /// world advances a night per finished run; the real services do not).
    var hasNights: Bool { get }

    /// Brings the services up for `night` and routes `transport` to them.
    ///
    /// - Throws: ``StoreSyncError`` with code `upstreamUnavailable` when the
    ///   services cannot be started; nothing has been fetched or stored then.
    func open(night: Int?, transport: any HTTPTransport, logger: Logger) async throws(StoreSyncError) -> UpstreamSession
}

/// Services opened for one run.
public struct UpstreamSession: Sendable {
    /// Sends the run's requests.
    public var transport: any HTTPTransport
    /// Where every source without its own `baseURL` is crawled; nil = each
    /// source kind's real address.
    public var baseURL: URL?
    /// Takes the services down; the runner calls it once, at the end of the crawl.
    public var close: @Sendable () async -> Void
    /// Sends the POSTs of a night (a WebSub hub's publish ping), routed as `transport` routes reads.
    public var poster: any HTTPPoster

    public init(transport: any HTTPTransport, baseURL: URL?, poster: any HTTPPoster = AsyncHTTPPoster(),
                close: @escaping @Sendable () async -> Void = {}) {
        self.transport = transport
        self.baseURL = baseURL
        self.poster = poster
        self.close = close
    }
}

/// The real services at their real addresses.
public struct LiveServices: UpstreamServices {
    public init() {}

    public var hasNights: Bool { false }

    public func open(night: Int?, transport: any HTTPTransport, logger: Logger) async throws(StoreSyncError) -> UpstreamSession {
        UpstreamSession(transport: transport, baseURL: nil)
    }
}
