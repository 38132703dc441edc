import Catalog
import Connectors
import Crawl
import Export
import Foundation
import Logging
import Snapshot

/// What a run did, per source.
public struct SourceReport: Sendable {
    public var name: String
    /// The source's kind, as the job file names it.
    public var kind: String
    public var counts: SourceCounts
    public var scopesTotal: Int
    public var scopesComplete: Int
    /// What failed in this source (``RunProblem/source`` is its name).
    public var errors: [RunProblem]
    /// Rows met twice within one scope: the listing shifted while it was paged.
    public var drift: Int = 0
    /// Pages the server answered 304, or with the body stored last time: not decoded.
    public var unchangedPages: Int = 0
    /// Scopes whose resource answered 404/410 where that is normal (a feed
    /// taken down): what they stored before is kept.
    public var gone: [String] = []
    /// Scopes whose document was not well-formed and was read in recovery
    /// mode, each with its first error: what was recovered is stored, and
    /// nothing is removed on their account.
    public var recovered: [String] = []
    /// True when some of the source's scopes are fetched over HTTP (not read from a local file).
    public var network: Bool = false
}

/// The summary of one run.
public struct RunReport: Sendable {
    public var runID: Int64
    public var job: String
    public var night: Int?
    public var resumed: Bool
    public var outcome: RunStatus
    public var sources: [SourceReport]
    public var fetch: RequestCounts
    public var exports: [ExportedFile]
    /// What needs a look (exit 2): guard refusals, caps, the deadline, feed lint.
    public var warnings: [RunProblem]
    /// What failed; each with a stable code and, where known, its source, scope and URL.
    public var errors: [RunProblem]
    /// What the run noticed that needs no action: fields a source sent for
    /// the first time, or whose type changed (kept in the raw payload).
    public var notices: [String] = []
    public var seconds: Double
    /// A dry run worked on a throwaway copy of the store and wrote no file.
    public var dryRun: Bool = false
    /// What the job's `retention:` pruned after the run; nil when it pruned nothing.
    public var pruned: PruneResult?
    /// What the artwork mirror did; nil when the job has none (or did not export).
    public var artwork: ArtworkMirrorFigures?
    /// What the enclosure checks did; nil when no feed checks its enclosures (or no export ran).
    public var enclosures: EnclosureCheckFigures?
    /// What telling subscribers of tonight's changed feeds came to; nil when no feed pushes (or no export ran).
    public var push: FeedPushFigures?
    /// Sources and scopes the run's deadline left unfinished (the next run
    /// resumes this one there); empty when no deadline was hit.
    public var deadlineLeft: [String] = []
    /// What became of the `notify:` webhook; nil when none was called.
    public var notify: NotifyOutcome?
    /// Why the run stopped early (``RunOptions/stop``, e.g. "SIGTERM"); nil when
    /// it ran to its end. An interrupted run is left unfinished (outcome
    /// `running`): no removal pass, no export; the next run resumes it.
    public var interrupted: String?

    /// Rows of the records table written by this run: always added + changed + removed.
    public var recordRowsWritten: Int { sources.reduce(0) { $0 + $1.counts.recordRowsWritten } }

    /// The night's outcome as every surface tells it: the exit code, the
    /// summary, report.json, the metrics, the webhook and `status` alike.
    public var nightOutcome: NightOutcome {
        if let interrupted { return .interrupted(signal: interrupted) }
        if !deadlineLeft.isEmpty { return .deadline }
        return .ended(outcome)
    }
}

/// Options of one run.
public struct RunOptions: Sendable {
    /// Crawl this simulated night instead of the next one.
    public var night: Int?
    /// Crawl and diff against a copy of the store; write no file, change nothing.
    public var dryRun: Bool
    /// A dry run lists the changes a run would write, as `storesync changes`
    /// prints them (text or JSON), to this open descriptor, before its store
    /// copy is discarded; nil lists none.
    public var dryRunChanges: (format: MachineOutput.ChangesFormat, fileDescriptor: Int32)?
    /// Told about every stored page and finished scope.
    public var progress: (@Sendable (RunProgress) -> Void)?
    /// Start over on purpose: accept a missing or empty store where one with
    /// history was expected (refused otherwise, Invariant 10). A store that
    /// holds history is refused with it, so the flag cannot stay in a crontab.
    public var newStore = false
    /// Hand the store of the job named here to this job (`--take-over-from`):
    /// a renamed job, or a store moved between jobs on purpose. Refused unless
    /// the store's runs are that job's, so the flag cannot stay in a crontab.
    public var takeOverFrom: String?
    /// Minutes after which the crawl stops at a page boundary (`--deadline`);
    /// overrides the job's `http.deadlineMinutes`. Nil: the job's, if any.
    public var deadlineMinutes: Double?

    /// The deadlines accepted, in minutes: up to a week.
    public static let deadlineRange = 0.01...10_080.0

    /// The nights `--night` accepts: from the first to a bound far beyond any
    /// real history (about 270 years of nightly runs). Larger values once sent the
    /// simulator into hours of date arithmetic without a word.
    public static let nightRange = 1...100_000
    /// Asked to stop early (the CLI sets it on SIGTERM/SIGINT): the run stops
    /// at the next page boundary, unfinished, and returns a report whose
    /// ``RunReport/interrupted`` says why; the next run resumes it.
    public var stop: RunStop?
    /// Take part in a fleet's night as one of its workers (`--worker`): no run
    /// lock, scopes claimed from the shared store, no exports.
    public var worker: WorkerOptions?

