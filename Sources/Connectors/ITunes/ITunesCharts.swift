import Catalog
import Crawl
import Foundation

/// Which chart API a charts source reads.
public enum ChartFeedFormat: String, Sendable, CaseIterable {
    /// `/{cc}/rss/{chart}/limit={n}/genre={id}/json`, per genre.
    case legacy
    /// The same legacy feeds as Atom XML (`…/xml`), for storefronts or
    /// proxies that serve only that form; the same records as `legacy`.
    case legacyXML = "legacy-xml"
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

extension ITunesChartsSettings: SourceKind {
    public static let name = "itunes-charts"
    public static let settingKeys = ["format", "charts", "country", "countries", "limit", "genresFrom", "genres", "includeAllGenres"]

    public static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self? {
        var charts = ITunesChartsSettings()
        if let format: ChartFeedFormat = reader.choice(fields, "format", path: path, what: "chart format") { charts.format = format }
        if let names = reader.strings(fields, "charts", path: path) {
            for (n, chart) in names.enumerated() {
                let parts = chart.split(separator: "/", omittingEmptySubsequences: false)
                let valid = charts.format == .v2
                    ? parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }
                    : !chart.isEmpty && chart.allSatisfy { $0.isLetter || $0.isNumber }
                if !valid {
                    reader.issue(reader.value(fields, "charts"), "\(reader.join(path, "charts"))[\(n)]", charts.format == .v2
                                 ? "a v2 chart is media/chart/type, e.g. music/most-played/albums; got '\(chart)'"
                                 : "a legacy chart is a name such as toppodcasts or topsongs; got '\(chart)'")
                }
            }
            charts.charts = names
        }
        if let countries = reader.countries(fields, path: path) { charts.countries = countries }
        if let n = reader.int(fields, "limit", path: path, range: 1...(charts.format == .v2 ? 100 : 200)) { charts.limit = n }
        charts.genresFrom = reader.string(fields, "genresFrom", path: path)
        if let genres = reader.ints(fields, "genres", path: path, range: 1...Int(Int32.max)) { charts.genres = genres }
        if let flag = reader.bool(fields, "includeAllGenres", path: path) { charts.includeAllGenres = flag }
        if charts.format == .v2, charts.genresFrom != nil || !charts.genres.isEmpty {
            reader.issue(reader.value(fields, "genresFrom") ?? reader.value(fields, "genres"), path,
                         "v2 charts have no genres: remove genresFrom/genres or use format: legacy")
        }
        return charts
    }

    public var defaultBaseURL: URL? {
        format == .v2 ? URL(string: "https://rss.applemarketingtools.com")! : ITunesSearch.itunesBaseURL
    }

    public var inputRequest: InputRequest? {
        genresFrom.map { InputRequest(source: $0, entities: [.genre], selection: .all) }
    }

    public func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        ITunesCharts.scopes(settings: self, baseURL: baseURL, genres: inputs)
    }

    /// Chart entries map to the chart-entry fields; charted items, written in
    /// Search's field names, map as Search rows do.
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        entity == .chartEntry ? ITunesCharts.canonicalEntry(wire) : ITunesCanonical.item(entity, wire)
    }

    /// A chart ranks everything it emits, its entries and the items they chart.
    public func role(of entity: EntityKind) -> RecordRole { .ranks }
}

