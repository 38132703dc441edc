import Foundation

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

/// How a job talks HTTP: timeouts, pacing per host, retries, concurrency, the breaker and the cache (`http:` in a job file).
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
    /// Minutes after its start at which a run's crawl stops at a page boundary
    /// (`http.deadlineMinutes`); nil: no deadline. What is left stays
    /// resumable, and the next run goes on from there.
    public var deadlineMinutes: Double? = nil
    /// Headers sent to one host only (`http.headers`), their values read from
    /// the environment: an API token is never written in the job file.
    public var headers: [SecretHeader] = []

    public init(
        timeoutSeconds: Double = 30, userAgent: String = "storesync/\(StoreSyncVersion.current) (+https://github.com/storesync/storesync)",
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

    /// The headers to send to `host` (never to another host a redirect leads to).
    public func headers(forHost host: String) -> [SecretHeader] {
        let host = host.lowercased()
        return headers.filter { $0.host == host }
    }

    /// The rate limit that applies to `host`, if any.
    public func requestsPerMinute(forHost host: String) -> Double? {
        requestsPerMinute[host.lowercased()] ?? defaultRequestsPerMinute
    }
}

/// A header for one host whose value comes from an environment variable
/// (`http.headers` in a job file). Its value never appears in a description,
/// a dump or a log: what is printed names the variable instead.
public struct SecretHeader: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Lower-cased host name the header is sent to, e.g. `api.example.com`.
    public var host: String
    /// The header's name, e.g. `Authorization`.
    public var name: String
    /// The environment variable the value was read from.
    public var variable: String
    /// The value sent; keep it out of anything printed.
    public var value: String
    /// The variable's value without the job's `prefix` (`Bearer `): what a
    /// server echoing it would print, and what ``Redactor`` takes out.
    public var secret: String

    public init(host: String, name: String, variable: String, value: String, secret: String? = nil) {
        self.host = host.lowercased()
        self.name = name
        self.variable = variable
        self.value = value
        self.secret = secret ?? value
    }

    public var description: String { "\(host): \(name) from $\(variable)" }
    public var debugDescription: String { description }
    /// `dump()` and reflection show the variable, never the value.
    public var customMirror: Mirror {
        Mirror(self, children: ["host": host, "name": name, "variable": variable, "value": "<redacted>", "secret": "<redacted>"])
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

/// Which upstream records a dependent source works on.
public enum InputSelection: String, Sendable, CaseIterable {
    /// Only records the upstream source added or changed in this run: the
    /// cheap nightly default, since unchanged items need no new detail.
    case newOrChanged = "new-or-changed"
    /// Every current record of the upstream source.
    case all
}

/// One output of a job. Paths are relative to the job's output folder and
/// may hold the template variables of ``PathTemplate``.
public enum ExportSpec: Sendable, Equatable {
    /// How many days of change log a consumer database carries unless told.
    public static let defaultHistoryDays = 30

    /// A consumer SQLite database with one typed table per entity, and the
    /// change log of the runs of the last `historyDays` days (nil: every run
    /// the store keeps). Bounded by default so a night's export does not grow
    /// with the years of history behind it; the snapshot keeps it all.
    /// `history`: a `{table}_history` table beside each entity table, every
    /// version of every entity within the same days. `metadata`: where to
    /// write Datasette's `metadata.json` for it (nil: none).
    case sqlite(path: String, historyDays: Int? = ExportSpec.defaultHistoryDays, history: Bool = false, metadata: String? = nil)
    /// A CSV per table of the consumer database (`podcasts.csv`, one per records-file source, …) in `directory`.
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
    /// A mirror of the artwork the job's feeds publish (`kind: artwork`).
    case artwork(ArtworkExportSpec)
    /// Each night's changes to a consumer database as a SQLite changeset
    /// (`kind: changeset`), written with that database.
    case changeset(ChangesetExportSpec)

    /// The file or folder (a template, relative to the output folder) the
    /// export writes, as the job file names it: what an error points at.
    public var target: String {
        switch self {
        case .sqlite(let path, _, _, _), .csvChanges(let path, _), .runReport(let path), .metrics(let path): path
        case .csvTables(let directory, _): directory
        case .feed(let feed): feed.rssPath ?? feed.atomPath ?? ""
        case .opml(let opml): opml.path
        case .artwork(let artwork): artwork.directory
        case .changeset(let changeset): changeset.directory
        }
    }

    /// Reports describe the finished run, so they are written after the data exports.
    public var isReport: Bool {
        switch self {
        case .runReport, .metrics: true
        default: false
        }
    }

    /// An RSS/Atom feed export (not OPML, which lists feeds).
    public var isFeed: Bool {
        if case .feed = self { true } else { false }
    }
}

/// `kind: changeset`: what turns the consumer database a `sqlite` export
/// published last into the one it publishes tonight, as a SQLite changeset
/// (the session extension) a replica applies with standard SQLite tools.
///
/// Written as `{directory}/{from}-{to}.changeset`: `from` is the last run
/// the previous file held (its `max(runs.id)`), `to` the run exported, so a
/// replica at run F applies `F-*.changeset`, and finding none (the first
/// night, a schema change, or more than `keep` nights behind) copies the
/// database whole.
public struct ChangesetExportSpec: Sendable, Equatable {
    /// How many changesets the folder keeps unless told (the newest, by `to`).
    public static let defaultKeep = 30

    /// The folder of changesets, relative to the output folder.
    public var directory: String
    /// The `sqlite` export's `path` (its template, as the job names it).
    public var database: String
    /// The newest changesets kept; older ones are removed after a night's exports succeed.
    public var keep: Int

    public init(directory: String, database: String, keep: Int = ChangesetExportSpec.defaultKeep) {
        self.directory = directory
        self.database = database
        self.keep = keep
    }
}

/// `push:` of a feed export: who learns, right after a night publishes a
/// feed whose content changed, that it did. A feed whose items and channel
/// are what it published before is left as it was (its `lastBuildDate`
/// included), and nobody is told.
public struct FeedPushSpec: Sendable, Equatable {
    /// A WebSub hub: named in the feed (`<atom:link rel="hub">`, Atom's
    /// `<link rel="hub">`) so subscribers find it, and sent a publish ping
    /// (`POST hub.mode=publish&hub.url=<the feed's selfURL>`).
    public var hub: String?
    /// A Podping-style notifier: `GET {podping}?url=<selfURL>&reason=update&medium=podcast`.
    public var podping: String?
    /// Headers sent to the notifier, each read from the environment (Podping
    /// gives each publisher a token for `Authorization`); never printed or logged.
    public var podpingHeaders: [SecretHeader]

    public init(hub: String? = nil, podping: String? = nil, podpingHeaders: [SecretHeader] = []) {
        self.hub = hub
        self.podping = podping
        self.podpingHeaders = podpingHeaders
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

    /// Feeds a podcast app subscribes to: items with playable enclosures,
    /// written with Apple's `itunes:` elements and linted against its rules.
    /// The others are directory feeds for feed readers (plain RSS and Atom).
    public var isSubscribable: Bool { self == .episodesNew || self == .musicNew }

    /// Feeds whose files may be split by `{genre}` and `{country}`.
    public var isGroupable: Bool { self != .changes }
}

/// One RSS and/or Atom feed export (`kind: feed`): what it lists, where its files go, its channel texts.
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
    /// The channel's RFC 5646 `<language>`; nil takes the storefront's (the items' country).
    public var language: String?
    /// `itunes:owner`: who directories contact about the feed.
    public var ownerName: String?
    public var ownerEmail: String?
    public var copyright: String?
    /// `itunes:explicit` for the channel; nil is explicit when any item is.
    public var explicit: Bool?
    /// `itunes:type`: `episodic` (default) or `serial`.
    public var podcastType: String?
    /// Apple categories, each a path from the top level (`[["News", "Tech News"]]`);
    /// empty files the feed by its genre (per-genre feeds) or its items' genres.
    public var categories: [[String]]
    /// Refuse to replace the published file when the lint finds a requirement broken.
    public var strict: Bool
    /// RFC 5005 paging: items older than the newest `limit` go to archive documents.
    public var archive: Bool
    /// The publisher's own Podcasting 2.0 channel tags (`podcast:` key of the
    /// export): locked, medium, funding, txt, trailers, podroll; each checked
    /// by ``PodcastTagRules`` when the job is read.
    public var podcastTags: [PodcastTag] = []
    /// Ask each published enclosure's server about it (`checkEnclosures`):
    /// HEAD, or a one-byte range GET where HEAD is refused, remembered across
    /// nights; gone files' items are withheld, unknown lengths and types learnt.
    public var checkEnclosures = false
    /// `podcast:guid`, when the publisher has one already (a show that moved
    /// here keeps its identity); nil derives it from the feed's URL.
    public var podcastGUID: String?
    /// Who is told when the feed's content changes (`push:`); nil: no one.
    public var push: FeedPushSpec?

    public init(kind: FeedKind, rssPath: String?, atomPath: String?, title: String, selfURL: String, atomURL: String? = nil,
                link: String, description: String, limit: Int = 100, chart: String? = nil, imageURL: String? = nil,
                author: String? = nil, language: String? = nil, ownerName: String? = nil, ownerEmail: String? = nil,
                copyright: String? = nil, explicit: Bool? = nil, podcastType: String? = nil, categories: [[String]] = [],
                strict: Bool = false, archive: Bool = false) {
        self.language = language
        self.ownerName = ownerName
        self.ownerEmail = ownerEmail
        self.copyright = copyright
        self.explicit = explicit
        self.podcastType = podcastType
        self.categories = categories
        self.strict = strict
        self.archive = archive
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

/// The artwork mirror (`kind: artwork`): the images the job's podcast, music
/// and chart feeds publish, downloaded with conditional requests into
/// `directory`, kept within `budgetMB` by evicting the least recently published.
public struct ArtworkExportSpec: Sendable, Equatable {
    public static let defaultBudgetMB = 500

    /// Folder (relative to the output folder) the images and manifest go in.
    public var directory: String
    /// The most the folder may hold, in MiB.
    public var budgetMB: Int
    /// Where `directory` is served publicly; when set, feeds written in the
    /// same run name `artworkBaseURL/<file>` for every image the mirror holds.
    public var artworkBaseURL: String?

    public init(directory: String = "artwork", budgetMB: Int = ArtworkExportSpec.defaultBudgetMB, artworkBaseURL: String? = nil) {
        self.directory = directory
        self.budgetMB = budgetMB
        self.artworkBaseURL = artworkBaseURL
    }

    public var budgetBytes: Int64 { Int64(budgetMB) << 20 }
}

/// An OPML export of podcast feed URLs (`kind: opml`).
public struct OPMLExportSpec: Sendable, Equatable {
    /// Template: with `{genre}`, one file per genre; without, one file with an outline per genre.
    public var path: String
    public var title: String

    public init(path: String, title: String) {
        self.path = path
        self.title = title
    }
}

/// How CSV files are written: delimiter, byte order mark, line ends, formula neutralisation.
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


/// How much history a job keeps (`retention:` in a job file): change-log
/// rows and runs older than `days` are pruned after each finished run.
///
/// Age is counted on the runs' own dates: for a simulated job, in nights
/// (night N is N − 1 days after night 1), so a year of nights crawled in an
/// hour ages like a year; otherwise from when each run started. Only
/// history goes: current records, scopes, checkpoints and removal counts are
/// live state and stay whatever their age.
public struct RetentionPolicy: Sendable, Equatable {
    /// Runs that started this many days or more before the current run are pruned, with their change log.
    public var days: Int

    public init(days: Int) {
        self.days = days
    }
}
