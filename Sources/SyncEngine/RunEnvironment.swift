import Catalog
import Crawl
import Foundation
import Logging
import Snapshot

/// Everything a run takes from outside the job: where requests go, how time
/// passes and where messages go. The engine builds nothing of this itself,
/// so a caller (the CLI, a test, an embedding app) swaps any part without
/// touching the code under test.
public struct RunEnvironment: Sendable {
    /// The services the sources talk to: the real APIs by default; a
    /// simulator provides its own (see `StoreSim.SimulatedServices`).
    public var services: any UpstreamServices
    /// Where the job's snapshot lives and how it is locked; SQLite by default.
    public var store: any StoreBackend
    /// Sends requests; nil = a new AsyncHTTPClient for each run, shut down at its end.
    public var transport: (any HTTPTransport)?
    /// Paces requests and times backoff; tests pass a manual clock.
    public var clock: any CrawlClock
    /// The wall-clock time a run is stamped with.
    public var now: @Sendable () -> Date
    public var logger: Logger

    public init(services: any UpstreamServices = LiveServices(), store: any StoreBackend = SQLiteBackend(),
                transport: (any HTTPTransport)? = nil,
                clock: any CrawlClock = SystemCrawlClock(), now: @escaping @Sendable () -> Date = { Date() },
                logger: Logger = Logger(label: "storesync")) {
        self.services = services
        self.store = store
        self.transport = transport
        self.clock = clock
        self.now = now
        self.logger = logger
    }

    /// The real services over the network.
    public static var live: RunEnvironment { RunEnvironment() }
}
