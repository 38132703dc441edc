import Catalog
import Connectors
import Crawl
import Export
import Foundation
import Logging
import Snapshot
import StoreSim

/// How a run ended, and the exit code the CLI gives it.
public enum RunOutcome: String, Sendable {
    /// Every scope crawled completely and every export written.
    case ok
    /// Something was left out (a scope failed or was capped, a removal was
    /// refused by the guard): what was crawled is stored, nothing was removed
    /// on the strength of an incomplete scope.
    case partial
    /// The run could not do its job (every scope failed, or an export failed).
    case failed
}

/// What a run did, per source.
public struct SourceReport: Sendable {
    public var name: String
    public var kind: SourceKind
    public var counts: SourceCounts
    public var scopesTotal: Int
    public var scopesComplete: Int
    public var errors: [String]
}

/// The summary of one run.
public struct RunReport: Sendable {
    public var runID: Int64
    public var job: String
    public var night: Int?
    public var resumed: Bool
    public var outcome: RunOutcome
    public var sources: [SourceReport]
    public var fetch: FetchStats
    public var exports: [ExportedFile]
    public var warnings: [String]
    public var errors: [String]
    public var seconds: Double

    /// Rows of the records table written by this run: always added + changed + removed.
    public var recordRowsWritten: Int { sources.reduce(0) { $0 + $1.counts.recordRowsWritten } }
}

/// Options of one run.
public struct RunOptions: Sendable {
    /// Crawl this simulated night instead of the next one.
    public var night: Int?
    /// The wall-clock time the run is stamped with.
    public var now: @Sendable () -> Date

    public init(night: Int? = nil, now: @escaping @Sendable () -> Date = { Date() }) {
        self.night = night
        self.now = now
    }
}

/// Runs a job: sources → crawl → diff → store → export, one source and scope
/// at a time in the job's order, so results never depend on timing.
public struct Runner: Sendable {
    public let job: JobSpec
    let logger: Logger
    /// Overrides the network (tests); nil = AsyncHTTPClient.
    let transport: (any HTTPTransport)?
    let clock: any CrawlClock

    public init(job: JobSpec, logger: Logger = Logger(label: "storesync"), transport: (any HTTPTransport)? = nil,
                clock: any CrawlClock = SystemCrawlClock()) {
        self.job = job
        self.logger = logger
        self.transport = transport
        self.clock = clock
    }

    public func run(_ options: RunOptions = RunOptions()) async throws(StoreSyncError) -> RunReport {
        let started = clock.now()
        let lock = try RunLock(storePath: job.storePath)
        defer { withExtendedLifetime(lock) {} }
        let store = try SnapshotStore(path: job.storePath)
        let run = try store.beginRun(job: job.name, at: options.now(), simulated: job.simulator != nil, night: options.night)
        if run.resumed {
            logger.notice("resuming run \(run.id) that did not finish; committed pages are not fetched again")
        }

        var simulator: SimulatorServer?
        if let spec = job.simulator {
            // The loader validated the fault specs already.
            let faults = (try? FaultPlan.parse(spec.faults)) ?? .none
            let world = World(config: SimulatorConfig(
                seed: spec.seed, podcastCount: spec.podcasts, productCount: spec.products,
                churn: Churn(changed: spec.changed, added: spec.added, removed: spec.removed), faults: faults))
            if !faults.isEmpty { logger.notice("simulator faults on: \(faults)") }
            // Hummingbird reports its own shutdown as an error; only real trouble is worth showing.
            var simulatorLogger = logger
            simulatorLogger.logLevel = logger.logLevel <= .debug ? .debug : .critical
            do {
                simulator = try await SimulatorServer.start(world: world, night: run.night ?? 1, logger: simulatorLogger)
            } catch {
                try? store.finishRun(run.id, status: .failed, message: "simulator failed to start: \(error)", at: options.now())
                throw .fetchFailed(url: "http://127.0.0.1", reason: "the embedded simulator could not start: \(error)")
            }
            logger.info("simulator serving night \(run.night ?? 1) at \(simulator!.baseURL.absoluteString)")
        }
        let ownTransport = transport == nil ? AsyncHTTPTransport() : nil
        let fetcher = Fetcher(transport: transport ?? ownTransport!, settings: job.http, clock: clock, logger: logger)

        var sourceReports: [SourceReport] = []
        var warnings: [String] = []
        var errors: [String] = []
        for source in job.sources {
            let baseURL = source.baseURL ?? simulator?.baseURL ?? source.defaultBaseURL
            let report = await crawl(source: source, baseURL: baseURL, run: run, store: store, fetcher: fetcher,
                                     warnings: &warnings)
            errors += report.errors
            sourceReports.append(report)
        }

        await ownTransport?.shutdown()
        await simulator?.shutdown()

        var outcome: RunOutcome = .ok
        let totalScopes = sourceReports.reduce(0) { $0 + $1.scopesTotal }
        let completeScopes = sourceReports.reduce(0) { $0 + $1.scopesComplete }
        if completeScopes < totalScopes || !warnings.isEmpty { outcome = .partial }
        if totalScopes > 0, completeScopes == 0, !errors.isEmpty { outcome = .failed }

        // The crawl's verdict is recorded before exporting, so the exported
        // runs table shows this run as it ended; a failed export downgrades it.
        try store.finishRun(run.id, status: RunStatus(rawValue: outcome.rawValue) ?? .failed,
                            message: (errors + warnings).first, at: options.now())
        let context = ExportContext(store: store, runID: run.id, jobName: job.name, runDate: run.startedAt,
                                    outputDirectory: job.outputDirectory)
        var exported: [ExportedFile] = []
        do {
            exported = try SnapshotExporter.export(job.exports.filter { !$0.isReport }, context: context, logger: logger)
        } catch {
            errors.append(error.description)
            outcome = .failed
            try store.finishRun(run.id, status: .failed, message: error.description, at: options.now())
        }
        // Reports describe the run as it ended, exports included.
        let stats = fetcher.stats
        var totals = RunTotals()
        totals.requests = stats.requests
        totals.retries = stats.retries
        totals.throttled = stats.throttled
        totals.notModified = stats.notModified
        totals.failures = stats.failures
        totals.seconds = clock.now() - started
        totals.warnings = warnings
        totals.errors = errors
        try store.recordTotals(run.id, totals)
        do {
            exported += try SnapshotExporter.export(job.exports.filter(\.isReport), context: context, logger: logger)
        } catch {
            errors.append(error.description)
            outcome = .failed
            try store.finishRun(run.id, status: .failed, message: error.description, at: options.now())
        }

        let counts = try store.sourceCounts(runID: run.id)
        for index in sourceReports.indices {
            sourceReports[index].counts = counts.first { $0.source == sourceReports[index].name } ?? SourceCounts(source: sourceReports[index].name)
        }
        return RunReport(
            runID: run.id, job: job.name, night: run.night, resumed: run.resumed, outcome: outcome,
            sources: sourceReports, fetch: fetcher.stats, exports: exported, warnings: warnings, errors: errors,
            seconds: clock.now() - started)
    }

