/// Audiobooks (`wrapperType` audiobook, no `kind`, key: collectionId).
/// Mutable groups: the price and the artwork.
struct AudiobookCatalog: TimelineCatalog, ScrambledIDCatalog {
    static let tag: UInt64 = 0x4155_4449_4F42  // "AUDIOB"
    var tag: UInt64 { Self.tag }

    enum Group: Int, CaseIterable { case price = 0, artwork }
    private enum Purpose: UInt64 { case fixed = 600, price, artwork }

    let seed: UInt64
    let timeline: Timeline
    let ids: IDScrambler
    let authorIDs: IDScrambler
    let faults: ContentFaults

    init(seed: UInt64, count: Int, churn: Churn, faults: ContentFaults) {
        self.seed = seed
        self.faults = faults
        timeline = Timeline(seed: seed, tag: Self.tag, initialCount: count, churn: churn, groupWeights: [0.6, 0.4])
        ids = IDScrambler(offset: 2_780_000_000, bits: 26, key: StableRandom.hash(seed, Self.tag, 1))
        authorIDs = IDScrambler(offset: 2_850_000_000, bits: 8, key: StableRandom.hash(seed, Self.tag, 2))
    }

    struct Fixed {
        var title: String
        var author: Int
        var genre: String
        var release: SimDate
        var explicit: Bool
        var description: String
        var preview: String
    }

    func fixed(_ i: Int) -> Fixed {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.fixed.rawValue))
        let title = ITunesText.fill(dice.pick(MediaVocabulary.bookForms), dice.pick(MediaVocabulary.bookWords))
            + (dice.chance(0.6) ? " (Unabridged)" : "")
        let author = dice.below(MediaVocabulary.authors.count)
        let genre = dice.pick(MediaVocabulary.audiobookGenres)
        let release = ITunesText.releaseDate(born: timeline.birthNight(i), dice: &dice)
        let description = (0..<dice.int(in: 2...5)).map { _ in dice.pick(MediaVocabulary.descriptionParts) }.joined()
        let hex = dice.hex(32)
        let preview = "https://audio-ssl.itunes.apple.com/itunes-assets/AudioPreview\(dice.int(in: 100...130))/v4/"
            + "\(hex.prefix(2))/\(hex.dropFirst(2).prefix(2))/\(hex.dropFirst(4).prefix(2))/\(hex)/mzaf_\(dice.next() >> 2).std.aac.p.m4a"
        return Fixed(title: title, author: author, genre: genre, release: release, explicit: dice.chance(0.05),
                     description: description, preview: preview)
    }

    func priceCents(_ i: Int, version: Int) -> Int {
        ITunesText.draw(seed, Self.tag, i, Purpose.price.rawValue, version: version) { dice in
            dice.int(in: 4...39) * 100 + 99
        }
    }

    func artwork(_ i: Int, version: Int) -> ThumbArtwork {
        ITunesText.draw(seed, Self.tag, i, Purpose.artwork.rawValue, version: version) { dice in
            let file = "\(dice.int(in: 9_780_000_000_000...9_799_999_999_999)).d.jpg"
            return ThumbArtwork(folder: "Music", dice: &dice, file: file)
        }
    }

    func row(_ i: Int, night: Int) -> JSONObject {
        let f = fixed(i)
        let history = timeline.history(i, night: night)
        let art = artwork(i, version: history.versions[Group.artwork.rawValue])
        let marks = faults.marks(tag: Self.tag, index: i)
        let shown = faults.title(f.title, marks: marks, tag: Self.tag, index: i).json
        let author = MediaVocabulary.authors[f.author]
        let authorID = authorIDs.id(for: f.author)
        var row = JSONObject()
        row.add("wrapperType", "audiobook")
        row.add("artistId", authorID)
        row.add("collectionId", ids.id(for: i))
        row.add("artistName", author)
        row.add("collectionName", shown)
        row.add("collectionCensoredName", shown)
        row.add("artistViewUrl", "https://books.apple.com/us/author/\(PodcastCatalog.slug(author))/id\(authorID)?uo=4")
        row.add("collectionViewUrl",
                "https://books.apple.com/us/audiobook/\(PodcastCatalog.slug(f.title))/id\(ids.id(for: i))?uo=4")
        row.add("artworkUrl60", art.url(60))
        row.add("artworkUrl100", art.url(100))
        row.add("collectionPrice", ITunesText.price(priceCents(i, version: history.versions[Group.price.rawValue])))
        row.add("collectionExplicitness", f.explicit ? "explicit" : "notExplicit")
        row.add("trackCount", 1)
        row.add("country", "USA")
        row.add("currency", "USD")
        row.add("releaseDate", f.release.iso8601)
        row.add("primaryGenreName", f.genre)
        row.add("previewUrl", f.preview)
        row.add("description", faults.huge(f.description, marks: marks))
        return row
    }

    func searchWords(_ i: Int, night: Int) -> [String] {
        let f = fixed(i)
        return PodcastCatalog.words(f.title) + PodcastCatalog.words(MediaVocabulary.authors[f.author])
            + PodcastCatalog.words(f.genre)
    }

    func isExplicit(_ i: Int, night: Int) -> Bool { fixed(i).explicit }
    /// Audiobooks are outside the four genre trees: they chart under no genre only.
    func genreIDs(_ i: Int, night: Int) -> [String] { [] }
    func priceCents(_ i: Int, night: Int) -> Int {
        priceCents(i, version: timeline.history(i, night: night).versions[Group.price.rawValue])
    }
}