    public init(night: Int? = nil, dryRun: Bool = false, newStore: Bool = false,
                progress: (@Sendable (RunProgress) -> Void)? = nil, stop: RunStop? = nil) {
        self.night = night
        self.dryRun = dryRun
        self.newStore = newStore
        self.progress = progress
        self.stop = stop
    }
}

/// Runs a job: sources → crawl → diff → store → export. Sources run one after
/// another in the job's order (a source may start from an earlier one's
/// records); the scopes of a source are fetched concurrently but stored in a
/// fixed order, so results never depend on timing.
public struct Runner: Sendable {
    public let job: JobSpec
    public let environment: RunEnvironment
    var logger: Logger { environment.logger }
    var clock: any CrawlClock { environment.clock }

    public init(job: JobSpec, environment: RunEnvironment = .live) {
        self.job = job
        self.environment = environment
    }

    public func run(_ options: RunOptions = RunOptions()) async throws(StoreSyncError) -> RunReport {
        try checkNight(options)
        if options.dryRun { return try await dryRun(options) }
        if let worker = options.worker { return try await runWorker(options, worker: worker) }
        guard job.notify != nil else { return try await runLocked(options) }
        let result: Result<RunReport, StoreSyncError>
        do { result = .success(try await runLocked(options)) } catch { result = .failure(error) }
        // After the lock is released: a slow webhook never holds up the next run.
        return try await notifyAfter(result).get()
    }

    func runLocked(_ options: RunOptions) async throws(StoreSyncError) -> RunReport {
        let lock = try environment.store.lock(job.storePath)
        defer { withExtendedLifetime(lock) {} }
        let evidence = try checkStoreExists(options)
        let store = try environment.store.open(job.storePath)
        try checkStoreHistory(store, evidence: evidence, options)
        return try await run(options, store: store, exports: true)
    }

    /// Refuses `--night` outside ``RunOptions/nightRange`` or on a job whose
    /// services have no nights (no simulator): a usage error, before the lock
    /// is taken or anything is opened.
    func checkNight(_ options: RunOptions) throws(StoreSyncError) {
        if let minutes = options.deadlineMinutes, !RunOptions.deadlineRange.contains(minutes) {
            throw StoreSyncError(.invalidArguments, "--deadline \(minutes) is outside \(RunOptions.deadlineRange.lowerBound)…\(Int(RunOptions.deadlineRange.upperBound)) minutes; nothing was crawled",
                                 place: .file(path: job.file), remedy: "Give the minutes the crawl may take, e.g. --deadline 240")
        }
        guard let night = options.night else { return }
        guard environment.services.hasNights else {
            throw StoreSyncError(.invalidArguments, "--night \(night) was given, but job '\(job.name)' has no simulator: only simulated services have nights; nothing was crawled",
                                 place: .file(path: job.file),
                                 remedy: "Drop --night (a job without a `simulator:` section crawls the real services as they are now)")
        }
        guard RunOptions.nightRange.contains(night) else {
            throw StoreSyncError(.invalidArguments, "--night \(night) is outside \(RunOptions.nightRange.lowerBound)…\(RunOptions.nightRange.upperBound); nothing was crawled",
                                 place: .file(path: job.file),
                                 remedy: "Give a night from \(RunOptions.nightRange.lowerBound) to \(RunOptions.nightRange.upperBound), or drop --night to crawl the next one")
        }
    }

    /// Refuses a missing store where history was expected, before anything
    /// creates a new one there; returns that evidence (nil for a new job).
    func checkStoreExists(_ options: RunOptions) throws(StoreSyncError) -> String? {
        let evidence = environment.store.historyEvidence(job.storePath) ?? OutputMarker(job: job).evidence()
        if let evidence, !options.newStore, try !environment.store.exists(job.storePath) {
            throw .historyMissing(store: job.storePath, state: "missing", evidence: evidence, command: runCommand)
        }
        return evidence
    }

    /// Refuses an empty store (a zero-length file: SQLite opens it as a new,
    /// empty database) where history was expected, and `--new-store` on a store with history.
    func checkStoreHistory(_ store: any SnapshotStore, evidence: String?, _ options: RunOptions) throws(StoreSyncError) {
        let last = try store.runs(limit: 1).first
        if options.newStore, let last {
            throw .newStoreHasHistory(store: job.storePath, lastRun: last.id)
        }
        if let evidence, !options.newStore, last == nil {
            throw .historyMissing(store: job.storePath, state: "empty (no run in it)", evidence: evidence, command: runCommand)
        }
        try checkStoreOwner(last, options)
    }

    /// One store, one job: the store's last run names the job it belongs to.
    /// `--take-over-from OWNER` hands it over once, on purpose.
    func checkStoreOwner(_ last: RunRow?, _ options: RunOptions) throws(StoreSyncError) {
        let owner = last?.job
        if let from = options.takeOverFrom {
            guard let owner, owner == from, owner != job.name else {
                throw StoreSyncError(.invalidArguments,
                                     "--take-over-from \(from) was given, but the store " + (owner.map { "belongs to job '\($0)'" } ?? "holds no run yet")
                                         + "; nothing was crawled",
                                     place: .store(job.storePath),
                                     remedy: "Drop --take-over-from (it hands over a store once, from the job named, so it cannot stay in a crontab)")
            }
            return
        }
        if let owner, owner != job.name {
            throw .storeOfAnotherJob(store: job.storePath, owner: owner, job: job.name, jobFile: job.file)
        }
    }

