import Foundation
import Synchronization

/// The simulated world: every podcast, episode, song, album, movie, app,
/// audiobook, e-book, genre, chart and marketplace product on every night,
/// derived on demand from the config (nothing per record is stored, so a
/// world of millions of records costs no memory until it is asked about).
///
/// Entities and their keys (decimal strings unless said otherwise):
/// `"podcast"` (trackId), `"episode"` (trackId of a podcast episode),
/// `"song"` (trackId), `"album"` (collectionId), `"movie"` (trackId),
/// `"app"` (trackId), `"audiobook"` (collectionId), `"ebook"` (trackId),
/// `"genre"` (genre id), `"chart-entry"` (`chart|genre|rank`, see
/// ``chartDiff(chart:genre:limit:night:)``) and `"listing"` (a marketplace
/// product; key: its id). Truth is for the US storefront.
public struct World: Sendable {
    /// The configuration as applied: out-of-range values are clamped (counts
    /// to 0...500 000 000, rates to 0...1).
    public let config: SimulatorConfig
    /// The marketplace's page-key style, from the config or else from the seed.
    public let pageKeyEra: PageKeyEra

    /// The entity names this world knows.
    public static let entities = ["podcast", "listing", "episode", "song", "album", "movie", "app", "audiobook", "ebook",
                                  "genre", "chart-entry"]

    /// The entities Search and Lookup serve from a catalog (one row per key).
    static let catalogEntities = ["podcast", "song", "album", "movie", "app", "audiobook", "ebook"]

    let podcasts: PodcastCatalog
    let products: ProductCatalog
    let music: MusicCatalog
    let movies: MovieCatalog
    let apps: AppCatalog
    let audiobooks: AudiobookCatalog
    let ebooks: EbookCatalog
    let genres: GenreTrees
    let cache = WorldCache()

    /// The origin of every podcast's `feedUrl`. A fixed name, not the
    /// server's address: the port changes with every start, and a `feedUrl`
    /// that moved would make every podcast look changed on every run. `.test`
    /// is reserved (RFC 2606), so it can never reach a real host; a crawler
    /// that wants the feeds maps this host to the server's address.
    public static let defaultBaseURL = "http://feeds.storesim.test"

    /// The origin of the iTunes URLs inside bodies that point back at the
    /// simulator (the genre trees' `rssUrls` and `chartUrls`, the legacy
    /// charts' self links). Like ``defaultBaseURL`` it never carries the
    /// server's port; a client maps every `*.storesim.test` host to the
    /// server's ``SimulatorServer/baseURL`` (every route answers on any host).
    public static let itunesBaseURL = "http://itunes.storesim.test"

    /// The origin of the marketing-tools (RSS v2) feeds' own URLs.
    public static let rssBaseURL = "http://rss.storesim.test"

    public init(config: SimulatorConfig) {
        // Out-of-range settings are clamped rather than trapped: a job file
        // with `removed: 1.5` should get "everything goes", not a crash.
        var config = config
        // Podcast ids are a bijection on 2^30 values, so the index space must stay below that.
        config.podcastCount = min(max(0, config.podcastCount), 500_000_000)
        config.productCount = min(max(0, config.productCount), 500_000_000)
        // Each id space holds a few times its night-1 size, so years of additions fit.
        config.songCount = min(max(0, config.songCount), 100_000_000)
        config.movieCount = min(max(0, config.movieCount), 16_000_000)
        config.appCount = min(max(0, config.appCount), 32_000_000)
        config.audiobookCount = min(max(0, config.audiobookCount), 16_000_000)
        config.ebookCount = min(max(0, config.ebookCount), 32_000_000)
        config.churn.changed = Self.clampRate(config.churn.changed)
        config.churn.added = Self.clampRate(config.churn.added)
        config.churn.removed = Self.clampRate(config.churn.removed)
        self.config = config
        pageKeyEra = config.pageKeyEra
            ?? (StableRandom.hash(config.seed, 0x4552_41) & 1 == 0 ? .snake : .camel)
        let faults = ContentFaults(seed: config.seed, plan: config.faults)
        podcasts = PodcastCatalog(seed: config.seed, count: config.podcastCount, churn: config.churn, faults: faults)
        products = ProductCatalog(seed: config.seed, count: config.productCount, churn: config.churn, era: pageKeyEra,
                                  faults: faults)
        music = MusicCatalog(seed: config.seed, songCount: config.songCount, churn: config.churn, faults: faults)
        movies = MovieCatalog(seed: config.seed, count: config.movieCount, churn: config.churn, faults: faults)
        apps = AppCatalog(seed: config.seed, count: config.appCount, churn: config.churn, faults: faults)
        audiobooks = AudiobookCatalog(seed: config.seed, count: config.audiobookCount, churn: config.churn, faults: faults)
        ebooks = EbookCatalog(seed: config.seed, count: config.ebookCount, churn: config.churn, faults: faults)
        genres = GenreTrees(seed: config.seed, churn: config.churn)
    }

