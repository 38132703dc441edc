import Catalog
import Foundation
import Logging
import Snapshot

/// Feeds and OPML over the snapshot: which records a feed lists, how they
/// are grouped into files by template, and how a record becomes an item.
///
/// Every read names canonical fields (``CanonicalSchema``), whichever source
/// and wire shape a record came from: an episode read from a podcast's own
/// feed and one from iTunes Lookup give the same item.
enum FeedExport {
    /// One file's worth of items and the template values that name it.
    struct Group {
        var values: [String: String]
        var items: [FeedItem]
        /// The items' Apple categories, most common first.
        var categories: [[String]] = []
        /// The items' storefronts, most common first.
        var countries: [String] = []
        /// `checkEnclosures`: what the checks' facts did to this group (see ``applyEnclosureFacts``).
        var enclosuresWithheld = 0
        var lengthsLearned = 0
        var typesLearned = 0
        /// Items left out because their link is not an http(s) URL (counted on the first group).
        var linksWithheld = 0
        /// `podcast:` tags of this group's items left out for breaking the namespace's rules.
        var podcastTagsWithheld = 0
    }

    /// A candidate record with the fields grouping needs.
    struct Candidate {
        var entity: String
        var key: String
        var fields: JSONValue
        var date: Date?
        var extra: [String: String] = [:]
    }

    static func write(_ spec: FeedExportSpec, context: ExportContext) throws -> [ExportedFile] {
        try FeedSameness.keepingUnchanged { try writeGroups(spec, context: context) }
    }

    /// Marks `file`, a current document (not an archive page), with where it
    /// is served and who hears of it; `before` is the published file's
    /// identity before the write (nil: there was none).
    static func published(_ file: ExportedFile, at url: URL, topic: String, spec: FeedExportSpec,
                          before: (UInt64, UInt64)?) -> ExportedFile {
        var file = file
        file.topicURL = topic
        file.push = spec.push
        if !file.withheld, let before, let after = FeedSameness.identity(of: url) { file.unchanged = before == after }
        return file
    }

    private static func writeGroups(_ spec: FeedExportSpec, context: ExportContext) throws -> [ExportedFile] {
        let template = spec.rssPath ?? spec.atomPath ?? ""
        let grouping = PathTemplate.variables(in: template).intersection(["genre", "country"])
        let directory = try FeedDirectory(spec, context: context)
        var files: [ExportedFile] = []
        let original = hiResImage(spec, context: context)
        let spec = mirroringArtwork(original, context: context)
        var all = try groups(original, grouping: grouping, context: context, keepAll: spec.archive, directory: directory,
                             forWriting: true)
        all += try keptAliveGroups(original, template: template, grouping: grouping, present: all, context: context)
        let names = distinctNames(all.map(\.values), template: template, logger: context.logger)
        for (plain, distinct) in zip(all, names) {
            let group = mirroringArtwork(plain, context: context)
            var values = group.values
            values["date"] = PathTemplate.dateValue(context.runDate)
            values["job"] = context.jobName
            // Titles show the group's own values; file names and URLs the distinct ones.
            let nameValues = values.merging(distinct) { $1 }
            let current = Array(group.items.prefix(spec.limit))
            let channel = directory.channel(spec, group: group, values: values, nameValues: nameValues, items: current, context: context)
            // Archive pages are never rewritten but the mirror evicts what is no longer
            // published, so they name the artwork where it lives, not the mirror's copy.
            let archiveChannel = directory.channel(original, group: plain, values: values, nameValues: nameValues,
                                                   items: Array(plain.items.prefix(spec.limit)), context: context)
            let older = Array(plain.items.dropFirst(spec.limit))
            if let rss = spec.rssPath {
                let url = try PathTemplate.resolve(rss, values: nameValues, inside: context.outputDirectory)
                var rssChannel = channel
                if spec.archive {
                    let archive = try FeedArchive(feed: url, format: .rss, spec: spec, values: nameValues, context: context)
                    files += try archive.write(older: older, channel: archiveChannel,
                                               podcast: spec.kind.isSubscribable, current: &rssChannel)
                }
                let before = FeedSameness.identity(of: url)
                var file = try writeRSS(spec, channel: rssChannel, items: current, to: url, context: context)
                file = published(file, at: url, topic: rssChannel.selfURL, spec: spec, before: before)
                file.enclosuresWithheld = group.enclosuresWithheld
                file.enclosureLengthsLearned = group.lengthsLearned
                file.enclosureTypesLearned = group.typesLearned
                file.linksWithheld = group.linksWithheld
                file.podcastTagsWithheld = group.podcastTagsWithheld
                files.append(file)
            }
            if let atom = spec.atomPath {
                let url = try PathTemplate.resolve(atom, values: nameValues, inside: context.outputDirectory)
                var atomChannel = channel
                atomChannel.selfURL = PathTemplate.expand(spec.atomURL ?? spec.selfURL, nameValues)
                if spec.archive {
                    let archive = try FeedArchive(feed: url, format: .atom, spec: spec, values: nameValues, context: context)
                    var atomArchiveChannel = archiveChannel
                    atomArchiveChannel.selfURL = atomChannel.selfURL
                    files += try archive.write(older: older, channel: atomArchiveChannel, podcast: false, current: &atomChannel)
                }
                let before = FeedSameness.identity(of: url)
                let result = try FeedWriters.writeAtom(channel: atomChannel, items: current, to: url)
                var file = published(ExportedFile(path: url.path, bytes: result.byteCount, rows: result.itemCount), at: url,
                                     topic: atomChannel.selfURL, spec: spec, before: before)
                // An Atom-only feed counts what it withheld; beside RSS, the RSS file did.
                if spec.rssPath == nil { file.linksWithheld = group.linksWithheld }
                files.append(file)
            }
        }
        return files
    }

