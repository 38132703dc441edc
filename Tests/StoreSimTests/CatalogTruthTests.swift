import Catalog
import Foundation
@testable import StoreSim
import Testing

/// `World.diff` names exactly the keys whose served records differ, for every
/// new entity, checked night after night against what the endpoints serve
/// (Lookup for catalog items and episodes, the genres service, the charts).
@Suite struct CatalogTruthTests {
    let world = Worlds.media()

    /// Every row Lookup serves for the indices ever born in `entity`'s catalog, keyed by the row's key.
    func lookedUp(_ entity: String, night: Int) throws -> [String: JSONValue] {
        let catalog = try #require(world.itemCatalog(entity))
        let ids = (0..<catalog.indexCount(through: night)).compactMap { i -> String? in
            // Songs have gaps in their index space; only real tracks have ids.
            entity == "song" && world.music.split(i) == nil ? nil : catalog.key(i)
        }
        var rows: [String: JSONValue] = [:]
        var start = 0
        while start < ids.count {
            let batch = ids[start..<min(start + Endpoints.maxLookupIDs, ids.count)]
            let response = request(world, night: night, "/lookup?id=\(batch.joined(separator: ","))")
            #expect(response.status == 200)
            for row in try resultRows(response) {
                let keyField = ["album", "audiobook"].contains(entity) ? "collectionId" : "trackId"
                let key = try #require(row[keyField]?.intValue.map(String.init))
                #expect(rows[key] == nil, "\(entity) \(key) served twice")
                rows[key] = .object(row)
            }
            start += Endpoints.maxLookupIDs
        }
        return rows
    }