    /// The catalog Search and Lookup serve `entity` from.
    func itemCatalog(_ entity: String) -> (any ItemCatalog)? {
        switch entity {
        case "podcast": podcasts
        case "song": SongCatalog(music: music)
        case "album": AlbumCatalog(music: music)
        case "movie": movies
        case "app": apps
        case "audiobook": audiobooks
        case "ebook": ebooks
        default: nil
        }
    }

    private static func clampRate(_ rate: Double) -> Double {
        rate.isFinite ? min(max(rate, 0), 1) : 0
    }

    func timeline(_ entity: String) -> Timeline? {
        switch entity {
        case "podcast": podcasts.timeline
        case "listing": products.timeline
        default: nil
        }
    }

    private func key(_ entity: String, _ i: Int) -> String {
        entity == "podcast" ? podcasts.key(i) : products.key(i)
    }

    /// Ground truth for night `night` against night `night − 1`; on night 1
    /// everything alive is added. Unknown entities and nights below 1 give an
    /// empty diff. For `"chart-entry"` the truth covers every chart that can
    /// have entries, without a genre, at 100 entries (keys `chart||rank`).
    public func diff(entity: String, night: Int) -> WorldDiff {
        guard night >= 1 else { return WorldDiff() }
        switch entity {
        case "episode": return episodeDiff(night: night)
        case "genre": return genres.diff(night: night)
        case "chart-entry":
            var diff = WorldDiff()
            for spec in ChartSpec.truthCharts {
                let one = chartDiff(chart: spec.name, night: night)
                diff.added.formUnion(one.added)
                diff.changed.formUnion(one.changed)
                diff.removed.formUnion(one.removed)
            }
            return diff
        default: break
        }
        if let timeline = timeline(entity) {
            var diff = WorldDiff()
            for i in 0..<timeline.indexCount(through: night) {
                let before = timeline.isAlive(i, night: night - 1)
                let now = timeline.isAlive(i, night: night)
                if now && !before {
                    diff.added.insert(key(entity, i))
                } else if before && !now {
                    diff.removed.insert(key(entity, i))
                } else if before && now && timeline.changes(i, on: night) {
                    diff.changed.insert(key(entity, i))
                }
            }
            return diff
        }
        guard let catalog = itemCatalog(entity) else { return WorldDiff() }
        var diff = WorldDiff()
        for i in 0..<catalog.indexCount(through: night) {
            let before = catalog.isAlive(i, night: night - 1)
            let now = catalog.isAlive(i, night: night)
            if now && !before {
                diff.added.insert(catalog.key(i))
            } else if before && !now {
                diff.removed.insert(catalog.key(i))
            } else if before && now && catalog.changes(i, on: night) {
                diff.changed.insert(catalog.key(i))
            }
        }
        return diff
    }

    /// Episodes enter the window when published (or when their podcast is
    /// born), leave it when pushed out by newer ones or with their podcast,
    /// and change when the podcast's title, genre or artwork does.
    private func episodeDiff(night: Int) -> WorldDiff {
        var diff = WorldDiff()
        for i in 0..<podcasts.timeline.indexCount(through: night) {
            let before = night > 1 ? podcasts.episodeNumbers(i, night: night - 1) : nil
            let after = podcasts.episodeNumbers(i, night: night)
            if before == nil && after == nil { continue }
            let old = before.map { Set($0) } ?? []
            let new = after.map { Set($0) } ?? []
            for n in new.subtracting(old) { diff.added.insert(podcasts.episodeKey(podcast: i, number: n)) }
            for n in old.subtracting(new) { diff.removed.insert(podcasts.episodeKey(podcast: i, number: n)) }
            if podcasts.timeline.changes(i, on: night),
               podcasts.timeline.groups(i, changingOn: night) & PodcastCatalog.episodeVisibleGroups != 0 {
                for n in new.intersection(old) { diff.changed.insert(podcasts.episodeKey(podcast: i, number: n)) }
            }
        }
        return diff
    }

