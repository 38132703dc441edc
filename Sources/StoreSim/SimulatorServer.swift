import Foundation
import Hummingbird
import Logging
// ServiceLifecycle comes with Hummingbird; it is imported for ServiceGroup's
// graceful shutdown, the only way to stop the server without it logging an error.
import ServiceLifecycle
import Synchronization

/// Errors from starting the simulator.
public enum SimulatorError: Error, Sendable, CustomStringConvertible {
    /// The server stopped before it reported a bound port (e.g. start was cancelled).
    case didNotStart(host: String, port: Int)

    public var description: String {
        switch self {
        case .didNotStart(let host, let port): "the simulator did not start listening on \(host):\(port)"
        }
    }
}

/// The simulated iTunes Store and marketplace, served over HTTP by Hummingbird.
///
/// Endpoints (real paths, real wire formats; see ``endpointDocumentation``):
/// iTunes Search and Lookup, the genres service, legacy and v2 charts,
/// podcast RSS feeds, and the marketplace list, detail and health check.
/// Every route answers on any host name: URLs inside bodies use fixed
/// `*.storesim.test` origins (never the ephemeral port), which a client maps
/// to ``baseURL``.
///
/// The world's ``FaultPlan`` applies: transient faults are decided per
/// request by a ``FaultEngine`` (deterministic by seed and request sequence),
/// content faults are already part of the world.
///
/// Start it with ``start(world:night:host:port:logger:)``; always end it with
/// ``shutdown()``, which releases the port.
public final class SimulatorServer: Sendable {
    /// `http://host:port`, with the port the OS chose when asked for port 0.
    public let baseURL: URL
    private let state: ServerState
    private let serviceGroup: ServiceGroup
    private let runTask: Task<Result<Void, any Error>, Never>

    /// How long open requests may take to finish on shutdown before their
    /// connections are cut (at least the `timeout` fault's hold).
    static let gracePeriod: Duration = .seconds(FaultPlan.timeoutHoldSeconds + 0.5)

    /// Every path the simulator serves, with a one-line description and an
    /// example (for `storesync simulate --help`).
    public static let endpointDocumentation: [(path: String, description: String)] = Endpoints.documentation

    private init(baseURL: URL, state: ServerState, serviceGroup: ServiceGroup,
                 runTask: Task<Result<Void, any Error>, Never>) {
        self.baseURL = baseURL
        self.state = state
        self.serviceGroup = serviceGroup
        self.runTask = runTask
    }

    deinit {
        // A server dropped without shutdown() must not keep its port forever.
        runTask.cancel()
    }