    @Test(arguments: ["song", "album", "movie", "app", "audiobook", "ebook"])
    func catalogDiffIsExact(entity: String) throws {
        var before: [String: JSONValue] = [:]
        for night in 1...5 {
            let after = try lookedUp(entity, night: night)
            let truth = world.diff(entity: entity, night: night)
            #expect(truth == observedDiff(before: before, after: after), "\(entity) night \(night)")
            #expect(Set(after.keys) == world.aliveKeys(entity: entity, night: night), "\(entity) night \(night)")
            if night > 1 {
                #expect(!truth.added.isEmpty && !truth.changed.isEmpty && !truth.removed.isEmpty,
                        "\(entity) night \(night) should exercise every kind of change")
            }
            // rowJSON is the served row, byte for byte.
            for key in after.keys.sorted().prefix(5) {
                let text = try #require(world.rowJSON(entity: entity, key: key, night: night))
                #expect(try parse(Array(text.utf8)) == after[key])
            }
            before = after
        }
    }

    /// Episodes as Lookup serves them (limit=200, the whole window) for every alive podcast.
    func episodes(_ world: World, night: Int) throws -> [String: JSONValue] {
        var rows: [String: JSONValue] = [:]
        let podcasts = world.orderedKeys(entity: "podcast", night: night)
        var start = 0
        while start < podcasts.count {
            let batch = podcasts[start..<min(start + 200, podcasts.count)]
            let response = request(world, night: night,
                                   "/lookup?id=\(batch.joined(separator: ","))&entity=podcastEpisode&limit=200")
            for row in try resultRows(response) where row["wrapperType"]?.stringValue == "podcastEpisode" {
                let key = try #require(row["trackId"]?.intValue.map(String.init))
                rows[key] = .object(row)
            }
            start += 200
        }
        return rows
    }

    @Test func episodeDiffIsExact() throws {
        // Fewer podcasts: each carries up to 200 episodes.
        let world = World(config: SimulatorConfig(seed: 9, podcastCount: 40, productCount: 1,
                                                  churn: Churn(changed: 0.3, added: 0.05, removed: 0.05), songCount: 0,
                                                  movieCount: 0, appCount: 0, audiobookCount: 0, ebookCount: 0))
        var before: [String: JSONValue] = [:]
        for night in 1...4 {
            let after = try episodes(world, night: night)
            let truth = world.diff(entity: "episode", night: night)
            #expect(truth == observedDiff(before: before, after: after), "episodes night \(night)")
            #expect(Set(after.keys) == world.aliveKeys(entity: "episode", night: night))
            if night > 1 { #expect(!truth.added.isEmpty && !truth.changed.isEmpty && !truth.removed.isEmpty) }
            before = after
        }
    }

    /// Every genre node as the service serves it, without its subgenres.
    func genreNodes(night: Int) throws -> [String: JSONValue] {
        var nodes: [String: JSONValue] = [:]
        func walk(_ node: [String: JSONValue]) throws {
            let id = try #require(node["id"]?.stringValue)
            var record = node
            record["subgenres"] = nil
            nodes[id] = .object(record)
            for child in node["subgenres"]?.objectValue?.values ?? [:].values {
                try walk(try #require(child.objectValue))
            }
        }
        let document = try parseObject(request(world, night: night, Endpoints.genresPath).body)
        for root in document.values { try walk(try #require(root.objectValue)) }
        return nodes
    }

    @Test func genreDiffIsExact() throws {
        let genres = world.genres
        let events = try #require(genres.additionNight.flatMap { a in genres.renameNight.map { (a, $0) } })
        var before: [String: JSONValue] = [:]
        var changedSomewhere = false, addedSomewhere = false
        for night in 1...7 {
            let after = try genreNodes(night: night)
            let truth = world.diff(entity: "genre", night: night)
            #expect(truth == observedDiff(before: before, after: after), "genres night \(night)")
            if night > 1 {
                changedSomewhere = changedSomewhere || !truth.changed.isEmpty
                addedSomewhere = addedSomewhere || !truth.added.isEmpty
            }
            before = after
        }
        #expect(changedSomewhere && addedSomewhere, "taxonomy events on nights \(events)")
        // The renamed genre is no catalog's genre, so no row changes with it.
        #expect(!AppCatalog.rowGenres.contains { $0.id == GenreTrees.renamedID })
    }

    /// Entries of the truth charts as served (legacy JSON, 100 entries): `chart||rank` → item id.
    func chartEntries(night: Int) throws -> [String: JSONValue] {
        var entries: [String: JSONValue] = [:]
        for spec in ChartSpec.truthCharts {
            let feed = try #require(try parseObject(request(world, night: night, "/us/rss/\(spec.name)/limit=100/json").body)["feed"])
            let list: [JSONValue]
            switch feed["entry"] {
            case .array(let items)?: list = items
            case .object?: list = [try #require(feed["entry"])]
            default: list = []
            }
            for (rank, entry) in list.enumerated() {
                entries["\(spec.name)||\(rank + 1)"] = try #require(entry["id"]?["attributes"]?["im:id"])
            }
        }
        return entries
    }

    @Test func chartEntryDiffIsExact() throws {
        var before: [String: JSONValue] = [:]
        for night in 1...4 {
            let after = try chartEntries(night: night)
            let truth = world.diff(entity: "chart-entry", night: night)
            #expect(truth == observedDiff(before: before, after: after), "charts night \(night)")
            #expect(Set(after.keys) == world.aliveKeys(entity: "chart-entry", night: night))
            if night > 1 { #expect(!truth.changed.isEmpty, "chart positions move each night") }
            before = after
        }
    }

    /// Search truth for the new media: what every page of a term serves, night after night.
    @Test(arguments: [("music", "song"), ("music", "album"), ("movie", "movie"), ("software", "software"),
                      ("audiobook", "audiobook"), ("ebook", "ebook"), ("all", nil)] as [(String, String?)])
    func searchDiffIsExact(media: String, entity: String?) throws {
        let terms = ["love", "night star"]
        func served(_ night: Int) throws -> [String: JSONValue] {
            var rows: [String: JSONValue] = [:]
            for term in terms {
                var offset = 0
                while true {
                    var query = [("term", term), ("media", media), ("limit", "200"), ("offset", "\(offset)")]
                    if let entity { query.append(("entity", entity)) }
                    let page = try searchResults(world, night: night, query)
                    for row in page.rows {
                        let keyField = row["wrapperType"]?.stringValue == "collection"
                            || row["wrapperType"]?.stringValue == "audiobook" ? "collectionId" : "trackId"
                        rows[try #require(row[keyField]?.intValue.map(String.init))] = row
                    }
                    if page.count < 200 { break }
                    offset += 200
                }
            }
            return rows
        }
        var before: [String: JSONValue] = [:]
        for night in 1...4 {
            let after = try served(night)
            #expect(!after.isEmpty)
            #expect(world.searchDiff(terms: terms, media: media, entity: entity, night: night)
                == observedDiff(before: before, after: after), "\(media)/\(entity ?? "-") night \(night)")
            before = after
        }
        let keys = world.searchResultKeys(term: "love", media: media, entity: entity, night: 2)
        #expect(Set(keys).count == keys.count && !keys.isEmpty)
    }

    @Test func zeroChurnWorldsStandStill() {
        let world = World(config: SimulatorConfig(seed: 5, podcastCount: 100, productCount: 50,
                                                  churn: Churn(changed: 0, added: 0, removed: 0), songCount: 200,
                                                  movieCount: 50, appCount: 50, audiobookCount: 20, ebookCount: 20))
        for entity in World.entities {
            #expect(world.diff(entity: entity, night: 2).isEmpty, "\(entity)")
            #expect(world.diff(entity: entity, night: 9).isEmpty, "\(entity)")
        }
        #expect(world.chartKeys(chart: "toppodcasts", night: 1) == world.chartKeys(chart: "toppodcasts", night: 8))
    }
}
