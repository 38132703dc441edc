import Foundation

/// A nightly job, as read from a `jobs/*.yml` file. Relative paths in the file
/// are resolved against the job file's folder, so cron can run it from anywhere.
public struct JobSpec: Sendable, Equatable {
    public var name: String
    /// Where the job file was read from (for messages).
    public var file: String
    /// The internal snapshot database.
    public var storePath: String
    /// The folder exports are written to.
    public var outputDirectory: String
    /// When set, the run starts the embedded simulator and points every source
    /// that has no explicit `baseURL` at it.
    public var simulator: SimulatorSpec?
    public var http: HTTPSettings
    public var sources: [SourceSpec]
    public var exports: [ExportSpec]

    public init(
        name: String, file: String, storePath: String, outputDirectory: String,
        simulator: SimulatorSpec? = nil, http: HTTPSettings = .init(),
        sources: [SourceSpec], exports: [ExportSpec]
    ) {
        self.name = name
        self.file = file
        self.storePath = storePath
        self.outputDirectory = outputDirectory
        self.simulator = simulator
        self.http = http
        self.sources = sources
        self.exports = exports
    }
}

/// The embedded simulator's world.
public struct SimulatorSpec: Sendable, Equatable {
    public var seed: UInt64
    public var podcasts: Int
    public var products: Int
    /// Fractions per night.
    public var changed: Double
    public var added: Double
    public var removed: Double
    /// Fault specs (`NAME[:VALUE]`, see `storesync simulate --help`), none by default.
    public var faults: [String]

    public init(seed: UInt64 = 42, podcasts: Int = 2_000, products: Int = 1_000,
                changed: Double = 0.02, added: Double = 0.01, removed: Double = 0.01, faults: [String] = []) {
        self.faults = faults
        self.seed = seed
        self.podcasts = podcasts
        self.products = products
        self.changed = changed
        self.added = added
        self.removed = removed
    }
}

public struct HTTPSettings: Sendable, Equatable {
    public var timeoutSeconds: Double
    public var userAgent: String
    public var maxAttempts: Int
    /// Requests per minute per host; hosts not listed use `defaultRequestsPerMinute`.
    public var requestsPerMinute: [String: Double]
    /// nil = unlimited (the simulator); the real iTunes host defaults to 20.
    public var defaultRequestsPerMinute: Double?
    /// Exponential backoff base for retries.
    public var backoffBaseSeconds: Double
    public var backoffMaxSeconds: Double
    /// Requests a host may send back to back before the per-minute pace applies (token bucket size).
    public var burst: Int
    /// Scopes of one source crawled at once (pages of one scope stay in order).
    public var concurrency: Int
    /// Consecutive failed pages after which a source stops (its remaining scopes incomplete).
    public var circuitBreakerThreshold: Int
    /// How long a response fetched in this run is reused for the same URL; 0 = never.
    public var cacheTTLSeconds: Double

    public init(
        timeoutSeconds: Double = 30, userAgent: String = "storesync/0.1 (+https://github.com/storesync/storesync)",
        maxAttempts: Int = 4, requestsPerMinute: [String: Double] = ["itunes.apple.com": 20],
        defaultRequestsPerMinute: Double? = nil, backoffBaseSeconds: Double = 1, backoffMaxSeconds: Double = 60,
        burst: Int = 1, concurrency: Int = 4, circuitBreakerThreshold: Int = 5, cacheTTLSeconds: Double = 600
    ) {
        self.burst = burst
        self.concurrency = concurrency
        self.circuitBreakerThreshold = circuitBreakerThreshold
        self.cacheTTLSeconds = cacheTTLSeconds
        self.timeoutSeconds = timeoutSeconds
        self.userAgent = userAgent
        self.maxAttempts = maxAttempts
        self.requestsPerMinute = requestsPerMinute
        self.defaultRequestsPerMinute = defaultRequestsPerMinute
        self.backoffBaseSeconds = backoffBaseSeconds
        self.backoffMaxSeconds = backoffMaxSeconds
    }

    /// The rate limit that applies to `host`, if any.
    public func requestsPerMinute(forHost host: String) -> Double? {
        requestsPerMinute[host.lowercased()] ?? defaultRequestsPerMinute
    }
}

/// When a record that is no longer listed may be removed (Invariant 2).
public struct RemovalPolicy: Sendable, Equatable {
    /// Consecutive complete crawls of its scope that must miss a record first.
    public var afterMisses: Int
    /// Never remove more than this fraction of a scope in one run.
    public var maxRatio: Double

