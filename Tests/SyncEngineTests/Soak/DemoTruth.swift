import Catalog
import Connectors
import Foundation
import Snapshot
@testable import StoreSim
import SyncEngine

/// A canonical field value the oracle predicts, compared loosely with what
/// the store holds: ids may be stored as text or integers, numbers as
/// integers or reals.
enum Expected: Equatable, CustomStringConvertible {
    case text(String)
    case number(Double)

    func matches(_ value: StoredValue) -> Bool {
        switch (self, value) {
        case (.text(let a), .text(let b)): a == b
        case (.text(let a), .integer(let b)): a == String(b)
        case (.number(let a), .integer(let b)): a == Double(b)
        case (.number(let a), .real(let b)): a == b
        case (.number(let a), .text(let b)): Double(b) == a
        default: false
        }
    }

    var description: String {
        switch self {
        case .text(let s): "'\(s)'"
        case .number(let d): d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
        }
    }

    init?(_ json: JSONValue?) {
        switch json {
        case .string(let s)?: self = .text(s)
        case .int(let i)?: self = .number(Double(i))
        case .double(let d)?: self = .number(d)
        default: return nil
        }
    }
}

/// The canonical fields of one entity the oracle can predict, by canonical column name.
typealias PredictedFields = [String: Expected]

/// Which entities the demo job's snapshot must hold after each simulated
/// night, computed from the simulator's world alone (never from the store):
/// what every source's scopes list that night, and, with each source's
/// `removal.afterMisses`, what they listed on recent nights.
///
/// One value per (entity, key), merged over sources, as the entity model
/// holds it. Chart entries are identified by their slot (`chart|country|genre|rank`)
/// whatever key the store files them under; their item is a field.
///
/// It models the source kinds of `jobs/demo.yml` (genres, legacy charts,
/// podcast search, podcast feeds, the marketplace list and its details);
/// a job with another kind is refused.
final class DemoTruth {
    struct Unsupported: Error, CustomStringConvertible {
        var description: String
    }

    /// What one source listed, with the night it was last listed and the
    /// fields it gave then (a missed entity keeps its last stored fields).
    struct Sighting {
        var night: Int
        var fields: PredictedFields
        /// The scope that listed it last (feeds: `feed:<podcast>`).
        var scope: String
    }

    enum Role { case lists(afterMisses: Int), ranks }

    struct Source {
        var spec: SourceSpec
        var role: Role
        var sightings: [RecordIdentity: Sighting] = [:]
    }

    let world: World
    let job: JobSpec
    private(set) var sources: [Source] = []
    private(set) var night = 0
    /// Episodes never change once published: computed once per (podcast, number).
    private var episodeCache: [Int: PodcastCatalog.Episode] = [:]

    init(job: JobSpec) throws {
        guard let simulator = job.simulator else { throw Unsupported(description: "the job has no simulator section") }
        self.job = job
        world = World(config: SimulatorConfig(
            seed: simulator.seed, podcastCount: simulator.podcasts, productCount: simulator.products,
            churn: Churn(changed: simulator.changed, added: simulator.added, removed: simulator.removed)))
        for spec in job.sources {
            switch spec.settings {
            case is ITunesChartsSettings: sources.append(Source(spec: spec, role: .ranks))
            case is ITunesGenresSettings, is ITunesSearchSettings, is PodcastFeedSettings, is MarketplaceSettings:
                sources.append(Source(spec: spec, role: .lists(afterMisses: spec.removal.afterMisses)))
            default:
                throw Unsupported(description: "the oracle does not model source kind \(spec.kind) (\(spec.name))")
            }
        }
    }

    /// Moves the world to `night` (the next one) and returns every entity the
    /// snapshot must hold after the job has crawled it.
    func advance(to night: Int) -> [RecordIdentity: PredictedFields] {
        precondition(night == self.night + 1, "nights are crawled in order")
        self.night = night
        for index in sources.indices {
            let listed = listing(of: sources[index].spec, night: night)
            for (identity, sighting) in listed { sources[index].sightings[identity] = sighting }
            forget(source: index)
        }
        return held()
    }

    /// Drops what a source no longer holds after tonight: a ranked list's
    /// sightings end at once; a listing's after `afterMisses` nights unlisted.
    private func forget(source index: Int) {
        switch sources[index].role {
        case .ranks:
            sources[index].sightings = sources[index].sightings.filter { $0.value.night == night }
        case .lists(let afterMisses):
            sources[index].sightings = sources[index].sightings.filter { night - $0.value.night < afterMisses }
        }
    }

