import Catalog
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
@testable import StoreSim
import Testing

@Suite struct FaultPlanTests {
    @Test func parsesEveryDocumentedFault() throws {
        #expect(FaultPlan.none.isEmpty && FaultPlan.none.description == "none")
        let names = FaultPlan.documentation.map(\.name)
        #expect(Set(names).count == names.count && names.count == FaultPlan.Kind.allCases.count)
        for (name, description) in FaultPlan.documentation {
            #expect(description.contains("VALUE"), "\(name) documents its VALUE")
            let plan = try FaultPlan.parse([name])
            #expect(!plan.isEmpty, "\(name) alone takes its default")
            #expect(try FaultPlan.parse(plan.specs) == plan, "\(name) round-trips")
        }
        // The issue's examples.
        let plan = try FaultPlan.parse(["rate-limit-403:0.2", "http-500:0.1", "burst-503:3", "latency:0.05", "timeout:0.05",
                                        "reset:0.1", "truncate:0.1", "malformed-json:0.1", "html-200:0.1", "empty-page:0.1",
                                        "duplicate:0.1", "drift:2", "huge-field:0.01", "invalid-utf8:0.01",
                                        "xml-invalid-chars:0.05", "formula-strings:0.05", "rate-limit-429:0.2"])
        #expect(plan.specs.count == 17 && plan.hasContentFaults)
        #expect(plan.value(.burst503) == 3 && plan.value(.drift) == 2 && plan.value(.latency) == 0.05)
        #expect(try FaultPlan.parse([" HTTP-500 : 0.5 "]).value(.http500) == 0.5, "names are case-insensitive, spaces trimmed")
        #expect(try FaultPlan.parse(["http-500:0"]).isEmpty, "a probability of 0 leaves the fault off")
        #expect(try FaultPlan.parse([]) == .none)
    }

    @Test(arguments: [
        ("http-5000:0.1", "unknown fault"), ("http-500:1.5", "between 0 and 1"), ("http-500:abc", "not a number"),
        ("burst-503:2.5", "whole number"), ("burst-503:0", "whole number"), ("drift:101", "from 1 to 100"),
        ("latency:-1", "milliseconds"), ("latency:nan", "not a number"), ("  ", "empty fault spec"),
    ])
    func rejectsBadSpecs(spec: String, says: String) {
        do {
            _ = try FaultPlan.parse([spec])
            Issue.record("\(spec) was accepted")
        } catch let error as FaultPlanError {
            #expect(error.description.contains(says), "\(error.description)")
            #expect(error.description.contains(spec))
        } catch {
            Issue.record("unexpected \(error)")
        }
    }

    @Test func unknownNamesListTheValidOnes() {
        #expect(throws: FaultPlanError.self) { try FaultPlan.parse(["http-500", "http-500:0.2"]) }
        do {
            _ = try FaultPlan.parse(["nope"])
        } catch {
            let text = "\(error)"
            #expect(FaultPlan.documentation.allSatisfy { text.contains($0.name) })
        }
    }

    @Test func serverDocumentsItsEndpoints() {
        let docs = SimulatorServer.endpointDocumentation
        for path in ["/search", "/lookup", "genres", "/rss/", "/api/v2/", "/feeds/", "/api/products", "/healthChecker"] {
            #expect(docs.contains { $0.path.contains(path) }, "\(path)")
        }
    }
}

/// The fault engine without sockets: decisions by seed and request sequence.
@Suite struct FaultEngineTests {
    func decisions(_ plan: FaultPlan, seed: UInt64, _ urls: [(String, String?)]) -> [FaultEngine.Decision] {
        let engine = FaultEngine(plan: plan, seed: seed)
        return urls.map { engine.decide(path: $0.0, query: $0.1) }
    }

    var crawl: [(String, String?)] {
        (1...12).map { ("/api/products", "page_no=\($0)&items_per_page=10") }
            + (0..<8).map { ("/search", "term=news&offset=\($0 * 20)&limit=20") }
    }