    public init(afterMisses: Int = 2, maxRatio: Double = 0.10) {
        self.afterMisses = afterMisses
        self.maxRatio = maxRatio
    }
}

public enum SourceKind: String, Sendable, CaseIterable {
    case itunesGenres = "itunes-genres"
    case itunesCharts = "itunes-charts"
    case itunesSearch = "itunes-search"
    case itunesLookup = "itunes-lookup"
    case marketplace
    case podcastFeed = "podcast-feed"
    case recordsFile = "records-file"

    /// The real service; used unless the job sets `baseURL` or runs the simulator.
    /// nil for sources whose addresses come from records (feeds) or the disk.
    public var defaultBaseURL: URL? {
        switch self {
        case .itunesGenres, .itunesCharts, .itunesSearch, .itunesLookup: URL(string: "https://itunes.apple.com")!
        case .marketplace: URL(string: "https://openmarket.yagom-academy.kr")!
        case .podcastFeed, .recordsFile: nil
        }
    }
}

public struct SourceSpec: Sendable, Equatable {
    /// Unique within the job; records and checkpoints are filed under it.
    public var name: String
    public var kind: SourceKind
    /// nil = the service's real address (or the simulator when the job runs one).
    public var baseURL: URL?
    public var removal: RemovalPolicy
    public var settings: SourceSettings

    /// The address crawled when the job sets none and runs no simulator.
    public var defaultBaseURL: URL? {
        if case .itunesCharts(let charts) = settings, charts.format == .v2 {
            return URL(string: "https://rss.applemarketingtools.com")!
        }
        return kind.defaultBaseURL
    }

    public init(name: String, kind: SourceKind, baseURL: URL? = nil, removal: RemovalPolicy = .init(), settings: SourceSettings) {
        self.name = name
        self.kind = kind
        self.baseURL = baseURL
        self.removal = removal
        self.settings = settings
    }
}

public enum SourceSettings: Sendable, Equatable {
    case itunesGenres(ITunesGenresSettings)
    case itunesCharts(ITunesChartsSettings)
    case itunesSearch(ITunesSearchSettings)
    case itunesLookup(ITunesLookupSettings)
    case marketplace(MarketplaceSettings)
    case podcastFeed(PodcastFeedSettings)
    case recordsFile(RecordsFileSettings)

    /// The earlier source of the same job whose records this source starts
    /// from (lookup, podcast feeds, charts over a genre tree), if any.
    public var upstream: String? {
        switch self {
        case .itunesCharts(let s): s.genresFrom
        case .itunesLookup(let s): s.from
        case .podcastFeed(let s): s.from
        default: nil
        }
    }
}

/// Which upstream records a dependent source works on.
public enum InputSelection: String, Sendable, CaseIterable {
    /// Only records the upstream source added or changed in this run: the
    /// cheap nightly default, since unchanged items need no new detail.
    case newOrChanged = "new-or-changed"
    /// Every current record of the upstream source.
    case all
}

/// iTunes genre tree (`/WebObjects/MZStoreServices.woa/ws/genres?id=`): one
/// scope per root, every genre of the tree a `genre` record.
public struct ITunesGenresSettings: Sendable, Equatable {
    /// Root genre ids: 26 Podcasts, 34 Music, 33 Movies, 36 Apps.
    public var roots: [Int]
    public var country: String?

    public init(roots: [Int] = [26], country: String? = nil) {
        self.roots = roots
        self.country = country
    }
}

/// Which chart API a charts source reads.
public enum ChartFeedFormat: String, Sendable, CaseIterable {
    /// `/{cc}/rss/{chart}/limit={n}/genre={id}/json`, per genre.
    case legacy
    /// `/api/v2/{cc}/{media}/{chart}/{n}/{type}.json` (rss.applemarketingtools.com), no genres.
    case v2
}

/// Top charts: every chart × country × genre is one single-page scope. Each
/// entry becomes a `chart-entry` record (fields named by ``ChartEntry``) plus
/// the charted item itself.
public struct ITunesChartsSettings: Sendable, Equatable {
    public var format: ChartFeedFormat
    /// Legacy: chart names (`toppodcasts`, `topsongs`, `topalbums`…).
    /// v2: `media/chart/type` (`music/most-played/albums`, `podcasts/top/podcasts`).
    public var charts: [String]
    public var countries: [String]
    /// Entries per chart (legacy ≤ 200, v2 ≤ 100).
    public var limit: Int
    /// A genres source of this job: chart every genre it holds (legacy only).
    public var genresFrom: String?
    /// Only these genre ids (legacy only); with `genresFrom`, a filter of its genres.
    public var genres: [Int]
    /// Also crawl the all-genres chart.
    public var includeAllGenres: Bool

