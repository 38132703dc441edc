import Catalog
import Crawl
import Foundation
import Logging

/// The simulator as the services a run talks to: each run starts it for the
/// night it crawls, on a free loopback port, and routes every request there,
/// including the fixed `*.storesim.test` hosts its bodies name. A job with a
/// `simulator:` section runs with these (the CLI wires them; the engine
/// itself never links the simulator).
public struct SimulatedServices: UpstreamServices {
    public let spec: SimulatorSpec

    public init(_ spec: SimulatorSpec) {
        self.spec = spec
    }

    public var hasNights: Bool { true }

    /// A message for the first fault spec that is not understood, for a job
    /// file's `simulator.faults` (see ``FaultPlan/parse(_:)``).
    @Sendable public static func checkFaults(_ specs: [String]) -> String? {
        do {
            _ = try FaultPlan.parse(specs)
            return nil
        } catch {
            return "\(error)"
        }
    }

    public func open(night: Int?, transport: any HTTPTransport, logger: Logger) async throws(StoreSyncError) -> UpstreamSession {
        let faults: FaultPlan
        do {
            faults = try FaultPlan.parse(spec.faults)
        } catch {
            throw StoreSyncError(.upstreamUnavailable, "the simulator's faults are not understood: \(error)",
                                 remedy: "Fix simulator.faults in the job file (`storesync simulate --help` lists them)")
        }
        let world = World(config: SimulatorConfig(
            seed: spec.seed, podcastCount: spec.podcasts, productCount: spec.products,
            churn: Churn(changed: spec.changed, added: spec.added, removed: spec.removed), faults: faults))
        if !faults.isEmpty { logger.notice("simulator faults on: \(faults)") }
        // Hummingbird reports its own shutdown as an error; only real trouble is worth showing.
        var serverLogger = logger
        serverLogger.logLevel = logger.logLevel <= .debug ? .debug : .critical
        let server: SimulatorServer
        do {
            server = try await SimulatorServer.start(world: world, night: night ?? 1, logger: serverLogger)
        } catch {
            throw StoreSyncError(.upstreamUnavailable, "the embedded simulator could not start on 127.0.0.1: \(error)",
                                 remedy: "Nothing was fetched or stored; check that loopback networking works, then run again")
        }
        logger.info("simulator serving night \(night ?? 1) at \(server.baseURL.absoluteString)")
        // Simulator bodies name fixed origins (feedUrl on feeds.storesim.test…), never its ephemeral port.
        // The dead feed host (`dead-feed-host`) is a path prefix of the same server; artwork URLs name
        // iTunes' image CDN, which the simulator serves too (the artwork mirror fetches them).
        let rules: [HostMappingTransport.Rule] = [
            .init(hostSuffix: ContentFaults.deadFeedHost, baseURL: server.baseURL.appendingPathComponent("feeds2")),
            .init(hostSuffix: ".storesim.test", baseURL: server.baseURL),
            .init(hostSuffix: ".mzstatic.com", baseURL: server.baseURL),
            // Song and video previews: media files the simulator serves (MediaFiles).
            .init(hostSuffix: "audio-ssl.itunes.apple.com", baseURL: server.baseURL),
            .init(hostSuffix: "video-ssl.itunes.apple.com", baseURL: server.baseURL),
        ]
        return UpstreamSession(
            transport: HostMappingTransport(wrapping: transport, rules: rules),
            baseURL: server.baseURL,
            // The hub and the notifier a feed's `push:` names on *.storesim.test (PushEndpoints).
            poster: HostMappingPoster(wrapping: AsyncHTTPPoster(), rules: rules),
            close: { await server.shutdown() })
    }
}
