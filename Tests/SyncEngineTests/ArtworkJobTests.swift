import Catalog
import Foundation
import Logging
@testable import SyncEngine
import Testing
import TestSupport

/// `kind: artwork` in a job file, and a whole run with the simulator's image service.
@Suite struct ArtworkJobTests {
    let directory = TestPaths.temporaryDirectory("artwork-job")

    static func yaml(_ exports: String) -> String {
        """
        name: art
        store: snapshot.sqlite
        output: out
        simulator: { seed: 7, podcasts: 200, products: 20 }
        sources:
          - { name: podcasts, kind: itunes-search, terms: [news], pageSize: 100 }
          - { name: episodes, kind: podcast-feed, from: podcasts, select: all, maxFeeds: 10 }
        exports:
        \(exports)
        """
    }

    func issues(_ exports: String) -> [String] {
        do {
            _ = try JobLoader.parse(yaml: Self.yaml(exports), file: "job.yml", baseDirectory: "/jobs", rules: .cli)
            return []
        } catch {
            return error.issues.map { "\($0.keyPath): \($0.message)" }
        }
    }

    @Test func loadsWithDefaultsAndRejectsBadValues() throws {
        let job = try JobLoader.parse(yaml: Self.yaml("  - { kind: artwork, artworkBaseURL: \"https://example.com/artwork/\" }"),
                                      file: "job.yml", baseDirectory: "/jobs", rules: .cli)
        #expect(job.exports == [.artwork(ArtworkExportSpec(directory: "artwork", budgetMB: 500, artworkBaseURL: "https://example.com/artwork"))])
        #expect(issues("  - { kind: artwork, budgetMB: 0 }").contains { $0.hasPrefix("exports[0].budgetMB") })
        #expect(issues("  - { kind: artwork, budgetMB: lots }").contains { $0.hasPrefix("exports[0].budgetMB") })
        #expect(issues("  - { kind: artwork, artworkBaseURL: ftp://x/y }").contains { $0.hasPrefix("exports[0].artworkBaseURL") })
        #expect(issues("  - { kind: artwork, directory: ../elsewhere }").contains { $0.hasPrefix("exports[0].directory") })
        #expect(issues("  - { kind: artwork, directory: . }").contains { $0.hasPrefix("exports[0].directory") })
        #expect(issues("  - { kind: artwork, budget: 5 }").contains { $0.contains("budget") })
        #expect(issues("  - { kind: artwork }\n  - { kind: artwork, directory: b }").contains { $0.contains("at most one artwork export") })
    }

    /// Two nights against the simulator: the second asks with validators only, and every
    /// image a feed names is either its original URL or a copy the mirror holds.
    @Test func aRunMirrorsWhatItsFeedsPublish() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: Self.yaml("""
              - { kind: artwork, budgetMB: 50, artworkBaseURL: "https://example.com/artwork" }
              - { kind: feed, feed: podcasts-updated, rss: podcasts.xml, selfURL: "https://example.com/podcasts.xml", limit: 20 }
              - { kind: feed, feed: episodes-new, rss: episodes.xml, selfURL: "https://example.com/episodes.xml", limit: 20 }
              - { kind: run-report, path: report.json }
            """), file: "job.yml", baseDirectory: directory.path, rules: .cli)
        let first = try await Runner(job: job, logger: .quiet).run()
        let figures = try #require(first.artwork)
        #expect(figures.wanted > 0 && figures.requests == figures.wanted && figures.failed == 0)
        #expect(figures.downloaded == figures.wanted && figures.notModified == 0)
        #expect(first.summaryText.contains("artwork: \(figures.files) files"))
        #expect(first.exports.contains { $0.path.hasSuffix("/out/artwork") && $0.rows == figures.files })
        let report = try String(contentsOfFile: directory.appendingPathComponent("out/report.json").path, encoding: .utf8)
        #expect(report.contains("\"artwork\""))

        let second = try await Runner(job: job, logger: .quiet).run()
        let again = try #require(second.artwork)
        #expect(again.downloaded <= again.requests - again.notModified)
        // Unchanged artwork costs a 304 only; what was downloaded is artwork that changed (a new URL) tonight.
        #expect(again.notModified >= again.wanted - again.downloaded && again.notModified > 0)

        let folder = directory.appendingPathComponent("out/artwork")
        let held = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter(ArtworkMirror.isMirrorFileName))
        for feed in ["podcasts.xml", "episodes.xml"] {
            let text = try String(contentsOfFile: directory.appendingPathComponent("out/\(feed)").path, encoding: .utf8)
            let prefix = "https://example.com/artwork/"
            var named = 0
            for part in text.components(separatedBy: prefix).dropFirst() {
                let name = String(part.prefix { $0 != "\"" && $0 != "<" })
                #expect(held.contains(name), "\(feed) names \(name), which the mirror does not hold")
                named += 1
            }
            #expect(named == 0 || again.published > 0)
        }
    }
}
