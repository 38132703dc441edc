import CLibXML2
import CSV
import Catalog
import Connectors
import Foundation
import Logging
import Snapshot
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// A fault-matrix test drives each fault through a real crawl: for every
/// fault the simulator documents, a job crawls the marketplace and a podcast
/// Search from a simulator serving that fault, over loopback HTTP. The run
/// must end (every fault is bounded), and either be ok with records equal to
/// the simulator's truth, or be partial/failed with an error naming the URL,
/// with no removal on the strength of an incomplete scope; a clean re-run of
/// the same night then converges to the truth.
///
/// The job is built in code and the simulator started by hand (the job
/// model's simulator settings have no faults yet). Backoff sleeps go through
/// a ManualClock, so retries cost no waiting; only the transport's own
/// deadline (the `timeout` fault) and `latency` take real time.
@Suite struct FaultMatrixTests {
    static let seed: UInt64 = 23
    static let term = "news"
    /// Night 1 is crawled clean; the faults hit night 2.
    static let night = 2

    static func config(_ faults: FaultPlan) -> SimulatorConfig {
        SimulatorConfig(seed: seed, podcastCount: 300, productCount: 150,
                        churn: Churn(changed: 0.1, added: 0.05, removed: 0.05), pageKeyEra: .camel,
                        songCount: 0, movieCount: 0, appCount: 0, audiobookCount: 0, ebookCount: 0, faults: faults)
    }

    /// The spec each fault is exercised with: strong enough to fire within
    /// the ~15 requests of a crawl, bursts long enough to beat the retries.
    static func spec(_ name: String) -> String {
        switch name {
        case "burst-500", "burst-502", "burst-503": "\(name):5"
        case "drift": "drift:3"
        case "latency": "latency:20"
        case "huge-field", "invalid-utf8", "xml-invalid-chars", "formula-strings": "\(name):0.15"
        // Half the requests: every fault fires within the ~8 requests of a crawl.
        default: "\(name):0.5"
        }
    }

    /// Faults the crawler does not handle as the matrix requires; each runs
    /// inside `withKnownIssue` with the reason. Empty today: every fault ends
    /// either ok at the truth, or partial/failed naming the URL with a clean
    /// re-run converging. (Pages that fail to decode — truncate,
    /// malformed-json, html-200, empty-page — are not retried, so those runs
    /// end partial although one retry would have got the clean answer; that
    /// is allowed, not wrong.)
    static let knownIssues: [String: String] = [:]

    /// Every fault but those of podcast feeds, which this job does not crawl:
    /// FeedResilienceRunTests runs them through a feed source night after night.
    static var faultNames: [String] {
        FaultPlan.documentation.map(\.name).filter { !["feed-variants", "dead-feed-host"].contains($0) }
    }

    /// The client deadline must be shorter than the `timeout` fault's hold for
    /// that fault to bite; every other case gets a roomy one, so a slow
    /// machine (megabyte bodies of `huge-field` on busy cores) is not mistaken for a fault.
    func job(_ directory: URL, baseURL: URL, timeoutSeconds: Double = 10) -> JobSpec {
        let removal = RemovalPolicy(afterMisses: 1, maxRatio: 1)
        return JobSpec(
            name: "fault-matrix", file: "fault-matrix (in code)",
            storePath: directory.appendingPathComponent("store/snapshot.sqlite").path,
            outputDirectory: directory.appendingPathComponent("out").path,
            http: HTTPSettings(timeoutSeconds: timeoutSeconds, maxAttempts: 4, requestsPerMinute: [:], defaultRequestsPerMinute: nil,
                               backoffBaseSeconds: 0.5, backoffMaxSeconds: 4),
            sources: [
                SourceSpec(name: "market", baseURL: baseURL, removal: removal,
                           settings: (MarketplaceSettings(itemsPerPage: 25))),
                SourceSpec(name: "podcasts", baseURL: baseURL, removal: removal,
                           settings: (ITunesSearchSettings(terms: [Self.term], pageSize: 20))),
            ],
            exports: [
                .csvTables(directory: "csv", options: CSVExportOptions()),
                .feed(FeedExportSpec(kind: .podcastsUpdated, rssPath: "feeds/podcasts.xml", atomPath: nil,
                                     title: "Podcasts", selfURL: "https://example.com/podcasts.xml",
                                     link: "https://example.com/", description: "Updated podcasts")),
            ])
    }