    /// Writes the RSS file; a feed podcast apps subscribe to is linted first,
    /// and a `strict` one with a broken requirement is not published.
    static func writeRSS(_ spec: FeedExportSpec, channel: FeedChannel, items: [FeedItem], to url: URL,
                         context: ExportContext) throws -> ExportedFile {
        guard spec.kind.isSubscribable else {
            let result = try FeedWriters.writeRSS(channel: channel, items: items, podcast: false, to: url)
            return ExportedFile(path: url.path, bytes: result.byteCount, rows: result.itemCount)
        }
        let bytes = try PodcastFeedWriter().render(channel: channel, items: items, name: url.lastPathComponent)
        var findings = PodcastFeedLint.check(bytes, imageSize: context.imageSize)
        if spec.checkEnclosures { findings += enclosureFindings(items, context: context) }
        var file = ExportedFile(path: url.path, bytes: Int64(bytes.count), rows: items.count)
        file.lint = findings.map { FeedLint(severity: $0.severity.rawValue, rule: $0.rule, place: $0.place, message: $0.message) }
        if spec.strict, findings.contains(where: { $0.severity == .requirement }) {
            // The subscribers keep the last good feed; the report says why this one was held back.
            file.withheld = true
            return file
        }
        try AtomicFile.write(bytes, to: url)
        return file
    }

    /// Titles are text, not file names: values go in as they are.
    static func rawExpand(_ template: String, _ values: [String: String]) -> String {
        values.reduce(template) { $0.replacingOccurrences(of: "{\($1.key)}", with: $1.value) }
    }

