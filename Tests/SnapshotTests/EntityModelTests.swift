import Catalog
import Foundation
import Snapshot
import Testing
import TestSupport

/// One row per entity, whatever the number of sources that list it (issue 13);
/// every test runs on each engine (``StoreEngine/tested``) with the same assertions.
@Suite struct EntityModelTests {
    /// A source that names its fields like iTunes Search does; the canonical name is `name`.
    static let search = SourceMapping(canonical: { entity, wire in
        var fields = wire
        fields["name"] = fields.removeValue(forKey: "trackName")
        return CanonicalRecord(entity: entity, fields: fields)
    }, role: { _ in .lists })
    /// A chart: the same canonical names, a ranked list.
    static let chart = SourceMapping(canonical: SourceMapping.identity.canonical, role: { _ in .ranks })
    /// A marketplace whose detail pages describe its listings.
    static let market = SourceMapping(
        canonical: { entity, wire in CanonicalRecord(entity: entity == .listingDetail ? .listing : entity, fields: wire) },
        role: { $0 == .listingDetail ? .describes : .lists })

    func store(_ engine: StoreEngine) async throws -> SQLSnapshotStore {
        let store = try await engine.makeStore().store
        try store.prepareEntities(["search": Self.search, "chart": Self.chart, "market": Self.market])
        return store
    }

