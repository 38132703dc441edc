import Catalog
import Connectors
import Foundation
import GRDB
import Snapshot
@testable import StoreSim
import SyncEngine
import Testing
import TestSupport

/// Podcast feeds as real hosts serve them, through whole runs against the
/// simulator (`feed-variants`, `dead-feed-host`): content errors are stored
/// and never open the breaker; a dead host opens it for itself only.
@Suite struct FeedResilienceRunTests {
    static func job(_ directory: URL, faults: [String], maxFeeds: Int) throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: feeds
            store: snapshot.sqlite
            output: out
            simulator: { seed: 13, podcasts: 400, products: 10, changed: 0, added: 0, removed: 0,
                         faults: [\(faults.map { "\"\($0)\"" }.joined(separator: ", "))] }
            http: { maxAttempts: 1, concurrency: 2, circuitBreakerThreshold: 2 }
            sources:
              - {name: podcasts, kind: itunes-search, terms: [news], pageSize: 200}
              - {name: episodes, kind: podcast-feed, from: podcasts, maxFeeds: \(maxFeeds)}
            """, file: "feeds.yml", baseDirectory: directory.path)
    }

    static func world(_ faults: [String]) throws -> World {
        World(config: SimulatorConfig(seed: 13, podcastCount: 400, productCount: 10,
                                      churn: Churn(changed: 0, added: 0, removed: 0), faults: try FaultPlan.parse(faults)))
    }

    /// The canonical fields of an entity, as the store merged them.
    static func entity(_ path: String, _ kind: String, _ key: String) throws -> [String: JSONValue] {
        var configuration = Configuration()
        configuration.readonly = true
        let text = try DatabaseQueue(path: path, configuration: configuration).read { db in
            try String.fetchOne(db, sql: "SELECT fields FROM entities WHERE entity = ? AND key = ?", arguments: [kind, key])
        }
        guard case .object(let fields)? = try text.map({ try JSONParser.parse(Array($0.utf8)) }) else { return [:] }
        return fields
    }

    @Test func everyFeedVariantIsStoredAsDescribedAndNoneOpensTheBreaker() async throws {
        let directory = TestPaths.temporaryDirectory("feed-variants")
        defer { try? FileManager.default.removeItem(at: directory) }
        let faults = ["feed-variants:1"]
        let job = try Self.job(directory, faults: faults, maxFeeds: 30)
        let world = try Self.world(faults)

        let first = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        let episodes = try #require(first.sources.first { $0.name == "episodes" })
        #expect(episodes.errors.isEmpty, "\(episodes.errors)")
        #expect(episodes.scopesTotal == 30 && episodes.scopesComplete == 30)
        #expect(first.outcome == .ok, "\(first.errors) \(first.warnings)")
        #expect(!first.summaryText.contains("circuit breaker"))

        let store = try SQLSnapshotStore(path: job.storePath)
        let records = try store.records(source: "episodes")
        let feedKeys = Set(records.filter { $0.entity == .podcast }.map(\.key))
        #expect(feedKeys.count == 30)
        var seen = Set<ContentFaults.FeedVariant>()
        for key in feedKeys {
            let i = try #require(world.podcasts.index(forKey: key))
            let variant = try #require(world.podcasts.faults.feedVariant(podcast: i))
            seen.insert(variant)
            let numbers = try #require(world.podcasts.episodeNumbers(i, night: 1))
            let show = world.podcasts.show(i, night: 1)
            let stored = try records.filter { $0.entity == .episode && $0.key.hasPrefix("\(key)|") }
                .reduce(into: [String: [String: JSONValue]]()) { $0[try $1.fields()["guid"]?.stringValue ?? ""] = try $1.fields() }
            #expect(stored.count == numbers.count, "\(variant): \(stored.count) of \(numbers.count) episodes stored")
            for n in numbers {
                let e = world.podcasts.episode(i, number: n, fixed: show.fixed, nights: show.nights)
                let fields = try #require(stored[e.guid], "\(variant): episode \(n) missing")
                // Every variant, the Latin-1 body included, reads as the world's text and addresses.
                #expect(fields["trackName"] == .string(e.title), "\(variant)")
                #expect(fields["episodeUrl"] == .string(world.podcasts.episodeURL(i, e)), "\(variant)")
                // The list is kept only when there is more than the primary.
                #expect((fields["enclosures"]?.arrayValue?.count ?? 1) == (variant == .twoEnclosures ? 2 : 1), "\(variant)")
            }
            // The feed source's own describing record says where the feed lives now, and the
            // podcast's feed_url is the feed's to decide (the directory lists the old one for weeks).
            let feedURL = PodcastFeedSettings(from: "podcasts").canonical(.podcast, try records.first {
                $0.entity == .podcast && $0.key == key }!.fields()).fields["feed_url"]?.stringValue
            let moved = [.newLocation, .newFeedURL, .movedPermanently].contains(variant)
            let expected = moved ? SimulatedFeed.newAddress(world.podcasts, i) : "http://feeds.storesim.test/feeds/\(key).xml"
            #expect(feedURL == expected, "\(variant)")
            let entity = try #require(try store.entitiesByKey(.podcast, keys: [key]).first)
            #expect(try JSONParser.parse(Array(entity.payload.utf8))["feed_url"]?.stringValue == expected, "\(variant)")
            // The night the podcast first appears, it is added with the address its feed
            // gives, moved or not: the store never held the directory's old one at a night's
            // end, so its log says "added", not "changed" (a move on a later night is a change).
            let logged = try store.changes(runID: first.runID).filter { $0.entity == "podcast" && $0.key == key }.map(\.op)
            #expect(logged == ["added"], "\(variant): \(logged)")
        }
        #expect(seen == Set(ContentFaults.FeedVariant.allCases), "30 feeds show all seven variants")
        let recoveredCount = try feedKeys.filter {
            world.podcasts.faults.feedVariant(podcast: try #require(world.podcasts.index(forKey: $0))) == .invalidCharacter
        }.count
        #expect(recoveredCount > 0 && episodes.recovered.count == recoveredCount, "\(episodes.recovered)")
        #expect(first.summaryText.contains("recovered: episodes \(recoveredCount) scope"), "\(first.summaryText)")
        // The NUL before every item: all of them read, and the bytes passed over counted where the operator looks.
        #expect(first.summaryText.contains("1 byte XML cannot hold"), "\(first.summaryText)")
        #expect(episodes.recovered.allSatisfy { $0.contains("1 byte XML cannot hold") }, "\(episodes.recovered)")
        // …and in the run report (`run --json`, report.json).
        let document = try JSONParser.parse(Array(try MachineOutput.runReportJSON(job: job, runID: first.runID, report: first).utf8))
        let reported = document["sources"]?.arrayValue?.first { $0["name"]?.stringValue == "episodes" }?["recovered"]?.arrayValue ?? []
        #expect(reported.count == recoveredCount && reported.allSatisfy { $0.stringValue?.contains("1 byte XML cannot hold") == true },
                "\(reported)")

        // Night 2: a moved feed is fetched from its new address, where it is
        // complete (night 1's announcing copy could not remove anything).
        let second = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        #expect(second.outcome == .ok, "\(second.errors) \(second.warnings)")
        let states = try store.scopeStates().filter { $0.source == "episodes" && $0.runID == second.runID }
        for state in states {
            let key = String(state.scope.dropFirst("feed:".count))
            let variant = world.podcasts.faults.feedVariant(podcast: try #require(world.podcasts.index(forKey: key)))
            #expect(state.state == (variant == .invalidCharacter ? .capped : .complete), "\(String(describing: variant)): \(state.state)")
        }
        #expect(states.count == 30)
    }

    @Test func aDeadFeedHostOpensItsOwnBreakerOnly() async throws {
        let directory = TestPaths.temporaryDirectory("dead-feed-host")
        defer { try? FileManager.default.removeItem(at: directory) }
        let faults = ["dead-feed-host:0.4"]
        let job = try Self.job(directory, faults: faults, maxFeeds: 20)
        let world = try Self.world(faults)

        let report = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        let episodes = try #require(report.sources.first { $0.name == "episodes" })
        let store = try SQLSnapshotStore(path: job.storePath)
        let states = try store.scopeStates().filter { $0.source == "episodes" }
        #expect(states.count == 20)
        var dead = 0
        for state in states {
            let i = try #require(world.podcasts.index(forKey: String(state.scope.dropFirst("feed:".count))))
            if world.podcasts.faults.onDeadFeedHost(podcast: i) {
                dead += 1
                #expect(state.state == .failed)
            } else {
                #expect(state.state == .complete, "a feed on the live host was not crawled: \(state.error?.message ?? "")")
            }
        }
        #expect(dead >= 3, "the seed puts too few feeds on the dead host to open its breaker")
        // Two failures open the breaker; the rest of that host's scopes are not even asked.
        let refused = episodes.errors.filter { $0.message.contains("circuit breaker open") }
        // (Two scopes are fetched at once, so a third may fail before the breaker is seen open.)
        #expect(refused.count >= dead - 3 && refused.count <= dead - 2, "\(episodes.errors)")
        #expect(refused.allSatisfy { $0.message.contains("feeds2.storesim.test") })
        #expect(report.outcome == .partial)
    }
}
