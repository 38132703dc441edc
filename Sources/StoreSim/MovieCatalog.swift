/// Feature movies (key: trackId), each part of a four-movie collection, as
/// in the real rows. Mutable groups: the price (trackPrice, trackHdPrice),
/// the artwork and the description (long and short). Collection fields are
/// fixed, so a movie's change never touches its siblings' rows.
struct MovieCatalog: TimelineCatalog, ScrambledIDCatalog {
    static let tag: UInt64 = 0x4D4F_5649_4553  // "MOVIES"
    var tag: UInt64 { Self.tag }

    enum Group: Int, CaseIterable { case price = 0, artwork, description }
    static let groupWeights: [Double] = [0.5, 0.2, 0.3]
    static let moviesPerCollection = 4

    private enum Purpose: UInt64 { case fixed = 400, price, artwork, description, collection }

    let seed: UInt64
    let timeline: Timeline
    let ids: IDScrambler
    let collectionIDs: IDScrambler
    let studioIDs: IDScrambler
    let faults: ContentFaults

    init(seed: UInt64, count: Int, churn: Churn, faults: ContentFaults) {
        self.seed = seed
        self.faults = faults
        timeline = Timeline(seed: seed, tag: Self.tag, initialCount: count, churn: churn, groupWeights: Self.groupWeights)
        ids = IDScrambler(offset: 2_520_000_000, bits: 26, key: StableRandom.hash(seed, Self.tag, 1))
        collectionIDs = IDScrambler(offset: 2_590_000_000, bits: 24, key: StableRandom.hash(seed, Self.tag, 2))
        studioIDs = IDScrambler(offset: 2_610_000_000, bits: 8, key: StableRandom.hash(seed, Self.tag, 3))
    }

    struct Fixed {
        var title: String
        var director: String
        var genre: (id: String, name: String)
        var rating: String
        var millis: Int
        var release: SimDate
        var extras: Bool
        var preview: String
        /// 0 = always a short description, 1 = none, 2 = `null` (old rows).
        var shortStyle: Int
    }