    @Test func sameSeedSameRequestsSameDecisions() throws {
        let plan = try FaultPlan.parse(["http-500:0.2", "truncate:0.2", "duplicate:0.3", "latency:50", "drift:2"])
        #expect(decisions(plan, seed: 1, crawl) == decisions(plan, seed: 1, crawl))
        #expect(decisions(plan, seed: 1, crawl) != decisions(plan, seed: 2, crawl))
        #expect(decisions(.none, seed: 1, crawl).allSatisfy { $0.fault == nil && $0.effects.isNone && $0.delayMilliseconds == 0 })
    }

    /// A URL that just got a transient fault is answered cleanly next time, so one retry suffices.
    @Test func aRetryGetsTheCleanAnswer() throws {
        let engine = FaultEngine(plan: try FaultPlan.parse(["http-503:1"]), seed: 3)
        for page in 1...5 {
            let query = "page_no=\(page)&items_per_page=10"
            #expect(engine.decide(path: "/api/products", query: query).replacement?.status == 503)
            #expect(engine.decide(path: "/api/products", query: query).replacement == nil)
        }
    }

    @Test func burstsOutlastRetries() throws {
        let engine = FaultEngine(plan: try FaultPlan.parse(["burst-502:4"]), seed: 5)
        let statuses = (0..<60).map { _ in engine.decide(path: "/api/products", query: "page_no=1").replacement?.status }
        let first = try #require(statuses.firstIndex(of: 502))
        #expect(first < 10)
        #expect(statuses[first..<(first + 4)].allSatisfy { $0 == 502 }, "the same URL keeps failing through a burst")
        #expect(statuses[(first + 4)..<(first + 24)].allSatisfy { $0 == nil }, "20 clean requests follow")
        #expect(statuses[first + 24] == 502)
    }

    @Test func driftShiftsLaterPagesOfOneCrawl() throws {
        let engine = FaultEngine(plan: try FaultPlan.parse(["drift:3"]), seed: 1)
        let shifts = (1...8).map { engine.decide(path: "/api/products", query: "page_no=\($0)").effects.shift }
        #expect(shifts == [0, 3, 6, 9, 12, 15, 15, 15], "N per request, at most \(FaultPlan.maxDriftSteps) steps")
        #expect(engine.decide(path: "/api/products", query: "page_no=1").effects.shift == 0, "a new crawl starts over")
        #expect(engine.decide(path: "/search", query: "term=a").effects.shift == 0)
    }

    @Test func pageFaultsOnlyHitPages() throws {
        let engine = FaultEngine(plan: try FaultPlan.parse(["empty-page:1", "duplicate:1"]), seed: 1)
        #expect(engine.decide(path: "/search", query: "term=a&offset=0").fault == nil)
        #expect(engine.decide(path: "/search", query: "term=a&offset=20").fault == .duplicate)
        #expect(engine.decide(path: "/healthChecker", query: nil).fault == nil)
        #expect(engine.decide(path: "/api/products", query: "page_no=1").fault == .emptyPage)
    }

    @Test func damageBreaksTheDocument() throws {
        let engine = FaultEngine(plan: .none, seed: 9)
        let world = Worlds.media()
        for path in ["/api/products?page_no=1", "/search?term=love&media=music", "/us/rss/topalbums/limit=3/xml",
                     "/healthChecker"] {
            let clean = request(world, night: 1, path)
            for n in 0..<20 {
                let truncated = engine.damage(clean, with: .truncate, sequence: n)
                #expect(truncated.body.count < clean.body.count && clean.body.starts(with: truncated.body))
                #expect(truncated.etag == nil && truncated.lastModified == nil)
                let malformed = engine.damage(clean, with: .malformedJSON, sequence: n)
                if clean.contentType?.contains("xml") == true {
                    #expect(xmlElementNames(truncated.body) == nil && xmlElementNames(malformed.body) == nil)
                } else {
                    #expect((try? parse(truncated.body)) == nil, "\(path): a truncated body must not parse")
                    #expect((try? parse(malformed.body)) == nil, "\(path): a malformed body must not parse")
                }
            }
        }
    }
}

