/// Apps (`wrapperType` software, key: trackId), in the raw software layout
/// (line breaks before the long members, `fileSizeBytes` a string, prices
/// with two decimals). Mutable groups: a new version (version, dates,
/// release notes, size, current-version ratings), the price and the ratings.
struct AppCatalog: TimelineCatalog, ScrambledIDCatalog {
    static let tag: UInt64 = 0x4150_5053  // "APPS"
    var tag: UInt64 { Self.tag }

    enum Group: Int, CaseIterable { case version = 0, price, rating }
    static let groupWeights: [Double] = [0.4, 0.2, 0.4]

    private enum Purpose: UInt64 { case fixed = 500, version, price, rating, screenshots }

    let seed: UInt64
    let timeline: Timeline
    let ids: IDScrambler
    let developerIDs: IDScrambler
    let faults: ContentFaults

    init(seed: UInt64, count: Int, churn: Churn, faults: ContentFaults) {
        self.seed = seed
        self.faults = faults
        timeline = Timeline(seed: seed, tag: Self.tag, initialCount: count, churn: churn, groupWeights: Self.groupWeights)
        ids = IDScrambler(offset: 2_620_000_000, bits: 27, key: StableRandom.hash(seed, Self.tag, 1))
        developerIDs = IDScrambler(offset: 2_760_000_000, bits: 8, key: StableRandom.hash(seed, Self.tag, 2))
    }

    struct Fixed {
        var name: String
        var developer: Int
        var genres: [(id: String, name: String)]
        var rating: String
        var advisories: [String]
        var release: SimDate
        var bundle: String
        var gameCenter: Bool
        var sellerURL: Bool
        var features: [String]
        var devices: [String]
        var languages: [String]
        var description: String
        var minimumOS: String
        var vpp: Bool
    }

    /// Top-level App Store genres (rows never use the Games subgenres).
    static let rowGenres: [(id: String, name: String)] = MediaVocabulary.appGenres.map { ($0.0, $0.1) }

