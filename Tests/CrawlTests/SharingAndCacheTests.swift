import Catalog
import Crawl
import Foundation
import Testing
import TestSupport

/// Concurrent calls for one page share a request.
@Suite struct InFlightSharingTests {
    let url = URL(string: "http://feeds.example.com/feeds/1.xml")!

    func fetcher(_ transport: any HTTPTransport, clock: any CrawlClock = ManualClock()) -> Fetcher {
        Fetcher(transport: transport, settings: HTTPSettings(requestsPerMinute: [:], cacheTTLSeconds: 0),
                clock: clock, random: { 0.5 })
    }

    @Test func concurrentCallsForOneURLShareOneRequest() async throws {
        let transport = GatedTransport { request, n in .success(ScriptedTransport.json("page \(n)", url: request.url)) }
        let f = fetcher(transport)
        let first = Task { try await f.get(url) }
        await transport.waitForRequests(1)
        let second = Task { try await f.get(url) }
        #expect(await eventually { f.stats.shared == 1 })
        transport.open()
        let a = try await first.value
        let b = try await second.value
        #expect(a == b)
        #expect(a.body == Array("page 0".utf8))
        #expect(transport.requests.count == 1)
        #expect(f.stats.requests == 1)
        #expect(f.stats.shared == 1)
    }

    @Test func differentHeadersAreDifferentRequests() async throws {
        let transport = GatedTransport { request, _ in .success(ScriptedTransport.json("{}", url: request.url)) }
        let f = fetcher(transport)
        let first = Task { try await f.get(url) }
        let second = Task { try await f.get(url, headers: ["If-None-Match": "\"v1\""]) }
        await transport.waitForRequests(2)
        transport.open()
        _ = try await (first.value, second.value)
        #expect(f.stats.shared == 0)
        #expect(f.stats.requests == 2)
    }

    /// The joiner gets the leader's failure; the failure is counted once.
    @Test func aFailureIsSharedToo() async throws {
        let transport = GatedTransport { request, _ in .success(HTTPResponse(url: request.url, status: 404)) }
        let f = fetcher(transport)
        let first = Task { try await f.get(url) }
        await transport.waitForRequests(1)
        let second = Task { try await f.get(url) }
        #expect(await eventually { f.stats.shared == 1 })
        transport.open()
        await #expect(throws: StoreSyncError.self) { try await first.value }
        await #expect(throws: StoreSyncError.self) { try await second.value }
        #expect(f.stats.failures == 1)
        #expect(f.stats.requests == 1)
    }

    /// A cancelled joiner stops waiting at once; the leader carries on.
    @Test func aCancelledJoinerDoesNotWaitForTheLeader() async throws {
        let transport = GatedTransport { request, _ in .success(ScriptedTransport.json("{}", url: request.url)) }
        let f = fetcher(transport)
        let leader = Task { try await f.get(url) }
        await transport.waitForRequests(1)
        let joiner = Task { try await f.get(url) }
        #expect(await eventually { f.stats.shared == 1 })
        joiner.cancel()
        // Returns while the leader's request is still held at the gate.
        await #expect(throws: StoreSyncError.self) { try await joiner.value }
        transport.open()
        #expect(try await leader.value.status == 200)
    }

    /// The leader's task being cancelled says nothing about the page: the
    /// joiner asks again itself instead of failing with the leader.
    @Test func aJoinerOutlivesACancelledLeader() async throws {
        let transport = GatedTransport { request, n in
            n == 0 ? .success(HTTPResponse(url: request.url, status: 503))
                   : .success(ScriptedTransport.json("{}", url: request.url))
        }
        let f = fetcher(transport)
        let leader = Task { try await f.get(url) }
        await transport.waitForRequests(1)
        let joiner = Task { try await f.get(url) }
        #expect(await eventually { f.stats.shared == 1 })
        leader.cancel()
        // The 503 sends the leader into a backoff sleep, which sees the cancellation.
        transport.open()
        await #expect(throws: StoreSyncError.self) { try await leader.value }
        #expect(try await joiner.value.status == 200)
        #expect(transport.requests.count == 2)
    }
}

/// Pages fetched earlier in the run are not fetched again within the TTL.
@Suite struct ResponseCacheTests {
    let url = URL(string: "https://itunes.apple.com/lookup?id=1")!

    func fetcher(_ transport: ScriptedTransport, clock: ManualClock, ttl: Double = 600,
                 maxEntries: Int = 100, maxBytes: Int = 1 << 20) -> Fetcher {
        Fetcher(transport: transport, settings: HTTPSettings(requestsPerMinute: [:], cacheTTLSeconds: ttl),
                clock: clock, random: { 0.5 }, cacheMaxEntries: maxEntries, cacheMaxBytes: maxBytes)
    }

    /// Answers `body n` to request n.
    func numbered(status: Int = 200) -> ScriptedTransport {
        ScriptedTransport { request, n in .success(ScriptedTransport.json("body \(n)", status: status, url: request.url)) }
    }

    @Test func aFreshResponseIsReusedUntilTheTTLEnds() async throws {
        let clock = ManualClock()
        let transport = numbered()
        let f = fetcher(transport, clock: clock)
        #expect(try await f.get(url).body == Array("body 0".utf8))
        clock.advance(by: 599)
        let cached = try await f.get(url)
        #expect(cached.body == Array("body 0".utf8))
        #expect(cached.url == url)
        #expect(f.stats.cacheHits == 1)
        clock.advance(by: 1)
        #expect(try await f.get(url).body == Array("body 1".utf8))
        #expect(f.stats.requests == 2)
        #expect(f.stats.cacheHits == 1)
    }