    /// The feed's items, split into files by the template's `{genre}`/`{country}`;
    /// a feed without those variables is one file (even with no items).
    ///
    /// Candidates are streamed and each file keeps only its first `limit`:
    /// memory follows the feed, not the store. An ungrouped feed stops reading
    /// at its `limit` (pushed into SQL); a grouped one reads every candidate
    /// once but holds `limit` per file. `forWriting`: the pass that writes the
    /// files (it logs what it withholds and builds the items' `podcast:` tags);
    /// the artwork and enclosure listings need neither.
    static func groups(_ spec: FeedExportSpec, grouping: Set<String>, context: ExportContext,
                       keepAll: Bool = false, directory: FeedDirectory? = nil, forWriting: Bool = false) throws -> [Group] {
        let limit = keepAll ? Int.max : spec.limit
        var buckets: [[String: String]: [Candidate]] = [:]
        var withheld = 0
        var goneEnclosures = 0
        // The SQL limit counts withheld rows too: read again with room for as many more
        // (doubling), until the feed is full or the candidates run out.
        var queryLimit: Int? = grouping.isEmpty && !keepAll ? limit : nil
        while true {
            buckets = [:]
            withheld = 0
            goneEnclosures = 0
            var read = 0
            try forEachCandidate(spec.kind, chart: spec.chart, limit: queryLimit, context: context) { candidate in
                read += 1
                return take(candidate)
            }
            guard let asked = queryLimit, withheld + goneEnclosures > 0, read >= asked,
                  (buckets[[:]]?.count ?? 0) < limit else { break }
            queryLimit = asked > Int.max / 4 ? nil : asked * 2
        }
        func take(_ candidate: Candidate) -> Bool {
            // Withheld before it takes a place: the feed still lists `limit` publishable items.
            if withheldForLink(candidate, kind: spec.kind) {
                withheld += 1
                return true
            }
            if spec.checkEnclosures, let url = enclosureURL(of: candidate, kind: spec.kind),
               context.enclosureFacts[url]?.state == .gone {
                goneEnclosures += 1
                return true
            }
            var values: [String: String] = [:]
            if grouping.contains("genre") { values["genre"] = genre(of: candidate.fields) }
            if grouping.contains("country") { values["country"] = candidate.fields["country"]?.stringValue ?? "unknown" }
            // A file's list is in feed order, so its first `limit` are the ones it publishes
            // (a file with none of them is still written, as a feed with no items).
            var bucket = buckets.removeValue(forKey: values) ?? []
            if bucket.count < limit { bucket.append(candidate) }
            let more = !grouping.isEmpty || bucket.count < limit
            buckets[values] = bucket
            return more
        }
        if withheld > 0, forWriting {
            context.logger?.warning("feed \(spec.rssPath ?? spec.atomPath ?? spec.kind.rawValue): \(withheld) item\(withheld == 1 ? "" : "s") withheld: the enclosure is not an http(s) URL")
        }
        // Only the items listed need their podcasts looked up.
        let enricher = try ItemEnricher(spec.kind, candidates: buckets.values.flatMap { $0 },
                                        directory: directory ?? FeedDirectory(spec, context: context), context: context)
        var withheldTags: [String] = []
        func group(_ values: [String: String], _ chosen: [Candidate]) -> Group {
            var learned = (lengths: 0, types: 0)
            let tagsBefore = withheldTags.count
            let items = chosen.map { candidate in
                var item = enricher.enrich(item(for: candidate, kind: spec.kind, context: context), candidate: candidate)
                // Only the files carry the tags: the artwork and enclosure listings need none.
                if forWriting, spec.kind == .episodesNew {
                    let podcastTags = PodcastItemTags.tags(of: candidate.fields)
                    item.podcastTags = podcastTags.tags
                    withheldTags += podcastTags.withheld.map { "\(item.guid): \($0)" }
                }
                if spec.checkEnclosures { applyEnclosureFacts(to: &item, candidate: candidate, context: context, learned: &learned) }
                return item
            }
            let categories = ItemEnricher.mostCommon(chosen.compactMap { enricher.category(of: $0)?.joined(separator: "/") })
            var made = Group(values: values, items: items,
                             categories: categories.map { $0.split(separator: "/").map(String.init) },
                             countries: ItemEnricher.mostCommon(chosen.compactMap { enricher.country(of: $0) }))
            made.lengthsLearned = learned.lengths
            made.typesLearned = learned.types
            made.podcastTagsWithheld = withheldTags.count - tagsBefore
            return made
        }
        var groups = grouping.isEmpty ? [group([:], buckets[[:]] ?? [])] : buckets
            .sorted { $0.key.sorted(by: { $0.key < $1.key }).map(\.value).lexicographicallyPrecedes($1.key.sorted(by: { $0.key < $1.key }).map(\.value)) }
            .map { group($0.key, $0.value) }
        // Counted once, on the first file: a gone file is no group's own.
        if !groups.isEmpty {
            groups[0].enclosuresWithheld = goneEnclosures
            groups[0].linksWithheld = withheld
        }
        if goneEnclosures > 0, forWriting {
            context.logger?.warning("feed \(spec.rssPath ?? spec.atomPath ?? spec.kind.rawValue): \(goneEnclosures) item\(goneEnclosures == 1 ? "" : "s") withheld: the media file is gone (404/410 to an enclosure check)")
        }
        if !withheldTags.isEmpty, forWriting {
            // A notice, not a warning: the publisher's mistake, which the operator cannot mend.
            context.logger?.notice("feed \(spec.rssPath ?? spec.atomPath ?? spec.kind.rawValue): \(withheldTags.count) podcast: tag\(withheldTags.count == 1 ? "" : "s") withheld, breaking the namespace's rules (the stored records keep them): \(withheldTags.prefix(3).joined(separator: "; "))\(withheldTags.count > 3 ? "; …" : "")")
        }
        return groups
    }