    /// Starts serving `world` on `host:port` (port 0 = any free port) and
    /// returns once the server is bound and accepting connections.
    /// `clientRateLimit` (default none) answers each client past its budget
    /// with 429 and `Retry-After`, as the iTunes Store does.
    /// Throws when the address cannot be bound (e.g. the port is in use).
    public static func start(world: World, night: Int, host: String = "127.0.0.1", port: Int = 0,
                             clientRateLimit: ClientRateLimit? = nil,
                             logger: Logger = Logger(label: "storesim")) async throws -> SimulatorServer {
        let state = ServerState(world: world, night: night, clientRateLimit: clientRateLimit)

        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let urlHost = host.contains(":") ? "[\(host)]" : host
        let app = Application(
            responder: SimResponder(state: state),
            configuration: ApplicationConfiguration(address: .hostname(host, port: port), serverName: nil),
            onServerRunning: { channel in
                let bound = channel.localAddress?.port ?? 0
                portContinuation.yield(bound)
                portContinuation.finish()
            },
            logger: logger
        )
        // No signal handlers: the simulator runs inside other programs (tests,
        // the CLI), which own their signals.
        var groupConfiguration = ServiceGroupConfiguration(services: [app], gracefulShutdownSignals: [],
                                                           cancellationSignals: [], logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = gracePeriod
        let serviceGroup = ServiceGroup(configuration: groupConfiguration)
        let runTask = Task { () -> Result<Void, any Error> in
            // If the server fails before it is running (bind error), end the
            // stream so `start` stops waiting and reports the error.
            defer { portContinuation.finish() }
            do {
                try await serviceGroup.run()
                return .success(())
            } catch {
                return .failure(error)
            }
        }

        var iterator = ports.makeAsyncIterator()
        guard let bound = await iterator.next(), bound > 0,
              let url = URL(string: "http://\(urlHost):\(bound)") else {
            runTask.cancel()
            if case .failure(let error) = await runTask.value { throw error }
            throw SimulatorError.didNotStart(host: host, port: port)
        }
        return SimulatorServer(baseURL: url, state: state, serviceGroup: serviceGroup, runTask: runTask)
    }

    /// The night the world is served at.
    public var night: Int { state.night }

    /// Serves `night` from now on; requests already being answered finish with the old night.
    public func setNight(_ night: Int) { state.setNight(night) }

    /// Requests received so far (every path, including errors and 304s).
    public var requestCount: Int { state.requestCount }

    /// The pings its WebSub hub and Podping notifier accepted, oldest first: which service, and the feed URL.
    public var pushes: [(service: String, topic: String)] { state.pushes }

    /// How many requests each transient fault has hit so far, by fault name
    /// (`drift` counts shifted pages, `latency` delayed answers,
    /// `client-rate-limit` the requests refused by the per-client limit).
    public var injectedFaults: [String: Int] { state.injectedFaults }

    /// Stops the server and returns when it has stopped: the listening socket
    /// is closed (the port is free again), idle keep-alive connections are
    /// closed, and requests being answered finish first (cut after
    /// ``gracePeriod``, which outlasts the `timeout` fault's hold). Safe to
    /// call more than once, and concurrently.
    public func shutdown() async {
        await serviceGroup.triggerGracefulShutdown()
        _ = await runTask.value
    }

    static func response(_ simulated: SimResponse) -> Response {
        var headers = HTTPFields()
        if let contentType = simulated.contentType { headers[.contentType] = contentType }
        if let etag = simulated.etag { headers[.eTag] = etag }
        if let lastModified = simulated.lastModified { headers[.lastModified] = lastModified }
        // The few extra headers the simulator sends, by their predefined names.
        for (name, value) in simulated.headers {
            switch name.lowercased() {
            case "retry-after": headers[.retryAfter] = value
            case "cache-control": headers[.cacheControl] = value
            case "location": headers[.location] = value
            case "content-length": headers[.contentLength] = value
            case "accept-ranges": headers[.acceptRanges] = value
            case "content-range": headers[.contentRange] = value
            default: assertionFailure("unsupported simulator header \(name)")
            }
        }
        let body = simulated.body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: simulated.body))
        return Response(status: HTTPResponse.Status(code: simulated.status), headers: headers, body: body)
    }
}

/// The request context: Hummingbird's basics plus a way to drop the connection (the `reset` fault).
struct SimRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    /// Closes the request's connection at once, without a response.
    let closeConnection: @Sendable () -> Void

    init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        let channel = source.channel
        closeConnection = { channel.close(promise: nil) }
    }
}

/// Answers every request: counts it, asks the fault engine how to misbehave,
/// then serves the routed endpoint (or the fault's replacement).
struct SimResponder: HTTPResponder {
    typealias Context = SimRequestContext
    let state: ServerState

