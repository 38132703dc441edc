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