/// E-books (`kind` ebook, no `wrapperType`, key: trackId). No sample of a
/// real e-book row was recorded; the key set follows the real service's
/// e-book rows as documented by its users. Mutable groups: the price and the ratings.
struct EbookCatalog: TimelineCatalog, ScrambledIDCatalog {
    static let tag: UInt64 = 0x4542_4F4F_4B53  // "EBOOKS"
    var tag: UInt64 { Self.tag }

    enum Group: Int, CaseIterable { case price = 0, rating }
    private enum Purpose: UInt64 { case fixed = 700, price, rating }

    let seed: UInt64
    let timeline: Timeline
    let ids: IDScrambler
    let authorIDs: IDScrambler
    let faults: ContentFaults

    init(seed: UInt64, count: Int, churn: Churn, faults: ContentFaults) {
        self.seed = seed
        self.faults = faults
        timeline = Timeline(seed: seed, tag: Self.tag, initialCount: count, churn: churn, groupWeights: [0.5, 0.5])
        ids = IDScrambler(offset: 2_870_000_000, bits: 27, key: StableRandom.hash(seed, Self.tag, 1))
        authorIDs = IDScrambler(offset: 2_860_000_000, bits: 8, key: StableRandom.hash(seed, Self.tag, 2))
    }

    struct Fixed {
        var title: String
        var author: Int
        var genre: (id: String, name: String)
        var release: SimDate
        var description: String
        var artwork: ThumbArtwork
    }

    func fixed(_ i: Int) -> Fixed {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.fixed.rawValue))
        let title = ITunesText.fill(dice.pick(MediaVocabulary.bookForms), dice.pick(MediaVocabulary.bookWords))
        let author = dice.below(MediaVocabulary.authors.count)
        let genre = dice.pick(MediaVocabulary.ebookGenres)
        let release = ITunesText.releaseDate(born: timeline.birthNight(i), dice: &dice)
        let description = (0..<dice.int(in: 1...4)).map { _ in dice.pick(MediaVocabulary.descriptionParts) }.joined()
        let file = "\(dice.int(in: 9_780_000_000_000...9_799_999_999_999)).jpg"
        let artwork = ThumbArtwork(folder: "Publication", dice: &dice, file: file)
        return Fixed(title: title, author: author, genre: genre, release: release, description: description, artwork: artwork)
    }

    func priceCents(_ i: Int, version: Int) -> Int {
        ITunesText.draw(seed, Self.tag, i, Purpose.price.rawValue, version: version) { dice in
            dice.chance(0.15) ? 0 : dice.int(in: 0...19) * 100 + 99
        }
    }

    struct Ratings: Equatable {
        var average: Double
        var count: Int
    }

    func ratings(_ i: Int, version: Int) -> Ratings {
        ITunesText.draw(seed, Self.tag, i, Purpose.rating.rawValue, version: version) { dice in
            Ratings(average: Double(dice.int(in: 4...10)) / 2, count: dice.int(in: 1...40_000))
        }
    }

    func row(_ i: Int, night: Int) -> JSONObject {
        let f = fixed(i)
        let history = timeline.history(i, night: night)
        let price = priceCents(i, version: history.versions[Group.price.rawValue])
        let rating = ratings(i, version: history.versions[Group.rating.rawValue])
        let marks = faults.marks(tag: Self.tag, index: i)
        let shown = faults.title(f.title, marks: marks, tag: Self.tag, index: i).json
        let author = MediaVocabulary.authors[f.author]
        let authorID = authorIDs.id(for: f.author)
        var row = JSONObject()
        row.add("artworkUrl60", f.artwork.url(60))
        row.add("artworkUrl100", f.artwork.url(100))
        row.add("artistViewUrl", "https://books.apple.com/us/artist/\(PodcastCatalog.slug(author))/id\(authorID)?mt=11&uo=4")
        row.add("trackCensoredName", shown)
        row.add("formattedPrice", ITunesText.formattedPrice(price))
        row.add("trackViewUrl", "https://books.apple.com/us/book/\(PodcastCatalog.slug(f.title))/id\(ids.id(for: i))?mt=11&uo=4")
        row.add("currency", "USD")
        row.add("trackId", ids.id(for: i))
        row.add("trackName", shown)
        row.add("genreIds", .array([.string(f.genre.id), .string("38")]))
        row.add("releaseDate", f.release.iso8601)
        row.add("artistIds", .array([.int(authorID)]))
        row.add("kind", "ebook")
        row.add("artistId", authorID)
        row.add("artistName", author)
        row.add("genres", .array([.string(f.genre.name), .string("Books")]))
        row.add("price", ITunesText.price(price))
        row.add("description", faults.huge(f.description, marks: marks))
        row.add("averageUserRating", .double(rating.average))
        row.add("userRatingCount", rating.count)
        return row
    }

    func searchWords(_ i: Int, night: Int) -> [String] {
        let f = fixed(i)
        return PodcastCatalog.words(f.title) + PodcastCatalog.words(MediaVocabulary.authors[f.author])
            + PodcastCatalog.words(f.genre.name)
    }

    func isExplicit(_ i: Int, night: Int) -> Bool { false }
    func genreIDs(_ i: Int, night: Int) -> [String] { [fixed(i).genre.id, "38"] }
    func priceCents(_ i: Int, night: Int) -> Int {
        priceCents(i, version: timeline.history(i, night: night).versions[Group.price.rawValue])
    }
}
