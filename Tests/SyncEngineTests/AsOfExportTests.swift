import Catalog
import Export
import Foundation
import Snapshot
@testable import SyncEngine
import Testing
import TestSupport

/// Issue 30, item 2: `storesync export --as-of` writes, for an earlier night,
/// the consumer database, CSV files, feeds and OPML that night's export wrote,
/// byte for byte: the data rebuilt from the snapshot's change log, the feeds
/// as that night published them (PublishedFeeds).
@Suite struct AsOfExportTests {
    @Test func fourteenNightsLaterEachNightsDatabaseCSVsAndFeedsComeBackByteForByte() async throws {
        let soak = SoakTests()
        defer { try? FileManager.default.removeItem(at: soak.directory) }
        let job = try soak.demoJob()
        let runner = Runner(job: job, logger: .quiet)
        let output = URL(fileURLWithPath: job.outputDirectory)
        let kept = soak.directory.appendingPathComponent("as-written")
        var runs: [Int: Int64] = [:]
        for night in 1...14 {
            let report = try await runner.run(RunOptions(night: night))
            #expect(report.outcome == .ok, "night \(night):\n\(report.summaryText)")
            runs[night] = report.runID
            guard [3, 7, 14].contains(night) else { continue }
            let copy = kept.appendingPathComponent("\(night)")
            try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
            for name in ["demo.sqlite", "metadata.json", "csv", "changes.csv", "feeds", "podcasts.opml"] {
                try FileManager.default.copyItem(at: output.appendingPathComponent(name), to: copy.appendingPathComponent(name))
            }
        }
        for night in [3, 7, 14] {
            let run = try #require(runs[night])
            let into = soak.directory.appendingPathComponent("as-of-\(night)")
            let written = try Reexport.asOf(job: job, selector: String(run), into: into.path, logger: .quiet)
            #expect(written.run == run)
            let expected = kept.appendingPathComponent("\(night)")
            let files = ["demo.sqlite", "metadata.json", "changes.csv", "podcasts.opml"] + Self.published(under: expected, in: "csv")
                + Self.published(under: expected, in: "feeds")
            #expect(files.filter { $0.hasPrefix("feeds/") }.count > 20)
            // Nothing more than that night published (no archive index, no stray file).
            #expect(Self.published(under: into, in: "feeds") == Self.published(under: expected, in: "feeds"))
            for file in files {
                let was = try Data(contentsOf: expected.appendingPathComponent(file))
                let now = try Data(contentsOf: into.appendingPathComponent(file))
                // A Bool, not the two files: a failed expectation would print every byte of both.
                let same = was == now
                #expect(same, "night \(night): \(file) differs (\(was.count) bytes written that night, \(now.count) now)")
            }
            // Nothing of the live output was touched, and no changeset or push came of it.
            #expect(!FileManager.default.fileExists(atPath: into.appendingPathComponent("changesets").path))
        }
        // A date picks that day's last finished run.
        let last = try #require(runs[14])
        let started = try #require(try SQLiteBackend().openReadOnly(job.storePath).run(last)?.startedAt)
        let today = PathTemplate.dateValue(started)
        let byDate = try Reexport.asOf(job: job, selector: today, into: soak.directory.appendingPathComponent("by-date").path, logger: .quiet)
        #expect(byDate.run == runs[14])
        // A later day: what the last run before it left. A day before the first run, or no day of the calendar: refused.
        let tomorrow = PathTemplate.dateValue(started.addingTimeInterval(86_400))
        #expect(try Reexport.asOf(job: job, selector: tomorrow, into: soak.directory.appendingPathComponent("later").path, logger: .quiet).run == runs[14])
        let first = try #require(runs[1])
        let firstStarted = try #require(try SQLiteBackend().openReadOnly(job.storePath).run(first)?.startedAt)
        let before = PathTemplate.dateValue(firstStarted.addingTimeInterval(-86_400))
        #expect(throws: StoreSyncError.self) { try Reexport.asOf(job: job, selector: before, into: nil, logger: .quiet) }
        #expect(throws: StoreSyncError.self) { try Reexport.asOf(job: job, selector: "2026-02-30", into: nil, logger: .quiet) }
        #expect(throws: StoreSyncError.self) { try Reexport.asOf(job: job, selector: "999", into: nil, logger: .quiet) }
        #expect(throws: StoreSyncError.self) { try Reexport.asOf(job: job, selector: "last tuesday", into: nil, logger: .quiet) }

        // Without the kept files, the feeds are still written, from the rebuilt snapshot, and the log says how they differ.
        try FileManager.default.removeItem(at: output.appendingPathComponent(PublishedFeeds.folderName))
        let log = CapturedLog()
        let rebuilt = try Reexport.asOf(job: job, selector: String(try #require(runs[7])), into: soak.directory.appendingPathComponent("rebuilt").path,
                                        logger: log.logger)
        #expect(rebuilt.files.contains { $0.path.hasSuffix("feeds/episodes.xml") })
        #expect(log.text.contains("feed files were not kept"))
    }

    /// Files under `folder` of `root`, relative to `root`, hidden ones (storesync's own bookkeeping) left out.
    static func published(under root: URL, in folder: String) -> [String] {
        let base = root.appendingPathComponent(folder)
        guard let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey],
                                                           options: [.skipsHiddenFiles]) else { return [] }
        let prefix = base.standardizedFileURL.path + "/"
        return walker.compactMap { item -> String? in
            guard let url = item as? URL, (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true else { return nil }
            return folder + "/" + url.standardizedFileURL.path.dropFirst(prefix.count)
        }.sorted()
    }
}

