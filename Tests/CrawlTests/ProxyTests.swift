import Crawl
import Foundation
import Synchronization
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A forward proxy on 127.0.0.1 (a free port) that records each request's
/// head and answers 200 "proxied" itself, until stopped.
final class RecordingProxy: @unchecked Sendable {
    let port: Int
    private let listener: LoopbackAcceptor
    private let heads = Shared<[String]>([])
    private let accepted = Shared<Int>(0)

    init() throws {
        let listener = try LoopbackAcceptor()
        self.listener = listener
        port = listener.port
        let body = Array("proxied".utf8)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n".utf8) + body
        let thread = Thread { [heads, accepted] in
            defer { listener.finish() }
            // Every connection until stopped: one some other test's client opened to a
            // port it knew (the kernel hands ports out again) must not use up the test's.
            while true {
                guard let client = listener.accept() else { return }
                accepted.withLock { $0 += 1 }
                // One thread per connection: a connection the client opens and leaves
                // idle must not keep the next one from being answered.
                Thread {
                    func readHead() -> String {
                        var received: [UInt8] = []
                        var one: UInt8 = 0
                        while !received.ends(with: Array("\r\n\r\n".utf8)), read(client, &one, 1) == 1 { received.append(one) }
                        return String(decoding: received, as: UTF8.self)
                    }
                    var head = readHead()
                    heads.withLock { $0.append(head) }
                    if head.hasPrefix("CONNECT ") {
                        // AsyncHTTPClient tunnels every proxied request: the request itself follows.
                        let established = Array("HTTP/1.1 200 Connection established\r\n\r\n".utf8)
                        _ = established.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                        head = readHead()
                        heads.withLock { $0.append(head) }
                    }
                    _ = answer.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                    close(client)
                }.start()
            }
        }
        thread.start()
    }

    var requestHeads: [String] { heads.current }

    /// What the proxy saw, for a failure's message.
    var seen: String { "\(accepted.current) connection(s) accepted, heads: \(requestHeads)" }

    func stop() { listener.stop() }
}

extension Array where Element == UInt8 {
    func ends(with suffix: [UInt8]) -> Bool { count >= suffix.count && Array(self[(count - suffix.count)...]) == suffix }
}

@Suite struct ProxyTests {
    @Test func httpProxyIsUsedWithItsCredentialsWhichAreNeverPrinted() async throws {
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        let environment = ProxyEnvironment(environment: ["HTTP_PROXY": "http://scott:tiger%21@127.0.0.1:\(proxy.port)"])
        let server = try #require(environment.http)
        #expect(server.description == "http://127.0.0.1:\(proxy.port)")
        for shown in ["\(server)", "\(environment)", String(reflecting: server), String(reflecting: environment)] {
            #expect(!shown.contains("tiger") && !shown.contains("scott"), "\(shown)")
        }
        let transport = AsyncHTTPTransport(proxies: environment)
        // `.test` never resolves (RFC 6761): only the proxy can answer this.
        let result: Result<HTTPResponse, TransportError>
        do {
            // A bound for a hang, not for the proxy's speed (it answers at once, or closes).
            result = .success(try await transport.get(HTTPRequest(url: URL(string: "http://origin.storesync.test/page?a=1")!), timeoutSeconds: 120))
        } catch {
            result = .failure(error)
        }
        await transport.shutdown()
        guard case .success(let response) = result else {
            Issue.record("no answer through the proxy: \(result); the proxy: \(proxy.seen)")
            return
        }
        #expect(response.status == 200)
        #expect(String(decoding: response.body, as: UTF8.self) == "proxied")
        let head = try #require(proxy.requestHeads.first)
        // Through the proxy: a CONNECT to the origin (or an absolute-form GET), then the page.
        #expect(head.hasPrefix("CONNECT origin.storesync.test:80 HTTP/1.1\r\n")
                || head.hasPrefix("GET http://origin.storesync.test/page?a=1 HTTP/1.1\r\n"), "\(head)")
        #expect(proxy.requestHeads.contains { $0.contains("/page?a=1 HTTP/1.1") }, "\(proxy.requestHeads)")
        let credentials = Data("scott:tiger!".utf8).base64EncodedString()
        #expect(head.lowercased().contains("proxy-authorization: basic \(credentials)".lowercased()), "\(head)")
    }

    @Test func noProxyHostsAreReachedDirectly() async throws {
        let proxy = try RecordingProxy()
        defer { proxy.stop() }
        let environment = ProxyEnvironment(environment: [
            "http_proxy": "127.0.0.1:\(proxy.port)", "NO_PROXY": "example.org, .storesync.test",
        ])
        let transport = AsyncHTTPTransport(proxies: environment)
        do {
            _ = try await transport.get(HTTPRequest(url: URL(string: "http://origin.storesync.test/page")!), timeoutSeconds: 10)
            Issue.record("a direct request to a .test host cannot succeed")
        } catch {
            if case .unreachable = error {} else { Issue.record("expected unreachable, got \(error)") }
        }
        await transport.shutdown()
        #expect(proxy.requestHeads.isEmpty, "the proxy was asked: \(proxy.requestHeads)")
    }

    @Test(arguments: [
        ("", "http://a.example.com/", false),
        ("*", "http://a.example.com/", true),
        ("example.com", "http://example.com/", true),
        ("example.com", "http://a.example.com/", true),
        ("example.com", "http://badexample.com/", false),
        (".example.com", "http://a.example.com/", true),
        (".example.com", "http://example.com/", true),
        ("example.com:8080", "http://example.com:8080/", true),
        ("example.com:8080", "http://example.com/", false),
        ("10.0.0.1", "http://10.0.0.1/", true),
        ("other.org, example.com", "https://x.example.com/", true),
        ("", "http://127.0.0.1:8080/", true),
        ("", "http://localhost/", true),
    ])
    func noProxyMatching(_ noProxy: String, _ url: String, _ direct: Bool) {
        let environment = ProxyEnvironment(environment: [
            "HTTP_PROXY": "http://proxy:3128", "HTTPS_PROXY": "http://proxy:3129", "NO_PROXY": noProxy,
        ])
        let chosen = environment.proxy(for: URL(string: url)!)
        #expect((chosen == nil) == direct, "\(noProxy) \(url) → \(String(describing: chosen))")
    }

    @Test func schemesPickTheirProxyAndLowerCaseWins() {
        let environment = ProxyEnvironment(environment: [
            "HTTP_PROXY": "http://upper:1", "http_proxy": "http://lower:2", "HTTPS_PROXY": "secure:3",
        ])
        #expect(environment.proxy(for: URL(string: "http://a.com/")!)?.host == "lower")
        #expect(environment.proxy(for: URL(string: "https://a.com/")!) == environment.https)
        #expect(environment.https?.port == 3)
        #expect(ProxyEnvironment(environment: [:]).proxy(for: URL(string: "https://a.com/")!) == nil)
        #expect(ProxyEnvironment(environment: ["HTTPS_PROXY": "socks5://p:1"]).https == nil, "only HTTP proxies")
    }
}
