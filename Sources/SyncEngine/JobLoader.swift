import Catalog
import Foundation
import StoreSim
import Yams

/// Reads `jobs/*.yml` into a ``JobSpec``, reporting every problem at once
/// with its file, line and key path, so one `validate` fixes a whole file.
public enum JobLoader {
    /// Loads and validates the job file at `path`.
    public static func load(path: String) throws(StoreSyncError) -> JobSpec {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .invalidJob(file: path, issues: [JobFileIssue(file: path, line: nil, column: nil, keyPath: "",
                                                                message: "cannot read the file: \(error.localizedDescription)")])
        }
        let directory = (URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent().path)
        return try parse(yaml: text, file: path, baseDirectory: directory)
    }

    /// Parses job YAML; relative paths resolve against `baseDirectory`.
    public static func parse(yaml: String, file: String, baseDirectory: String) throws(StoreSyncError) -> JobSpec {
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw .invalidJob(file: file, issues: [yamlIssue(error, file: file)])
        } catch {
            throw .invalidJob(file: file, issues: [JobFileIssue(file: file, line: nil, column: nil, keyPath: "", message: "\(error)")])
        }
        var reader = NodeReader(file: file)
        guard let root, let top = reader.mapping(root, path: "") else {
            if root == nil { reader.issue(nil, "", "the file is empty: a job needs at least name, store, output and sources") }
            throw .invalidJob(file: file, issues: reader.issues)
        }
        let job = reader.job(top, baseDirectory: baseDirectory)
        if !reader.issues.isEmpty || job == nil {
            throw .invalidJob(file: file, issues: reader.issues)
        }
        return job!
    }

    static func yamlIssue(_ error: YamlError, file: String) -> JobFileIssue {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _):
            return JobFileIssue(file: file, line: mark.line, column: mark.column, keyPath: "", message: "YAML syntax: \(problem)")
        default:
            return JobFileIssue(file: file, line: nil, column: nil, keyPath: "", message: "YAML: \(error)")
        }
    }
}

/// Walks the YAML node tree, typing values and collecting issues.
struct NodeReader {
    let file: String
    var issues: [JobFileIssue] = []

    init(file: String) { self.file = file }

    mutating func issue(_ node: Node?, _ path: String, _ message: String) {
        issues.append(JobFileIssue(file: file, line: node?.mark?.line, column: node?.mark?.column, keyPath: path, message: message))
    }

    /// A mapping as ordered (key, key node, value node) triples.
    typealias Fields = [(key: String, keyNode: Node, value: Node)]

    mutating func mapping(_ node: Node, path: String) -> Fields? {
        guard let mapping = node.mapping else {
            issue(node, path, "expected a mapping of keys to values")
            return nil
        }
        return mapping.map { (key: $0.key.string ?? "", keyNode: $0.key, value: $0.value) }
    }

    /// Flags keys not in `allowed` (a typo would otherwise be silently ignored).
    mutating func checkKeys(_ fields: Fields, path: String, allowed: [String]) {
        var seen = Set<String>()
        for field in fields {
            if !seen.insert(field.key).inserted {
                issue(field.keyNode, join(path, field.key), "duplicate key")
            }
            if !allowed.contains(field.key) {
                let hint = allowed.min { distance($0, field.key) < distance($1, field.key) }
                    .flatMap { distance($0, field.key) <= 3 ? " (did you mean '\($0)'?)" : nil } ?? ""
                issue(field.keyNode, join(path, field.key), "unknown key\(hint); allowed here: \(allowed.joined(separator: ", "))")
            }
        }
    }

    func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    func value(_ fields: Fields, _ key: String) -> Node? { fields.first { $0.key == key }?.value }

    /// Where a missing key belongs: the first key of its mapping.
    func anchor(_ fields: Fields) -> Node? { fields.first?.keyNode }

    mutating func string(_ fields: Fields, _ key: String, path: String, required: Bool = false) -> String? {
        guard let node = value(fields, key) else {
            if required { issue(anchor(fields), join(path, key), "is required") }
            return nil
        }
        guard let scalar = node.scalar, node.null == nil else {
            issue(node, join(path, key), "expected a text value")
            return nil
        }
        if required && scalar.string.trimmingCharacters(in: .whitespaces).isEmpty {
            issue(node, join(path, key), "must not be empty")
            return nil
        }
        return scalar.string
    }