    func fixed(_ i: Int) -> Fixed {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.fixed.rawValue))
        let title = ITunesText.fill(dice.pick(MediaVocabulary.movieForms), dice.pick(MediaVocabulary.movieWords))
        let director = dice.pick(MediaVocabulary.directors)
        let (genreID, genreName, _) = dice.pick(MediaVocabulary.movieGenres)
        let rating = dice.pick(MediaVocabulary.ratings)
        let millis = dice.int(in: 4_800_000...10_800_000)
        let born = timeline.birthNight(i)
        let release = ITunesText.releaseDate(born: born, dice: &dice)
        let hex = dice.hex(32)
        let preview = "https://video-ssl.itunes.apple.com/itunes-assets/Video\(dice.int(in: 60...130))/v4/"
            + "\(hex.prefix(2))/\(hex.dropFirst(2).prefix(2))/\(hex.dropFirst(4).prefix(2))/\(hex)/mzvf_\(dice.next() >> 2).640x354.h264lc.U.p.m4v"
        let roll = dice.below(10)
        // Only rows as old as night 1 carry nulls, as the README says of old iTunes rows.
        let shortStyle = roll < 7 ? 0 : (roll < 9 || born > 1 ? 1 : 2)
        return Fixed(title: title, director: director, genre: (genreID, genreName), rating: rating, millis: millis,
                     release: release, extras: dice.chance(0.3), preview: preview, shortStyle: shortStyle)
    }

    func collection(_ i: Int) -> (id: Int, name: String, priceCents: Int, studio: Int, studioName: String) {
        let c = i / Self.moviesPerCollection
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(c), Purpose.collection.rawValue))
        let name = "\(dice.pick(MediaVocabulary.movieWords)) Saga \(Self.moviesPerCollection)-Movie Collection"
        let studio = dice.below(MediaVocabulary.studios.count)
        return (collectionIDs.id(for: c), name, dice.int(in: 19...69) * 100 + 99, studio, MediaVocabulary.studios[studio])
    }

    func priceCents(_ i: Int, version: Int) -> Int {
        ITunesText.draw(seed, Self.tag, i, Purpose.price.rawValue, version: version) { dice in
            dice.int(in: 3...19) * 100 + 99
        }
    }

    func artwork(_ i: Int, version: Int) -> ThumbArtwork {
        ITunesText.draw(seed, Self.tag, i, Purpose.artwork.rawValue, version: version) { dice in
            ThumbArtwork(folder: "Video", dice: &dice, file: "pr_source.lsr")
        }
    }

    func description(_ i: Int, version: Int) -> String {
        ITunesText.draw(seed, Self.tag, i, Purpose.description.rawValue, version: version) { dice in
            (0..<dice.int(in: 2...4)).map { _ in dice.pick(MediaVocabulary.descriptionParts) }.joined()
                + " Directed by \(dice.pick(MediaVocabulary.directors))."
        }
    }

    func row(_ i: Int, night: Int) -> JSONObject {
        let f = fixed(i)
        let history = timeline.history(i, night: night)
        let price = priceCents(i, version: history.versions[Group.price.rawValue])
        let art = artwork(i, version: history.versions[Group.artwork.rawValue])
        let marks = faults.marks(tag: Self.tag, index: i)
        let long = faults.huge(description(i, version: history.versions[Group.description.rawValue]), marks: marks)
        let shown = faults.title(f.title, marks: marks, tag: Self.tag, index: i).json
        let c = collection(i)
        let id = ids.id(for: i)
        let url = "https://itunes.apple.com/us/movie/\(PodcastCatalog.slug(f.title))/id\(id)?uo=4"
        var row = JSONObject()
        row.add("wrapperType", "track")
        row.add("kind", "feature-movie")
        row.add("collectionId", c.id)
        row.add("trackId", id)
        row.add("artistName", f.director)
        row.add("collectionName", c.name)
        row.add("trackName", shown)
        row.add("collectionCensoredName", c.name)
        row.add("trackCensoredName", shown)
        row.add("collectionArtistId", studioIDs.id(for: c.studio))
        row.add("collectionArtistViewUrl",
                "https://itunes.apple.com/us/artist/\(PodcastCatalog.slug(c.studioName))/\(studioIDs.id(for: c.studio))?uo=4")
        row.add("collectionViewUrl", url)
        row.add("trackViewUrl", url)
        row.add("previewUrl", f.preview)
        row.add("artworkUrl30", art.url(30))
        row.add("artworkUrl60", art.url(60))
        row.add("artworkUrl100", art.url(100))
        row.add("collectionPrice", ITunesText.price(c.priceCents))
        row.add("trackPrice", ITunesText.price(price))
        row.add("collectionHdPrice", ITunesText.price(c.priceCents))
        row.add("trackHdPrice", ITunesText.price(price))
        row.add("releaseDate", f.release.iso8601)
        row.add("collectionExplicitness", "notExplicit")
        row.add("trackExplicitness", "notExplicit")
        row.add("discCount", 1)
        row.add("discNumber", 1)
        row.add("trackCount", Self.moviesPerCollection)
        row.add("trackNumber", i % Self.moviesPerCollection + 1)
        row.add("trackTimeMillis", f.millis)
        row.add("country", "USA")
        row.add("currency", "USD")
        row.add("primaryGenreName", f.genre.name)
        row.add("contentAdvisoryRating", f.rating)
        switch f.shortStyle {
        case 0: row.add("shortDescription", String(long.prefix(100)))
        case 2: row.add("shortDescription", .null)
        default: break
        }
        row.add("longDescription", long)
        row.add("hasITunesExtras", .bool(f.extras))
        return row
    }

    func searchWords(_ i: Int, night: Int) -> [String] {
        let f = fixed(i)
        return PodcastCatalog.words(f.title) + PodcastCatalog.words(f.director) + PodcastCatalog.words(f.genre.name)
    }

    func isExplicit(_ i: Int, night: Int) -> Bool { fixed(i).rating == "R" }
    func genreIDs(_ i: Int, night: Int) -> [String] { [fixed(i).genre.id, "33"] }
    func priceCents(_ i: Int, night: Int) -> Int {
        priceCents(i, version: timeline.history(i, night: night).versions[Group.price.rawValue])
    }
}
