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
/// Endpoints (real paths, real wire formats):
/// - `GET /search?term=&media=podcast&limit=&offset=&country=` — iTunes Search, raw layout;
/// - `GET /api/products?page_no=&items_per_page=` — marketplace list, with ETag / `If-None-Match`;
/// - `GET /api/products/{id}` — marketplace detail;
/// - `GET /healthChecker`.
///
/// Start it with ``start(world:night:host:port:logger:)``; always end it with
/// ``shutdown()``, which releases the port.
public final class SimulatorServer: Sendable {
    /// `http://host:port`, with the port the OS chose when asked for port 0.
    public let baseURL: URL
    private let state: ServerState
    private let serviceGroup: ServiceGroup
    private let runTask: Task<Result<Void, any Error>, Never>

    /// How long open requests may take to finish on shutdown before their connections are cut.
    static let gracePeriod: Duration = .seconds(2)

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
    /// Throws when the address cannot be bound (e.g. the port is in use).
    public static func start(world: World, night: Int, host: String = "127.0.0.1", port: Int = 0,
                             logger: Logger = Logger(label: "storesim")) async throws -> SimulatorServer {
        let state = ServerState(world: world, night: night)
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: CountingMiddleware(state: state))
        Self.addRoutes(to: router, state: state)

        let (ports, portContinuation) = AsyncStream.makeStream(of: Int.self)
        let urlHost = host.contains(":") ? "[\(host)]" : host
        let app = Application(
            router: router,
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

    /// Stops the server and returns when it has stopped: the listening socket
    /// is closed (the port is free again), idle keep-alive connections are
    /// closed, and requests being answered finish first (cut after
    /// two seconds). Safe to call more than once, and concurrently.
    public func shutdown() async {
        await serviceGroup.triggerGracefulShutdown()
        _ = await runTask.value
    }

    // MARK: Routes

    private static func addRoutes(to router: Router<BasicRequestContext>, state: ServerState) {
        router.get("search") { request, _ -> Response in
            Self.response(Endpoints.search(world: state.world, night: state.night,
                                           query: QueryParameters(request.uri.query), baseURL: World.defaultBaseURL))
        }
        router.get("api/products") { request, _ -> Response in
            Self.response(Endpoints.productList(world: state.world, night: state.night,
                                                query: QueryParameters(request.uri.query),
                                                ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        router.get("api/products/:id") { request, context -> Response in
            Self.response(Endpoints.productDetail(world: state.world, night: state.night,
                                                  id: context.parameters.get("id") ?? "",
                                                  ifNoneMatch: request.headers[.ifNoneMatch]))
        }
        router.get("healthChecker") { _, _ -> Response in
            Self.response(Endpoints.healthCheck())
        }
    }

    private static func response(_ simulated: SimResponse) -> Response {
        var headers = HTTPFields()
        if let contentType = simulated.contentType { headers[.contentType] = contentType }
        if let etag = simulated.etag { headers[.eTag] = etag }
        let body = simulated.body.isEmpty ? ResponseBody() : ResponseBody(byteBuffer: ByteBuffer(bytes: simulated.body))
        return Response(status: HTTPResponse.Status(code: simulated.status), headers: headers, body: body)
    }
}

/// What the request handlers share: the world and the mutable serving state.
final class ServerState: Sendable {
    let world: World
    private let mutable: Mutex<(night: Int, requests: Int)>

    init(world: World, night: Int) {
        self.world = world
        mutable = Mutex((night, 0))
    }

    var night: Int { mutable.withLock { $0.night } }
    var requestCount: Int { mutable.withLock { $0.requests } }

    func setNight(_ night: Int) { mutable.withLock { $0.night = night } }
    func countRequest() { mutable.withLock { $0.requests += 1 } }
}

/// Counts every request before routing, so tests can assert how many
/// requests a crawl made (including ones answered 304 or 404).
struct CountingMiddleware<Context: RequestContext>: RouterMiddleware {
    let state: ServerState

    func handle(_ request: Request, context: Context,
                next: (Request, Context) async throws -> Response) async throws -> Response {
        state.countRequest()
        return try await next(request, context)
    }
}