    /// The command that runs this job, for messages.
    var runCommand: String { "storesync run \(job.file)" }

    /// A dry run: the same crawl and diff against a throwaway copy of the
    /// store, no exports. It takes no lock, so it never blocks cron.
    func dryRun(_ options: RunOptions) async throws(StoreSyncError) -> RunReport {
        let evidence = try checkStoreExists(options)
        let (store, discard) = try environment.store.openCopy(job.storePath)
        defer { discard() }
        try checkStoreHistory(store, evidence: evidence, options)
        var report = try await run(options, store: store, exports: false)
        report.dryRun = true
        if let listing = options.dryRunChanges {
            // Read from the copy while it exists: exactly what the run would have logged.
            _ = try MachineOutput.writeChanges(job: job, store: store, runID: report.runID, format: listing.format,
                                               to: listing.fileDescriptor, dryRun: true)
        }
        return report
    }

    /// What the crawl part of a run produced.
    struct CrawlPhase {
        var sources: [SourceReport] = []
        var warnings: [RunProblem] = []
        var errors: [RunProblem] = []
        var outcome: RunStatus = .ok
        var totals = RunTotals()
        /// What the run's deadline left unfinished (sources, scopes); empty when it was not hit.
        var deadlineLeft: [String] = []
    }

    /// One night in `store`, read straight through whoever shares it: the
    /// coordinator (``LocalNight``, ``FleetNight``) decides how the run
    /// begins, who does each step of the crawl, and how its verdict is
    /// recorded; `writeExports` is false for a dry run, and a fleet's worker
    /// writes none (`storesync export` does, once the fleet is done).
    func run(_ options: RunOptions, store: any SnapshotStore, exports writeExports: Bool,
             coordinator: any NightCoordinator = LocalNight()) async throws(StoreSyncError) -> RunReport {
        let started = clock.now()
        let writeExports = writeExports && coordinator.writesExports
        let run = try coordinator.begin(in: store, runner: self, options: options, resumeExports: writeExports)
        try store.prepareEntities(job.sourceMappings, fingerprint: job.mappingFingerprint)
        var phase: CrawlPhase
        if run.exportOnly {
            logger.notice("run \(run.id) was stopped while exporting; its crawl is complete, so only the exports are written again")
            phase = try storedCrawl(of: run, store: store)
        } else {
            // A resumed run's account is the night's: what the attempts before this one spent, read before it adds its own.
            let earlier = run.resumed && coordinator.speaksForRun ? try earlierAttempts(of: run, store: store) : nil
            phase = try await coordinator.whileCrawling { () async throws(StoreSyncError) -> CrawlPhase in
                try await crawl(run: run, store: store, options: options, coordinator: coordinator)
            }
            try coordinator.crawlEnded(run, phase, store: store)
            if let earlier { phase.totals.requests.add(earlier.requests) }
            if let reason = options.stop?.requested {
                return try stoppedReport(run: run, phase: phase, stopped: reason, store: store, started: started,
                                         earlierSeconds: earlier?.seconds ?? 0, writeReports: writeExports, coordinator: coordinator)
            }
            if !phase.deadlineLeft.isEmpty {
                return try stoppedReport(run: run, phase: phase, stopped: NightOutcome.deadlineMark, store: store, started: started,
                                         earlierSeconds: earlier?.seconds ?? 0, writeReports: writeExports, coordinator: coordinator)
            }
            if let stop = environment.stopAt?(.afterRemovalPasses) { throw stop }
            // A night stored into a file nobody will open again is a failed night.
            try store.checkInPlace()
            // The crawl's verdict and counters are stored before exporting: the
            // exported runs table shows this run as it ended, and a run killed
            // while exporting resumes by exporting only.
            try await coordinator.recordVerdict(of: run, &phase, store: store, runner: self, started: started,
                                                earlierSeconds: earlier?.seconds ?? 0, exportsFollow: writeExports)
            if writeExports {
                // From now on a missing or empty store here is a loss, not a new job (Invariant 10).
                do {
                    try environment.store.noteHistory(job.storePath, job: job.name, runID: run.id, at: environment.now())
                } catch {
                    // The run stands; only the guard against a lost store is weaker until the next run.
                    logger.warning("\(error.description)")
                    phase.warnings.append(RunProblem(error))
                }
            }
        }
        return try await endNight(run, phase, store: store, started: started, writeExports: writeExports, progress: options.progress)
    }

