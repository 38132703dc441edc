import Catalog
import Connectors
import Foundation
import SyncEngine
import Testing
import TestSupport

@Suite struct JobLoaderTests {
    func issues(_ yaml: String) -> [JobFileIssue] {
        do {
            _ = try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs", rules: .cli)
            return []
        } catch {
            if error.code == .invalidJob { return error.issues }
            return []
        }
    }

    @Test func theShippedDemoJobIsValid() throws {
        let job = try JobLoader.load(path: TestPaths.repoRoot.appendingPathComponent("jobs/demo.yml").path)
        #expect(job.name == "demo")
        #expect(job.simulator != nil)
        #expect(job.storePath.hasSuffix("/output/demo/snapshot.sqlite"))
        #expect(!job.storePath.contains(".."))
        #expect(job.sources.map(\.kind) == ["itunes-genres", "itunes-charts", "itunes-search", "podcast-feed", "marketplace"])
    }

    @Test func relativePathsResolveAgainstTheJobFolder() throws {
        let job = try JobLoader.parse(yaml: """
            name: x
            store: ../data/s.sqlite
            output: out
            sources: [{name: m, kind: marketplace}]
            """, file: "job.yml", baseDirectory: "/srv/jobs")
        #expect(job.storePath == "/srv/data/s.sqlite")
        #expect(job.outputDirectory == "/srv/jobs/out")
        #expect(job.sources.first?.baseURL == nil)
        #expect(job.sources.first?.defaultBaseURL?.host == "openmarket.yagom-academy.kr")
    }

    @Test func everySourceKindLoadsWithItsSettings() throws {
        let job = try JobLoader.parse(yaml: """
            name: x
            store: s.sqlite
            output: out
            sources:
              - {name: genres, kind: itunes-genres, roots: [26, 34], country: gb}
              - {name: charts, kind: itunes-charts, charts: [toppodcasts], genresFrom: genres, genres: [1310], limit: 50}
              - {name: top, kind: itunes-charts, format: v2, charts: [music/most-played/albums], countries: [us, gb]}
              - {name: podcasts, kind: itunes-search, terms: [news]}
              - {name: episodes, kind: itunes-lookup, from: podcasts, entities: [podcast], lookupEntity: podcastEpisode, limit: 20}
              - {name: feeds, kind: podcast-feed, from: podcasts, select: all, maxFeeds: 10}
              - {name: market, kind: marketplace, detail: true}
              - {name: mine, kind: records-file, path: data/catalog.jsonl, keyField: sku, pageSize: 500}
            """, file: "job.yml", baseDirectory: "/srv/jobs")
        let settings = Dictionary(uniqueKeysWithValues: job.sources.map { ($0.name, $0) })
        #expect(settings["genres"]?.settings as? ITunesGenresSettings == ITunesGenresSettings(roots: [26, 34], country: "gb"))
        #expect(settings["charts"]?.settings as? ITunesChartsSettings == ITunesChartsSettings(charts: ["toppodcasts"], limit: 50, genresFrom: "genres", genres: [1310]))
        #expect(settings["top"]?.settings as? ITunesChartsSettings == ITunesChartsSettings(format: .v2, charts: ["music/most-played/albums"], countries: ["us", "gb"]))
        #expect(job.sources.first { $0.name == "top" }?.defaultBaseURL?.host == "rss.applemarketingtools.com")
        #expect(settings["episodes"]?.settings as? ITunesLookupSettings == ITunesLookupSettings(from: "podcasts", entities: [.podcast], lookupEntity: "podcastEpisode", limit: 20))
        #expect(settings["feeds"]?.settings as? PodcastFeedSettings == PodcastFeedSettings(from: "podcasts", select: .all, maxFeeds: 10))
        #expect(settings["market"]?.settings as? MarketplaceSettings == MarketplaceSettings(detail: true))
        #expect(settings["mine"]?.settings as? RecordsFileSettings == RecordsFileSettings(path: "/srv/jobs/data/catalog.jsonl", format: .jsonLines, keyField: "sku", pageSize: 500))
    }

