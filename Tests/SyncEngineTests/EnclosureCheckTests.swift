import Catalog
import Foundation
@testable import StoreSim
import SyncEngine
import Testing
import TestSupport

/// Enclosures that play (issue 28): a feed with `checkEnclosures` asks each
/// published media file's server about it once (HEAD, or a one-byte range GET
/// where HEAD is refused), remembers the answer across nights, publishes the
/// length and type it learnt where the source gave none, withholds items
/// whose file is gone, and says what it found in the lint and report.json.
@Suite(.serialized) struct EnclosureCheckTests {
    static func yaml(check: Bool) -> String {
        """
        name: music
        store: state/snapshot.sqlite
        output: out
        simulator: { seed: 11, podcasts: 50, products: 20 }
        sources:
          - {name: songs, kind: itunes-search, media: music, entity: song, terms: [love, night], pageSize: 50}
        exports:
        \(musicFeed(limit: 40, check: check))
          - {kind: run-report, path: report.json}
        """
    }

    /// The songs' feed, as a podcast app subscribes to it: an export of a
    /// job's `exports:` list (also FleetFeatureTests').
    static func musicFeed(limit: Int, check: Bool) -> String {
        """
          - kind: feed
            feed: music-new
            rss: feeds/music.xml
            title: New songs
            selfURL: https://example.com/feeds/music.xml
            image: https://example.com/cover-3000x3000.jpg
            owner: {name: Me, email: me@example.com}
            copyright: © Me
            categories: [Music]
            limit: \(limit)
            checkEnclosures: \(check)
        """
    }

    @Test func aMusicFeedWithChecksPublishesRealLengthsAndNoRequirementFinding() async throws {
        let directory = TestPaths.temporaryDirectory("enclosure-checks")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: Self.yaml(check: true), file: "music.yml", baseDirectory: directory.path, rules: .cli)
        let first = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        #expect(first.outcome == .ok, "\(first.summaryText)")
        let figures = try #require(first.enclosures)
        #expect(figures.checked == figures.wanted && figures.wanted >= 40 && figures.requests >= figures.checked, "\(figures)")

        let feed = try String(contentsOf: URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("feeds/music.xml"), encoding: .utf8)
        let enclosures = feed.components(separatedBy: "<enclosure ").dropFirst().map { String($0.prefix { $0 != ">" }) }
        #expect(enclosures.count == 40, "the feed still lists `limit` items: a withheld one makes room for the next")
        var gone = 0, refusingRanges = 0
        for enclosure in enclosures {
            let url = try #require(enclosure.components(separatedBy: "url=\"").dropFirst().first?.prefix { $0 != "\"" })
            let path = try #require(URL(string: String(url))?.path)
            let length = try #require(enclosure.components(separatedBy: "length=\"").dropFirst().first?.prefix { $0 != "\"" })
            #expect(MediaFiles.manner(path: path) != .gone, "a gone file was published: \(url)")
            #expect(Int(length) == MediaFiles.size(path: path), "\(url): length \(length)")
            if MediaFiles.manner(path: path) == .ignoresRanges { refusingRanges += 1 }
        }
        gone = figures.gone
        #expect(gone > 0 && figures.withheld == gone, "\(figures)")
        #expect(figures.rangesRefused >= refusingRanges && figures.lengthsLearned == 40, "\(figures)")

        let report = try JSONParser.parse(Array(try Data(contentsOf: URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("report.json"))))
        let lint = report["feedLint"]?.arrayValue ?? []
        #expect(!lint.contains { $0["severity"]?.stringValue == "requirement" }, "\(lint)")
        #expect(lint.filter { $0["rule"]?.stringValue == "item-enclosure-ranges" }.count == refusingRanges)
        #expect(report["enclosures"]?["withheld"]?.intValue == Int64(gone))

        // The next night asks nothing it already knows.
        let second = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        let again = try #require(second.enclosures)
        #expect(again.remembered + again.checked == again.wanted && again.checked < figures.checked / 4, "\(again)")
        #expect(again.requests <= again.checked * 2, "\(again)")

        // Once a fact is old, the check asks again, conditionally: the files did not change, so 304s.
        let memoURL = URL(fileURLWithPath: job.outputDirectory).appendingPathComponent(".storesync-enclosures.json")
        var memo = try #require(try JSONParser.parse(Array(try Data(contentsOf: memoURL))).objectValue)
        guard case .object(var facts)? = memo["facts"] else { Issue.record("no facts in \(memo)"); return }
        for (url, fact) in facts {
            guard case .object(var members) = fact else { continue }
            members["checkedRun"] = .int(-100)
            facts[url] = .object(members)
        }
        memo["facts"] = .object(facts)
        try Data(CanonicalJSON.encode(.object(memo))).write(to: memoURL)
        let third = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 2))
        let rechecked = try #require(third.enclosures)
        #expect(rechecked.checked == rechecked.wanted && rechecked.notModified > rechecked.checked / 2, "\(rechecked)")
        #expect(rechecked.lengthsLearned == 40 && rechecked.withheld == gone, "\(rechecked)")
    }

    @Test func withoutChecksTheSameFeedBreaksApplesLengthRequirement() async throws {
        let directory = TestPaths.temporaryDirectory("enclosure-unchecked")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: Self.yaml(check: false), file: "music.yml", baseDirectory: directory.path, rules: .cli)
        let report = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        #expect(report.enclosures == nil)
        #expect(report.warnings.contains { $0.message.contains("item-enclosure-length") }, "\(report.summaryText)")
    }

    @Test func onlySubscribableFeedsCheckEnclosures() {
        do {
            _ = try JobLoader.parse(yaml: Self.yaml(check: true).replacingOccurrences(of: "feed: music-new", with: "feed: podcasts-new"),
                                    file: "music.yml", baseDirectory: "/jobs")
            Issue.record("accepted")
        } catch {
            #expect(error.issues.contains { $0.keyPath == "exports[0].checkEnclosures" }, "\(error.issues)")
        }
    }
}
