import Catalog
import Crawl
import Foundation
import Testing
import TestSupport

/// Counts what reaches the real transport: the bound is the number of
/// attempts, not a wall-clock figure.
final class CountingTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    private let count = Shared(0)
    var requests: Int { count.current }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        count.withLock { $0 += 1 }
        return try await inner.get(request, timeoutSeconds: timeoutSeconds)
    }
}

/// A loopback port nothing listens on: bound to port 0, noted, closed.
func closedLoopbackPort() throws -> Int {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    guard fd >= 0 else { throw POSIXError(.EBADF) }
    defer { close(fd) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = 0
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let bound = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    guard bound == 0 else { throw POSIXError(.EADDRINUSE) }
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let named = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
    }
    guard named == 0 else { throw POSIXError(.EINVAL) }
    return Int(UInt16(bigEndian: address.sin_port))
}

/// Fast, honest failure: a host that refuses connections or whose name does
/// not resolve fails its page at once, without paced retries, and is not
/// asked again in the run.
@Suite struct UnreachableHostTests {
    func check(_ first: URL, _ second: URL) async {
        let clock = ManualClock()
        let transport = CountingTransport()
        // Four attempts and up to 60 s of backoff each: what a timeout or a 5xx would get.
        let settings = HTTPSettings(maxAttempts: 4, requestsPerMinute: [:], backoffBaseSeconds: 2, backoffMaxSeconds: 60)
        let fetcher = Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
        do {
            _ = try await fetcher.get(first)
            Issue.record("expected \(first) to fail")
        } catch {
            #expect(error.code == .hostUnreachable, "\(error)")
            #expect(error.description.contains("unreachable"), "\(error)")
            #expect(error.description.contains(first.absoluteString), "\(error)")
        }
        #expect(transport.requests == 1, "one attempt, not \(transport.requests)")
        #expect(clock.sleeps.isEmpty, "no backoff: \(clock.sleeps)")
        #expect(fetcher.stats.retries == 0)

        // The host's next page is not sent at all.
        do {
            _ = try await fetcher.get(second)
            Issue.record("expected \(second) to fail")
        } catch {
            #expect(error.code == .hostUnreachable, "\(error)")
            #expect(error.description.contains("not sent"), "\(error)")
        }
        #expect(transport.requests == 1)
        await transport.inner.shutdown()
    }

    @Test func aRefusedConnectionFailsAtOnce() async throws {
        let port = try closedLoopbackPort()
        await check(URL(string: "http://127.0.0.1:\(port)/search?term=a")!, URL(string: "http://127.0.0.1:\(port)/search?term=b")!)
    }

    /// RFC 6761: `.invalid` never resolves.
    @Test func aNameThatDoesNotResolveFailsAtOnce() async {
        await check(URL(string: "http://storesync-test.invalid/a")!, URL(string: "http://storesync-test.invalid/b")!)
    }

    @Test func theTransportSaysWhyTheHostIsUnreachable() async throws {
        let port = try closedLoopbackPort()
        let transport = AsyncHTTPTransport()
        do {
            _ = try await transport.get(HTTPRequest(url: URL(string: "http://127.0.0.1:\(port)/")!), timeoutSeconds: 30)
            Issue.record("expected a refused connection")
        } catch {
            if case .unreachable(let host, let reason) = error {
                #expect(host == "127.0.0.1")
                #expect(reason.contains("refused"), "\(reason)")
            } else {
                Issue.record("expected .unreachable, got \(error)")
            }
        }
        await transport.shutdown()
    }

    /// A timeout or a reset is still worth asking again.
    @Test func otherConnectionFailuresAreStillRetried() async {
        let clock = ManualClock()
        let transport = ScriptedTransport { _, _ in .failure(.connectionFailed("connection reset by peer")) }
        let settings = HTTPSettings(maxAttempts: 3, requestsPerMinute: [:], backoffMaxSeconds: 60)
        let fetcher = Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
        await #expect(throws: StoreSyncError.self) { _ = try await fetcher.get(URL(string: "http://example.com/")!) }
        #expect(transport.requests.count == 3)
    }

    @Test func anUnreachableHostOpensItsBreakerAtOnce() {
        let breaker = CircuitBreaker(threshold: 5)
        #expect(breaker.trip())
        #expect(breaker.isOpen)
        #expect(!breaker.trip(), "already open")
        // Its messages say why (issue 29, finding 10): not a streak of failed pages that never happened.
        #expect(breaker.openedBecause == "at once, as it was unreachable")
        let streak = CircuitBreaker(threshold: 2)
        streak.recordFailure()
        #expect(streak.recordFailure())
        #expect(!streak.trip(), "already open")
        #expect(streak.openedBecause == "after 2 failed pages in a row")
        let never = CircuitBreaker(threshold: 0)
        #expect(!never.trip())
        #expect(!never.isOpen, "a threshold of 0 never stops a source")
    }
}