    /// A night whose crawl is whole, from its exports on: the artwork mirror
    /// and enclosure checks, every export, the feed lint's verdict, the
    /// reports, retention, and the run's report. The same for a night this
    /// process crawled and for one it exports only (a resumed export, or a
    /// fleet's night: ``exportOwedNight()``).
    func endNight(_ run: RunInfo, _ phase: CrawlPhase, store: any SnapshotStore, started: Double,
                  writeExports: Bool, progress: (@Sendable (RunProgress) -> Void)?) async throws(StoreSyncError) -> RunReport {
        var phase = phase
        var outcome = phase.outcome
        var errors = phase.errors
        var exported: [ExportedFile] = []
        var lintNotices: [String] = []
        var lintLowered = false
        var artworkFigures: ArtworkMirrorFigures?
        var reportedEnclosures: EnclosureCheckFigures?
        var pushFigures: FeedPushFigures?
        if writeExports, let stop = environment.stopAt?(.beforeExports) { throw stop }
        if writeExports {
            progress?(.exporting)
            // Left by a run killed while it wrote: safe to remove under the run lock.
            let stale = AtomicFile.removeStaleTemporaries(under: URL(fileURLWithPath: job.outputDirectory))
            if stale > 0 { logger.info("removed \(stale) temporary file(s) left by an interrupted export") }
            var context = ExportContext(store: store, runID: run.id, jobName: job.name, runDate: run.startedAt,
                                        outputDirectory: job.outputDirectory)
            context.keep = job.exportKeep
            context.protectedPaths = job.storeFiles
            context.artworkSize = job.artworkSize
            context.keepsPublishedFeeds = true
            context.recovered = Dictionary(phase.sources.map { ($0.name, $0.recovered) }, uniquingKeysWith: +)
            var exportError: StoreSyncError?
            // The mirror goes first: the feeds written next point at what it holds.
            if let artwork = job.artworkExport {
                do {
                    let outcome = try await mirrorArtwork(artwork, run: run, context: context)
                    context.mirroredArtwork = outcome.mirrored
                    context.imageSize = ArtworkMirrorSync.headerSizes(of: outcome.mirrored, spec: artwork,
                                                                      outputDirectory: job.outputDirectory)
                    context.artworkFigures = outcome.figures
                    artworkFigures = outcome.figures
                    exported.append(outcome.file)
                } catch {
                    // The feeds are still written, with the original image URLs.
                    exportError = error
                }
            }
            var enclosureFigures: EnclosureCheckFigures?
            if job.checksEnclosures {
                do {
                    let checked = try await checkEnclosures(run: run, context: context)
                    context.enclosureFacts = checked.facts
                    enclosureFigures = checked.figures
                } catch {
                    // The feeds are still written, with what their sources said.
                    exportError = exportError ?? error
                }
            }
            if outcome == .ok {
                // A broken Apple requirement makes the night partial before the database's
                // `runs` table is written, so the file tells what the exit code tells.
                let (store, runID, outputDirectory) = (store, run.id, job.outputDirectory)
                context.afterFeeds = { feeds in
                    guard !Self.lintReport(feeds, outputDirectory: outputDirectory).warnings.isEmpty else { return }
                    try store.lowerStatus(runID, to: .partial)
                }
            }
            do {
                // Seconds of synchronous writing: on a thread of its own (awaitOffPool).
                let (specs, context, logger) = (job.exports.filter { !$0.isReport }, context, logger)
                exported += try await awaitOffPool { () throws(StoreSyncError) in
                    try SnapshotExporter.export(specs, context: context, logger: logger)
                }
            } catch {
                exportError = exportError ?? error
            }
            if var figures = enclosureFigures {
                figures.withheld = exported.reduce(0) { $0 + $1.enclosuresWithheld }
                figures.lengthsLearned = exported.reduce(0) { $0 + $1.enclosureLengthsLearned }
                figures.typesLearned = exported.reduce(0) { $0 + $1.enclosureTypesLearned }
                context.enclosureFigures = figures
                reportedEnclosures = figures
            }
            // What the feed lint found is part of the run's verdict: a broken
            // Apple requirement is a warning (exit 2), a missed recommendation a note.
            let lint = Self.lintReport(exported, outputDirectory: job.outputDirectory)
            // A run resumed to export again already recorded the lines of its first attempt.
            phase.warnings += lint.warnings.map { RunProblem(code: RunProblem.feedLint, message: $0) }
                .filter { !phase.warnings.contains($0) }
            lintNotices = lint.notices
            context.lint = exported.flatMap { file in file.lint.map { (file.path, $0) } }
            context.withheld = WithheldCounts(exported)
            // Every feed that was published is pushed, whatever became of the other exports.
            pushFigures = await pushChangedFeeds(exported, run: run)
            context.pushFigures = pushFigures
            if !lint.warnings.isEmpty, outcome == .ok {
                // The store says so already (`afterFeeds`, before the database and the reports).
                outcome = .partial
                lintLowered = true
            }
            // Reports describe the run as it ended, exports included.
            var totals = phase.totals
            totals.warnings = phase.warnings
            totals.seconds += clock.now() - started - (run.exportOnly ? 0 : phase.totals.seconds)
            if let exportError {
                errors.append(RunProblem(exportError))
                totals.errors = errors
                try store.markExportFailed(run.id, message: exportError.description)
            }
            try store.recordTotals(run.id, totals)
            // Reports are written even after a failed export: they are how cron users learn of it.
            do {
                exported += try SnapshotExporter.export(job.exports.filter(\.isReport), context: context, logger: logger)
            } catch {
                exportError = exportError ?? error
                errors.append(RunProblem(error))
                try store.markExportFailed(run.id, message: error.description)
            }
            if exportError == nil {
                try store.checkInPlace()
                try store.markExported(run.id, message: (phase.errors + phase.warnings).first?.message,
                                       status: lintLowered ? outcome : nil)
                OutputMarker(job: job).note(runID: run.id, logger: logger)
            } else {
                outcome = .failed
            }
        }

        // History goes only once the run is done (exports written): a resume never needs what was pruned.
        var pruned: PruneResult?
        var warnings = phase.warnings
        if writeExports, outcome != .failed, let retention = job.retention {
            do {
                let result = try store.pruneHistory(olderThan: retention.days, before: run.id)
                if !result.isEmpty { pruned = result }
            } catch {
                // Old history left in place costs space, not correctness: the run stands.
                logger.warning("retention: \(error.description)")
                warnings.append(RunProblem(code: RunProblem.retention, message: "retention: \(error.description)"))
            }
        }
        if writeExports, outcome != .failed { letGoOfUnkeptFeeds(store: store) }

        var report = try report(of: run, phase, outcome: outcome, exports: exported, warnings: warnings, errors: errors,
                                started: started, store: store)
        report.pruned = pruned
        report.artwork = artworkFigures
        report.enclosures = reportedEnclosures
        report.push = pushFigures
        report.notices = try store.schemaChanges(runID: run.id).map(\.description) + lintNotices
        return report
    }