/// Each transient fault as a client meets it, over loopback HTTP.
@Suite struct FaultServerTests {
    struct Fetched: Equatable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        func header(_ name: String) -> String? { headers.first { $0.key.lowercased() == name.lowercased() }?.value }
    }

    static func quietLogger() -> Logger {
        var logger = Logger(label: "storesim-fault-test")
        logger.logLevel = .critical
        return logger
    }

    /// `timeout` bounds a hang, not the server's speed: the suite's other tests
    /// can keep both of CI's cooperative threads (which the simulator answers
    /// on) busy for seconds, and a 10 s bound failed answers that were coming.
    static func session(timeout: Double = 120) -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.timeoutIntervalForRequest = timeout
        return URLSession(configuration: configuration)
    }

    func get(_ session: URLSession, _ base: URL, _ path: String) async throws -> Fetched {
        let url = try #require(URL(string: base.absoluteString + path))
        let (data, response) = try await session.data(for: URLRequest(url: url))
        let http = try #require(response as? HTTPURLResponse)
        var headers: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { headers[name] = value }
        }
        return Fetched(status: http.statusCode, headers: headers, body: Array(data))
    }

    static let config = SimulatorConfig(seed: 12, podcastCount: 200, productCount: 90, pageKeyEra: .snake, songCount: 50,
                                        movieCount: 5, appCount: 5, audiobookCount: 5, ebookCount: 5)

    func withServer(_ specs: [String], _ body: (SimulatorServer, URLSession) async throws -> Void) async throws {
        var config = Self.config
        config.faults = try FaultPlan.parse(specs)
        let server = try await SimulatorServer.start(world: World(config: config), night: 2, logger: Self.quietLogger())
        let session = Self.session()
        do {
            try await body(server, session)
        } catch {
            session.invalidateAndCancel()
            await server.shutdown()
            throw error
        }
        session.invalidateAndCancel()
        await server.shutdown()
    }

    @Test(arguments: [("rate-limit-403", 403), ("rate-limit-429", 429), ("http-500", 500), ("http-502", 502),
                      ("http-503", 503), ("burst-500", 500), ("burst-502", 502), ("burst-503", 503)])
    func statusFaults(name: String, status: Int) async throws {
        let spec = name.hasPrefix("burst") ? "\(name):50" : "\(name):1"
        try await withServer([spec]) { server, session in
            let path = "/api/products?page_no=1&items_per_page=10"
            // Bursts start within the first ten requests; probabilistic faults at once.
            var first = try await get(session, server.baseURL, path)
            var attempts = 1
            while first.status == 200, attempts < 10 {
                first = try await get(session, server.baseURL, path)
                attempts += 1
            }
            #expect(first.status == status)
            switch status {
            case 403: #expect(first.body.isEmpty, "iTunes' throttling 403 has an empty body")
            case 429: #expect(first.header("Retry-After") == "1")
            case 503: #expect(first.header("Retry-After") == "1" && String(decoding: first.body, as: UTF8.self).contains("<html>"))
            default: #expect(String(decoding: first.body, as: UTF8.self).contains("<html>"))
            }
            let second = try await get(session, server.baseURL, path)
            if name.hasPrefix("burst") {
                #expect(second.status == status, "a burst outlasts a retry")
            } else {
                #expect(second.status == 200, "the retry gets the clean answer")
                #expect(try parseObject(second.body)["pages"] != nil)
            }
            #expect((server.injectedFaults[name] ?? 0) >= 1)
        }
    }

    @Test func html200AndBodyDamage() async throws {
        let path = "/api/products?page_no=1&items_per_page=10"
        try await withServer(["html-200:1"]) { server, session in
            let page = try await get(session, server.baseURL, path)
            #expect(page.status == 200 && page.header("Content-Type")?.hasPrefix("text/html") == true)
            #expect(String(decoding: page.body, as: UTF8.self).hasPrefix("<!DOCTYPE html>"))
        }
        for fault in ["truncate", "malformed-json"] {
            try await withServer(["\(fault):1"]) { server, session in
                let damaged = try await get(session, server.baseURL, path)
                let clean = try await get(session, server.baseURL, path)
                #expect(damaged.status == 200 && clean.status == 200)
                #expect((try? parse(damaged.body)) == nil && (try? parse(clean.body)) != nil, "\(fault)")
                #expect(damaged.body.count < clean.body.count)
                #expect(damaged.header("ETag") == nil && clean.header("ETag") != nil, "a damaged body is a one-off")
                if fault == "truncate" { #expect(clean.body.starts(with: damaged.body)) }
            }
        }
    }

    @Test func pageFaults() async throws {
        let world = World(config: Self.config)
        let newestFirst = world.orderedKeys(entity: "listing", night: 2)
        try await withServer(["empty-page:1"]) { server, session in
            let page = try parseObject(try await get(session, server.baseURL, "/api/products?page_no=2&items_per_page=10").body)
            #expect(page["pages"] == .array([]) && page["has_next"] == .bool(true))
        }
        try await withServer(["duplicate:1"]) { server, session in
            let page = try parseObject(try await get(session, server.baseURL, "/api/products?page_no=2&items_per_page=10").body)
            let ids = page["pages"]?.arrayValue?.compactMap { $0["id"]?.intValue.map(String.init) } ?? []
            #expect(ids == Array(newestFirst[9..<20]), "page 2 repeats page 1's last row first")
            let search = try resultRows(SimResponse(status: 200, body: try await get(
                session, server.baseURL, "/search?term=news&media=podcast&limit=10&offset=10").body))
            let expected = world.searchResultKeys(term: "news", night: 2)
            #expect(search.compactMap { $0["trackId"]?.intValue.map(String.init) } == Array(expected[9..<20]))
        }
        try await withServer(["drift:2"]) { server, session in
            var seen: [String] = []
            var pageNo = 1
            while true {
                let page = try parseObject(try await get(
                    session, server.baseURL, "/api/products?page_no=\(pageNo)&items_per_page=10").body)
                seen += page["pages"]?.arrayValue?.compactMap { $0["id"]?.intValue.map(String.init) } ?? []
                if page["has_next"] != .bool(true) { break }
                pageNo += 1
            }
            #expect(Set(seen) == Set(newestFirst), "drift repeats rows, it never hides one")
            #expect(seen.count > newestFirst.count, "rows repeat across pages")
            #expect((server.injectedFaults["drift"] ?? 0) > 0)
        }
    }

    @Test func transportFaults() async throws {
        let path = "/api/products?page_no=1&items_per_page=5"
        try await withServer(["reset:1"]) { server, session in
            await #expect(throws: (any Error).self) { _ = try await get(session, server.baseURL, path) }
            // The next request for that URL is answered.
            let retry = try await get(session, server.baseURL, path)
            #expect(retry.status == 200)
            #expect(server.injectedFaults["reset"] == 1)
        }
        try await withServer(["latency:300"]) { server, session in
            let clock = ContinuousClock()
            let started = clock.now
            let delayed = try await get(session, server.baseURL, path)
            #expect(delayed.status == 200)
            // A lower bound only: the answer waited at least half the configured latency.
            #expect(clock.now - started >= .milliseconds(150))
        }
        try await withServer(["timeout:1"]) { server, _ in
            // Shorter than the hold, long enough for a loaded machine to deliver the request.
            let impatient = Self.session(timeout: FaultPlan.timeoutHoldSeconds * 0.75)
            defer { impatient.invalidateAndCancel() }
            await #expect(throws: (any Error).self) { _ = try await get(impatient, server.baseURL, path) }
            // Under load the client may give up before the server's handler has run:
            // wait (bounded) for the server to record the fault, then check it came once.
            let deadline = ContinuousClock.now + .seconds(30)
            while server.injectedFaults["timeout"] == nil, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
            #expect(server.injectedFaults["timeout"] == 1)
        }
    }

    /// Same seed, same faults, same request sequence: the same responses, byte for byte.
    @Test func responsesAreDeterministic() async throws {
        let specs = ["http-500:0.2", "truncate:0.2", "malformed-json:0.1", "duplicate:0.3", "drift:2", "rate-limit-403:0.1",
                     "html-200:0.1", "empty-page:0.1"]
        let paths = (1...6).map { "/api/products?page_no=\($0)&items_per_page=15" }
            + (0..<4).map { "/search?term=news&media=podcast&limit=20&offset=\($0 * 20)" }
            + ["/us/rss/toppodcasts/limit=5/json", "/lookup?id=1"]
        var runs: [[Fetched]] = []
        for _ in 0..<2 {
            try await withServer(specs) { server, session in
                var fetched: [Fetched] = []
                for path in paths + paths {
                    var response = try await get(session, server.baseURL, path)
                    response.headers = response.headers.filter { $0.key.lowercased() != "date" }
                    fetched.append(response)
                }
                runs.append(fetched)
            }
        }
        #expect(runs[0] == runs[1])
        #expect(runs[0].contains { $0.status != 200 } || runs[0].contains { (try? parse($0.body)) == nil },
                "some fault fired")
    }
}

