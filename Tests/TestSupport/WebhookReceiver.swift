import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A webhook receiver on 127.0.0.1 (a free port) that records every request
/// (its header lines and body) and answers with the next status of
/// `statuses` (200 once they run out), one request per connection. With
/// `silent`, it reads requests and never answers: the receiver a timeout must
/// bound. Stops on `stop()`.
public final class WebhookReceiver: @unchecked Sendable {
    public struct Request: Sendable {
        public var requestLine: String
        /// Header names lower-cased.
        public var headers: [String: String]
        public var body: [UInt8]
    }

    public let port: Int
    private let listener: LoopbackAcceptor
    private let lock = NSLock()
    private var received: [Request] = []
    private var held: [Int32] = []
    private var isStopped = false

    public init(statuses: [Int] = [], silent: Bool = false) throws {
        let listener = try LoopbackAcceptor()
        self.listener = listener
        port = listener.port
        let thread = Thread { [self] in
            defer { listener.finish() }
            var script = statuses
            while true {
                guard let client = listener.accept() else { return }
                guard let request = Self.receive(client) else { close(client); continue }
                lock.lock()
                received.append(request)
                if silent { held.append(client) }
                lock.unlock()
                if silent { continue }
                let status = script.isEmpty ? 200 : script.removeFirst()
                let response = Array("HTTP/1.1 \(status) X\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok".utf8)
                _ = response.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                close(client)
            }
        }
        thread.start()
    }

    /// One request: the head up to the blank line, then Content-Length bytes of body.
    static func receive(_ client: Int32) -> Request? {
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65_536)
        var headEnd: Int?
        var contentLength = 0
        while true {
            if let end = headEnd, data.count >= end + contentLength { break }
            let n = read(client, &buffer, buffer.count)
            guard n > 0 else { return nil }
            data += buffer[0..<n]
            if headEnd == nil, let range = data.firstRange(of: Array("\r\n\r\n".utf8)) {
                headEnd = range.upperBound
                let head = String(decoding: data[0..<range.lowerBound], as: UTF8.self)
                for line in head.split(separator: "\r\n").dropFirst() where line.lowercased().hasPrefix("content-length:") {
                    contentLength = Int(line.split(separator: ":")[1].trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        let end = headEnd!
        let lines = String(decoding: data[0..<(end - 4)], as: UTF8.self).split(separator: "\r\n").map(String.init)
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        return Request(requestLine: lines.first ?? "", headers: headers, body: Array(data[end..<(end + contentLength)]))
    }

    public var url: URL { URL(string: "http://127.0.0.1:\(port)/hooks/secret-path-token")! }

    /// The requests received so far.
    public var requests: [Request] {
        lock.lock()
        defer { lock.unlock() }
        return received
    }

    /// Stops accepting and closes the connections a silent receiver held.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        guard !isStopped else { return }
        isStopped = true
        listener.stop()
        for client in held { close(client) }
        held = []
    }

    deinit { stop() }
}
