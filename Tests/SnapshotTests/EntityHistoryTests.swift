import Catalog
import Foundation
import Snapshot
import Testing
import TestSupport

/// Every version of an entity, derived from its current row and the change
/// log (issue 30, item 1), on each engine: four nights that add, change,
/// remove and bring back podcasts.
@Suite struct EntityHistoryTests {
    struct Expected: Equatable, CustomStringConvertible {
        var event: VersionEvent
        var from: Int64?
        var to: Int64?
        var name: String?
        var changed: [String] = []
        var description: String { "\(event) \(from.map(String.init) ?? "-")→\(to.map(String.init) ?? "-") \(name ?? "nil") \(changed)" }
    }

    static func podcast(_ key: Int, _ name: String, genre: String? = nil) -> Catalog.Record {
        var fields: [String: JSONValue] = ["trackName": .string(name)]
        if let genre { fields["genre"] = .string(genre) }
        return Catalog.Record(entity: .podcast, key: String(key), fields: fields)
    }

    static func expected(_ history: EntityHistory?) -> [Expected] {
        (history?.versions ?? []).map { version in
            let name: String? = if case .object(let fields)? = try? JSONParser.parse(version.payload),
                                   case .string(let name)? = fields["name"] { name } else { nil }
            return Expected(event: version.event, from: version.validFromRun, to: version.validToRun, name: name,
                            changed: version.changes.map(\.field))
        }
    }

    /// Nights 1–4: podcast 1 renamed on night 2; 2 changed on night 3 and
    /// removed on night 4; 3 removed on night 2 and back on night 3.
    static func fourNights(_ engine: StoreEngine) async throws -> (SQLSnapshotStore, [Int64]) {
        let model = EntityModelTests()
        let store = try await model.store(engine)
        var runs: [Int64] = []
        for lists in [
            [podcast(1, "A"), podcast(2, "B"), podcast(3, "C")],
            [podcast(1, "A2", genre: "News"), podcast(2, "B")],
            [podcast(1, "A2", genre: "News"), podcast(2, "B2"), podcast(3, "C2")],
            [podcast(1, "A2", genre: "News"), podcast(3, "C2")],
        ] {
            runs.append(try await model.night(store, ["search": lists]).0.id)
        }
        return (store, runs)
    }