    /// A `podcasts-new` file per genre lists the genre's new podcasts; when
    /// none is new any more, the genre's file is still what subscribers
    /// follow: it stays, written with no items, while any podcast of the
    /// genre is left (it goes only when the genre has none; README). Only a
    /// file written before is kept alive, so nothing appears empty.
    static func keptAliveGroups(_ spec: FeedExportSpec, template: String, grouping: Set<String>, present: [Group],
                                context: ExportContext) throws -> [Group] {
        guard spec.kind == .podcastsNew, grouping == ["genre"] else { return [] }
        let listed = StaleFiles.listed(template: template, outputDirectory: context.outputDirectory)
        guard !listed.isEmpty else { return [] }
        let root = URL(fileURLWithPath: context.outputDirectory).standardizedFileURL.path
        func path(_ genre: String) -> String? {
            var values = context.templateValues
            values["genre"] = genre
            return (try? PathTemplate.resolve(template, values: values, inside: context.outputDirectory))
                .map { SnapshotExporter.relativePath($0.path, in: root) }
        }
        let written = Set(present.compactMap { $0.values["genre"].flatMap(path) })
        guard !listed.subtracting(written).isEmpty else { return [] }
        // Only now, on the night a genre's last new podcast went: the genres every podcast is filed under.
        var genres = Set<String>()
        try forEachCandidate(.podcastsUpdated, limit: nil, context: context) { candidate in
            genres.insert(genre(of: candidate.fields))
            return true
        }
        return genres.sorted().compactMap { genre in
            guard let file = path(genre), listed.contains(file), !written.contains(file) else { return nil }
            return Group(values: ["genre": genre], items: [])
        }
    }

    /// The genre a record is filed under: its primary genre, else the first
    /// of its genres (`genres` is a JSON array, kept as its text by the store).
    static func genre(of fields: JSONValue) -> String {
        if let genre = fields["genre"]?.stringValue, !genre.isEmpty { return genre }
        let genres = fields["genres"]?.arrayValue ?? fields["genres"]?.stringValue.flatMap { try? JSONParser.parse($0) }?.arrayValue
        return genres?.first?.stringValue ?? "unknown"
    }

    /// Counts the payloads a feed export parses, for tests that check a feed
    /// reads what it lists rather than every record of its kind.
    final class PayloadTally: @unchecked Sendable {
        private let lock = NSLock()
        private var parsed = 0
        init() {}
        var count: Int { lock.withLock { parsed } }
        func add() { lock.withLock { parsed += 1 } }
    }

    /// Set by tests (task-local, so parallel tests do not share it).
    @TaskLocal static var payloadTally: PayloadTally?

    static func parse(_ payload: String) -> JSONValue? {
        payloadTally?.add()
        // Parsed in place: a copy of the bytes first would cost a large payload's size again.
        var text = payload
        return text.withUTF8 { try? JSONParser.parse($0) }
    }

    /// Candidates in feed order (stable: ties broken by key), all of them.
    static func select(_ kind: FeedKind, chart: String? = nil, context: ExportContext) throws -> [Candidate] {
        var all: [Candidate] = []
        try forEachCandidate(kind, chart: chart, limit: nil, context: context) { all.append($0); return true }
        return all
    }

    /// Streams the candidates in feed order, at most `limit` (nil: all) when
    /// the caller knows it needs no more; `body` returns false to stop. Each
    /// payload is parsed when its record is reached and dropped with it unless `body` keeps it.
    static func forEachCandidate(_ kind: FeedKind, chart: String? = nil, limit: Int?, context: ExportContext,
                                 _ body: (Candidate) throws -> Bool) throws {
        let store = context.store
        func records(_ query: FeedQuery) throws {
            try store.forEachFeedRecord(query, limit: limit) { record in
                // An unreadable payload is skipped, as before; the store only writes canonical JSON.
                guard let fields = parse(record.payload) else { return true }
                return try body(Candidate(entity: record.entity.rawValue, key: record.key, fields: fields,
                                          date: record.addedRunStartedAt))
            }
        }
        switch kind {
        case .podcastsUpdated:
            try records(.newestFirst([.podcast], by: "release_date"))
        case .podcastsNew:
            try records(.newestAdded(.podcast, thenBy: "release_date"))
        case .episodesNew:
            try records(.newestFirst([.episode], by: "release_date"))
        case .musicNew:
            try records(.newestFirst([.song, .album, .musicVideo], by: "release_date"))
        case .listingsNew:
            try records(.newestAdded(.listing, thenBy: "created_at"))
        case .priceDrops:
            // The latest price change of each listing still listed, if it went down.
            try store.forEachDecrease(of: .listing, field: "price", limit: limit) { drop in
                guard let fields = parse(drop.payload) else { return true }
                return try body(Candidate(entity: "listing", key: drop.key, fields: fields, date: drop.runStartedAt,
                                          extra: ["before": drop.before, "after": drop.after]))
            }
        case .changes:
            try forEachChangeCandidate(context: context, body)
        case .top:
            try records(.chart(chart ?? ""))
        }
    }

