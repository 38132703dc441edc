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
    /// Tests of Invariant 11 stop a run here as a kill would: at each
    /// ``RunStopPoint`` the run asks, and an error returned is thrown on the
    /// spot, so the store is left exactly as a `kill -9` at that instant leaves
    /// it (the run unfinished, nothing after the point written). Nil in production.
    package var stopAt: (@Sendable (RunStopPoint) -> StoreSyncError?)?

    public init(services: any UpstreamServices = LiveServices(), store: any StoreBackend = DefaultBackend(),
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

/// An instant of a run where a test may stop it as a kill would (``RunEnvironment/stopAt``).
package enum RunStopPoint: Sendable, Equatable {
    /// Every source crawled and swept (its removal passes committed), before the
    /// run's verdict is stored.
    case afterRemovalPasses
    /// The crawl's verdict stored, its exports not yet written.
    case beforeExports
}