    @Test(arguments: StoreEngine.tested)
    func everyVersionIsToldFromTheChangeLog(engine: StoreEngine) async throws {
        let (store, r) = try await Self.fourNights(engine)
        #expect(Self.expected(try store.entityHistory(of: .podcast, key: "1")) == [
            Expected(event: .added, from: r[0], to: r[1], name: "A"),
            Expected(event: .changed, from: r[1], to: nil, name: "A2", changed: ["genre", "name"]),
        ])
        #expect(Self.expected(try store.entityHistory(of: .podcast, key: "2")) == [
            Expected(event: .added, from: r[0], to: r[2], name: "B"),
            Expected(event: .changed, from: r[2], to: r[3], name: "B2", changed: ["name"]),
            Expected(event: .removed, from: r[3], to: nil, name: "B2"),
        ])
        #expect(Self.expected(try store.entityHistory(of: .podcast, key: "3")) == [
            Expected(event: .added, from: r[0], to: r[1], name: "C"),
            Expected(event: .removed, from: r[1], to: r[2], name: "C"),
            Expected(event: .returned, from: r[2], to: nil, name: "C2"),
        ])
        let one = try #require(try store.entityHistory(of: .podcast, key: "1"))
        #expect(one.firstSeenRun == r[0] && one.lastChangedRun == r[1])
        let change = try #require(one.versions.last?.changes.first { $0.field == "name" })
        #expect(change.before == "\"A\"" && change.after == "\"A2\"")
        let removed = try #require(try store.entityHistory(of: .podcast, key: "2"))
        #expect(removed.firstSeenRun == nil && removed.versions.last?.deleted == true)
        #expect(try store.entityHistory(of: .podcast, key: "4") == nil)
        #expect(try store.entityHistory(of: .episode, key: "1") == nil)
    }

    /// A removal keeps what the entity's row had of its own: its id (the
    /// consumer database's `id`) and the run that added it, on both engines.
    @Test(arguments: StoreEngine.tested)
    func aRemovalKeepsTheEntitysIdAndFirstRun(engine: StoreEngine) async throws {
        let model = EntityModelTests()
        let store = try await model.store(engine)
        let first = try await model.night(store, ["search": [Self.podcast(1, "A"), Self.podcast(2, "B")]]).0
        var ids: [String: Int64] = [:]
        try store.forEachRecord(of: .podcast, columns: [], order: .insertion) { ids[$0.key] = $0.id }
        let second = try await model.night(store, ["search": [Self.podcast(1, "A")]]).0
        let removal = try #require(try store.changes(runID: second.id).first { $0.op == "removed" })
        #expect(removal.key == "2" && removal.removedEntityID == ids["2"] && removal.removedEntityAddedRun == first.id, "\(removal)")
        #expect(try store.changes(runID: first.id).allSatisfy { $0.removedEntityID == nil && $0.removedEntityAddedRun == nil })
    }

    /// A run that adds an entity and, from another source, fills more of its
    /// fields in logs both: one version, which the run added.
    @Test(arguments: StoreEngine.tested)
    func fieldsAnotherSourceAddsTheSameNightAreStillTheFirstVersion(engine: StoreEngine) async throws {
        let model = EntityModelTests()
        let store = try await model.store(engine)
        let first = try await model.night(store, ["search": [Self.podcast(1, "A")],
                                                  "chart": [Catalog.Record(entity: .podcast, key: "1", fields: ["rank": .int(3)])]]).0
        let history = try #require(try store.entityHistory(of: .podcast, key: "1"))
        #expect(Self.expected(history) == [Expected(event: .added, from: first.id, to: nil, name: "A")], "\(history)")
    }

    @Test(arguments: StoreEngine.tested)
    func theStreamTellsEveryEntityAsTheOneByOneReadDoes(engine: StoreEngine) async throws {
        let (store, _) = try await Self.fourNights(engine)
        var streamed: [EntityHistory] = []
        try store.forEachEntityHistory(of: .podcast, runs: nil) { streamed.append($0) }
        #expect(streamed.map(\.key) == ["1", "2", "3"])
        for history in streamed {
            #expect(history == (try store.entityHistory(of: .podcast, key: history.key)))
            // A chain: each version ends where the next begins, and only the last is open.
            for (older, newer) in zip(history.versions, history.versions.dropFirst()) {
                #expect(older.validToRun != nil && older.validToRun == newer.validFromRun, "\(history)")
            }
            #expect(history.versions.last?.validToRun == nil)
        }
    }

    /// Two keys that differ only in how "é" is spelled (one code point, or
    /// "e" and a combining accent) are two records upstream, and two entities
    /// here, each with its own story. The store took them for one before
    /// (Swift's String equality is canonical equivalence): on SQLite the
    /// second was never removed, on PostgreSQL the two rows were merged and
    /// logged as changes. ``RecordIdentity`` now compares bytes.
    @Test(arguments: StoreEngine.tested)
    func keysThatDifferOnlyInTheirBytesAreTwoEntities(engine: StoreEngine) async throws {
        let model = EntityModelTests()
        let store = try await model.store(engine)
        let composed = Catalog.Record(entity: .podcast, key: "caf\u{E9}", fields: ["trackName": .string("One")])
        let decomposed = Catalog.Record(entity: .podcast, key: "cafe\u{301}", fields: ["trackName": .string("Two")])
        _ = try await model.night(store, ["search": [composed, decomposed]])
        #expect(try store.recordCount(of: .podcast) == 2)
        _ = try await model.night(store, ["search": [composed]])
        #expect(try store.recordCount(of: .podcast) == 1)
        var streamed: [(key: [UInt8], versions: [Expected])] = []
        try store.forEachEntityHistory(of: .podcast, runs: nil) { streamed.append((Array($0.key.utf8), Self.expected($0))) }
        #expect(streamed.map(\.key) == [Array("cafe\u{301}".utf8), Array("caf\u{E9}".utf8)])
        #expect(streamed.map { $0.versions.map(\.event) } == [[.added, .removed], [.added]])
        #expect(streamed.map { $0.versions.first?.name } == ["Two", "One"])
    }

    /// Within the last two nights only: what began earlier is one baseline
    /// version, and the current one still starts at the run that changed it.
    @Test(arguments: StoreEngine.tested)
    func aWindowFoldsEarlierVersionsIntoABaseline(engine: StoreEngine) async throws {
        let (store, r) = try await Self.fourNights(engine)
        var streamed: [String: [Expected]] = [:]
        try store.forEachEntityHistory(of: .podcast, runs: [r[2], r[3]]) { streamed[$0.key] = Self.expected($0) }
        #expect(streamed["1"] == [Expected(event: .changed, from: r[1], to: nil, name: "A2")])
        #expect(streamed["2"] == [
            Expected(event: .baseline, from: nil, to: r[2], name: "B"),
            Expected(event: .changed, from: r[2], to: r[3], name: "B2", changed: ["name"]),
            Expected(event: .removed, from: r[3], to: nil, name: "B2"),
        ])
        #expect(streamed["3"] == [Expected(event: .added, from: r[2], to: nil, name: "C2")])
    }
}
