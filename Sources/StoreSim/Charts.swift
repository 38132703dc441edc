/// A chart: which catalog it ranks and which of its items qualify.
struct ChartSpec: Sendable, Equatable {
    enum Filter: Sendable, Equatable {
        case all, free, paid
        /// A chart the simulator knows but has nothing for (video podcasts,
        /// music videos, rentals): always empty, as a real empty chart is.
        case nothing
    }

    /// The legacy path name (`toppodcasts`).
    var name: String
    /// The ranked entity (`podcast`, `song`, …).
    var entity: String
    var filter: Filter
    /// The genre tree the chart's `genre=` ids come from, nil when none.
    var root: String?
    /// `iTunes Store: Top Podcasts`.
    var title: String

    /// Every legacy chart, by path name.
    static let legacy: [ChartSpec] = [
        ChartSpec(name: "toppodcasts", entity: "podcast", filter: .all, root: "26", title: "Top Podcasts"),
        ChartSpec(name: "topaudiopodcasts", entity: "podcast", filter: .all, root: "26", title: "Top Audio Podcasts"),
        ChartSpec(name: "topvideopodcasts", entity: "podcast", filter: .nothing, root: "26", title: "Top Video Podcasts"),
        ChartSpec(name: "toppodcastepisodes", entity: "episode", filter: .nothing, root: "26", title: "Top Podcast Episodes"),
        ChartSpec(name: "topaudiopodcastepisodes", entity: "episode", filter: .nothing, root: "26",
                  title: "Top Audio Podcast Episodes"),
        ChartSpec(name: "topvideopodcastepisodes", entity: "episode", filter: .nothing, root: "26",
                  title: "Top Video Podcast Episodes"),
        ChartSpec(name: "topsongs", entity: "song", filter: .all, root: "34", title: "Top Songs"),
        ChartSpec(name: "topalbums", entity: "album", filter: .all, root: "34", title: "Top Albums"),
        ChartSpec(name: "topmusicvideos", entity: "song", filter: .nothing, root: "34", title: "Top Music Videos"),
        ChartSpec(name: "topfreeapplications", entity: "app", filter: .free, root: "36", title: "Top Free Applications"),
        ChartSpec(name: "toppaidapplications", entity: "app", filter: .paid, root: "36", title: "Top Paid Applications"),
        ChartSpec(name: "topgrossingapplications", entity: "app", filter: .all, root: "36",
                  title: "Top Grossing Applications"),
        ChartSpec(name: "topfreeipadapplications", entity: "app", filter: .free, root: "36",
                  title: "Top Free iPad Applications"),
        ChartSpec(name: "toppaidipadapplications", entity: "app", filter: .paid, root: "36",
                  title: "Top Paid iPad Applications"),
        ChartSpec(name: "topgrossingipadapplications", entity: "app", filter: .all, root: "36",
                  title: "Top Grossing iPad Applications"),
        ChartSpec(name: "topmovies", entity: "movie", filter: .all, root: "33", title: "Top Movies"),
        ChartSpec(name: "topvideorentals", entity: "movie", filter: .nothing, root: "33", title: "Top Video Rentals"),
        ChartSpec(name: "topaudiobooks", entity: "audiobook", filter: .all, root: nil, title: "Top Audiobooks"),
        ChartSpec(name: "topfreeebooks", entity: "ebook", filter: .free, root: "38", title: "Top Free Books"),
        ChartSpec(name: "toppaidebooks", entity: "ebook", filter: .paid, root: "38", title: "Top Paid Books"),
    ]

    static func legacy(named name: String) -> ChartSpec? {
        let lower = name.lowercased()
        return legacy.first { $0.name == lower }
    }

    /// The charts `World.diff(entity: "chart-entry")` covers: every legacy
    /// chart that can have entries, without a genre, 100 entries.
    static var truthCharts: [ChartSpec] { legacy.filter { $0.filter != .nothing } }

