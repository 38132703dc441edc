import Foundation

/// The proxies the environment names, as curl and most tools read them:
/// `HTTPS_PROXY`/`https_proxy` for https URLs, `HTTP_PROXY`/`http_proxy` for
/// http ones (the lower-case form wins where both are set), and
/// `NO_PROXY`/`no_proxy` for hosts reached directly.
///
/// `NO_PROXY` is a comma-separated list: `*` (every host), a host name that
/// also covers its subdomains (`example.com`, `.example.com`), an IP address,
/// or either with a port (`example.com:8080`, only that port). Loopback hosts
/// (`localhost`, `127.0.0.1`, `::1`) are always reached directly: the
/// embedded simulator lives there.
public struct ProxyEnvironment: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    /// An HTTP proxy; its credentials are sent to it and never printed.
    public struct Server: Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
        public var host: String
        public var port: Int
        public var username: String?
        public var password: String?

        /// `http://host:port`, without credentials: safe for logs and messages.
        public var description: String { "http://\(host):\(port)" }
        public var debugDescription: String { description }
    }

    /// The proxies and exclusions, without credentials.
    public var description: String {
        "http: \(http.map(\.description) ?? "none"), https: \(https.map(\.description) ?? "none"), no_proxy: \(noProxy.joined(separator: ","))"
    }
    public var debugDescription: String { description }

    public var http: Server?
    public var https: Server?
    public var noProxy: [String]

    /// Reads `environment` (the process's by default).
    public init(environment: [String: String] = ProcessInfo.processInfo.environment) {
        func value(_ name: String) -> String? {
            (environment[name.lowercased()] ?? environment[name.uppercased()])
                .map { $0.trimmingCharacters(in: .whitespaces) }
                .flatMap { $0.isEmpty ? nil : $0 }
        }
        http = value("http_proxy").flatMap(Self.server)
        https = value("https_proxy").flatMap(Self.server)
        noProxy = (value("no_proxy") ?? "").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
            .filter { !$0.isEmpty }
    }

    /// `http://user:pass@proxy:3128`, or `proxy:3128`; nil for another scheme
    /// (only HTTP proxies are supported) or no host. The port defaults to 80.
    static func server(_ text: String) -> Server? {
        let withScheme = text.contains("://") ? text : "http://" + text
        guard let components = URLComponents(string: withScheme),
              components.scheme?.lowercased() == "http",
              let host = components.host, !host.isEmpty else { return nil }
        return Server(host: host, port: components.port ?? 80,
                      username: components.user?.removingPercentEncoding,
                      password: components.password?.removingPercentEncoding)
    }

    /// The proxy to reach `url` through, or nil to connect directly.
    public func proxy(for url: URL) -> Server? {
        let scheme = url.scheme?.lowercased()
        guard let server = scheme == "https" ? https : (scheme == "http" ? http : nil),
              let host = url.host?.lowercased() else { return nil }
        let port = url.port ?? (scheme == "https" ? 443 : 80)
        return bypasses(host: host, port: port) ? nil : server
    }

    /// Whether `host` (lower-cased) on `port` is reached directly.
    func bypasses(host: String, port: Int) -> Bool {
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        if bare == "localhost" || bare.hasSuffix(".localhost") || bare == "::1" || bare.hasPrefix("127.") { return true }
        for entry in noProxy {
            if entry == "*" { return true }
            var name = entry
            // `host:port` (one colon: an IPv6 address has several and no port here).
            if let colon = entry.lastIndex(of: ":"), entry.filter({ $0 == ":" }).count == 1 {
                guard Int(entry[entry.index(after: colon)...]) == port else { continue }
                name = String(entry[..<colon])
            }
            if name.hasPrefix("[") && name.hasSuffix("]") { name = String(name.dropFirst().dropLast()) }
            if name.hasPrefix("*.") { name = String(name.dropFirst()) }
            let domain = name.hasPrefix(".") ? String(name.dropFirst()) : name
            if bare == domain || bare.hasSuffix("." + domain) { return true }
        }
        return false
    }
}