    /// Keys of the records of `entity` alive on `night`.
    public func aliveKeys(entity: String, night: Int) -> Set<String> {
        Set(orderedKeys(entity: entity, night: night))
    }

    /// Keys alive on `night` in the order the simulator serves them: podcasts
    /// by relevance (index order, as Search returns them), listings newest first
    /// (as the product list returns them), episodes podcast by podcast newest
    /// first (as Lookup returns them), charts entries by chart then rank, other
    /// catalogs in index order, genres by id.
    public func orderedKeys(entity: String, night: Int) -> [String] {
        guard night >= 1 else { return [] }
        switch entity {
        case "podcast": return aliveIndices(entity: entity, night: night).map { podcasts.key($0) }
        case "listing": return aliveIndices(entity: entity, night: night).reversed().map { products.key($0) }
        case "episode":
            return aliveIndices(entity: "podcast", night: night).flatMap { i in
                (podcasts.episodeNumbers(i, night: night).map { Array($0.reversed()) } ?? [])
                    .map { podcasts.episodeKey(podcast: i, number: $0) }
            }
        case "genre": return genres.ids(night: night)
        case "chart-entry":
            return ChartSpec.truthCharts.flatMap { spec in
                chartKeys(chart: spec.name, night: night).indices.map { "\(spec.name)||\($0 + 1)" }
            }
        default:
            guard let catalog = itemCatalog(entity) else { return [] }
            return aliveIndices(catalog: catalog, night: night).map { catalog.key($0) }
        }
    }

    /// Keys of every podcast a Search for `term` returns on `night`, across all
    /// pages, in result order (the whole result list, not one page).
    public func searchResultKeys(term: String, night: Int) -> [String] {
        searchResultKeys(term: term, media: "podcast", night: night)
    }

    /// Ground truth for a crawl that only sees Search results: the podcasts
    /// returned for any of `terms` on `night` against those on `night − 1`.
    /// A podcast can enter or leave the results while staying alive (a rename
    /// or a genre change moves it between terms); that counts as added or
    /// removed here, because that is what such a crawl observes.
    public func searchDiff(terms: [String], night: Int) -> WorldDiff {
        searchDiff(terms: terms, media: "podcast", night: night)
    }

    /// The words of a Search term: split on whitespace, lower-cased.
    static func searchWords(_ term: String) -> [String] {
        term.split(whereSeparator: { $0.isWhitespace }).map { $0.lowercased() }
    }

    /// The record's row exactly as the simulator serves it on `night` (the
    /// service's byte layout and key order), or nil when it is not alive then.
    /// Podcasts: the Search result row, with `feedUrl` under `baseURL`;
    /// other catalogs: their Search/Lookup row; episodes: their Lookup row;
    /// genres: the node without `subgenres`; chart entries:
    /// `{"chart", "genre", "rank", "id"}`; listings: the product list row.
    /// Content faults are included (invalid UTF-8 shows as U+FFFD).
    public func rowJSON(entity: String, key: String, night: Int, baseURL: URL? = nil) -> String? {
        guard let row = row(entity: entity, key: key, night: night, baseURL: baseURL) else { return nil }
        let layout: JSONLayout = Self.catalogEntities.contains(entity) || entity == "episode" ? .itunes : .compact
        return JSONWriter.string(.object(row), layout: layout)
    }

    func row(entity: String, key: String, night: Int, baseURL: URL?) -> JSONObject? {
        switch entity {
        case "episode":
            guard let (i, n) = podcasts.episode(forKey: key), let numbers = podcasts.episodeNumbers(i, night: night),
                  numbers.contains(n) else { return nil }
            return podcasts.episodeRow(i, number: n, show: podcasts.show(i, night: night))
        case "genre":
            return genres.record(key, night: night)
        case "chart-entry":
            let parts = key.split(separator: "|", omittingEmptySubsequences: false).map(String.init)
            guard parts.count == 3, let rank = Int(parts[2]), rank >= 1 else { return nil }
            let keys = chartKeys(chart: parts[0], genre: parts[1].isEmpty ? nil : parts[1], night: night)
            guard rank <= keys.count else { return nil }
            var entry = JSONObject()
            entry.add("chart", parts[0])
            entry.add("genre", parts[1])
            entry.add("rank", rank)
            entry.add("id", keys[rank - 1])
            return entry
        case "song", "album", "movie", "app", "audiobook", "ebook":
            guard let catalog = itemCatalog(entity), let i = catalog.index(forKey: key),
                  catalog.isAlive(i, night: night) else { return nil }
            return catalog.row(i, night: night)
        case "podcast":
            guard let i = podcasts.index(forKey: key), podcasts.timeline.isAlive(i, night: night) else { return nil }
            return podcasts.row(i, night: night, baseURL: Self.origin(baseURL))
        case "listing":
            guard let i = products.index(forKey: key), products.timeline.isAlive(i, night: night) else { return nil }
            return products.listRow(i, night: night)
        default:
            return nil
        }
    }

