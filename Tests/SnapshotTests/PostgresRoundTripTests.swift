import Catalog
import Foundation
import Snapshot
import Testing
import TestSupport

/// What a page costs on PostgreSQL, counted in statements (each one a round
/// trip to the server), not timed: a page's records, entities and change rows
/// go as a few multi-row statements, whatever the page's size. One statement
/// per record made a first load of 12,000 records take 41 s against SQLite's 1.7 s.
@Suite struct PostgresRoundTripTests {
    func podcast(_ key: Int, night: Int) -> Catalog.Record {
        Catalog.Record(entity: .podcast, key: String(key), fields: ["trackName": .string("Show \(key), night \(night)"),
                                                                     "trackCount": .int(Int64(key % 7))])
    }

    func page(_ run: RunInfo, _ records: [Catalog.Record], page: Int) -> PageInput {
        PageInput(runID: run.id, source: "src", scope: "s", page: page, records: records)
    }

    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func aPageCostsAFewStatementsWhateverItsSize() async throws {
        let made = try await StoreEngine.postgres.makeStore()
        let store = made.store
        let run1 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        var statements: [Int] = []
        for (number, keys) in [(0, 1...100), (1, 101...2_100)].enumerated() {
            let before = try #require(store.statementsSent)
            let result = try await store.apply(page(run1, keys.1.map { podcast($0, night: 1) }, page: number))
            #expect(result.added == keys.1.count)
            statements.append(try #require(store.statementsSent) - before)
        }
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1))

        // Night 2: every tenth record changed, the rest as they were.
        let run2 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 2), simulated: false)
        let before = try #require(store.statementsSent)
        let night2 = (1...2_100).map { podcast($0, night: $0 % 10 == 0 ? 2 : 1) }
        let result = try await store.apply(page(run2, night2, page: 0))
        #expect(result.changed == 210 && result.unchanged == 1_890)
        statements.append(try #require(store.statementsSent) - before)

        // 100 and 2,000 new records cost about the same statements; so does a night's change.
        #expect(statements.allSatisfy { $0 <= 20 }, "statements per page: \(statements)")
        // What was written is what one statement per row would have written.
        #expect(try store.records(source: "src").count == 2_100)
        let changes = try store.changes(runID: run2.id)
        #expect(changes.count == 210 && changes.allSatisfy { $0.op == "changed" && $0.field == "trackName" })
        #expect(try store.queryRows("SELECT count(*) FROM entities") == ["2100"])
        #expect(try store.queryRows("SELECT min(rowid), max(rowid) FROM records") == ["1|2100"])
        #expect(try store.queryRows("SELECT count(*) FROM entities WHERE changed_run = \(run2.id)") == ["210"])
        try store.finishScope(runID: run2.id, source: "src", scope: "s", state: .complete, error: nil)
        _ = try store.sweepScope(runID: run2.id, source: "src", scope: "s", removal: RemovalPolicy(afterMisses: 1, maxRatio: 1))
        try store.finishRun(run2.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 3))

        // Night 3: the first 1,500 are gone; the sweep removes them in a few statements too.
        let run3 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 4), simulated: false)
        _ = try await store.apply(page(run3, (1_501...2_100).map { podcast($0, night: $0 % 10 == 0 ? 2 : 1) }, page: 0))
        try store.finishScope(runID: run3.id, source: "src", scope: "s", state: .complete, error: nil)
        let sweepStart = try #require(store.statementsSent)
        let swept = try store.sweepScope(runID: run3.id, source: "src", scope: "s", removal: RemovalPolicy(afterMisses: 1, maxRatio: 1))
        let sweepStatements = try #require(store.statementsSent) - sweepStart
        #expect(swept.removed == 1_500)
        #expect(sweepStatements <= 25, "statements of a sweep removing 1,500 records: \(sweepStatements)")
        #expect(try store.queryRows("SELECT count(*), min(key::bigint) FROM records") == ["600|1501"])
        #expect(try store.queryRows("SELECT count(*) FROM entities") == ["600"])
        #expect(try store.queryRows("SELECT count(*) FROM changes WHERE run_id = \(run3.id) AND op = 'removed'") == ["1500"])
    }

    /// A page whose records alternate between new and changed (a search
    /// that lists the same shows in another country) writes each table in
    /// an insert and an update, not one statement per alternation: a page
    /// of 50 such records was 15 statements.
    @Test(.enabled(if: StoreEngine.tested.contains(.postgres)))
    func aPageOfNewAndChangedRecordsInTurnCostsNoMoreThanOneOfEither() async throws {
        let store = try await StoreEngine.postgres.makeStore().store
        let run1 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 0), simulated: false)
        _ = try await store.apply(page(run1, (1...400).filter { $0.isMultiple(of: 2) }.map { podcast($0, night: 1) }, page: 0))
        try store.finishRun(run1.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: 1))

        let run2 = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: 2), simulated: false)
        // Warm: the source's digests and the change log's ids are read once a run, not once a page.
        _ = try await store.apply(page(run2, [podcast(1_000, night: 2)], page: 0))
        let before = try #require(store.statementsSent)
        // Odd keys are new, even keys changed, in turn.
        let result = try await store.apply(page(run2, (1...400).map { podcast($0, night: 2) }, page: 1))
        let statements = try #require(store.statementsSent) - before
        #expect(result.added == 200 && result.changed == 200)
        #expect(statements <= 20, "statements of a page of 200 new and 200 changed records in turn: \(statements)")
        #expect(try store.queryRows("SELECT count(*), count(DISTINCT key) FROM records") == ["401|401"])
        #expect(try store.queryRows("SELECT count(*) FROM entities WHERE changed_run = \(run2.id) AND added_run <> \(run2.id)") == ["200"])
        #expect(try store.queryRows("SELECT count(*) FROM changes WHERE run_id = \(run2.id) AND op = 'changed'") == ["200"])
        #expect(try store.queryRows("SELECT count(*) FROM entities WHERE fields LIKE '%night 2%'") == ["401"])
    }
}