    /// One item per record this run added, changed or removed: a record's
    /// change rows arrive together, so each item is complete when the next
    /// record starts, and a feed that has its `limit` stops reading the log.
    static func forEachChangeCandidate(context: ExportContext, _ body: (Candidate) throws -> Bool) throws {
        var current: (id: String, candidate: Candidate)?
        var stopped = false
        try context.store.forEachChangeWithRecord(runID: context.runID) { row in
            let change = row.change
            let id = "\(change.source)|\(change.entity)|\(change.key)"
            if current?.id != id {
                if let done = current?.candidate, !(try body(done)) {
                    stopped = true
                    return false
                }
                // The record's payload is parsed once, from its first row.
                let payload = row.currentPayload ?? change.before
                let fields = payload.flatMap(parse) ?? .object([:])
                current = (id, Candidate(entity: change.entity, key: change.key, fields: fields, date: context.runDate,
                                         extra: ["op": change.op, "source": change.source, "fields": ""]))
            }
            if let field = change.field {
                let line = "\(field): \(readable(change.before)) → \(readable(change.after))"
                let previous = current!.candidate.extra["fields"] ?? ""
                current!.candidate.extra["fields"] = previous.isEmpty ? line : previous + "\n" + line
            }
            return true
        }
        if !stopped, let last = current?.candidate { _ = try body(last) }
    }

    static func readable(_ json: String?) -> String {
        guard let json else { return "(none)" }
        if case .string(let s)? = try? JSONParser.parse(json) { return s }
        return json
    }

    static func name(_ candidate: Candidate) -> String {
        text(candidate.fields["name"]) ?? "\(candidate.entity) \(candidate.key)"
    }

    /// A URL field's text when it may be published (``PublishableURL``: absolute
    /// http/https only), else nil: the element it would fill is left out.
    static func link(_ value: JSONValue?) -> String? {
        PublishableURL.http(text(value))
    }

    /// Whether a candidate is withheld from a feed of `kind` because the link that
    /// is the item is not publishable: an episode whose enclosure is not http(s)
    /// (an episode without any enclosure is the feed lint's business).
    static func withheldForLink(_ candidate: Candidate, kind: FeedKind) -> Bool {
        guard kind == .episodesNew, let url = text(candidate.fields["enclosure_url"]) else { return false }
        return PublishableURL.http(url) == nil
    }

    /// What the enclosure checks found that the feed's bytes cannot show: a
    /// server that sends the whole file to a range request (Apple Podcasts
    /// asks for byte ranges; players cannot seek), a file no answer came for.
    static func enclosureFindings(_ items: [FeedItem], context: ExportContext) -> [FeedLintFinding] {
        var findings: [FeedLintFinding] = []
        for (index, item) in items.enumerated() {
            guard let url = item.enclosure?.url, let fact = context.enclosureFacts[url] else { continue }
            let place = "item \(index + 1) (guid \(item.guid))"
            if fact.state == .ok, fact.ranges == false {
                findings.append(FeedLintFinding(severity: .recommendation, rule: "item-enclosure-ranges", place: place,
                                                message: "the enclosure's server ignores byte-range requests (players cannot seek; Apple asks for them)"))
            } else if fact.state == .unknown {
                findings.append(FeedLintFinding(severity: .recommendation, rule: "item-enclosure-unchecked", place: place,
                                                message: "the enclosure's server did not answer tonight's check; asked again next night"))
            }
        }
        return findings
    }

    /// The media file an item of `kind` publishes: an episode's enclosure, a song's preview.
    static func enclosureURL(of candidate: Candidate, kind: FeedKind) -> String? {
        switch kind {
        case .episodesNew: link(candidate.fields["enclosure_url"])
        case .musicNew: link(candidate.fields["enclosure_url"]) ?? link(candidate.fields["preview_url"])
        default: nil
        }
    }

    /// What a check learnt where the source said nothing: the file's length
    /// (the source gave none, or 0) and its type (the source gave none and the
    /// file's own is one podcast apps play).
    static func applyEnclosureFacts(to item: inout FeedItem, candidate: Candidate, context: ExportContext,
                                    learned: inout (lengths: Int, types: Int)) {
        guard var enclosure = item.enclosure, let fact = context.enclosureFacts[enclosure.url], fact.state == .ok else { return }
        if enclosure.length <= 0, let length = fact.length, length > 0 {
            enclosure.length = length
            learned.lengths += 1
        }
        if text(candidate.fields["enclosure_type"]) == nil, let type = fact.type?.lowercased(),
           PodcastFeedLint.enclosureTypes.contains(type), type != enclosure.type {
            enclosure.type = type
            learned.types += 1
        }
        item.enclosure = enclosure
    }

