/// One Search result: a catalog entity and an index in it.
struct SearchHit: Equatable, Sendable {
    /// `podcast`, `song`, `album`, `artist`, `movie`, `app`, `audiobook`, `ebook`.
    var entity: String
    var index: Int
}

extension World {
    /// The entities a Search with `media` and `entity` returns, in the order
    /// their results are interleaved; nil when the service would reject the
    /// combination (an unknown media type, or an entity of another media).
    /// Known but unsimulated entities (music videos, TV, authors) give none.
    static func searchEntities(media: String?, entity: String?) -> [String]? {
        let media = (media ?? "all").lowercased()
        let entity = entity?.lowercased()
        let table: [String: [String: [String]]] = [
            "podcast": ["podcast": ["podcast"], "podcastauthor": [], "podcastepisode": []],
            "music": ["musictrack": ["song"], "song": ["song"], "album": ["album"], "musicartist": ["artist"],
                      "mix": [], "genre": [], "musicvideo": []],
            "movie": ["movie": ["movie"], "movieartist": []],
            "software": ["software": ["app"], "ipadsoftware": ["app"], "macsoftware": []],
            "audiobook": ["audiobook": ["audiobook"], "audiobookauthor": []],
            "ebook": ["ebook": ["ebook"]],
            "musicvideo": ["musicvideo": [], "musicartist": ["artist"]],
            "tvshow": ["tvepisode": [], "tvseason": []],
            "shortfilm": ["shortfilm": [], "shortfilmartist": []],
        ]
        let defaults: [String: String] = [
            "podcast": "podcast", "music": "musictrack", "movie": "movie", "software": "software",
            "audiobook": "audiobook", "ebook": "ebook", "musicvideo": "musicvideo", "tvshow": "tvepisode",
            "shortfilm": "shortfilm",
        ]
        if media == "all" {
            guard let entity else { return ["podcast", "song", "movie", "app", "audiobook", "ebook"] }
            if entity == "alltrack" { return ["song", "movie", "podcast"] }
            if entity == "allartist" { return ["artist"] }
            for (_, entities) in table { if let kinds = entities[entity] { return kinds } }
            return nil
        }
        guard let entities = table[media], let chosen = entity ?? defaults[media] else { return nil }
        return entities[chosen]
    }

    /// Items matching any of `words` (lower-cased), interleaved across
    /// `entities` one by one, each catalog in index ("relevance") order.
    func searchHits(entities: [String], words: [String], country: Storefront = .us, allowExplicit: Bool = true,
                    night: Int) -> [SearchHit] {
        let normalized = Array(Set(words)).sorted()
        guard !normalized.isEmpty, !entities.isEmpty, night >= 1 else { return [] }
        var lists: [[Int]] = []
        for entity in entities {
            // The podcast-only key is the one this cache has always used.
            let key = entity == "podcast" && country.isUS && allowExplicit
                ? normalized.joined(separator: " ")
                : "\(entity)|\(country.code)|\(allowExplicit)|" + normalized.joined(separator: " ")
            lists.append(cache.search(terms: key, night: night) {
                matches(entity: entity, words: normalized, country: country, allowExplicit: allowExplicit, night: night)
            })
        }
        if lists.count == 1, let entity = entities.first {
            return lists[0].map { SearchHit(entity: entity, index: $0) }
        }
        var hits: [SearchHit] = []
        var position = 0
        while true {
            var any = false
            for (n, list) in lists.enumerated() where position < list.count {
                hits.append(SearchHit(entity: entities[n], index: list[position]))
                any = true
            }
            if !any { break }
            position += 1
        }
        return hits
    }

    private func matches(entity: String, words: [String], country: Storefront, allowExplicit: Bool, night: Int) -> [Int] {
        if entity == "artist" {
            return (0..<(music.timeline.initialCount > 0 ? music.artistCount : 0)).filter { a in
                let artistWords = music.artistWords(a)
                return words.contains { artistWords.contains($0) }
                    && country.sells(tag: MusicCatalog.artistTag, index: a, seed: config.seed)
            }
        }
        guard let catalog = itemCatalog(entity) else { return [] }
        let alive = entity == "podcast" ? aliveIndices(entity: "podcast", night: night)
            : aliveIndices(catalog: catalog, night: night)
        return alive.filter { i in
            let itemWords = catalog.searchWords(i, night: night)
            guard words.contains(where: { itemWords.contains($0) }) else { return false }
            if !allowExplicit, catalog.isExplicit(i, night: night) { return false }
            return country.sells(tag: catalog.tag, index: i, seed: config.seed)
        }
    }

    /// The key a hit's row is keyed by (trackId, collectionId or artistId).
    func key(of hit: SearchHit) -> String {
        if hit.entity == "artist" { return String(music.artistID(hit.index)) }
        return itemCatalog(hit.entity)?.key(hit.index) ?? ""
    }

    /// A hit's row for `country` (podcast feeds under the fixed feed origin).
    func row(of hit: SearchHit, night: Int, country: Storefront = .us) -> JSONObject {
        let row: JSONObject
        switch hit.entity {
        case "artist": row = music.artistRow(hit.index)
        case "podcast": row = podcasts.row(hit.index, night: night, baseURL: Self.defaultBaseURL)
        default: row = itemCatalog(hit.entity)?.row(hit.index, night: night) ?? JSONObject()
        }
        return country.localize(row)
    }

    /// Keys of everything a Search for `term` with `media` and `entity`
    /// returns on `night` (US storefront, `explicit=Yes`), across all pages,
    /// in result order. Empty for combinations the service rejects.
    public func searchResultKeys(term: String, media: String, entity: String? = nil, night: Int) -> [String] {
        guard let entities = Self.searchEntities(media: media, entity: entity) else { return [] }
        return searchHits(entities: entities, words: Self.searchWords(term), night: night).map { key(of: $0) }
    }

    /// Ground truth for a crawl that only sees these Search results: what is
    /// returned for any of `terms` on `night` against `night − 1` (an item
    /// that starts or stops matching counts as added or removed).
    public func searchDiff(terms: [String], media: String, entity: String? = nil, night: Int) -> WorldDiff {
        guard night >= 1, let entities = Self.searchEntities(media: media, entity: entity) else { return WorldDiff() }
        var before: [String: SearchHit] = [:], after: [String: SearchHit] = [:]
        for term in terms {
            let words = Self.searchWords(term)
            for hit in searchHits(entities: entities, words: words, night: night) { after[key(of: hit)] = hit }
            if night > 1 {
                for hit in searchHits(entities: entities, words: words, night: night - 1) { before[key(of: hit)] = hit }
            }
        }
        var diff = WorldDiff()
        for (key, hit) in after {
            if before[key] == nil {
                diff.added.insert(key)
            } else if hit.entity != "artist", itemCatalog(hit.entity)?.changes(hit.index, on: night) == true {
                diff.changed.insert(key)
            }
        }
        for key in before.keys where after[key] == nil { diff.removed.insert(key) }
        return diff
    }
}
