import Foundation

/// Sends requests for a family of hosts somewhere else.
///
/// The simulator writes fixed origins such as `http://feeds.storesim.test`
/// into its bodies (its port changes with every start, and a URL that moved
/// would make every record look changed), so a crawler following those URLs
/// must reach the simulator's real address instead. Records and error
/// messages keep showing the original address: the response carries the URL
/// that was asked for, not the one the bytes came from.
package struct HostMappingTransport: HTTPTransport {
    /// One rule: hosts ending in `hostSuffix` go to `baseURL`.
    package struct Rule: Sendable, Equatable {
        /// Lowercased, e.g. `.storesim.test`; also matches the bare name without the leading dot.
        package let hostSuffix: String
        /// Scheme, host and port to send matching requests to. A path other
        /// than `/` is put in front of the request's path.
        package let baseURL: URL

        package init(hostSuffix: String, baseURL: URL) {
            self.hostSuffix = hostSuffix.lowercased()
            self.baseURL = baseURL
        }

        /// Whether requests to `host` are redirected by this rule.
        package func matches(host: String) -> Bool {
            let host = host.lowercased()
            guard !hostSuffix.isEmpty else { return false }
            if host.hasSuffix(hostSuffix) { return true }
            // ".storesim.test" also means "storesim.test" itself.
            return hostSuffix.hasPrefix(".") && host == hostSuffix.dropFirst()
        }

        /// `url` sent to `baseURL`, with its path and query kept; nil when the rule does not apply.
        package func map(_ url: URL) -> URL? {
            guard let host = url.host, matches(host: host),
                  var components = URLComponents(url: url, resolvingAgainstBaseURL: false),
                  let base = URLComponents(url: baseURL, resolvingAgainstBaseURL: false)
            else { return nil }
            components.scheme = base.scheme
            components.host = base.host
            components.port = base.port
            let prefix = base.percentEncodedPath.hasSuffix("/")
                ? String(base.percentEncodedPath.dropLast()) : base.percentEncodedPath
            if !prefix.isEmpty { components.percentEncodedPath = prefix + components.percentEncodedPath }
            return components.url
        }
    }

    private let base: any HTTPTransport
    private let rules: [Rule]

    /// - Parameter rules: tried in order; the first that matches a request's host applies.
    package init(wrapping base: any HTTPTransport, rules: [Rule]) {
        self.base = base
        self.rules = rules
    }

    /// Every host ending in `hostSuffix` (e.g. `.storesim.test`) goes to `baseURL`.
    package init(wrapping base: any HTTPTransport, hostSuffix: String, to baseURL: URL) {
        self.init(wrapping: base, rules: [Rule(hostSuffix: hostSuffix, baseURL: baseURL)])
    }

    package func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        guard let mapped = rules.lazy.compactMap({ $0.map(request.url) }).first else {
            return try await base.get(request, timeoutSeconds: timeoutSeconds)
        }
        var outgoing = request
        outgoing.url = mapped
        do {
            var response = try await base.get(outgoing, timeoutSeconds: timeoutSeconds)
            response.url = request.url
            return response
        } catch .invalidURL {
            throw .invalidURL(request.url.absoluteString)
        }
    }
}

/// Sends POSTs for a family of hosts somewhere else, by the rules of
/// ``HostMappingTransport`` (the simulator's hub answers for `*.storesim.test`).
package struct HostMappingPoster: HTTPPoster {
    private let base: any HTTPPoster
    private let rules: [HostMappingTransport.Rule]

    package init(wrapping base: any HTTPPoster, rules: [HostMappingTransport.Rule]) {
        self.base = base
        self.rules = rules
    }

    package func post(_ url: URL, headers: [(name: String, value: String)], body: [UInt8],
                      timeoutSeconds: Double) async throws(TransportError) -> Int {
        let target = rules.lazy.compactMap { $0.map(url) }.first ?? url
        return try await base.post(target, headers: headers, body: body, timeoutSeconds: timeoutSeconds)
    }
}