    /// The enclosure URLs the feeds with `checkEnclosures` publish tonight,
    /// each once: the items of their subscription documents (archive pages
    /// keep what they were written with).
    static func enclosureURLs(_ specs: [ExportSpec], context: ExportContext) throws -> [String] {
        var seen = Set<String>()
        var urls: [String] = []
        for case .feed(let spec) in specs where spec.checkEnclosures {
            let template = spec.rssPath ?? spec.atomPath ?? ""
            let grouping = PathTemplate.variables(in: template).intersection(["genre", "country"])
            for group in try groups(spec, grouping: grouping, context: context) {
                for item in group.items.prefix(spec.limit) {
                    if let url = item.enclosure?.url, seen.insert(url).inserted { urls.append(url) }
                }
            }
        }
        return urls
    }

    /// A field's text, or nil when it is absent or empty (an empty title or
    /// link is no title or link).
    static func text(_ value: JSONValue?) -> String? {
        guard let text = value?.stringValue, !text.isEmpty else { return nil }
        return text
    }

    /// A record as a feed item. GUIDs are stable across runs and renames, so
    /// readers never see an item they already have as new.
    static func item(for candidate: Candidate, kind: FeedKind, context: ExportContext) -> FeedItem {
        let f = candidate.fields
        let releaseDate = (text(f["release_date"]) ?? text(f["created_at"])).flatMap(parseDate)
        switch kind {
        case .podcastsUpdated, .podcastsNew:
            var item = podcastItem(key: candidate.key, fields: f, fallbackDate: context.runDate)
            if kind == .podcastsNew, let date = candidate.date { item.pubDate = date }
            return item
        case .episodesNew:
            return episodeItem(key: candidate.key, fields: f, name: name(candidate), fallbackDate: context.runDate)
        case .musicNew:
            let artist = text(f["artist"])
            var summary = [String]()
            if let album = text(f["album"]), candidate.entity == EntityKind.song.rawValue { summary.append("From \(album).") }
            if let genre = text(f["genre"]) { summary.append("Genre: \(genre).") }
            return FeedItem(
                guid: "storesync:\(candidate.entity):\(candidate.key)",
                title: artist.map { "\(name(candidate)) — \($0)" } ?? name(candidate),
                link: link(f["view_url"]), description: summary.joined(separator: " "),
                pubDate: releaseDate ?? context.runDate, author: artist, imageURL: link(f["artwork_url"]),
                explicit: f["explicit"]?.boolValue)
        case .listingsNew:
            return FeedItem(
                guid: "storesync:listing:\(candidate.key)", title: name(candidate), link: nil,
                description: listingSummary(f), pubDate: candidate.date ?? releaseDate ?? context.runDate,
                imageURL: link(f["thumbnail"]))
        case .priceDrops:
            let currency = f["currency"]?.stringValue ?? ""
            let before = candidate.extra["before"] ?? "", after = candidate.extra["after"] ?? ""
            return FeedItem(
                // One item per drop: a later drop of the same listing is news again.
                guid: "storesync:price-drop:\(candidate.key):\(after)", title: "\(name(candidate)): \(before) → \(after) \(currency)",
                link: nil, description: listingSummary(f), pubDate: candidate.date ?? context.runDate,
                imageURL: link(f["thumbnail"]))
        case .top:
            let rank = f["rank"]?.intValue.map { "#\($0) " } ?? ""
            let artist = text(f["artist"])
            let title = (text(f["name"]) ?? candidate.key) + (artist.map { " — \($0)" } ?? "")
            let chartName = text(f["chart"]) ?? "chart"
            let item = text(f["item_key"]) ?? candidate.key
            return FeedItem(
                // Per chart and item, not per rank: a move up the chart is not a new item to readers.
                guid: "storesync:\(chartName):\(f["country"]?.stringValue ?? ""):\(f["genre_id"]?.stringValue ?? ""):"
                    + "\(f["item_entity"]?.stringValue ?? ""):\(item)",
                title: rank + title, link: link(f["link"]),
                description: "Rank \(f["rank"]?.intValue ?? 0) in \(chartName)" + (text(f["genre"]).map { " (\($0))" } ?? "") + ".",
                // The chart is as of tonight's crawl.
                pubDate: context.runDate, author: artist, imageURL: link(f["artwork_url"]))
        case .changes:
            let op = candidate.extra["op"] ?? "changed"
            let fieldsText = candidate.extra["fields"] ?? ""
            return FeedItem(
                guid: "storesync:change:\(context.runID):\(candidate.extra["source"] ?? ""):\(candidate.entity):\(candidate.key)",
                title: "\(op.capitalized) \(candidate.entity): \(name(candidate))", link: nil,
                description: fieldsText.isEmpty ? "\(op.capitalized) in run \(context.runID)." : fieldsText,
                pubDate: context.runDate)
        }
    }