    func podcast(_ key: Int, _ fields: [String: JSONValue]) -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: String(key), fields: fields)
    }

    /// One night: each source's single scope lists `records`, completely, then is swept.
    func night(_ store: SQLSnapshotStore, _ lists: [String: [Catalog.Record]],
               policy: RemovalPolicy = RemovalPolicy(afterMisses: 1, maxRatio: 1)) async throws -> (RunInfo, [String: RemovalResult]) {
        let run = try store.beginRun(job: "t", at: Date(), simulated: false)
        for source in lists.keys.sorted() {
            var input = PageInput(runID: run.id, source: source, scope: "s", page: 0, records: lists[source]!)
            input.completesScope = true
            _ = try await store.apply(input)
        }
        var removals: [String: RemovalResult] = [:]
        for source in lists.keys.sorted() {
            try store.finishScope(runID: run.id, source: source, scope: "s", state: .complete, error: nil)
            removals[source] = try store.sweepScope(runID: run.id, source: source, scope: "s", removal: policy)
        }
        try store.finishRun(run.id, status: .ok, message: nil, at: Date())
        return (run, removals)
    }

    func rows(_ store: SQLSnapshotStore, _ entity: EntityKind = .podcast) throws -> [String: String] {
        var rows: [String: String] = [:]
        try store.forEachRecord(of: entity, columns: [], order: .insertion) { rows[$0.key] = $0.payload }
        return rows
    }

    @Test(arguments: StoreEngine.tested)
    func anEntityListedByTwoSourcesIsOneRowWithTheListsFieldsFirst(engine: StoreEngine) async throws {
        let store = try await store(engine)
        let (run, _) = try await night(store, [
            "search": [podcast(1, ["trackName": "Daily", "feed_url": "https://a/feed"])],
            "chart": [podcast(1, ["name": "Daily (chart)", "artwork_url": "https://a/600.jpg"]), podcast(2, ["name": "Only charted"])],
        ])
        let stored = try rows(store)
        #expect(stored.count == 2)
        #expect(stored["1"] == #"{"artwork_url":"https://a/600.jpg","feed_url":"https://a/feed","name":"Daily"}"#)
        #expect(try store.recordCount(of: .podcast) == 2)
        let added = try store.changes(runID: run.id).filter { $0.op == "added" }
        #expect(added.map(\.key).sorted() == ["1", "2"], "the second sighting of podcast 1 is not a second addition")
    }

    /// A podcast new tonight, listed by two storefronts (its country and link
    /// differ) and filled in by a chart: the night added it, as the last
    /// version met, and changed nothing. Before, its log had a `changed` line
    /// for every later sighting (23,032 on the first night of a 3-country
    /// search of 8,902 podcasts) while every summary said 0 changed.
    @Test(arguments: StoreEngine.tested)
    func anEntityAddedTonightAndMetAgainInAnotherVersionIsAddedOnceAndNotChanged(engine: StoreEngine) async throws {
        let store = try await store(engine)
        _ = try await night(store, ["search": [podcast(1, ["trackName": "Old", "country": "USA"])]])
        let run = try store.beginRun(job: "t", at: Date(), simulated: false)
        let pages: [(String, String, [Catalog.Record])] = [
            ("search", "us", [podcast(1, ["trackName": "Old", "country": "USA"]), podcast(2, ["trackName": "New", "country": "USA"])]),
            ("search", "gb", [podcast(1, ["trackName": "Old", "country": "GBR"]), podcast(2, ["trackName": "New", "country": "GBR"])]),
            ("chart", "top", [podcast(2, ["name": "New (chart)", "rank": 1])]),
        ]
        var counts: [String: (added: Int, changed: Int)] = [:]
        for (source, scope, records) in pages {
            var input = PageInput(runID: run.id, source: source, scope: scope, page: 0, records: records)
            input.completesScope = true
            let result = try await store.apply(input)
            counts[source, default: (0, 0)].added += result.added
            counts[source, default: (0, 0)].changed += result.changed
        }
        try store.finishRun(run.id, status: .ok, message: nil, at: Date())
        let log = try store.changes(runID: run.id)
        // Podcast 1 was there when the night began: its country changed, once, from where the night found it.
        #expect(log.filter { $0.key == "1" }.map { "\($0.op) \($0.field ?? "") \($0.before ?? "") \($0.after ?? "")" }
                == [#"changed country "USA" "GBR""#])
        // Podcast 2 is new tonight: one addition, holding what the night leaves.
        let two = log.filter { $0.key == "2" }
        #expect(two.map(\.op) == ["added"], "\(two)")
        #expect(two.first?.after == #"{"country":"GBR","name":"New","rank":1}"#)
        #expect(try rows(store)["2"] == #"{"country":"GBR","name":"New","rank":1}"#)
        #expect(counts["search"]?.added == 1 && counts["search"]?.changed == 1)
        // What `status`, the report and the metrics say the night did, read from the log.
        let tallies = try store.entityTallies(runID: run.id).filter { $0.entity == EntityKind.podcast.rawValue }
        #expect(tallies.map { "\($0.source) \($0.added) \($0.changed)" }.sorted() == ["chart 0 0", "search 1 1"], "\(tallies)")
    }

    @Test(arguments: StoreEngine.tested)
    func leavingAChartIsNeitherGuardedNorADisappearanceWhileAnotherSourceListsIt(engine: StoreEngine) async throws {
        let store = try await store(engine)
        let charted = (1...10).map { podcast($0, ["name": .string("P\($0)"), "rank": .int(Int64($0))]) }
        _ = try await night(store, ["chart": charted, "search": [podcast(3, ["trackName": "P3"])]],
                            policy: RemovalPolicy(afterMisses: 2, maxRatio: 0.1))
        // The whole chart turns over: ten sightings end at once, with no guard and no waiting for misses.
        let next = (11...20).map { podcast($0, ["name": .string("P\($0)"), "rank": .int(Int64($0 - 10))]) }
        let (run, removals) = try await night(store, ["chart": next, "search": [podcast(3, ["trackName": "P3"])]],
                                              policy: RemovalPolicy(afterMisses: 2, maxRatio: 0.1))
        #expect(removals["chart"]?.guardWarning == nil)
        #expect(removals["chart"]?.removed == 10)
        let stored = try rows(store)
        let expected: Set<String> = Set(["3"] + (11...20).map { String($0) })
        #expect(Set(stored.keys) == expected)
        let changes = try store.changes(runID: run.id)
        let removedKeys: [String] = changes.filter { $0.op == "removed" }.map(\.key).sorted()
        #expect(removedKeys == ["1", "10", "2", "4", "5", "6", "7", "8", "9"])
        // Podcast 3 lost its chart part: what only the chart said (its rank) goes, as a change.
        #expect(changes.contains { $0.key == "3" && $0.op == "changed" && $0.field == "rank" && $0.after == nil })
    }

    @Test(arguments: StoreEngine.tested)
    func aListThatComesBackEmptyIsNotTakenAsTheChart(engine: StoreEngine) async throws {
        let store = try await store(engine)
        _ = try await night(store, ["chart": (1...5).map { podcast($0, ["name": "P"]) }])
        let (_, removals) = try await night(store, ["chart": []])
        #expect(removals["chart"]?.guardWarning != nil)
        #expect(try rows(store).count == 5)
    }

    @Test(arguments: StoreEngine.tested)
    func theRatioGuardWeighsOnlyEntitiesNoOtherSourceLists(engine: StoreEngine) async throws {
        let store = try await store(engine)
        let all = (1...10).map { podcast($0, ["trackName": "P"]) }
        let guardPolicy = RemovalPolicy(afterMisses: 1, maxRatio: 0.1)
        let chartedFirst: [Catalog.Record] = (1...10).map { podcast($0, ["name": "P"]) }
        _ = try await night(store, ["search": all, "chart": chartedFirst], policy: guardPolicy)
        // Search drops 8 of its 10, but the chart still lists all of them: membership churn, not disappearance.
        let charted: [Catalog.Record] = (1...10).map { podcast($0, ["name": "P"]) }
        let (_, churn) = try await night(store, ["search": Array(all.prefix(2)), "chart": charted], policy: guardPolicy)
        #expect(churn["search"]?.guardWarning == nil)
        #expect(churn["search"]?.removed == 8)
        #expect(try rows(store).count == 10)
        // Now the chart drops them too and search lists only two: 8 entities would disappear: guarded.
        let stillCharted: [Catalog.Record] = [podcast(1, ["name": "P"]), podcast(2, ["name": "P"])]
        let (_, gone) = try await night(store, ["search": Array(all.prefix(1)), "chart": stillCharted], policy: guardPolicy)
        #expect(gone["search"]?.guardWarning == nil, "one entity leaving is within the ratio")
        #expect(try rows(store).count == 2)
    }

    @Test(arguments: StoreEngine.tested)
    func aListingsDetailIsPartOfItAndLeavesWithIt(engine: StoreEngine) async throws {
        let store = try await store(engine)
        func listing(_ key: Int, price: Double) -> Catalog.Record {
            Catalog.Record(entity: .listing, key: String(key), fields: ["name": "Kettle", "price": .double(price)])
        }
        let detail = Catalog.Record(entity: .listingDetail, key: "1", fields: ["description": "Boils", "price": .double(9)])
        _ = try await night(store, ["market": [listing(1, price: 10), listing(2, price: 5), detail]])
        var stored = try rows(store, .listing)
        #expect(stored.count == 2)
        #expect(stored["1"] == #"{"description":"Boils","name":"Kettle","price":10}"#, "the list's price wins, the detail fills in")
        #expect(try store.entities() == [.listing])

        let (run, _) = try await night(store, ["market": [listing(2, price: 5)]])
        stored = try rows(store, .listing)
        #expect(Array(stored.keys) == ["2"])
        #expect(try store.records(source: "market").map(\.key) == ["2"], "the detail left with its listing")
        #expect(try store.changes(runID: run.id).map(\.op) == ["removed"])
    }

    @Test(arguments: StoreEngine.tested)
    func changesAreLoggedInCanonicalNamesAndAddedEntitiesCarryTheirValues(engine: StoreEngine) async throws {
        let store = try await store(engine)
        _ = try await night(store, ["search": [podcast(1, ["trackName": "Old"])]])
        let (run, _) = try await night(store, ["search": [podcast(1, ["trackName": "New"]), podcast(2, ["trackName": "Two"])]])
        let changes = try store.changes(runID: run.id)
        #expect(changes.contains { $0.op == "changed" && $0.field == "name" && $0.before == "\"Old\"" && $0.after == "\"New\"" })
        #expect(changes.contains { $0.op == "added" && $0.key == "2" && $0.after == #"{"name":"Two"}"# })
    }

    @Test(arguments: StoreEngine.tested)
    func newFieldsAndTypeChangesAreReportedOnceAfterTheFirstNight(engine: StoreEngine) async throws {
        let store = try await store(engine)
        let (first, _) = try await night(store, ["search": [podcast(1, ["trackName": "A", "count": 3])]])
        #expect(try store.schemaChanges(runID: first.id).isEmpty, "a source's first night is its baseline")
        let (second, _) = try await night(store, ["search": [podcast(1, ["trackName": "A", "count": 3.5, "rating": "good"])]])
        let changes = try store.schemaChanges(runID: second.id)
        #expect(changes == [
            SchemaChange(source: "search", entity: .podcast, field: "count", kind: "real", previousKind: "integer"),
            SchemaChange(source: "search", entity: .podcast, field: "rating", kind: "text", previousKind: nil),
        ])
        let (third, _) = try await night(store, ["search": [podcast(1, ["trackName": "A", "count": 4, "rating": "good"])]])
        #expect(try store.schemaChanges(runID: third.id).isEmpty, "an integer in a real column is no change of type")
        #expect(try store.registeredFields(source: "search", entity: .podcast).map(\.name) == ["count", "trackName", "rating"])
    }

    @Test(arguments: StoreEngine.tested)
    func twoFilesWhoseRowsShareAKeyAreTwoTables(engine: StoreEngine) async throws {
        let store = try await store(engine)
        func row(_ value: JSONValue) -> Catalog.Record { Catalog.Record(entity: .record, key: "1", fields: ["id": 1, "value": value]) }
        _ = try await night(store, ["inventory": [row("bolts")], "prices": [row(2.5)]])
        let stored = try rows(store, .record)
        #expect(stored == ["inventory:1": #"{"id":1,"value":"bolts"}"#, "prices:1": #"{"id":1,"value":2.5}"#])
        let (_, removals) = try await night(store, ["inventory": [], "prices": [row(2.5)]])
        #expect(removals["inventory"]?.removed == 1)
        #expect(try rows(store, .record).keys.sorted() == ["prices:1"])
    }

    @Test(arguments: StoreEngine.tested)
    func theSameNightCrawledAgainIsNotOneMoreMiss(engine: StoreEngine) async throws {
        let store = try await store(engine)
        let policy = RemovalPolicy(afterMisses: 2, maxRatio: 1)
        func night(_ number: Int, _ keys: [Int]) async throws -> RemovalResult {
            let run = try store.beginRun(job: "t", at: Date(), simulated: true, night: number)
            var input = PageInput(runID: run.id, source: "search", scope: "s", page: 0,
                                  records: keys.map { podcast($0, ["trackName": "P"]) })
            input.completesScope = true
            _ = try await store.apply(input)
            try store.finishScope(runID: run.id, source: "search", scope: "s", state: .complete, error: nil)
            let removal = try store.sweepScope(runID: run.id, source: "search", scope: "s", removal: policy)
            try store.finishRun(run.id, status: .ok, message: nil, at: Date())
            return removal
        }
        _ = try await night(1, [1, 2])
        #expect(try await night(2, [1]).pending == 1)
        #expect(try await night(2, [1]).removed == 0, "night 2 again is the same miss, not a second one")
        #expect(try await night(3, [1]).removed == 1)
        #expect(try rows(store).keys.sorted() == ["1"])
    }
}
