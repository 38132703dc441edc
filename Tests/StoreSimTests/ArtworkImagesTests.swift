import Catalog
import Foundation
@testable import StoreSim
import Testing
import TestSupport

/// The simulator's image service: real JPEG and PNG bytes, sizes from the URL, validators from the path.
@Suite struct ArtworkImagesTests {
    static let thumb = "/image/thumb/Podcasts115/v4/3c/4e/8a/3c4e8a11-2222-3333-4444-555566667777/mza_123.jpg/3000x3000bb.jpg"
    static let legacy = "/image/pf/us/r30/Podcasts7/v4/aa/bb/cc/aabbcc00-1111-2222-3333-444455556666/mza_99.600x600-75.jpg"

    @Test func servesJPEGsOfTheSizeTheURLNames() {
        let big = ArtworkImages.respond(path: Self.thumb, conditions: .none)
        #expect(big.status == 200 && big.contentType == "image/jpeg")
        #expect(ImageInfo.read(big.body) == ImageInfo(format: .jpeg, width: 3000, height: 3000, colorComponents: 3))
        #expect(big.body.count < 150_000)
        #expect(big.body.suffix(2) == [0xFF, 0xD9])
        let small = ArtworkImages.respond(path: Self.legacy, conditions: .none)
        #expect(ImageInfo.read(small.body) == ImageInfo(format: .jpeg, width: 600, height: 600, colorComponents: 3))
        // Same path, same bytes and validator; another size of it, the same colour.
        #expect(ArtworkImages.respond(path: Self.thumb, conditions: .none) == big)
        let colour = { (path: String) in ArtworkImages.parse(path: path).map { [$0.rgb.0, $0.rgb.1, $0.rgb.2] } }
        #expect(colour(Self.thumb) != nil && colour(Self.thumb) == colour(Self.thumb.replacingOccurrences(of: "3000x3000", with: "60x60")))
        #expect(colour(Self.thumb) != colour(Self.legacy))
        #expect(ArtworkImages.respond(path: "/image/thumb/x/y/z.txt", conditions: .none).status == 404)
    }

    @Test func answers304ToItsOwnValidators() {
        let first = ArtworkImages.respond(path: Self.thumb, conditions: .none)
        let etag = try! #require(first.etag)
        let again = ArtworkImages.respond(path: Self.thumb, conditions: Conditions(ifNoneMatch: etag))
        #expect(again.status == 304 && again.body.isEmpty && again.etag == etag)
        #expect(ArtworkImages.respond(path: Self.thumb, conditions: Conditions(ifNoneMatch: "\"other\"")).status == 200)
        #expect(ArtworkImages.respond(path: Self.thumb, conditions: Conditions(ifModifiedSince: first.lastModified)).status == 304)
    }

    /// `file(1)` names both formats, and Python's zlib inflates the PNG's rows to exactly height × (1 + 3·width) bytes.
    @Test func bytesAreImagesOtherToolsRead() async throws {
        let directory = TestPaths.temporaryDirectory("artwork-images")
        defer { try? FileManager.default.removeItem(at: directory) }
        let png = ArtworkImages.respond(path: Self.thumb.replacingOccurrences(of: "3000x3000bb.jpg", with: "1400x1500bb.png"), conditions: .none)
        #expect(png.contentType == "image/png")
        #expect(ImageInfo.read(png.body) == ImageInfo(format: .png, width: 1400, height: 1500, colorComponents: 3))
        let jpeg = ArtworkImages.respond(path: Self.thumb, conditions: .none)
        let pngURL = directory.appendingPathComponent("a.png"), jpegURL = directory.appendingPathComponent("a.jpg")
        try Data(png.body).write(to: pngURL)
        try Data(jpeg.body).write(to: jpegURL)
        let script = """
            import struct, sys, zlib, binascii
            data = open(sys.argv[1], 'rb').read()
            pos, idat = 8, b''
            while pos < len(data):
                (length,) = struct.unpack('>I', data[pos:pos + 4]); kind = data[pos + 4:pos + 8]
                body = data[pos + 8:pos + 8 + length]; (crc,) = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])
                assert binascii.crc32(kind + body) == crc, kind
                if kind == b'IHDR': w, h = struct.unpack('>II', body[:8])
                if kind == b'IDAT': idat += body
                pos += 12 + length
            raw = zlib.decompress(idat)
            assert len(raw) == h * (1 + 3 * w), (len(raw), w, h)
            assert raw[0] == 1 and all(b == 0 for b in raw[4:1 + 3 * w]) and raw[1 + 3 * w] == 2
            j = open(sys.argv[2], 'rb').read()
            i = j.index(b'\\xff\\xc0'); hh, ww = struct.unpack('>HH', j[i + 5:i + 9])
            assert (ww, hh) == (3000, 3000)
            print('ok', w, h)
            """
        let result = try await Python.run(["-c", script, pngURL.path, jpegURL.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains("ok 1400 1500"))
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/file") {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/file")
            process.arguments = ["-b", pngURL.path, jpegURL.path]
            let pipe = Pipe()
            process.standardOutput = pipe
            try process.run()
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(output.contains("PNG image data, 1400 x 1500, 8-bit/color RGB"), "\(output)")
            #expect(output.contains("JPEG image data") && output.contains("3000x3000"), "\(output)")
        }
        // Where libjpeg's djpeg is installed, the entropy-coded data decodes to the whole flat picture.
        if FileManager.default.isExecutableFile(atPath: "/usr/bin/djpeg") {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: "/usr/bin/djpeg")
            process.arguments = ["-pnm", jpegURL.path]
            let pipe = Pipe(), errors = Pipe()
            process.standardOutput = pipe
            process.standardError = errors
            try process.run()
            let ppm = pipe.fileHandleForReading.readDataToEndOfFile()
            let warnings = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            #expect(process.terminationStatus == 0 && warnings.isEmpty, "\(warnings)")
            let header = Array("P6\n3000 3000\n255\n".utf8)
            #expect(Array(ppm.prefix(header.count)) == header)
            #expect(ppm.count == header.count + 3000 * 3000 * 3)
            let pixels = Array(ppm.dropFirst(header.count))
            let first = Array(pixels.prefix(3)), last = Array(pixels.suffix(3))
            #expect(first == last)
        }
    }
}