    /// Marketing-tools RSS v2: `/api/v2/{cc}/{media}/{chart}/{n}/{type}.json`
    /// → (the legacy chart it ranks like, the feed title, `kind`).
    static func v2(media: String, chart: String, type: String) -> (spec: ChartSpec, title: String, kind: String)? {
        let table: [String: (String, String, String)] = [
            "music/most-played/albums": ("topalbums", "Top Albums", "albums"),
            "music/most-played/songs": ("topsongs", "Top Songs", "songs"),
            "podcasts/top/podcasts": ("toppodcasts", "Top Shows", "podcasts"),
            "apps/top-free/apps": ("topfreeapplications", "Top Free Apps", "apps"),
            "apps/top-paid/apps": ("toppaidapplications", "Top Paid Apps", "apps"),
            "books/top-free/books": ("topfreeebooks", "Top Free Books", "books"),
            "books/top-paid/books": ("toppaidebooks", "Top Paid Books", "books"),
            "audio-books/top/audio-books": ("topaudiobooks", "Top Audiobooks", "audio-books"),
            "movies/top-movies/movies": ("topmovies", "Top Movies", "movies"),
        ]
        guard let (legacyName, title, kind) = table["\(media)/\(chart)/\(type)"],
              let spec = legacy(named: legacyName) else { return nil }
        return (spec, title, kind)
    }

    /// Legacy charts serve at most this many entries.
    static let maxEntries = 100
}

/// What a chart entry says about its item (the fields both chart formats draw from).
struct ChartItem {
    var id: Int
    var name: FaultyText
    var plainName: String
    var artist: String
    var artistID: Int?
    var artistURL: String?
    var summary: String?
    var priceCents: Int
    var images: [(url: String, height: Int)]
    var contentType: (term: String, label: String)
    var subType: (term: String, label: String)?
    var genre: (id: String, name: String)
    var genreScheme: String
    var release: SimDate
    var link: String
    var rights: String?
    var itemCount: Int?
    var explicit: Bool
    var artwork100: String
    var v2Genres: [(id: String, name: String)]
    var v2URL: String
}

extension World {
    /// Items of `spec` ranked on `night` (best first), filtered by genre and storefront.
    /// Ranks move each night when the churn changes records, so chart moves are part of churn.
    func chartIndices(_ spec: ChartSpec, genre: String?, country: Storefront, night: Int) -> [Int] {
        guard spec.filter != .nothing, let catalog = itemCatalog(spec.entity) else { return [] }
        let filterKey = "\(spec.entity)|\(spec.filter)|\(genre ?? "")|\(country.code)"
        return cache.search(terms: "chart|" + filterKey, night: night) {
            if let genre, genre != spec.root {
                // A genre outside the chart's tree has no entries.
                guard let root = spec.root, genres.nodes[genre]?.root == root || (root == "38" && genre != "") else {
                    return []
                }
            }
            let moveNight = config.churn.changed > 0 ? night : 0
            var scored: [(score: Double, index: Int)] = []
            for i in aliveIndices(catalog: catalog, night: night) {
                if let genre, genre != spec.root, !catalog.genreIDs(i, night: night).contains(genre) { continue }
                if !country.sells(tag: catalog.tag, index: i, seed: config.seed) { continue }
                switch spec.filter {
                case .free: if catalog.priceCents(i, night: night) != 0 { continue }
                case .paid: if catalog.priceCents(i, night: night) <= 0 { continue }
                case .all, .nothing: break
                }
                // A lasting popularity (1–4) times a nightly mood (0.5–1.5): the top of a
                // chart is fairly stable, yet ranks move every night.
                let popularity = 1 + 3 * StableRandom.unitInterval(StableRandom.hash(config.seed, 0x504F_50, catalog.tag, UInt64(i)))
                let jitter = 0.5 + StableRandom.unitInterval(
                    StableRandom.hash(config.seed, 0x4A49_54, catalog.tag, UInt64(i), UInt64(moveNight)))
                scored.append((popularity * jitter, i))
            }
            scored.sort { $0.score != $1.score ? $0.score > $1.score : $0.index < $1.index }
            return scored.map(\.index)
        }
    }

    /// The item keys of a legacy chart on `night`, best first (at most `limit`, capped at 100).
    /// This is the chart-entry truth: entry `chart|genre|rank` holds the item key at `rank − 1`.
    public func chartKeys(chart: String, genre: String? = nil, country: String = "us", limit: Int = 100,
                          night: Int) -> [String] {
        guard let spec = ChartSpec.legacy(named: chart), let storefront = Storefront.named(country),
              let catalog = itemCatalog(spec.entity), night >= 1 else { return [] }
        return chartIndices(spec, genre: genre, country: storefront, night: night)
            .prefix(min(max(limit, 0), ChartSpec.maxEntries)).map { catalog.key($0) }
    }

