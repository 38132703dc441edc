import Catalog
@testable import Crawl
import Foundation
import Testing
import TestSupport

/// The Fetcher follows redirects itself (the transport does not), so every
/// hop is paced and the caller learns whether the page moved for good.
@Suite struct FetcherRedirectTests {
    func fetcher(_ transport: ScriptedTransport, clock: ManualClock, perMinute: [String: Double] = [:]) -> Fetcher {
        var settings = HTTPSettings(maxAttempts: 2, requestsPerMinute: perMinute)
        settings.backoffBaseSeconds = 1
        return Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
    }

    static func redirect(_ status: Int, to location: String, from url: URL) -> Result<HTTPResponse, TransportError> {
        .success(HTTPResponse(url: url, status: status, headers: ["Location": location]))
    }

    @Test func permanentRedirectsAreFollowedAndReported() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, n in
            switch request.url.path {
            case "/old.xml": Self.redirect(301, to: "/middle.xml", from: request.url)
            case "/middle.xml": Self.redirect(308, to: "https://new.example.com/feed.xml", from: request.url)
            default: .success(ScriptedTransport.json("<rss/>", url: request.url))
            }
        }
        let start = URL(string: "http://old.example.com/old.xml")!
        let response = try await fetcher(transport, clock: clock).get(start)
        #expect(response.status == 200)
        #expect(response.url.absoluteString == "https://new.example.com/feed.xml")
        #expect(response.redirect == HTTPResponse.Redirect(from: start, permanent: true, hops: 2))
        #expect(transport.requests.map(\.absoluteString) == [
            "http://old.example.com/old.xml", "http://old.example.com/middle.xml", "https://new.example.com/feed.xml",
        ])
    }

    @Test(arguments: [302, 303, 307])
    func aTemporaryHopMakesTheWholeRedirectTemporary(_ status: Int) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, n in
            switch request.url.path {
            case "/a": Self.redirect(301, to: "/b", from: request.url)
            case "/b": Self.redirect(status, to: "/c", from: request.url)
            default: .success(ScriptedTransport.json("ok", url: request.url))
            }
        }
        let response = try await fetcher(transport, clock: clock).get(URL(string: "http://h.example/a")!)
        #expect(response.url.path == "/c")
        #expect(response.redirect?.permanent == false)
        #expect(response.redirect?.hops == 2)
    }

    @Test func cyclesAndLongChainsAreRefused() async {
        let clock = ManualClock()
        let cycle = ScriptedTransport { request, _ in
            Self.redirect(302, to: request.url.path == "/a" ? "/b" : "/a", from: request.url)
        }
        await #expect(throws: StoreSyncError.self) { try await fetcher(cycle, clock: clock).get(URL(string: "http://h.example/a")!) }
        #expect(cycle.requests.count == 2)

        let chain = ScriptedTransport { request, n in Self.redirect(301, to: "/hop\(n + 1)", from: request.url) }
        do {
            _ = try await fetcher(chain, clock: clock).get(URL(string: "http://h.example/hop0")!)
            Issue.record("an endless chain was followed")
        } catch {
            #expect(error.description.contains("more than \(Fetcher.maxRedirects) redirects"), "\(error)")
        }
        #expect(chain.requests.count == Fetcher.maxRedirects + 1)
    }

    @Test func aRedirectWithoutLocationFails() async {
        let transport = ScriptedTransport { request, _ in .success(HTTPResponse(url: request.url, status: 301)) }
        do {
            _ = try await fetcher(transport, clock: ManualClock()).get(URL(string: "http://h.example/a")!)
            Issue.record("a 301 without Location was accepted")
        } catch {
            #expect(error.description.contains("Location"), "\(error)")
        }
    }

    @Test func eachHopIsPacedByItsOwnHost() async throws {
        let clock = ManualClock()
        // Two redirects on slow.example at 6/minute: the second request to it waits its turn.
        let f = fetcher(ScriptedTransport(clock: clock) { request, n in
            switch request.url.path {
            case "/a": Self.redirect(301, to: "/b", from: request.url)
            case "/b": Self.redirect(301, to: "http://fast.example/c", from: request.url)
            default: .success(ScriptedTransport.json("ok", url: request.url))
            }
        }, clock: clock, perMinute: ["slow.example": 6])
        let response = try await f.get(URL(string: "http://slow.example/a")!)
        #expect(response.url.absoluteString == "http://fast.example/c")
        #expect(f.stats.requests == 3)
        #expect(clock.now() >= 9.9, "the second request to slow.example was not paced (now \(clock.now()))")
    }
}

@Suite struct HostCircuitBreakerTests {
    @Test func oneHostOpeningLeavesTheOthersClosed() {
        let breakers = HostCircuitBreakers(threshold: 3)
        for _ in 0..<3 { breakers.breaker(for: "dead.example").recordFailure() }
        breakers.breaker(for: "alive.example").recordFailure()
        #expect(breakers.breaker(for: "DEAD.example").isOpen)
        #expect(!breakers.breaker(for: "alive.example").isOpen)
        #expect(breakers.openHosts == ["dead.example"])
    }
}