    /// The union over sources, fields merged (sources agree on every field the oracle predicts).
    private func held() -> [RecordIdentity: PredictedFields] {
        var out: [RecordIdentity: PredictedFields] = [:]
        for source in sources {
            for (identity, sighting) in source.sightings {
                out[identity, default: [:]].merge(sighting.fields) { first, _ in first }
            }
        }
        return out
    }

    /// The entities a source held after an earlier source ran (feeds start from the search's podcasts).
    private func holdings(of sourceName: String) -> [RecordIdentity: Sighting] {
        sources.first { $0.spec.name == sourceName }?.sightings ?? [:]
    }

    // MARK: What each kind lists on a night

    private func listing(of spec: SourceSpec, night: Int) -> [RecordIdentity: Sighting] {
        switch spec.settings {
        case let genres as ITunesGenresSettings: genreListing(genres, night: night)
        case let charts as ITunesChartsSettings: chartListing(charts, night: night)
        case let search as ITunesSearchSettings: searchListing(search, night: night)
        case let feeds as PodcastFeedSettings: feedListing(feeds, night: night)
        case is MarketplaceSettings: marketListing(night: night)
        default: [:]
        }
    }

    private func genreListing(_ settings: ITunesGenresSettings, night: Int) -> [RecordIdentity: Sighting] {
        var out: [RecordIdentity: Sighting] = [:]
        for root in settings.roots.map(String.init) {
            for id in world.genres.subtreeIDs(root, night: night) {
                var fields: PredictedFields = [:]
                fields["name"] = world.genres.name(id, night: night).map(Expected.text)
                fields["parent_id"] = .text(world.genres.nodes[id]?.parent ?? "")
                out[RecordIdentity(entity: .genre, key: id)] = Sighting(night: night, fields: fields, scope: "genres:\(root)")
            }
        }
        return out
    }

    /// Chart slots (identified by `chart|country|genre|rank`) and, for the
    /// first country, the charted podcasts themselves.
    private func chartListing(_ settings: ITunesChartsSettings, night: Int) -> [RecordIdentity: Sighting] {
        var genres: [String] = settings.includeAllGenres ? [""] : []
        if let from = settings.genresFrom {
            // Only the genres the genres source holds are charted, in the order the job names them.
            let held = Set(holdings(of: from).keys.filter { $0.entity == .genre }.map(\.key))
            let wanted = settings.genres.isEmpty ? held.sorted() : settings.genres.map(String.init).filter(held.contains)
            genres += wanted
        } else {
            genres += settings.genres.map(String.init)
        }
        var out: [RecordIdentity: Sighting] = [:]
        for (n, country) in settings.countries.map({ $0.lowercased() }).enumerated() {
            for chart in settings.charts {
                for genre in genres {
                    let scope = "chart:\(chart):\(country):\(genre.isEmpty ? "all" : genre)"
                    let items = world.chartKeys(chart: chart, genre: genre.isEmpty ? nil : genre, country: country,
                                                limit: settings.limit, night: night)
                    for (position, item) in items.enumerated() {
                        var slot: PredictedFields = [
                            "chart": .text(chart), "country": .text(country), "genre_id": .text(genre),
                            "rank": .number(Double(position + 1)), "item_entity": .text("podcast"), "item_key": .text(item),
                        ]
                        if let i = world.podcasts.index(forKey: item) {
                            slot["name"] = .text(world.podcasts.show(i, night: night).title)
                        }
                        out[Self.slot(chart: chart, country: country, genre: genre, rank: position + 1)] =
                            Sighting(night: night, fields: slot, scope: scope)
                        // Items are described by the first country's charts only.
                        if n == 0, let i = world.podcasts.index(forKey: item) {
                            let show = world.podcasts.show(i, night: night)
                            out[RecordIdentity(entity: .podcast, key: item)] = Sighting(
                                night: night, fields: ["name": .text(show.title), "artist": .text(show.artistName),
                                                       "genre": .text(show.genre.name)],
                                scope: scope)
                        }
                    }
                }
            }
        }
        return out
    }