    /// Chart-entry truth for one chart: keys `chart|genre|rank`; an entry is
    /// changed when another item holds its rank.
    public func chartDiff(chart: String, genre: String? = nil, limit: Int = 100, night: Int) -> WorldDiff {
        guard night >= 1 else { return WorldDiff() }
        let after = chartKeys(chart: chart, genre: genre, limit: limit, night: night)
        let before = night > 1 ? chartKeys(chart: chart, genre: genre, limit: limit, night: night - 1) : []
        var diff = WorldDiff()
        let prefix = "\(chart.lowercased())|\(genre ?? "")|"
        for rank in 0..<max(after.count, before.count) {
            let key = prefix + String(rank + 1)
            switch (rank < before.count ? before[rank] : nil, rank < after.count ? after[rank] : nil) {
            case (nil, .some): diff.added.insert(key)
            case (.some, nil): diff.removed.insert(key)
            case (.some(let old), .some(let new)) where old != new: diff.changed.insert(key)
            default: break
            }
        }
        return diff
    }

    func aliveIndices(catalog: any ItemCatalog, night: Int) -> [Int] {
        cache.alive(entity: "catalog#\(catalog.tag)", night: night) { catalog.aliveIndices(night: night) }
    }

    /// The chart view of item `i` of `entity` on `night`.
    func chartItem(entity: String, _ i: Int, night: Int) -> ChartItem? {
        switch entity {
        case "podcast":
            let show = podcasts.show(i, night: night)
            let latest = podcasts.latestEpisode(i, fixed: show.fixed, history: podcasts.timeline.history(i, night: night))
            let id = podcasts.trackID(i)
            let link = "https://podcasts.apple.com/us/podcast/\(PodcastCatalog.slug(show.title))/id\(id)?uo=2"
            return ChartItem(
                id: id, name: show.shownTitle, plainName: show.title, artist: show.artistName, artistID: show.artistID,
                artistURL: show.artistID.map { "https://podcasts.apple.com/us/artist/\(PodcastCatalog.slug(show.artistName))/\($0)?uo=2" },
                summary: "\(show.title): \(show.genre.name.lowercased()) from \(show.artistName), every week.",
                priceCents: 0, images: [55, 60, 170].map { (show.artwork.url(size: $0), $0) },
                contentType: ("Podcast", "Podcast"), subType: nil, genre: (show.genre.id, show.genre.name),
                genreScheme: "https://podcasts.apple.com/us/genre/podcasts-\(PodcastCatalog.slug(show.genre.name))/id\(show.genre.id)?uo=2",
                release: latest.release, link: link,
                rights: StableRandom.chance(0.86, StableRandom.hash(config.seed, 0x5249_4748, UInt64(i))) ? "© \(show.artistName)" : nil,
                itemCount: nil, explicit: show.fixed.explicitness == "explicit", artwork100: show.artwork.url(size: 100),
                v2Genres: [(show.genre.id, show.genre.name), ("26", "Podcasts")],
                v2URL: "https://podcasts.apple.com/us/podcast/\(PodcastCatalog.slug(show.title))/id\(id)")
        case "album", "song":
            let album = entity == "album" ? i : i / MusicCatalog.maxTracks
            let s = music.albumState(album, night: night)
            let artistName = music.artistName(s.fixed.artist)
            let artistID = music.artistID(s.fixed.artist)
            var name = FaultyText(s.title), plain = s.title, id = music.albumID(album), price = s.priceCents
            var link = "https://music.apple.com/us/album/\(PodcastCatalog.slug(s.title))/\(id)?uo=2"
            if entity == "song", let (_, n) = music.split(i) {
                let t = music.track(album: album, number: n, albumExplicit: s.fixed.explicit)
                let marks = music.faults.marks(tag: MusicCatalog.songTag, index: i)
                name = music.faults.title(t.title, marks: marks, tag: MusicCatalog.songTag, index: i)
                plain = t.title
                id = music.songID(i)
                price = max(t.priceCents, 0)
                link = "https://music.apple.com/us/album/\(PodcastCatalog.slug(t.title))/\(music.albumID(album))?i=\(id)&uo=2"
            } else {
                let marks = music.faults.marks(tag: MusicCatalog.albumTag, index: album)
                name = music.faults.title(s.title, marks: marks, tag: MusicCatalog.albumTag, index: album)
            }
            let genreScheme = "https://music.apple.com/us/genre/music-\(PodcastCatalog.slug(s.genre.name))/id\(s.genre.id)?uo=2"
            return ChartItem(
                id: id, name: name, plainName: plain, artist: artistName, artistID: artistID,
                artistURL: "https://music.apple.com/us/artist/\(PodcastCatalog.slug(artistName))/\(artistID)?uo=2",
                summary: nil, priceCents: price, images: [55, 60, 170].map { (s.artwork.url($0), $0) },
                contentType: ("Music", "Music"), subType: entity == "album" ? ("Album", "Album") : ("Track", "Track"),
                genre: (s.genre.id, s.genre.name), genreScheme: genreScheme, release: s.fixed.release, link: link,
                rights: "℗ \(s.fixed.release.civil.year) \(s.fixed.label)",
                itemCount: entity == "album" ? s.fixed.trackCount : nil, explicit: s.fixed.explicit,
                artwork100: s.artwork.url(100), v2Genres: [(s.genre.id, s.genre.name), ("34", "Music")],
                v2URL: link.replacingSuffix("?uo=2", "").replacingSuffix("&uo=2", ""))
        default:
            guard let catalog = itemCatalog(entity), catalog.isAlive(i, night: night) else { return nil }
            return genericChartItem(entity: entity, catalog: catalog, i, night: night)
        }
    }

