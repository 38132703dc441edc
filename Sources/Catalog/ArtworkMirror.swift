/// The artwork mirror's shared vocabulary: how a mirrored image is named and
/// what the mirror accepts. The download engine lives in SyncEngine (it needs
/// the crawler's `Fetcher`); feeds only need the names, so those are here,
/// where Export can reach them without importing Crawl.
public enum ArtworkMirror {
    /// Apple Podcasts' artwork rule: square-ish images 1400 to 3000 px on each side.
    public static let acceptedPixels = 1400...3000

    /// The mirror's bookkeeping, inside the mirror folder. Hidden, so a folder
    /// synced to a web server publishes images, not validators.
    public static let manifestName = ".manifest.json"

    /// The mirrored file's name for `url`: XXH64 of the URL (16 hex digits)
    /// plus the extension the URL asks for. A function of the URL alone, so a
    /// feed can name the file without reading the manifest, and a changed
    /// image (iTunes gives it a new URL) never overwrites the one feeds
    /// already point at.
    public static func fileName(for url: String) -> String {
        "\(ContentHash(bytes: Array(url.utf8)).description).\(format(forURL: url).fileExtension)"
    }

    /// The format a URL asks for: iTunes' image service renders whatever the
    /// path's extension names, so `….png` is a PNG and everything else a JPEG.
    public static func format(forURL url: String) -> ImageFormat {
        let path = url.split(separator: "?", maxSplits: 1).first.map(String.init) ?? url
        return path.lowercased().hasSuffix(".png") ? .png : .jpeg
    }

    /// Whether `name` is one of the mirror's image names (16 hex digits and
    /// `.jpg`/`.png`): the only files the mirror ever deletes.
    public static func isMirrorFileName(_ name: String) -> Bool {
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 2, parts[0].count == 16, ImageFormat.allCases.contains(where: { $0.fileExtension == parts[1] })
        else { return false }
        return parts[0].allSatisfy { $0.isHexDigit && !$0.isUppercase }
    }
}

/// The two formats Apple accepts for podcast artwork.
public enum ImageFormat: String, Sendable, Equatable, CaseIterable {
    case jpeg, png

    public var fileExtension: String {
        switch self {
        case .jpeg: "jpg"
        case .png: "png"
        }
    }

    public var mediaType: String {
        switch self {
        case .jpeg: "image/jpeg"
        case .png: "image/png"
        }
    }
}

/// What an image's header says: its format, pixel size and colour model,
/// read from the bytes (JPEG SOFn, PNG IHDR), never from a URL or a header
/// the server sent.
public struct ImageInfo: Sendable, Equatable {
    public var format: ImageFormat
    public var width: Int
    public var height: Int
    /// JPEG: components in the frame (3 = YCbCr/RGB, 1 = grey, 4 = CMYK).
    /// PNG: 3 for colour types 2 (RGB), 3 (palette) and 6 (RGBA), 1 for grey.
    public var colorComponents: Int

    public init(format: ImageFormat, width: Int, height: Int, colorComponents: Int) {
        self.format = format
        self.width = width
        self.height = height
        self.colorComponents = colorComponents
    }

