import Catalog
import Foundation
@testable import Snapshot
import Testing
import TestSupport

/// A fleet's staged page reads back as the page staged, whatever its records
/// hold, and a log row that is not what was staged is refused, never applied.
struct StagedPageTests {
    static func record(_ key: String, _ fields: [String: JSONValue], order: [String]? = nil) -> Catalog.Record {
        var record = Catalog.Record(entity: .podcast, key: key, fields: fields, rawHash: ContentHash(bytes: Array(key.utf8)))
        record.fieldOrder = order
        return record
    }

    static let awkward: [Catalog.Record] = [
        record("1", ["name": .string("quotes \" and \\ backslashes, a tab\t, a newline\n, ] and }"), "price": .double(1.5)]),
        record("key with \"quotes\"\n", ["name": .string("Ünïcödé ✓ 🎙"), "nested": .object(["a": .array([.int(1), .null, .bool(true)])])],
               order: ["name", "nested", "absent"]),
        record("3", [:]),
    ]

    static func page(_ records: [Catalog.Record]) -> PageInput {
        var page = PageInput(runID: 7, source: "podcasts", scope: "news/us", page: 4, records: records, requests: 2, skippedRows: 1,
                             seconds: 0.25, unchangedKeys: [RecordIdentity(entity: .episode, key: "e\t1")],
                             memo: PageMemo(url: "https://e.com/p?page=4", etag: "\"x\"", lastModified: nil,
                                            bodyHash: ContentHash(bytes: Array("body".utf8)), rowCount: 3, hasNext: true))
        page.rawUnchanged = [RecordIdentity(entity: .podcast, key: "9")]
        page.completesScope = true
        page.driftRows = 2
        return page
    }

    static func expectSame(_ read: PageInput?, _ staged: PageInput) {
        guard let read else {
            Issue.record("the staged page did not read back")
            return
        }
        #expect(read.records == staged.records)
        #expect(read.records.map(\.rawHash) == staged.records.map(\.rawHash))
        #expect(read.records.map(\.fieldOrder) == staged.records.map(\.fieldOrder))
        #expect(read.page == staged.page && read.requests == staged.requests && read.skippedRows == staged.skippedRows)
        #expect(read.seconds == staged.seconds && read.driftRows == staged.driftRows && read.completesScope == staged.completesScope)
        #expect(read.unchangedKeys == staged.unchangedKeys && read.rawUnchanged == staged.rawUnchanged)
        #expect(read.memo == staged.memo)
    }

    @Test func aPageReadsBackAsStaged() {
        for records in [Self.awkward, []] {
            let staged = Self.page(records)
            let text = StagingFleetStore.encode(staged)
            Self.expectSame(StagingFleetStore.decodePage(text, runID: 7, source: "podcasts", scope: "news/us"), staged)
        }
    }

    /// The payloads are staged as the JSON they are, not as escaped strings.
    @Test func payloadsAreStagedVerbatim() throws {
        let text = StagingFleetStore.encode(Self.page(Self.awkward))
        for record in Self.awkward {
            #expect(text.contains(record.payload), "\(record.key)")
        }
        // And the whole row is one JSON value still (PostgreSQL's tools can read it).
        #expect(try JSONParser.parse(text).objectValue?["payloads"]?.arrayValue?.count == Self.awkward.count)
    }

    /// A payload that is not the one staged (its hash disagrees) refuses the page.
    @Test func aPayloadThatIsNotTheOneStagedIsRefused() {
        let text = StagingFleetStore.encode(Self.page(Self.awkward))
        let tampered = text.replacingOccurrences(of: "Ünïcödé", with: "Unicode")
        #expect(tampered != text)
        #expect(StagingFleetStore.decodePage(tampered, runID: 7, source: "podcasts", scope: "news/us") == nil)
        #expect(StagingFleetStore.decodePage("{\"payloads\":[{}],\"records\":[],\"page\":1}", runID: 7, source: "s", scope: "s") == nil)
    }