    @Test func aDependentSourceMustNameAnEarlierSource() {
        let found = issues("""
            name: x
            store: s.sqlite
            output: out
            sources:
              - {name: feeds, kind: podcast-feed, from: podcasts}
              - {name: podcasts, kind: itunes-search, terms: [news]}
              - {name: charts, kind: itunes-charts, format: v2, charts: [toppodcasts], genres: [1310]}
              - {name: file, kind: records-file, path: data.txt}
              - {name: g, kind: itunes-genres, roots: [99]}
              - {name: l, kind: itunes-lookup, from: podcasts, select: some}
            """)
        let messages = found.map { "\($0.keyPath): \($0.message)" }
        #expect(messages.contains { $0.hasPrefix("sources[0]:") && $0.contains("'podcasts' must name an earlier source") })
        #expect(messages.contains { $0.contains("v2 charts have no genres") })
        #expect(messages.contains { $0.contains("a v2 chart is media/chart/type") })
        #expect(messages.contains { $0.hasPrefix("sources[3].path") && $0.contains("cannot tell the format") })
        #expect(messages.contains { $0.contains("99 is not a genre root") })
        #expect(messages.contains { $0.hasPrefix("sources[5].select") })
    }

    @Test func everyProblemIsReportedWithLineAndKey() {
        let found = issues("""
            name: x
            store: s.sqlite
            output: out
            sources:
              - name: p
                kind: itunes-search
                tems: [news]
                pageSize: 500
              - name: p
                kind: marketplace
                baseURL: ftp://example.com
            exports:
              - kind: csv
                directory: ../../etc
            """)
        let byKey = Dictionary(grouping: found, by: \.keyPath)
        #expect(byKey["sources[0].tems"]?.first?.line == 7)
        #expect(byKey["sources[0].tems"]?.first?.message.contains("did you mean 'terms'") == true)
        #expect(byKey["sources[0].terms"] != nil)
        #expect(byKey["sources[0].pageSize"]?.first?.line == 8)
        #expect(byKey["sources[1].baseURL"]?.first?.line == 11)
        #expect(byKey["sources[1].name"] != nil, "duplicate names")
        #expect(byKey["exports[0].directory"]?.first?.line == 14)
        #expect(found.allSatisfy { $0.description.hasPrefix("job.yml:") })
    }

    @Test func aMistypedKindIsSuggestedAndTheSourceIsStillCheckedAsTheKindMeant() {
        let found = issues("""
            name: x
            store: s.sqlite
            output: out
            sources:
              - name: one
                kind: itunes-serach
                term: jazz
                media: podcasst
              - name: two
                kind: marketplace
                pageSize: 0
              - name: three
                limitt: 3
            """)
        let byKey = Dictionary(grouping: found, by: \.keyPath)
        #expect(byKey["sources[0].kind"]?.first?.message.contains("did you mean 'itunes-search'") == true)
        // Before, the unknown kind hid these: each would cost another round of validate.
        #expect(byKey["sources[0].term"]?.first?.line == 7)
        #expect(byKey["sources[0].term"]?.first?.message.contains("did you mean 'terms'") == true)
        #expect(byKey["sources[0].media"]?.first?.message.contains("did you mean 'podcast'") == true)
        #expect(byKey["sources[0].media"]?.first?.line == 8)
        // The next source's problem stays with that source and its own line.
        #expect(byKey["sources[1].pageSize"]?.first?.line == 11)
        #expect(byKey["sources[1].pageSize"]?.first?.message.contains("itemsPerPage") == true)
        // No kind at all: keys no kind takes are still named.
        #expect(byKey["sources[2].kind"]?.first?.message == "is required")
        #expect(byKey["sources[2].limitt"]?.first?.line == 13)
        #expect(found.allSatisfy { !$0.keyPath.hasPrefix("sources[1].") || $0.keyPath == "sources[1].pageSize" })
    }

    @Test func unknownWordsInAFixedSetGetTheNearestAsAHint() {
        let found = issues("""
            name: x
            store: s.sqlite
            output: out
            sources: [{name: m, kind: marketplace}]
            exports:
              - kind: feeed
              - {kind: feed, feed: podcast-new, rss: a.xml}
            """)
        let messages = found.map(\.message)
        #expect(messages.contains { $0.hasPrefix("unknown export kind 'feeed' (did you mean 'feed'?)") })
        #expect(messages.contains { $0.hasPrefix("unknown feed 'podcast-new' (did you mean 'podcasts-new'?)") })
    }

    @Test func yamlSyntaxErrorsCarryTheirPosition() {
        let found = issues("name: x\nsources: [a, b\nstore: y\n")
        #expect(found.count == 1)
        #expect(found.first?.line != nil)
    }

