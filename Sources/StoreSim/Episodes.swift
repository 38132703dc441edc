/// Podcast episodes: children of a podcast, served by Lookup
/// (`entity=podcastEpisode`) and by the podcast's RSS feed.
///
/// A podcast has episodes 1…trackCount (its Search row's trackCount); each
/// "new episode" change of the podcast adds the next one, released on that
/// night, so the newest episode's date is the Search row's releaseDate.
/// Only the newest ``episodeWindow`` episodes are served (Lookup's largest
/// `limit`, and what the feed carries): when a new one arrives beyond that,
/// the oldest leaves the window, which the truth counts as removed.
/// Podcasts without a feed have no episodes.
///
/// An episode's own fields never change; its row repeats the podcast's
/// title, genre and artwork, so it changes when one of those does.
extension PodcastCatalog {
    static let episodeTag: UInt64 = 0x4550_4953_4F44  // "EPISOD"
    /// Episodes served per podcast (newest first).
    static let episodeWindow = 200
    /// Bits of the episode number inside an episode's index.
    static let episodeNumberBits = 20

    var episodeIDs: IDScrambler {
        IDScrambler(offset: 1_000_000_000_000, bits: 49, key: StableRandom.hash(seed, Self.episodeTag, 1))
    }

    /// The compact index of episode `n` of podcast `i`.
    func episodeIndex(podcast i: Int, number n: Int) -> Int { i << Self.episodeNumberBits | n }

    func episodeKey(podcast i: Int, number n: Int) -> String { String(episodeIDs.id(for: episodeIndex(podcast: i, number: n))) }

    /// (podcast, episode number) for an episode id.
    func episode(forKey key: String) -> (podcast: Int, number: Int)? {
        guard let id = Int(key), let index = episodeIDs.index(for: id) else { return nil }
        let n = index & ((1 << Self.episodeNumberBits) - 1)
        guard n >= 1 else { return nil }
        return (index >> Self.episodeNumberBits, n)
    }

    /// The episode numbers served on `night` (empty when the podcast is not alive or has no feed).
    func episodeNumbers(_ i: Int, night: Int) -> ClosedRange<Int>? {
        guard timeline.isAlive(i, night: night) else { return nil }
        let fixed = fixed(i)
        guard fixed.hasFeed else { return nil }
        let history = timeline.history(i, night: night)
        let count = fixed.baseTrackCount + history.versions[Group.episode.rawValue]
        return max(1, count - Self.episodeWindow + 1)...count
    }

    /// The nights on which podcast `i` got a new episode, up to `night`, ascending.
    func episodeNights(_ i: Int, through night: Int) -> [Int] {
        var nights: [Int] = []
        let bit = UInt8(1) << UInt8(Group.episode.rawValue)
        timeline.forEachChangeNight(i, through: night) { changeNight in
            if timeline.groups(i, changingOn: changeNight) & bit != 0 { nights.append(changeNight) }
        }
        return nights
    }

    struct Episode {
        var number: Int
        var title: String
        var description: String
        var guid: String
        var release: SimDate
        var millis: Int
        var fileExtension: String
        var bytes: Int
    }

