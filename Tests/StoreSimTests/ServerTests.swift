import Catalog
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Logging
@testable import StoreSim
import Testing

/// The server over real loopback HTTP, on a port the OS chooses.
@Suite struct ServerTests {
    struct Fetched {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]

        func header(_ name: String) -> String? {
            headers.first { $0.key.lowercased() == name.lowercased() }?.value
        }
    }

    static func quietLogger() -> Logger {
        var logger = Logger(label: "storesim-test")
        logger.logLevel = .error
        return logger
    }

    /// One session per test: no cookies, no cache (validators are sent by hand).
    static func makeSession() -> URLSession {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        return URLSession(configuration: configuration)
    }

    func get(_ session: URLSession, _ base: URL, _ pathAndQuery: String, headers: [String: String] = [:]) async throws -> Fetched {
        let url = try #require(URL(string: base.absoluteString + pathAndQuery))
        var request = URLRequest(url: url)
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        let (data, response) = try await session.data(for: request)
        let http = try #require(response as? HTTPURLResponse)
        var fields: [String: String] = [:]
        for (name, value) in http.allHeaderFields {
            if let name = name as? String, let value = value as? String { fields[name] = value }
        }
        return Fetched(status: http.statusCode, headers: fields, body: Array(data))
    }

    @Test func servesEveryEndpointAndShutsDown() async throws {
        let world = Worlds.busy(era: .snake)
        let server = try await SimulatorServer.start(world: world, night: 1, logger: Self.quietLogger())
        let session = Self.makeSession()
        defer { session.invalidateAndCancel() }
        let base = server.baseURL
        #expect(base.host == "127.0.0.1")
        let port = try #require(base.port)
        #expect(port > 0)

        let health = try await get(session, base, "/healthChecker")
        #expect(health.status == 200 && String(decoding: health.body, as: UTF8.self) == "\"OK\"")

        let search = try await get(session, base, "/search?term=news+daily&media=podcast&limit=5&offset=0&country=us")
        #expect(search.status == 200)
        #expect(search.header("Content-Type") == "text/javascript; charset=utf-8")
        #expect(search.header("ETag") == nil && search.header("Last-Modified") == nil)
        #expect(search.body.starts(with: Array("\n\n\n{".utf8)))
        let results = try parseObject(search.body)
        #expect(results["resultCount"] == .int(5))
        let feeds = results["results"]?.arrayValue?.compactMap { $0["feedUrl"]?.stringValue } ?? []
        // Feed URLs name a fixed host, never the server's ephemeral port, so
        // two runs on two ports serve identical rows.
        #expect(!feeds.isEmpty && feeds.allSatisfy { $0.hasPrefix(World.defaultBaseURL + "/feeds/") })
        #expect(feeds.allSatisfy { !$0.contains(String(base.port ?? -1)) })

        let missing = try await get(session, base, "/search?media=podcast")
        #expect(missing.status == 400)

        let list = try await get(session, base, "/api/products?page_no=1&items_per_page=10")
        #expect(list.status == 200)
        let etag = try #require(list.header("ETag"))
        let page = try parseObject(list.body)
        #expect(page["page_no"] == .int(1) && page["pages"]?.arrayValue?.count == 10)
        let notModified = try await get(session, base, "/api/products?page_no=1&items_per_page=10",
                                        headers: ["If-None-Match": etag])
        #expect(notModified.status == 304 && notModified.body.isEmpty)

        let id = try #require(page["pages"]?.arrayValue?.first?["id"]?.intValue)
        let detail = try await get(session, base, "/api/products/\(id)")
        #expect(detail.status == 200)
        #expect(try parseObject(detail.body)["id"] == .int(id))
        let unknown = try await get(session, base, "/api/products/987654321")
        #expect(unknown.status == 404)
        #expect(try parseObject(unknown.body)["code"] == .int(404))

        // The night moves for later requests; the page then reflects night 2.
        server.setNight(2)
        #expect(server.night == 2)
        let later = try await get(session, base, "/api/products?page_no=1&items_per_page=10")
        #expect(try parseObject(later.body)["total_count"]
            == .int(Int64(world.aliveKeys(entity: "listing", night: 2).count)))

        let nowhere = try await get(session, base, "/no/such/path")
        #expect(nowhere.status == 404)

        #expect(server.requestCount == 9, "every request counts, 304s and 404s included")

        await server.shutdown()
        await server.shutdown()  // idempotent
        await #expect(throws: (any Error).self) {
            _ = try await get(Self.makeSession(), base, "/healthChecker")
        }
    }

    /// URLs inside bodies use fixed `*.storesim.test` origins: nothing served
    /// names the server's ephemeral port, so two runs on two ports serve the same records.
    @Test func noBodyNamesTheEphemeralPort() async throws {
        let world = Worlds.media()
        let server = try await SimulatorServer.start(world: world, night: 2, logger: Self.quietLogger())
        let session = Self.makeSession()
        defer { session.invalidateAndCancel() }
        let port = try #require(server.baseURL.port)
        let podcast = try #require(world.orderedKeys(entity: "podcast", night: 2).first {
            world.podcasts.episodeNumbers(world.podcasts.index(forKey: $0) ?? -1, night: 2) != nil
        })
        let album = try #require(world.orderedKeys(entity: "album", night: 2).first)
        for path in ["/search?term=love+news&limit=50", "/lookup?id=\(podcast),\(album)&entity=podcastEpisode&limit=5",
                     "/lookup?id=\(album)&entity=song", "\(Endpoints.genresPath)?id=26", "/us/rss/toppodcasts/limit=5/json",
                     "/us/rss/topalbums/limit=5/xml", "/api/v2/us/music/most-played/5/songs.json", "/feeds/\(podcast).xml",
                     "/api/products?page_no=1&items_per_page=5"] {
            let fetched = try await get(session, server.baseURL, path)
            #expect(fetched.status == 200, "\(path)")
            let text = String(decoding: fetched.body, as: UTF8.self)
            #expect(!text.contains(":\(port)") && !text.contains("127.0.0.1"), "\(path)")
        }
        // Any host name reaches the same routes (a client maps *.storesim.test to the server).
        var request = URLRequest(url: try #require(URL(string: server.baseURL.absoluteString + "/feeds/\(podcast).xml")))
        request.setValue("feeds.storesim.test", forHTTPHeaderField: "Host")
        let (_, response) = try await session.data(for: request)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        await server.shutdown()
    }

    @Test func camelEraOverHTTP() async throws {
        let world = World(config: SimulatorConfig(seed: 2, podcastCount: 50, productCount: 45, pageKeyEra: .camel))
        let server = try await SimulatorServer.start(world: world, night: 1, logger: Self.quietLogger())
        let session = Self.makeSession()
        defer { session.invalidateAndCancel() }
        let page = try parseObject(try await get(session, server.baseURL, "/api/products?page_no=3&items_per_page=20").body)
        #expect(page["pageNo"] == .int(3) && page["totalCount"] == .int(45) && page["hasNext"] == .bool(false))
        #expect(page["pages"]?.arrayValue?.count == 5)
        await server.shutdown()
    }

    @Test func twoServersGetDifferentPortsAndABusyPortFails() async throws {
        let world = World(config: SimulatorConfig(seed: 1, podcastCount: 10, productCount: 10))
        let first = try await SimulatorServer.start(world: world, night: 1, logger: Self.quietLogger())
        let second = try await SimulatorServer.start(world: world, night: 1, logger: Self.quietLogger())
        #expect(first.baseURL != second.baseURL)
        let busyPort = try #require(first.baseURL.port)
        await #expect(throws: (any Error).self) {
            let third = try await SimulatorServer.start(world: world, night: 1, port: busyPort, logger: Self.quietLogger())
            await third.shutdown()
        }
        await first.shutdown()
        await second.shutdown()
    }

    /// After shutdown the port is free again: a new server can bind it.
    /// Tests running beside this one bind ports of their own, and one may
    /// take the port in the instant between shutdown and the new bind (seen
    /// once under the full suite): a shutdown that kept its port fails every
    /// try, a port taken by chance fails one.
    @Test func shutdownReleasesThePort() async throws {
        let world = World(config: SimulatorConfig(seed: 1, podcastCount: 10, productCount: 10))
        var failures: [String] = []
        for _ in 0..<5 {
            let first = try await SimulatorServer.start(world: world, night: 1, logger: Self.quietLogger())
            let port = try #require(first.baseURL.port)
            await first.shutdown()
            do {
                let again = try await SimulatorServer.start(world: world, night: 1, port: port, logger: Self.quietLogger())
                #expect(again.baseURL.port == port)
                await again.shutdown()
                return
            } catch {
                failures.append("port \(port): \(error)")
            }
        }
        Issue.record("no port was free again after its server shut down: \(failures)")
    }
}
