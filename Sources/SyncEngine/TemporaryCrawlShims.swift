// TEMPORARY: replaced by the Crawl target's own types when branch h-crawl merges.
import Catalog
import Crawl
import Foundation
import Synchronization

extension Fetcher {
    func get(_ url: URL, headers: [String: String] = [:], bypassCache: Bool) async throws(StoreSyncError) -> HTTPResponse {
        try await get(url, headers: headers)
    }
}

final class CircuitBreaker: Sendable {
    let threshold: Int
    private let failures = Mutex(0)
    init(threshold: Int) { self.threshold = threshold }
    func recordSuccess() { failures.withLock { $0 = 0 } }
    func recordFailure() { failures.withLock { $0 += 1 } }
    var isOpen: Bool { threshold > 0 && failures.withLock { $0 } >= threshold }
}

struct HostMappingTransport: HTTPTransport {
    let base: any HTTPTransport
    let suffix: String
    let target: URL
    init(wrapping base: any HTTPTransport, hostSuffix: String, to target: URL) {
        self.base = base
        self.suffix = hostSuffix
        self.target = target
    }
    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        guard let host = request.url.host, host.hasSuffix(suffix),
              var components = URLComponents(url: request.url, resolvingAgainstBaseURL: false) else {
            return try await base.get(request, timeoutSeconds: timeoutSeconds)
        }
        components.scheme = target.scheme
        components.host = target.host
        components.port = target.port
        var mapped = request
        mapped.url = components.url ?? request.url
        var response = try await base.get(mapped, timeoutSeconds: timeoutSeconds)
        response.url = request.url
        return response
    }
}
