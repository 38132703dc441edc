import Foundation

/// The Podcasting 2.0 `podcast:guid` of a feed: a UUIDv5 of its URL.
///
/// The namespace's rule: the feed URL without its scheme and trailing
/// slashes, hashed (SHA-1) under the namespace UUID
/// `ead4c236-bf58-58c6-a2c6-a6b28d128cb6`. It is the show's identity for
/// apps and indexes, kept when the feed later moves. SHA-1 is written here
/// because it is needed for nothing else and the toolchain's Foundation has
/// no digest on Linux; a dependency for 40 lines would cost every build.
enum PodcastGUID {
    static let namespace: [UInt8] = [0xea, 0xd4, 0xc2, 0x36, 0xbf, 0x58, 0x58, 0xc6,
                                     0xa2, 0xc6, 0xa6, 0xb2, 0x8d, 0x12, 0x8c, 0xb6]

    /// The GUID for a feed published at `feedURL`.
    static func forFeed(_ feedURL: String) -> String {
        var url = Substring(feedURL.trimmingCharacters(in: .whitespaces))
        if let scheme = url.range(of: "://") { url = url[scheme.upperBound...] }
        while url.hasSuffix("/") { url = url.dropLast() }
        var digest = sha1(namespace + Array(url.utf8))
        digest[6] = (digest[6] & 0x0F) | 0x50 // version 5
        digest[8] = (digest[8] & 0x3F) | 0x80 // RFC 4122 variant
        let hex = digest.prefix(16).map { ($0 < 16 ? "0" : "") + String($0, radix: 16) }.joined()
        let h = Array(hex)
        return String(h[0..<8]) + "-" + String(h[8..<12]) + "-" + String(h[12..<16]) + "-" + String(h[16..<20]) + "-" + String(h[20..<32])
    }

    /// FIPS 180-4 SHA-1.
    static func sha1(_ message: [UInt8]) -> [UInt8] {
        var h: [UInt32] = [0x6745_2301, 0xEFCD_AB89, 0x98BA_DCFE, 0x1032_5476, 0xC3D2_E1F0]
        var data = message
        let bitLength = UInt64(message.count) * 8
        data.append(0x80)
        while data.count % 64 != 56 { data.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: bitLength >> UInt64(shift))) }
        var w = [UInt32](repeating: 0, count: 80)
        for chunk in stride(from: 0, to: data.count, by: 64) {
            for i in 0..<16 {
                let b = chunk + i * 4
                w[i] = UInt32(data[b]) << 24 | UInt32(data[b + 1]) << 16 | UInt32(data[b + 2]) << 8 | UInt32(data[b + 3])
            }
            for i in 16..<80 {
                let x = w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16]
                w[i] = x << 1 | x >> 31
            }
            var (a, b, c, d, e) = (h[0], h[1], h[2], h[3], h[4])
            for i in 0..<80 {
                let (f, k): (UInt32, UInt32)
                switch i {
                case 0..<20: (f, k) = ((b & c) | (~b & d), 0x5A82_7999)
                case 20..<40: (f, k) = (b ^ c ^ d, 0x6ED9_EBA1)
                case 40..<60: (f, k) = ((b & c) | (b & d) | (c & d), 0x8F1B_BCDC)
                default: (f, k) = (b ^ c ^ d, 0xCA62_C1D6)
                }
                let temp = (a << 5 | a >> 27) &+ f &+ e &+ k &+ w[i]
                (e, d, c, b, a) = (d, c, b << 30 | b >> 2, a, temp)
            }
            h[0] = h[0] &+ a; h[1] = h[1] &+ b; h[2] = h[2] &+ c; h[3] = h[3] &+ d; h[4] = h[4] &+ e
        }
        return h.flatMap { v in [24, 16, 8, 0].map { UInt8(truncatingIfNeeded: v >> UInt32($0)) } }
    }
}
