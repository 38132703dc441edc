import Catalog
import Testing

/// The mirror's names and the image header reader, which feeds and lint rely on.
@Suite struct ArtworkMirrorNamingTests {
    @Test func fileNamesAreAFunctionOfTheURLAlone() {
        let url = "https://is1-ssl.mzstatic.com/image/thumb/Podcasts1/v4/ab/cd/ef/x/mza_1.jpg/3000x3000bb.jpg"
        let name = ArtworkMirror.fileName(for: url)
        #expect(name == ArtworkMirror.fileName(for: url))
        #expect(name.hasSuffix(".jpg") && name.count == 20)
        #expect(ArtworkMirror.isMirrorFileName(name))
        // Another size is another file: the bytes differ.
        #expect(ArtworkMirror.fileName(for: url.replacingOccurrences(of: "3000x3000", with: "1400x1400")) != name)
        #expect(ArtworkMirror.fileName(for: "https://example.com/a/cover.PNG").hasSuffix(".png"))
        #expect(ArtworkMirror.fileName(for: "https://example.com/a/cover.png?v=2").hasSuffix(".png"))
        #expect(!ArtworkMirror.isMirrorFileName(ArtworkMirror.manifestName))
        #expect(!ArtworkMirror.isMirrorFileName("cover.jpg"))
        #expect(!ArtworkMirror.isMirrorFileName("0123456789ABCDEF.jpg"))
    }

    @Test func readsPNGHeaders() {
        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0, 0, 0, 13] + Array("IHDR".utf8)
        png += [0, 0, 0x0B, 0xB8, 0, 0, 0x05, 0x78, 8, 2, 0, 0, 0, 0, 0, 0, 0]
        #expect(ImageInfo.read(png) == ImageInfo(format: .png, width: 3000, height: 1400, colorComponents: 3))
        #expect(ImageInfo.read(png)?.artworkProblem == nil)
        png[25] = 0  // greyscale
        #expect(ImageInfo.read(png)?.artworkProblem?.contains("not RGB") == true)
        #expect(ImageInfo.read(Array(png.prefix(20))) == nil)
    }

    @Test func readsJPEGFramesPastOtherSegments() {
        var jpeg: [UInt8] = [0xFF, 0xD8, 0xFF, 0xE0, 0x00, 0x04, 0x00, 0x00]  // a short APP0
        jpeg += [0xFF, 0xDB, 0x00, 0x03, 0x00]  // a (truncated) DQT, skipped by length
        jpeg += [0xFF, 0xC2, 0x00, 0x11, 0x08, 0x02, 0x58, 0x02, 0x58, 0x03, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1]
        let info = ImageInfo.read(jpeg)
        #expect(info == ImageInfo(format: .jpeg, width: 600, height: 600, colorComponents: 3))
        #expect(info?.artworkProblem == "600×600 px is outside 1400–3000 px")
        #expect(ImageInfo.read(Array("<html>not an image</html>".utf8)) == nil)
        // A DHT (0xC4) is not a frame even though it sits in the SOFn range.
        #expect(ImageInfo.read([0xFF, 0xD8, 0xFF, 0xC4, 0x00, 0x02, 0xFF, 0xD9]) == nil)
    }
}