    /// An episode as its podcast published it: its own GUID (a stable
    /// `storesync:episode:KEY` only when no source gave one), its enclosure's
    /// length and type as given, and the `itunes:` episode fields.
    static func episodeItem(key: String, fields f: JSONValue, name: String, fallbackDate: Date) -> FeedItem {
        var enclosure: FeedEnclosure?
        if let url = link(f["enclosure_url"]) {
            // RSS requires a length; 0 is the profile's "unknown", which
            // podcastparser and feedparser read as unknown as well.
            enclosure = FeedEnclosure(url: url, length: max(0, f["enclosure_length"]?.intValue ?? 0),
                                      type: MediaType.enclosureType(given: text(f["enclosure_type"]), url: url))
        }
        return FeedItem(
            guid: text(f["guid"]) ?? "storesync:episode:\(key)", title: name,
            link: link(f["link"]) ?? link(f["view_url"]), description: f["description"]?.stringValue ?? "",
            pubDate: text(f["release_date"]).flatMap(parseDate) ?? fallbackDate, author: text(f["podcast"]),
            imageURL: link(f["image_url"]), enclosure: enclosure, explicit: f["explicit"]?.boolValue,
            durationSeconds: f["duration_ms"]?.intValue.map { Int($0 / 1000) },
            episodeNumber: f["episode_number"]?.intValue.map(Int.init), season: f["season"]?.intValue.map(Int.init),
            episodeType: text(f["episode_type"]))
    }

    static func listingSummary(_ f: JSONValue) -> String {
        var parts: [String] = []
        if let price = f["price"]?.doubleValue { parts.append("Price \(CanonicalJSON.numberText(price)) \(f["currency"]?.stringValue ?? "")") }
        if let bargain = f["bargain_price"]?.doubleValue { parts.append("now \(CanonicalJSON.numberText(bargain))") }
        if let stock = f["stock"]?.intValue { parts.append("stock \(stock)") }
        var text = parts.joined(separator: ", ")
        if let description = f["description"]?.stringValue, !description.isEmpty { text += text.isEmpty ? description : ". \(description)" }
        return text
    }

    static func podcastItem(key: String, fields: JSONValue, fallbackDate: Date) -> FeedItem {
        let name = text(fields["name"]) ?? "Podcast \(key)"
        var summary: [String] = []
        if let artist = text(fields["artist"]) { summary.append("By \(artist).") }
        if let genre = text(fields["genre"]) { summary.append("Genre: \(genre).") }
        if let count = fields["track_count"]?.intValue { summary.append("\(count) episodes.") }
        if let feed = link(fields["feed_url"]) { summary.append("Feed: \(feed)") }
        return FeedItem(
            guid: "storesync:podcast:\(key)",
            title: name,
            link: link(fields["view_url"]),
            description: summary.joined(separator: " "),
            pubDate: text(fields["release_date"]).flatMap(parseDate) ?? fallbackDate,
            author: text(fields["artist"]),
            imageURL: link(fields["artwork_url"]),
            explicit: fields["explicit"]?.boolValue)
    }

    /// iTunes dates are ISO 8601 with `Z` (sometimes with fractions); the
    /// marketplace's are local `yyyy-MM-ddTHH:mm:ss` (read as UTC). Format
    /// styles are values: made once, shared by every item.
    static let iso8601 = Date.ISO8601FormatStyle()
    static let iso8601Fractional = Date.ISO8601FormatStyle(includingFractionalSeconds: true)

    static func parseDate(_ text: String) -> Date? {
        if let date = try? iso8601.parse(text) { return date }
        if let date = try? iso8601Fractional.parse(text) { return date }
        return try? iso8601.parse(String(text.prefix(19)) + "Z")
    }

    // MARK: OPML

