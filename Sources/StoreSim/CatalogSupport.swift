/// What World needs from a catalog of one entity to search it, look it up,
/// chart it and compute its exact truth. Indices are the catalog's own; keys
/// are the public ids rows are keyed by.
protocol ItemCatalog: Sendable {
    /// Separates the catalog's random streams and its content-fault draws.
    var tag: UInt64 { get }
    /// Number of indices ever born up to `night`.
    func indexCount(through night: Int) -> Int
    func isAlive(_ i: Int, night: Int) -> Bool
    /// True when the served row of `i` differs between `night − 1` and `night` (both alive).
    func changes(_ i: Int, on night: Int) -> Bool
    func key(_ i: Int) -> String
    func index(forKey key: String) -> Int?
    /// The Search/Lookup row, for the US storefront.
    func row(_ i: Int, night: Int) -> JSONObject
    /// Lower-cased words Search matches (from clean names, never from fault decorations).
    func searchWords(_ i: Int, night: Int) -> [String]
    /// Excluded by `explicit=No`.
    func isExplicit(_ i: Int, night: Int) -> Bool
    /// The item's genre ids, most specific first, ending with its tree's root.
    func genreIDs(_ i: Int, night: Int) -> [String]
    /// The item's price in cents on `night` (0 = free), for free/paid charts.
    func priceCents(_ i: Int, night: Int) -> Int
    /// Indices alive on `night`, ascending.
    func aliveIndices(night: Int) -> [Int]
}

extension ItemCatalog {
    func aliveIndices(night: Int) -> [Int] {
        (0..<indexCount(through: night)).filter { isAlive($0, night: night) }
    }

    func changes(_ i: Int, on night: Int) -> Bool { false }
}

/// Catalogs whose life is one ``Timeline`` per index.
protocol TimelineCatalog: ItemCatalog {
    var timeline: Timeline { get }
}

extension TimelineCatalog {
    func indexCount(through night: Int) -> Int { timeline.indexCount(through: night) }
    func isAlive(_ i: Int, night: Int) -> Bool { timeline.isAlive(i, night: night) }
    func changes(_ i: Int, on night: Int) -> Bool { timeline.changes(i, on: night) }
    func aliveIndices(night: Int) -> [Int] { timeline.aliveIndices(night: night) }
}

/// A catalog whose keys are its indices run through an ``IDScrambler``:
/// the key and its inverse come from the scrambler alone.
protocol ScrambledIDCatalog: ItemCatalog {
    var ids: IDScrambler { get }
}

extension ScrambledIDCatalog {
    func key(_ i: Int) -> String { String(ids.id(for: i)) }

    func index(forKey key: String) -> Int? {
        guard let id = Int(key) else { return nil }
        return ids.index(for: id)
    }
}

/// Small shared pieces of iTunes rows.
enum ITunesText {
    /// The calendar day of night 1 in every iTunes catalog.
    static var epoch: SimDate { PodcastCatalog.epoch }

    /// `7.99`, `0.00`, `-1.00`: iTunes' raw prices have two decimals.
    static func price(_ cents: Int) -> JSONOut {
        .literal(priceText(cents))
    }

    static func priceText(_ cents: Int) -> String {
        let sign = cents < 0 ? "-" : ""
        let magnitude = abs(cents)
        let fraction = magnitude % 100
        return "\(sign)\(magnitude / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }

    /// `$2.99` or `Free`.
    static func formattedPrice(_ cents: Int) -> String {
        cents == 0 ? "Free" : "$" + priceText(cents)
    }

    /// `%@` in `form` replaced by `word`.
    static func fill(_ form: String, _ word: String) -> String {
        form.split(separator: "%@", omittingEmptySubsequences: false).joined(separator: word)
    }

    /// The release moment of an item born on `born`: new items are released
    /// the day they appear, night-1 items over the years before.
    static func releaseDate(born: Int, dice: inout Dice) -> SimDate {
        let hour = dice.pick([7, 8, 12])
        if born <= 1 { return SimDate(day: epoch.day - dice.int(in: 30...6_000), seconds: hour * 3600) }
        return SimDate(day: epoch.day + born - 1, seconds: hour * 3600)
    }

    /// A versioned value as a plain draw: `versioned` with a per-purpose seed.
    static func draw<T: Equatable>(_ seed: UInt64, _ tag: UInt64, _ i: Int, _ purpose: UInt64, version: Int,
                                   _ make: (inout Dice) -> T) -> T {
        versioned(version) { v, attempt in
            var dice = Dice(StableRandom.hash(seed, tag, UInt64(i), purpose, UInt64(v), UInt64(attempt)))
            return make(&dice)
        }
    }
}

/// A modern mzstatic "thumb" artwork URL: one image, any size.
struct ThumbArtwork: Equatable, Sendable {
    var host: Int
    var folder: String
    var uuid: String
    var file: String