    public init(format: ChartFeedFormat = .legacy, charts: [String] = ["toppodcasts"], countries: [String] = ["us"],
                limit: Int = 100, genresFrom: String? = nil, genres: [Int] = [], includeAllGenres: Bool = true) {
        self.format = format
        self.charts = charts
        self.countries = countries
        self.limit = limit
        self.genresFrom = genresFrom
        self.genres = genres
        self.includeAllGenres = includeAllGenres
    }
}

/// iTunes Lookup (`/lookup?id=`): detail for records of an earlier source.
public struct ITunesLookupSettings: Sendable, Equatable {
    /// The source whose records are looked up.
    public var from: String
    /// Only upstream records of these entities (empty = all).
    public var entities: [EntityKind]
    public var select: InputSelection
    /// `entity=` of the lookup, e.g. `podcastEpisode` for a podcast's episodes
    /// (then each looked-up id is its own scope, so missing episodes can be removed).
    public var lookupEntity: String?
    /// Ids per request, 1...200.
    public var batchSize: Int
    /// Children per looked-up id (`limit=`), with `lookupEntity`.
    public var limit: Int
    public var country: String?

    public init(from: String, entities: [EntityKind] = [], select: InputSelection = .newOrChanged,
                lookupEntity: String? = nil, batchSize: Int = 200, limit: Int = 200, country: String? = nil) {
        self.from = from
        self.entities = entities
        self.select = select
        self.lookupEntity = lookupEntity
        self.batchSize = batchSize
        self.limit = limit
        self.country = country
    }
}

/// Each selected podcast's own RSS feed (its `feedUrl`), one scope per podcast,
/// every `<item>` an `episode` record.
public struct PodcastFeedSettings: Sendable, Equatable {
    /// The source holding the podcasts (their `feedUrl`).
    public var from: String
    public var select: InputSelection
    /// Only these podcast keys (empty = every selected podcast).
    public var podcasts: [String]
    /// At most this many feeds per run, in key order.
    public var maxFeeds: Int?

    public init(from: String, select: InputSelection = .all, podcasts: [String] = [], maxFeeds: Int? = nil) {
        self.from = from
        self.select = select
        self.podcasts = podcasts
        self.maxFeeds = maxFeeds
    }
}

/// The format of a records file.
public enum RecordsFileFormat: String, Sendable, CaseIterable {
    /// One JSON object per line.
    case jsonLines = "jsonl"
    /// RFC 4180 CSV with a header row.
    case csv
}

/// A local JSON Lines or CSV file diffed like any API: one scope, read in pages.
public struct RecordsFileSettings: Sendable, Equatable {
    /// Absolute after loading (relative paths resolve against the job file).
    public var path: String
    /// nil = from the file name's extension.
    public var format: RecordsFileFormat?
    /// The field that identifies a row.
    public var keyField: String
    public var entity: EntityKind
    /// Rows per page (one transaction and checkpoint each).
    public var pageSize: Int

    public init(path: String, format: RecordsFileFormat? = nil, keyField: String = "id", entity: EntityKind = .record,
                pageSize: Int = 10_000) {
        self.path = path
        self.format = format
        self.keyField = keyField
        self.entity = entity
        self.pageSize = pageSize
    }
}

/// iTunes Search: every term × country is one scope, paged by `offset`.
public struct ITunesSearchSettings: Sendable, Equatable {
    public var terms: [String]
    public var media: String
    public var entity: String?
    public var countries: [String]
    /// Rows per request, 1...200.
    public var pageSize: Int
    /// Stop a scope after this many rows even if pages keep coming.
    public var maxResults: Int

    public init(terms: [String], media: String = "podcast", entity: String? = nil,
                countries: [String] = ["us"], pageSize: Int = 200, maxResults: Int = 2_000) {
        self.terms = terms
        self.media = media
        self.entity = entity
        self.countries = countries
        self.pageSize = pageSize
        self.maxResults = maxResults
    }
}

/// Marketplace product list, paged by `page_no` until `has_next` is false.
public struct MarketplaceSettings: Sendable, Equatable {
    public var itemsPerPage: Int
    public var maxPages: Int
    /// Also fetch `/api/products/{id}` for products new or changed in this run
    /// (stored as `listing-detail` records).
    public var detail: Bool

