/// Albums, their songs and the artists behind them.
///
/// Albums have the timeline (birth, removal, changes); a song lives and dies
/// with its album and is served with album fields (collectionName,
/// collectionPrice, artwork), so a song's row changes exactly when its
/// album's does. Mutable album groups: the price, the artwork and the title.
/// Artists are fixed and always present.
struct MusicCatalog: Sendable {
    static let albumTag: UInt64 = 0x414C_4255_4D53  // "ALBUMS"
    static let songTag: UInt64 = 0x534F_4E47_53  // "SONGS"
    static let artistTag: UInt64 = 0x4152_5449_5354  // "ARTIST"
    /// Song index = album index × maxTracks + track number − 1.
    static let maxTracks = 32

    enum Group: Int, CaseIterable { case price = 0, artwork, title }
    static let groupWeights: [Double] = [0.5, 0.2, 0.3]

    private enum Purpose: UInt64 {
        case fixed = 300, title, price, artwork, song, artist, artistGenre
    }

    let seed: UInt64
    let timeline: Timeline
    let albumIDs: IDScrambler
    let songIDs: IDScrambler
    let artistIDs: IDScrambler
    let artistCount: Int
    let faults: ContentFaults
    /// Leaf-or-top genres of the music tree, with their parent.
    let genres: [(id: String, name: String, parent: String?)]

    init(seed: UInt64, songCount: Int, churn: Churn, faults: ContentFaults) {
        self.seed = seed
        self.faults = faults
        let albums = songCount > 0 ? max(1, songCount / 10) : 0
        timeline = Timeline(seed: seed, tag: Self.albumTag, initialCount: albums, churn: churn,
                            groupWeights: Self.groupWeights)
        albumIDs = IDScrambler(offset: 2_300_000_000, bits: 27, key: StableRandom.hash(seed, Self.albumTag, 1))
        songIDs = IDScrambler(offset: 1_200_000_000, bits: 30, key: StableRandom.hash(seed, Self.songTag, 1))
        artistIDs = IDScrambler(offset: 2_450_000_000, bits: 26, key: StableRandom.hash(seed, Self.artistTag, 1))
        artistCount = max(4, albums / 3)
        var genres: [(id: String, name: String, parent: String?)] = []
        for (id, name, children) in MediaVocabulary.musicGenres {
            genres.append((id, name, nil))
            for (childID, childName) in children { genres.append((childID, childName, id)) }
        }
        self.genres = genres
    }

    // MARK: Artists

    func artistID(_ a: Int) -> Int { artistIDs.id(for: a) }

    func artistIndex(forID id: Int) -> Int? {
        guard let a = artistIDs.index(for: id), a < artistCount else { return nil }
        return a
    }

    func artistName(_ a: Int) -> String {
        var dice = Dice(StableRandom.hash(seed, Self.artistTag, UInt64(a), Purpose.artist.rawValue))
        switch dice.below(3) {
        case 0: return dice.pick(MediaVocabulary.bandWords)
        case 1: return "\(dice.pick(Vocabulary.firstNames)) \(dice.pick(Vocabulary.lastNames))"
        default: return "\(dice.pick(MediaVocabulary.bandWords)) \(dice.int(in: 2...99))"
        }
    }

    func artistGenre(_ a: Int) -> (id: String, name: String, parent: String?) {
        genres[Int(StableRandom.hash(seed, Self.artistTag, UInt64(a), Purpose.artistGenre.rawValue) % UInt64(genres.count))]
    }

    func amgArtistID(_ a: Int) -> Int { 100_000 + Int(StableRandom.hash(seed, Self.artistTag, UInt64(a), 9) % 900_000) }

    func artistRow(_ a: Int) -> JSONObject {
        let name = artistName(a)
        let genre = artistGenre(a)
        var row = JSONObject()
        row.add("wrapperType", "artist")
        row.add("artistType", "Artist")
        row.add("artistName", name)
        row.add("artistLinkUrl", "https://music.apple.com/us/artist/\(PodcastCatalog.slug(name))/\(artistID(a))?uo=4")
        row.add("artistId", artistID(a))
        row.add("amgArtistId", amgArtistID(a))
        row.add("primaryGenreName", genre.name)
        row.add("primaryGenreId", Int(genre.id) ?? 34)
        return row
    }

    func artistWords(_ a: Int) -> [String] {
        PodcastCatalog.words(artistName(a)) + PodcastCatalog.words(artistGenre(a).name)
    }

    // MARK: Albums