    /// Chart items of the catalogs whose rows already hold everything an entry needs.
    private func genericChartItem(entity: String, catalog: any ItemCatalog, _ i: Int, night: Int) -> ChartItem? {
        let row = catalog.row(i, night: night)
        func text(_ key: String) -> String? {
            switch row[key] {
            case .string(let s): s
            case .rawString(let bytes): String(decoding: bytes, as: UTF8.self)
            default: nil
            }
        }
        func faulty(_ key: String) -> FaultyText {
            switch row[key] {
            case .string(let s): FaultyText(s)
            case .rawString(let bytes): FaultyText(bytes: bytes)
            default: FaultyText("")
            }
        }
        func int(_ key: String) -> Int? { if case .int(let n)? = row[key] { n } else { nil } }
        let isTrack = row["trackId"] != nil && entity != "audiobook"
        guard let id = int(isTrack ? "trackId" : "collectionId") else { return nil }
        let nameKey = isTrack ? "trackName" : "collectionName"
        let artist = text("artistName") ?? ""
        let artwork100 = text("artworkUrl100") ?? ""
        let images = [55, 60, 170].map { (artwork100.replacingSuffix("/100x100bb.jpg", "/\($0)x\($0)bb.png"), $0) }
        let genres = catalog.genreIDs(i, night: night)
        let genreName = text("primaryGenreName") ?? (row["genres"].flatMap { value -> String? in
            if case .array(let items) = value, case .string(let first)? = items.first { return first }
            return nil
        } ?? "")
        let genreID = genres.first ?? "50000024"
        let link = (text("trackViewUrl") ?? text("collectionViewUrl") ?? "").replacingSuffix("?uo=4", "?uo=2")
        let contentType: (String, String)
        let kindPath: String
        switch entity {
        case "app": contentType = ("Application", "Application"); kindPath = "app"
        case "movie": contentType = ("Movie", "Movie"); kindPath = "movie"
        case "audiobook": contentType = ("Audiobook", "Audiobook"); kindPath = "audiobook"
        default: contentType = ("Book", "Book"); kindPath = "book"
        }
        let releaseText = text("releaseDate") ?? ""
        let release = Self.parseISODate(releaseText) ?? SimDate(day: 0)
        let summary = (text("longDescription") ?? text("description")).map { String($0.prefix(300)) }
        let rootName: String
        switch genres.last {
        case "36": rootName = "App Store"
        case "33": rootName = "Movies"
        case "38": rootName = "Books"
        default: rootName = "Audiobooks"
        }
        return ChartItem(
            id: id, name: faulty(nameKey), plainName: text(nameKey) ?? "", artist: artist, artistID: int("artistId"),
            artistURL: text("artistViewUrl")?.replacingSuffix("?uo=4", "?uo=2"), summary: summary,
            priceCents: catalog.priceCents(i, night: night), images: images, contentType: contentType, subType: nil,
            genre: (genreID, genreName),
            genreScheme: "https://itunes.apple.com/us/genre/\(kindPath)-\(PodcastCatalog.slug(genreName))/id\(genreID)?uo=2",
            release: release, link: link, rights: "© \(release.civil.year) \(artist)", itemCount: nil,
            explicit: catalog.isExplicit(i, night: night), artwork100: artwork100,
            v2Genres: [(genreID, genreName)] + (genres.count > 1 ? [(genres[genres.count - 1], rootName)] : []),
            v2URL: link.replacingSuffix("?uo=2", ""))
    }

