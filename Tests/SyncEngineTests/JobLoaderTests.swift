import Catalog
import Foundation
import SyncEngine
import Testing
import TestSupport

@Suite struct JobLoaderTests {
    func issues(_ yaml: String) -> [JobFileIssue] {
        do {
            _ = try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs")
            return []
        } catch {
            if case .invalidJob(_, let issues) = error { return issues }
            return []
        }
    }

    @Test func theShippedDemoJobIsValid() throws {
        let job = try JobLoader.load(path: TestPaths.repoRoot.appendingPathComponent("jobs/demo.yml").path)
        #expect(job.name == "demo")
        #expect(job.simulator != nil)
        #expect(job.storePath.hasSuffix("/output/demo/snapshot.sqlite"))
        #expect(!job.storePath.contains(".."))
        #expect(job.sources.map(\.kind) == [.itunesSearch, .marketplace])
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
        #expect(job.sources.first?.kind.defaultBaseURL?.host == "openmarket.yagom-academy.kr")
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

    @Test func yamlSyntaxErrorsCarryTheirPosition() {
        let found = issues("name: x\nsources: [a, b\nstore: y\n")
        #expect(found.count == 1)
        #expect(found.first?.line != nil)
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
}
