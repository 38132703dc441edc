import Crawl
import Foundation
@testable import StoreSim
import Testing

/// The simulator's WebSub hub and Podping-style notifier answer as the real
/// ones do, and remember what they accepted.
@Suite struct PushEndpointsTests {
    static let form = "application/x-www-form-urlencoded"

    @Test func theHubAcceptsAPublishFormAndRefusesTheRest() {
        func status(_ type: String?, _ body: String) -> Int { PushEndpoints.hub(contentType: type, body: Array(body.utf8)).0.status }
        #expect(status(Self.form, "hub.mode=publish&hub.url=https%3A%2F%2Fexample.com%2Ffeed.xml") == 204)
        #expect(status(Self.form + "; charset=utf-8", "hub.mode=publish&hub.topic=https%3A%2F%2Fexample.com%2Ffeed.xml") == 204)
        #expect(status("application/json", "{\"hub.mode\": \"publish\"}") == 400)
        #expect(status(Self.form, "hub.mode=subscribe&hub.url=https%3A%2F%2Fexample.com%2Ffeed.xml") == 400)
        #expect(status(Self.form, "hub.mode=publish&hub.url=ftp%3A%2F%2Fexample.com%2Ffeed.xml") == 400)
        #expect(status(Self.form, "hub.mode=publish") == 400)
        #expect(PushEndpoints.hub(contentType: Self.form, body: Array("hub.mode=publish&hub.url=https%3A%2F%2Fe.com%2Fa%3Fb%3D1".utf8)).1
                    == PushEndpoints.Ping(service: "websub", topic: "https://e.com/a?b=1"))
    }

    @Test func theNotifierWantsItsTokenAndAFeedURL() {
        #expect(PushEndpoints.podping(query: "url=https%3A%2F%2Fe.com%2Ff.xml&reason=update&medium=podcast", authorization: "tok").0.status == 200)
        #expect(PushEndpoints.podping(query: "url=https%3A%2F%2Fe.com%2Ff.xml", authorization: nil).0.status == 401)
        #expect(PushEndpoints.podping(query: "reason=update", authorization: "tok").0.status == 400)
        #expect(PushEndpoints.podping(query: "url=https%3A%2F%2Fe.com%2Ff.xml&reason=because", authorization: "tok").0.status == 400)
    }

    /// Over HTTP, through the server: a POST reaches the hub, every other POST is refused, and what was accepted is remembered.
    @Test func theServerRemembersWhatItWasTold() async throws {
        let world = World(config: SimulatorConfig(seed: 1, podcastCount: 5, productCount: 5))
        let server = try await SimulatorServer.start(world: world, night: 1)
        let poster = AsyncHTTPPoster()
        let hub = server.baseURL.appendingPathComponent("websub/hub")
        let accepted = try await poster.post(hub, headers: [("Content-Type", Self.form)],
                                             body: Array("hub.mode=publish&hub.url=https%3A%2F%2Fexample.com%2Ffeed.xml".utf8), timeoutSeconds: 60)
        let elsewhere = try await poster.post(server.baseURL.appendingPathComponent("search"), headers: [], body: [], timeoutSeconds: 60)
        let transport = AsyncHTTPTransport()
        let pinged = try await transport.get(HTTPRequest(url: URL(string: server.baseURL.absoluteString + "/podping?url=https%3A%2F%2Fexample.com%2Ffeed.xml")!,
                                                         headers: ["Authorization": "tok"]), timeoutSeconds: 60)
        await transport.shutdown()
        #expect(accepted == 204 && elsewhere == 405 && pinged.status == 200)
        #expect(server.pushes.map { "\($0.service) \($0.topic)" } == ["websub https://example.com/feed.xml", "podping https://example.com/feed.xml"])
        await server.shutdown()
    }
}
