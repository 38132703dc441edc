import Catalog
@testable import Crawl
import Foundation
import Synchronization
import Testing
import TestSupport

/// `http.headers` (an API token) go to their own host only, on every hop
/// there, and never to another host a redirect leads to.
@Suite struct SecretHeaderTests {
    static let token = "Bearer tok-5ecret-77"

    /// The URL and headers of every request the transport saw.
    final class Seen: Sendable {
        let requests = Mutex<[(url: String, headers: [String: String])]>([])
        func authorization(of url: String) -> String?? {
            requests.withLock { $0.first { $0.url == url }.map { $0.headers["Authorization"] } }
        }
    }

    func fetcher(_ seen: Seen, routes: @escaping @Sendable (URL) -> Result<HTTPResponse, TransportError>) -> Fetcher {
        var settings = HTTPSettings(maxAttempts: 1, requestsPerMinute: [:])
        settings.headers = [SecretHeader(host: "API.example.com", name: "Authorization", variable: "API_TOKEN", value: Self.token)]
        let transport = ScriptedTransport { request, _ in
            seen.requests.withLock { $0.append((request.url.absoluteString, request.headers)) }
            return routes(request.url)
        }
        return Fetcher(transport: transport, settings: settings, clock: ManualClock(), random: { 0.5 })
    }

    @Test func theHeaderGoesToItsHostAndNotAcrossARedirect() async throws {
        let seen = Seen()
        let fetcher = fetcher(seen) { url in
            switch (url.host ?? "", url.path) {
            case ("api.example.com", "/a"): .success(HTTPResponse(url: url, status: 302, headers: ["Location": "/b"]))
            case ("api.example.com", "/b"): .success(HTTPResponse(url: url, status: 301, headers: ["Location": "https://cdn.other.net/c"]))
            default: .success(ScriptedTransport.json("{}", url: url))
            }
        }
        _ = try await fetcher.get(URL(string: "https://api.example.com/a")!)
        _ = try await fetcher.get(URL(string: "https://elsewhere.example.com/x")!)
        #expect(seen.authorization(of: "https://api.example.com/a") == .some(Self.token))
        #expect(seen.authorization(of: "https://api.example.com/b") == .some(Self.token), "a hop on the same host keeps it")
        #expect(seen.authorization(of: "https://cdn.other.net/c") == .some(nil), "a redirect to another host must not carry the token")
        #expect(seen.authorization(of: "https://elsewhere.example.com/x") == .some(nil))
    }

    @Test func aFailureNamesNoSecret() async throws {
        let seen = Seen()
        let fetcher = fetcher(seen) { url in .success(ScriptedTransport.json("denied", status: 401, url: url)) }
        do {
            _ = try await fetcher.get(URL(string: "https://api.example.com/a")!)
            Issue.record("a 401 must fail")
        } catch {
            #expect(!error.description.contains("tok-5ecret-77"))
        }
    }

    /// A server that echoes the token (raw, with its prefix, JSON-escaped, percent-encoded):
    /// the error holds none of it.
    @Test(arguments: [
        "invalid token tok-5ecret-77", "Authorization: Bearer tok-5ecret-77 rejected", #"{"error": "bad \"tok-5ecret-77\""}"#,
        "token=tok%2D5ecret%2D77", "<p>tok-5ecret-77</p>",
    ])
    func aServerEchoingTheSecretDoesNotPutItInTheError(_ body: String) async throws {
        var settings = HTTPSettings(maxAttempts: 1, requestsPerMinute: [:])
        settings.headers = [SecretHeader(host: "api.example.com", name: "Authorization", variable: "API_TOKEN",
                                         value: Self.token, secret: "tok-5ecret-77")]
        let transport = ScriptedTransport { request, _ in .success(ScriptedTransport.json(body, status: 401, url: request.url)) }
        let fetcher = Fetcher(transport: transport, settings: settings, clock: ManualClock(), random: { 0.5 })
        do {
            _ = try await fetcher.get(URL(string: "https://api.example.com/a")!)
            Issue.record("a 401 must fail")
        } catch {
            for text in [error.description, error.message, String(reflecting: error)] {
                #expect(!text.contains("tok-5ecret-77") && !text.contains("5ecret"), "\(text)")
            }
            #expect(error.description.contains("<redacted>"), "\(error)")
        }
    }

    @Test func printingTheSettingsShowsTheVariableNeverTheValue() {
        var settings = HTTPSettings()
        settings.headers = [SecretHeader(host: "api.example.com", name: "Authorization", variable: "API_TOKEN", value: Self.token)]
        var dumped = ""
        dump(settings, to: &dumped)
        for text in [String(describing: settings), String(reflecting: settings), dumped, "\(settings.headers)"] {
            #expect(!text.contains("tok-5ecret-77"), "\(text)")
            #expect(text.contains("API_TOKEN"))
        }
    }
}
