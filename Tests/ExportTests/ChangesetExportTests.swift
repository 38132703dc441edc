import Catalog
@testable import Export
import Foundation
import GRDB
import Logging
import Snapshot
import Testing
import TestSupport

/// `python3 Tests/scripts/apply_changeset.py`: apsw, a binding of SQLite with
/// the session extension, applies a changeset as a downstream user would.
enum ApswCheck {
    static let script: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/apply_changeset.py")
    static let available: Bool = (try? Python.runWaitingHere(["-c", "import apsw"]).status) == 0
    static let skipMessage: Comment = "python3 with apsw is not installed (python3 -m pip install apsw)"
}

/// Issue 30, item 6: each night's changes to the consumer database as a
/// SQLite changeset, which turns last night's file into tonight's, full-text
/// search included, with no rebuild step.
@Suite struct ChangesetExportTests {
    static let database = "demo.sqlite"
    static let specs: [ExportSpec] = [
        .sqlite(path: database, history: true),
        .changeset(ChangesetExportSpec(directory: "changesets", database: database)),
    ]

    /// Run 3 of the fixture: a podcast renamed (its search terms change), one added, a listing's price changed.
    static func thirdRun(_ fixture: ConsumerFixture) async throws -> Int64 {
        let run = try fixture.store.beginRun(job: "demo", at: ConsumerFixture.started.addingTimeInterval(2 * 86_400), simulated: true,
                                             night: 3, resumeExports: true)
        _ = try await fixture.store.apply(PageInput(runID: run.id, source: "podcasts", scope: "s", page: 100, records: [
            ConsumerFixture.podcast("101", "The Nightly Laugh", "Comedy", "1303", "Jokes about the headlines",
                                    extra: ["feedBurnerId": .string("laugh")]),
            ConsumerFixture.podcast("105", "Radio Kettle", "Technology", "1318", "Appliances reviewed at length"),
        ]))
        _ = try await fixture.store.apply(PageInput(runID: run.id, source: "market", scope: "s", page: 101, records: [
            ConsumerFixture.listing("5003", "Toaster", vendor: 8, vendorName: nil, price: 7.5),
        ]))
        try fixture.store.finishRun(run.id, status: .ok, message: nil, at: ConsumerFixture.started.addingTimeInterval(2 * 86_400 + 60))
        return run.id
    }

    func export(_ fixture: ConsumerFixture, run: Int64, specs: [ExportSpec] = Self.specs) throws -> [ExportedFile] {
        var context = fixture.context
        context.runID = run
        return try SnapshotExporter.export(specs, context: context, logger: Logger(label: "test"))
    }

    func searched(_ url: URL, _ words: String) throws -> [String] {
        try DatabaseQueue(path: url.path).read { db in
            try String.fetchAll(db, sql: """
                SELECT p.key FROM podcasts_fts JOIN podcasts p ON p.id = podcasts_fts.rowid WHERE podcasts_fts MATCH ? ORDER BY p.key
                """, arguments: [words])
        }
    }

    @Test func aReplicaFollowsTheDatabaseByChangesetsSearchIncluded() async throws {
        let fixture = try await ConsumerFixture.make("changeset-follow")
        let published = fixture.output.appendingPathComponent(Self.database)
        let first = try export(fixture, run: fixture.runID)
        #expect(!first.contains { $0.path.hasSuffix(".changeset") }, "no earlier file, no changeset: \(first.map(\.path))")
        var replica = ChangesetReplica(replica: fixture.directory.appendingPathComponent("replica.sqlite"), published: published,
                                       changesets: fixture.output.appendingPathComponent("changesets"))
        #expect(try replica.follow().isEmpty)
        let idsBefore = try await DatabaseQueue(path: published.path).read { db in
            try Row.fetchAll(db, sql: "SELECT key, id FROM podcasts").map { "\($0[0] as String)=\($0[1] as Int64)" }
        }

        let third = try await Self.thirdRun(fixture)
        let files = try export(fixture, run: third)
        let changeset = try #require(files.first { $0.path.hasSuffix(".changeset") })
        #expect(URL(fileURLWithPath: changeset.path).lastPathComponent == "\(fixture.runID)-\(third).changeset")
        #expect(changeset.rows > 0 && changeset.bytes > 0)
        // An entity keeps its id from night to night: what the index and the replica point by.
        let idsAfter = try await DatabaseQueue(path: published.path).read { db in
            try Row.fetchAll(db, sql: "SELECT key, id FROM podcasts").map { "\($0[0] as String)=\($0[1] as Int64)" }
        }
        #expect(Set(idsBefore).isSubset(of: Set(idsAfter)), "ids moved: \(idsBefore) → \(idsAfter)")

        let problems = try replica.follow()
        #expect(problems.isEmpty, "\(problems)")
        #expect(try searched(replica.replica, "Nightly") == ["101"])
        #expect(try searched(replica.replica, "Daily").isEmpty)
        #expect(try searched(replica.replica, "kettle") == ["105"])
        // The changeset carries the night's rows, not the catalogue or the index.
        let tables = Set(try SQLiteChangeset.rowsByTable(Data(contentsOf: URL(fileURLWithPath: changeset.path))).keys)
        #expect(!tables.contains { $0.contains("_fts") }, "the index's own tables are in the changeset: \(tables)")
        #expect(!tables.contains("genres") && !tables.contains("episodes"), "unchanged tables are in the changeset: \(tables)")
    }

