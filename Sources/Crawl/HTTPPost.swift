import AsyncHTTPClient
import Foundation
import NIOCore

/// Sends one POST and returns the response status: what a webhook needs (the
/// `notify:` of a job). Not part of ``HTTPTransport``: crawling only reads.
public protocol HTTPPoster: Sendable {
    /// POSTs `body` to `url` with `headers`; the whole exchange, the response
    /// body included, is held to `timeoutSeconds`.
    func post(_ url: URL, headers: [(name: String, value: String)], body: [UInt8],
              timeoutSeconds: Double) async throws(TransportError) -> Int
}

/// ``HTTPPoster`` over AsyncHTTPClient: a client of its own per call, shut down
/// before returning (one webhook a run does not need a pool), no redirects
/// followed (a redirect must not carry the secret header to another host).
public struct AsyncHTTPPoster: HTTPPoster {
    public init() {}

    public func post(_ url: URL, headers: [(name: String, value: String)], body: [UInt8],
                     timeoutSeconds: Double) async throws(TransportError) -> Int {
        if let refusal = TransportError.refusal(of: url) { throw refusal }
        var configuration = HTTPClient.Configuration()
        configuration.redirectConfiguration = .disallow
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        var request = HTTPClientRequest(url: url.absoluteString)
        request.method = .POST
        for header in headers { request.headers.add(name: header.name, value: header.value) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let deadline = NIODeadline.now() + .nanoseconds(Int64(timeoutSeconds * 1_000_000_000))
        let result: Result<Int, TransportError>
        do {
            let response = try await client.execute(request, deadline: deadline)
            // Drained (and bounded) so the connection closes cleanly; the body itself is not needed.
            _ = try await response.body.collect(upTo: 1 << 20)
            result = .success(Int(response.status.code))
        } catch let error as HTTPClientError where error == .deadlineExceeded || error == .readTimeout || error == .connectTimeout {
            result = .failure(.timedOut(seconds: timeoutSeconds))
        } catch {
            result = .failure(.connectionFailed(String(describing: error)))
        }
        try? await client.shutdown()
        return try result.get()
    }
}
