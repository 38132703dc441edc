import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
@testable import StoreSim
import Testing

/// The per-client limit (`storesync simulate --client-requests-per-minute`):
/// the bucket's arithmetic on a clock passed in, then one server telling two
/// clients apart by User-Agent.
@Suite struct ClientRateLimitTests {
    @Test func eachClientHasItsOwnBucket() {
        // 60 a minute = one a second, three at once.
        let limiter = ClientRateLimiter(limit: ClientRateLimit(requestsPerMinute: 60, burst: 3))
        for _ in 0..<3 { #expect(limiter.take(client: "a", now: 10) == nil) }
        let wait = limiter.take(client: "a", now: 10)
        #expect(wait == 1)
        // Another client is untouched by a's spending.
        #expect(limiter.take(client: "b", now: 10) == nil)
        // Half a second later half a token has come back: still refused, half a second to go.
        #expect(limiter.take(client: "a", now: 10.5) == 0.5)
        #expect(limiter.take(client: "a", now: 11) == nil)
        // Idle for a minute: the bucket holds no more than its burst.
        for _ in 0..<3 { #expect(limiter.take(client: "a", now: 71) == nil) }
        #expect(limiter.take(client: "a", now: 71) != nil)
        // A clock read that arrives late never refills backwards.
        #expect(limiter.take(client: "a", now: 70) != nil)
    }

    @Test func burstDefaultsToOneSecondOfRequests() {
        #expect(ClientRateLimit(requestsPerMinute: 600).burst == 10)
        #expect(ClientRateLimit(requestsPerMinute: 20).burst == 1)
        #expect(ClientRateLimit(requestsPerMinute: 600, burst: 0).burst == 1)
    }

    @Test func refusalIsA429WithWholeSecondsToWait() {
        let refusal = ClientRateLimiter.refusal(retryAfter: 0.2)
        #expect(refusal.status == 429)
        #expect(refusal.headers.first { $0.0 == "Retry-After" }?.1 == "1")
        #expect(ClientRateLimiter.refusal(retryAfter: 2.01).headers.first?.1 == "3")
    }

    @Test func serverRefusesOnlyTheClientPastItsBudget() async throws {
        // One token per 100 minutes: no refill can happen while the test runs.
        let server = try await SimulatorServer.start(
            world: World(config: SimulatorConfig(podcastCount: 50, productCount: 20)), night: 1,
            clientRateLimit: ClientRateLimit(requestsPerMinute: 0.01, burst: 2), logger: ServerTests.quietLogger())
        let session = ServerTests.makeSession()
        defer { session.invalidateAndCancel() }
        func status(_ agent: String) async throws -> (Int, String?) {
            var request = URLRequest(url: try #require(URL(string: server.baseURL.absoluteString + "/healthChecker")))
            request.setValue(agent, forHTTPHeaderField: "User-Agent")
            let (_, response) = try await session.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            return (http.statusCode, http.value(forHTTPHeaderField: "Retry-After"))
        }
        #expect(try await status("worker-1").0 == 200)
        #expect(try await status("worker-1").0 == 200)
        let refused = try await status("worker-1")
        #expect(refused.0 == 429)
        #expect(Int(refused.1 ?? "") ?? 0 >= 1)
        #expect(try await status("worker-2").0 == 200)
        #expect(server.injectedFaults["client-rate-limit"] == 1)
        await server.shutdown()
    }
}
