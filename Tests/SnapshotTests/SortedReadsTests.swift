import Catalog
import Foundation
import Snapshot
import Testing
import TestSupport

/// The export reads that sort (feeds, the change log, the changes with their
/// records) sort row ids and read each payload in that order, so a sort never
/// holds payloads. The rows must still come out in the order asked for, with
/// or without a limit: SQLite drops a subquery's ORDER BY when it flattens it.
@Suite struct SortedReadsTests {
    let files = StoreFiles("sorted-reads")

    /// Keys are written in key order; names (the feed's sort field) are scattered.
    func name(_ key: Int, night: Int) -> String {
        night == 2 && key % 7 == 0 ? "renamed \(key % 5)" : "n\((key * 7919) % 1000)"
    }

    func row(_ key: Int, night: Int) -> Catalog.Record {
        Catalog.Record(entity: .record, key: String(key), fields: ["id": .int(Int64(key)), "name": .string(name(key, night: night))])
    }

    @Test func rowsComeInTheOrderAskedForWithAndWithoutALimit() async throws {
        let store = try SQLSnapshotStore(path: files.path("store"))
        var runs: [Int64] = []
        for night in 1...2 {
            let run = try store.beginRun(job: "t", at: Date(timeIntervalSince1970: Double(night) * 86_400), simulated: false)
            runs.append(run.id)
            let keys = night == 1 ? Array(1...300) : Array(1...320)
            for (index, slice) in stride(from: 0, to: keys.count, by: 100).map({ keys[$0..<min($0 + 100, keys.count)] }).enumerated() {
                var page = PageInput(runID: run.id, source: "src", scope: "s", page: index, records: slice.map { row($0, night: night) })
                page.completesScope = index == (keys.count - 1) / 100
                _ = try await store.apply(page)
            }
            try store.finishRun(run.id, status: .ok, message: nil, at: Date(timeIntervalSince1970: Double(night) * 86_400 + 60),
                                exportsFollow: false)
        }
        let expected = (1...320).sorted { a, b in
            let (nameA, nameB) = (name(a, night: 2), name(b, night: 2))
            // A records file's entity key names its source.
            return nameA != nameB ? nameA > nameB : "src:\(a)" < "src:\(b)"
        }.map { "src:\($0)" }
        for limit in [nil, 7, 1_000] as [Int?] {
            var keys: [String] = []
            try store.forEachFeedRecord(.newestFirst([.record], by: "name"), limit: limit) { record in
                keys.append(record.key)
                #expect(record.payload.contains("\"id\":\(record.key.dropFirst(4)),"), "the payload read is the row's own")
                return true
            }
            #expect(keys == Array(expected.prefix(limit ?? .max)), "newest first, limit \(String(describing: limit))")
        }

        var changes: [ChangeRow] = []
        try store.forEachChange(runID: runs[1], order: .record) { changes.append($0) }
        let byRecord = changes.sorted { ($0.source, $0.entity, $0.key, $0.op, $0.field ?? "") < ($1.source, $1.entity, $1.key, $1.op, $1.field ?? "") }
        #expect(changes.count == 20 + 300 / 7 && changes == byRecord, "the change log by record")

        var withRecords: [ChangeWithRecord] = []
        try store.forEachChangeWithRecord(runID: runs[1]) { withRecords.append($0); return true }
        #expect(withRecords.map(\.change) == changes, "the changes with their records, by record")
        for change in withRecords {
            #expect(change.currentPayload?.contains("\"id\":\(change.change.key.dropFirst(4)),") == true, "\(change.change.key)'s own record")
        }
    }
}
