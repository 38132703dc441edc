import Catalog
import Foundation
import Snapshot

/// What a feed's channel says about the whole feed, and the genre tree that
/// files it under Apple's categories.
struct FeedDirectory {
    /// Genre key → name and parent key, from the job's genre source (if any).
    private var genres: [String: (name: String, parent: String?)] = [:]
    private var keyByName: [String: String] = [:]

    init(_ spec: FeedExportSpec, context: ExportContext) throws {
        // A few hundred rows at most: the store's whole genre tree.
        for record in try context.store.recordsNewestFirst([.genre], by: "name") {
            guard let fields = try? JSONParser.parse(Array(record.payload.utf8)), let name = FeedExport.text(fields["name"]) else {
                continue
            }
            let parent = FeedExport.text(fields["parent_id"])
            genres[record.key] = (name, parent)
            if keyByName[name] == nil || keyByName[name]! > record.key { keyByName[name] = record.key }
        }
    }

    /// Names from the top of the tree down to `key`.
    private func names(_ key: String) -> [String]? {
        var path: [String] = []
        var current: String? = key
        var seen = Set<String>()
        while let key = current, let genre = genres[key], seen.insert(key).inserted {
            path.insert(genre.name, at: 0)
            current = genre.parent
        }
        return path.isEmpty ? nil : path
    }

    /// Apple's category for a genre known by id and/or name: its place in the
    /// crawled tree when the job has one, else the id or name alone.
    func applePath(genreID: String?, name: String?) -> [String]? {
        if let id = genreID, !id.isEmpty {
            if let path = names(id).flatMap(AppleCategories.path(for:)) { return path }
            if let path = AppleCategories.path(forGenreID: id) { return path }
        }
        guard let name, !name.isEmpty else { return nil }
        if let key = keyByName[name], let path = names(key).flatMap(AppleCategories.path(for:)) { return path }
        return AppleCategories.path(for: [name])
    }

    /// The channel of one file of `spec`: the job's own values first, then
    /// what its items say (their storefront's language, their categories,
    /// their artwork), so every podcast feed has what Apple requires.
    func channel(_ spec: FeedExportSpec, group: FeedExport.Group, values: [String: String], nameValues: [String: String]? = nil,
                 items: [FeedItem],
                 context: ExportContext) -> FeedChannel {
        let title = FeedExport.rawExpand(spec.title, values)
        // URLs name the group's file, which a colliding name made distinct (FeedExport.distinctNames).
        let selfURL = PathTemplate.expand(spec.selfURL, nameValues ?? values)
        var categories = spec.categories
        if categories.isEmpty, let genre = group.values["genre"] {
            categories = applePath(genreID: nil, name: genre).map { [$0] } ?? []
        }
        if categories.isEmpty, let common = group.categories.first { categories = [common] }
        // Songs' genres (Pop, Jazz) are not podcast categories; a music feed is Music.
        if categories.isEmpty, spec.kind == .musicNew { categories = [["Music"]] }
        let country = group.values["country"] ?? group.countries.first
        let language = spec.language ?? country.flatMap(StorefrontLanguage.tag(forCountry:)) ?? "en-us"
        // `write` already resized the job's own image and pointed it at the mirror.
        let image = spec.imageURL ?? items.lazy.compactMap(\.imageURL).first
        var channel = FeedChannel(
            title: title, link: PathTemplate.expand(spec.link, nameValues ?? values),
            description: FeedExport.rawExpand(spec.description, values), language: language,
            selfURL: selfURL, imageURL: image, author: spec.author ?? spec.ownerName,
            categories: categories, explicit: spec.explicit ?? items.contains { $0.explicit == true },
            type: spec.podcastType.flatMap(PodcastType.init(rawValue:)) ?? .episodic,
            lastBuildDate: context.runDate, generator: "storesync")
        channel.ownerName = spec.ownerName
        channel.ownerEmail = spec.ownerEmail
        channel.copyright = spec.copyright
        channel.hubURL = spec.push?.hub
        if spec.kind.isSubscribable {
            channel.podcastGUID = spec.podcastGUID ?? PodcastGUID.forFeed(selfURL)
            channel.podcastTags = spec.podcastTags
            channel.itemsCarryPodcastTags = items.contains { !$0.podcastTags.isEmpty }
        }
        channel.itemThumbnails = !spec.kind.isSubscribable && items.contains { $0.imageURL != nil }
        return channel
    }
}

/// What an item needs from records other than its own: an episode's
/// podcast (its artwork, author, explicitness and genre), and every item's
/// Apple category and storefront, which the channel is built from.
struct ItemEnricher {
    let kind: FeedKind
    let directory: FeedDirectory
    private var podcasts: [String: JSONValue] = [:]

    /// `candidates`: the items the feed lists (their podcasts are looked up, no others).
    init(_ kind: FeedKind, candidates: [FeedExport.Candidate], directory: FeedDirectory, context: ExportContext) throws {
        self.kind = kind
        self.directory = directory
        if kind == .episodesNew {
            let keys = candidates.compactMap { FeedExport.text($0.fields["podcast_id"]) }
            for record in try context.store.entitiesByKey(.podcast, keys: keys) {
                podcasts[record.key] = FeedExport.parse(record.payload)
            }
        }
    }

    /// The podcast an episode belongs to, if the store has it.
    func podcast(of candidate: FeedExport.Candidate) -> JSONValue? {
        FeedExport.text(candidate.fields["podcast_id"]).flatMap { podcasts[$0] }
    }

    func enrich(_ item: FeedItem, candidate: FeedExport.Candidate) -> FeedItem {
        var item = item
        switch kind {
        case .episodesNew:
            guard let show = podcast(of: candidate) else { return item }
            // Apple shows the show's artwork for an episode without its own.
            if item.imageURL == nil { item.imageURL = FeedExport.link(show["artwork_url"]) }
            if item.explicit == nil { item.explicit = show["explicit"]?.boolValue }
            if item.author == nil { item.author = FeedExport.text(show["artist"]) ?? FeedExport.text(show["name"]) }
        case .musicNew:
            // A song's 30-second preview is what a podcast app can play.
            if item.enclosure == nil, let preview = FeedExport.link(candidate.fields["preview_url"]) {
                item.enclosure = FeedEnclosure(url: preview, length: 0,
                                               type: MediaType.enclosureType(given: nil, url: preview))
            }
        default:
            break
        }
        return item
    }

    /// Where an item's genre and storefront are: an episode's podcast, else the item itself.
    private func catalogFields(of candidate: FeedExport.Candidate) -> JSONValue {
        kind == .episodesNew ? (podcast(of: candidate) ?? candidate.fields) : candidate.fields
    }

    /// The item's Apple category, from its own genre or its podcast's.
    func category(of candidate: FeedExport.Candidate) -> [String]? {
        let fields = catalogFields(of: candidate)
        return directory.applePath(genreID: FeedExport.text(fields["genre_id"]), name: FeedExport.text(fields["genre"]))
    }

    /// The storefront the item was listed in (ISO 3166, as the source gave it).
    func country(of candidate: FeedExport.Candidate) -> String? {
        FeedExport.text(catalogFields(of: candidate)["country"])
    }

    /// The distinct values, most common first (ties in value order).
    static func mostCommon<T: Hashable & Comparable>(_ values: [T]) -> [T] {
        var counts: [T: Int] = [:]
        for value in values { counts[value, default: 0] += 1 }
        return counts.sorted { $0.value != $1.value ? $0.value > $1.value : $0.key < $1.key }.map(\.key)
    }
}