    /// Reads the header of a JPEG or PNG; nil when the bytes are neither, or
    /// the header is cut short.
    public static func read(_ bytes: [UInt8]) -> ImageInfo? {
        if bytes.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return readPNG(bytes) }
        if bytes.starts(with: [0xFF, 0xD8]) { return readJPEG(bytes) }
        return nil
    }

    /// The IHDR chunk comes first (PNG spec §5.6): width, height, bit depth, colour type.
    static func readPNG(_ b: [UInt8]) -> ImageInfo? {
        guard b.count >= 33, b[12...15].elementsEqual(Array("IHDR".utf8)) else { return nil }
        let width = be32(b, 16), height = be32(b, 20)
        let components: Int
        switch b[25] {
        case 2, 3, 6: components = 3
        case 0, 4: components = 1
        default: return nil
        }
        guard width > 0, height > 0 else { return nil }
        return ImageInfo(format: .png, width: width, height: height, colorComponents: components)
    }

    /// Walks the marker segments to the first start-of-frame (SOF0–SOF15
    /// except DHT, JPG and DAC), whose payload holds height, width and components.
    static func readJPEG(_ b: [UInt8]) -> ImageInfo? {
        var i = 2
        while i + 4 <= b.count {
            guard b[i] == 0xFF else { return nil }
            let marker = b[i + 1]
            // Fill bytes and standalone markers carry no length.
            if marker == 0xFF { i += 1; continue }
            if marker == 0x01 || (0xD0...0xD7).contains(marker) { i += 2; continue }
            if marker == 0xD9 || marker == 0xDA { return nil }
            let length = Int(b[i + 2]) << 8 | Int(b[i + 3])
            guard length >= 2 else { return nil }
            if (0xC0...0xCF).contains(marker), marker != 0xC4, marker != 0xC8, marker != 0xCC {
                guard i + 2 + length <= b.count, length >= 8 else { return nil }
                let height = Int(b[i + 5]) << 8 | Int(b[i + 6])
                let width = Int(b[i + 7]) << 8 | Int(b[i + 8])
                guard width > 0, height > 0 else { return nil }
                return ImageInfo(format: .jpeg, width: width, height: height, colorComponents: Int(b[i + 9]))
            }
            i += 2 + length
        }
        return nil
    }

    private static func be32(_ b: [UInt8], _ at: Int) -> Int {
        Int(b[at]) << 24 | Int(b[at + 1]) << 16 | Int(b[at + 2]) << 8 | Int(b[at + 3])
    }

    /// Why Apple Podcasts would refuse this image as artwork, or nil if it would take it.
    public var artworkProblem: String? {
        guard ArtworkMirror.acceptedPixels.contains(width), ArtworkMirror.acceptedPixels.contains(height) else {
            return "\(width)×\(height) px is outside \(ArtworkMirror.acceptedPixels.lowerBound)–\(ArtworkMirror.acceptedPixels.upperBound) px"
        }
        guard colorComponents == 3 else {
            return "\(colorComponents == 1 ? "greyscale" : colorComponents == 4 ? "CMYK" : "\(colorComponents)-component") "
                + "\(format == .jpeg ? "JPEG" : "PNG"), not RGB"
        }
        return nil
    }
}

/// What one night of the artwork mirror did, for the summary and report.json.
public struct ArtworkMirrorFigures: Sendable, Equatable {
    /// Images the mirror holds after the night (accepted ones; rejected ones keep no file).
    public var files = 0
    public var bytes: Int64 = 0
    public var budgetBytes: Int64 = 0
    /// Distinct image URLs tonight's feeds publish.
    public var wanted = 0
    /// Of those, how many feeds point at the mirror.
    public var published = 0
    /// HTTP requests sent (retries included).
    public var requests = 0
    /// Conditional requests the server answered 304 Not Modified.
    public var notModified = 0
    /// Images fetched whole (new, changed, or lost from the folder).
    public var downloaded = 0
    public var downloadedBytes: Int64 = 0
    /// Files removed to keep within the budget, least recently published first.
    public var evicted = 0
    /// Images that are not a JPEG/PNG, or not 1400–3000 px RGB: kept out of feeds.
    public var rejected = 0
    /// URLs that could not be fetched tonight (the feed keeps the original URL).
    public var failed = 0

    public init() {}

    /// One line for the run summary.
    public var summary: String {
        let megabytes = { (bytes: Int64) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        return "artwork: \(files) files, \(megabytes(bytes)) of \(megabytes(budgetBytes)); \(published) of \(wanted) published images "
            + "mirrored; requests \(requests), 304 not modified \(notModified), downloaded \(downloaded) (\(megabytes(downloadedBytes))), "
            + "evicted \(evicted), rejected \(rejected), failed \(failed)"
    }
}