    /// Crawls every scope of a source, storing each page as it arrives.
    func crawl(source: SourceSpec, baseURL: URL?, run: RunInfo, store: SnapshotStore, fetcher: Fetcher,
               warnings: inout [String]) async -> SourceReport {
        let scopes = Connectors.scopes(for: source, baseURL: baseURL)
        var report = SourceReport(name: source.name, kind: source.kind, counts: SourceCounts(source: source.name),
                                  scopesTotal: scopes.count, scopesComplete: 0, errors: [])
        for scope in scopes {
            var startPage = 0
            do {
                if let checkpoint = try store.checkpoint(runID: run.id, source: source.name, scope: scope.id) {
                    if checkpoint.state == "complete" {
                        report.scopesComplete += 1
                        continue
                    }
                    startPage = checkpoint.nextPage
                    logger.info("\(source.name) \(scope.id): resuming at page \(startPage)")
                }
            } catch {
                report.errors.append(error.description)
                continue
            }
            var pageStarted = clock.now()
            var requestsBefore = fetcher.stats.requests
            let outcome = await PageWalker.walk(
                pagination: scope.pagination,
                startPage: startPage,
                fetch: { index throws(StoreSyncError) in
                    pageStarted = clock.now()
                    requestsBefore = fetcher.stats.requests
                    switch scope.origin {
                    case .http(let url): return try await fetcher.get(url(index))
                    case .local(let read): return try read(index)
                    }
                },
                decode: scope.decode,
                onPage: { index, _, page throws(StoreSyncError) in
                    for skip in page.skipped { logger.warning("skipped a row: \(skip)") }
                    let input = PageInput(
                        runID: run.id, source: source.name, scope: scope.id, page: index, records: page.items,
                        requests: fetcher.stats.requests - requestsBefore, skippedRows: page.skipped.count,
                        seconds: clock.now() - pageStarted)
                    let result = try await store.apply(input)
                    logger.debug("\(source.name) \(scope.id) page \(index): +\(result.added) ~\(result.changed) =\(result.unchanged)")
                }
            )
            let state: String
            var errorText: String?
            switch outcome {
            case .complete: state = "complete"
            case .capped:
                state = "capped"
                warnings.append("\(source.name) \(scope.id): stopped at the configured cap; records past it were not seen, so none were removed")
            case .failed(_, let error):
                state = "failed"
                errorText = error.description
                report.errors.append(error.description)
                logger.error("\(source.name) \(scope.id): \(error.description)")
                try? store.addSourceTime(runID: run.id, source: source.name,
                                         requests: fetcher.stats.requests - requestsBefore, seconds: clock.now() - pageStarted)
            }
            do {
                try store.finishScope(runID: run.id, source: source.name, scope: scope.id, state: state, error: errorText)
                if outcome.isComplete { report.scopesComplete += 1 }
            } catch {
                report.errors.append(error.description)
            }
        }
        // Removals only once the whole source is crawled: a record that moved
        // between scopes (a renamed podcast now found by another term) is seen.
        for scope in scopes {
            do {
                let removal = try store.sweepScope(runID: run.id, source: source.name, scope: scope.id, removal: source.removal)
                if let warning = removal.guardWarning {
                    warnings.append(warning)
                    logger.warning("\(warning)")
                }
            } catch {
                report.errors.append(error.description)
            }
        }
        return report
    }
}
