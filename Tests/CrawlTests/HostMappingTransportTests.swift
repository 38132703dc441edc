import Catalog
import Crawl
import Foundation
import Testing
import TestSupport

@Suite struct HostMappingTransportTests {
    let simulator = URL(string: "http://127.0.0.1:8123")!

    func mapped(_ base: ScriptedTransport) -> HostMappingTransport {
        HostMappingTransport(wrapping: base, hostSuffix: ".storesim.test", to: simulator)
    }

    static func ok() -> ScriptedTransport {
        ScriptedTransport { request, _ in .success(ScriptedTransport.json("{}", url: request.url)) }
    }

    /// The simulator's fixed origins reach its real address; the response
    /// still names the address that was asked for.
    @Test func simulatorHostsGoToTheBaseURLAndKeepTheirOwnURL() async throws {
        let base = Self.ok()
        let original = URL(string: "https://feeds.storesim.test/feeds/123.xml?page=2&x=a%20b")!
        let response = try await mapped(base).get(HTTPRequest(url: original, headers: ["If-None-Match": "\"e\""]),
                                                  timeoutSeconds: 1)
        #expect(base.requests == [URL(string: "http://127.0.0.1:8123/feeds/123.xml?page=2&x=a%20b")!])
        #expect(response.url == original)
    }

    @Test func otherHostsPassThroughUntouched() async throws {
        let base = Self.ok()
        let transport = mapped(base)
        let urls = ["https://itunes.apple.com/search?term=x", "http://notstoresim.test/a", "http://storesim.test.example/a"]
            .map { URL(string: $0)! }
        for url in urls { _ = try await transport.get(HTTPRequest(url: url), timeoutSeconds: 1) }
        #expect(base.requests == urls)
    }

    @Test func suffixMatchingIsCaseInsensitiveAndCoversTheBareName() {
        let rule = HostMappingTransport.Rule(hostSuffix: ".StoreSim.test", baseURL: simulator)
        #expect(rule.matches(host: "ITUNES.storesim.TEST"))
        #expect(rule.matches(host: "storesim.test"))
        #expect(!rule.matches(host: "evilstoresim.test"))
    }

    @Test func aBasePathIsPutInFront() {
        let rule = HostMappingTransport.Rule(hostSuffix: ".storesim.test", baseURL: URL(string: "http://localhost:9/sim/")!)
        #expect(rule.map(URL(string: "http://rss.storesim.test/us/rss.json?limit=5")!)
                == URL(string: "http://localhost:9/sim/us/rss.json?limit=5")!)
    }

    /// Errors raised through a ``Fetcher`` name the address in the record, not the simulator's port.
    @Test func fetcherErrorsNameTheOriginalURL() async {
        let base = ScriptedTransport { request, _ in .success(HTTPResponse(url: request.url, status: 404)) }
        let fetcher = Fetcher(transport: mapped(base), settings: HTTPSettings(requestsPerMinute: [:]), clock: ManualClock())
        do {
            _ = try await fetcher.get(URL(string: "http://feeds.storesim.test/feeds/9.xml")!)
            Issue.record("expected a failure")
        } catch {
            #expect(error.description.contains("http://feeds.storesim.test/feeds/9.xml"))
            #expect(!error.description.contains("8123"))
        }
    }

    @Test func invalidURLErrorsNameTheOriginalURL() async {
        let base = ScriptedTransport { request, _ in .failure(.invalidURL(request.url.absoluteString)) }
        await #expect(throws: TransportError.invalidURL("http://feeds.storesim.test/x")) {
            try await mapped(base).get(HTTPRequest(url: URL(string: "http://feeds.storesim.test/x")!), timeoutSeconds: 1)
        }
    }
}
