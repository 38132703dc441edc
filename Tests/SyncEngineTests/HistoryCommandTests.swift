import Foundation
import Testing
import TestSupport

/// `storesync history JOB ENTITY KEY` tells one entity's versions as the
/// built binary prints them, after real nights of the simulator (issue 30, item 3).
@Suite struct HistoryCommandTests {
    static let yaml = """
        name: history
        store: store/snapshot.sqlite
        output: out
        simulator: { seed: 11, podcasts: 10, products: 60, changed: 0.3, added: 0.05, removed: 0.1 }
        sources:
          - {name: market, kind: marketplace, itemsPerPage: 20, removal: {afterMisses: 1, maxRatio: 0.5}}
        exports:
          - {kind: sqlite, path: db.sqlite, history: true}
        """

    @Test(.timeLimit(.minutes(2)))
    func aChangedAndARemovedListingAreToldVersionByVersion() async throws {
        let job = try KillTestJob(label: "history-cli", binary: try StoresyncExecutable.locate(), yaml: Self.yaml)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        let cli = CLIConventionsTests()
        for night in 1...3 {
            let run = try await cli.cli(job, ["run", job.jobPath, "--night", String(night), "-q"])
            #expect(run.termination == .exited(0), "\(run)")
        }
        // What run 3 changed, as `changes` tells it: a listing whose price changed and one removed.
        let changes = try CLIConventionsTests.object(try await cli.cli(job, ["changes", job.jobPath, "--run", "3", "--json"]).stdout)
        let rows = changes["changes"] as? [[String: Any]] ?? []
        let changed = try #require(rows.first { $0["op"] as? String == "changed" })
        let removed = try #require(rows.first { $0["op"] as? String == "removed" })
        let changedKey = try #require(changed["key"] as? String), field = try #require(changed["field"] as? String)

        let told = try await cli.cli(job, ["history", job.jobPath, "listing", changedKey, "--json"])
        #expect(told.termination == .exited(0), "\(told)")
        let history = try CLIConventionsTests.object(told.stdout)
        #expect(history["entity"] as? String == "listing" && history["key"] as? String == changedKey)
        let versions = history["versions"] as? [[String: Any]] ?? []
        let last = try #require(versions.last)
        #expect(last["event"] as? String == "changed" && (last["validFrom"] as? [String: Any])?["run"] as? Int == 3, "\(versions)")
        #expect(last["validTo"] is NSNull)
        let lastChanges = last["changes"] as? [[String: Any]] ?? []
        #expect(lastChanges.contains { $0["field"] as? String == field }, "\(lastChanges)")
        #expect(versions.first?["event"] as? String == "added" && (versions.first?["validFrom"] as? [String: Any])?["run"] as? Int == 1)
        for (older, newer) in zip(versions, versions.dropFirst()) {
            #expect((older["validTo"] as? [String: Any])?["run"] as? Int == (newer["validFrom"] as? [String: Any])?["run"] as? Int)
        }

        let gone = try await cli.cli(job, ["history", job.jobPath, "listing", try #require(removed["key"] as? String)])
        #expect(gone.termination == .exited(0), "\(gone)")
        #expect(gone.stdout.contains("removed  from run 3"), "\(gone.stdout)")
        #expect(gone.stdout.contains("still removed"), "\(gone.stdout)")

        let unknownEntity = try await cli.cli(job, ["history", job.jobPath, "listings", changedKey])
        #expect(unknownEntity.termination == .exited(64), "\(unknownEntity)")
        #expect(unknownEntity.stderr.contains("listing-detail") && unknownEntity.stderr.contains("podcast"), "\(unknownEntity)")
        let unknownKey = try await cli.cli(job, ["history", job.jobPath, "listing", "no-such-key"])
        #expect(unknownKey.termination == .exited(1), "\(unknownKey)")
        #expect(unknownKey.stderr.contains("no listing with key 'no-such-key'"), "\(unknownKey)")
    }
}
