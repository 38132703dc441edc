/// The media files the catalogue's enclosures and previews name
/// (`traffic.storesim.test/podcasts/…`, `audio-ssl.itunes.apple.com/itunes-assets/…`),
/// served as media servers serve them, so an enclosure check has something
/// real to ask: HEAD with `Content-Length` and `Accept-Ranges`, one-byte
/// range requests answered 206 with `Content-Range`. Each file's size and
/// manners are fixed by a hash of its path, like the real world's mix (HEAD
/// carries an `ETag` and answers `If-None-Match` with 304):
/// - 4 in 100 are gone (404);
/// - 10 in 100 refuse HEAD (405) but answer ranges;
/// - 10 in 100 ignore `Range` (a whole, small file, 200, no `Accept-Ranges`);
/// - the rest answer both.
enum MediaFiles {
    enum Manner: Equatable { case gone, refusesHead, ignoresRanges, complete }

    static func manner(path: String) -> Manner {
        let bits = hash(path)
        switch bits % 100 {
        case 0..<4: return .gone
        case 4..<14: return .refusesHead
        case 14..<24: return .ignoresRanges
        default: return .complete
        }
    }

    /// The file's size: 1–60 MB for an episode, a preview's 0.5–1.5 MB, and a
    /// few KB for a server that sends the whole file to a range request.
    static func size(path: String) -> Int {
        let bits = StableRandom.mix(hash(path))
        if manner(path: path) == .ignoresRanges { return 2_048 + Int(bits % 2_048) }
        if path.hasPrefix("/itunes-assets/") { return 500_000 + Int(bits % 1_000_000) }
        return 1_000_000 + Int(bits % 59_000_000)
    }

    static func contentType(path: String) -> String {
        let file = path.split(separator: "?").first.map(String.init) ?? path
        if file.hasSuffix(".mp3") { return "audio/mpeg" }
        if file.hasSuffix(".m4v") || file.hasSuffix(".mp4") { return "video/mp4" }
        return "audio/x-m4a"
    }

    static func isMediaPath(_ path: String) -> Bool {
        path.hasPrefix("/podcasts/") || path.hasPrefix("/itunes-assets/")
    }

    /// The answer to `method` on `path` with the request's `Range`, if any.
    /// A file's strong validator: it never changes.
    static func etag(path: String) -> String { "\"m\(String(hash(path), radix: 16))\"" }

    static func respond(path: String, head: Bool, range: String?, ifNoneMatch: String? = nil) -> SimResponse {
        let manner = manner(path: path)
        if manner == .gone { return SimResponse(status: 404, contentType: "text/plain", body: Array("Not Found".utf8)) }
        let size = size(path: path)
        let type = contentType(path: path)
        let etag = etag(path: path)
        if head {
            if manner == .refusesHead {
                return SimResponse(status: 405, contentType: "text/plain", body: Array("Method Not Allowed".utf8))
            }
            if ifNoneMatch == etag { return SimResponse(status: 304, etag: etag, body: []) }
            var headers = [("Content-Length", String(size))]
            if manner != .ignoresRanges { headers.append(("Accept-Ranges", "bytes")) }
            return SimResponse(status: 200, contentType: type, etag: etag, headers: headers, body: [])
        }
        if manner != .ignoresRanges, let range, let (first, last) = byteRange(range, size: size) {
            return SimResponse(status: 206, contentType: type,
                               headers: [("Content-Range", "bytes \(first)-\(last)/\(size)"), ("Accept-Ranges", "bytes")],
                               body: content(path: path, from: first, through: last))
        }
        // A whole file only where it is small: a client asking for a big one gets its first bytes' worth of nothing.
        guard manner == .ignoresRanges else {
            return SimResponse(status: 416, contentType: "text/plain", body: Array("Range Not Satisfiable".utf8))
        }
        return SimResponse(status: 200, contentType: type, body: content(path: path, from: 0, through: size - 1))
    }

    /// `bytes=A-B` (or `bytes=A-`) within the file.
    static func byteRange(_ header: String, size: Int) -> (Int, Int)? {
        guard header.hasPrefix("bytes="), !header.contains(",") else { return nil }
        let parts = header.dropFirst(6).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let first = Int(parts[0]), first < size else { return nil }
        let last = parts[1].isEmpty ? size - 1 : min(size - 1, Int(parts[1]) ?? -1)
        return last >= first ? (first, last) : nil
    }

    static func content(path: String, from first: Int, through last: Int) -> [UInt8] {
        (first...last).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ path.utf8.count) }
    }

    private static func hash(_ path: String) -> UInt64 {
        var value: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in path.utf8 { value = (value ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return StableRandom.mix(value)
    }
}
