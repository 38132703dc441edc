import ArgumentParser
import Catalog
import Foundation
import Logging
import StoreSim
import SyncEngine

/// `storesync simulate`: serves the offline world so any job, or curl, can use it.
struct Simulate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Serve the simulated iTunes Store and marketplace on this machine.",
        discussion: Simulate.discussion
    )

    static var discussion: String {
        let endpoints = SimulatorServer.endpointDocumentation.map { "  \($0.path)\n      \($0.description)" }
        let faults = FaultPlan.documentation.map { "  \($0.name)\n      \($0.description)" }
        return """
            The world is deterministic: the same seed and night always serve the same bytes, and night N differs \
            from night N-1 by the configured churn. Point a job at it with `baseURL: http://HOST:PORT` on each source. \
            URLs inside bodies use the fixed hosts *.storesim.test so records do not change with the port.

            ENDPOINTS
            \(endpoints.joined(separator: "\n"))

            FAULTS (--fault NAME[:VALUE], repeatable)
            \(faults.joined(separator: "\n"))
            """
    }

    @Option(help: "Address to listen on.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on (0: any free port, printed at start).")
    var port = 0

    @Option(help: "World seed.")
    var seed: UInt64 = 42

    @Option(help: "The night to serve (1 = the first).")
    var night = 1

    @Option(help: "Podcasts on night 1.")
    var podcasts = 2_000

    @Option(help: "Marketplace products on night 1.")
    var products = 1_000

    @Option(name: [.customLong("fault"), .customLong("faults")],
            help: "Faults to switch on, NAME[:VALUE], repeatable or comma-separated; see the list above.")
    var faultOptions: [String] = []

    @Option(help: ArgumentHelp(
        "Refuse each client past this many requests a minute with 429 and Retry-After, as the iTunes Store does (about 20); clients are told apart by User-Agent. Off by default.",
        valueName: "n"))
    var clientRequestsPerMinute: Double?

    var faults: [String] {
        faultOptions.flatMap { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }.filter { !$0.isEmpty }
    }

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0...65535") }
        guard RunOptions.nightRange.contains(night) else {
            throw ValidationError("--night must be between \(RunOptions.nightRange.lowerBound) and \(RunOptions.nightRange.upperBound), got \(night)")
        }
        do { _ = try FaultPlan.parse(faults) } catch { throw ValidationError("\(error)") }
        if let limit = clientRequestsPerMinute, !(limit >= 0.001 && limit <= 1_000_000) {
            throw ValidationError("--client-requests-per-minute must be between 0.001 and 1000000")
        }
    }

    func run() async throws {
        LoggingSystem.bootstrap { StreamLogHandler.standardError(label: $0) }
        let plan = try FaultPlan.parse(faults)
        let world = World(config: SimulatorConfig(seed: seed, podcastCount: podcasts, productCount: products, faults: plan))
        let server = try await SimulatorServer.start(world: world, night: night, host: host, port: port,
                                                     clientRateLimit: clientRequestsPerMinute.map { ClientRateLimit(requestsPerMinute: $0) })
        // Unbuffered, so a script that started us in the background can read the address at once.
        let banner = """
            storesync simulator: night \(night), seed \(seed), faults \(plan)\(clientRequestsPerMinute.map { ", \(Int($0)) requests/minute per client" } ?? "") — serving \(server.baseURL.absoluteString)
            try: curl '\(server.baseURL.absoluteString)/search?term=news&media=podcast&limit=2'

            """
        FileHandle.standardOutput.write(Data(banner.utf8))
        // Serve until interrupted; then stop cleanly (the port is released).
        let signals = SignalWatcher(signals: GracefulStop.stopSignals)
        for await _ in signals.stream { break }
        await server.shutdown()
    }
}

/// Delivers SIGINT/SIGTERM/SIGHUP as an async stream instead of killing the process.
final class SignalWatcher: @unchecked Sendable {
    // Written once in init and only cancelled in deinit: never mutated concurrently.
    private var sources: [any DispatchSourceSignal] = []
    let stream: AsyncStream<Int32>

    init(signals: [Int32]) {
        let (stream, continuation) = AsyncStream.makeStream(of: Int32.self)
        self.stream = stream
        // `nohup storesync run …` asks for SIGHUP to be ignored: it stays so.
        let wanted = signals.filter { $0 != SIGHUP || !Self.isIgnored(SIGHUP) }
        sources = wanted.map { signalNumber in
            signal(signalNumber, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .global())
            source.setEventHandler { continuation.yield(signalNumber) }
            source.resume()
            return source
        }
    }

    deinit { sources.forEach { $0.cancel() } }

    /// Whether the process was started with `signalNumber` ignored (by `nohup`, say).
    static func isIgnored(_ signalNumber: Int32) -> Bool {
        var current = sigaction()
        guard sigaction(signalNumber, nil, &current) == 0 else { return false }
        // SIG_IGN is the handler value 1; function pointers compare by address.
        #if canImport(Darwin)
        let handler = current.__sigaction_u.__sa_handler
        #else
        let handler = current.__sigaction_handler.sa_handler
        #endif
        return unsafeBitCast(handler, to: Int.self) == unsafeBitCast(SIG_IGN, to: Int.self)
    }
}
