import CZlib
import Foundation

/// gzip (RFC 1952) over zlib, in memory: the files it is used for are feeds,
/// which an export already holds whole.
package enum Gzip {
    package struct Failure: Error, CustomStringConvertible {
        package var description: String
    }

    /// zlib's window bits plus 16: a gzip header and trailer, not a zlib one.
    private static let gzipWindow: Int32 = 15 + 16

    package static func compress(_ bytes: [UInt8], level: Int32 = Z_DEFAULT_COMPRESSION) throws -> [UInt8] {
        var stream = z_stream()
        guard storesync_deflateInit2(&stream, level, gzipWindow) == Z_OK else { throw Failure(description: "deflateInit2 failed") }
        defer { deflateEnd(&stream) }
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))) + 32)
        let status = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        // deflateBound is an upper bound for one Z_FINISH call, so anything else is zlib failing.
        guard status == Z_STREAM_END else { throw Failure(description: "deflate returned \(status)") }
        output.removeSubrange(Int(stream.total_out)...)
        return output
    }

    /// The bytes of a gzip member; throws on a truncated or corrupt one.
    package static func decompress(_ bytes: [UInt8]) throws -> [UInt8] {
        var stream = z_stream()
        guard storesync_inflateInit2(&stream, gzipWindow) == Z_OK else { throw Failure(description: "inflateInit2 failed") }
        defer { inflateEnd(&stream) }
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 6)
        var chunk = [UInt8](repeating: 0, count: 256 * 1024)
        var status: Int32 = Z_OK
        try bytes.withUnsafeBufferPointer { input in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            while status != Z_STREAM_END {
                let produced = chunk.withUnsafeMutableBufferPointer { out in
                    stream.next_out = out.baseAddress
                    stream.avail_out = uInt(out.count)
                    status = inflate(&stream, Z_NO_FLUSH)
                    return out.count - Int(stream.avail_out)
                }
                output.append(contentsOf: chunk[..<produced])
                guard status == Z_OK || status == Z_STREAM_END else {
                    throw Failure(description: status == Z_BUF_ERROR ? "truncated gzip data" : "corrupt gzip data (inflate returned \(status))")
                }
            }
        }
        return output
    }
}
