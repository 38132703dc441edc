import Catalog
import Crawl
import Foundation
import Testing
import TestSupport

@Suite struct RateLimiterTests {
    /// No window of 60 s ever holds more requests than configured.
    @Test func spacingKeepsEveryMinuteUnderTheLimit() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(clock: clock) { $0 == "itunes.apple.com" ? 20 : nil }
        var times: [Double] = []
        for _ in 0..<65 {
            try await limiter.acquire(host: "itunes.apple.com")
            times.append(clock.now())
        }
        for (i, start) in times.enumerated() {
            let inWindow = times[i...].prefix { $0 < start + 60 }.count
            #expect(inWindow <= 20, "window at \(start) holds \(inWindow)")
        }
        #expect(times.last! - times.first! == 64 * 3)
    }

    @Test func unlimitedHostsDoNotWait() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(clock: clock) { _ in nil }
        for _ in 0..<100 { try await limiter.acquire(host: "127.0.0.1") }
        #expect(clock.now() == 0)
    }

    /// A full bucket lets `burst` go at once; then the pace applies, and an
    /// idle spell refills the bucket (but never beyond `burst`).
    @Test func burstThenPaceThenRefill() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(clock: clock, burst: 3) { _ in 20 }
        var times: [Double] = []
        for _ in 0..<5 {
            try await limiter.acquire(host: "itunes.apple.com")
            times.append(clock.now())
        }
        #expect(times == [0, 0, 0, 3, 6])
        clock.advance(by: 600)
        times = []
        for _ in 0..<5 {
            try await limiter.acquire(host: "itunes.apple.com")
            times.append(clock.now())
        }
        #expect(times == [606, 606, 606, 609, 612])
    }

    /// After the server pushes back the host resumes at the pace, not with a full burst.
    @Test func penaltyPausesTheHostThenResumesWithoutABurst() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(clock: clock, burst: 5) { _ in 20 }
        limiter.penalize(host: "itunes.apple.com", seconds: 30)
        var times: [Double] = []
        for _ in 0..<3 {
            try await limiter.acquire(host: "ITUNES.apple.com")
            times.append(clock.now())
        }
        #expect(times == [30, 33, 36])
    }

    @Test func penaltyPausesUnlimitedHostsToo() async throws {
        let clock = ManualClock()
        let limiter = RateLimiter(clock: clock) { _ in nil }
        limiter.penalize(host: "127.0.0.1", seconds: 10)
        try await limiter.acquire(host: "127.0.0.1")
        #expect(clock.now() == 10)
        try await limiter.acquire(host: "127.0.0.1")
        #expect(clock.now() == 10)
    }

    /// A caller that booked its slot before the server asked for a pause
    /// does not go out during the pause.
    @Test func penaltyDelaysCallersAlreadyWaiting() async throws {
        let clock = VirtualClock()
        let limiter = RateLimiter(clock: clock) { _ in 20 }
        let woke = Shared<Double?>(nil)
        try await clock.run(tasks: 2) { task in
            if task == 0 {
                try await limiter.acquire(host: "itunes.apple.com")  // t = 0
                try await limiter.acquire(host: "itunes.apple.com")  // booked for t = 3
                woke.withLock { $0 = clock.now() }
            } else {
                try await clock.sleep(seconds: 1)
                limiter.penalize(host: "itunes.apple.com", seconds: 29)  // until t = 30
            }
        }
        #expect(woke.current == 30)
    }
}

@Suite struct FetcherTests {
    let url = URL(string: "https://itunes.apple.com/search?term=x")!

    func fetcher(_ transport: ScriptedTransport, clock: ManualClock, attempts: Int = 4) -> Fetcher {
        var settings = HTTPSettings(maxAttempts: attempts, requestsPerMinute: [:])
        settings.backoffBaseSeconds = 1
        return Fetcher(transport: transport, settings: settings, clock: clock, random: { 0.5 })
    }