    /// The feeds kept for `--as-of` of nights the store no longer keeps
    /// (retention pruned them) go with them; a failure costs space, not correctness.
    func letGoOfUnkeptFeeds(store: any SnapshotStore) {
        let kept = PublishedFeeds(outputDirectory: job.outputDirectory)
        guard !kept.keptRuns().isEmpty else { return }
        do {
            let runs = Set(try store.runs(limit: Int(Int32.max)).map(\.id))
            for run in try kept.prune(keeping: runs) {
                logger.info("let go of run \(run)'s kept feed files: the store no longer keeps the run")
            }
        } catch {
            logger.warning("cannot let go of the kept feed files of pruned runs under \(kept.root.path): \(error)")
        }
    }

    /// What the earlier attempts of a resumed run spent. An attempt that ended
    /// (finished its crawl, or stopped by a signal or its deadline) recorded
    /// its totals; one killed without a word recorded none, but every page it
    /// committed counted its requests per source: the night's requests so far
    /// are the larger of the two.
    func earlierAttempts(of run: RunInfo, store: any SnapshotStore) throws(StoreSyncError) -> RunTotals {
        var totals = try store.run(run.id)?.totals ?? RunTotals()
        let committed = try store.sourceCounts(runID: run.id).reduce(0) { $0 + $1.requests }
        totals.requests.requests = max(totals.requests.requests, committed)
        return totals
    }

    /// The report of a run stopped early at a page boundary: by a signal
    /// (`stopped` is its name, e.g. "SIGTERM") or at its deadline
    /// (``NightOutcome/deadlineMark``: partial, exit 2, with what is left).
    /// The run stays unfinished in the store, as a killed run does, so the
    /// next start resumes it (committed pages are not fetched again), runs the
    /// removal passes and writes the exports once the crawl is whole; none of
    /// those now, as they would describe half a night. What the night came to
    /// so far is recorded with the run, and `report.json` and the metrics
    /// (`writeReports`) say so, as the summary, the webhook and `status` do.
    func stoppedReport(run: RunInfo, phase: CrawlPhase, stopped: String, store: any SnapshotStore,
                       started: Double, earlierSeconds: Double, writeReports: Bool,
                       coordinator: any NightCoordinator) throws(StoreSyncError) -> RunReport {
        try store.checkInPlace()
        let deadline = stopped == NightOutcome.deadlineMark
        var phase = phase
        let message: String
        if deadline {
            let minutes = (clock.now() - started) / 60
            let left = phase.deadlineLeft
            let shown = left.prefix(10).joined(separator: ", ") + (left.count > 10 ? ", and \(left.count - 10) more" : "")
            message = "deadline reached after \(String(format: "%.1f", minutes)) min: the crawl stopped at a page boundary; "
                + "left for the next run, which resumes run \(run.id) where it stopped: \(shown)"
            logger.warning("\(message)")
            phase.warnings.append(RunProblem(code: StoreSyncError.Code.deadlineReached.name, message: message))
        } else {
            message = "interrupted by \(stopped) at \(ISO8601DateFormatter().string(from: environment.now())); the next run resumes it"
            logger.notice("run \(run.id) \(message)")
            phase.errors = phase.errors.filter { !$0.message.contains("stopped before this page") }
        }
        // A fleet's run is every worker's: one worker stopping neither stops it nor speaks for its totals.
        if coordinator.speaksForRun {
            var totals = phase.totals
            totals.seconds = clock.now() - started + earlierSeconds
            totals.warnings = phase.warnings
            totals.errors = phase.errors
            try store.recordTotals(run.id, totals)
            try store.markStopped(run.id, stopped: stopped, message: message)
        }
        var exported: [ExportedFile] = []
        var errors = phase.errors
        if writeReports {
            var context = ExportContext(store: store, runID: run.id, jobName: job.name, runDate: run.startedAt,
                                        outputDirectory: job.outputDirectory)
            context.recovered = Dictionary(phase.sources.map { ($0.name, $0.recovered) }, uniquingKeysWith: +)
            do {
                exported = try SnapshotExporter.export(job.exports.filter(\.isReport), context: context, logger: logger)
            } catch {
                // The run stands unfinished either way; the summary and the exit code still say why.
                logger.error("\(error.description)")
                errors.append(RunProblem(error))
            }
        }
        var report = try report(of: run, phase, outcome: deadline ? .partial : .running, exports: exported,
                                warnings: phase.warnings, errors: errors, started: started, store: store)
        if deadline { report.deadlineLeft = phase.deadlineLeft } else { report.interrupted = stopped }
        return report
    }

