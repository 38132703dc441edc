import Foundation

/// The simulated iTunes podcast catalog: podcast `i`'s Search row on a given
/// night, computed from `(seed, i)` and its change history.
///
/// Mutable field groups: the title (trackName, collectionName and the names
/// and view URLs derived from it), a new episode (releaseDate later,
/// trackCount + 1), the genre (primaryGenreName, genreIds, genres) and the
/// artwork (all artworkUrl*). Everything else is fixed at birth.
struct PodcastCatalog: Sendable {
    static let tag: UInt64 = 0x504F_4443_4153_5453  // "PODCASTS"

    enum Group: Int, CaseIterable {
        case title = 0, episode, genre, artwork
    }

    /// A new episode is the most common change, as in real catalogs.
    static let groupWeights: [Double] = [0.15, 0.5, 0.15, 0.2]

    /// The calendar day of night 1.
    static let epoch = SimDate(year: 2024, month: 1, day: 1)

    /// Internal (not private) because the episodes, in their own file, share these streams.
    enum Purpose: UInt64 {
        case fixed = 100, title, episode, genre, artwork, artist, artistID
    }

    let seed: UInt64
    let timeline: Timeline
    /// trackId ↔ index: ids that look like real ones (scattered 9–10 digit numbers).
    let trackIDs: IDScrambler
    let artistIDs: IDScrambler
    /// Podcasts share artists (about three podcasts per artist).
    let artistCount: Int
    let faults: ContentFaults

    init(seed: UInt64, count: Int, churn: Churn, faults: ContentFaults = .none) {
        self.seed = seed
        self.faults = faults
        timeline = Timeline(seed: seed, tag: Self.tag, initialCount: count, churn: churn, groupWeights: Self.groupWeights)
        trackIDs = IDScrambler(offset: 100_000_000, bits: 30, key: StableRandom.hash(seed, Self.tag, 1))
        artistIDs = IDScrambler(offset: 200_000_000, bits: 28, key: StableRandom.hash(seed, Self.tag, 2))
        artistCount = max(8, count / 3)
    }

    // MARK: Identity

    func trackID(_ i: Int) -> Int { trackIDs.id(for: i) }

    func key(_ i: Int) -> String { String(trackID(i)) }

    /// The index of the podcast with this key, if such an index was ever born.
    func index(forKey key: String) -> Int? {
        guard let id = Int(key), let i = trackIDs.index(for: id) else { return nil }
        return i
    }

    // MARK: Fixed fields

    struct Fixed {
        var artist: Int
        var explicitness: String
        var hasFeed: Bool
        var baseTrackCount: Int
        var baseRelease: SimDate
    }