    /// Podcast feed URLs, by genre: with `{genre}` in the path one file per
    /// genre, otherwise one file with an outline per genre.
    static func writeOPML(_ spec: OPMLExportSpec, context: ExportContext) throws -> [ExportedFile] {
        // Every podcast is listed, but only its outline is kept: the payloads are
        // streamed (in storage order: the outlines are sorted by name and key below).
        var byGenre: [String: [OPMLFeed]] = [:]
        var withheld = 0
        try context.store.forEachRecord(of: .podcast, columns: [], order: .insertion) { record in
            guard let fields = parse(record.payload), let given = text(fields["feed_url"]) else { return }
            // An outline is its feed URL: without a publishable one it is withheld, not written with junk.
            guard let feedURL = PublishableURL.http(given) else {
                withheld += 1
                return
            }
            byGenre[genre(of: fields), default: []].append(
                OPMLFeed(name: text(fields["name"]) ?? "podcast \(record.key)", key: record.key, xmlURL: feedURL,
                         htmlURL: link(fields["view_url"])))
        }
        if withheld > 0 {
            context.logger?.warning("opml \(spec.path): \(withheld) podcast\(withheld == 1 ? "" : "s") withheld: the feed URL is not an http(s) URL")
        }
        let groups = byGenre.keys.sorted().map { genre in
            (genre: genre, feeds: byGenre[genre]!.sorted { $0.name == $1.name ? $0.key < $1.key : $0.name < $1.name })
        }
        var files: [ExportedFile] = []
        let values = ["date": PathTemplate.dateValue(context.runDate), "job": context.jobName]
        if PathTemplate.variables(in: spec.path).contains("genre") {
            let names = distinctNames(groups.map { ["genre": $0.genre] }, template: spec.path, logger: context.logger)
            for (group, distinct) in zip(groups, names) {
                let url = try PathTemplate.resolve(spec.path, values: values.merging(distinct) { $1 }, inside: context.outputDirectory)
                let result = try FeedWriters.writeOPML(title: "\(spec.title): \(group.genre)", date: context.runDate,
                                                       groups: [(group.genre, group.feeds.map(opmlFeed))], nested: false, to: url)
                files.append(ExportedFile(path: url.path, bytes: result.bytes, rows: result.count))
            }
            if !files.isEmpty { files[0].linksWithheld = withheld }
        } else {
            let url = try PathTemplate.resolve(spec.path, values: values, inside: context.outputDirectory)
            let result = try FeedWriters.writeOPML(title: spec.title, date: context.runDate,
                                                   groups: groups.map { ($0.genre, $0.feeds.map(opmlFeed)) }, nested: true, to: url)
            var file = ExportedFile(path: url.path, bytes: result.bytes, rows: result.count)
            file.linksWithheld = withheld
            files.append(file)
        }
        return files
    }

    /// The group values to name each group's file with: its own, unless an
    /// earlier group's (in the groups' stable order) sanitise to the same file
    /// name ("Rock & Roll" and "Rock  Roll" both give `Rock-Roll`); then each
    /// value gets a hash of itself appended, so the name is distinct and the
    /// same every night while both groups exist, and a warning says so.
    static func distinctNames(_ groups: [[String: String]], template: String, logger: Logger?) -> [[String: String]] {
        var taken: [String: [String: String]] = [:]
        return groups.map { values in
            let name = PathTemplate.expand(template, values)
            guard let first = taken[name], first != values else {
                taken[name] = values
                return values
            }
            var distinct = values
            for (key, value) in values { distinct[key] = "\(value) \(stableHash(value))" }
            let renamed = PathTemplate.expand(template, distinct)
            taken[renamed] = distinct
            logger?.warning("\(describe(values)) and \(describe(first)) both make the file name \(name); \(describe(values)) is written to \(renamed)")
            return distinct
        }
    }

    private static func describe(_ values: [String: String]) -> String {
        values.sorted { $0.key < $1.key }.map { "\($0.key) \"\($0.value)\"" }.joined(separator: ", ")
    }

    /// 8 hex digits of FNV-1a over the value's UTF-8: the same on every machine and night.
    static func stableHash(_ value: String) -> String {
        var hash: UInt32 = 0x811C_9DC5
        for byte in value.utf8 { hash = (hash ^ UInt32(byte)) &* 0x0100_0193 }
        let hex = String(hash, radix: 16)
        return String(repeating: "0", count: 8 - hex.count) + hex
    }

    /// A podcast's OPML outline and what it is sorted by.
    struct OPMLFeed {
        var name: String
        var key: String
        var xmlURL: String
        var htmlURL: String?
    }

    static func opmlFeed(_ feed: OPMLFeed) -> (title: String, xmlURL: String, htmlURL: String?) {
        (feed.name, feed.xmlURL, feed.htmlURL)
    }
}