    @Test func ttlZeroDisablesTheCache() async throws {
        let transport = numbered()
        let f = fetcher(transport, clock: ManualClock(), ttl: 0)
        _ = try await f.get(url)
        _ = try await f.get(url)
        #expect(f.stats.requests == 2)
        #expect(f.stats.cacheHits == 0)
    }

    /// A page nothing else in the run asks for (a list read once a night)
    /// is not kept: the next ask goes to the server, and a kept one is still answered.
    @Test func aResponseNotKeptIsFetchedAgain() async throws {
        let transport = numbered()
        let f = fetcher(transport, clock: ManualClock())
        #expect(try await f.get(url, keepsResponse: false).body == Array("body 0".utf8))
        #expect(try await f.get(url).body == Array("body 1".utf8))
        #expect(try await f.get(url, keepsResponse: false).body == Array("body 1".utf8))
        #expect(f.stats.requests == 2)
        #expect(f.stats.cacheHits == 1)
    }

    /// A page whose body did not decode is fetched again, and the new body
    /// is what later callers get.
    @Test func bypassingFetchesAgainAndReplacesTheEntry() async throws {
        let transport = numbered()
        let f = fetcher(transport, clock: ManualClock())
        _ = try await f.get(url)
        #expect(try await f.get(url, bypassCache: true).body == Array("body 1".utf8))
        #expect(try await f.get(url).body == Array("body 1".utf8))
        #expect(f.stats.requests == 2)
        #expect(f.stats.cacheHits == 1)
    }

    /// A failed bypass leaves no stale entry behind to be served instead.
    @Test func aFailedBypassDropsTheOldEntry() async throws {
        let transport = ScriptedTransport { request, n in
            n == 1 ? .success(HTTPResponse(url: request.url, status: 404))
                   : .success(ScriptedTransport.json("body \(n)", url: request.url))
        }
        let f = fetcher(transport, clock: ManualClock())
        _ = try await f.get(url)
        await #expect(throws: StoreSyncError.self) { try await f.get(url, bypassCache: true) }
        #expect(try await f.get(url).body == Array("body 2".utf8))
    }

    @Test func notModifiedAndErrorsAreNotCached() async throws {
        for status in [304, 404] {
            let transport = numbered(status: status)
            let f = fetcher(transport, clock: ManualClock())
            _ = try? await f.get(url)
            _ = try? await f.get(url)
            #expect(f.stats.requests == 2, "status \(status)")
            #expect(f.stats.cacheHits == 0, "status \(status)")
        }
    }

    /// Validators reach the server untouched and get its own verdict, even
    /// with a 200 for the URL in the cache.
    @Test func conditionalRequestsSkipTheCache() async throws {
        let transport = ScriptedTransport { request, _ in
            request.headers["If-None-Match"] == "\"v1\""
                ? .success(HTTPResponse(url: request.url, status: 304))
                : .success(ScriptedTransport.json("{}", url: request.url, headers: ["ETag": "\"v1\""]))
        }
        let f = fetcher(transport, clock: ManualClock())
        #expect(try await f.get(url).status == 200)
        #expect(try await f.get(url, headers: ["If-None-Match": "\"v1\""]).status == 304)
        #expect(try await f.get(url, headers: ["If-None-Match": "\"v1\""]).status == 304)
        #expect(f.stats.requests == 3)
        #expect(f.stats.notModified == 2)
        #expect(f.stats.cacheHits == 0)
    }

    @Test func theOldestEntriesGoWhenTheCountIsFull() async throws {
        let transport = numbered()
        let f = fetcher(transport, clock: ManualClock(), maxEntries: 2)
        let urls = (0..<3).map { URL(string: "https://itunes.apple.com/lookup?id=\($0)")! }
        for u in urls { _ = try await f.get(u) }
        _ = try await f.get(urls[2])
        _ = try await f.get(urls[1])
        #expect(f.stats.cacheHits == 2)
        _ = try await f.get(urls[0])
        #expect(f.stats.requests == 4)
    }

    @Test func theOldestEntriesGoWhenTheBytesAreFull() async throws {
        let big = String(repeating: "x", count: 1000)
        let transport = ScriptedTransport { request, _ in .success(ScriptedTransport.json(big, url: request.url)) }
        // Room for two 1000-byte pages, not three.
        let f = fetcher(transport, clock: ManualClock(), maxBytes: 2500)
        let urls = (0..<3).map { URL(string: "https://itunes.apple.com/lookup?id=\($0)")! }
        for u in urls { _ = try await f.get(u) }
        _ = try await f.get(urls[1])
        _ = try await f.get(urls[2])
        #expect(f.stats.cacheHits == 2)
        _ = try await f.get(urls[0])
        #expect(f.stats.requests == 4)
        // A page bigger than the whole cache is never kept.
        let tiny = fetcher(transport, clock: ManualClock(), maxBytes: 500)
        _ = try await tiny.get(urls[0])
        _ = try await tiny.get(urls[0])
        #expect(tiny.stats.requests == 2)
    }
}