    /// `2015-12-18T08:00:00Z` → a SimDate.
    static func parseISODate(_ text: String) -> SimDate? {
        let chars = Array(text.utf8)
        guard chars.count >= 19 else { return nil }
        func number(_ range: Range<Int>) -> Int? { Int(String(decoding: chars[range], as: UTF8.self)) }
        guard let y = number(0..<4), let m = number(5..<7), let d = number(8..<10), let h = number(11..<13),
              let mi = number(14..<16), let s = number(17..<19) else { return nil }
        return SimDate(day: SimDate.days(year: y, month: m, day: d), seconds: h * 3600 + mi * 60 + s)
    }
}

extension String {
    func replacingSuffix(_ suffix: String, _ replacement: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) + replacement : self
    }
}

/// The two chart formats, from ranked items.
enum ChartWriter {
    /// `{label}` and `{label, attributes}`.
    static func label(_ text: String, _ attributes: [(String, String)] = []) -> JSONOut {
        var object = JSONObject()
        object.add("label", text)
        if !attributes.isEmpty { object.add("attributes", attributesObject(attributes)) }
        return .object(object)
    }

    static func label(_ text: FaultyText) -> JSONOut {
        var object = JSONObject()
        object.add("label", text.json)
        return .object(object)
    }

    static func attributes(_ pairs: [(String, String)]) -> JSONOut {
        var object = JSONObject()
        object.add("attributes", attributesObject(pairs))
        return .object(object)
    }

    static func attributesObject(_ pairs: [(String, String)]) -> JSONOut {
        var attributes = JSONObject()
        for (key, value) in pairs { attributes.add(key, value) }
        return .object(attributes)
    }

    /// `0` for free items, `9.99000` otherwise, as the real feeds write it.
    static func amount(_ item: ChartItem) -> String {
        item.priceCents == 0 ? "0" : ITunesText.priceText(item.priceCents) + "000"
    }

    static func priceLabel(_ item: ChartItem) -> String {
        item.priceCents == 0 ? "Get" : "$" + ITunesText.priceText(item.priceCents)
    }

    /// The legacy feed's self URL on the simulator's fixed origin.
    static func legacyURL(country: String, chart: String, limit: Int, genre: String?, format: String) -> String {
        "\(GenreTrees.origin)/\(country)/rss/\(chart)/limit=\(limit)" + (genre.map { "/genre=\($0)" } ?? "") + "/\(format)"
    }

    static func title(_ spec: ChartSpec, genreName: String?) -> String {
        "iTunes Store: \(spec.title)" + (genreName.map { " in \($0)" } ?? "")
    }

    /// The legacy JSON feed: every value wrapped in `{label, attributes}`;
    /// `entry` an object for one entry and absent for none.
    static func legacyJSON(spec: ChartSpec, items: [ChartItem], country: String, limit: Int, genre: String?,
                           genreName: String?, updated: SimDate?) -> [UInt8] {
        let selfURL = legacyURL(country: country, chart: spec.name, limit: limit, genre: genre, format: "json")
        var feed = JSONObject()
        var author = JSONObject()
        author.add("name", label("iTunes Store"))
        author.add("uri", label("http://www.apple.com/itunes/"))
        feed.add("author", .object(author))
        let entries = items.map(legacyEntry)
        if entries.count == 1 {
            feed.add("entry", entries[0])
        } else if !entries.isEmpty {
            feed.add("entry", .array(entries))
        }
        if let updated { feed.add("updated", label(updated.pacificText)) }
        feed.add("rights", label("Copyright 2008 Apple Inc."))
        feed.add("title", label(title(spec, genreName: genreName)))
        feed.add("icon", label("http://itunes.apple.com/favicon.ico"))
        feed.add("link", .array([
            attributes([("rel", "alternate"), ("type", "text/html"),
                        ("href", "https://itunes.apple.com/WebObjects/MZStore.woa/wa/viewTop?cc=\(country)&id=\(genre ?? spec.root ?? "0")&popId=3")]),
            attributes([("rel", "self"), ("href", selfURL)]),
        ]))
        feed.add("id", label(selfURL))
        var document = JSONObject()
        document.add("feed", .object(feed))
        return JSONWriter.bytes(.object(document), layout: .compact)
    }

