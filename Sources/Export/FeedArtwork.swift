import Catalog
import Foundation

/// The feeds' side of the artwork mirror: which images a feed publishes (what
/// the mirror downloads), and the same feed pointed at the mirror's copies.
/// Kept apart from FeedExport so the feed code changes in one place only.
extension FeedExport {
    /// Whether a feed of `kind` publishes artwork worth mirroring: podcast,
    /// music and chart feeds carry iTunes artwork; marketplace feeds carry
    /// product photos, which Apple's artwork rules do not apply to.
    package static func publishesArtwork(_ kind: FeedKind) -> Bool {
        kind == .podcastsUpdated || kind == .podcastsNew || kind.isSubscribable || kind == .top
    }

    /// The image URLs `spec` would publish tonight, channel image first, then
    /// each file's items in feed order, without repeats: exactly the items
    /// `write` builds (the same `select` and `item(for:)`), before any mirroring.
    package static func publishedImageURLs(_ spec: FeedExportSpec, context: ExportContext) throws -> [String] {
        guard publishesArtwork(spec.kind) else { return [] }
        let template = spec.rssPath ?? spec.atomPath ?? ""
        let grouping = PathTemplate.variables(in: template).intersection(["genre", "country"])
        var seen = Set<String>()
        var urls: [String] = []
        func add(_ url: String?) {
            guard let url, !url.isEmpty, seen.insert(url).inserted else { return }
            urls.append(url)
        }
        add(hiResImage(spec, context: context).imageURL)
        for group in try groups(spec, grouping: grouping, context: context) {
            for item in group.items { add(item.imageURL) }
        }
        return urls
    }

    /// The job's own channel image at the job's artwork size, when it is iTunes artwork.
    static func hiResImage(_ spec: FeedExportSpec, context: ExportContext) -> FeedExportSpec {
        var spec = spec
        spec.imageURL = spec.imageURL.map { ArtworkURL.hiRes($0, size: context.artworkSize) }
        return spec
    }

    static func mirroringArtwork(_ spec: FeedExportSpec, context: ExportContext) -> FeedExportSpec {
        guard !context.mirroredArtwork.isEmpty, publishesArtwork(spec.kind) else { return spec }
        var spec = spec
        spec.imageURL = context.mirroredArtwork(spec.imageURL)
        return spec
    }

    static func mirroringArtwork(_ group: Group, context: ExportContext) -> Group {
        guard !context.mirroredArtwork.isEmpty else { return group }
        var group = group
        for index in group.items.indices {
            group.items[index].imageURL = context.mirroredArtwork(group.items[index].imageURL)
        }
        return group
    }
}

extension SnapshotExporter {
    /// Every image URL the feed exports among `specs` publish tonight, in
    /// publication order without repeats: what the artwork mirror fetches.
    package static func publishedArtworkURLs(_ specs: [ExportSpec], context: ExportContext) throws(StoreSyncError) -> [String] {
        var seen = Set<String>()
        var urls: [String] = []
        for case .feed(let feed) in specs {
            do {
                for url in try FeedExport.publishedImageURLs(feed, context: context) where seen.insert(url).inserted {
                    urls.append(url)
                }
            } catch let error as StoreSyncError {
                throw error
            } catch {
                throw .exportFailed(path: context.url(feed.rssPath ?? feed.atomPath ?? "").path,
                                    reason: "the feed's artwork could not be listed: \(error)")
            }
        }
        return urls
    }
}

extension SnapshotExporter {
    /// The media files the feeds with `checkEnclosures` publish tonight, each once
    /// (what the enclosure checks ask about before the feeds are written).
    package static func publishedEnclosureURLs(_ specs: [ExportSpec], context: ExportContext) throws -> [String] {
        try FeedExport.enclosureURLs(specs, context: context)
    }
}

extension ExportedFile {
    /// The row for a folder another part of the run filled (the artwork mirror): its bytes and file count.
    package static func folder(_ path: String, bytes: Int64, files: Int) -> ExportedFile {
        ExportedFile(path: path, bytes: bytes, rows: files)
    }
}
