/// Store artwork URLs at the size podcast apps require.
///
/// iTunes artwork URLs carry their pixel size in the last path component,
/// and the CDN renders any size of the same image on request:
/// - modern: `https://is1-ssl.mzstatic.com/image/thumb/Podcasts/v4/…/mza_1.jpg/600x600bb.jpg`
/// - legacy: `http://is3.mzstatic.com/image/pf/us/r30/Podcasts/v4/…/mza_1.600x600-75.jpg`
///
/// Apple Podcasts wants channel artwork of 1400×1400 to 3000×3000 px over
/// https, so a larger size of the same image is one rewrite away (the seed
/// apps did exactly this for their high-resolution covers). URLs of other
/// hosts are the publisher's own: they are left exactly as given, since
/// neither their size nor an https twin can be guessed.
public enum ArtworkURL {
    /// The size feeds publish unless the job says otherwise.
    public static let defaultSize = 3000
    /// What Apple Podcasts accepts for channel artwork.
    public static let appleSizes = 1400...3000

    /// `url` at `size`×`size` px over https when it is an iTunes artwork URL
    /// with its size in the path; otherwise `url` unchanged. `size` is
    /// clamped to ``appleSizes``. Idempotent.
    public static func hiRes(_ url: String, size: Int = defaultSize) -> String {
        let size = min(max(size, appleSizes.lowerBound), appleSizes.upperBound)
        guard let schemeEnd = url.range(of: "://") else { return url }
        let scheme = url[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "http" || scheme == "https" else { return url }
        let afterScheme = url[schemeEnd.upperBound...]
        let hostEnd = afterScheme.firstIndex(of: "/") ?? afterScheme.endIndex
        var host = afterScheme[..<hostEnd].lowercased()
        guard host == "mzstatic.com" || host.hasSuffix(".mzstatic.com") else { return url }
        var path = String(afterScheme[hostEnd...])
        // The query and fragment are not part of the image's name.
        if let cut = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = String(path[..<cut]) }
        guard let resized = resizedPath(path, size: size) else { return url }
        // The CDN's certificate covers the `-ssl` names (`is1-ssl.mzstatic.com`), not `is1.mzstatic.com`.
        let labels = host.split(separator: ".", maxSplits: 1)
        if labels.count == 2, labels[0].hasPrefix("is"), !labels[0].hasSuffix("-ssl"),
           labels[0].dropFirst(2).allSatisfy(\.isNumber) {
            host = "\(labels[0])-ssl.\(labels[1])"
        }
        return "https://\(host)\(resized)"
    }

    /// The pixel size an iTunes artwork URL asks for (`600` for `…/600x600bb.jpg`), if it names one.
    public static func requestedSize(_ url: String) -> (width: Int, height: Int)? {
        guard let found = sizeRange(in: url) else { return nil }
        let text = url[found.range]
        let parts = text.split(separator: "x")
        guard parts.count == 2, let w = Int(parts[0]), let h = Int(parts[1]) else { return nil }
        return (w, h)
    }

    private static func resizedPath(_ path: String, size: Int) -> String? {
        guard let found = sizeRange(in: path) else { return nil }
        return path.replacingCharacters(in: found.range, with: "\(size)x\(size)")
    }

    /// The last `WxH` in the last path component that is followed by the
    /// CDN's suffixes (`bb`, `cc`, `-75`, …) and an image extension.
    private static func sizeRange(in path: String) -> (range: Range<String.Index>, Void)? {
        let lastSlash = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let component = path[lastSlash...]
        let lower = component.lowercased()
        guard [".jpg", ".jpeg", ".png", ".webp"].contains(where: { lower.hasSuffix($0) }) else { return nil }
        let chars = Array(component.unicodeScalars)
        var i = chars.count - 1
        while i > 0 {
            // Find `x` between digits, scanning from the end.
            if chars[i] == "x", i + 1 < chars.count, isDigit(chars[i + 1]), isDigit(chars[i - 1]) {
                var start = i - 1
                while start > 0, isDigit(chars[start - 1]) { start -= 1 }
                var end = i + 1
                while end < chars.count, isDigit(chars[end]) { end += 1 }
                let before = start == 0 ? nil : chars[start - 1]
                let widthDigits = i - start, heightDigits = end - i - 1
                // What follows must be the CDN's own suffix: letters (bb, cc, sr) and/or -quality, then the extension.
                var j = end
                while j < chars.count, chars[j].properties.isLowercase, j - end < 3 { j += 1 }
                if j < chars.count, chars[j] == "-" {
                    j += 1
                    while j < chars.count, isDigit(chars[j]) { j += 1 }
                }
                let suffixOK = j < chars.count && chars[j] == "."
                    && String(String.UnicodeScalarView(chars[j...])).lowercased().split(separator: ".").count == 1
                if suffixOK, (1...4).contains(widthDigits), (1...4).contains(heightDigits), before == nil || before == "." || before == "/" {
                    let base = component.unicodeScalars.startIndex
                    let lo = component.unicodeScalars.index(base, offsetBy: start)
                    let hi = component.unicodeScalars.index(base, offsetBy: end)
                    return (lo..<hi, ())
                }
            }
            i -= 1
        }
        return nil
    }

    private static func isDigit(_ s: Unicode.Scalar) -> Bool { s.value >= 0x30 && s.value <= 0x39 }
}
