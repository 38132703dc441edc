import Catalog
import Connectors
import Crawl
import Foundation
import SyncEngine
import Testing
import TestSupport

/// A source kind that exists only in this test target: words from its own
/// settings, served in pages from memory. It is added through the protocol
/// and the registry alone, which is all a new kind should ever need.
struct WordListSettings: SourceKind {
    static let name = "word-list"
    static let settingKeys = ["words", "pageSize"]

    var words: [String]
    var pageSize = 2

    static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> WordListSettings? {
        let words = reader.strings(fields, "words", path: path) ?? []
        if words.isEmpty { reader.issue(reader.anchor(fields), reader.join(path, "words"), "is required: a list of words") }
        var settings = WordListSettings(words: words)
        if let size = reader.int(fields, "pageSize", path: path, range: 1...100) { settings.pageSize = size }
        return words.isEmpty ? nil : settings
    }

    func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope] {
        let words = self.words, pageSize = self.pageSize
        let pageCount = (words.count + pageSize - 1) / pageSize
        return [CrawlScope(
            id: "words", pagination: .pageNumber(firstPage: 0, pageSize: pageSize, maxPages: 1_000),
            origin: .local { index throws(StoreSyncError) in
                let slice = words.dropFirst(index * pageSize).prefix(pageSize)
                return HTTPResponse(url: URL(string: "memory:words")!, status: 200,
                                    headers: ["x-has-next": index + 1 < pageCount ? "1" : "0"],
                                    body: Array(slice.joined(separator: "\n").utf8))
            },
            decode: { response throws(StoreSyncError) in
                let lines = String(decoding: response.body, as: UTF8.self).split(separator: "\n").map(String.init)
                let records = lines.map { Record(entity: .record, key: $0, fields: ["word": .string($0), "length": .int(Int64($0.count))]) }
                return DecodedPage(items: records, rowCount: records.count, hasNext: response.header("x-has-next") == "1")
            })]
    }
}

@Suite struct CustomSourceKindTests {
    static let registry = SourceRegistry.standard.adding(WordListSettings.self)

    func job(_ words: [String], directory: URL) throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: words
            store: snapshot.sqlite
            output: out
            sources:
              - {name: words, kind: word-list, words: [\(words.joined(separator: ", "))], pageSize: 2, removal: {afterMisses: 1, maxRatio: 1}}
            """, file: "words.yml", baseDirectory: directory.path, rules: JobFileRules(registry: Self.registry))
    }

    @Test func aKindDefinedOutsideTheLibraryIsCrawledEndToEnd() async throws {
        let directory = TestPaths.temporaryDirectory("custom-kind")
        defer { try? FileManager.default.removeItem(at: directory) }
        let first = try job(["apple", "banana", "cherry", "damson", "elder"], directory: directory)
        #expect(first.sources.first?.kind == "word-list")
        #expect(first.sources.first?.settings as? WordListSettings == WordListSettings(words: ["apple", "banana", "cherry", "damson", "elder"]))

        let night1 = try await Runner(job: first, environment: RunEnvironment(logger: .quiet)).run()
        #expect(night1.outcome == .ok, "\(night1.errors)")
        let words = try #require(night1.sources.first)
        #expect(words.kind == "word-list")
        #expect(words.counts.pages == 3)
        #expect(words.counts.added == 5)

        let again = try await Runner(job: first, environment: RunEnvironment(logger: .quiet)).run()
        #expect(again.recordRowsWritten == 0)

        // The list loses one word and gains another: the ordinary diff and removal rules apply.
        let second = try job(["apple", "banana", "cherry", "elder", "fig"], directory: directory)
        let night2 = try await Runner(job: second, environment: RunEnvironment(logger: .quiet)).run()
        let changed = try #require(night2.sources.first)
        #expect(changed.counts.added == 1)
        #expect(changed.counts.removed == 1)
        #expect(night2.recordRowsWritten == 2)
    }

    @Test func theKindValidatesItsOwnSettingsAndUnknownKindsGetASuggestion() throws {
        func issues(_ source: String, registry: SourceRegistry) -> [String] {
            do {
                _ = try JobLoader.parse(yaml: "name: x\nstore: s.sqlite\noutput: out\nsources:\n  - \(source)\n",
                                        file: "x.yml", baseDirectory: "/jobs", rules: JobFileRules(registry: registry))
                return []
            } catch {
                return error.issues.map { "\($0.keyPath): \($0.message)" }
            }
        }
        let own = issues("{name: w, kind: word-list, pageSize: 0, colour: red}", registry: Self.registry)
        #expect(own.contains { $0.hasPrefix("sources[0].words: is required") })
        #expect(own.contains { $0.hasPrefix("sources[0].pageSize: must be between 1 and 100") })
        #expect(own.contains { $0.hasPrefix("sources[0].colour: unknown key") && $0.contains("words, pageSize") })

        // Without the registry line, the kind does not exist.
        let unknown = issues("{name: w, kind: word-list, words: [a]}", registry: .standard)
        #expect(unknown.contains { $0.contains("unknown source kind 'word-list'") })
        let typo = issues("{name: s, kind: itunes-serach, terms: [news]}", registry: .standard)
        #expect(typo.contains { $0.contains("did you mean 'itunes-search'?") })
    }
}

/// The services a run talks to fail as themselves, not as a fetch "the next run retries".
@Suite struct UpstreamServicesTests {
    @Test func aSimulatorThatCannotStartSaysSoAndFetchesNothing() async throws {
        let directory = TestPaths.temporaryDirectory("upstream")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Loaded without the CLI's rules, so the bad fault reaches the simulator itself.
        let job = try JobLoader.parse(yaml: """
            name: upstream
            store: snapshot.sqlite
            output: out
            simulator: { faults: ["no-such-fault:1"] }
            sources: [{name: market, kind: marketplace}]
            """, file: "upstream.yml", baseDirectory: directory.path)
        do {
            _ = try await Runner(job: job, logger: .quiet).run()
            Issue.record("expected the run to fail")
        } catch {
            #expect(error.code == .upstreamUnavailable)
            #expect(error.description.contains("no-such-fault"), "\(error)")
            #expect(error.description.contains("Fix simulator.faults in the job file"), "\(error)")
            #expect(!error.description.contains("next run"), "\(error)")
        }
    }
}