    /// A PostgreSQL store's URL is checked where the job is checked (validate,
    /// CI), not at the first connection; what only the running machine has (the
    /// password variable, the CA file) is left to the run.
    @Test func aPostgresStoreURLIsCheckedAtLoad() {
        func storeIssues(_ url: String) -> [JobFileIssue] {
            issues("name: x\nstore: \(url)\noutput: out\nsources:\n  - { name: m, kind: marketplace }\n")
                .filter { $0.keyPath == "store" }
        }
        let literal = storeIssues("postgres://sync:hunter2@db.example.net/storesync")
        #expect(literal.count == 1 && literal[0].line == 2)
        #expect(literal.first?.message.contains("secrets must not be written in job files") == true, "\(literal)")
        #expect(!literal.description.contains("hunter2"), "the password is never echoed: \(literal)")
        #expect(storeIssues("postgres://sync@db.example.net/storesync?sslmode=verify-fool").count == 1)
        #expect(storeIssues("postgres://sync@db.example.net:99999/storesync").count == 1)
        #expect(storeIssues("postgres://sync:${STORESYNC_TEST_UNSET_VARIABLE}@db.example.net/storesync"
                            + "?sslrootcert=/nonexistent/ca.pem").isEmpty)
    }

    @Test func missingRequiredKeysAreListed() {
        let keys = Set(issues("name: x\n").map(\.keyPath))
        #expect(keys.isSuperset(of: ["store", "output", "sources"]))
    }

    @Test func simulatorFaultsAreValidatedAtLoad() throws {
        let bad = issues("""
            name: x
            store: s.sqlite
            output: out
            simulator: { faults: ["no-such-fault:1"] }
            sources: [{name: m, kind: marketplace}]
            """)
        #expect(bad.first?.keyPath == "simulator.faults")
        #expect(bad.first?.line == 4)
        let job = try JobLoader.parse(yaml: """
            name: x
            store: s.sqlite
            output: out
            simulator: { faults: ["http-503:0.2"] }
            sources: [{name: m, kind: marketplace}]
            """, file: "job.yml", baseDirectory: "/jobs")
        #expect(job.simulator?.faults == ["http-503:0.2"])
    }

    @Test func exportTemplatesAcceptOnlyKnownVariables() {
        let found = issues("""
            name: x
            store: s.sqlite
            output: out
            sources: [{name: m, kind: marketplace}]
            exports:
              - { kind: feed, feed: podcasts-new, rss: "feeds/{genre}-{user}.xml", selfURL: "https://e.com/x" }
              - { kind: feed, feed: changes, rss: "feeds/{genre}.xml", selfURL: "https://e.com/x" }
              - { kind: feed, feed: nope, rss: "x.xml", selfURL: "https://e.com/x" }
            """)
        let keys = found.map(\.keyPath)
        #expect(keys.contains("exports[0].rss"))
        #expect(keys.contains("exports[1].rss"), "a changes feed has no genre")
        #expect(keys.contains("exports[2].feed"))
    }

    /// A changeset export records one sqlite export's changes: the job's only
    /// one by default, else the one it names, never a dated file.
    @Test func aChangesetExportFindsItsDatabaseOrSaysWhy() throws {
        let head = "name: x\nstore: s.sqlite\noutput: out\nsources: [{name: m, kind: marketplace}]\nexports:\n"
        let job = try JobLoader.parse(yaml: head + "  - { kind: sqlite, path: shop.sqlite }\n  - { kind: changeset, keep: 7 }\n",
                                      file: "job.yml", baseDirectory: "/jobs", rules: .cli)
        #expect(job.exports.last == .changeset(ChangesetExportSpec(directory: "changesets", database: "shop.sqlite", keep: 7)))
        func keys(_ exports: String) -> [String] { issues(head + exports).map(\.keyPath) }
        #expect(keys("  - { kind: changeset }\n") == ["exports[0].database"], "no sqlite export to follow")
        #expect(keys("  - { kind: sqlite, path: a.sqlite }\n  - { kind: sqlite, path: b.sqlite }\n  - { kind: changeset }\n")
                    == ["exports[2].database"], "two databases: which one?")
        #expect(keys("  - { kind: sqlite, path: a.sqlite }\n  - { kind: changeset, database: c.sqlite }\n") == ["exports[1].database"])
        #expect(keys("  - { kind: sqlite, path: \"{date}.sqlite\" }\n  - { kind: changeset }\n") == ["exports[1].database"],
                "a dated database has no earlier version at its path")
        #expect(keys("  - { kind: sqlite, path: a.sqlite }\n  - { kind: changeset, directory: . }\n") == ["exports[1].directory"])
        #expect(keys("  - { kind: sqlite, path: a.sqlite }\n  - { kind: changeset }\n  - { kind: changeset, directory: more }\n")
                    == ["exports[2]"], "one changeset export per database")
    }
}

/// Nested aliases are measured before any tree is built: a "billion laughs"
/// job file is refused at once, an ordinary one with many aliases is read.
@Suite struct YAMLAliasBombTests {
    static let header = """
        name: bomb
        store: s.sqlite
        output: out
        sources:
          - {name: f, kind: records-file, path: f.csv, keyField: id}

        """

