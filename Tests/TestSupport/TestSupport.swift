import Catalog
import Crawl
import Foundation
import Synchronization

/// Locations shared by the tests.
public enum TestPaths {
    /// The repository root (found from this file's path, not the working directory).
    public static let repoRoot: URL = {
        var url = URL(fileURLWithPath: #filePath)
        for _ in 0..<3 { url.deleteLastPathComponent() }
        return url
    }()

    /// `../shared/api-samples` beside the repository, when present.
    public static var apiSamples: URL? {
        let url = repoRoot.deletingLastPathComponent().appendingPathComponent("shared/api-samples")
        return FileManager.default.fileExists(atPath: url.path) ? url : nil
    }

    public static var hasSamples: Bool { apiSamples != nil }

    public static func sample(_ name: String) throws -> [UInt8] {
        guard let dir = apiSamples else { throw CocoaError(.fileNoSuchFile) }
        return Array(try Data(contentsOf: dir.appendingPathComponent(name)))
    }

    /// A fresh empty directory, removed by the caller when it likes.
    public static func temporaryDirectory(_ label: String = "storesync-test") -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("\(label)-\(UUID().uuidString)")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

/// A clock that only moves when slept on: pacing and backoff are tested without waiting.
public final class ManualClock: CrawlClock {
    private let state = Mutex<(now: Double, sleeps: [Double])>((0, []))

    public init(start: Double = 0) { state.withLock { $0.now = start } }

    public func now() -> Double { state.withLock { $0.now } }

    public func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        state.withLock {
            $0.sleeps.append(seconds)
            if seconds > 0 { $0.now += seconds }
        }
    }

    public func advance(by seconds: Double) { state.withLock { $0.now += seconds } }

    public var sleeps: [Double] { state.withLock { $0.sleeps } }
}

/// A transport that answers from a script and records what was asked.
public final class ScriptedTransport: HTTPTransport {
    public typealias Handler = @Sendable (HTTPRequest, Int) -> Result<HTTPResponse, TransportError>
    private let handler: Handler
    private let log = Mutex<[(url: URL, at: Double)]>([])
    private let clock: (any CrawlClock)?

    /// `handler` gets the request and its zero-based sequence number.
    public init(clock: (any CrawlClock)? = nil, handler: @escaping Handler) {
        self.handler = handler
        self.clock = clock
    }

    public func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        let n = log.withLock { entries in
            entries.append((request.url, clock?.now() ?? 0))
            return entries.count - 1
        }
        return try handler(request, n).get()
    }

    public var requests: [URL] { log.withLock { $0.map(\.url) } }
    public var requestTimes: [Double] { log.withLock { $0.map(\.at) } }

    public static func json(_ text: String, status: Int = 200, url: URL, headers: [String: String] = [:]) -> HTTPResponse {
        HTTPResponse(url: url, status: status, headers: headers, body: Array(text.utf8))
    }
}

/// A discrete-event clock for tests with concurrent sleepers.
///
/// ``ManualClock`` moves time forward by each sleep as it happens, so two
/// tasks that sleep at once add their waits up and time runs ahead of any
/// schedule. Here the tasks started by ``run(tasks:_:)`` are its participants:
/// a sleeping participant is parked until every participant is asleep or
/// done; then the one with the earliest deadline wakes (ties in the order they
/// fell asleep) and `now` becomes its deadline. Time never jumps past a
/// deadline, and what each task observes is what real time would show.
///
/// Participants must block only on this clock (or finish): one awaiting
/// something else while the rest sleep stops the clock. Sleeps from tasks that
/// are not participants advance time at once, as ``ManualClock`` does.
/// Parked sleepers do not react to cancellation; they wake in turn.
public final class VirtualClock: CrawlClock {
    private struct Sleeper {
        var deadline: Double
        var order: Int
        var continuation: CheckedContinuation<Void, Never>
    }

    private struct State {
        var now: Double
        var running = 0
        var sleepers: [Sleeper] = []
        var order = 0
        var sleeps: [Double] = []

        /// When nobody runs, wakes the earliest sleeper (to be resumed outside the lock).
        mutating func wakeNextIfIdle() -> CheckedContinuation<Void, Never>? {
            guard running == 0, !sleepers.isEmpty else { return nil }
            let index = sleepers.indices.min {
                (sleepers[$0].deadline, sleepers[$0].order) < (sleepers[$1].deadline, sleepers[$1].order)
            }!
            let sleeper = sleepers.remove(at: index)
            now = max(now, sleeper.deadline)
            running += 1
            return sleeper.continuation
        }
    }