    func fixed(_ i: Int) -> Fixed {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.fixed.rawValue))
        let name = ITunesText.fill(dice.pick(MediaVocabulary.appForms), dice.pick(MediaVocabulary.appWords))
        let developer = dice.below(MediaVocabulary.developers.count)
        let first = dice.pick(Self.rowGenres)
        var genres = [first]
        if dice.chance(0.5) {
            let second = dice.pick(Self.rowGenres)
            if second.id != first.id { genres.append(second) }
        }
        let advisories = dice.chance(0.7) ? [] : Array(MediaVocabulary.advisories.prefix(dice.int(in: 1...4)))
        let rating = advisories.isEmpty ? "4+" : dice.pick(["9+", "12+", "12+", "17+"])
        let release = ITunesText.releaseDate(born: timeline.birthNight(i), dice: &dice)
        let bundle = "com.\(PodcastCatalog.slug(MediaVocabulary.developers[developer]).replacingDashes).app\(i)"
        let gameCenter = dice.chance(0.1)
        let devices = Array(MediaVocabulary.devices.prefix(dice.int(in: 3...MediaVocabulary.devices.count)))
        let languages = Array(MediaVocabulary.languages.prefix(dice.int(in: 1...MediaVocabulary.languages.count)))
        let description = (0..<dice.int(in: 2...5)).map { _ in dice.pick(MediaVocabulary.descriptionParts) }
            .joined(separator: "\n\n") + "\n• \(name) — made by \(MediaVocabulary.developers[developer])."
        return Fixed(name: name, developer: developer, genres: genres, rating: rating, advisories: advisories,
                     release: release, bundle: bundle, gameCenter: gameCenter, sellerURL: dice.chance(0.8),
                     features: gameCenter ? ["gameCenter", "iosUniversal"] : (dice.chance(0.8) ? ["iosUniversal"] : []),
                     devices: devices, languages: languages, description: description,
                     minimumOS: "\(dice.int(in: 9...15)).0", vpp: dice.chance(0.9))
    }

    struct Version: Equatable {
        var number: String
        var date: SimDate
        var notes: String
        var size: Int
        var currentRating: Double?
        var currentCount: Int?
    }

    func version(_ i: Int, history: Timeline.History, fixed: Fixed) -> Version {
        let v = history.versions[Group.version.rawValue]
        let changed = history.lastChange[Group.version.rawValue]
        return ITunesText.draw(seed, Self.tag, i, Purpose.version.rawValue, version: v) { dice in
            let date = changed.map { SimDate(day: ITunesText.epoch.day + $0 - 1, seconds: dice.below(86_400)) }
                ?? SimDate(day: fixed.release.day + dice.int(in: 0...400), seconds: dice.below(86_400))
            let hasCurrent = dice.chance(0.8)
            return Version(number: "\(dice.int(in: 1...14)).\(dice.int(in: 0...60)).\(dice.int(in: 0...9))", date: date,
                           notes: dice.pick(MediaVocabulary.releaseNotes), size: dice.int(in: 8_000_000...900_000_000),
                           currentRating: hasCurrent ? Double(dice.int(in: 2...10)) / 2 : nil,
                           currentCount: hasCurrent ? dice.int(in: 1...5_000) : nil)
        }
    }

    func priceCents(_ i: Int, version: Int) -> Int {
        ITunesText.draw(seed, Self.tag, i, Purpose.price.rawValue, version: version) { dice in
            dice.chance(0.7) ? 0 : dice.int(in: 0...9) * 100 + 99
        }
    }

    struct Ratings: Equatable {
        var average: Double
        var count: Int
    }

    func ratings(_ i: Int, version: Int) -> Ratings {
        ITunesText.draw(seed, Self.tag, i, Purpose.rating.rawValue, version: version) { dice in
            Ratings(average: Double(dice.int(in: 20...50)) / 10, count: dice.int(in: 1...900_000))
        }
    }

    func screenshots(_ i: Int, count: Int, size: String) -> [JSONOut] {
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.screenshots.rawValue, UInt64(size.utf8.count)))
        return (0..<count).map { _ in
            let file = "mzl.\(dice.hex(8)).jpg"
            let art = ThumbArtwork(folder: "Purple", dice: &dice, file: file)
            return .string(art.url(dimensions: size))
        }
    }

    func row(_ i: Int, night: Int) -> JSONObject {
        let f = fixed(i)
        let history = timeline.history(i, night: night)
        let v = version(i, history: history, fixed: f)
        let price = priceCents(i, version: history.versions[Group.price.rawValue])
        let rating = ratings(i, version: history.versions[Group.rating.rawValue])
        let marks = faults.marks(tag: Self.tag, index: i)
        let shown = faults.title(f.name, marks: marks, tag: Self.tag, index: i).json
        let developer = MediaVocabulary.developers[f.developer]
        let developerID = developerIDs.id(for: f.developer)
        var dice = Dice(StableRandom.hash(seed, Self.tag, UInt64(i), Purpose.screenshots.rawValue))
        let icon = ThumbArtwork(folder: "Purple", dice: &dice, file: "source")
        var row = JSONObject()
        row.add("isGameCenterEnabled", .bool(f.gameCenter))
        row.add("screenshotUrls", .array(screenshots(i, count: 1 + i % 8, size: "392x696")), breakBefore: true)
        row.add("ipadScreenshotUrls", .array(screenshots(i, count: i % 6, size: "552x414")), breakBefore: true)
        row.add("appletvScreenshotUrls", .array([]))
        row.add("artworkUrl60", icon.url(60))
        row.add("artworkUrl512", icon.url(512))
        row.add("artworkUrl100", icon.url(100))
        row.add("artistViewUrl", "https://apps.apple.com/us/developer/\(PodcastCatalog.slug(developer))/id\(developerID)?uo=4")
        row.add("supportedDevices", .array(f.devices.map { .string($0) }), breakBefore: true)
        row.add("advisories", .array(f.advisories.map { .string($0) }), breakBefore: true)
        row.add("kind", "software")
        row.add("features", .array(f.features.map { .string($0) }))
        row.add("trackCensoredName", shown)
        row.add("languageCodesISO2A", .array(f.languages.map { .string($0) }))
        // The real service sends the size as a string.
        row.add("fileSizeBytes", String(v.size))
        if f.sellerURL { row.add("sellerUrl", "http://www.\(PodcastCatalog.slug(developer)).example") }
        row.add("contentAdvisoryRating", f.rating)
        if let current = v.currentRating, let count = v.currentCount {
            row.add("averageUserRatingForCurrentVersion", .double(current))
            row.add("userRatingCountForCurrentVersion", count)
        }
        row.add("trackViewUrl", "https://apps.apple.com/us/app/\(PodcastCatalog.slug(f.name))/id\(ids.id(for: i))?uo=4")
        row.add("trackContentRating", f.rating)
        row.add("trackId", ids.id(for: i))
        row.add("trackName", shown)
        row.add("genreIds", .array(f.genres.map { .string($0.id) }))
        row.add("formattedPrice", ITunesText.formattedPrice(price))
        row.add("releaseNotes", .string(v.notes), breakBefore: true)
        row.add("primaryGenreName", f.genres[0].name)
        row.add("isVppDeviceBasedLicensingEnabled", .bool(f.vpp))
        row.add("releaseDate", f.release.iso8601)
        row.add("minimumOsVersion", f.minimumOS)
        row.add("sellerName", developer)
        row.add("primaryGenreId", Int(f.genres[0].id) ?? 36)
        row.add("currency", "USD")
        row.add("version", v.number)
        row.add("wrapperType", "software")
        row.add("description", .string(faults.huge(f.description, marks: marks)), breakBefore: true)
        row.add("artistId", developerID)
        row.add("artistName", developer)
        row.add("genres", .array(f.genres.map { .string($0.name) }))
        row.add("price", ITunesText.price(price))
        row.add("currentVersionReleaseDate", v.date.iso8601)
        row.add("bundleId", f.bundle)
        row.add("averageUserRating", .double(rating.average))
        row.add("userRatingCount", rating.count)
        return row
    }

    func searchWords(_ i: Int, night: Int) -> [String] {
        let f = fixed(i)
        return PodcastCatalog.words(f.name) + PodcastCatalog.words(MediaVocabulary.developers[f.developer])
            + PodcastCatalog.words(f.genres[0].name)
    }

    func isExplicit(_ i: Int, night: Int) -> Bool { fixed(i).rating == "17+" }
    func genreIDs(_ i: Int, night: Int) -> [String] { [fixed(i).genres[0].id, "36"] }
    func priceCents(_ i: Int, night: Int) -> Int {
        priceCents(i, version: timeline.history(i, night: night).versions[Group.price.rawValue])
    }
}

extension String {
    /// `yelp-inc` → `yelpinc`, for bundle ids.
    fileprivate var replacingDashes: String { filter { $0 != "-" } }
}