    static func legacyEntry(_ item: ChartItem) -> JSONOut {
        var entry = JSONObject()
        entry.add("im:name", label(item.name))
        entry.add("im:image", .array(item.images.map { label($0.url, [("height", String($0.height))]) }))
        if let summary = item.summary { entry.add("summary", label(summary)) }
        entry.add("im:price", label(priceLabel(item), [("amount", amount(item)),
                                                       ("currency", "USD")]))
        var contentType = JSONObject()
        if let sub = item.subType { contentType.add("im:contentType", attributes([("term", sub.term), ("label", sub.label)])) }
        contentType.add("attributes", attributesObject([("term", item.contentType.term), ("label", item.contentType.label)]))
        entry.add("im:contentType", .object(contentType))
        if let rights = item.rights { entry.add("rights", label(rights)) }
        entry.add("title", label("\(item.name.text) - \(item.artist)"))
        entry.add("link", attributes([("rel", "alternate"), ("type", "text/html"), ("href", item.link)]))
        entry.add("id", label(item.link, [("im:id", String(item.id))]))
        entry.add("im:artist", label(item.artist, item.artistURL.map { [("href", $0)] } ?? []))
        entry.add("category", attributes([("im:id", item.genre.id), ("term", item.genre.name),
                                          ("scheme", item.genreScheme), ("label", item.genre.name)]))
        entry.add("im:releaseDate", label(SimDate(day: item.release.day).pacificText, [("label", item.release.longDate)]))
        if let count = item.itemCount { entry.add("im:itemCount", label(String(count))) }
        return .object(entry)
    }

    /// The legacy Atom feed with the `im:` namespace.
    static func legacyXML(spec: ChartSpec, items: [ChartItem], country: String, limit: Int, genre: String?,
                          genreName: String?, updated: SimDate?) -> [UInt8] {
        let selfURL = legacyURL(country: country, chart: spec.name, limit: limit, genre: genre, format: "xml")
        let stamp = updated?.pacificText ?? ""
        var xml = XMLOut()
        xml.raw("<?xml version=\"1.0\" encoding=\"utf-8\"?>\n\n\t")
        xml.raw("<feed xmlns:im=\"http://itunes.apple.com/rss\" xmlns=\"http://www.w3.org/2005/Atom\" xml:lang=\"en\">\n\t\t")
        xml.element("id", text: selfURL)
        xml.element("title", text: title(spec, genreName: genreName))
        xml.element("updated", text: stamp)
        xml.element("link", [("rel", "alternate"), ("type", "text/html"),
                             ("href", "https://itunes.apple.com/WebObjects/MZStore.woa/wa/viewTop?cc=\(country)&id=\(genre ?? spec.root ?? "0")&popId=11")])
        xml.element("link", [("rel", "self"), ("href", selfURL)])
        xml.element("icon", text: "http://itunes.apple.com/favicon.ico")
        xml.raw("<author><name>iTunes Store</name><uri>http://www.apple.com/itunes/</uri></author>")
        xml.element("rights", text: "Copyright 2008 Apple Inc.")
        xml.raw("\n\t\t\n")
        for item in items {
            xml.raw("\t\t\t<entry>\n\t\t\t\t")
            xml.element("updated", text: stamp)
            xml.raw("\n\t\t\t\t\t")
            xml.element("id", [("im:id", String(item.id))], text: item.link)
            xml.raw("\n\t\t\t\t\t")
            xml.open("title")
            xml.text(item.name)
            xml.text(" - \(item.artist)")
            xml.close("title")
            xml.raw("\n\t\t\t\t\t")
            xml.element("im:name", faulty: item.name)
            xml.raw("\n\t\t\t\t\t")
            xml.element("link", [("rel", "alternate"), ("type", "text/html"), ("href", item.link)])
            xml.raw("\n\t\t\t\t\t")
            if let sub = item.subType {
                xml.open("im:contentType", [("term", item.contentType.term), ("label", item.contentType.label)])
                xml.element("im:contentType", [("term", sub.term), ("label", sub.label)])
                xml.close("im:contentType")
            } else {
                xml.element("im:contentType", [("term", item.contentType.term), ("label", item.contentType.label)])
            }
            xml.raw("\n\t\t\t\t\t")
            xml.element("category", [("im:id", item.genre.id), ("term", item.genre.name), ("scheme", item.genreScheme),
                                     ("label", item.genre.name)])
            xml.raw("\n\t\t\t\t\t")
            xml.element("im:artist", item.artistURL.map { [("href", $0)] } ?? [], text: item.artist)
            xml.raw("\n\t\t\t\t\t")
            xml.element("im:price", [("amount", amount(item)), ("currency", "USD")],
                        text: priceLabel(item))
            for image in item.images {
                xml.raw("\n\t\t\t\t\t")
                xml.element("im:image", [("height", String(image.height))], text: image.url)
            }
            if let rights = item.rights {
                xml.raw("\n\t\t\t\t\t")
                xml.element("rights", text: rights)
            }
            xml.raw("\n\t\t\t\t\t")
            xml.element("im:releaseDate", [("label", item.release.longDate)], text: SimDate(day: item.release.day).pacificText)
            if let count = item.itemCount {
                xml.raw("\n\t\t\t\t\t")
                xml.element("im:itemCount", text: String(count))
            }
            if let summary = item.summary {
                xml.raw("\n\t\t\t\t\t")
                xml.element("summary", text: summary)
            }
            xml.raw("\n\t\t\t\t\t")
            xml.element("content", [("type", "html")], text:
                "<table border=\"0\" width=\"100%\"><tr><td><b><a href=\"\(item.link)\">\(item.plainName)</a></b><br/>"
                    + "\(item.artist)<br/><b>Genre:</b> \(item.genre.name)<br/><b>Price:</b> \(priceLabel(item))"
                    + "<br/><b>Release Date:</b> \(item.release.longDate)</td></tr></table>\n")
            xml.raw("\n\t\t\t</entry>\n\t\t\n")
        }
        xml.raw("\t</feed>\n")
        return xml.bytes
    }

