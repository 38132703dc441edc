import Catalog
import Foundation

/// RFC 5005 paged archives for a feed with more candidates than its `limit`.
///
/// The subscription document holds the newest `limit` items; the older ones
/// go to archive documents next to it (`episodes-archive-1.xml`, …), oldest
/// first, `limit` items each. A full archive page is written once and never
/// again, so a reader that walked it need not walk it twice (RFC 5005 §4);
/// only the newest, still filling page (always present once archiving has
/// begun, even empty, so every `next-archive` link resolves) is rewritten.
/// Which items each full page holds is kept in a small index beside the feed
/// (`.episodes.xml.archive.json`), so pages stay as written whatever later
/// happens to their records.
///
/// Links: the subscription document has `prev-archive` to the newest page;
/// each page has `current` (the subscription document), `prev-archive` to the
/// page before and, on full pages, `next-archive` to the page after.
struct FeedArchive {
    enum Format { case rss, atom }

    let feed: URL
    let format: Format
    let limit: Int
    let currentURL: String

    init(feed: URL, format: Format, spec: FeedExportSpec, values: [String: String], context: ExportContext) throws {
        self.feed = feed
        self.format = format
        self.limit = spec.limit
        self.currentURL = PathTemplate.expand(format == .atom ? (spec.atomURL ?? spec.selfURL) : spec.selfURL, values)
    }

    private var indexURL: URL {
        feed.deletingLastPathComponent().appendingPathComponent(".\(feed.lastPathComponent).archive.json")
    }

    /// The file of page `number` (1 = oldest).
    func pageFile(_ number: Int) -> URL {
        let ext = feed.pathExtension
        let base = feed.deletingPathExtension().lastPathComponent
        return feed.deletingLastPathComponent().appendingPathComponent("\(base)-archive-\(number)" + (ext.isEmpty ? "" : ".\(ext)"))
    }

    /// Where page `number` is published: the subscription URL with the page's file name.
    func pageURL(_ number: Int) -> String {
        guard let slash = currentURL.lastIndex(of: "/") else { return pageFile(number).lastPathComponent }
        return String(currentURL[...slash]) + pageFile(number).lastPathComponent
    }

    /// Full pages so far: each page's item GUIDs, oldest page first.
    private func readIndex() -> [[String]] {
        guard let data = try? Data(contentsOf: indexURL),
              let value = try? JSONParser.parse(Array(data)), let pages = value["pages"]?.arrayValue else { return [] }
        return pages.map { $0.arrayValue?.compactMap(\.stringValue) ?? [] }
    }

    /// Writes the pages `older` (the items past the newest `limit`, newest
    /// first) calls for, and sets the subscription document's links in `current`.
    func write(older: [FeedItem], channel: FeedChannel, podcast: Bool, current: inout FeedChannel) throws -> [ExportedFile] {
        var pages = readIndex()
        let archived = Set(pages.joined())
        guard !older.isEmpty || !pages.isEmpty else { return [] }
        var files: [ExportedFile] = []
        // Pages already full are listed as written: they are part of the export, never stale.
        for number in pages.indices.map({ $0 + 1 }) where FileManager.default.fileExists(atPath: pageFile(number).path) {
            files.append(ExportedFile(path: pageFile(number).path, bytes: SnapshotExporter.fileSize(pageFile(number)),
                                      rows: pages[number - 1].count))
        }
        var waiting = older.reversed().filter { !archived.contains($0.guid) }
        while waiting.count >= limit {
            let page = Array(waiting.prefix(limit))
            waiting.removeFirst(limit)
            pages.append(page.map(\.guid))
            let number = pages.count
            files.append(try writePage(number, items: page.reversed(), full: true, channel: channel, podcast: podcast))
        }
        let open = pages.count + 1
        files.append(try writePage(open, items: waiting.reversed(), full: false, channel: channel, podcast: podcast))
        let index = JSONValue.object(["pages": .array(pages.map { .array($0.map(JSONValue.string)) })])
        try AtomicFile.write(CanonicalJSON.encode(index), to: indexURL)
        current.archiveLinks = [FeedLink(rel: "prev-archive", href: pageURL(open))]
        return files
    }

    private func writePage(_ number: Int, items: [FeedItem], full: Bool, channel: FeedChannel, podcast: Bool) throws -> ExportedFile {
        var page = channel
        page.selfURL = pageURL(number)
        page.isArchive = true
        page.podcastGUID = nil
        // A page is never rewritten once full: nothing to subscribe to.
        page.hubURL = nil
        page.archiveLinks = [FeedLink(rel: "current", href: currentURL)]
        if number > 1 { page.archiveLinks.append(FeedLink(rel: "prev-archive", href: pageURL(number - 1))) }
        if full { page.archiveLinks.append(FeedLink(rel: "next-archive", href: pageURL(number + 1))) }
        let url = pageFile(number)
        let result: FeedWriteResult
        switch format {
        case .rss: result = try FeedWriters.writeRSS(channel: page, items: items, podcast: podcast, to: url)
        case .atom: result = try FeedWriters.writeAtom(channel: page, items: items, to: url)
        }
        return ExportedFile(path: url.path, bytes: result.byteCount, rows: result.itemCount)
    }
}