    /// `scheme://host:port` without a trailing slash.
    static func origin(_ url: URL?) -> String {
        guard let url else { return defaultBaseURL }
        var text = url.absoluteString
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }

    // MARK: Cached listings (shared by every request of a night)

    /// Indices alive on `night`, ascending.
    func aliveIndices(entity: String, night: Int) -> [Int] {
        guard let timeline = timeline(entity) else { return [] }
        return cache.alive(entity: entity, night: night) { timeline.aliveIndices(night: night) }
    }

    /// Podcasts (indices, ascending = relevance order) matching any of `words`
    /// (already lower-cased) on `night`.
    func podcastsMatching(_ words: [String], night: Int) -> [Int] {
        searchHits(entities: ["podcast"], words: words, night: night).map(\.index)
    }
}

extension PodcastCatalog: TimelineCatalog {
    var tag: UInt64 { Self.tag }

    func row(_ i: Int, night: Int) -> JSONObject { row(i, night: night, baseURL: World.defaultBaseURL) }

    func isExplicit(_ i: Int, night: Int) -> Bool { fixed(i).explicitness == "explicit" }

    func genreIDs(_ i: Int, night: Int) -> [String] {
        let genre = genre(i, version: timeline.history(i, night: night).versions[Group.genre.rawValue])
        return [genre.id] + (genre.parent.map { [$0.id] } ?? []) + ["26"]
    }

    func priceCents(_ i: Int, night: Int) -> Int { 0 }
}

/// Small caches of the expensive per-night listings, so paging through a
/// large world does not recompute every record for every page. Values are
/// computed outside the lock (two racing requests may both compute; both get
/// the same answer).
final class WorldCache: Sendable {
    private struct Entry<Value> {
        var key: String
        var value: Value
    }

    private let alive = Mutex<[Entry<[Int]>]>([])
    private let searches = Mutex<[Entry<[Int]>]>([])
    /// `resource#night` → (body hash, first night of that body's current run).
    private let versions = Mutex<[String: (hash: String, since: Int)]>([:])
    private static let versionLimit = 8_192

    func version(_ resource: String, night: Int) -> (hash: String, since: Int)? {
        versions.withLock { $0["\(resource)#\(night)"] }
    }

    func storeVersion(_ resource: String, night: Int, _ value: (hash: String, since: Int)) {
        versions.withLock { table in
            // A rough bound is enough: the memo only saves work, it never decides an answer.
            if table.count >= Self.versionLimit { table.removeAll(keepingCapacity: true) }
            table["\(resource)#\(night)"] = value
        }
    }
    private static let aliveLimit = 4
    private static let searchLimit = 32

    func alive(entity: String, night: Int, compute: () -> [Int]) -> [Int] {
        Self.lookup(alive, key: "\(entity)#\(night)", limit: Self.aliveLimit, compute: compute)
    }

    func search(terms: String, night: Int, compute: () -> [Int]) -> [Int] {
        Self.lookup(searches, key: "\(night)#\(terms)", limit: Self.searchLimit, compute: compute)
    }

    private static func lookup(_ store: borrowing Mutex<[Entry<[Int]>]>, key: String, limit: Int, compute: () -> [Int]) -> [Int] {
        if let hit = store.withLock({ entries -> [Int]? in
            guard let n = entries.firstIndex(where: { $0.key == key }) else { return nil }
            // Most recently used last.
            let entry = entries.remove(at: n)
            entries.append(entry)
            return entry.value
        }) {
            return hit
        }
        let value = compute()
        store.withLock { entries in
            if !entries.contains(where: { $0.key == key }) {
                entries.append(Entry(key: key, value: value))
                if entries.count > limit { entries.removeFirst(entries.count - limit) }
            }
        }
        return value
    }
}