    func respond(to request: Request, context: Context) async throws -> Response {
        state.countRequest()
        // The push endpoints (PushEndpoints): the one place a POST is served.
        if request.uri.path == PushEndpoints.hubPath, request.method == .post {
            let body = try await request.body.collect(upTo: 64 * 1024)
            let (answer, ping) = PushEndpoints.hub(contentType: request.headers[.contentType], body: Array(buffer: body))
            if let ping { state.remember(ping) }
            return SimulatorServer.response(answer)
        }
        if request.uri.path == PushEndpoints.podpingPath, request.method == .get {
            let (answer, ping) = PushEndpoints.podping(query: request.uri.query, authorization: request.headers[.authorization])
            if let ping { state.remember(ping) }
            return SimulatorServer.response(answer)
        }
        guard request.method == .get || request.method == .head else {
            return SimulatorServer.response(SimResponse(status: 405, contentType: "text/plain; charset=utf-8",
                                                        body: Array("Method Not Allowed".utf8)))
        }
        if let limiter = state.clientLimiter,
           let wait = limiter.take(client: request.headers[.userAgent] ?? "", now: state.secondsSinceStart) {
            state.countFault(ServerState.clientRateLimitName)
            return SimulatorServer.response(ClientRateLimiter.refusal(retryAfter: wait))
        }
        let night = state.night
        let path = request.uri.path
        let query = request.uri.query
        let decision = state.faults.decide(path: path, query: query)
        if let fault = decision.fault { state.countFault(fault.rawValue) }
        if decision.effects.shift > 0 { state.countFault(FaultPlan.Kind.drift.rawValue) }
        if decision.delayMilliseconds > 0 { state.countFault(FaultPlan.Kind.latency.rawValue) }
        if decision.delayMilliseconds > 0 {
            try? await Task.sleep(for: .milliseconds(decision.delayMilliseconds))
        }
        if decision.reset {
            context.closeConnection()
            // Nothing can be written on a closed connection; the client sees it drop.
            return SimulatorServer.response(SimResponse(status: 500, body: []))
        }
        if decision.hold {
            // Bounded: the answer comes, just later than a short client timeout.
            try? await Task.sleep(for: .seconds(FaultPlan.timeoutHoldSeconds))
        }
        var simulated = decision.replacement
            ?? (MediaFiles.isMediaPath(path)
                ? MediaFiles.respond(path: path, head: request.method == .head, range: request.headers[.range],
                                     ifNoneMatch: request.headers[.ifNoneMatch])
                : Endpoints.respond(world: state.world, night: night, path: path, query: query,
                                    conditions: Conditions(ifNoneMatch: request.headers[.ifNoneMatch],
                                                           ifModifiedSince: request.headers[.ifModifiedSince]),
                                    effects: decision.effects))
        if let damage = decision.damage {
            simulated = state.faults.damage(simulated, with: damage, sequence: decision.sequence)
        }
        if request.method == .head { simulated.body = [] }
        return SimulatorServer.response(simulated)
    }
}

/// What the request handlers share: the world and the mutable serving state.
final class ServerState: Sendable {
    let world: World
    let faults: FaultEngine
    /// Nil unless the server was started with a per-client limit.
    let clientLimiter: ClientRateLimiter?
    /// The name the per-client limit's refusals are counted under in ``injectedFaults``.
    static let clientRateLimitName = "client-rate-limit"
    private let started = ContinuousClock.now
    private let mutable: Mutex<(night: Int, requests: Int)>

    init(world: World, night: Int, clientRateLimit: ClientRateLimit? = nil) {
        self.world = world
        faults = FaultEngine(plan: world.config.faults, seed: world.config.seed)
        clientLimiter = clientRateLimit.map(ClientRateLimiter.init(limit:))
        mutable = Mutex((night, 0))
    }

    /// Monotonic seconds since the server started: the limiter's clock.
    var secondsSinceStart: Double {
        let elapsed = (ContinuousClock.now - started).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    private let faultCounts = Mutex<[String: Int]>([:])

    var night: Int { mutable.withLock { $0.night } }
    var requestCount: Int { mutable.withLock { $0.requests } }
    var injectedFaults: [String: Int] { faultCounts.withLock { $0 } }

    func countFault(_ name: String) { faultCounts.withLock { $0[name, default: 0] += 1 } }

    private let pings = Mutex<[PushEndpoints.Ping]>([])
    func remember(_ ping: PushEndpoints.Ping) { pings.withLock { $0.append(ping) } }
    var pushes: [(service: String, topic: String)] { pings.withLock { $0.map { ($0.service, $0.topic) } } }

    func setNight(_ night: Int) { mutable.withLock { $0.night = night } }
    func countRequest() { mutable.withLock { $0.requests += 1 } }
}