    struct Album {
        var artist: Int
        var trackCount: Int
        var release: SimDate
        var explicit: Bool
        var compilation: Bool
        var label: String
        var upc: String
    }

    func album(_ j: Int) -> Album {
        var dice = Dice(StableRandom.hash(seed, Self.albumTag, UInt64(j), Purpose.fixed.rawValue))
        let artist = dice.below(artistCount)
        let trackCount = dice.int(in: 4...16)
        let release = ITunesText.releaseDate(born: timeline.birthNight(j), dice: &dice)
        return Album(artist: artist, trackCount: trackCount, release: release, explicit: dice.chance(0.2),
                     compilation: dice.chance(0.05), label: dice.pick(MediaVocabulary.labels),
                     upc: String(dice.int(in: 100_000_000_000...999_999_999_999)))
    }

    func albumTitle(_ j: Int, version: Int) -> String {
        ITunesText.draw(seed, Self.albumTag, j, Purpose.title.rawValue, version: version) { dice in
            let word = dice.pick(MediaVocabulary.songWords)
            let lead = dice.chance(0.5) ? "\(dice.pick(MediaVocabulary.songWords)) " : ""
            return lead + word + dice.pick(MediaVocabulary.albumForms)
        }
    }

    func albumPriceCents(_ j: Int, version: Int) -> Int {
        ITunesText.draw(seed, Self.albumTag, j, Purpose.price.rawValue, version: version) { dice in
            dice.int(in: 5...15) * 100 + 99
        }
    }

    func artwork(_ j: Int, version: Int, upc: String) -> ThumbArtwork {
        ITunesText.draw(seed, Self.albumTag, j, Purpose.artwork.rawValue, version: version) { dice in
            ThumbArtwork(folder: "Music", dice: &dice, file: "\(upc).jpg")
        }
    }

    func albumID(_ j: Int) -> Int { albumIDs.id(for: j) }

    func albumKey(_ j: Int) -> String { String(albumID(j)) }

    func albumIndex(forKey key: String) -> Int? {
        guard let id = Int(key) else { return nil }
        return albumIDs.index(for: id)
    }

    /// What album `j` looks like on `night`, shared by its row and its songs' rows.
    struct AlbumState {
        var fixed: Album
        var title: String
        var shownTitle: JSONOut
        var priceCents: Int
        var artwork: ThumbArtwork
        var genre: (id: String, name: String, parent: String?)
    }

    func albumState(_ j: Int, night: Int) -> AlbumState {
        let fixed = album(j)
        let history = timeline.history(j, night: night)
        let title = albumTitle(j, version: history.versions[Group.title.rawValue])
        let marks = faults.marks(tag: Self.albumTag, index: j)
        return AlbumState(fixed: fixed, title: title,
                          shownTitle: faults.title(title, marks: marks, tag: Self.albumTag, index: j).json,
                          priceCents: albumPriceCents(j, version: history.versions[Group.price.rawValue]),
                          artwork: artwork(j, version: history.versions[Group.artwork.rawValue], upc: fixed.upc),
                          genre: artistGenre(fixed.artist))
    }

    /// The collection row (`wrapperType` collection), as Lookup and `entity=album` serve it.
    func albumRow(_ j: Int, night: Int) -> JSONObject {
        let s = albumState(j, night: night)
        let artist = s.fixed.artist
        let artistName = artistName(artist)
        var row = JSONObject()
        row.add("wrapperType", "collection")
        row.add("collectionType", "Album")
        row.add("artistId", artistID(artist))
        row.add("collectionId", albumID(j))
        row.add("amgArtistId", amgArtistID(artist))
        row.add("artistName", artistName)
        row.add("collectionName", s.shownTitle)
        row.add("collectionCensoredName", s.shownTitle)
        row.add("artistViewUrl", "https://music.apple.com/us/artist/\(PodcastCatalog.slug(artistName))/\(artistID(artist))?uo=4")
        row.add("collectionViewUrl", "https://music.apple.com/us/album/\(PodcastCatalog.slug(s.title))/\(albumID(j))?uo=4")
        row.add("artworkUrl60", s.artwork.url(60))
        row.add("artworkUrl100", s.artwork.url(100))
        row.add("collectionPrice", ITunesText.price(s.priceCents))
        row.add("collectionExplicitness", s.fixed.explicit ? "explicit" : "notExplicit")
        if s.fixed.explicit { row.add("contentAdvisoryRating", "Explicit") }
        row.add("trackCount", s.fixed.trackCount)
        row.add("copyright", "℗ \(s.fixed.release.civil.year) \(s.fixed.label)")
        row.add("country", "USA")
        row.add("currency", "USD")
        row.add("releaseDate", s.fixed.release.iso8601)
        row.add("primaryGenreName", s.genre.name)
        return row
    }

