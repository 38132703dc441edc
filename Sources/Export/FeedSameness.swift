import Foundation

/// Whether a feed document just written says what the published one says.
///
/// Every document carries the run's date (RSS `lastBuildDate`, Atom's feed
/// `<updated>`, and items that have no date of their own, such as a chart's,
/// carry it too), so two nights' files differ in bytes even when nothing else
/// did. Each file's own build date is read from it and every occurrence
/// masked; what is left must be equal byte for byte. A document whose
/// content did not change then keeps its published file, and with it the
/// date its content last changed (what RSS means by `lastBuildDate`): its
/// bytes, its HTTP validators and its subscribers stay undisturbed, and no
/// push is sent for it.
enum FeedSameness {
    /// Runs `body` (which writes feed documents through ``AtomicFile``) so
    /// that a document equal to the published one but for its date is not written.
    static func keepingUnchanged<R>(_ body: () throws -> R) rethrows -> R {
        try AtomicFile.$keepsUnchangedFeeds.withValue(true) { try body() }
    }

    static func sameContent(_ published: URL, _ written: URL) -> Bool {
        guard let old = try? Data(contentsOf: published), let new = try? Data(contentsOf: written) else { return false }
        if old == new { return true }
        let before = [UInt8](old), after = [UInt8](new)
        guard let oldStamp = buildStamp(in: before), let newStamp = buildStamp(in: after) else { return false }
        return removing(oldStamp, from: before) == removing(newStamp, from: after)
    }

    /// The text of the first `<lastBuildDate>` (RSS) or, failing that, the
    /// first `<updated>` (Atom's feed-level one comes before any entry).
    static func buildStamp(in bytes: [UInt8]) -> [UInt8]? {
        for element in ["lastBuildDate", "updated"] {
            let open = Array("<\(element)>".utf8), close = Array("</\(element)>".utf8)
            guard let start = firstIndex(of: open, in: bytes, from: 0),
                  let end = firstIndex(of: close, in: bytes, from: start + open.count) else { continue }
            let stamp = Array(bytes[(start + open.count)..<end])
            return stamp.isEmpty ? nil : stamp
        }
        return nil
    }

    static func removing(_ needle: [UInt8], from bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var index = 0
        while let hit = firstIndex(of: needle, in: bytes, from: index) {
            out += bytes[index..<hit]
            index = hit + needle.count
        }
        out += bytes[index...]
        return out
    }

    static func firstIndex(of needle: [UInt8], in bytes: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, bytes.count >= needle.count, start <= bytes.count - needle.count else { return nil }
        let first = needle[0]
        var index = start
        while index <= bytes.count - needle.count {
            if bytes[index] == first, bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
            index += 1
        }
        return nil
    }

    /// The file's identity on disk (device and inode): unchanged when a write left the published file in place.
    static func identity(of url: URL) -> (UInt64, UInt64)? {
        var info = stat()
        guard stat(url.path, &info) == 0 else { return nil }
        return (UInt64(info.st_dev), UInt64(info.st_ino))
    }
}