    @Test func emptyBody403IsThrottlingAndIsRetried() async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, n in
            n < 2 ? .success(HTTPResponse(url: request.url, status: 403)) : .success(ScriptedTransport.json("{}", url: request.url))
        }
        let f = fetcher(transport, clock: clock)
        let response = try await f.get(url)
        #expect(response.status == 200)
        #expect(f.stats.requests == 3)
        #expect(f.stats.retries == 2)
        #expect(f.stats.throttled == 2)
    }

    /// Up to and including http.backoffMaxSeconds (60 by default), a pause is waited
    /// out; a longer one fails the page (BoundedWaitTests).
    @Test(arguments: [7.0, 60.0])
    func retryAfterIsHonoured(_ seconds: Double) async throws {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, n in
            n == 0 ? .success(HTTPResponse(url: request.url, status: 429, headers: ["Retry-After": String(Int(seconds))]))
                   : .success(ScriptedTransport.json("{}", url: request.url))
        }
        _ = try await fetcher(transport, clock: clock).get(url)
        #expect(clock.sleeps.contains(seconds))
    }

    @Test func serverErrorsBackOffExponentiallyWithJitterThenGiveUp() async {
        let clock = ManualClock()
        let transport = ScriptedTransport { request, _ in .success(HTTPResponse(url: request.url, status: 503)) }
        let f = fetcher(transport, clock: clock, attempts: 4)
        do {
            _ = try await f.get(url)
            Issue.record("expected failure")
        } catch {
            #expect(error.description.contains(url.absoluteString))
            #expect(error.description.contains("503"))
        }
        #expect(f.stats.requests == 4)
        // random() = 0.5 → half of 1, 2, 4 seconds.
        #expect(clock.sleeps.filter { $0 > 0 } == [0.5, 1, 2])
    }

    @Test func clientErrorsAreNotRetried() async {
        let transport = ScriptedTransport { request, _ in .success(HTTPResponse(url: request.url, status: 404, body: Array("nope".utf8))) }
        let f = fetcher(transport, clock: ManualClock())
        await #expect(throws: StoreSyncError.self) { try await f.get(url) }
        #expect(f.stats.requests == 1)
    }

    @Test func timeoutsAreRetried() async throws {
        let transport = ScriptedTransport { request, n in
            n == 0 ? .failure(.timedOut(seconds: 30)) : .success(ScriptedTransport.json("{}", url: request.url))
        }
        let f = fetcher(transport, clock: ManualClock())
        _ = try await f.get(url)
        #expect(f.stats.retries == 1)
    }
}

@Suite struct PageWalkerTests {
    func response(_ index: Int) -> HTTPResponse {
        HTTPResponse(url: URL(string: "https://x/\(index)")!, status: 200)
    }

    @Test func offsetPagingStopsOnAShortPage() async {
        var seen: [Int] = []
        let outcome = await PageWalker.walk(
            pagination: .offset(pageSize: 10, maxItems: 1000),
            fetch: { index throws(StoreSyncError) in response(index) },
            decode: { r throws(StoreSyncError) in
                let index = Int(r.url.lastPathComponent)!
                return DecodedPage(items: [index], rowCount: index < 3 ? 10 : 4)
            },
            onPage: { index, _, _ throws(StoreSyncError) in seen.append(index) })
        #expect(seen == [0, 1, 2, 3])
        #expect(outcome.isComplete)
    }

    @Test func pageNumberPagingFollowsHasNextAndResumesMidway() async {
        var seen: [Int] = []
        let outcome = await PageWalker.walk(
            pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 100),
            startPage: 2,
            fetch: { index throws(StoreSyncError) in response(index) },
            decode: { r throws(StoreSyncError) in
                let index = Int(r.url.lastPathComponent)!
                return DecodedPage(items: [index], rowCount: 10, hasNext: index < 5)
            },
            onPage: { index, _, _ throws(StoreSyncError) in seen.append(index) })
        #expect(seen == [2, 3, 4, 5])
        #expect(outcome.isComplete)
    }

    @Test func aFailingPageStopsTheScopeIncomplete() async {
        let outcome = await PageWalker.walk(
            pagination: .offset(pageSize: 10, maxItems: 1000),
            fetch: { index throws(StoreSyncError) in
                if index == 2 { throw .fetchFailed(url: "https://x/2", reason: "HTTP 500") }
                return response(index)
            },
            decode: { _ throws(StoreSyncError) in DecodedPage(items: [0], rowCount: 10) },
            onPage: { _, _, _ throws(StoreSyncError) in })
        guard case .failed(let pages, let error) = outcome else {
            Issue.record("expected failure, got \(outcome)")
            return
        }
        #expect(pages == 2)
        #expect(error.description.contains("https://x/2"))
    }

    @Test func capStopsIncompleteAndEmptyPageClaimingMoreFails() async {
        let capped = await PageWalker.walk(
            pagination: .offset(pageSize: 10, maxItems: 30),
            fetch: { index throws(StoreSyncError) in response(index) },
            decode: { _ throws(StoreSyncError) in DecodedPage(items: [0], rowCount: 10) },
            onPage: { _, _, _ throws(StoreSyncError) in })
        guard case .capped(let pages) = capped else {
            Issue.record("expected capped")
            return
        }
        #expect(pages == 3)
        let lying = await PageWalker.walk(
            pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 100),
            fetch: { index throws(StoreSyncError) in response(index) },
            decode: { _ throws(StoreSyncError) in DecodedPage<Int>(items: [], rowCount: 0, hasNext: true) },
            onPage: { _, _, _ throws(StoreSyncError) in })
        #expect(!lying.isComplete)
    }
}
