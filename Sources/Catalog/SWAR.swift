/// Tests on eight bytes at once (SIMD within a register).
public enum SWAR {
    /// Whether a byte of `word` is zero.
    @inlinable @inline(__always)
    public static func hasZero(_ word: UInt64) -> Bool {
        (word &- 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
    }

    /// Whether a byte of `word` is `byte`.
    @inlinable @inline(__always)
    public static func hasByte(_ word: UInt64, _ byte: UInt8) -> Bool {
        hasZero(word ^ (UInt64(byte) &* 0x0101_0101_0101_0101))
    }

    /// Whether a byte of `word` is below `limit` (at most 128; bytes of 128 and up are never below it).
    @inlinable @inline(__always)
    public static func hasByteBelow(_ word: UInt64, _ limit: UInt8) -> Bool {
        (word &- UInt64(limit) &* 0x0101_0101_0101_0101) & ~word & 0x8080_8080_8080_8080 != 0
    }

    /// Whether every byte of `word` is ASCII.
    @inlinable @inline(__always)
    public static func isASCII(_ word: UInt64) -> Bool { word & 0x8080_8080_8080_8080 == 0 }
}