    /// A page staged by the release before (each payload a JSON string) is still read:
    /// a worker upgraded within a night replays what the others staged.
    @Test func aPageStagedByTheReleaseBeforeIsRead() throws {
        let staged = Self.page(Self.awkward)
        let records: [JSONValue] = staged.records.map { record in
            var fields: [String: JSONValue] = ["e": .string(record.entity.rawValue), "k": .string(record.key),
                                               "p": .string(record.payload), "h": .int(record.hash.sqliteValue)]
            if let raw = record.rawHash { fields["r"] = .int(raw.sqliteValue) }
            if let order = record.fieldOrder { fields["o"] = .array(order.map(JSONValue.string)) }
            return .object(fields)
        }
        let identity: (RecordIdentity) -> JSONValue = { .array([.string($0.entity.rawValue), .string($0.key)]) }
        let earlier: JSONValue = .object([
            "records": .array(records), "requests": .int(2), "skipped": .int(1), "seconds": .double(0.25),
            "unchanged": .array(staged.unchangedKeys.map(identity)), "raw": .array(staged.rawUnchanged.map(identity)),
            "completes": .bool(true), "drift": .int(2), "page": .int(4),
            "memo": .object(["url": .string("https://e.com/p?page=4"), "etag": .string("\"x\""), "lastModified": .null,
                             "body": .int(ContentHash(bytes: Array("body".utf8)).sqliteValue), "rows": .int(3), "next": .bool(true)]),
        ])
        Self.expectSame(StagingFleetStore.decodePage(CanonicalJSON.string(earlier), runID: 7, source: "podcasts", scope: "news/us"), staged)
    }
}

/// Pages a worker stages together go into the log in one statement that
/// renews the scope's claim: all of them while the claim holds, none once
/// another worker took it, and that refusal says the claim was lost.
struct StagingUnderTheClaimTests {
    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func pagesStagedTogetherAreStagedOnlyUnderTheClaim() async throws {
        let location = try await StoreEngine.postgres.makeLocation()
        let fleet = try DefaultBackend().openFleet(location)
        let run = try fleet.joinFleetRun(job: "t", fleet: "f", at: Date(timeIntervalSince1970: 0), simulated: false, night: nil,
                                         leaseSeconds: 60)
        guard case .claimed(let claim) = try fleet.claimScope(runID: run.id, source: "podcasts", phase: .scopes, among: ["news/us"],
                                                              worker: "w1", leaseSeconds: 60) else {
            Issue.record("the scope was not claimed")
            return
        }
        fleet.hold(claim, runID: run.id, leaseSeconds: 60, worker: "w1")
        func page(_ number: Int, _ name: String) -> PageInput {
            var page = StagedPageTests.page([StagedPageTests.record("\(number)", ["name": .string(name)])])
            page.runID = run.id
            page.page = number
            page.completesScope = number == 2
            return page
        }
        _ = try await fleet.apply([page(0, "a"), page(1, "b"), page(2, "c")])
        // A page staged again (fetched again after a retry) replaces its row.
        _ = try await fleet.apply([page(1, "b again")])
        let store = try StoreEngine.open(location)
        let staged = try store.queryRows("SELECT seq, page, state, CAST(body LIKE '%b again%' AS INTEGER) FROM fleet_pages ORDER BY seq")
        #expect(staged == ["0|0|'running'|0", "1|1|'running'|1", "2|2|'complete'|0"])

        // Another worker holds the scope now: nothing more is staged, and the worker learns it lost the claim.
        try store.engine.write { db in try db.execute("UPDATE scope_claims SET token = 'other', worker = 'w2'") }
        await #expect(throws: StoreSyncError.self) { _ = try await fleet.apply([page(3, "d"), page(4, "e")]) }
        #expect(fleet.lostClaim)
        #expect(try store.queryRows("SELECT count(*) FROM fleet_pages") == ["3"])
    }
}
