import Catalog
@testable import Export
import Foundation
import GRDB
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// Feeds as a publisher runs them night after night: what Apple Podcasts
/// requires, archives that stay as written, a strict feed that keeps the last
/// good file, artwork at the size the job asks for.
@Suite struct FeedPublishingTests {
    let directory = TestPaths.temporaryDirectory("publishing")

    func job(episodeFeed: String = "", top: String = "", churn: String = "changed: 0.05, added: 0.02, removed: 0.01")
        throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: publishing
            store: snapshot.sqlite
            output: out
            \(top)
            simulator: { seed: 11, podcasts: 300, products: 10, \(churn) }
            sources:
              - { name: genres, kind: itunes-genres, roots: [26] }
              - name: podcasts
                kind: itunes-search
                terms: [news, history]
                pageSize: 200
              - { name: episodes, kind: podcast-feed, from: podcasts, select: all, maxFeeds: 12 }
            exports:
              - kind: feed
                feed: episodes-new
                rss: feeds/episodes.xml
                atom: feeds/episodes.atom
                title: New episodes
                description: The newest episodes.
                selfURL: https://example.com/feeds/episodes.xml
                atomURL: https://example.com/feeds/episodes.atom
                link: https://example.com/
                limit: 40
                author: Publisher
                owner: {name: Publisher, email: feeds@example.com}
                copyright: © Publisher
                strict: true
                archive: true
            \(episodeFeed)
              - kind: feed
                feed: podcasts-new
                rss: feeds/genres/{genre}.xml
                title: "New {genre} podcasts"
                selfURL: https://example.com/feeds/genres/{genre}.xml
              - { kind: csv, directory: csv }
              - { kind: sqlite, path: publishing.sqlite }
              - { kind: run-report, path: report.json }
            """, file: "publishing.yml", baseDirectory: directory.path)
    }

    var feeds: URL { directory.appendingPathComponent("out/feeds") }

    func read(_ name: String) throws -> [UInt8] { Array(try Data(contentsOf: feeds.appendingPathComponent(name))) }

    @Test func theEpisodesFeedCarriesWhatApplePodcastsRequires() async throws {
        let report = try await Runner(job: try job(), logger: .quiet).run(RunOptions(night: 1))
        #expect(report.outcome == .ok, "\(report.summaryText)")
        let feed = try read("episodes.xml")
        #expect(PodcastFeedLint.check(feed) == [])
        let text = String(decoding: feed, as: UTF8.self)
        for expected in ["<language>en-us</language>", "<itunes:email>feeds@example.com</itunes:email>",
                         "<copyright>© Publisher</copyright>", "<itunes:explicit>", "<itunes:type>episodic</itunes:type>",
                         "<podcast:guid>\(PodcastGUID.forFeed("https://example.com/feeds/episodes.xml"))</podcast:guid>",
                         "3000x3000", "https://is"] {
            #expect(text.contains(expected), "episodes.xml lacks \(expected)")
        }
        #expect(!text.contains("600x600"), "every artwork URL is the hi-res one")
        // Directory feeds: Apple's categories only, as feed readers see them. A
        // first run is a baseline (nothing is new), so they list night 2's arrivals.
        _ = try await Runner(job: try job(), logger: .quiet).run(RunOptions(night: 2))
        let genreFeeds = try FileManager.default.contentsOfDirectory(atPath: feeds.appendingPathComponent("genres").path)
        #expect(!genreFeeds.isEmpty)
        for file in genreFeeds {
            let body = String(decoding: try read("genres/\(file)"), as: UTF8.self)
            for category in body.components(separatedBy: "<category>").dropFirst().map({ $0.components(separatedBy: "</category>")[0] }) {
                let path = category.replacingOccurrences(of: "&amp;", with: "&").split(separator: "/").map(String.init)
                #expect(AppleCategories.isListed(path), "\(file): category \(category)")
            }
        }
        let reportJSON = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent("out/report.json"))))
        #expect(reportJSON["feedLint"]?.arrayValue?.isEmpty == true)

        // Real clients and an independent check of Apple's rules.
        guard SoakFeedReaders.available else { return }
        let script = SoakFeedReaders.script.deletingLastPathComponent().appendingPathComponent("check_apple_podcasts.py")
        let result = try await Python.run([script.path, feeds.path])
        #expect(result.status == 0, "\(result.output)")
        #expect(result.output.contains(" 0 violations"), "\(result.output)")
    }

    @Test func archivePagesStayAsWrittenAndLoseNoItem() async throws {
        // With the artwork mirror: a page written once must not name a copy the mirror may evict later.
        let job = try job(episodeFeed: "  - { kind: artwork, budgetMB: 100, artworkBaseURL: 'https://example.com/artwork' }")
        var pages: [String: [UInt8]] = [:]
        for night in 1...3 {
            let report = try await Runner(job: job, logger: .quiet).run(RunOptions(night: night))
            #expect(report.outcome == .ok, "\(report.summaryText)")
            let names = try FileManager.default.contentsOfDirectory(atPath: feeds.path).filter { $0.hasPrefix("episodes-archive-") }
            let numbers = names.filter { $0.hasSuffix(".xml") }.compactMap { Int($0.dropFirst("episodes-archive-".count).dropLast(4)) }.sorted()
            #expect(numbers == Array(1...(numbers.max() ?? 0)), "pages are numbered without gaps")
            #expect(numbers.count >= 2, "300 podcasts' episodes exceed the limit of 40")
            // Every page but the newest is full and never rewritten.
            for number in numbers.dropLast() {
                let name = "episodes-archive-\(number).xml"
                let bytes = try read(name)
                if let earlier = pages[name] { #expect(earlier == bytes, "\(name) changed on night \(night)") }
                pages[name] = bytes
                #expect(String(decoding: bytes, as: UTF8.self).contains("rel=\"next-archive\""))
                #expect(!String(decoding: bytes, as: UTF8.self).contains("example.com/artwork"), "\(name) names a mirror copy")
            }
            let current = String(decoding: try read("episodes.xml"), as: UTF8.self)
            #expect(current.contains("https://example.com/artwork/"), "the subscription document names the mirror's copies")
            #expect(current.contains("href=\"https://example.com/feeds/episodes-archive-\(numbers.max()!).xml\" rel=\"prev-archive\""))
            // The subscription document and the pages hold each stored episode once.
            var guids: [String] = []
            for name in ["episodes.xml"] + numbers.map({ "episodes-archive-\($0).xml" }) {
                guids += SoakExportChecks.itemIDs(Data(try read(name)), name: name)
            }
            #expect(Set(guids).count == guids.count, "an item appears twice across pages")
            let stored = try String(contentsOf: directory.appendingPathComponent("out/csv/episodes.csv"), encoding: .utf8)
            let rows = stored.split(separator: "\n").count - 1
            #expect(guids.count >= rows, "night \(night): \(guids.count) items for \(rows) stored episodes")
            let atom = String(decoding: try read("episodes.atom"), as: UTF8.self)
            #expect(atom.contains("rel=\"prev-archive\""))
        }
    }

    @Test func aStrictFeedKeepsTheLastGoodFileWhenARequirementBreaks() async throws {
        _ = try await Runner(job: try job(), logger: .quiet).run(RunOptions(night: 1))
        let good = try read("episodes.xml")
        // A GIF cover breaks Apple's artwork rule.
        var broken = try job()
        guard case .feed(var spec) = broken.exports[0] else { Issue.record("the first export is the feed"); return }
        spec.imageURL = "https://example.com/cover.gif"
        broken.exports[0] = .feed(spec)
        let report = try await Runner(job: broken, logger: .quiet).run(RunOptions(night: 2))
        #expect(try read("episodes.xml") == good)
        #expect(report.outcome == .partial)
        #expect(report.warnings.contains { $0.message.contains("feeds/episodes.xml") && $0.message.contains("channel-image") })
        #expect(report.warnings.contains { $0.message.contains("was not published (strict: true)") })
        // `storesync status` tells the same as the exit code.
        let store = try SQLiteBackend().open(broken.storePath)
        #expect(try store.run(report.runID)?.status == .partial)
        // So does the consumer database's `runs` table, though it is written before the reports.
        let consumer = try DatabaseQueue(path: directory.appendingPathComponent("out/publishing.sqlite").path)
        #expect(try await consumer.read { try String.fetchOne($0, sql: "SELECT status FROM runs WHERE id = ?", arguments: [report.runID]) } == "partial")
        let reportJSON = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent("out/report.json"))))
        #expect(reportJSON["feedLint"]?.arrayValue?.contains { $0["rule"]?.stringValue == "channel-image" } == true)
    }

    @Test func anotherArtworkSizeRewritesURLsWithoutReportingChanges() async throws {
        let still = "changed: 0, added: 0, removed: 0"
        let first = try await Runner(job: try job(churn: still), logger: .quiet).run(RunOptions(night: 1))
        #expect(first.outcome == .ok)
        let csv = directory.appendingPathComponent("out/csv/podcasts.csv")
        #expect(try String(contentsOf: csv, encoding: .utf8).contains("3000x3000"))
        let second = try await Runner(job: try job(top: "artworkSize: 1400", churn: still), logger: .quiet).run(RunOptions(night: 2))
        #expect(second.outcome == .ok, "\(second.summaryText)")
        for source in second.sources {
            #expect(source.counts.changed == 0 && source.counts.added == 0 && source.counts.removed == 0, "\(source.name)")
        }
        let podcasts = try String(contentsOf: csv, encoding: .utf8)
        #expect(podcasts.contains("1400x1400") && !podcasts.contains("3000x3000"))
        // Every page was read again, not answered from last night's memo.
        #expect(second.fetch.notModified == 0 && second.fetch.requests >= first.fetch.requests, "\(second.fetch)")
        let third = try await Runner(job: try job(top: "artworkSize: 1400", churn: still), logger: .quiet).run(RunOptions(night: 3))
        #expect(third.fetch.notModified > 0, "the mapping is settled: unchanged feeds answer 304 again")
    }

    @Test func aMusicFeedPlaysTheSongsPreviews() async throws {
        let job = try JobLoader.parse(yaml: """
            name: music
            store: snapshot.sqlite
            output: out
            simulator: { seed: 3, podcasts: 10, products: 10 }
            sources:
              - { name: songs, kind: itunes-search, media: music, entity: song, terms: [love], pageSize: 50, maxResults: 50 }
            exports:
              - kind: feed
                feed: music-new
                rss: feeds/music.xml
                title: New songs
                selfURL: https://example.com/music.xml
                limit: 20
            """, file: "music.yml", baseDirectory: directory.path)
        let report = try await Runner(job: job, logger: .quiet).run(RunOptions(night: 1))
        let feed = try read("music.xml")
        let text = String(decoding: feed, as: UTF8.self)
        #expect(text.contains("<itunes:category text=\"Music\"/>"))
        #expect(text.components(separatedBy: "<enclosure ").count - 1 == 20, "every song's preview is its enclosure")
        #expect(text.contains("type=\"audio/x-m4a\""))
        // iTunes never says how large a preview is, and Apple requires the length: the lint says so.
        let required = Set(PodcastFeedLint.check(feed).filter { $0.severity == .requirement }.map(\.rule))
        #expect(required == ["item-enclosure-length"])
        #expect(report.outcome == .partial)
    }

    @Test func theChannelKeysAreCheckedWhenTheJobIsRead() {
        let bad = """
              - kind: feed
                feed: episodes-new
                rss: feeds/e2.xml
                selfURL: https://example.com/e2.xml
                language: english please
                owner: {email: not-an-address}
                type: weekly
                categories: [Technology/Tech News, Arts/Food]
            """
        #expect {
            _ = try job(episodeFeed: bad)
        } throws: { error in
            let text = "\(error)"
            return text.contains("language") && text.contains("e-mail") && text.contains("episodic")
                && text.contains("'Technology/Tech News' is not on Apple Podcasts' category list (nearest listed: Technology)")
                && !text.contains("Arts/Food")
        }
    }
}