/// Content faults are part of the world: the truth is unchanged, rowJSON shows them.
@Suite struct ContentFaultTests {
    func worlds(_ specs: [String]) throws -> (clean: World, faulty: World) {
        (Worlds.media(), Worlds.media(faults: try FaultPlan.parse(specs)))
    }

    @Test func theTruthIsUnchanged() throws {
        let (clean, faulty) = try worlds(["huge-field:0.2", "invalid-utf8:0.2", "xml-invalid-chars:0.2",
                                          "formula-strings:0.2"])
        for entity in World.entities {
            for night in 1...3 {
                #expect(clean.diff(entity: entity, night: night) == faulty.diff(entity: entity, night: night), "\(entity)")
                #expect(clean.aliveKeys(entity: entity, night: night) == faulty.aliveKeys(entity: entity, night: night))
            }
        }
        // And the faulty world's truth is still exact against what it serves.
        var before: [String: JSONValue] = [:]
        for night in 1...3 {
            let after = try servedProductRows(faulty, night: night)
            #expect(faulty.diff(entity: "listing", night: night) == observedDiff(before: before, after: after))
            before = after
        }
    }

    @Test func hugeFields() throws {
        let world = try worlds(["huge-field:1"]).faulty
        let row = try parseObject(request(world, night: 1, "/api/products/5").body)
        let text = row["name"]?.stringValue ?? row["description"]?.stringValue ?? ""
        #expect(text.utf8.count > 1_000_000)
        let podcast = try #require(world.rowJSON(entity: "podcast", key: world.orderedKeys(entity: "podcast", night: 1)[0],
                                                 night: 1))
        #expect(podcast.utf8.count > 1_000_000)
    }

    @Test func invalidUTF8() throws {
        let world = try worlds(["invalid-utf8:1"]).faulty
        let page = request(world, night: 1, "/api/products?page_no=1&items_per_page=5")
        #expect(String(validating: page.body, as: UTF8.self) == nil, "the wire carries bytes that are not UTF-8")
        let names = try parseObject(page.body)["pages"]?.arrayValue?.compactMap { $0["name"]?.stringValue } ?? []
        #expect(!names.isEmpty && names.allSatisfy { $0.contains("\u{FFFD}") })
        let key = world.orderedKeys(entity: "listing", night: 1)[0]
        #expect(world.rowJSON(entity: "listing", key: key, night: 1)?.contains("\u{FFFD}") == true)
    }

    @Test func xmlInvalidCharacters() throws {
        let world = try worlds(["xml-invalid-chars:1"]).faulty
        let row = try #require(try resultRows(request(world, night: 1, "/search?term=news&media=podcast&limit=1")).first)
        let title = try #require(row["trackName"]?.stringValue)
        #expect(title.unicodeScalars.contains { [0x1, 0x8, 0x1B, 0xFFFE, 0xFFFF].contains($0.value) })
        let key = try #require(world.orderedKeys(entity: "podcast", night: 1).first {
            world.podcasts.episodeNumbers(world.podcasts.index(forKey: $0) ?? -1, night: 1) != nil
        })
        let feed = request(world, night: 1, "/feeds/\(key).xml")
        #expect(feed.status == 200 && xmlElementNames(feed.body) == nil, "the feed is not XML 1.0 any more")
        #expect(xmlElementNames(request(Worlds.media(), night: 1, "/feeds/\(key).xml").body) != nil)
    }

    @Test func formulaStrings() throws {
        let world = try worlds(["formula-strings:1"]).faulty
        for path in ["/api/products?page_no=1&items_per_page=20", "/search?term=love&media=music&limit=20"] {
            let text = request(world, night: 1, path).text
            let starts = ["\"=", "\"+", "\"-", "\"@"].map { "\"name\":\($0)" } + ["\"trackName\":\"=", "\"trackName\":\"+",
                                                                                    "\"trackName\":\"-", "\"trackName\":\"@"]
            #expect(starts.contains { text.contains($0) }, "\(path)")
        }
    }
}