    /// `depth` levels of `width` aliases each to the level below: width^depth values.
    static func laughs(depth: Int, width: Int, asKeys: Bool = false, scalar: String = "lol") -> String {
        var text = header + "x0: &a0 \"\(scalar)\"\n"
        for level in 1...depth {
            let refs = (0..<width).map { _ in "*a\(level - 1)" }
            if asKeys {
                text += "x\(level): &a\(level) {" + refs.enumerated().map { "? \($1) : \($0)" }.joined(separator: ", ") + "}\n"
            } else {
                text += "x\(level): &a\(level) [" + refs.joined(separator: ", ") + "]\n"
            }
        }
        return text
    }

    func issues(_ yaml: String) -> [JobFileIssue] { JobLoaderTests().issues(yaml) }

    @Test(arguments: [(9, 9, false), (30, 2, false), (6, 10, false), (5, 40, false), (6, 9, true), (20, 3, true)])
    func nestedAliasesAreRefused(depth: Int, width: Int, asKeys: Bool) {
        let found = issues(Self.laughs(depth: depth, width: width, asKeys: asKeys))
        #expect(found.count == 1, "\(found)")
        #expect(found.first?.message.contains("billion laughs") == true, "\(found)")
        #expect(found.first?.line != nil)
    }

    /// Few aliases of one big scalar: the text they expand to is bounded too.
    @Test func aliasesOfAHugeScalarAreRefused() {
        let big = String(repeating: "x", count: 1 << 20)
        let yaml = Self.header + "big: &b \"\(big)\"\nrefs: [" + Array(repeating: "*b", count: 64).joined(separator: ", ") + "]\n"
        let found = issues(yaml)
        #expect(found.first?.message.contains("MB of text") == true, "\(found)")
    }

    /// A bomb in an override (`STORESYNC_…`, `--set`) is not expanded either.
    @Test func aBombInAnOverrideIsNotExpanded() {
        let flow = "{" + (1...9).map { level in "x\(level): &a\(level) [" + Array(repeating: level == 1 ? "lol" : "*a\(level - 1)", count: 9).joined(separator: ", ") + "]" }.joined(separator: ", ") + "}"
        do {
            _ = try JobLoader.parse(yaml: Self.header, file: "job.yml", baseDirectory: "/jobs", rules: .cli,
                                    inputs: JobInputs(environment: [:], sets: ["notes=\(flow)"]))
        } catch {
            // Refused or reported, never expanded: reaching here in bounded time is the point.
            #expect(!error.issues.isEmpty || error.code != .invalidJob)
        }
    }

    /// Tens of ordinary aliases (shared settings, merge keys) are read as before.
    @Test func anOrdinaryJobWithManyAliasesIsValid() throws {
        var yaml = """
            name: aliased
            store: s.sqlite
            output: out
            http: &http {timeoutSeconds: 20, maxAttempts: 3}
            sources:

            """
        for n in 0..<40 {
            let removal = n == 0 ? "&removal {afterMisses: 3, maxRatio: 0.2}" : "*removal"
            yaml += "  - {name: f\(n), kind: records-file, path: f\(n).csv, keyField: id, removal: \(removal)}\n"
        }
        let job = try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs", rules: .cli)
        #expect(job.sources.count == 40)
    }
}

/// A misspelt `kind:` (issue 29 finding 9): its error names that source and
/// line, and no later source's error moves to its place.
@Suite struct MisspeltKindTests {
    func issues(_ yaml: String) -> [JobFileIssue] { JobLoaderTests().issues(yaml) }

    @Test func aMisspeltKindIsOneErrorAtItsOwnLine() {
        let found = issues("""
            name: k
            store: s.sqlite
            output: out
            sources:
              - name: podcasts
                kind: itunes-serch
                terms: [news]
              - name: episodes
                kind: podcast-feed
                from: podcasts
            """)
        #expect(found.map(\.keyPath) == ["sources[0].kind"], "\(found)")
        #expect(found.first?.line == 6)
    }

    @Test func aLaterSourcesErrorKeepsItsOwnPlace() {
        let found = issues("""
            name: k
            store: s.sqlite
            output: out
            sources:
              - name: podcasts
                kind: itunes-search
                terms: [news]
              - name: market
                kind: marketplce
              - name: episodes
                kind: podcast-feed
                from: podcats
            """)
        #expect(found.map(\.keyPath) == ["sources[1].kind", "sources[2]"], "\(found)")
        #expect(found.last?.line == 10, "\(found)")
        #expect(found.last?.message.contains("'podcats' must name an earlier source") == true, "\(found)")
    }
}