/// Top charts: the legacy iTunes RSS feeds (`/{cc}/rss/{chart}/limit={n}[/genre={id}]/json`)
/// and the marketing-tools RSS v2 feeds (`/api/v2/{cc}/{media}/{chart}/{n}/{type}.json`).
///
/// Every chart × country × genre is one single-page, sweeping scope. Each
/// entry becomes two records: a `chart-entry` (keyed by chart and item, its
/// rank a field; fields named by ``ChartEntry``) and the charted item itself,
/// keyed by its iTunes id with Search-style field names (`trackName`/
/// `collectionName`, `artistName`, `primaryGenreName`, `releaseDate`, …) so
/// it maps into the canonical model as Search and Lookup rows do.
///
/// A charts source *ranks* what it lists (``RecordRole/ranks``): an item
/// leaving a chart is list churn, not evidence that it is gone.
///
/// Item records come only from the charts of the first country listed: the
/// same item is described per storefront (its link, price and sometimes its
/// name differ), and two descriptions of one record in one run would read as
/// a change every night. Other countries' charts still record every entry, and
/// an entry carries the name, artist, artwork and link it needs on its own.
package enum ITunesCharts {
    /// What a chart scope knows about its chart; stamped on every entry.
    package struct ChartContext: Sendable, Equatable {
        /// The chart as the job names it: `toppodcasts`, or `media/chart/type` for v2.
        package var chart: String
        /// Lower-case ISO 3166 code.
        package var country: String
        /// `""` for the all-genres chart.
        package var genreID: String
        /// The genre's name when a genres source supplied it.
        package var genreName: String?
        /// The entity of the charted items when the entries do not say it.
        package var defaultEntity: EntityKind?
        /// Whether the charted items become records too (see the type's notes).
        package var emitsItems: Bool

        package init(chart: String, country: String, genreID: String = "", genreName: String? = nil,
                    defaultEntity: EntityKind? = nil, emitsItems: Bool = true) {
            self.chart = chart
            self.country = country.lowercased()
            self.genreID = genreID
            self.genreName = genreName
            self.defaultEntity = defaultEntity
            self.emitsItems = emitsItems
        }
    }

    /// A genre a legacy chart is crawled for.
    struct ChartGenre: Equatable {
        var id: String
        var name: String?
    }

    static func scopes(settings: ITunesChartsSettings, baseURL: URL, genres: [Record]) -> [CrawlScope] {
        var countries: [String] = []
        for country in settings.countries.map({ $0.lowercased() }) where !countries.contains(country) {
            countries.append(country)
        }
        var scopes: [CrawlScope] = []
        switch settings.format {
        case .legacy, .legacyXML:
            let asXML = settings.format == .legacyXML
            // The real feeds serve at most 100 today; the job may ask for up to 200.
            let limit = min(max(settings.limit, 1), 200)
            for chart in settings.charts {
                let chartGenres = legacyGenres(for: chart, settings: settings, records: genres)
                for (n, country) in countries.enumerated() {
                    var slices: [ChartGenre?] = settings.includeAllGenres ? [nil] : []
                    slices += chartGenres.map { Optional($0) }
                    for genre in slices {
                        let context = ChartContext(
                            chart: chart, country: country, genreID: genre?.id ?? "", genreName: genre?.name,
                            defaultEntity: entity(ofLegacyChart: chart), emitsItems: n == 0)
                        var path = "/\(country)/rss/\(chart)/limit=\(limit)"
                        if let genre { path += "/genre=\(genre.id)" }
                        let url = URL.path(baseURL, path + (asXML ? "/xml" : "/json"))
                        scopes.append(CrawlScope(
                            id: "chart:\(chart):\(country):\(genre?.id ?? "all")",
                            pagination: SinglePage.pagination,
                            pageURL: { _ in url },
                            // A complete chart lists every entry: an item it no longer has left it.
                            sweeps: true,
                            decode: { response throws(StoreSyncError) in
                                try asXML ? decodeLegacyXML(response, context: context) : decodeLegacyJSON(response, context: context)
                            }
                        ))
                    }
                }
            }
        case .v2:
            // More than 100 is a server error on the real service.
            let limit = min(max(settings.limit, 1), 100)
            for chart in settings.charts {
                let parts = chart.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
                guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else { continue }
                for (n, country) in countries.enumerated() {
                    let context = ChartContext(chart: chart, country: country, defaultEntity: entity(named: parts[2]),
                                               emitsItems: n == 0)
                    let url = URL.path(baseURL, "/api/v2/\(country)/\(parts[0])/\(parts[1])/\(limit)/\(parts[2]).json")
                    scopes.append(CrawlScope(
                        id: "chart:v2:\(chart):\(country)",
                        pagination: SinglePage.pagination,
                        pageURL: { _ in url },
                        sweeps: true,
                        decode: { response throws(StoreSyncError) in try decodeV2(response, context: context) }
                    ))
                }
            }
        }
        return scopes
    }

    /// The genres a legacy chart is crawled for, in the order given.
    ///
    /// With `genresFrom`, the genre records (ids from their keys, names from
    /// `name`) filtered by `settings.genres` when set, and by the chart itself:
    /// a genre node lists the feeds that exist for it in `rssUrls`, so a music
    /// genre is never asked for top podcasts. Roots are left out when the
    /// all-genres chart is crawled, since that chart is the root's chart.
    /// Without `genresFrom`, `settings.genres` as given (ids only).
    static func legacyGenres(for chart: String, settings: ITunesChartsSettings, records: [Record]) -> [ChartGenre] {
        var out: [ChartGenre] = []
        var seen = Set<String>()
        guard settings.genresFrom != nil else {
            for id in settings.genres.map(String.init) where seen.insert(id).inserted { out.append(ChartGenre(id: id)) }
            return out
        }
        let wanted = Set(settings.genres.map(String.init))
        let feed = "/rss/\(chart.lowercased())/"
        for record in records where record.entity == .genre {
            // Ids end up in the URL path: anything but digits is not a genre id.
            guard isDigits(record.key), wanted.isEmpty || wanted.contains(record.key), !seen.contains(record.key) else {
                continue
            }
            let fields = (try? record.fields()) ?? [:]
            if case .object(let feeds)? = fields["rssUrls"], !feeds.isEmpty,
               !feeds.values.contains(where: { $0.stringValue?.lowercased().contains(feed) == true }) {
                continue
            }
            let isRoot = fields["parentId"].map { $0.stringValue?.isEmpty ?? true } ?? false
            if isRoot, settings.includeAllGenres, !wanted.contains(record.key) { continue }
            seen.insert(record.key)
            out.append(ChartGenre(id: record.key, name: fields["name"]?.stringValue))
        }
        return out
    }

    // MARK: Items

    /// What one chart entry says about its item, whatever the feed format.
    struct ChartedItem {
        var id: String
        var entity: EntityKind
        var name: String?
        var artistName: String?
        var artistID: Int64?
        var artistURL: String?
        var genreID: String?
        var genreName: String?
        var genreIDs: [String] = []
        var genreNames: [String] = []
        var releaseDate: String?
        /// Field name (`artworkUrl170`), URL and edge length.
        var artwork: [(field: String, url: String, size: Int)] = []
        var link: String?
        var price: Double?
        var currency: String?
        var summary: String?
        var rights: String?
        var itemCount: Int64?
        var contentAdvisory: String?
        /// The entry as the feed sent it (minus per-build fields), so nothing is lost.
        var raw: JSONValue
    }

    /// Search's field names per entity, so chart items line up with Search and Lookup rows.
    struct FieldNames {
        var id: String
        var name: String
        var viewURL: String
        var price: String

        init(_ entity: EntityKind) {
            switch entity {
            case .album, .audiobook:
                self.init(id: "collectionId", name: "collectionName", viewURL: "collectionViewUrl", price: "collectionPrice")
            case .podcast:
                self.init(id: "trackId", name: "trackName", viewURL: "collectionViewUrl", price: "trackPrice")
            case .app, .ebook:
                self.init(id: "trackId", name: "trackName", viewURL: "trackViewUrl", price: "price")
            default:
                self.init(id: "trackId", name: "trackName", viewURL: "trackViewUrl", price: "trackPrice")
            }
        }

        private init(id: String, name: String, viewURL: String, price: String) {
            self.id = id
            self.name = name
            self.viewURL = viewURL
            self.price = price
        }
    }

    /// The chart-entry record and (when the context says so) the item record of one entry.
    static func records(for item: ChartedItem, rank: Int, context: ChartContext) -> [Record] {
        var entry: [String: JSONValue] = [
            ChartEntry.chart: .string(context.chart),
            ChartEntry.country: .string(context.country),
            ChartEntry.genreID: .string(context.genreID),
            ChartEntry.rank: .int(Int64(rank)),
            ChartEntry.itemEntity: .string(item.entity.rawValue),
            ChartEntry.itemKey: .string(item.id),
        ]
        entry[ChartEntry.genreName] = context.genreName.map(JSONValue.string)
        entry[ChartEntry.name] = item.name.map(JSONValue.string)
        entry[ChartEntry.artistName] = item.artistName.map(JSONValue.string)
        entry[ChartEntry.artworkURL] = item.artwork.max { $0.size < $1.size }.map { .string($0.url) }
        entry[ChartEntry.link] = item.link.map(JSONValue.string)
        entry[ChartEntry.releaseDate] = item.releaseDate.map(JSONValue.string)
        var out = [record(.chartEntry, key: entryKey(item, context: context), entry)]
        if context.emitsItems { out.append(record(item.entity, key: item.id, itemFields(item))) }
        return out
    }

    /// The entry's key: the chart and the item, not the rank (see ``ChartEntry/key(chart:country:genreID:itemEntity:itemKey:)``).
    static func entryKey(_ item: ChartedItem, context: ChartContext) -> String {
        ChartEntry.key(chart: context.chart, country: context.country, genreID: context.genreID,
                       itemEntity: item.entity.rawValue, itemKey: item.id)
    }

    /// The records of a chart's entries in feed order, ranked by position.
    ///
    /// Ranks are positions counted over every entry (an entry skipped for lack
    /// of an id does not shift the ranks after it). An item listed twice keeps
    /// its first, best rank: an entry is keyed by its item, and one chart
    /// cannot hold one item at two ranks.
    static func rankedRecords(_ items: [(position: Int, item: ChartedItem)], context: ChartContext,
                              skipped: inout [String], where describe: (Int) -> String) -> [Record] {
        var records: [Record] = []
        var firstRank: [String: Int] = [:]
        for (position, item) in items {
            let key = entryKey(item, context: context)
            if let rank = firstRank[key] {
                skipped.append("\(describe(position)): \(item.entity.rawValue) \(item.id) already ranked \(rank) in this chart")
                continue
            }
            firstRank[key] = position + 1
            records += self.records(for: item, rank: position + 1, context: context)
        }
        return records
    }

    /// A chart-entry record's canonical fields (``CanonicalSchema`` names for the ``ChartEntry`` members).
    static func canonicalEntry(_ wire: [String: JSONValue]) -> CanonicalRecord {
        var c = CanonicalFields(wire)
        c.text("chart", from: ChartEntry.chart)
        c.text("country", from: ChartEntry.country)
        c.text("genre_id", from: ChartEntry.genreID)
        c.text("genre", from: ChartEntry.genreName)
        c.integer("rank", from: ChartEntry.rank)
        c.text("item_entity", from: ChartEntry.itemEntity)
        c.text("item_key", from: ChartEntry.itemKey)
        c.text("name", from: ChartEntry.name)
        c.text("artist", from: ChartEntry.artistName)
        c.text("artwork_url", from: ChartEntry.artworkURL)
        c.text("link", from: ChartEntry.link)
        c.date("release_date", from: ChartEntry.releaseDate)
        return CanonicalRecord(entity: .chartEntry, fields: c.fields)
    }

    static func itemFields(_ item: ChartedItem) -> [String: JSONValue] {
        let names = FieldNames(item.entity)
        var fields: [String: JSONValue] = [:]
        fields[names.id] = Int64(item.id).map(JSONValue.int) ?? .string(item.id)
        fields[names.name] = item.name.map(JSONValue.string)
        fields[names.viewURL] = item.link.map(JSONValue.string)
        fields[names.price] = item.price.map(JSONValue.double)
        fields["currency"] = item.currency.map(JSONValue.string)
        fields["artistName"] = item.artistName.map(JSONValue.string)
        fields["artistId"] = item.artistID.map(JSONValue.int)
        fields["artistViewUrl"] = item.artistURL.map(JSONValue.string)
        // Search sends primaryGenreId as a number and genreIds as strings.
        fields["primaryGenreId"] = item.genreID.map { Int64($0).map(JSONValue.int) ?? .string($0) }
        fields["primaryGenreName"] = item.genreName.map(JSONValue.string)
        if !item.genreIDs.isEmpty { fields["genreIds"] = .array(item.genreIDs.map(JSONValue.string)) }
        if !item.genreNames.isEmpty { fields["genres"] = .array(item.genreNames.map(JSONValue.string)) }
        fields["releaseDate"] = item.releaseDate.map(JSONValue.string)
        for image in item.artwork { fields[image.field] = .string(image.url) }
        fields["description"] = item.summary.map(JSONValue.string)
        fields["copyright"] = item.rights.map(JSONValue.string)
        fields["trackCount"] = item.itemCount.map(JSONValue.int)
        fields["contentAdvisoryRating"] = item.contentAdvisory.map(JSONValue.string)
        fields["entry"] = item.raw
        return fields
    }

    static func record(_ entity: EntityKind, key: String, _ fields: [String: JSONValue]) -> Record {
        guard case .object(let normalized) = Normalize.stripTrackingParameters(.object(fields)) else {
            return Record(entity: entity, key: key, fields: fields)
        }
        return Record(entity: entity, key: key, fields: normalized)
    }

    // MARK: Vocabulary

    /// The entity a legacy chart ranks, from its name (`toppaidapplications` → app).
    static func entity(ofLegacyChart chart: String) -> EntityKind? {
        let name = chart.lowercased()
        // Longer names first: "podcastepisodes" also contains "podcast".
        let table: [(String, EntityKind)] = [
            ("podcastepisodes", .episode), ("podcasts", .podcast), ("musicvideos", .musicVideo), ("songs", .song),
            ("albums", .album), ("applications", .app), ("apps", .app), ("audiobooks", .audiobook), ("ebooks", .ebook),
            ("books", .ebook), ("movies", .movie), ("rentals", .movie),
        ]
        return table.first { name.contains($0.0) }?.1
    }

    /// The entity a content type (`Podcast`, `Album`, `Track`), a v2 `kind`
    /// (`albums`, `audio-books`) or a v2 type names; nil for umbrella terms
    /// such as `Music`.
    static func entity(named term: String?) -> EntityKind? {
        guard let term else { return nil }
        var name = term.lowercased().filter { $0.isLetter }
        if name.hasSuffix("s") { name.removeLast() }
        switch name {
        case "podcast": return .podcast
        case "podcastepisode": return .episode
        case "album": return .album
        case "track", "song", "musictrack": return .song
        case "musicvideo": return .musicVideo
        case "app", "application", "software", "iosapp", "macapp", "ipadapplication": return .app
        case "movie", "featuremovie", "film": return .movie
        case "audiobook": return .audiobook
        case "book", "ebook": return .ebook
        default: return nil
        }
    }

    // MARK: Small parsers

    static func isDigits(_ s: String) -> Bool {
        !s.isEmpty && s.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }

    /// The iTunes id in a store URL: a song's `i=` parameter, else the last
    /// path component (`id647928068` or `1787022393`).
    static func itemID(fromURL text: String?, allowTrackParameter: Bool = true) -> String? {
        guard let text, let components = URLComponents(string: text.trimmingCharacters(in: .whitespaces)) else {
            return nil
        }
        if allowTrackParameter, let track = components.queryItems?.first(where: { $0.name == "i" })?.value,
           isDigits(track) {
            return track
        }
        guard var last = components.path.split(separator: "/").last.map(String.init) else { return nil }
        if last.hasPrefix("id") { last.removeFirst(2) }
        return isDigits(last) ? last : nil
    }

    /// `2023-04-15T00:00:00-07:00` → `2023-04-15T07:00:00Z`, the form Search
    /// uses, so a release date reads the same from every API. Anything else
    /// (date-only v2 values, unknown forms) is kept as sent.
    static func utcTimestamp(_ text: String) -> String {
        let s = Array(text.trimmingCharacters(in: .whitespaces).utf8)
        func number(_ range: Range<Int>) -> Int? {
            guard range.upperBound <= s.count else { return nil }
            var value = 0
            for byte in s[range] {
                guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
                value = value * 10 + Int(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard s.count >= 20, s[4] == UInt8(ascii: "-"), s[7] == UInt8(ascii: "-"), s[10] == UInt8(ascii: "T"),
              s[13] == UInt8(ascii: ":"), s[16] == UInt8(ascii: ":"),
              let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61 else {
            return text
        }
        var offsetMinutes = 0
        switch s[19] {
        case UInt8(ascii: "Z") where s.count == 20:
            offsetMinutes = 0
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            // ±HH:MM or ±HHMM
            let compact = s.count == 24
            guard s.count == 25 || compact, let h = number(20..<22),
                  let m = compact ? number(22..<24) : (s[22] == UInt8(ascii: ":") ? number(23..<25) : nil) else {
                return text
            }
            offsetMinutes = (h * 60 + m) * (s[19] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return text
        }
        return CivilDate.utcTimestamp(year: year, month: month, day: day, hour: hour, minute: minute, second: second,
                                      offsetSeconds: offsetMinutes * 60) ?? text
    }
}

extension URL {
    /// `base` + `path`, with no query: chart feeds put their parameters in the path.
    static func path(_ base: URL, _ path: String) -> URL {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false) ?? URLComponents()
        let basePath = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = basePath + path
        components.query = nil
        return components.url ?? base
    }
}
