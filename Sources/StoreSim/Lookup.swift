extension World {
    /// The catalog entity an id belongs to, found by its id range (the
    /// catalogs' ranges are disjoint), with the index in that catalog.
    func resolve(id key: String, night: Int) -> SearchHit? {
        for entity in Self.catalogEntities {
            guard let catalog = itemCatalog(entity), let i = catalog.index(forKey: key) else { continue }
            return catalog.isAlive(i, night: night) ? SearchHit(entity: entity, index: i) : nil
        }
        if let id = Int(key), let a = music.artistIndex(forID: id), music.timeline.initialCount > 0 {
            return SearchHit(entity: "artist", index: a)
        }
        return nil
    }

    /// Lookup's rows for one id (US storefront): the item, then with
    /// `childEntity` up to `limit` children (an album's songs in track order,
    /// a podcast's newest episodes, an artist's albums or songs). An episode
    /// id gives its episode row. Unknown or removed ids give nothing.
    func lookupRows(key: String, childEntity: String?, limit: Int, night: Int) -> [JSONObject] {
        if let (i, n) = podcasts.episode(forKey: key) {
            guard let numbers = podcasts.episodeNumbers(i, night: night), numbers.contains(n) else { return [] }
            return [podcasts.episodeRow(i, number: n, show: podcasts.show(i, night: night))]
        }
        guard let hit = resolve(id: key, night: night) else { return [] }
        var rows = [row(of: hit, night: night)]
        switch (hit.entity, childEntity) {
        case ("podcast", "podcastepisode"):
            if let numbers = podcasts.episodeNumbers(hit.index, night: night) {
                let show = podcasts.show(hit.index, night: night)
                for n in numbers.reversed().prefix(limit) {
                    rows.append(podcasts.episodeRow(hit.index, number: n, show: show))
                }
            }
        case ("album", "song"), ("album", "musictrack"):
            for s in music.songs(ofAlbum: hit.index).prefix(limit) { rows.append(music.songRow(s, night: night)) }
        case ("artist", "album"):
            for j in artistAlbums(hit.index, night: night).prefix(limit) { rows.append(music.albumRow(j, night: night)) }
        case ("artist", "song"), ("artist", "musictrack"):
            let songs = artistAlbums(hit.index, night: night).lazy.flatMap { music.songs(ofAlbum: $0) }
            for s in songs.prefix(limit) { rows.append(music.songRow(s, night: night)) }
        default:
            break
        }
        return rows
    }

    /// Albums of artist `a` alive on `night`, in index order.
    func artistAlbums(_ a: Int, night: Int) -> [Int] {
        aliveIndices(catalog: AlbumCatalog(music: music), night: night).filter { music.album($0).artist == a }
    }
}
