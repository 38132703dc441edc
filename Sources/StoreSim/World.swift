import Foundation
import Synchronization

/// The simulated world: every podcast and marketplace product on every night,
/// derived on demand from the config (nothing per record is stored, so a
/// world of millions of records costs no memory until it is asked about).
///
/// Entities and their keys: `"podcast"` (key: the trackId as a decimal
/// string) and `"listing"` (a marketplace product; key: its id).
public struct World: Sendable {
    /// The configuration as applied: out-of-range values are clamped (counts
    /// to 0...500 000 000, rates to 0...1).
    public let config: SimulatorConfig
    /// The marketplace's page-key style, from the config or else from the seed.
    public let pageKeyEra: PageKeyEra

    /// The entity names this world knows.
    public static let entities = ["podcast", "listing"]

    let podcasts: PodcastCatalog
    let products: ProductCatalog
    let cache = WorldCache()

    /// The origin of every podcast's `feedUrl`. A fixed name, not the
    /// server's address: the port changes with every start, and a `feedUrl`
    /// that moved would make every podcast look changed on every run. `.test`
    /// is reserved (RFC 2606), so it can never reach a real host; a crawler
    /// that wants the feeds maps this host to the server's address.
    public static let defaultBaseURL = "http://feeds.storesim.test"

    public init(config: SimulatorConfig) {
        // Out-of-range settings are clamped rather than trapped: a job file
        // with `removed: 1.5` should get "everything goes", not a crash.
        var config = config
        // Podcast ids are a bijection on 2^30 values, so the index space must stay below that.
        config.podcastCount = min(max(0, config.podcastCount), 500_000_000)
        config.productCount = min(max(0, config.productCount), 500_000_000)
        config.churn.changed = Self.clampRate(config.churn.changed)
        config.churn.added = Self.clampRate(config.churn.added)
        config.churn.removed = Self.clampRate(config.churn.removed)
        self.config = config
        pageKeyEra = config.pageKeyEra
            ?? (StableRandom.hash(config.seed, 0x4552_41) & 1 == 0 ? .snake : .camel)
        podcasts = PodcastCatalog(seed: config.seed, count: config.podcastCount, churn: config.churn)
        products = ProductCatalog(seed: config.seed, count: config.productCount, churn: config.churn, era: pageKeyEra)
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
    /// empty diff.
    public func diff(entity: String, night: Int) -> WorldDiff {
        guard let timeline = timeline(entity), night >= 1 else { return WorldDiff() }
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

    /// Keys of the records of `entity` alive on `night`.
    public func aliveKeys(entity: String, night: Int) -> Set<String> {
        guard timeline(entity) != nil else { return [] }
        return Set(aliveIndices(entity: entity, night: night).map { key(entity, $0) })
    }

    /// Keys alive on `night` in the order the simulator serves them: podcasts
    /// by relevance (index order, as Search returns them), listings newest first
    /// (as the product list returns them).
    public func orderedKeys(entity: String, night: Int) -> [String] {
        let alive = aliveIndices(entity: entity, night: night)
        switch entity {
        case "podcast": return alive.map { podcasts.key($0) }
        case "listing": return alive.reversed().map { products.key($0) }
        default: return []
        }
    }

    /// Keys of every podcast a Search for `term` returns on `night`, across all
    /// pages, in result order (the whole result list, not one page).
    public func searchResultKeys(term: String, night: Int) -> [String] {
        podcastsMatching(Self.searchWords(term), night: night).map { podcasts.key($0) }
    }

    /// Ground truth for a crawl that only sees Search results: the podcasts
    /// returned for any of `terms` on `night` against those on `night − 1`.
    /// A podcast can enter or leave the results while staying alive (a rename
    /// or a genre change moves it between terms); that counts as added or
    /// removed here, because that is what such a crawl observes.
    public func searchDiff(terms: [String], night: Int) -> WorldDiff {
        guard night >= 1 else { return WorldDiff() }
        var before = Set<Int>(), after = Set<Int>()
        for term in terms {
            let words = Self.searchWords(term)
            after.formUnion(podcastsMatching(words, night: night))
            if night > 1 { before.formUnion(podcastsMatching(words, night: night - 1)) }
        }
        var diff = WorldDiff()
        for i in after.subtracting(before) { diff.added.insert(podcasts.key(i)) }
        for i in before.subtracting(after) { diff.removed.insert(podcasts.key(i)) }
        for i in after.intersection(before) where podcasts.timeline.changes(i, on: night) {
            diff.changed.insert(podcasts.key(i))
        }
        return diff
    }

    /// The words of a Search term: split on whitespace, lower-cased.
    static func searchWords(_ term: String) -> [String] {
        term.split(whereSeparator: { $0.isWhitespace }).map { $0.lowercased() }
    }

    /// The record's row exactly as the simulator serves it on `night` (the
    /// service's byte layout and key order), or nil when it is not alive then.
    /// Podcasts: the Search result row, with `feedUrl` under `baseURL`;
    /// listings: the product list row.
    public func rowJSON(entity: String, key: String, night: Int, baseURL: URL? = nil) -> String? {
        guard let row = row(entity: entity, key: key, night: night, baseURL: baseURL) else { return nil }
        return JSONWriter.string(.object(row), layout: entity == "podcast" ? .itunes : .compact)
    }

    func row(entity: String, key: String, night: Int, baseURL: URL?) -> JSONObject? {
        switch entity {
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
        let normalized = Array(Set(words)).sorted()
        guard !normalized.isEmpty else { return [] }
        return cache.search(terms: normalized.joined(separator: " "), night: night) {
            aliveIndices(entity: "podcast", night: night).filter { i in
                let podcastWords = podcasts.searchWords(i, night: night)
                return normalized.contains { podcastWords.contains($0) }
            }
        }
    }
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