    static var quietLogger: Logger {
        var logger = Logger(label: "fault-matrix")
        logger.logLevel = .critical
        return logger
    }

    /// One run against a simulator serving `config` on `night`.
    func run(_ directory: URL, config: SimulatorConfig, night: Int) async throws
        -> (report: RunReport, faults: [String: Int], base: URL) {
        let server = try await SimulatorServer.start(world: World(config: config), night: night,
                                                     logger: Self.quietLogger)
        let report: RunReport
        do {
            let deadline = config.faults.description.contains("timeout") ? FaultPlan.timeoutHoldSeconds / 2 : 10
            report = try await Runner(job: job(directory, baseURL: server.baseURL, timeoutSeconds: deadline), logger: Self.quietLogger,
                                      clock: ManualClock()).run(RunOptions())  // the server serves `night`; the job itself has no simulator, so no --night
        } catch {
            await server.shutdown()
            throw error
        }
        let faults = server.injectedFaults
        let base = server.baseURL
        await server.shutdown()
        return (report, faults, base)
    }

    /// The stored records of both sources equal the truth of `world` on `night`:
    /// the same keys, and the served values of fields no normalisation touches.
    func expectTruth(_ directory: URL, world: World, night: Int, _ label: String) throws {
        let store = try SQLSnapshotStore(path: job(directory, baseURL: URL(fileURLWithPath: "/")).storePath)
        let market = try store.records(source: "market")
        #expect(Set(market.map(\.key)) == world.aliveKeys(entity: "listing", night: night), "\(label): listings")
        let podcasts = try store.records(source: "podcasts")
        #expect(Set(podcasts.map(\.key)) == Set(world.searchResultKeys(term: Self.term, night: night)),
                "\(label): podcasts")
        for (records, entity, fields) in [(market, "listing", ["name", "price", "stock", "description"]),
                                          (podcasts, "podcast", ["trackName", "trackCount", "releaseDate",
                                                                 "trackCensoredName"])] {
            for record in records {
                guard let text = world.rowJSON(entity: entity, key: record.key, night: night),
                      let served = try JSONParser.parse(text).objectValue else { continue }
                let stored = try record.fields()
                for field in fields where !Self.same(stored[field], served[field]) {
                    Issue.record("\(label): \(entity) \(record.key).\(field) differs from the truth")
                }
            }
        }
    }

    /// The exports survive what the crawl stored: the RSS feed is XML a strict
    /// parser accepts, and no CSV text cell could run as a spreadsheet formula.
    func expectSafeExports(_ directory: URL, _ label: String) throws {
        let out = directory.appendingPathComponent("out")
        let feed = try Data(contentsOf: out.appendingPathComponent("feeds/podcasts.xml"))
        let document = feed.withUnsafeBytes { raw in
            xmlReadMemory(raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(raw.count), "podcasts.xml", "UTF-8",
                          Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
        }
        #expect(document != nil, "\(label): the exported RSS is not well-formed XML")
        xmlFreeDoc(document)
        for entity in ["listings", "podcasts"] {
            let text = try String(contentsOf: out.appendingPathComponent("csv/\(entity).csv"), encoding: .utf8)
            let reader = try CSVReader(string: text, hasHeaderRow: true)
            let header = reader.headerRow ?? []
            while let row = reader.next() {
                for (column, cell) in row.enumerated() {
                    guard let first = cell.unicodeScalars.first, "=+@".unicodeScalars.contains(first)
                        || (first == "-" && Double(cell) == nil) else { continue }
                    Issue.record("\(label): \(entity).csv column \(column < header.count ? header[column] : "?") holds a formula: \(cell.prefix(40))")
                }
            }
        }
    }

    /// True when some stored record shows the content fault, so the crawl and
    /// the exports really met it.
    func contentFaultIsStored(_ fault: String, _ directory: URL) throws -> Bool {
        let store = try SQLSnapshotStore(path: job(directory, baseURL: URL(fileURLWithPath: "/")).storePath)
        var texts: [String] = []
        for record in try store.records() {
            for value in try record.fields().values { if let text = value.stringValue { texts.append(text) } }
        }
        switch fault {
        case "huge-field": return texts.contains { $0.utf8.count > 1_000_000 }
        case "invalid-utf8": return texts.contains { $0.contains("\u{FFFD}") }
        case "xml-invalid-chars":
            return texts.contains { $0.unicodeScalars.contains { [0x1, 0x8, 0x1B, 0xFFFE, 0xFFFF].contains($0.value) } }
        case "formula-strings": return texts.contains { ["=", "+", "-", "@"].contains($0.first.map(String.init) ?? "") }
        default: return false
        }
    }

    /// Equal as JSON values; numbers by value (the canonical form writes `20000.0` as `20000`).
    static func same(_ a: JSONValue?, _ b: JSONValue?) -> Bool {
        switch (a, b) {
        case (.int, .double), (.double, .int), (.double, .double): a?.doubleValue == b?.doubleValue
        default: a == b
        }
    }

    @Test(arguments: faultNames)
    func faultThroughARealCrawl(fault: String) async throws {
        let directory = TestPaths.temporaryDirectory("fault-\(fault)")
        defer { try? FileManager.default.removeItem(at: directory) }
        let plan = try FaultPlan.parse([Self.spec(fault)])
        let clean = Self.config(.none)
        let faulty = Self.config(plan)

        // Night 1, clean: the store holds yesterday's world.
        let first = try await run(directory, config: clean, night: 1)
        #expect(first.report.outcome == .ok, "\(fault): baseline \(first.report.errors)")

        let check = {
            let (report, injected, base) = try await run(directory, config: faulty, night: Self.night)
            if fault == "drift" || fault == "duplicate" {
                // Rows met twice within a scope are stored once and reported, in the summary and the store.
                let drift = report.sources.reduce(0) { $0 + $1.drift }
                #expect(drift > 0, "\(fault): no drift reported")
                #expect(report.summaryText.contains("drift:"))
                let stored = try SQLSnapshotStore(path: job(directory, baseURL: base).storePath).sourceCounts(runID: report.runID)
                #expect(stored.reduce(0) { $0 + $1.drift } == drift)
            }
            let isContent = FaultPlan.documentation.first { $0.name == fault }?.description.hasPrefix("[content]") == true
            if isContent {
                #expect(try contentFaultIsStored(fault, directory), "\(fault): no stored record carries it")
            } else {
                #expect((injected[fault] ?? 0) > 0, "\(fault) never fired: \(injected)")
            }
            switch report.outcome {
            case .ok:
                try expectTruth(directory, world: World(config: faulty), night: Self.night, "\(fault) run")
                try expectSafeExports(directory, "\(fault) run")
                // Invariant 1 under faults: the same night again, same faults, writes nothing.
                let again = try await run(directory, config: faulty, night: Self.night)
                // The faults fire by chance per request (half of them): a page can fail every
                // attempt of the repeat where the first run's did not (seen under load with
                // `timeout`). Then the repeat is partial and says why; either way it writes nothing.
                #expect(again.report.outcome == .ok || (again.report.outcome == .partial && !again.report.errors.isEmpty),
                        "\(fault): repeated run \(again.report.outcome) \(again.report.errors)")
                #expect(again.report.recordRowsWritten == 0, "\(fault): a repeated night wrote \(again.report.recordRowsWritten) rows")
            case .partial, .failed, .running:
                let errors = report.sources.flatMap(\.errors)
                #expect(!errors.isEmpty || !report.warnings.isEmpty, "\(fault): \(report.outcome) without a reason")
                for error in errors {
                    #expect(error.message.contains(base.absoluteString), "\(fault): the error names no URL: \(error)")
                }
                for source in report.sources where source.scopesComplete < source.scopesTotal {
                    #expect(source.counts.removed == 0, "\(fault): \(source.name) removed records from an incomplete scope")
                }
                // A clean re-run of the same night converges to the truth.
                let again = try await run(directory, config: clean, night: Self.night)
                #expect(again.report.outcome == .ok, "\(fault): clean re-run \(again.report.errors)")
                try expectTruth(directory, world: World(config: clean), night: Self.night, "\(fault) re-run")
            }
        }
        if let reason = Self.knownIssues[fault] {
            await withKnownIssue(Comment(rawValue: reason)) { try await check() }
        } else {
            try await check()
        }
    }
}