/// `storesync export --as-of` from the command line: what it prints and how it refuses.
@Suite struct AsOfCommandTests {
    @Test func itSaysWhichRunAndSumsUpFoldersAndRefusesWhatIsNoRunOrNoDate() async throws {
        let job = try KillTestJob(label: "as-of-cli", binary: try StoresyncExecutable.locate(), yaml: """
            name: asof
            store: state/snapshot.sqlite
            output: out
            simulator: { seed: 5, podcasts: 200, products: 40, changed: 0.2 }
            sources:
              - {name: market, kind: marketplace, itemsPerPage: 20}
              - {name: podcasts, kind: itunes-search, terms: [news, history, science, comedy], pageSize: 20}
            exports:
              - {kind: sqlite, path: db.sqlite}
              - {kind: feed, feed: podcasts-updated, rss: "feeds/{genre}.xml", selfURL: "https://example.com/{genre}.xml"}
            """)
        defer { try? FileManager.default.removeItem(at: job.directory) }
        func cli(_ arguments: [String]) async throws -> RunResult { try await CLIConventionsTests().cli(job, arguments) }
        for night in 1...2 {
            let run = try await cli(["run", job.jobPath, "--night", String(night), "-q", "--no-progress"])
            try #require(run.termination == .exited(0), "\(run)")
        }
        let asOf = try await cli(["export", job.jobPath, "--as-of", "1"])
        #expect(asOf.termination == .exited(0), "\(asOf)")
        let lines = asOf.stdout.split(separator: "\n").map(String.init)
        #expect(lines.first == "as of run 1:", "\(asOf.stdout)")
        #expect(lines.contains { $0.hasPrefix("wrote ") && $0.contains("/as-of/1/db.sqlite (") }, "\(asOf.stdout)")
        // The genre feeds: one line for their folder, not one per file.
        #expect(lines.contains { $0.contains(" files in ") && $0.contains("/as-of/1/feeds/ (") }, "\(asOf.stdout)")
        #expect(lines.count < 6, "\(asOf.stdout)")
        for (selector, message) in [("2026-13-45", "is not a date of the calendar"), ("2001-01-01", "no finished run began on or before 2001-01-01"),
                                    ("9", "run 9 is not among the finished runs"), ("yesterday", "takes a run's number or a UTC date")] {
            let refused = try await cli(["export", job.jobPath, "--as-of", selector])
            #expect(refused.termination == .exited(64) && refused.stderr.contains(message), "\(selector): \(refused)")
        }
    }
}