    init(folder: String, dice: inout Dice, file: String? = nil) {
        host = dice.int(in: 1...5)
        self.folder = "\(folder)\(dice.int(in: 100...130))"
        let hex = dice.hex(32)
        uuid = "\(hex.prefix(8))-\(hex.dropFirst(8).prefix(4))-\(hex.dropFirst(12).prefix(4))-\(hex.dropFirst(16).prefix(4))-\(hex.dropFirst(20))"
        self.file = file ?? "\(dice.int(in: 100_000_000_000...999_999_999_999)).jpg"
    }

    func url(_ size: Int) -> String { url(dimensions: "\(size)x\(size)") }

    /// `dimensions` like `392x696`.
    func url(dimensions: String) -> String {
        let a = uuid.prefix(2), b = uuid.dropFirst(2).prefix(2), c = uuid.dropFirst(4).prefix(2)
        return "https://is\(host)-ssl.mzstatic.com/image/thumb/\(folder)/v4/\(a)/\(b)/\(c)/\(uuid)/\(file)/\(dimensions)bb.jpg"
    }
}

/// An iTunes storefront: the `country` parameter of Search, Lookup and charts.
struct Storefront: Sendable, Equatable {
    let code: String
    let iso3: String
    let currency: String

    static let all: [Storefront] = [
        Storefront(code: "us", iso3: "USA", currency: "USD"), Storefront(code: "gb", iso3: "GBR", currency: "GBP"),
        Storefront(code: "ca", iso3: "CAN", currency: "CAD"), Storefront(code: "au", iso3: "AUS", currency: "AUD"),
        Storefront(code: "de", iso3: "DEU", currency: "EUR"), Storefront(code: "fr", iso3: "FRA", currency: "EUR"),
        Storefront(code: "jp", iso3: "JPN", currency: "JPY"), Storefront(code: "kr", iso3: "KOR", currency: "KRW"),
        Storefront(code: "br", iso3: "BRA", currency: "BRL"), Storefront(code: "in", iso3: "IND", currency: "INR"),
    ]

    static let us = all[0]

    /// nil for codes the simulator does not serve (the real service answers 400 to those).
    static func named(_ code: String?) -> Storefront? {
        guard let code else { return us }
        let lower = code.lowercased()
        return all.first { $0.code == lower }
    }

    var isUS: Bool { code == "us" }

    /// Not everything is sold everywhere: outside the US a seeded 75% of each catalog is.
    func sells(tag: UInt64, index: Int, seed: UInt64) -> Bool {
        if isUS { return true }
        var code: UInt64 = 0
        for byte in self.code.utf8 { code = code << 8 | UInt64(byte) }
        return StableRandom.chance(0.75, StableRandom.hash(seed, tag, UInt64(index), 0x5354_4F52, code))
    }

    /// A US row as this storefront serves it: country, currency and the store
    /// paths in URLs (`/us/` → `/gb/`). Prices keep their numbers.
    func localize(_ row: JSONObject) -> JSONObject {
        if isUS { return row }
        var row = row
        row.set("country", .string(iso3))
        row.set("currency", .string(currency))
        let from = "apple.com/us/", to = "apple.com/\(code)/"
        row.mapStrings { text in
            text.contains(from) ? text.split(separator: from, omittingEmptySubsequences: false).joined(separator: to) : text
        }
        return row
    }
}
