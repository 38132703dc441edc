import Crawl
import Logging
import StoreSim
import SyncEngine

extension Runner {
    /// A runner wired as the CLI wires it: jobs with a `simulator:` section
    /// crawl the embedded simulator, others the given transport (or the
    /// network). Tests swap the environment, never the code under test.
    public init(job: JobSpec, logger: Logger, transport: (any HTTPTransport)? = nil, clock: any CrawlClock = SystemCrawlClock()) {
        self.init(job: job, environment: RunEnvironment(
            services: job.simulator.map(SimulatedServices.init) ?? LiveServices(), transport: transport, clock: clock,
            logger: logger))
    }
}

extension JobFileRules {
    /// The CLI's rules: standard kinds, simulator faults checked at load.
    public static let cli = JobFileRules(checkFaults: SimulatedServices.checkFaults)
}