    @TaskLocal private static var isParticipant = false
    private let state: Mutex<State>

    public init(start: Double = 0) { state = Mutex(State(now: start)) }

    public func now() -> Double { state.withLock { $0.now } }

    /// Every sleep asked for, in the order asked.
    public var sleeps: [Double] { state.withLock { $0.sleeps } }

    public func sleep(seconds: Double) async throws {
        try Task.checkCancellation()
        guard Self.isParticipant else {
            state.withLock {
                $0.sleeps.append(seconds)
                if seconds > 0 { $0.now += seconds }
            }
            return
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let next = state.withLock { state in
                state.sleeps.append(seconds)
                state.sleepers.append(Sleeper(deadline: state.now + max(0, seconds), order: state.order,
                                              continuation: continuation))
                state.order += 1
                state.running -= 1
                return state.wakeNextIfIdle()
            }
            next?.resume()
        }
    }

    /// Runs `body(0)` … `body(count - 1)` concurrently as participants and
    /// returns when all are done (rethrowing the first error).
    public func run(tasks count: Int, _ body: @escaping @Sendable (Int) async throws -> Void) async throws {
        // Counted before any starts, so time cannot move while some are still being spawned.
        state.withLock { $0.running += count }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                group.addTask {
                    defer { self.participantFinished() }
                    try await Self.$isParticipant.withValue(true) { try await body(index) }
                }
            }
            try await group.waitForAll()
        }
    }

    private func participantFinished() {
        let next = state.withLock { state in
            state.running -= 1
            return state.wakeNextIfIdle()
        }
        next?.resume()
    }
}

/// A transport that holds every request until the test opens the gate, so a
/// test can line up concurrent callers behind a request still in flight.
public final class GatedTransport: HTTPTransport {
    public typealias Handler = @Sendable (HTTPRequest, Int) -> Result<HTTPResponse, TransportError>
    private struct State {
        var open = false
        var requests: [HTTPRequest] = []
        /// Parked requests with their sequence numbers.
        var held: [(continuation: CheckedContinuation<Int, Never>, n: Int)] = []
        var arrivalWaiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }
    private let handler: Handler
    private let state = Mutex(State())

    /// `handler` gets the request and its zero-based sequence number once the gate is open.
    public init(handler: @escaping Handler) { self.handler = handler }

    public func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        let n = await withCheckedContinuation { (continuation: CheckedContinuation<Int, Never>) in
            let (n, open, arrived) = state.withLock { state in
                state.requests.append(request)
                let n = state.requests.count - 1
                let ready = state.arrivalWaiters.filter { $0.count <= state.requests.count }
                state.arrivalWaiters.removeAll { $0.count <= state.requests.count }
                if !state.open { state.held.append((continuation, n)) }
                return (n, state.open, ready.map(\.continuation))
            }
            for waiter in arrived { waiter.resume() }
            if open { continuation.resume(returning: n) }
        }
        return try handler(request, n).get()
    }

    /// Lets every held and future request through.
    public func open() {
        let held = state.withLock { state in
            state.open = true
            defer { state.held = [] }
            return state.held
        }
        for (continuation, n) in held { continuation.resume(returning: n) }
    }

    /// Returns once `count` requests have reached the transport.
    public func waitForRequests(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = state.withLock { state in
                if state.requests.count >= count { return true }
                state.arrivalWaiters.append((count, continuation))
                return false
            }
            if ready { continuation.resume() }
        }
    }

    public var requests: [HTTPRequest] { state.withLock { $0.requests } }
}

/// `python3 args…` for the checks real clients make (feedparser, podcastparser, Datasette).
public enum Python {
    /// Runs `python3 arguments…`, waited for off the cooperative pool
    /// (``awaitOffPool(_:)``: a test process has as many pool threads as cores,
    /// 2 on CI, and every other test's awaits need them);
    /// returns the exit status and stdout + stderr.
    public static func run(_ arguments: [String]) async throws -> (status: Int32, output: String) {
        try await awaitOffPool { try runWaitingHere(arguments) }
    }

    /// ``run(_:)`` for synchronous code, waiting on the calling thread (a
    /// check, once per process, of whether a module is installed).
    public static func runWaitingHere(_ arguments: [String]) throws -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        try process.run()
        // Read before waiting: a full pipe would otherwise block the child forever.
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: data, as: UTF8.self))
    }
}

/// A small seeded generator (SplitMix64): a test's random cases are the same
/// on every run, so a failure reproduces.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