    func fixed(_ i: Int) -> Fixed {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.fixed.rawValue))
        let artist = dice.below(artistCount)
        // Explicitness as in the real sample: mostly notExplicit, some cleaned or explicit.
        let roll = dice.below(100)
        let explicitness = roll < 84 ? "notExplicit" : (roll < 92 ? "cleaned" : "explicit")
        let hasFeed = !dice.chance(0.03)
        let baseTrackCount = dice.int(in: 1...400)
        let born = timeline.birthNight(i)
        let secondOfDay = dice.below(24 * 60) * 60
        let baseRelease: SimDate
        if born <= 1 {
            baseRelease = SimDate(day: Self.epoch.day - dice.int(in: 1...3_000), seconds: secondOfDay)
        } else {
            // A podcast new on night b released its first episode that day.
            baseRelease = SimDate(day: Self.epoch.day + born - 1, seconds: secondOfDay)
        }
        return Fixed(artist: artist, explicitness: explicitness, hasFeed: hasFeed, baseTrackCount: baseTrackCount,
                     baseRelease: baseRelease)
    }

    // MARK: Artists

    /// Roughly one artist in six has no artist page (no artistId, no artistViewUrl), as in real rows.
    func artistID(_ artist: Int) -> Int? {
        let bits = StableRandom.hash(seed, Self.tag, UInt64(artist), Purpose.artistID.rawValue)
        return StableRandom.chance(0.18, bits) ? nil : artistIDs.id(for: artist)
    }

    func artistName(_ artist: Int) -> String {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(artist), Purpose.artist.rawValue))
        switch dice.below(4) {
        case 0, 1: return "\(dice.pick(Vocabulary.firstNames)) \(dice.pick(Vocabulary.lastNames))"
        case 2: return "\(dice.pick(Vocabulary.lastNames)) & \(dice.pick(Vocabulary.lastNames))"
        default: return dice.pick(Vocabulary.organizations) + dice.pick(Vocabulary.organizationSuffixes)
        }
    }

    // MARK: Mutable fields

    func title(_ i: Int, version: Int) -> String {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.title.rawValue, UInt64(v), UInt64(attempt)))
            return Self.makeTitle(&dice)
        }
    }

    static func makeTitle(_ dice: inout Dice) -> String {
        let topic = dice.pick(Vocabulary.topics)
        let form = dice.pick(Vocabulary.showForms)
        var title: String
        switch dice.below(10) {
        case 0, 1: title = "\(dice.pick(Vocabulary.adjectives)) \(topic) \(form)"
        case 2, 3: title = "The \(topic) \(form)"
        case 4:
            var other = dice.pick(Vocabulary.topics)
            while other == topic { other = dice.pick(Vocabulary.topics) }
            title = "\(topic) & \(other)"
        case 5: title = "\(dice.pick(Vocabulary.hosts))'s \(topic) \(form)"
        case 6: title = "\"\(dice.pick(Vocabulary.quotes))\" with \(dice.pick(Vocabulary.hosts))"
        case 7: title = "\(dice.pick(Vocabulary.collectiveNouns)) of \(topic)"
        case 8: title = "\(topic) \(form) <Live>"
        default: title = "\(dice.pick(Vocabulary.places)) \(topic) \(form)"
        }
        if dice.chance(0.06) { title += ": \(dice.pick(Vocabulary.subtitles))" }
        return title
    }

    func genre(_ i: Int, version: Int) -> PodcastGenre {
        let genres = Vocabulary.podcastGenres
        let index = versioned(version) { v, attempt in
            Int(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.genre.rawValue, UInt64(v), UInt64(attempt))
                % UInt64(genres.count))
        }
        return genres[index]
    }

    /// The parts of an mzstatic artwork URL that identify one image.
    struct Artwork: Equatable {
        var folder: Int
        var uuid: String
        var number: String
        var hosts: [Int]

        func url(size: Int) -> String {
            let quality = size <= 60 ? 50 : 75
            // Each size is served from its own CDN host, as in the real rows.
            let host: Int
            switch size {
            case ...30: host = hosts[0]
            case ...60: host = hosts[1]
            case ...100: host = hosts[2]
            default: host = hosts[3]
            }
            let a = uuid.prefix(2), b = uuid.dropFirst(2).prefix(2), c = uuid.dropFirst(4).prefix(2)
            return "http://is\(host).mzstatic.com/image/pf/us/r30/Podcasts\(folder)/v4/\(a)/\(b)/\(c)/\(uuid)/mza_\(number).\(size)x\(size)-\(quality).jpg"
        }
    }

    func artwork(_ i: Int, version: Int) -> Artwork {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.artwork.rawValue, UInt64(v), UInt64(attempt)))
            let hex = dice.hex(32)
            let uuid = "\(hex.prefix(8))-\(hex.dropFirst(8).prefix(4))-\(hex.dropFirst(12).prefix(4))-\(hex.dropFirst(16).prefix(4))-\(hex.dropFirst(20))"
            let number = String(dice.next() >> 1)
            return Artwork(folder: dice.int(in: 1...99), uuid: uuid, number: number,
                           hosts: (0..<4).map { _ in dice.int(in: 1...5) })
        }
    }

    /// The latest episode: its date is the night of the last episode change
    /// (so always later than the one before), and each change adds one episode.
    func latestEpisode(_ i: Int, fixed: Fixed, history: Timeline.History) -> (release: SimDate, trackCount: Int) {
        let group = Group.episode.rawValue
        guard let night = history.lastChange[group] else { return (fixed.baseRelease, fixed.baseTrackCount) }
        let bits = StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.episode.rawValue, UInt64(night))
        let release = SimDate(day: Self.epoch.day + night - 1, seconds: Int(bits % (24 * 60)) * 60)
        return (release, fixed.baseTrackCount + history.versions[group])
    }

    // MARK: Rows

    /// URL path segment from a title, as iTunes builds its view URLs:
    /// accents dropped ("Björn" → "bjorn"), other non-ASCII text and
    /// punctuation collapsed into single dashes.
    static func slug(_ title: String) -> String {
        // ASCII needs no decomposition (Foundation's, which is slow in bulk).
        if title.utf8.allSatisfy({ $0 < 0x80 }) {
            var out = ""
            var pendingDash = false
            for byte in title.utf8 {
                let lower = (0x41...0x5A).contains(byte) ? byte + 0x20 : byte
                if (0x61...0x7A).contains(lower) || (0x30...0x39).contains(lower) {
                    if pendingDash, !out.isEmpty { out.append("-") }
                    pendingDash = false
                    out.unicodeScalars.append(Unicode.Scalar(lower))
                } else {
                    pendingDash = true
                }
            }
            return out.isEmpty ? "podcast" : out
        }
        var out = ""
        var pendingDash = false
        // Canonical decomposition splits "ö" into "o" + a combining mark, which is then skipped.
        for scalar in title.lowercased().decomposedStringWithCanonicalMapping.unicodeScalars {
            if scalar.properties.generalCategory == .nonspacingMark { continue }
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if pendingDash, !out.isEmpty { out.append("-") }
                pendingDash = false
                out.unicodeScalars.append(scalar)
            } else {
                pendingDash = true
            }
        }
        return out.isEmpty ? "podcast" : out
    }

    /// Podcast `i`'s Search row on `night` (the caller checks it is alive).
    /// `baseURL` is the simulator's own origin, where the feed lives.
    func row(_ i: Int, night: Int, baseURL: String) -> JSONObject {
        let fixed = fixed(i)
        let history = timeline.history(i, night: night)
        let trackID = trackID(i)
        let title = title(i, version: history.versions[Group.title.rawValue])
        let genre = genre(i, version: history.versions[Group.genre.rawValue])
        let artwork = artwork(i, version: history.versions[Group.artwork.rawValue])
        let episode = latestEpisode(i, fixed: fixed, history: history)
        let artistID = artistID(fixed.artist)
        let artistName = artistName(fixed.artist)
        let viewURL = "https://itunes.apple.com/us/podcast/\(Self.slug(title))/id\(trackID)?mt=2&uo=4"

        // Content faults decorate the served names; Search and the URL slugs use the clean title.
        let marks = faults.marks(tag: Self.tag, index: i)
        let shown = faults.title(title, marks: marks, tag: Self.tag, index: i).json
        let censored = marks.contains(.huge) ? JSONOut.string(faults.huge(title, marks: marks)) : shown

        var row = JSONObject()
        row.add("wrapperType", "track")
        row.add("kind", "podcast")
        if let artistID { row.add("artistId", artistID) }
        row.add("collectionId", trackID)
        row.add("trackId", trackID)
        row.add("artistName", artistName)
        row.add("collectionName", shown)
        row.add("trackName", shown)
        row.add("collectionCensoredName", shown)
        row.add("trackCensoredName", censored)
        if let artistID {
            row.add("artistViewUrl", "https://itunes.apple.com/us/artist/\(Self.slug(artistName))/id\(artistID)?mt=2&uo=4")
        }
        row.add("collectionViewUrl", viewURL)
        if fixed.hasFeed {
            let origin = faults.onDeadFeedHost(podcast: i) ? "http://\(ContentFaults.deadFeedHost)" : baseURL
            row.add("feedUrl", "\(origin)/feeds/\(trackID).xml")
        }
        row.add("trackViewUrl", viewURL)
        row.add("artworkUrl30", artwork.url(size: 30))
        row.add("artworkUrl60", artwork.url(size: 60))
        row.add("artworkUrl100", artwork.url(size: 100))
        // The raw service writes podcast prices with two decimals.
        for price in ["collectionPrice", "trackPrice", "trackRentalPrice", "collectionHdPrice", "trackHdPrice",
                      "trackHdRentalPrice"] {
            row.add(price, .literal("0.00"))
        }
        row.add("releaseDate", episode.release.iso8601)
        row.add("collectionExplicitness", fixed.explicitness)
        row.add("trackExplicitness", fixed.explicitness)
        row.add("trackCount", episode.trackCount)
        row.add("country", "USA")
        row.add("currency", "USD")
        row.add("primaryGenreName", genre.name)
        switch fixed.explicitness {
        case "explicit": row.add("contentAdvisoryRating", "Explicit")
        case "cleaned": row.add("contentAdvisoryRating", "Clean")
        default: break
        }
        row.add("radioStationUrl", "https://itunes.apple.com/station/idra.\(trackID)")
        row.add("artworkUrl600", artwork.url(size: 600))
        row.add("genreIds", .array(genre.genreIds.map { .string($0) }))
        row.add("genres", .array(genre.genreNames.map { .string($0) }))
        return row
    }

    /// The lower-cased words Search matches against: those of trackName,
    /// artistName and primaryGenreName, split on anything but letters and digits.
    func searchWords(_ i: Int, night: Int) -> [String] {
        let history = timeline.history(i, night: night)
        // A handful of words: an array beats a Set for lookups at this size.
        return Self.words(title(i, version: history.versions[Group.title.rawValue]))
            + Self.words(artistName(fixed(i).artist))
            + Self.words(genre(i, version: history.versions[Group.genre.rawValue]).name)
    }

    static func words(_ text: String) -> [String] {
        text.lowercased().split { !($0.isLetter || $0.isNumber) }.map(String.init)
    }
}
