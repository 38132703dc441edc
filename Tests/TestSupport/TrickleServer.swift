import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A hostile HTTP server on 127.0.0.1 (a free port): it answers every
/// connection with response headers at once and then the body one byte at a
/// time, `interval` apart — the server that holds a client which times out
/// only the wait for the headers. Bounded: it serves `body` once per
/// connection, at most `maxConnections` connections, and stops on `stop()`.
public final class TrickleServer: @unchecked Sendable {
    public let port: Int
    private let listener: LoopbackAcceptor

    public init(body: [UInt8], interval: TimeInterval, maxConnections: Int = 8) throws {
        let listener = try LoopbackAcceptor()
        self.listener = listener
        port = listener.port
        let head = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\n\r\n".utf8)
        let thread = Thread {
            defer { listener.finish() }
            for _ in 0..<maxConnections {
                guard let client = listener.accept() else { return }
                var request = [UInt8](repeating: 0, count: 4096)
                _ = read(client, &request, request.count)
                _ = head.withUnsafeBytes { write(client, $0.baseAddress, $0.count) }
                for byte in body {
                    Thread.sleep(forTimeInterval: interval)
                    var one = byte
                    if write(client, &one, 1) != 1 { break }
                }
                close(client)
            }
        }
        thread.start()
    }

    public var url: URL { URL(string: "http://127.0.0.1:\(port)/slow")! }

    /// Stops accepting; a connection being served ends at its next write.
    public func stop() { listener.stop() }

    deinit { stop() }
}

/// A loopback listener served by one accepting thread, which alone closes it.
///
/// `stop()` only shuts the socket down (that wakes the thread from `accept`, or makes its
/// first `accept` fail if it has not run yet); the thread closes the descriptor with
/// `finish()` when it leaves. Closing it from `stop()` instead let a thread that had not
/// reached `accept` yet accept on the same number after another test's listener reused it,
/// and take that test's connections: a silent webhook receiver held a proxy test's
/// request until its 60 s timeout.
public final class LoopbackAcceptor: @unchecked Sendable {
    public let port: Int
    private let socket: Int32
    private let lock = NSLock()
    private var isClosed = false

    public init(backlog: Int32 = 8) throws {
        (socket, port) = try LoopbackListener.open(backlog: backlog)
    }

    /// The next connection, or nil once the listener is stopped.
    public func accept() -> Int32? {
        #if canImport(Glibc)
        let client = Glibc.accept(socket, nil, nil)
        #else
        let client = Darwin.accept(socket, nil, nil)
        #endif
        return client >= 0 ? client : nil
    }

    /// Stops accepting; safe from any thread, any number of times.
    public func stop() {
        lock.lock()
        defer { lock.unlock() }
        if !isClosed { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    /// Called once by the accepting thread as it leaves: the only place the socket is closed.
    public func finish() {
        lock.lock()
        defer { lock.unlock() }
        if !isClosed { isClosed = true; close(socket) }
    }
}

/// A listening TCP socket on 127.0.0.1 at a port the kernel picked (never a
/// fixed one), for the tests' small loopback servers.
public enum LoopbackListener {
    /// The socket and its port; the caller accepts on it and closes it.
    public static func open(backlog: Int32 = 8) throws -> (socket: Int32, port: Int) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.EIO) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, listen(fd, backlog) == 0 else { close(fd); throw POSIXError(.EADDRINUSE) }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: address.sin_port)))
    }
}