    /// The marketing-tools RSS v2 JSON (ids strings, `updated` RFC 2822, `kind` plural).
    static func v2(title: String, kind: String, items: [ChartItem], selfURL: String, country: String,
                   updated: SimDate?) -> [UInt8] {
        var feed = JSONObject()
        feed.add("title", title)
        feed.add("id", selfURL)
        var author = JSONObject()
        author.add("name", "Apple")
        author.add("url", "https://www.apple.com/")
        feed.add("author", .object(author))
        var link = JSONObject()
        link.add("self", selfURL)
        feed.add("links", .array([.object(link)]))
        let year = updated?.civil.year ?? 2024
        feed.add("copyright", "Copyright © \(year) Apple Inc. All rights reserved.")
        feed.add("country", country)
        feed.add("icon", "https://www.apple.com/favicon.ico")
        if let updated { feed.add("updated", updated.rfc2822) }
        var results: [JSONOut] = []
        for item in items {
            var row = JSONObject()
            row.add("artistName", item.artist)
            row.add("id", String(item.id))
            row.add("name", item.name.json)
            row.add("releaseDate", item.release.dateOnly)
            row.add("kind", kind)
            if let artistID = item.artistID, let url = item.artistURL {
                row.add("artistId", String(artistID))
                row.add("artistUrl", url.replacingSuffix("?uo=2", ""))
            }
            // Misspelled as the real feed spells it.
            if item.explicit { row.add("contentAdvisoryRating", "Explict") }
            row.add("artworkUrl100", item.artwork100)
            row.add("genres", .array(item.v2Genres.map { genre in
                var object = JSONObject()
                object.add("genreId", genre.id)
                object.add("name", genre.name)
                object.add("url", "https://itunes.apple.com/\(country)/genre/id\(genre.id)")
                return .object(object)
            }))
            row.add("url", item.v2URL)
            results.append(.object(row))
        }
        feed.add("results", .array(results))
        var document = JSONObject()
        document.add("feed", .object(feed))
        return JSONWriter.bytes(.object(document), layout: .pretty)
    }
}

extension World {
    /// The first `limit` entries of a chart on `night`, as chart items.
    func chartItems(_ spec: ChartSpec, genre: String?, country: Storefront, allowExplicit: Bool, limit: Int,
                    night: Int) -> [ChartItem] {
        var items: [ChartItem] = []
        for i in chartIndices(spec, genre: genre, country: country, night: night) {
            guard items.count < limit else { break }
            guard let item = chartItem(entity: spec.entity, i, night: night) else { continue }
            if !allowExplicit, item.explicit { continue }
            items.append(item)
        }
        return items
    }
}
