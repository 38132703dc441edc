import Catalog
import Foundation
import GRDB
import Snapshot
import Testing
import TestSupport

/// A record is decoded once: the fields its decoder produced travel with it
/// through diff and apply, and nothing in the store parses its payload again
/// to map it. A records-file row's JSON is stored once, in its entity.
@Suite struct DecodeOnceTests {
    let files = StoreFiles("decode-once")

    func row(_ key: Int, name: String = "Row") -> Catalog.Record {
        Catalog.Record(entity: .record, key: String(key),
                       fields: ["id": .int(Int64(key)), "name": .string(name), "price": .double(Double(key) / 4),
                                "tags": .array([.string("a\"b"), .null]), "nested": .object(["z": .int(1), "a": .string("é")])])
    }

    func podcast(_ key: Int, name: String = "Show") -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: String(key), fields: ["trackName": .string("\(name) \(key)"), "trackCount": .int(3)])
    }

    /// The record as a store would hand it back: its payload text, no decoded fields.
    func rebuilt(_ record: Catalog.Record) -> Catalog.Record {
        Catalog.Record(entity: record.entity, key: record.key, payload: record.payload, hash: record.hash)
    }

    /// Night 1 (a first load of 600 rows and 20 podcasts, then a page that
    /// leaves the first-load mode) and night 2 (changed, added and unchanged
    /// rows through the diff), with `transform` applied to every record.
    func twoNights(_ name: String, _ transform: (Catalog.Record) -> Catalog.Record) async throws -> SQLSnapshotStore {
        let store = try SQLSnapshotStore(path: files.path(name))
        let night1 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        #expect(try store.beginFirstLoad())
        let pages1: [[Catalog.Record]] = [(1...600).map { row($0) } + (1...20).map { podcast($0) },
                                          [row(7, name: "Again")] + (601...650).map { row($0) }]
        for (index, records) in pages1.enumerated() {
            var page = PageInput(runID: night1.id, source: "src", scope: "s", page: index, records: records.map(transform))
            page.completesScope = index == pages1.count - 1
            _ = try await store.apply(page)
        }
        try store.endFirstLoad()
        try store.finishRun(night1.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 60), exportsFollow: false)
        let night2 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 86_400), simulated: false)
        var records = (1...650).map { $0 % 10 == 0 ? row($0, name: "Changed") : row($0) }
        records += (651...700).map { row($0) } + (1...20).map { $0 % 4 == 0 ? podcast($0, name: "Renamed") : podcast($0) }
        var page = PageInput(runID: night2.id, source: "src", scope: "s", page: 0, records: records.map(transform))
        page.completesScope = true
        let result = try await store.apply(page)
        // Changed: rows 10, 20 … 650, row 7 (night 1 ended on its other version) and podcasts 4, 8 … 20.
        #expect(result.added == 50 && result.changed == 65 + 1 + 5, "night 2: \(result)")
        return store
    }

    @Test func noPayloadIsParsedAgainBetweenTheDecoderAndTheStore() async throws {
        let decoded = try await twoNights("decoded") { $0 }
        #expect(decoded.payloadParses.load(ordering: .relaxed) == 0,
                "a record carrying its decoded fields is mapped from them, never from its payload text")

        // The hook counts what it must: the same nights from records that carry only their text.
        let fromText = try await twoNights("from-text", rebuilt)
        #expect(fromText.payloadParses.load(ordering: .relaxed) >= 700)
        // And both stores say the same.
        for sql in ["SELECT entity, key, fields, hash FROM entities ORDER BY entity, key",
                    "SELECT source, entity, key, hash, payload FROM records ORDER BY source, entity, key",
                    "SELECT run_id, entity, key, op, field, before, after FROM changes ORDER BY id"] {
            #expect(try files.read("decoded") { try Row.fetchAll($0, sql: sql) } == files.read("from-text") { try Row.fetchAll($0, sql: sql) })
        }
    }

    /// A records file's rows on a first load are written straight to
    /// canonical bytes, their fields never built (``Record/shape``): the
    /// store they leave is the store the parsed rows leave, table for table,
    /// and only a row that meets a stored one (to be merged field by field)
    /// is ever parsed.
    @Test func rowsDecodedStraightToCanonicalBytesStoreWhatParsedRowsStore() async throws {
        func typed(_ record: Catalog.Record) -> Catalog.Record {
            var scratch = CanonicalScratch()
            let bytes = Array(record.payload.utf8)
            guard let canonical = bytes.withUnsafeBufferPointer({ JSONParser.canonicalObject($0, keyField: "id", scratch: &scratch) }) else {
                Issue.record("the canonical writer stepped aside for \(record.payload)")
                return record
            }
            #expect(canonical.bytes == bytes)
            return Catalog.Record(entity: record.entity, key: record.key, canonical: canonical, rawHash: record.rawHash)
        }
        let decoded = try await twoNights("parsed-rows") { $0 }
        let straight = try await twoNights("canonical-rows", typed)
        #expect(decoded.payloadParses.load(ordering: .relaxed) == 0)
        // Parsed: row 7 met again on night 1 (the first load ends there), and night 2's 71 changed records.
        #expect(straight.payloadParses.load(ordering: .relaxed) == 1 + 71)
        for sql in ["SELECT entity, key, fields, hash, sources, parts, added_run, changed_run FROM entities ORDER BY entity, key",
                    "SELECT source, entity, key, scope, hash, payload, added_run, changed_run FROM records ORDER BY source, entity, key",
                    "SELECT run_id, source, entity, key, op, field, before, after FROM changes ORDER BY id",
                    "SELECT source, entity, field, kind, position, first_run, kind_changed_run, previous_kind FROM field_registry ORDER BY 1, 2, 3"] {
            #expect(try files.read("parsed-rows") { try Row.fetchAll($0, sql: sql) } == files.read("canonical-rows") { try Row.fetchAll($0, sql: sql) },
                    "\(sql)")
        }
    }

    @Test func aRecordsFileRowIsStoredOnceAndReadBackWhole() async throws {
        let store = try await twoNights("stored-once") { $0 }
        let counts = try files.read("stored-once") { db in
            try (Int.fetchOne(db, sql: "SELECT count(*) FROM records WHERE entity = 'record' AND payload <> ''")!,
                 Int.fetchOne(db, sql: "SELECT count(*) FROM records WHERE entity = 'podcast' AND payload = ''")!,
                 Int.fetchOne(db, sql: """
                    SELECT count(*) FROM records r JOIN entities e ON e.entity = r.entity AND e.key = r.source || ':' || r.key
                    WHERE r.payload = ''
                    """)!)
        }
        #expect(counts.0 == 0, "a records-file row's JSON is its entity's fields: not stored a second time")
        #expect(counts.1 == 0, "an entity other sources may merge into keeps its sighting's own payload")
        #expect(counts.2 == 700)
        // Read back, every record is whole: the payload its decoder made.
        let expected = (1...700).map { $0 % 10 == 0 && $0 <= 650 ? row($0, name: "Changed") : row($0) }
        let stored = try store.records(source: "src").filter { $0.entity == .record }
        #expect(stored.count == 700)
        let byKey = Dictionary(uniqueKeysWithValues: stored.map { ($0.key, $0) })
        for record in expected {
            #expect(byKey[record.key]?.payload == record.payload && byKey[record.key]?.hash == record.hash)
        }
        #expect(try store.inputRecords(source: "src", entities: [.record], selection: .all, runID: 2, consumer: "x", fields: [])
            .map(\.payload) == stored.sorted { $0.key < $1.key }.map(\.payload))
        // A dependent source that reads two members gets records of those two only, in the same order.
        let cut = try store.inputRecords(source: "src", entities: [.record], selection: .all, runID: 2, consumer: "x",
                                         fields: ["name", "price", "absent"])
        #expect(cut.map(\.key) == stored.sorted { $0.key < $1.key }.map(\.key))
        for record in cut {
            let whole = try #require(byKey[record.key]).fields()
            #expect(try record.fields() == whole.filter { $0.key == "name" || $0.key == "price" }, "\(record.key)")
        }
    }

    /// An upgrade re-derives every entity from the records: a row whose JSON
    /// lives in its entity gets it back first, and loses nothing.
    @Test func anUpgradeThatRebuildsTheEntitiesKeepsEveryStoredOnceRow() async throws {
        _ = try await twoNights("upgraded") { $0 }
        let before = try files.read("upgraded") { try Row.fetchAll($0, sql: "SELECT entity, key, fields, hash FROM entities ORDER BY entity, key") }
        let store = try SQLSnapshotStore(path: files.path("upgraded"))
        try store.prepareEntities([:], fingerprint: "a mapping of another release")
        #expect(try files.read("upgraded") { try Row.fetchAll($0, sql: "SELECT entity, key, fields, hash FROM entities ORDER BY entity, key") }
            == before)
        #expect(try files.read("upgraded") { try Int.fetchOne($0, sql: "SELECT count(*) FROM records WHERE payload = ''") } == 0,
                "the payloads are back in their rows, where the next write of each stores it once again")
        #expect(try store.records(source: "src").count == 720)
    }
}
