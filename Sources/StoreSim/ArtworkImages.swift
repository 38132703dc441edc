import Catalog
import Crawl

/// The simulator's image service: what `is1-ssl.mzstatic.com/image/thumb/…`
/// and `is1.mzstatic.com/image/pf/…` serve. Like the real one it renders any
/// size the URL asks for (`…/3000x3000bb.jpg`, `….600x600-75.jpg`) in the
/// format its extension names; the picture is a flat colour chosen by the
/// path without its size, so every size of one artwork is the same picture
/// and a changed artwork (a new URL in the world's timeline) is a new one.
/// Bodies are real baseline JPEGs and real PNGs, small enough (≈100 KB at
/// 3000×3000) that a night's worth stays quick.
enum ArtworkImages {
    /// Sizes the image service renders; larger asks are refused like the real CDN does.
    static let maxSide = 5_000
    /// Images never change in place (a new picture gets a new URL), so one date serves for all.
    static let lastModified = SimDate(year: 2014, month: 1, day: 1)

    /// `GET /image/…/{W}x{H}….{jpg|png}`: the image with a strong ETag from its
    /// path, or 304 when the client's validators match, or 404.
    static func respond(path: String, conditions: Conditions) -> SimResponse {
        guard let request = parse(path: path) else { return Endpoints.notFound() }
        let etag = "\"\(ContentHash(bytes: Array(path.utf8)).description)\""
        var notModified = false
        if let header = conditions.ifNoneMatch {
            notModified = Endpoints.etagMatches(etag, header)
        } else if let header = conditions.ifModifiedSince, let since = SimDate.parseHTTPDate(header) {
            notModified = lastModified.epochSeconds <= since
        }
        let contentType = request.format.mediaType
        if notModified {
            return SimResponse(status: 304, contentType: nil, etag: etag, lastModified: lastModified.httpDate,
                               headers: [("Cache-Control", "max-age=31536000")], body: [])
        }
        let body = request.format == .png
            ? png(width: request.width, height: request.height, rgb: request.rgb)
            : jpeg(width: request.width, height: request.height, rgb: request.rgb)
        return SimResponse(status: 200, contentType: contentType, etag: etag, lastModified: lastModified.httpDate,
                           headers: [("Cache-Control", "max-age=31536000")], body: body)
    }

    struct Request: Equatable {
        var width: Int
        var height: Int
        var format: ImageFormat
        var rgb: (UInt8, UInt8, UInt8)

        static func == (a: Request, b: Request) -> Bool {
            a.width == b.width && a.height == b.height && a.format == b.format && a.rgb == b.rgb
        }
    }