    mutating func int(_ fields: Fields, _ key: String, path: String, range: ClosedRange<Int>) -> Int? {
        guard let node = value(fields, key) else { return nil }
        guard let number = node.int else {
            issue(node, join(path, key), "expected a whole number")
            return nil
        }
        guard range.contains(number) else {
            issue(node, join(path, key), "must be between \(range.lowerBound) and \(range.upperBound), got \(number)")
            return nil
        }
        return number
    }

    mutating func double(_ fields: Fields, _ key: String, path: String, range: ClosedRange<Double>) -> Double? {
        guard let node = value(fields, key) else { return nil }
        guard let number = node.float ?? node.int.map(Double.init) else {
            issue(node, join(path, key), "expected a number")
            return nil
        }
        guard range.contains(number) else {
            issue(node, join(path, key), "must be between \(range.lowerBound) and \(range.upperBound), got \(number)")
            return nil
        }
        return number
    }

    mutating func bool(_ fields: Fields, _ key: String, path: String) -> Bool? {
        guard let node = value(fields, key) else { return nil }
        guard let flag = node.bool else {
            issue(node, join(path, key), "expected true or false")
            return nil
        }
        return flag
    }

    mutating func strings(_ fields: Fields, _ key: String, path: String) -> [String]? {
        guard let node = value(fields, key) else { return nil }
        if let scalar = node.scalar { return [scalar.string] }
        guard let sequence = node.sequence else {
            issue(node, join(path, key), "expected a list of text values")
            return nil
        }
        var out: [String] = []
        for (n, element) in sequence.enumerated() {
            guard let s = element.scalar?.string, !s.isEmpty else {
                issue(element, "\(join(path, key))[\(n)]", "expected a non-empty text value")
                continue
            }
            out.append(s)
        }
        return out
    }