    func albumWords(_ j: Int, night: Int) -> [String] {
        let history = timeline.history(j, night: night)
        let fixed = album(j)
        return PodcastCatalog.words(albumTitle(j, version: history.versions[Group.title.rawValue]))
            + artistWords(fixed.artist)
    }

    // MARK: Songs

    func songIndex(album j: Int, track n: Int) -> Int { j * Self.maxTracks + n - 1 }

    func songID(_ s: Int) -> Int { songIDs.id(for: s) }

    func songKey(_ s: Int) -> String { String(songID(s)) }

    func songIndex(forKey key: String) -> Int? {
        guard let id = Int(key) else { return nil }
        return songIDs.index(for: id)
    }

    struct Track {
        var title: String
        var priceCents: Int
        var millis: Int
        var explicit: Bool
        var streamable: Bool
        var preview: String
    }

    func track(album j: Int, number n: Int, albumExplicit: Bool) -> Track {
        var dice = Dice(StableRandom.hash(seed, Self.songTag, UInt64(songIndex(album: j, track: n)), Purpose.song.rawValue))
        var title = dice.pick(MediaVocabulary.songWords)
        if dice.chance(0.6) { title = "\(dice.pick(MediaVocabulary.songWords)) \(title)" }
        title += dice.pick(MediaVocabulary.songForms)
        // Some tracks are sold with the album only: iTunes writes their price as -1.
        let price = dice.chance(0.05) ? -100 : dice.pick([69, 99, 129, 129])
        let hex = dice.hex(32)
        let uuid = "\(hex.prefix(8))-\(hex.dropFirst(8).prefix(4))-\(hex.dropFirst(12).prefix(4))-\(hex.dropFirst(16).prefix(4))-\(hex.dropFirst(20))"
        let preview = "https://audio-ssl.itunes.apple.com/itunes-assets/AudioPreview\(dice.int(in: 100...130))/v4/"
            + "\(hex.prefix(2))/\(hex.dropFirst(2).prefix(2))/\(hex.dropFirst(4).prefix(2))/\(uuid)/mzaf_\(dice.next() >> 2).plus.aac.p.m4a"
        let millis = dice.int(in: 95_000...420_000)
        // Drawn whatever the album is, so the draws after it never depend on the album.
        let explicitDraw = dice.chance(0.6)
        return Track(title: title, priceCents: price, millis: millis, explicit: albumExplicit && explicitDraw,
                     streamable: dice.chance(0.9), preview: preview)
    }

    /// (album, track number) of song index `s`, or nil when no such track exists.
    func split(_ s: Int) -> (album: Int, track: Int)? {
        guard s >= 0 else { return nil }
        let j = s / Self.maxTracks, n = s % Self.maxTracks + 1
        guard n <= album(j).trackCount else { return nil }
        return (j, n)
    }

    func songRow(_ s: Int, night: Int) -> JSONObject {
        guard let (j, n) = split(s) else { return JSONObject() }
        let a = albumState(j, night: night)
        let t = track(album: j, number: n, albumExplicit: a.fixed.explicit)
        let artist = a.fixed.artist
        let artistName = artistName(artist)
        let marks = faults.marks(tag: Self.songTag, index: s)
        let shown = faults.title(t.title, marks: marks, tag: Self.songTag, index: s).json
        let trackURL = "https://music.apple.com/us/album/\(PodcastCatalog.slug(t.title))/\(albumID(j))?i=\(songID(s))&uo=4"
        var row = JSONObject()
        row.add("wrapperType", "track")
        row.add("kind", "song")
        row.add("artistId", artistID(artist))
        row.add("collectionId", albumID(j))
        row.add("trackId", songID(s))
        row.add("artistName", artistName)
        row.add("collectionName", a.shownTitle)
        row.add("trackName", shown)
        row.add("collectionCensoredName", a.shownTitle)
        row.add("trackCensoredName", marks.contains(.huge) ? .string(faults.huge(t.title, marks: marks)) : shown)
        if a.fixed.compilation { row.add("collectionArtistName", "Various Artists") }
        row.add("artistViewUrl", "https://music.apple.com/us/artist/\(PodcastCatalog.slug(artistName))/\(artistID(artist))?uo=4")
        row.add("collectionViewUrl", trackURL)
        row.add("trackViewUrl", trackURL)
        row.add("previewUrl", t.preview)
        row.add("artworkUrl30", a.artwork.url(30))
        row.add("artworkUrl60", a.artwork.url(60))
        row.add("artworkUrl100", a.artwork.url(100))
        row.add("collectionPrice", ITunesText.price(a.priceCents))
        row.add("trackPrice", ITunesText.price(t.priceCents))
        row.add("releaseDate", a.fixed.release.iso8601)
        row.add("collectionExplicitness", a.fixed.explicit ? "explicit" : "notExplicit")
        row.add("trackExplicitness", t.explicit ? "explicit" : "notExplicit")
        row.add("discCount", 1)
        row.add("discNumber", 1)
        row.add("trackCount", a.fixed.trackCount)
        row.add("trackNumber", n)
        row.add("trackTimeMillis", t.millis)
        row.add("country", "USA")
        row.add("currency", "USD")
        row.add("primaryGenreName", a.genre.name)
        if t.explicit { row.add("contentAdvisoryRating", "Explicit") }
        row.add("isStreamable", .bool(t.streamable))
        return row
    }