    /// The identity the oracle gives a chart slot.
    static func slot(chart: String, country: String, genre: String, rank: Int) -> RecordIdentity {
        RecordIdentity(entity: .chartEntry, key: "\(chart)|\(country)|\(genre)|\(rank)")
    }

    private func searchListing(_ settings: ITunesSearchSettings, night: Int) -> [RecordIdentity: Sighting] {
        var out: [RecordIdentity: Sighting] = [:]
        for country in settings.countries {
            for term in settings.terms {
                let scope = "search:media=\(settings.media)&country=\(country)&term=\(term)"
                let keys = world.searchResultKeys(term: term, media: settings.media, entity: settings.entity, night: night)
                for key in keys.prefix(settings.maxResults) {
                    let identity = RecordIdentity(entity: .podcast, key: key)
                    guard out[identity] == nil else { continue }
                    out[identity] = Sighting(night: night, fields: podcastFields(key: key, night: night), scope: scope)
                }
            }
        }
        return out
    }

    /// A Search row's canonical fields.
    private func podcastFields(key: String, night: Int) -> PredictedFields {
        guard let text = world.rowJSON(entity: "podcast", key: key, night: night),
              let row = try? JSONParser.parse(Array(text.utf8)) else { return [:] }
        var fields: PredictedFields = [:]
        fields["name"] = Expected(row["trackName"])
        fields["artist"] = Expected(row["artistName"])
        fields["genre"] = Expected(row["primaryGenreName"])
        fields["feed_url"] = Expected(row["feedUrl"])
        fields["track_count"] = Expected(row["trackCount"])
        return fields
    }

    /// The feeds of the first `maxFeeds` podcasts (in key order) the upstream
    /// source holds with a feed, every episode keyed `<podcast>|<guid>`.
    private func feedListing(_ settings: PodcastFeedSettings, night: Int) -> [RecordIdentity: Sighting] {
        let wanted = Set(settings.podcasts)
        let upstream = holdings(of: settings.from)
        var selected: [String] = []
        for identity in upstream.keys.filter({ $0.entity == .podcast }).sorted() {
            if let limit = settings.maxFeeds, selected.count >= limit { break }
            guard wanted.isEmpty || wanted.contains(identity.key), upstream[identity]?.fields["feed_url"] != nil else { continue }
            selected.append(identity.key)
        }
        var out: [RecordIdentity: Sighting] = [:]
        for key in selected {
            guard let i = world.podcasts.index(forKey: key), let numbers = world.podcasts.episodeNumbers(i, night: night) else {
                continue
            }
            let show = world.podcasts.show(i, night: night)
            for n in numbers {
                let e = episode(i, number: n, show: show)
                let contentType = e.fileExtension == "mp3" ? "audio/mpeg" : "audio/x-m4a"
                out[RecordIdentity(entity: .episode, key: "\(key)|\(e.guid)")] = Sighting(
                    night: night,
                    fields: ["name": .text(e.title), "podcast": .text(show.title), "podcast_id": .text(key),
                             "guid": .text(e.guid), "duration_ms": .number(Double(e.millis)),
                             "enclosure_length": .number(Double(e.bytes)), "enclosure_type": .text(contentType)],
                    scope: "feed:\(key)")
            }
        }
        // A feed that is no longer selected is no scope any more: its episodes
        // have left every scope, as an episode gone from its feed has.
        return out
    }

    private func episode(_ i: Int, number n: Int, show: PodcastCatalog.Show) -> PodcastCatalog.Episode {
        let index = world.podcasts.episodeIndex(podcast: i, number: n)
        if let cached = episodeCache[index] { return cached }
        let e = world.podcasts.episode(i, number: n, fixed: show.fixed, nights: show.nights)
        episodeCache[index] = e
        return e
    }

    private func marketListing(night: Int) -> [RecordIdentity: Sighting] {
        var out: [RecordIdentity: Sighting] = [:]
        for key in world.orderedKeys(entity: "listing", night: night) {
            guard let text = world.rowJSON(entity: "listing", key: key, night: night),
                  let row = try? JSONParser.parse(Array(text.utf8)) else { continue }
            var fields: PredictedFields = [:]
            for name in ["name", "vendor_id", "price", "bargain_price", "discounted_price", "currency", "stock", "thumbnail"] {
                fields[name] = Expected(row[name])
            }
            out[RecordIdentity(entity: .listing, key: key)] = Sighting(night: night, fields: fields, scope: "products")
        }
        return out
    }
}