    /// The fixture exported at run 2, a copy of that file as a replica, then
    /// run 3 exported: the published file, the replica (still at run 2) and run 3's changeset.
    func replicaOneNightBehind(_ name: String) async throws -> (published: URL, replica: URL, changeset: URL) {
        let fixture = try await ConsumerFixture.make(name)
        let published = fixture.output.appendingPathComponent(Self.database)
        _ = try export(fixture, run: fixture.runID)
        let replica = fixture.directory.appendingPathComponent("replica.sqlite")
        try FileManager.default.copyItem(at: published, to: replica)
        let third = try await Self.thirdRun(fixture)
        let files = try export(fixture, run: third)
        let changeset = try #require(files.first { $0.path.hasSuffix(".changeset") })
        return (published, replica, URL(fileURLWithPath: changeset.path))
    }

    @Test func aReplicaNotWhereTheChangesetStartsIsRefusedAndLeftAsItWas() async throws {
        let (published, replica, file) = try await replicaOneNightBehind("changeset-conflict")
        let changeset = try Data(contentsOf: file)
        try SQLiteChangeset.apply(changeset, to: replica.path)
        #expect(try ChangesetReplica.differences(replica, published).isEmpty)
        // Applied twice: the replica is past the start, so nothing applies and nothing changes.
        #expect(throws: SQLiteChangeset.ChangesetError.self) { try SQLiteChangeset.apply(changeset, to: replica.path) }
        #expect(try ChangesetReplica.differences(replica, published).isEmpty)
    }

    @Test(.enabled(if: ApswCheck.available, ApswCheck.skipMessage))
    func apswAppliesTheChangesetAsADownstreamUserWould() async throws {
        let (published, replica, changeset) = try await replicaOneNightBehind("changeset-apsw")
        let applied = try await Python.run([ApswCheck.script.path, replica.path, changeset.path])
        #expect(applied.status == 0, "\(applied.output)")
        let problems = try ChangesetReplica.differences(replica, published)
        #expect(problems.isEmpty, "\(problems)")
        #expect(try searched(replica, "Nightly") == ["101"])
        let again = try await Python.run([ApswCheck.script.path, replica.path, changeset.path])
        #expect(again.status == 1 && again.output.contains("conflict"), "\(again.output)")
    }

    @Test func aChangedSchemaWritesNoChangesetForReplicasCopyTheFileWhole() async throws {
        let fixture = try await ConsumerFixture.make("changeset-schema")
        _ = try export(fixture, run: fixture.runID, specs: [
            .sqlite(path: Self.database, history: false), .changeset(ChangesetExportSpec(directory: "changesets", database: Self.database)),
        ])
        let third = try await Self.thirdRun(fixture)
        // History turned on tonight: tables a changeset cannot carry.
        let files = try export(fixture, run: third)
        #expect(!files.contains { $0.path.hasSuffix(".changeset") })
        let folder = fixture.output.appendingPathComponent("changesets")
        #expect(((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).isEmpty)
    }

    @Test func keepRemovesTheOldestChangesetsAndNothingElse() throws {
        let directory = TestPaths.temporaryDirectory("changeset-keep")
        defer { try? FileManager.default.removeItem(at: directory) }
        let folder = directory.appendingPathComponent("changesets")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        for name in ["1-2.changeset", "2-3.changeset", "9-10.changeset", "10-11.changeset", "README.txt", "x-1.changeset"] {
            try Data("x".utf8).write(to: folder.appendingPathComponent(name))
        }
        let context = ExportContext(store: try SQLSnapshotStore(path: directory.appendingPathComponent("s.sqlite").path), runID: 11,
                                    jobName: "demo", runDate: Date(), outputDirectory: directory.path)
        let removed = ChangesetExport.prune(ChangesetExportSpec(directory: "changesets", database: "demo.sqlite", keep: 2), context: context)
        #expect(Set(removed.map { URL(fileURLWithPath: $0).lastPathComponent }) == ["1-2.changeset", "2-3.changeset"])
        #expect(Set(try FileManager.default.contentsOfDirectory(atPath: folder.path))
                    == ["9-10.changeset", "10-11.changeset", "README.txt", "x-1.changeset"])
    }

    /// Every table of the consumer database has a primary key: a changeset
    /// silently skips the rows of a table without one.
    @Test func everyTableHasAPrimaryKey() async throws {
        let fixture = try await ConsumerFixture.make("changeset-keys")
        _ = try export(fixture, run: fixture.runID)
        let unkeyed = try await DatabaseQueue(path: fixture.output.appendingPathComponent(Self.database).path).read { db in
            try String.fetchAll(db, sql: """
                SELECT name FROM sqlite_master m WHERE type = 'table' AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND name NOT GLOB '*_fts_*'
                  AND NOT EXISTS (SELECT 1 FROM pragma_table_info(m.name) WHERE pk > 0)
                """)
        }
        #expect(unkeyed.isEmpty, "\(unkeyed)")
    }
}