    /// The report of `run` as this process ends it, each source with the
    /// figures its committed pages booked in the store (a resumed run's and a
    /// fleet's include what the other attempts and workers stored).
    func report(of run: RunInfo, _ phase: CrawlPhase, outcome: RunStatus, exports: [ExportedFile], warnings: [RunProblem],
                errors: [RunProblem], started: Double, store: any SnapshotStore) throws(StoreSyncError) -> RunReport {
        let counts = try store.sourceCounts(runID: run.id)
        var sources = phase.sources
        for index in sources.indices {
            sources[index].counts = counts.first { $0.source == sources[index].name } ?? SourceCounts(source: sources[index].name)
        }
        return RunReport(runID: run.id, job: job.name, night: run.night, resumed: run.resumed, outcome: outcome,
                         sources: sources, fetch: phase.totals.requests, exports: exports, warnings: warnings, errors: errors,
                         seconds: clock.now() - started)
    }

    /// Lint findings as report lines: requirements (and withheld feeds) as
    /// warnings, recommendations as notes, a few per file and a count after.
    static func lintReport(_ files: [ExportedFile], outputDirectory: String) -> (warnings: [String], notices: [String]) {
        var warnings: [String] = [], notices: [String] = []
        for file in files where !file.lint.isEmpty || file.withheld {
            let name = SnapshotExporter.relativePath(file.path, in: outputDirectory)
            let required = file.lint.filter(\.isRequirement), recommended = file.lint.filter { !$0.isRequirement }
            func lines(_ findings: [FeedLint]) -> [String] {
                let shown = findings.prefix(3).map { "feed lint: \(name): \($0)" }
                return findings.count > 3 ? shown + ["feed lint: \(name): \(findings.count - 3) more (see report.json)"] : shown
            }
            warnings += lines(required)
            if file.withheld {
                warnings.append("feed lint: \(name) was not published (strict: true): the previous file is unchanged")
            }
            notices += lines(recommended)
        }
        return (warnings, notices)
    }

    /// The crawl of a run that finished crawling earlier, as the store recorded it.
    func storedCrawl(of run: RunInfo, store: any SnapshotStore) throws(StoreSyncError) -> CrawlPhase {
        var phase = CrawlPhase()
        let stored = try store.run(run.id)
        phase.totals = stored?.totals ?? RunTotals()
        phase.warnings = phase.totals.warnings
        phase.errors = phase.totals.errors
        phase.outcome = run.crawlStatus ?? .failed
        let scopes = try store.scopeStates().filter { $0.runID == run.id }
        for source in job.sources {
            let mine = scopes.filter { $0.source == source.name }
            phase.sources.append(SourceReport(
                name: source.name, kind: source.kind, counts: SourceCounts(source: source.name), scopesTotal: mine.count,
                scopesComplete: mine.filter { $0.state == .complete || $0.state == .gone }.count,
                errors: mine.compactMap(\.error)))
        }
        return phase
    }

    /// Crawls every source in the job's order.
    func crawl(run: RunInfo, store: any SnapshotStore, options: RunOptions,
               coordinator: any NightCoordinator = LocalNight()) async throws(StoreSyncError) -> CrawlPhase {
        let ownTransport = environment.transport == nil ? AsyncHTTPTransport() : nil
        let session: UpstreamSession
        do {
            session = try await environment.services.open(night: run.night, transport: environment.transport ?? ownTransport!,
                                                          logger: logger)
        } catch {
            await ownTransport?.shutdown()
            try? store.finishRun(run.id, status: .failed, message: error.description, at: environment.now())
            throw error
        }
        let fetcher = Fetcher(transport: session.transport, settings: coordinator.httpSettings(job.http),
                              clock: clock, logger: logger)

        var phase = CrawlPhase()
        let deadlineMinutes = options.deadlineMinutes ?? job.http.deadlineMinutes
        // Measured from this start: a resumed run gets the whole budget again.
        let deadline = deadlineMinutes.map { clock.now() + $0 * 60 }
        for source in job.sources {
            if options.stop?.isRequested == true { break }
            if !phase.deadlineLeft.isEmpty {
                // The deadline passed in an earlier source: this one is not started.
                phase.deadlineLeft.append("\(source.name) (not started)")
                phase.sources.append(SourceReport(name: source.name, kind: source.kind, counts: SourceCounts(source: source.name),
                                                  scopesTotal: 0, scopesComplete: 0, errors: []))
                continue
            }
            // A dependent source may retire the scopes of upstream records
            // that are gone only when the upstream was crawled whole tonight.
            let upstreamComplete = source.settings.upstream.map { upstream in
                phase.sources.contains { $0.name == upstream && $0.scopesComplete == $0.scopesTotal && $0.errors.isEmpty }
            } ?? false
            let report = await crawl(source: source, baseURL: session.baseURL, run: run, store: store, fetcher: fetcher,
                                     upstreamComplete: upstreamComplete, progress: options.progress, deadline: deadline,
                                     deadlineLeft: &phase.deadlineLeft, stop: options.stop, warnings: &phase.warnings,
                                     coordinator: coordinator)
            phase.errors += report.errors
            phase.sources.append(report)
        }
        await session.close()
        await ownTransport?.shutdown()

        let totalScopes = phase.sources.reduce(0) { $0 + $1.scopesTotal }
        let completeScopes = phase.sources.reduce(0) { $0 + $1.scopesComplete }
        if completeScopes < totalScopes || !phase.warnings.isEmpty { phase.outcome = .partial }
        if totalScopes > 0, completeScopes == 0, !phase.errors.isEmpty { phase.outcome = .failed }
        // Every network source failed (a dead network, a wrong proxy): a night that
        // fetched nothing is a failure for monitoring, even if a local file was read.
        let network = phase.sources.filter(\.network)
        if !network.isEmpty, network.allSatisfy({ $0.scopesComplete == 0 && !$0.errors.isEmpty }) { phase.outcome = .failed }
        phase.totals.requests = fetcher.stats
        phase.totals.warnings = phase.warnings
        phase.totals.errors = phase.errors
        return phase
    }

