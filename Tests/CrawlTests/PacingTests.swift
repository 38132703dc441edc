import Catalog
import Crawl
import Foundation
import Testing
import TestSupport

/// The rate limit as the crawl sees it: several tasks fetching through one
/// ``Fetcher`` at once, on a ``VirtualClock`` so request times are exactly
/// what real time would show, without waiting.
@Suite struct PacingTests {
    func fetcher(_ transport: ScriptedTransport, clock: VirtualClock, burst: Int = 1) -> Fetcher {
        let settings = HTTPSettings(
            requestsPerMinute: ["itunes.apple.com": 20, "rss.example.com": 60], burst: burst)
        return Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
    }

    func transport(_ clock: VirtualClock) -> ScriptedTransport {
        ScriptedTransport(clock: clock) { request, _ in .success(ScriptedTransport.json("{}", url: request.url)) }
    }

    func times(_ transport: ScriptedTransport, host: String) -> [Double] {
        zip(transport.requests, transport.requestTimes).filter { $0.0.host == host }.map(\.1)
    }

    /// 8 tasks, 100 pages at 20 a minute: no sliding minute holds more than
    /// 20, the pace is not slower than it must be, and hosts with their own
    /// limits (or none) running alongside are not held up.
    @Test func concurrentFetchesNeverExceedTheRate() async throws {
        let clock = VirtualClock()
        let transport = transport(clock)
        let fetcher = fetcher(transport, clock: clock)
        let pages = WorkQueue(100)
        try await clock.run(tasks: 10) { task in
            switch task {
            case 8:
                for i in 0..<10 { _ = try await fetcher.get(URL(string: "https://rss.example.com/\(i)")!) }
            case 9:
                for i in 0..<10 { _ = try await fetcher.get(URL(string: "http://127.0.0.1:8080/\(i)")!) }
            default:
                while let i = pages.take() {
                    _ = try await fetcher.get(URL(string: "https://itunes.apple.com/search?term=x&offset=\(i)")!)
                }
            }
        }
        let itunes = times(transport, host: "itunes.apple.com")
        #expect(itunes.count == 100)
        #expect(busiestWindow(itunes) == 20)
        #expect(itunes.max() == Double(99 * 3))
        #expect(times(transport, host: "rss.example.com") == (0..<10).map(Double.init))
        #expect(times(transport, host: "127.0.0.1") == Array(repeating: 0, count: 10))
        #expect(fetcher.stats.requests == 120)
    }

    /// Burst 5: five go at once, then one every 3 s; a minute then holds at most 20 + 4.
    @Test func burstGoesAtOnceThenPaces() async throws {
        let clock = VirtualClock()
        let transport = transport(clock)
        let fetcher = fetcher(transport, clock: clock, burst: 5)
        let pages = WorkQueue(40)
        try await clock.run(tasks: 8) { _ in
            while let i = pages.take() {
                _ = try await fetcher.get(URL(string: "https://itunes.apple.com/search?term=x&offset=\(i)")!)
            }
        }
        let itunes = times(transport, host: "itunes.apple.com").sorted()
        #expect(itunes == Array(repeating: 0, count: 5) + (1...35).map { Double($0 * 3) })
        #expect(busiestWindow(itunes) == 20 + 5 - 1)
    }

    /// Concurrent callers retrying after a 429 pause the host for everyone.
    @Test func throttlingPausesTheHostForEveryCaller() async throws {
        let clock = VirtualClock()
        let transport = ScriptedTransport(clock: clock) { request, n in
            n == 0 ? .success(HTTPResponse(url: request.url, status: 429, headers: ["Retry-After": "30"]))
                   : .success(ScriptedTransport.json("{}", url: request.url))
        }
        let fetcher = fetcher(transport, clock: clock)
        let pages = WorkQueue(5)
        try await clock.run(tasks: 4) { _ in
            while let i = pages.take() {
                _ = try await fetcher.get(URL(string: "https://itunes.apple.com/search?term=x&offset=\(i)")!)
            }
        }
        let itunes = transport.requestTimes.sorted()
        // The 429 at t = 0; nothing else until the 30 s pause ends, then the pace.
        #expect(itunes == [0, 30, 33, 36, 39, 42])
        #expect(fetcher.stats.throttled == 1)
    }

    /// What a fleet's worker asks before it claims another scope at once: did a
    /// request wait for its host's budget, or was one refused for its pace, lately?
    @Test func aRequestThatWaitedForItsHostIsPacing() async throws {
        let clock = VirtualClock()
        let transport = transport(clock)
        let fetcher = fetcher(transport, clock: clock)
        let itunes = URL(string: "https://itunes.apple.com/search?term=x")!
        let pacing = Shared<[Bool]>([])
        try await clock.run(tasks: 1) { _ in
            let note = { _ = pacing.withLock { $0.append(fetcher.pacedRecently(within: 1)) } }
            note()
            // The first request of a limited host goes at once, so does one to a host with no limit.
            _ = try await fetcher.get(itunes, bypassCache: true)
            _ = try await fetcher.get(URL(string: "http://127.0.0.1:8080/a")!)
            note()
            // The second waits 3 s for its slot (20 a minute).
            _ = try await fetcher.get(itunes, bypassCache: true)
            note()
            try await clock.sleep(seconds: 1.5)
            note()
        }
        #expect(pacing.withLock { $0 } == [false, false, true, false])
    }

    @Test func aRefusalForThePaceIsPacing() async throws {
        let clock = VirtualClock()
        let transport = ScriptedTransport(clock: clock) { request, n in
            n == 0 ? .success(HTTPResponse(url: request.url, status: 429, headers: ["Retry-After": "2"]))
                   : .success(ScriptedTransport.json("{}", url: request.url))
        }
        let fetcher = Fetcher(transport: transport, settings: HTTPSettings(), clock: clock, random: { 0.5 })
        let paced = Shared(false)
        try await clock.run(tasks: 1) { _ in
            _ = try await fetcher.get(URL(string: "http://127.0.0.1:8080/a")!)
            // No rate limit: the wait was the server's (its 429 and Retry-After), which ended 0 s ago.
            paced.withLock { $0 = fetcher.pacedRecently(within: 2.5) }
        }
        #expect(paced.withLock { $0 })
        #expect(fetcher.stats.throttled == 1)
    }
}
