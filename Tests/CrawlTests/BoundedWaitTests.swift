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

/// A number a server sends is read totally: no value of `Retry-After` can trap
/// the process (a SIGILL would lose every export of the night).
@Suite struct HostileRetryAfterTests {
    let url = URL(string: "https://feeds.example.com/a.xml")!

    func fetcher(_ transport: ScriptedTransport, clock: ManualClock) -> Fetcher {
        let settings = HTTPSettings(maxAttempts: 3, requestsPerMinute: [:], backoffMaxSeconds: 60)
        return Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
    }

    /// Huge, infinite and out-of-Int-range pauses: each is "longer than the cap".
    @Test(arguments: [
        "1e20", "1E20", "inf", "+inf", "infinity", "Infinity", "0x1p70", "0X1P+1023",
        "9223372036854775807", "9223372036854775808", "18446744073709551616",
        "99999999999999999999999999999999", "1e308", "1.8e308", "1e999", " 1e20 ",
        "Fri, 31 Dec 9999 23:59:59 GMT",
    ])
    func anEnormousPauseFailsThePageWithoutTrapping(_ retryAfter: String) async {
        for status in [429, 503] {
            let clock = ManualClock()
            let transport = ScriptedTransport { request, _ in
                .success(HTTPResponse(url: request.url, status: status, headers: ["Retry-After": retryAfter]))
            }
            do {
                _ = try await fetcher(transport, clock: clock).get(url)
                Issue.record("expected the page to fail (\(status), Retry-After: \(retryAfter))")
            } catch {
                #expect(error.code == .throttled, "\(error)")
                #expect(error.description.contains("more than http.backoffMaxSeconds (60 s)"), "\(error)")
            }
            #expect(transport.requests.count == 1)
            #expect(clock.now() < 1)
        }
    }

    /// Values that ask for no pause, or that are not numbers at all: the
    /// ordinary backoff applies and every attempt is made.
    @Test(arguments: ["nan", "NaN", "-1", "-inf", "-1e20", "-0x1p70", "", "soon", "0", "1.5", "0x10"])
    func aSmallNegativeOrUnreadablePauseIsRetriedWithTheOrdinaryBackoff(_ retryAfter: String) async {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, _ in
            .success(HTTPResponse(url: request.url, status: 503, headers: ["Retry-After": retryAfter]))
        }
        do {
            _ = try await fetcher(transport, clock: clock).get(url)
            Issue.record("expected the page to fail")
        } catch {
            #expect(error.code == .fetchFailed, "\(error)")
        }
        #expect(transport.requests.count == 3)
        #expect(clock.sleeps.allSatisfy { $0.isFinite && $0 >= 0 && $0 <= 60 }, "\(clock.sleeps)")
    }

    /// Every string a number parser accepts lands in the bounded range or is ignored.
    @Test func parsedPausesAreAlwaysFiniteAndBounded() {
        var generator = SystemRandomNumberGenerator()
        let pieces = ["1", "9", "0", "e", "E", "+", "-", ".", "x", "p", "inf", "nan", "0x", "ffff", "9999999999"]
        for _ in 0..<5_000 {
            let text = (0..<Int.random(in: 1...8, using: &generator)).map { _ in pieces.randomElement(using: &generator)! }.joined()
            if let seconds = Fetcher.parseRetryAfter(text) {
                #expect(seconds.isFinite && seconds >= 0 && seconds <= Fetcher.longestRetryAfterSeconds, "\(text) → \(seconds)")
                _ = StoreSyncError.throttled(url: "u", host: "h", retryAfterSeconds: seconds).description
            }
        }
        // A message about any pause at all is total, even one that bypassed the parser.
        for seconds in [Double.infinity, -.infinity, .nan, 1e300, -1e300, Double.greatestFiniteMagnitude] {
            _ = StoreSyncError.throttled(url: "u", host: "h", retryAfterSeconds: seconds).description
        }
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