    /// Episode `n` of podcast `i`; `nights` is ``episodeNights(_:through:)`` for a night at or after its release.
    func episode(_ i: Int, number n: Int, fixed: Fixed, nights: [Int]) -> Episode {
        var dice = Dice(StableRandom.hash(seed, Self.episodeTag, UInt64(episodeIndex(podcast: i, number: n))))
        let release: SimDate
        if n > fixed.baseTrackCount, n - fixed.baseTrackCount - 1 < nights.count {
            // The same moment latestEpisode gives the Search row.
            let night = nights[n - fixed.baseTrackCount - 1]
            let bits = StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.episode.rawValue, UInt64(night))
            release = SimDate(day: Self.epoch.day + night - 1, seconds: Int(bits % (24 * 60)) * 60)
        } else {
            let spacing = [1, 3, 7, 7, 14][Int(StableRandom.hash(seed, Self.episodeTag, UInt64(i)) % 5)]
            release = SimDate(day: fixed.baseRelease.day - (fixed.baseTrackCount - n) * spacing,
                              seconds: fixed.baseRelease.seconds)
        }
        let topic = dice.pick(Vocabulary.topics)
        let title: String
        switch dice.below(4) {
        case 0: title = "Episode \(n) | \"\(dice.pick(Vocabulary.quotes))\""
        case 1: title = "\(n). \(topic) with \(dice.pick(Vocabulary.hosts))"
        case 2: title = "\(topic) & \(dice.pick(Vocabulary.topics)) — Part \(n)"
        default: title = "#\(n) \(dice.pick(Vocabulary.subtitles))"
        }
        let sentences = (0..<dice.int(in: 1...4)).map { _ in dice.pick(Vocabulary.descriptionSentences) }
        let description = "In this episode: \(topic.lowercased()) (12:34), \(sentences.joined(separator: " "))\n"
            + "Sleeper pick: \(dice.pick(Vocabulary.hosts)) – “\(dice.pick(Vocabulary.quotes))”\n  "
        let hex = dice.hex(32)
        let guid = "\(hex.prefix(8))-\(hex.dropFirst(8).prefix(4))-\(hex.dropFirst(12).prefix(4))-\(hex.dropFirst(16).prefix(4))-\(hex.dropFirst(20))"
        let millis = dice.int(in: 300...10_800) * 1000
        let fileExtension = dice.chance(0.85) ? "mp3" : "m4a"
        return Episode(number: n, title: title, description: description, guid: guid, release: release, millis: millis,
                       fileExtension: fileExtension, bytes: millis / 1000 * 16_000 + dice.int(in: 0...99_999))
    }

    func episodeURL(_ i: Int, _ e: Episode) -> String {
        "https://traffic.storesim.test/podcasts/\(trackID(i))/episode-\(e.number).\(e.fileExtension)?dest-id=\(trackID(i) % 10_000_000)"
    }

    /// The podcast's display state on `night`, shared by its episodes' rows and its feed.
    struct Show {
        var fixed: Fixed
        var title: String
        var shownTitle: FaultyText
        var genre: PodcastGenre
        var artwork: Artwork
        var artistID: Int?
        var artistName: String
        var nights: [Int]
        /// URL slugs, computed once for all the episodes.
        var titleSlug: String
        var artistSlug: String
    }

    func show(_ i: Int, night: Int) -> Show {
        let fixed = fixed(i)
        let history = timeline.history(i, night: night)
        let title = title(i, version: history.versions[Group.title.rawValue])
        let marks = faults.marks(tag: Self.tag, index: i)
        return Show(fixed: fixed, title: title, shownTitle: faults.title(title, marks: marks, tag: Self.tag, index: i),
                    genre: genre(i, version: history.versions[Group.genre.rawValue]),
                    artwork: artwork(i, version: history.versions[Group.artwork.rawValue]),
                    artistID: artistID(fixed.artist), artistName: artistName(fixed.artist),
                    nights: episodeNights(i, through: night), titleSlug: Self.slug(title),
                    artistSlug: Self.slug(artistName(fixed.artist)))
    }

    /// Episode `n`'s Lookup row (`wrapperType` podcastEpisode), in the sample's key order.
    func episodeRow(_ i: Int, number n: Int, show: Show) -> JSONObject {
        let e = episode(i, number: n, fixed: show.fixed, nights: show.nights)
        let trackID = trackID(i)
        let index = episodeIndex(podcast: i, number: n)
        let marks = faults.marks(tag: Self.episodeTag, index: index)
        let url = episodeURL(i, e)
        var row = JSONObject()
        row.add("episodeFileExtension", e.fileExtension)
        row.add("episodeContentType", "audio")
        row.add("artworkUrl160", show.artwork.url(size: 160))
        row.add("previewUrl", url)
        row.add("collectionViewUrl", "https://itunes.apple.com/us/podcast/\(show.titleSlug)/id\(trackID)?mt=2&uo=4")
        row.add("trackTimeMillis", e.millis)
        row.add("closedCaptioning", "none")
        row.add("collectionId", trackID)
        row.add("collectionName", show.shownTitle.json)
        var genre = JSONObject()
        genre.add("name", show.genre.name)
        genre.add("id", show.genre.id)
        row.add("genres", .array([.object(genre)]))
        row.add("episodeGuid", e.guid)
        row.add("description", faults.huge(e.description, marks: marks))
        row.add("feedUrl", "\(World.defaultBaseURL)/feeds/\(trackID).xml")
        row.add("artistIds", .array(show.artistID.map { [.int($0)] } ?? []))
        row.add("shortDescription", String(e.description.prefix(200)) + (e.description.count > 200 ? "..." : ""))
        row.add("releaseDate", e.release.iso8601)
        row.add("trackId", episodeIDs.id(for: index))
        row.add("trackName", faults.title(e.title, marks: marks, tag: Self.episodeTag, index: index).json)
        row.add("episodeUrl", url)
        row.add("kind", "podcast-episode")
        row.add("wrapperType", "podcastEpisode")
        row.add("artworkUrl60", show.artwork.url(size: 60))
        if let artistID = show.artistID {
            row.add("artistViewUrl", "https://itunes.apple.com/us/artist/\(show.artistSlug)/id\(artistID)?mt=2&uo=4")
        }
        row.add("contentAdvisoryRating", show.fixed.explicitness == "explicit" ? "Explicit" : "Clean")
        row.add("trackViewUrl", "https://podcasts.apple.com/us/podcast/\(Self.slug(e.title))/id\(trackID)?i=\(episodeIDs.id(for: index))&uo=4")
        row.add("artworkUrl600", show.artwork.url(size: 600))
        row.add("country", "USA")
        return row
    }

    /// Field groups whose change alters every served episode row of the podcast.
    static var episodeVisibleGroups: UInt8 {
        (1 << UInt8(Group.title.rawValue)) | (1 << UInt8(Group.genre.rawValue)) | (1 << UInt8(Group.artwork.rawValue))
    }
}
