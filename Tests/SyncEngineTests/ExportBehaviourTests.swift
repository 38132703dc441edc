import Catalog
import Foundation
import Logging
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// Export behaviour across the whole pipeline: reports, determinism, failures.
@Suite struct ExportBehaviourTests {
    let directory = TestPaths.temporaryDirectory("exports")

    func job(extraExports: String = "") throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: exports
            store: snapshot.sqlite
            output: out
            simulator: { seed: 5, podcasts: 300, products: 150 }
            sources:
              - name: podcasts
                kind: itunes-search
                terms: [news, science]
                pageSize: 100
              - name: market
                kind: marketplace
                itemsPerPage: 50
            exports:
              - { kind: sqlite, path: db.sqlite }
              - { kind: csv, directory: csv }
              - { kind: changes-csv, path: changes.csv }
              - kind: feed
                feed: podcasts-new
                rss: feeds/{genre}.xml
                title: "New {genre} podcasts"
                selfURL: https://example.com/{genre}.xml
              - kind: feed
                feed: changes
                rss: feeds/changes.xml
                selfURL: https://example.com/changes.xml
              - { kind: run-report, path: report.json }
              - { kind: metrics, path: storesync.prom }
            \(extraExports)
            """, file: "exports.yml", baseDirectory: directory.path)
    }

    func files(_ root: String) throws -> [String: Data] {
        var out: [String: Data] = [:]
        let base = URL(fileURLWithPath: root)
        let walker = FileManager.default.enumerator(at: base, includingPropertiesForKeys: [.isRegularFileKey])
        while let url = walker?.nextObject() as? URL {
            if (try url.resourceValues(forKeys: [.isRegularFileKey])).isRegularFile == true {
                out[url.path.replacingOccurrences(of: base.path, with: "")] = try Data(contentsOf: url)
            }
        }
        return out
    }

    @Test func reportAndMetricsDescribeTheRun() async throws {
        let job = try job()
        _ = try await Runner(job: job, logger: .quiet).run()
        let report = try await Runner(job: job, logger: .quiet).run()
        let out = URL(fileURLWithPath: job.outputDirectory)
        let json = try JSONParser.parse(Array(try Data(contentsOf: out.appendingPathComponent("report.json"))))
        #expect(json["run"] == .int(report.runID))
        #expect(json["status"] == .string("ok"))
        #expect(json["exitCode"] == .int(0))
        #expect(json["requests"]?["total"] == .int(Int64(report.fetch.requests)))
        let sources = json["sources"]?.arrayValue ?? []
        #expect(sources.count == 2)
        for source in sources {
            let name = source["name"]?.stringValue ?? ""
            let counts = try #require(report.sources.first { $0.name == name }?.counts)
            #expect(source["added"] == .int(Int64(counts.added)))
            #expect(source["changed"] == .int(Int64(counts.changed)))
            #expect(source["removed"] == .int(Int64(counts.removed)))
        }
        let metrics = try String(contentsOf: out.appendingPathComponent("storesync.prom"), encoding: .utf8)
        #expect(metrics.contains("storesync_run_success{storesync_job=\"exports\"} 1\n"))
        #expect(metrics.contains("storesync_requests{storesync_job=\"exports\",kind=\"all\"} \(report.fetch.requests)\n"))
        // Every sample line is `name{labels} value` (Prometheus text format).
        for line in metrics.split(separator: "\n") where !line.hasPrefix("#") {
            #expect(line.wholeMatch(of: /[a-z_]+\{[^}]*\} -?[0-9.]+/) != nil, "\(line)")
        }
    }

    /// Invariant 4: the same snapshot gives byte-identical files.
    @Test func reexportingTheSameSnapshotGivesIdenticalBytes() async throws {
        let job = try job()
        _ = try await Runner(job: job, logger: .quiet).run()
        _ = try await Runner(job: job, logger: .quiet).run()
        let first = try files(job.outputDirectory)
        #expect(first.keys.contains { $0.hasPrefix("/feeds/") && $0 != "/feeds/changes.xml" }, "one feed per genre")
        let written = try Reexport.run(job: job, logger: .quiet)
        #expect(!written.isEmpty)
        let second = try files(job.outputDirectory)
        #expect(Set(first.keys) == Set(second.keys))
        for (path, bytes) in first {
            #expect(second[path] == bytes, "\(path) changed on re-export")
        }
    }

    /// An export that cannot be written fails the run loudly, loses none of
    /// the crawled data, leaves the other files, and the report says so.
    @Test func aFailedExportIsReportedAndLosesNothing() async throws {
        let job = try job()
        _ = try await Runner(job: job, logger: .quiet).run()
        let out = URL(fileURLWithPath: job.outputDirectory)
        // A non-empty directory where the file must go: the rename into place fails.
        let target = out.appendingPathComponent("feeds/changes.xml")
        try FileManager.default.removeItem(at: target)
        try FileManager.default.createDirectory(at: target.appendingPathComponent("blocker"), withIntermediateDirectories: true)
        let report = try await Runner(job: job, logger: .quiet).run()
        #expect(report.outcome == .failed)
        #expect(report.errors.contains { $0.message.contains("changes.xml") }, "\(report.errors)")
        // The error names the file, not the export's whole settings, and says what becomes of it.
        #expect(report.errors.contains { $0.message.hasPrefix(target.path + ": export failed") && $0.message.contains("left intact") },
                "\(report.errors)")
        #expect(!report.errors.contains { $0.message.contains("FeedExportSpec") }, "\(report.errors)")
        let store = try SQLSnapshotStore(path: job.storePath)
        #expect(try store.run(report.runID)?.status == .failed)
        let json = try JSONParser.parse(Array(try Data(contentsOf: out.appendingPathComponent("report.json"))))
        #expect(json["status"] == .string("failed"))
        #expect(json["exitCode"] == .int(1))
        #expect(FileManager.default.fileExists(atPath: out.appendingPathComponent("db.sqlite").path))
        // Nothing half-written is left behind.
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: out.appendingPathComponent("feeds").path)
            .filter { $0.contains(".tmp-") }
        #expect(leftovers.isEmpty, "\(leftovers)")
        try FileManager.default.removeItem(at: target)
        _ = try Reexport.run(job: job, logger: .quiet)
        #expect(FileManager.default.fileExists(atPath: target.path))
    }
}
