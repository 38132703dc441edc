import Catalog
import Foundation
import Snapshot
import Testing
import TestSupport

/// The snapshot rebuilt as of each earlier night holds exactly what that
/// night left (ids, fields, first and last runs), on each engine: nights that
/// add, change, remove and bring back entities (issue 30, item 2).
@Suite struct AsOfSnapshotTests {
    /// What exports read of one entity.
    static func rows(_ store: any SnapshotStore) throws -> [String] {
        var rows: [String] = []
        try store.forEachRecord(of: .podcast, columns: [], order: .insertion) { record in
            rows.append("\(record.id) \(record.key) \(record.addedRun)/\(record.changedRun) \(record.payload)")
        }
        return rows
    }

    @Test(arguments: StoreEngine.tested)
    func eachNightComesBackAsItWasLeft(engine: StoreEngine) async throws {
        let model = EntityModelTests()
        let store = try await model.store(engine)
        var left: [Int64: [String]] = [:]
        for lists in [
            [EntityHistoryTests.podcast(1, "A"), EntityHistoryTests.podcast(2, "B"), EntityHistoryTests.podcast(3, "C")],
            [EntityHistoryTests.podcast(1, "A2", genre: "News"), EntityHistoryTests.podcast(2, "B")],
            [EntityHistoryTests.podcast(1, "A2", genre: "News"), EntityHistoryTests.podcast(2, "B2"), EntityHistoryTests.podcast(3, "C2"),
             EntityHistoryTests.podcast(4, "D")],
            [EntityHistoryTests.podcast(1, "A3"), EntityHistoryTests.podcast(3, "C2")],
            [EntityHistoryTests.podcast(1, "A3"), EntityHistoryTests.podcast(2, "B3"), EntityHistoryTests.podcast(3, "C2")],
        ] {
            let run = try await model.night(store, ["search": lists]).0
            left[run.id] = try Self.rows(store)
        }
        let directory = TestPaths.temporaryDirectory("as-of-\(engine)")
        defer { try? FileManager.default.removeItem(at: directory) }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        for (run, expected) in left.sorted(by: { $0.key < $1.key }) {
            let path = directory.appendingPathComponent("\(run).sqlite").path
            let summary = try AsOfSnapshot.materialize(from: try store.snapshotFile(), asOf: run, into: path)
            #expect(summary.unknownIDs == 0 && summary.entities == expected.count)
            #expect(try Self.rows(try SQLSnapshotStore(path: path)) == expected, "as of run \(run)")
        }
    }
}
