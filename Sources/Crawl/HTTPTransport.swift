import Foundation

/// The methods storesync sends: GET for pages, HEAD to ask about a file
/// without fetching it (enclosure checks).
public enum HTTPMethod: String, Sendable, Equatable {
    case get = "GET", head = "HEAD"
}

/// A request as the crawler sends it.
public struct HTTPRequest: Sendable, Equatable {
    public var url: URL
    public var headers: [String: String]
    public var method: HTTPMethod

    public init(url: URL, headers: [String: String] = [:], method: HTTPMethod = .get) {
        self.url = url
        self.headers = headers
        self.method = method
    }
}

/// A response with its whole body (pages are small; the cap guards against
/// a server that never stops sending).
public struct HTTPResponse: Sendable, Equatable {
    /// Header a local reader sets to say whether rows follow the page
    /// (`true`/`false`), where no body says so: a file's last full page reads
    /// the same bytes whether or not rows were appended after it.
    public static let hasNextHeader = "x-records-has-next"

    public var url: URL
    public var status: Int
    /// Header names lowercased; repeated headers joined with ", ".
    public var headers: [String: String]
    public var body: [UInt8]
    /// The redirects the ``Fetcher`` followed to get here, if any; `url` is
    /// then the final location (what relative links in the body resolve against).
    public var redirect: Redirect?

    /// How a response was reached through redirects.
    public struct Redirect: Sendable, Equatable {
        /// The URL first asked for.
        public var from: URL
        /// True when every hop was 301 or 308: the resource moved for good,
        /// and whoever keeps its address should keep the new one.
        public var permanent: Bool
        /// Redirects followed (1 or more).
        public var hops: Int

        public init(from: URL, permanent: Bool, hops: Int) {
            self.from = from
            self.permanent = permanent
            self.hops = hops
        }
    }

    public init(url: URL, status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.url = url
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { "\($0), \($1)" })
        self.body = body
    }

    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// Why a request produced no response at all.
public enum TransportError: Error, Sendable, Equatable, CustomStringConvertible {
    case timedOut(seconds: Double)
    case connectionFailed(String)
    /// The host's name does not resolve, or nothing listens where it points
    /// (connection refused): asking again within the run only waits for the
    /// same answer, so the ``Fetcher`` does not retry it.
    case unreachable(host: String, reason: String)
    case bodyTooLarge(limit: Int)
    case invalidURL(String)

    /// A URL a client library cannot be handed: a port outside 1…65535
    /// (`http://127.0.0.1:65536/` from a page or a `Location`) traps inside
    /// SwiftNIO's address conversion instead of failing.
    public static func refusal(of url: URL) -> TransportError? {
        if let port = url.port, !(1...65_535).contains(port) {
            return .invalidURL("\(url.absoluteString) (port \(port) is outside 1…65535)")
        }
        return nil
    }

    public var description: String {
        switch self {
        case .timedOut(let s): "no answer within \(s) s"
        case .connectionFailed(let why): "connection failed: \(why)"
        case .unreachable(let host, let why): "\(host) is unreachable: \(why)"
        case .bodyTooLarge(let limit): "response body larger than \(limit) bytes"
        case .invalidURL(let url): "invalid URL \(url)"
        }
    }
}

/// The seam between the crawler and the network: tests put a fake here.
public protocol HTTPTransport: Sendable {
    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse
}