    /// The size is the last `WxH` in the file name; the colour comes from the
    /// path with that size taken out.
    static func parse(path: String) -> Request? {
        guard path.hasPrefix("/image/"), let slash = path.lastIndex(of: "/") else { return nil }
        let file = path[path.index(after: slash)...]
        let lower = file.lowercased()
        let format: ImageFormat
        if lower.hasSuffix(".png") { format = .png } else if lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") { format = .jpeg } else {
            return nil
        }
        // Scan for the last "digits x digits".
        let chars = Array(file.utf8)
        var found: (start: Int, end: Int, w: Int, h: Int)?
        var i = 0
        while i < chars.count {
            guard isDigit(chars[i]) else { i += 1; continue }
            var j = i
            while j < chars.count, isDigit(chars[j]) { j += 1 }
            if j < chars.count, chars[j] == UInt8(ascii: "x") {
                var k = j + 1
                while k < chars.count, isDigit(chars[k]) { k += 1 }
                if k > j + 1, let w = Int(String(decoding: chars[i..<j], as: UTF8.self)),
                   let h = Int(String(decoding: chars[(j + 1)..<k], as: UTF8.self)) {
                    found = (i, k, w, h)
                    i = k
                    continue
                }
            }
            i = j
        }
        guard let found, (1...maxSide).contains(found.w), (1...maxSide).contains(found.h) else { return nil }
        let stem = String(path[..<slash]) + "/" + String(decoding: chars[..<found.start] + chars[found.end...], as: UTF8.self)
        let hash = ContentHash(bytes: Array(stem.utf8)).rawValue
        // Mid-range colours: never pure black or white, so every picture is visibly one.
        let channel = { (shift: UInt64) in UInt8(40 + ((hash >> shift) & 0xFF) % 176) }
        let rgb = (channel(0), channel(8), channel(16))
        return Request(width: found.w, height: found.h, format: format, rgb: rgb)
    }

    private static func isDigit(_ c: UInt8) -> Bool { c >= UInt8(ascii: "0") && c <= UInt8(ascii: "9") }

    // MARK: JPEG

    /// A baseline JFIF JPEG of one colour, 4:2:0. Every 8×8 block's DCT is its
    /// DC term alone, so after the first MCU each block is "DC difference 0,
    /// end of block": 4 bits, 3 bytes per 16×16 MCU.
    static func jpeg(width: Int, height: Int, rgb: (UInt8, UInt8, UInt8)) -> [UInt8] {
        let (r, g, b) = (Double(rgb.0), Double(rgb.1), Double(rgb.2))
        // JFIF's YCbCr (ITU-R BT.601, full range).
        let y = 0.299 * r + 0.587 * g + 0.114 * b
        let cb = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
        let cr = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
        // With a DC quantiser of 8, a flat block's quantised DC is its level-shifted value.
        let dc = [y, cb, cr].map { max(-128, min(127, Int(($0 - 128).rounded()))) }

        var out: [UInt8] = [0xFF, 0xD8]
        // APP0 JFIF 1.01, no thumbnail, 1:1 aspect.
        out += [0xFF, 0xE0, 0x00, 0x10] + Array("JFIF".utf8) + [0x00, 0x01, 0x01, 0x00, 0x00, 0x01, 0x00, 0x01, 0x00, 0x00]
        // DQT: table 0, DC step 8, AC steps 1 (they are all zero anyway).
        out += [0xFF, 0xDB, 0x00, 0x43, 0x00, 8] + [UInt8](repeating: 1, count: 63)
        // SOF0: 8-bit, height, width, 3 components; Y sampled 2×2, chroma 1×1.
        out += [0xFF, 0xC0, 0x00, 0x11, 0x08, UInt8(height >> 8), UInt8(height & 0xFF), UInt8(width >> 8), UInt8(width & 0xFF), 0x03,
                0x01, 0x22, 0x00, 0x02, 0x11, 0x00, 0x03, 0x11, 0x00]
        // DHT: the standard luminance DC table (JPEG Annex K.3), shared by all components.
        out += [0xFF, 0xC4, 0x00, 0x1F, 0x00] + dcCounts + Array(0...11)
        // DHT: an AC table of two symbols, end-of-block ("00") and one spare ("01").
        out += [0xFF, 0xC4, 0x00, 0x15, 0x10, 0x00, 0x02] + [UInt8](repeating: 0, count: 14) + [0x00, 0x01]
        // SOS: the three components, tables 0/0, full spectrum.
        out += [0xFF, 0xDA, 0x00, 0x0C, 0x03, 0x01, 0x00, 0x02, 0x00, 0x03, 0x00, 0x00, 0x3F, 0x00]

        var bits = BitWriterMSB()
        let codes = dcCodes
        func block(_ diff: Int) {
            let magnitude = diff.magnitude
            let category = magnitude == 0 ? 0 : (Int.bitWidth - magnitude.leadingZeroBitCount)
            bits.write(codes[category].code, count: codes[category].length)
            if category > 0 {
                let extra = diff >= 0 ? diff : diff + (1 << category) - 1
                bits.write(UInt32(extra), count: category)
            }
            bits.write(0b00, count: 2)  // end of block
        }
        let mcus = ((width + 15) / 16) * ((height + 15) / 16)
        block(dc[0])
        block(0); block(0); block(0)
        block(dc[1])
        block(dc[2])
        // Every later MCU is six "DC difference 0" codes (00) and end-of-blocks (00): 24 zero bits.
        bits.writeZeros((mcus - 1) * 24)
        out += bits.finishStuffed()
        out += [0xFF, 0xD9]
        return out
    }

    /// Code counts per length 1…16 of the standard luminance DC table.
    static let dcCounts: [UInt8] = [0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0]

    /// Canonical Huffman codes (JPEG Annex C) for categories 0…11 of `dcCounts`.
    static let dcCodes: [(code: UInt32, length: Int)] = {
        var codes: [(UInt32, Int)] = []
        var code: UInt32 = 0
        for (index, count) in dcCounts.enumerated() {
            for _ in 0..<count {
                codes.append((code, index + 1))
                code += 1
            }
            code <<= 1
        }
        return codes
    }()

    /// Bits most significant first, as JPEG entropy data is written.
    struct BitWriterMSB {
        var bytes: [UInt8] = []
        var accumulator: UInt64 = 0
        var count = 0

        mutating func write(_ value: UInt32, count n: Int) {
            accumulator = accumulator << UInt64(n) | UInt64(value & (n == 32 ? .max : (1 << UInt32(n)) - 1))
            count += n
            while count >= 8 {
                count -= 8
                bytes.append(UInt8(truncatingIfNeeded: accumulator >> UInt64(count)))
            }
        }

        /// `n` zero bits, whole bytes at once (zero bytes need no stuffing).
        mutating func writeZeros(_ n: Int) {
            var n = n
            while count != 0, n > 0 {
                write(0, count: 1)
                n -= 1
            }
            bytes.append(contentsOf: repeatElement(0, count: n / 8))
            if n % 8 > 0 { write(0, count: n % 8) }
        }

        /// Pads the last byte with 1 bits and stuffs a 0x00 after every 0xFF (ITU T.81 F.1.2.3).
        mutating func finishStuffed() -> [UInt8] {
            if count > 0 { write((1 << UInt32(8 - count)) - 1, count: 8 - count) }
            var out: [UInt8] = []
            out.reserveCapacity(bytes.count + bytes.count / 64)
            for byte in bytes {
                out.append(byte)
                if byte == 0xFF { out.append(0x00) }
            }
            return out
        }
    }

    // MARK: PNG

    /// An 8-bit RGB PNG of one colour. Row 0 is filtered Sub (the colour, then
    /// zero differences), the others Up (all zeros), so the zlib stream is a few
    /// literals and long distance-1 matches: ≈170 KB at 3000×3000, written
    /// without materialising the 27 MB of raw rows.
    static func png(width: Int, height: Int, rgb: (UInt8, UInt8, UInt8)) -> [UInt8] {
        var out: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var header: [UInt8] = []
        header += be32(UInt32(width)) + be32(UInt32(height))
        header += [8, 2, 0, 0, 0]  // bit depth 8, colour type 2 (RGB), deflate, adaptive filters, no interlace
        out += chunk("IHDR", header)

        var deflate = BitWriterLSB()
        var adler = Adler32()
        deflate.write(0b1, count: 1)   // BFINAL
        deflate.write(0b01, count: 2)  // BTYPE = fixed Huffman
        let rowBytes = 3 * width
        for row in 0..<height {
            let prefix: [UInt8] = row == 0 ? [1, rgb.0, rgb.1, rgb.2] : [2]
            for byte in prefix {
                deflate.literal(byte)
                adler.add(byte)
            }
            // The rest of the row is zeros: one literal zero, then copies of it.
            var zeros = rowBytes + 1 - prefix.count
            if zeros > 0 {
                deflate.literal(0)
                adler.add(0)
                zeros -= 1
            }
            adler.addZeros(zeros)
            while zeros > 0 {
                if zeros < 3 {
                    for _ in 0..<zeros { deflate.literal(0) }
                    zeros = 0
                } else {
                    let length = min(258, zeros)
                    // Leave at least 3 for a final match, or none.
                    let take = (zeros - length > 0 && zeros - length < 3) ? length - 3 : length
                    deflate.match(length: take)
                    zeros -= take
                }
            }
        }
        deflate.write(0, count: 7)  // end of block (code 256: seven 0 bits)
        var zlib: [UInt8] = [0x78, 0x01]
        zlib += deflate.finish()
        zlib += be32(adler.value)
        out += chunk("IDAT", zlib)
        out += chunk("IEND", [])
        return out
    }

    static func chunk(_ type: String, _ data: [UInt8]) -> [UInt8] {
        let typed = Array(type.utf8) + data
        return be32(UInt32(data.count)) + typed + be32(CRC32.checksum(typed))
    }

    static func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 0xFF), UInt8(v >> 8 & 0xFF), UInt8(v & 0xFF)] }

    /// Deflate's bit order: values least significant bit first, Huffman codes most significant first.
    struct BitWriterLSB {
        var bytes: [UInt8] = []
        var accumulator: UInt64 = 0
        var count = 0

        mutating func write(_ value: UInt32, count n: Int) {
            accumulator |= UInt64(value) << UInt64(count)
            count += n
            while count >= 8 {
                bytes.append(UInt8(truncatingIfNeeded: accumulator))
                accumulator >>= 8
                count -= 8
            }
        }

        /// A Huffman code, reversed into deflate's bit order.
        mutating func code(_ code: UInt32, length: Int) {
            var reversed: UInt32 = 0
            for bit in 0..<length { reversed |= ((code >> UInt32(bit)) & 1) << UInt32(length - 1 - bit) }
            write(reversed, count: length)
        }

        /// A literal byte in the fixed code (RFC 1951 §3.2.6).
        mutating func literal(_ byte: UInt8) {
            if byte < 144 { code(0x30 + UInt32(byte), length: 8) } else { code(0x190 + UInt32(byte) - 144, length: 9) }
        }

        /// The fixed code of "copy 258 bytes at distance 1" (symbol 285, then distance code 0), in stream order.
        static let longestMatch: (bits: UInt32, count: Int) = {
            var writer = BitWriterLSB()
            writer.match(length: 258, general: true)
            var bits = UInt32(writer.accumulator) << UInt32(8 * writer.bytes.count)
            for (index, byte) in writer.bytes.enumerated() { bits |= UInt32(byte) << UInt32(8 * index) }
            return (bits, writer.count + 8 * writer.bytes.count)
        }()

        /// A copy of `length` (3…258) bytes at distance 1.
        mutating func match(length: Int, general: Bool = false) {
            if length == 258, !general {
                write(Self.longestMatch.bits, count: Self.longestMatch.count)
                return
            }
            let (symbol, extraBits, base) = Self.lengthCode(length)
            if symbol < 280 { code(UInt32(symbol - 256), length: 7) } else { code(0xC0 + UInt32(symbol - 280), length: 8) }
            if extraBits > 0 { write(UInt32(length - base), count: extraBits) }
            code(0, length: 5)  // distance code 0 = distance 1, no extra bits
        }

        static let lengthBases = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115, 131, 163, 195, 227, 258]
        static let lengthExtra = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]

        static func lengthCode(_ length: Int) -> (symbol: Int, extraBits: Int, base: Int) {
            var index = lengthBases.count - 1
            while lengthBases[index] > length { index -= 1 }
            return (257 + index, lengthExtra[index], lengthBases[index])
        }

        mutating func finish() -> [UInt8] {
            if count > 0 { bytes.append(UInt8(truncatingIfNeeded: accumulator)) }
            accumulator = 0
            count = 0
            return bytes
        }
    }

    struct Adler32 {
        var a: UInt64 = 1
        var b: UInt64 = 0

        mutating func add(_ byte: UInt8) {
            a = (a + UInt64(byte)) % 65_521
            b = (b + a) % 65_521
        }

        /// `n` zero bytes at once: `a` stays, `b` gains `n·a`.
        mutating func addZeros(_ n: Int) {
            b = (b + UInt64(n) % 65_521 * a) % 65_521
        }

        var value: UInt32 { UInt32(b << 16 | a) }
    }

    enum CRC32 {
        static let table: [UInt32] = (0..<256).map { n in
            var c = UInt32(n)
            for _ in 0..<8 { c = c & 1 == 1 ? 0xEDB8_8320 ^ (c >> 1) : c >> 1 }
            return c
        }

        static func checksum(_ bytes: [UInt8]) -> UInt32 {
            var c: UInt32 = 0xFFFF_FFFF
            for byte in bytes { c = table[Int((c ^ UInt32(byte)) & 0xFF)] ^ (c >> 8) }
            return c ^ 0xFFFF_FFFF
        }
    }
}

/// The simulator's image service without a socket: answers `/image/…` URLs on
/// any host in-process, honouring `If-None-Match`/`If-Modified-Since`, and 404s
/// anything else. For tests of the artwork mirror that need many images fast.
package struct ArtworkImageTransport: HTTPTransport {
    package init() {}

    /// A 3000×3000 JPEG as the service renders one.
    package static var sampleJPEG: [UInt8] { ArtworkImages.jpeg(width: 3000, height: 3000, rgb: (90, 120, 150)) }

    package func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        let headers = Dictionary(request.headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        let simulated = ArtworkImages.respond(
            path: request.url.path,
            conditions: Conditions(ifNoneMatch: headers["if-none-match"], ifModifiedSince: headers["if-modified-since"]))
        var fields: [String: String] = [:]
        if let contentType = simulated.contentType { fields["Content-Type"] = contentType }
        if let etag = simulated.etag { fields["ETag"] = etag }
        if let lastModified = simulated.lastModified { fields["Last-Modified"] = lastModified }
        return HTTPResponse(url: request.url, status: simulated.status, headers: fields, body: simulated.body)
    }
}