    func songWords(_ s: Int) -> [String] {
        guard let (j, n) = split(s) else { return [] }
        let fixed = album(j)
        return PodcastCatalog.words(track(album: j, number: n, albumExplicit: fixed.explicit).title)
            + artistWords(fixed.artist)
    }

    /// Song indices of album `j`, in track order.
    func songs(ofAlbum j: Int) -> [Int] {
        (1...album(j).trackCount).map { songIndex(album: j, track: $0) }
    }

    func genreIDs(album j: Int) -> [String] {
        let genre = artistGenre(album(j).artist)
        return [genre.id] + (genre.parent.map { [$0] } ?? []) + ["34"]
    }
}

/// The album side of ``MusicCatalog`` as an ``ItemCatalog`` (key: collectionId).
struct AlbumCatalog: TimelineCatalog {
    let music: MusicCatalog
    var tag: UInt64 { MusicCatalog.albumTag }
    var timeline: Timeline { music.timeline }
    func key(_ i: Int) -> String { music.albumKey(i) }
    func index(forKey key: String) -> Int? { music.albumIndex(forKey: key) }
    func row(_ i: Int, night: Int) -> JSONObject { music.albumRow(i, night: night) }
    func searchWords(_ i: Int, night: Int) -> [String] { music.albumWords(i, night: night) }
    func isExplicit(_ i: Int, night: Int) -> Bool { music.album(i).explicit }
    func genreIDs(_ i: Int, night: Int) -> [String] { music.genreIDs(album: i) }
    func priceCents(_ i: Int, night: Int) -> Int {
        music.albumPriceCents(i, version: music.timeline.history(i, night: night).versions[MusicCatalog.Group.price.rawValue])
    }
}

/// The song side of ``MusicCatalog`` (key: trackId). Songs share their album's life.
struct SongCatalog: ItemCatalog {
    let music: MusicCatalog
    var tag: UInt64 { MusicCatalog.songTag }

    func indexCount(through night: Int) -> Int { music.timeline.indexCount(through: night) * MusicCatalog.maxTracks }

    func isAlive(_ i: Int, night: Int) -> Bool {
        guard let (j, _) = music.split(i) else { return false }
        return music.timeline.isAlive(j, night: night)
    }

    func changes(_ i: Int, on night: Int) -> Bool {
        guard let (j, _) = music.split(i) else { return false }
        return music.timeline.changes(j, on: night)
    }

    func aliveIndices(night: Int) -> [Int] {
        music.timeline.aliveIndices(night: night).flatMap { music.songs(ofAlbum: $0) }
    }

    func key(_ i: Int) -> String { music.songKey(i) }

    func index(forKey key: String) -> Int? {
        guard let s = music.songIndex(forKey: key), music.split(s) != nil else { return nil }
        return s
    }

    func row(_ i: Int, night: Int) -> JSONObject { music.songRow(i, night: night) }
    func searchWords(_ i: Int, night: Int) -> [String] { music.songWords(i) }

    func isExplicit(_ i: Int, night: Int) -> Bool {
        guard let (j, n) = music.split(i) else { return false }
        return music.track(album: j, number: n, albumExplicit: music.album(j).explicit).explicit
    }

    func genreIDs(_ i: Int, night: Int) -> [String] {
        guard let (j, _) = music.split(i) else { return ["34"] }
        return music.genreIDs(album: j)
    }

    func priceCents(_ i: Int, night: Int) -> Int {
        guard let (j, n) = music.split(i) else { return 0 }
        return music.track(album: j, number: n, albumExplicit: false).priceCents
    }
}