    /// Crawls every scope of a source, storing each page as it arrives, then
    /// the follow-up scopes for what changed, then the removal pass.
    /// `baseURL` is where the run's services are (nil: the real ones).
    func crawl(source: SourceSpec, baseURL: URL?, run: RunInfo, store: any SnapshotStore, fetcher: Fetcher,
               upstreamComplete: Bool = false, progress: (@Sendable (RunProgress) -> Void)?,
               deadline: Double? = nil, deadlineLeft: inout [String], stop: RunStop? = nil,
               warnings: inout [RunProblem], coordinator: any NightCoordinator = LocalNight()) async -> SourceReport {
        var report = SourceReport(name: source.name, kind: source.kind, counts: SourceCounts(source: source.name),
                                  scopesTotal: 0, scopesComplete: 0, errors: [])
        let started = clock.now()
        var inputs: [Record] = []
        let inputRequest = source.settings.inputRequest
        if let request = inputRequest {
            do {
                inputs = try store.inputRecords(source: request.source, entities: request.entities,
                                                selection: request.selection, runID: run.id, consumer: source.name,
                                                fields: request.fields)
                if !request.ownEntities.isEmpty {
                    inputs += try store.inputRecords(source: source.name, entities: request.ownEntities, selection: .all,
                                                     runID: run.id, consumer: "\(source.name)#own", fields: request.fields)
                }
            } catch {
                report.errors.append(RunProblem(error, source: source.name))
                return report
            }
        }
        let scopes = source.scopes(baseURL: baseURL, inputs: inputs)
        report.network = scopes.contains { if case .http = $0.origin { true } else { false } }
        let crawler = SourceCrawler(
            source: source, run: run, store: store, fetcher: fetcher,
            breakers: HostCircuitBreakers(threshold: job.http.circuitBreakerThreshold), clock: clock, logger: logger,
            concurrency: job.http.concurrency, progress: progress, deadline: deadline, stop: stop)
        progress?(.sourceStarted(source: source.name, scopes: scopes.count))
        // Removals only once the whole source is crawled: a record that moved
        // between scopes (a renamed podcast now found by another term) is seen.
        let sweep: @Sendable (inout SourceCrawler.Result) -> Void = { [self] result in
            for scope in scopes where scope.sweeps {
                do throws(StoreSyncError) {
                    let removal = try store.sweepScope(runID: run.id, source: source.name, scope: scope.id, removal: source.removal)
                    if var warning = removal.guardWarning {
                        // The suggested command names this job's file.
                        warning = warning.replacingOccurrences(of: "storesync run \(SQLSnapshotStore.jobPlaceholder) ",
                                                               with: "storesync run \(Self.shellWord(job.file)) ")
                        result.warnings.append(RunProblem(code: RunProblem.guardRefused, source: source.name, scope: scope.id, message: warning))
                        logger.warning("\(warning)")
                    }
                } catch {
                    result.errors.append(RunProblem(error, source: source.name))
                }
            }
            // Scopes the source followed before and no longer has (a feed whose
            // podcast left the search, or the first `maxFeeds`): what they listed
            // has left every scope. Only where the scopes are every selected input
            // (`select: all`): a new-or-changed selection leaves unchanged ones out.
            if inputRequest?.selection == .all, upstreamComplete {
                let current = Set(scopes.map(\.id))
                do throws(StoreSyncError) {
                    for stale in try store.scopeStates() where stale.source == source.name && !current.contains(stale.scope) {
                        _ = try store.retireScope(runID: run.id, source: source.name, scope: stale.scope)
                    }
                } catch {
                    result.errors.append(RunProblem(error, source: source.name))
                }
            }
        }
        let keepOwed: @Sendable (CrawlStep, [CrawlScope], inout SourceCrawler.Result) -> Void = { [self] step, scopes, result in
            switch step {
            case .scopes:
                // Only a new-or-changed selection owes work past tonight: `select: all` takes every input each night.
                if inputRequest?.selection == .newOrChanged {
                    keepPending(consumer: source.name, scopes: scopes, result: &result, store: store)
                }
            case .followUps:
                // Also with none: a record owed before may have been removed upstream.
                keepPending(consumer: Self.followUpConsumer(source), scopes: scopes, result: &result, store: store)
            }
        }
        let night = SourceNight(source: source, run: run, crawler: crawler, loops: job.http.concurrency, stop: stop,
                                keepOwed: keepOwed, sweep: sweep)

        // The first load of an empty snapshot writes without lookups and builds its key indexes once at the end.
        let firstLoad = (try? store.beginFirstLoad()) ?? false
        let crawled = await coordinator.crawl(.scopes, scopes, of: night)
        var result = crawled.result
        if firstLoad {
            do {
                try store.endFirstLoad()
            } catch {
                result.errors.append(RunProblem(error, source: source.name))
            }
        }
        /// The source's report when its crawl stopped at a page boundary before
        /// its end, as a kill would: no pending inputs, follow-ups or removal pass
        /// are decided on a partial crawl; the resumed run does them. A deadline
        /// also books the time spent and says what it left.
        func stoppedEarly(_ result: SourceCrawler.Result, byDeadline: Bool) -> SourceReport {
            if byDeadline {
                deadlineLeft += result.deadlineLeft.map { "\(source.name)/\($0)" }
                try? store.addSourceTime(runID: run.id, source: source.name, requests: 0, seconds: clock.now() - started)
                warnings += result.warnings
            }
            progress?(.sourceFinished(source: source.name))
            report.scopesTotal = result.scopesTotal
            report.scopesComplete = result.scopesComplete
            report.errors = result.errors
            return report
        }
        if let early = crawled.stoppedEarly { return stoppedEarly(early, byDeadline: !early.deadlineLeft.isEmpty) }
        // What follows reads what the scopes wrote.
        await coordinator.scopesCrawled(scopes, of: night, result: &result)
        if stop?.isRequested == true { return stoppedEarly(result, byDeadline: false) }
        if !result.deadlineLeft.isEmpty { return stoppedEarly(result, byDeadline: true) }
        coordinator.scopesEnded(scopes, of: night, result: &result)

        // Details of what the source's own scopes added or changed (marketplace products).
        var followUps: [CrawlScope]?
        if source.settings.hasFollowUps {
            do {
                let changed = try store.inputRecords(source: source.name, entities: [], selection: .newOrChanged,
                                                     runID: run.id, consumer: Self.followUpConsumer(source), fields: [])
                followUps = source.followUpScopes(baseURL: baseURL, newOrChanged: changed)
            } catch {
                result.errors.append(RunProblem(error, source: source.name))
            }
        }
        if let followUps {
            if !followUps.isEmpty { progress?(.sourceStarted(source: source.name, scopes: followUps.count)) }
            let followed = await coordinator.crawl(.followUps, followUps, of: night)
            if let early = followed.stoppedEarly { return stoppedEarly(early, byDeadline: !early.deadlineLeft.isEmpty) }
            result.add(followed.result)
            // As above: the details not fetched stay owed and nothing is swept.
            if !followed.result.deadlineLeft.isEmpty { return stoppedEarly(result, byDeadline: true) }
        }
        if let first = result.cappedScopes.first {
            // One line per source: a cap usually stops many scopes at once.
            let count = result.cappedScopes.count
            result.warnings.append(RunProblem(code: RunProblem.capped, source: source.name, scope: count == 1 ? first : nil, message: "\(source.name): \(count) scope\(count == 1 ? "" : "s") (\(first)\(count > 1 ? ", …" : "")) stopped at the configured cap (maxResults/maxPages); records past it were not seen, so none were removed"))
        }
        await coordinator.close(night, scopes: scopes, followUps: followUps, result: &result)
        if result.drift > 0 {
            logger.notice("\(source.name): \(result.drift) rows appeared twice within a scope (the listing shifted while it was paged); each was stored once")
        }
        // Pages book their own requests; time is the source's wall clock.
        try? store.addSourceTime(runID: run.id, source: source.name, requests: 0, seconds: clock.now() - started)
        progress?(.sourceFinished(source: source.name))
        warnings += result.warnings
        report.scopesTotal = result.scopesTotal
        report.scopesComplete = result.scopesComplete
        report.errors = result.errors
        report.drift = result.drift
        report.unchangedPages = result.unchangedPages
        report.gone = result.goneScopes
        report.recovered = result.recoveredScopes
        return report
    }

    /// The consumer name under which a source's follow-ups (marketplace details) keep their place.
    static func followUpConsumer(_ source: SourceSpec) -> String { "\(source.name)#follow-ups" }

    /// Keeps the upstream records of `scopes` that did not end as intended
    /// pending for `consumer`, so the next run works for them again even if
    /// they no longer change: a failed lookup or detail is retried, not lost.
    func keepPending(consumer: String, scopes: [CrawlScope], result: inout SourceCrawler.Result, store: any SnapshotStore) {
        let unfinished = scopes.filter { !result.settled.contains($0.id) }.flatMap(\.inputs)
        do {
            try store.setPendingInputs(consumer: consumer, unfinished)
        } catch {
            result.errors.append(RunProblem(error))
        }
    }
}