    public init(itemsPerPage: Int = 100, maxPages: Int = 10_000, detail: Bool = false) {
        self.itemsPerPage = itemsPerPage
        self.maxPages = maxPages
        self.detail = detail
    }
}

/// One output of a job. Paths are relative to the job's output folder and
/// may hold the template variables of ``PathTemplate``.
public enum ExportSpec: Sendable, Equatable {
    /// A consumer SQLite database with one typed table per entity.
    case sqlite(path: String)
    /// A CSV per entity of all current records, named `{entity}.csv` in `directory`.
    case csvTables(directory: String, options: CSVExportOptions)
    /// The changes of the run (one row per changed field).
    case csvChanges(path: String, options: CSVExportOptions)
    /// An RSS 2.0 and/or Atom 1.0 feed of one kind, optionally one per genre or country.
    case feed(FeedExportSpec)
    /// OPML lists of podcast feed URLs, importable into podcast apps.
    case opml(OPMLExportSpec)
    /// The run's JSON summary.
    case runReport(path: String)
    /// The run's metrics in Prometheus text format (node_exporter textfile collector).
    case metrics(path: String)

    /// Reports describe the finished run, so they are written after the data exports.
    public var isReport: Bool {
        switch self {
        case .runReport, .metrics: true
        default: false
        }
    }
}

/// What a feed lists.
public enum FeedKind: String, Sendable, CaseIterable {
    /// Podcasts by their latest episode date, newest first.
    case podcastsUpdated = "podcasts-updated"
    /// Podcasts first seen most recently (by the run that added them).
    case podcastsNew = "podcasts-new"
    /// Podcast episodes by release date, newest first.
    case episodesNew = "episodes-new"
    /// Songs, albums and other music by release date, newest first.
    case musicNew = "music-new"
    /// Marketplace listings first seen most recently.
    case listingsNew = "listings-new"
    /// Marketplace listings whose price went down in recent runs.
    case priceDrops = "price-drops"
    /// What changed in this run: one item per added, changed or removed record.
    case changes
    /// A chart in rank order (top podcasts, top songs, top albums…): set `chart`.
    case top

    /// Whether items carry podcast metadata (`itunes:` elements in RSS).
    public var isPodcast: Bool { self == .podcastsUpdated || self == .podcastsNew || self == .episodesNew }

    /// Feeds whose files may be split by `{genre}` and `{country}`.
    public var isGroupable: Bool { self != .changes }
}

public struct FeedExportSpec: Sendable, Equatable {
    public var kind: FeedKind
    /// For `top` feeds: the chart's name (`toppodcasts`, `topsongs`, `most-played`…).
    public var chart: String?
    /// Channel artwork and author (podcast apps show them).
    public var imageURL: String?
    public var author: String?
    /// RSS 2.0 file (template), if wanted.
    public var rssPath: String?
    /// Atom 1.0 file (template), if wanted.
    public var atomPath: String?
    /// Template, e.g. `New {genre} podcasts`.
    public var title: String
    /// Public URL the RSS file is served at (template); the Atom file's is derived from `atomURL` or this.
    public var selfURL: String
    public var atomURL: String?
    public var link: String
    public var description: String
    public var limit: Int

    public init(kind: FeedKind, rssPath: String?, atomPath: String?, title: String, selfURL: String, atomURL: String? = nil,
                link: String, description: String, limit: Int = 100, chart: String? = nil, imageURL: String? = nil,
                author: String? = nil) {
        self.kind = kind
        self.chart = chart
        self.imageURL = imageURL
        self.author = author
        self.rssPath = rssPath
        self.atomPath = atomPath
        self.title = title
        self.selfURL = selfURL
        self.atomURL = atomURL
        self.link = link
        self.description = description
        self.limit = limit
    }
}

public struct OPMLExportSpec: Sendable, Equatable {
    /// Template: with `{genre}`, one file per genre; without, one file with an outline per genre.
    public var path: String
    public var title: String

    public init(path: String, title: String) {
        self.path = path
        self.title = title
    }
}

public struct CSVExportOptions: Sendable, Equatable {
    public var delimiter: String
    public var byteOrderMark: Bool
    public var crlf: Bool
    public var neutralizeFormulas: Bool

    public init(delimiter: String = ",", byteOrderMark: Bool = false, crlf: Bool = true, neutralizeFormulas: Bool = true) {
        self.delimiter = delimiter
        self.byteOrderMark = byteOrderMark
        self.crlf = crlf
        self.neutralizeFormulas = neutralizeFormulas
    }
}

