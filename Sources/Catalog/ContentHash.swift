/// A record's content hash: XXH64 (seed 0) of its canonical encoding.
///
/// Stable across processes, machines and releases, unlike Swift's `Hasher`,
/// which is seeded per process. XXH64 is written out here because no xxHash
/// package is in the mirror and a cryptographic digest is not needed: the
/// hash only answers "did this record change", and a 64-bit collision on one
/// key between two nights has probability 2^-64. It runs at memory speed,
/// which matters when a night hashes a million records.
public struct ContentHash: Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt64

    public init(rawValue: UInt64) { self.rawValue = rawValue }

    /// Hash of arbitrary bytes.
    public init(bytes: some Collection<UInt8>) {
        if let hash = bytes.withContiguousStorageIfAvailable({ XXH64.hash($0, seed: 0) }) {
            rawValue = hash
        } else {
            rawValue = Array(bytes).withUnsafeBufferPointer { XXH64.hash($0, seed: 0) }
        }
    }

    /// The value as SQLite stores it (INTEGER is signed 64-bit; same bits).
    public var sqliteValue: Int64 { Int64(bitPattern: rawValue) }
    public init(sqliteValue: Int64) { rawValue = UInt64(bitPattern: sqliteValue) }

    public var description: String {
        let hex = String(rawValue, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}

/// XXH64 as specified in https://github.com/Cyan4973/xxHash/blob/dev/doc/xxhash_spec.md
package enum XXH64 {
    static let p1: UInt64 = 0x9E37_79B1_85EB_CA87
    static let p2: UInt64 = 0xC2B2_AE3D_27D4_EB4F
    static let p3: UInt64 = 0x1656_67B1_9E37_79F9
    static let p4: UInt64 = 0x85EB_CA77_C2B2_AE63
    static let p5: UInt64 = 0x27D4_EB2F_1656_67C5

    @inline(__always) static func rotl(_ x: UInt64, _ r: UInt64) -> UInt64 { (x << r) | (x >> (64 - r)) }

    @inline(__always) static func round(_ acc: UInt64, _ input: UInt64) -> UInt64 {
        rotl(acc &+ input &* p2, 31) &* p1
    }

    @inline(__always) static func merge(_ acc: UInt64, _ val: UInt64) -> UInt64 {
        (acc ^ round(0, val)) &* p1 &+ p4
    }

    @inline(__always) static func read64(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }

    @inline(__always) static func read32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt64 {
        UInt64(UInt32(littleEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self)))
    }

    package static func hash(_ buffer: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt64 {
        let length = buffer.count
        guard let base = buffer.baseAddress.map(UnsafeRawPointer.init) else {
            return avalanche(seed &+ p5)
        }
        var offset = 0
        var acc: UInt64
        if length >= 32 {
            var v1 = seed &+ p1 &+ p2
            var v2 = seed &+ p2
            var v3 = seed
            var v4 = seed &- p1
            let limit = length - 32
            repeat {
                v1 = round(v1, read64(base, offset))
                v2 = round(v2, read64(base, offset + 8))
                v3 = round(v3, read64(base, offset + 16))
                v4 = round(v4, read64(base, offset + 24))
                offset += 32
            } while offset <= limit
            acc = rotl(v1, 1) &+ rotl(v2, 7) &+ rotl(v3, 12) &+ rotl(v4, 18)
            acc = merge(acc, v1)
            acc = merge(acc, v2)
            acc = merge(acc, v3)
            acc = merge(acc, v4)
        } else {
            acc = seed &+ p5
        }
        acc = acc &+ UInt64(length)
        while offset + 8 <= length {
            acc ^= round(0, read64(base, offset))
            acc = rotl(acc, 27) &* p1 &+ p4
            offset += 8
        }
        if offset + 4 <= length {
            acc ^= read32(base, offset) &* p1
            acc = rotl(acc, 23) &* p2 &+ p3
            offset += 4
        }
        while offset < length {
            acc ^= UInt64(buffer[offset]) &* p5
            acc = rotl(acc, 11) &* p1
            offset += 1
        }
        return avalanche(acc)
    }

    @inline(__always) static func avalanche(_ h: UInt64) -> UInt64 {
        var acc = h
        acc ^= acc >> 33
        acc = acc &* p2
        acc ^= acc >> 29
        acc = acc &* p3
        acc ^= acc >> 32
        return acc
    }
}