    mutating func url(_ fields: Fields, _ key: String, path: String) -> URL? {
        guard let text = string(fields, key, path: path) else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            issue(value(fields, key), join(path, key), "expected an http(s) URL such as https://itunes.apple.com, got '\(text)'")
            return nil
        }
        return url
    }

    /// A path inside the output folder: relative, no `..`.
    mutating func relativePath(_ fields: Fields, _ key: String, path: String, default fallback: String?) -> String? {
        guard let text = string(fields, key, path: path) ?? fallback else {
            issue(anchor(fields), join(path, key), "is required")
            return nil
        }
        let parts = text.split(separator: "/")
        if text.hasPrefix("/") || parts.contains("..") || text.contains("\0") {
            issue(value(fields, key), join(path, key), "must be a path inside the output folder (relative, without '..'), got '\(text)'")
            return nil
        }
        return text
    }

    func resolve(_ path: String, against base: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded).standardizedFileURL.path }
        return URL(fileURLWithPath: base).appendingPathComponent(expanded).standardizedFileURL.path
    }

    func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    // MARK: The job

    mutating func job(_ top: Fields, baseDirectory: String) -> JobSpec? {
        checkKeys(top, path: "", allowed: ["name", "store", "output", "simulator", "http", "sources", "exports"])
        let name = string(top, "name", path: "", required: true)
        if let name, name.contains("/") { issue(value(top, "name"), "name", "must not contain '/'") }
        let store = string(top, "store", path: "", required: true)
        let output = string(top, "output", path: "", required: true)
        let simulator = value(top, "simulator").flatMap { simulatorSpec($0) }
        let http = value(top, "http").flatMap { httpSettings($0) } ?? HTTPSettings()
        var sources: [SourceSpec] = []
        if let node = value(top, "sources") {
            if let sequence = node.sequence, !sequence.isEmpty {
                for (n, element) in sequence.enumerated() {
                    if let source = sourceSpec(element, path: "sources[\(n)]", baseDirectory: baseDirectory) { sources.append(source) }
                }
                var names = Set<String>()
                for (n, source) in sources.enumerated() {
                    if !names.insert(source.name).inserted {
                        issue(sequence[n], "sources[\(n)].name", "duplicate source name '\(source.name)': names must be unique")
                    }
                    // Sources run in the file's order, so what a source starts from must come first.
                    if let upstream = source.settings.upstream, !names.contains(upstream) || upstream == source.name {
                        let earlier = sources[..<n].map(\.name)
                        issue(sequence[n], "sources[\(n)]",
                              "'\(upstream)' must name an earlier source of this job"
                              + (earlier.isEmpty ? " (there is none)" : "; earlier sources: \(earlier.joined(separator: ", "))"))
                    }
                }
            } else {
                issue(node, "sources", "expected a non-empty list of sources")
            }
        } else {
            issue(anchor(top), "sources", "is required")
        }
        var exports: [ExportSpec] = []
        if let node = value(top, "exports") {
            if let sequence = node.sequence {
                for (n, element) in sequence.enumerated() {
                    if let export = exportSpec(element, path: "exports[\(n)]") { exports.append(export) }
                }
            } else {
                issue(node, "exports", "expected a list of exports")
            }
        }
        guard let name, let store, let output else { return nil }
        return JobSpec(
            name: name, file: file, storePath: resolve(store, against: baseDirectory),
            outputDirectory: resolve(output, against: baseDirectory), simulator: simulator, http: http,
            sources: sources, exports: exports)
    }

    mutating func simulatorSpec(_ node: Node) -> SimulatorSpec? {
        guard let fields = mapping(node, path: "simulator") else { return nil }
        checkKeys(fields, path: "simulator", allowed: ["seed", "podcasts", "products", "changed", "added", "removed", "faults"])
        var spec = SimulatorSpec()
        if let seed = int(fields, "seed", path: "simulator", range: 0...Int.max) { spec.seed = UInt64(seed) }
        if let n = int(fields, "podcasts", path: "simulator", range: 0...10_000_000) { spec.podcasts = n }
        if let n = int(fields, "products", path: "simulator", range: 0...10_000_000) { spec.products = n }
        if let f = double(fields, "changed", path: "simulator", range: 0...1) { spec.changed = f }
        if let f = double(fields, "added", path: "simulator", range: 0...1) { spec.added = f }
        if let f = double(fields, "removed", path: "simulator", range: 0...1) { spec.removed = f }
        if let faults = strings(fields, "faults", path: "simulator") {
            do {
                _ = try FaultPlan.parse(faults)
                spec.faults = faults
            } catch {
                issue(value(fields, "faults"), "simulator.faults", "\(error)")
            }
        }
        return spec
    }

    mutating func httpSettings(_ node: Node) -> HTTPSettings? {
        guard let fields = mapping(node, path: "http") else { return nil }
        checkKeys(fields, path: "http", allowed: ["timeoutSeconds", "userAgent", "maxAttempts", "requestsPerMinute",
                                                  "defaultRequestsPerMinute", "backoffBaseSeconds", "backoffMaxSeconds",
                                                  "burst", "concurrency", "circuitBreakerThreshold", "cacheTTLSeconds"])
        var settings = HTTPSettings()
        if let t = double(fields, "timeoutSeconds", path: "http", range: 0.1...3600) { settings.timeoutSeconds = t }
        if let ua = string(fields, "userAgent", path: "http") { settings.userAgent = ua }
        if let n = int(fields, "maxAttempts", path: "http", range: 1...20) { settings.maxAttempts = n }
        if let r = double(fields, "defaultRequestsPerMinute", path: "http", range: 0.01...1_000_000) { settings.defaultRequestsPerMinute = r }
        if let b = double(fields, "backoffBaseSeconds", path: "http", range: 0...3600) { settings.backoffBaseSeconds = b }
        if let b = double(fields, "backoffMaxSeconds", path: "http", range: 0...86400) { settings.backoffMaxSeconds = b }
        if let n = int(fields, "burst", path: "http", range: 1...1000) { settings.burst = n }
        if let n = int(fields, "concurrency", path: "http", range: 1...64) { settings.concurrency = n }
        if let n = int(fields, "circuitBreakerThreshold", path: "http", range: 0...10_000) { settings.circuitBreakerThreshold = n }
        if let t = double(fields, "cacheTTLSeconds", path: "http", range: 0...86400) { settings.cacheTTLSeconds = t }
        if let limitsNode = value(fields, "requestsPerMinute") {
            if let limits = mapping(limitsNode, path: "http.requestsPerMinute") {
                for limit in limits {
                    if let r = double(limits, limit.key, path: "http.requestsPerMinute", range: 0.01...1_000_000) {
                        settings.requestsPerMinute[limit.key.lowercased()] = r
                    }
                }
            }
        }
        return settings
    }

    static let sourceKeys: [SourceKind: [String]] = [
        .itunesGenres: ["roots", "country"],
        .itunesCharts: ["format", "charts", "country", "countries", "limit", "genresFrom", "genres", "includeAllGenres"],
        .itunesSearch: ["terms", "media", "entity", "country", "countries", "pageSize", "maxResults"],
        .itunesLookup: ["from", "entities", "select", "lookupEntity", "batchSize", "limit", "country"],
        .marketplace: ["itemsPerPage", "maxPages", "detail"],
        .podcastFeed: ["from", "select", "podcasts", "maxFeeds"],
        .recordsFile: ["path", "format", "keyField", "entity", "pageSize"],
    ]
    static let searchMedia = ["movie", "podcast", "music", "musicVideo", "audiobook", "shortFilm", "tvShow", "software", "ebook", "all"]

    static let genreRoots = [26: "Podcasts", 34: "Music", 33: "Movies", 36: "Apps"]

    mutating func countries(_ fields: Fields, path: String) -> [String]? {
        guard let countries = strings(fields, "countries", path: path) ?? strings(fields, "country", path: path) else { return nil }
        for country in countries where country.count != 2 || !country.allSatisfy(\.isLetter) {
            issue(value(fields, "countries") ?? value(fields, "country"), join(path, "countries"),
                  "'\(country)' is not an ISO 3166 two-letter country code")
        }
        return countries.map { $0.lowercased() }
    }

    mutating func ints(_ fields: Fields, _ key: String, path: String, range: ClosedRange<Int>) -> [Int]? {
        guard let texts = strings(fields, key, path: path) else { return nil }
        var out: [Int] = []
        for (n, text) in texts.enumerated() {
            guard let number = Int(text), range.contains(number) else {
                issue(value(fields, key), "\(join(path, key))[\(n)]", "expected a whole number in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
                continue
            }
            out.append(number)
        }
        return out
    }

    mutating func entityKinds(_ fields: Fields, _ key: String, path: String) -> [EntityKind]? {
        guard let texts = strings(fields, key, path: path) else { return nil }
        var out: [EntityKind] = []
        for text in texts {
            if let kind = EntityKind(rawValue: text) { out.append(kind) } else {
                issue(value(fields, key), join(path, key),
                      "unknown entity '\(text)'; one of \(EntityKind.allCases.map(\.rawValue).joined(separator: ", "))")
            }
        }
        return out
    }

    mutating func selection(_ fields: Fields, path: String) -> InputSelection? {
        guard let text = string(fields, "select", path: path) else { return nil }
        guard let selection = InputSelection(rawValue: text) else {
            issue(value(fields, "select"), join(path, "select"),
                  "expected \(InputSelection.allCases.map(\.rawValue).joined(separator: " or ")), got '\(text)'")
            return nil
        }
        return selection
    }

    mutating func sourceSpec(_ node: Node, path: String, baseDirectory: String) -> SourceSpec? {
        guard let fields = mapping(node, path: path) else { return nil }
        let name = string(fields, "name", path: path, required: true)
        guard let kindText = string(fields, "kind", path: path, required: true) else { return nil }
        guard let kind = SourceKind(rawValue: kindText) else {
            issue(value(fields, "kind"), join(path, "kind"),
                  "unknown source kind '\(kindText)'; known kinds: \(SourceKind.allCases.map(\.rawValue).joined(separator: ", "))")
            return nil
        }
        checkKeys(fields, path: path, allowed: ["name", "kind", "baseURL", "removal"] + (Self.sourceKeys[kind] ?? []))
        let baseURL = url(fields, "baseURL", path: path)
        var removal = RemovalPolicy()
        if let removalNode = value(fields, "removal"), let r = mapping(removalNode, path: join(path, "removal")) {
            checkKeys(r, path: join(path, "removal"), allowed: ["afterMisses", "maxRatio"])
            if let n = int(r, "afterMisses", path: join(path, "removal"), range: 1...1000) { removal.afterMisses = n }
            if let f = double(r, "maxRatio", path: join(path, "removal"), range: 0...1) { removal.maxRatio = f }
        }
        let settings: SourceSettings
        switch kind {
        case .itunesSearch:
            let terms = strings(fields, "terms", path: path) ?? []
            if terms.isEmpty { issue(value(fields, "terms") ?? anchor(fields), join(path, "terms"), "is required: a list of search terms") }
            var search = ITunesSearchSettings(terms: terms)
            if let media = string(fields, "media", path: path) {
                if Self.searchMedia.contains(media) { search.media = media } else {
                    issue(value(fields, "media"), join(path, "media"), "unknown media '\(media)'; one of \(Self.searchMedia.joined(separator: ", "))")
                }
            }
            search.entity = string(fields, "entity", path: path)
            if let countries = countries(fields, path: path) { search.countries = countries }
            if let n = int(fields, "pageSize", path: path, range: 1...200) { search.pageSize = n }
            if let n = int(fields, "maxResults", path: path, range: 1...1_000_000) { search.maxResults = n }
            settings = .itunesSearch(search)
        case .marketplace:
            var market = MarketplaceSettings()
            if let n = int(fields, "itemsPerPage", path: path, range: 1...1000) { market.itemsPerPage = n }
            if let n = int(fields, "maxPages", path: path, range: 1...1_000_000) { market.maxPages = n }
            if let flag = bool(fields, "detail", path: path) { market.detail = flag }
            settings = .marketplace(market)
        case .itunesGenres:
            var genres = ITunesGenresSettings()
            if let roots = ints(fields, "roots", path: path, range: 1...Int(Int32.max)) {
                for (n, root) in roots.enumerated() where !Self.genreRoots.keys.contains(root) {
                    issue(value(fields, "roots"), "\(join(path, "roots"))[\(n)]",
                          "\(root) is not a genre root; roots are \(Self.genreRoots.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))")
                }
                genres.roots = roots
            }
            genres.country = countries(fields, path: path)?.first
            settings = .itunesGenres(genres)
        case .itunesCharts:
            var charts = ITunesChartsSettings()
            if let format = string(fields, "format", path: path) {
                if let f = ChartFeedFormat(rawValue: format) { charts.format = f } else {
                    issue(value(fields, "format"), join(path, "format"),
                          "unknown chart format '\(format)'; one of \(ChartFeedFormat.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            }
            if let names = strings(fields, "charts", path: path) {
                for (n, chart) in names.enumerated() {
                    let parts = chart.split(separator: "/", omittingEmptySubsequences: false)
                    let valid = charts.format == .v2
                        ? parts.count == 3 && parts.allSatisfy { !$0.isEmpty && $0.allSatisfy { $0.isLetter || $0.isNumber || $0 == "-" } }
                        : !chart.isEmpty && chart.allSatisfy { $0.isLetter || $0.isNumber }
                    if !valid {
                        issue(value(fields, "charts"), "\(join(path, "charts"))[\(n)]", charts.format == .v2
                              ? "a v2 chart is media/chart/type, e.g. music/most-played/albums; got '\(chart)'"
                              : "a legacy chart is a name such as toppodcasts or topsongs; got '\(chart)'")
                    }
                }
                charts.charts = names
            }
            if let countries = countries(fields, path: path) { charts.countries = countries }
            if let n = int(fields, "limit", path: path, range: 1...(charts.format == .v2 ? 100 : 200)) { charts.limit = n }
            charts.genresFrom = string(fields, "genresFrom", path: path)
            if let genres = ints(fields, "genres", path: path, range: 1...Int(Int32.max)) { charts.genres = genres }
            if let flag = bool(fields, "includeAllGenres", path: path) { charts.includeAllGenres = flag }
            if charts.format == .v2, charts.genresFrom != nil || !charts.genres.isEmpty {
                issue(value(fields, "genresFrom") ?? value(fields, "genres"), path,
                      "v2 charts have no genres: remove genresFrom/genres or use format: legacy")
            }
            settings = .itunesCharts(charts)
        case .itunesLookup:
            let from = string(fields, "from", path: path, required: true) ?? ""
            var lookup = ITunesLookupSettings(from: from)
            if let entities = entityKinds(fields, "entities", path: path) { lookup.entities = entities }
            if let select = selection(fields, path: path) { lookup.select = select }
            lookup.lookupEntity = string(fields, "lookupEntity", path: path)
            if let n = int(fields, "batchSize", path: path, range: 1...200) { lookup.batchSize = n }
            if let n = int(fields, "limit", path: path, range: 1...200) { lookup.limit = n }
            lookup.country = countries(fields, path: path)?.first
            settings = .itunesLookup(lookup)
        case .podcastFeed:
            let from = string(fields, "from", path: path, required: true) ?? ""
            var feeds = PodcastFeedSettings(from: from)
            if let select = selection(fields, path: path) { feeds.select = select }
            if let podcasts = strings(fields, "podcasts", path: path) { feeds.podcasts = podcasts }
            feeds.maxFeeds = int(fields, "maxFeeds", path: path, range: 1...10_000_000)
            settings = .podcastFeed(feeds)
        case .recordsFile:
            let file = string(fields, "path", path: path, required: true) ?? ""
            var records = RecordsFileSettings(path: resolve(file, against: baseDirectory))
            if let format = string(fields, "format", path: path) {
                if let f = RecordsFileFormat(rawValue: format) { records.format = f } else {
                    issue(value(fields, "format"), join(path, "format"),
                          "unknown records format '\(format)'; one of \(RecordsFileFormat.allCases.map(\.rawValue).joined(separator: ", "))")
                }
            } else if !file.isEmpty {
                switch (file as NSString).pathExtension.lowercased() {
                case "jsonl", "ndjson": records.format = .jsonLines
                case "csv": records.format = .csv
                default:
                    issue(value(fields, "path"), join(path, "path"),
                          "cannot tell the format from '\(file)': name it .jsonl or .csv, or set format: jsonl|csv")
                }
            }
            if let key = string(fields, "keyField", path: path) { records.keyField = key }
            if let entities = entityKinds(fields, "entity", path: path), let entity = entities.first { records.entity = entity }
            if let n = int(fields, "pageSize", path: path, range: 1...1_000_000) { records.pageSize = n }
            settings = .recordsFile(records)
        }
        guard let name else { return nil }
        return SourceSpec(name: name, kind: kind, baseURL: baseURL, removal: removal, settings: settings)
    }

    static let exportKinds = ["sqlite", "csv", "changes-csv", "feed", "opml", "run-report", "metrics"]
    static let csvKeys = ["delimiter", "bom", "crlf", "neutralizeFormulas"]

    /// A relative path whose template variables are known (and, when
    /// `allowed` is given, among those that make sense for this export).
    mutating func template(_ fields: Fields, _ key: String, path: String, default fallback: String?,
                           allowed: Set<String> = Set(PathTemplate.variables)) -> String? {
        guard let text = relativePath(fields, key, path: path, default: fallback) else { return nil }
        let unknown = PathTemplate.variables(in: text).subtracting(allowed)
        if !unknown.isEmpty {
            issue(value(fields, key), join(path, key),
                  "unknown template variable(s) \(unknown.sorted().map { "{\($0)}" }.joined(separator: ", ")); "
                  + "allowed here: \(allowed.sorted().map { "{\($0)}" }.joined(separator: ", "))")
            return nil
        }
        return text
    }

    mutating func csvOptions(_ fields: Fields, path: String) -> CSVExportOptions {
        var options = CSVExportOptions()
        if let d = string(fields, "delimiter", path: path) {
            if d == "\\t" || d == "\t" { options.delimiter = "\t" } else if d.utf8.count == 1, d != "\"", d != "\n", d != "\r" {
                options.delimiter = d
            } else {
                issue(value(fields, "delimiter"), join(path, "delimiter"), "must be one ASCII character other than a quote or line break (or \\t)")
            }
        }
        if let b = bool(fields, "bom", path: path) { options.byteOrderMark = b }
        if let b = bool(fields, "crlf", path: path) { options.crlf = b }
        if let b = bool(fields, "neutralizeFormulas", path: path) { options.neutralizeFormulas = b }
        return options
    }

    mutating func exportSpec(_ node: Node, path: String) -> ExportSpec? {
        guard let fields = mapping(node, path: path) else { return nil }
        guard let kind = string(fields, "kind", path: path, required: true) else { return nil }
        switch kind {
        case "sqlite":
            checkKeys(fields, path: path, allowed: ["kind", "path"])
            return relativePath(fields, "path", path: path, default: nil).map { .sqlite(path: $0) }
        case "csv":
            checkKeys(fields, path: path, allowed: ["kind", "directory"] + Self.csvKeys)
            let options = csvOptions(fields, path: path)
            return relativePath(fields, "directory", path: path, default: ".").map { .csvTables(directory: $0, options: options) }
        case "changes-csv":
            checkKeys(fields, path: path, allowed: ["kind", "path"] + Self.csvKeys)
            let options = csvOptions(fields, path: path)
            return relativePath(fields, "path", path: path, default: "changes.csv").map { .csvChanges(path: $0, options: options) }
        case "feed":
            checkKeys(fields, path: path, allowed: ["kind", "feed", "chart", "rss", "atom", "title", "selfURL", "atomURL", "link",
                                                    "description", "limit", "image", "author"])
            guard let feedName = string(fields, "feed", path: path, required: true) else { return nil }
            guard let feedKind = FeedKind(rawValue: feedName) else {
                issue(value(fields, "feed"), join(path, "feed"),
                      "unknown feed '\(feedName)'; one of \(FeedKind.allCases.map(\.rawValue).joined(separator: ", "))")
                return nil
            }
            // Per-genre and per-country files only make sense for catalog feeds.
            let groupable: Set<String> = feedKind.isGroupable ? Set(PathTemplate.variables) : ["date", "job"]
            let chart = string(fields, "chart", path: path)
            if feedKind == .top, chart == nil {
                issue(anchor(fields), join(path, "chart"), "is required for a top feed: the chart's name, e.g. toppodcasts or topsongs")
            }
            let rss = value(fields, "rss") == nil ? nil : template(fields, "rss", path: path, default: nil, allowed: groupable)
            let atom = value(fields, "atom") == nil ? nil : template(fields, "atom", path: path, default: nil, allowed: groupable)
            if value(fields, "rss") == nil && value(fields, "atom") == nil {
                issue(anchor(fields), join(path, "rss"), "a feed needs an rss file, an atom file, or both")
            }
            if let rss, let atom, PathTemplate.variables(in: rss) != PathTemplate.variables(in: atom) {
                issue(value(fields, "atom"), join(path, "atom"), "must use the same template variables as rss")
            }
            let selfURL = string(fields, "selfURL", path: path)
            if selfURL == nil { issue(anchor(fields), join(path, "selfURL"), "is required: the public URL the feed will be served at (may use the same {variables})") }
            let title = string(fields, "title", path: path) ?? feedKind.rawValue
            let spec = FeedExportSpec(
                kind: feedKind, rssPath: rss, atomPath: atom, title: title, selfURL: selfURL ?? "",
                atomURL: string(fields, "atomURL", path: path), link: string(fields, "link", path: path) ?? selfURL ?? "",
                description: string(fields, "description", path: path) ?? title,
                limit: int(fields, "limit", path: path, range: 1...100_000) ?? 100, chart: chart,
                imageURL: url(fields, "image", path: path)?.absoluteString, author: string(fields, "author", path: path))
            return selfURL == nil || (rss == nil && atom == nil) ? nil : .feed(spec)
        case "opml":
            checkKeys(fields, path: path, allowed: ["kind", "path", "title"])
            let file = template(fields, "path", path: path, default: "podcasts.opml", allowed: ["genre", "date", "job"])
            let title = string(fields, "title", path: path) ?? "Podcasts"
            return file.map { .opml(OPMLExportSpec(path: $0, title: title)) }
        case "run-report":
            checkKeys(fields, path: path, allowed: ["kind", "path"])
            return template(fields, "path", path: path, default: "report.json", allowed: ["date", "job"]).map { .runReport(path: $0) }
        case "metrics":
            checkKeys(fields, path: path, allowed: ["kind", "path"])
            return template(fields, "path", path: path, default: "storesync.prom", allowed: ["job"]).map { .metrics(path: $0) }
        default:
            issue(value(fields, "kind"), join(path, "kind"), "unknown export kind '\(kind)'; one of \(Self.exportKinds.joined(separator: ", "))")
            return nil
        }
    }
}
