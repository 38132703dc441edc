import Catalog
import Crawl
import Foundation
import Testing
import TestSupport

/// Every wait has a bound: a server cannot hold a run (and the store's lock)
/// for as long as it likes by asking for a pause.
@Suite struct BoundedWaitTests {
    let url = URL(string: "https://itunes.apple.com/search?term=a")!
    let other = URL(string: "https://itunes.apple.com/search?term=b")!

    func fetcher(_ transport: ScriptedTransport, clock: ManualClock) -> Fetcher {
        let settings = HTTPSettings(maxAttempts: 4, requestsPerMinute: [:], backoffMaxSeconds: 60)
        return Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
    }

    @Test(arguments: ["999999", "Fri, 01 Jan 2100 00:00:00 GMT"])
    func aPauseLongerThanTheCapFailsThePageAtOnce(_ retryAfter: String) async {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, _ in
            .success(HTTPResponse(url: request.url, status: 429, headers: ["Retry-After": retryAfter]))
        }
        let f = fetcher(transport, clock: clock)
        do {
            _ = try await f.get(url)
            Issue.record("expected the page to fail")
        } catch {
            #expect(error.code == .throttled)
            #expect(error.description.contains("more than http.backoffMaxSeconds (60 s)"), "\(error)")
            #expect(error.description.contains("the next run asks again"), "\(error)")
        }
        // No sleep at all, let alone the one asked for, and one request.
        #expect(clock.sleeps.allSatisfy { $0 <= 60 })
        #expect(clock.now() < 1)
        #expect(transport.requests.count == 1)

        // The host said to go away: the rest of the run does not ask it again.
        do {
            _ = try await f.get(other)
            Issue.record("expected the second page to fail too")
        } catch {
            #expect(error.code == .throttled)
            #expect(error.description.contains("not sent"), "\(error)")
        }
        #expect(transport.requests.count == 1)
    }
}

/// The request timeout covers the whole exchange, the body included.
@Suite struct WholeExchangeTimeoutTests {
    @Test func aBodyTrickledAByteAtATimeTimesOutWithTheRequest() async throws {
        // 60 bytes, one every 0.25 s: 15 s to the end of the body, against a 1 s timeout.
        let server = try TrickleServer(body: Array(repeating: UInt8(ascii: " "), count: 59) + [UInt8(ascii: "1")], interval: 0.25)
        defer { server.stop() }
        let transport = AsyncHTTPTransport()
        do {
            let response = try await transport.get(HTTPRequest(url: server.url), timeoutSeconds: 1)
            // Only a transport that waits out the whole 15 s body gets here.
            Issue.record("the trickled body was waited for to its end: \(response.body.count) bytes")
        } catch {
            #expect(error == .timedOut(seconds: 1))
        }
        await transport.shutdown()
    }
}

