import Catalog
import Export
import Foundation
import Logging
import Snapshot

/// `storesync export`: writes a job's exports again from the snapshot,
/// without crawling, as of the last run that finished.
public enum Reexport {
    public static func run(job: JobSpec, store backend: any StoreBackend = DefaultBackend(),
                           logger: Logger = Logger(label: "storesync")) throws(StoreSyncError) -> [ExportedFile] {
        let (lock, store) = try openLocked(job: job, store: backend)
        defer { withExtendedLifetime(lock) {} }
        // Left by an export or run that was killed while it wrote (their writers are gone).
        let stale = AtomicFile.removeStaleTemporaries(under: URL(fileURLWithPath: job.outputDirectory))
        if stale > 0 { logger.info("removed \(stale) temporary file(s) left by an interrupted export") }
        guard let run = try store.runs(limit: 50).first(where: { $0.status != .running }) else {
            throw .storage(path: job.storePath, reason: "no finished run to export: run `storesync run \(job.file)` first")
        }
        // Another job's records under this job's templates would mix two catalogues in one output.
        if run.job != job.name {
            throw .storeOfAnotherJob(store: job.storePath, owner: run.job, job: job.name, jobFile: job.file)
        }
        var context = ExportContext(store: store, runID: run.id, jobName: job.name, runDate: run.startedAt,
                                    outputDirectory: job.outputDirectory)
        context.keep = job.exportKeep
        context.protectedPaths = job.storeFiles
        context.artworkSize = job.artworkSize
        context.keepsPublishedFeeds = true
        // Nothing is downloaded here: feeds point at the copies the last run left in the mirror.
        if let artwork = job.artworkExport {
            let urls = try SnapshotExporter.publishedArtworkURLs(job.exports, context: context)
            context.mirroredArtwork = ArtworkMirrorSync.heldCopies(of: urls, spec: artwork, outputDirectory: job.outputDirectory)
            context.imageSize = ArtworkMirrorSync.headerSizes(of: context.mirroredArtwork, spec: artwork,
                                                              outputDirectory: job.outputDirectory)
        }
        // Nor asked: feeds publish by what the last run's enclosure checks learnt.
        if job.checksEnclosures {
            context.enclosureFacts = EnclosureCheckSync.loadMemo(outputDirectory: job.outputDirectory, logger: logger).facts
        }
        let data = try SnapshotExporter.export(job.exports.filter { !$0.isReport }, context: context, logger: logger)
        context.lint = data.flatMap { file in file.lint.map { (file.path, $0) } }
        let reports = try SnapshotExporter.export(job.exports.filter(\.isReport), context: context, logger: logger)
        // The run's exports are written now: it ends as its crawl did (status says so, the next run starts a new night).
        if run.exportsPending { try store.markExported(run.id, message: run.message, status: nil) }
        OutputMarker(job: job).note(runID: run.id, logger: logger)
        return data + reports
    }

    /// The job's store, held under its run lock (the lock first: kept alive
    /// as long as the caller keeps it), its entities built for this job's mappings.
    static func openLocked(job: JobSpec, store backend: any StoreBackend) throws(StoreSyncError) -> (lock: any Sendable, store: any SnapshotStore) {
        let lock = try backend.lock(job.storePath)
        guard try backend.exists(job.storePath) else {
            throw .storage(path: job.storePath, reason: "no snapshot yet: run `storesync run \(job.file)` first")
        }
        let store = try backend.open(job.storePath)
        try store.prepareEntities(job.sourceMappings, fingerprint: job.mappingFingerprint)
        return (lock, store)
    }

    /// The lines a run's summary gives `files` (a folder of many, one line).
    public static func summaryLines(_ files: [ExportedFile]) -> [String] {
        RunReport.exportLines(files.filter { !$0.withheld })
    }

    /// What the feed lint found in `files`, as the lines a run reports:
    /// broken requirements and withheld feeds (warnings), missed recommendations (notes).
    public static func lintLines(_ files: [ExportedFile], outputDirectory: String) -> (warnings: [String], notices: [String]) {
        Runner.lintReport(files, outputDirectory: outputDirectory)
    }
}

extension Runner {
    /// Writes the store's last night's exports if they are still owed, as
    /// that night's own export step would have: the artwork mirror filled,
    /// enclosures asked about, every export, the feed lint's verdict, the
    /// run report and metrics, retention, then the `notify:` webhook. A
    /// fleet's night owes them (its workers write none) until this runs; so
    /// does a night killed while it exported. Nil when no night owes its
    /// exports: `storesync export` then writes them again (``Reexport``).
    public func exportOwedNight() async throws(StoreSyncError) -> RunReport? {
        let result: Result<RunReport?, StoreSyncError>
        do { result = .success(try await exportOwedNightLocked()) } catch { result = .failure(error) }
        guard case .success(let report?) = result else { return try result.get() }
        // After the lock is released, as a night's run notifies.
        return try await notifyAfter(.success(report)).get()
    }

    func exportOwedNightLocked() async throws(StoreSyncError) -> RunReport? {
        let lock = try environment.store.lock(job.storePath)
        defer { withExtendedLifetime(lock) {} }
        guard try environment.store.exists(job.storePath) else { return nil }
        let store = try environment.store.open(job.storePath)
        guard let last = try store.runs(limit: 1).first, last.exportsPending else { return nil }
        // Another job's records under this job's templates would mix two catalogues in one output.
        try checkStoreOwner(last, RunOptions())
        try store.prepareEntities(job.sourceMappings, fingerprint: job.mappingFingerprint)
        logger.notice("run \(last.id) finished its crawl and owes its exports: writing them as its night would have")
        let run = RunInfo(id: last.id, night: last.night, resumed: false, startedAt: last.startedAt,
                          exportOnly: true, crawlStatus: last.status)
        let phase = try storedCrawl(of: run, store: store)
        return try await endNight(run, phase, store: store, started: clock.now(), writeExports: true, progress: nil)
    }
}

extension Reexport {
    /// The exports `--as-of` writes: what a night's snapshot alone decides.
    /// Not the artwork mirror or enclosure checks (what they learnt that
    /// night is not kept), a changeset (it is between two published files),
    /// nor the reports (they tell a run, not a snapshot).
    static func isReproducible(_ spec: ExportSpec) -> Bool {
        switch spec {
        case .sqlite, .csvTables, .csvChanges, .feed, .opml: true
        case .runReport, .metrics, .artwork, .changeset: false
        }
    }

    /// `storesync export JOB --as-of RUN|DATE`: writes the job's exports as
    /// they were after run `selector` (a run's id, or a UTC date: the last
    /// run that finished among those begun on or before that day) into `folder` (default `<output>/as-of/<run>`),
    /// from the snapshot rebuilt as of that run (``AsOfSnapshot``). Nothing
    /// of the live output is touched: no file replaced, nothing pushed.
    public static func asOf(job: JobSpec, selector: String, into folder: String?, store backend: any StoreBackend = DefaultBackend(),
                            logger: Logger = Logger(label: "storesync")) throws(StoreSyncError) -> (run: Int64, files: [ExportedFile]) {
        let (lock, store) = try openLocked(job: job, store: backend)
        defer { withExtendedLifetime(lock) {} }
        let runs = try store.runs(limit: Int(Int32.max)).filter { $0.status != .running }
        let run: RunRow
        if let id = Int64(selector) {
            guard let found = runs.first(where: { $0.id == id }) else {
                throw StoreSyncError(.invalidArguments, "run \(id) is not among the finished runs the snapshot keeps",
                                     remedy: "`storesync status \(job.file) --runs 100` lists them")
            }
            run = found
        } else if let match = selector.wholeMatch(of: /(\d{4})-(\d{2})-(\d{2})/) {
            // A real day: 2026-13-45 is no date, and `{date}` never names it.
            let (year, month, day) = (Int(match.1)!, Int(match.2)!, Int(match.3)!)
            guard CivilDate.date(fromDays: CivilDate.days(year: year, month: month, day: day)) == (year, month, day) else {
                throw StoreSyncError(.invalidArguments, "--as-of \(selector) is not a date of the calendar")
            }
            // As of a day: what the last finished run begun on it or before it left (newest first),
            // the day as `{date}` names it (ISO dates compare as text).
            guard let found = runs.first(where: { PathTemplate.dateValue($0.startedAt) <= selector }) else {
                let oldest = runs.last.map { "; the oldest it keeps began on \(PathTemplate.dateValue($0.startedAt))" } ?? ""
                throw StoreSyncError(.invalidArguments, "no finished run began on or before \(selector) (UTC) among those the snapshot keeps\(oldest)",
                                     remedy: "`storesync status \(job.file) --runs 100` lists them")
            }
            run = found
        } else {
            throw StoreSyncError(.invalidArguments, "--as-of takes a run's number or a UTC date (YYYY-MM-DD), got '\(selector)'")
        }
        let output = folder ?? URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("as-of/\(run.id)").path
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("storesync-as-of-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: scratch) }
        let rebuilt: SQLSnapshotStore
        do {
            try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
            let path = scratch.appendingPathComponent("snapshot.sqlite").path
            let summary = try AsOfSnapshot.materialize(from: try store.snapshotFile(), asOf: run.id, into: path)
            if summary.unknownIDs > 0 {
                logger.warning("as of run \(run.id): \(summary.unknownIDs) entities removed since were removed before storesync kept a removed entity's id; they come last in the files, not in their place")
            }
            rebuilt = try SQLSnapshotStore(path: path)
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: job.storePath, reason: "cannot rebuild the snapshot as of run \(run.id): \(error)", cause: error)
        }
        var context = ExportContext(store: rebuilt, runID: run.id, jobName: job.name, runDate: run.startedAt, outputDirectory: output)
        context.artworkSize = job.artworkSize
        var specs = job.exports.filter(isReproducible)
        var files: [ExportedFile] = []
        if specs.contains(where: \.isFeed) {
            // Feeds as that night published them (PublishedFeeds says why they are kept, not rebuilt).
            let published = PublishedFeeds(outputDirectory: job.outputDirectory)
            let kept: [ExportedFile]?
            do {
                kept = try published.restore(run: run.id, into: output)
            } catch {
                throw .exportFailed(path: published.root.path, reason: "cannot give back run \(run.id)'s feeds: \(error)",
                                    remedy: "The live output was not touched. To have that night's feeds written from the rebuilt snapshot instead (the same items; dates, artwork links and archive pages may differ), remove \(published.manifestURL(run.id).path)",
                                    cause: error)
            }
            if let kept {
                files += kept
                specs.removeAll(where: \.isFeed)
            } else {
                logger.warning("run \(run.id)'s feed files were not kept (published before storesync kept them, by a night whose export failed, or the output folder's .storesync-published was removed): its feeds are written from the rebuilt snapshot: the same items, but their dates, artwork links and archive pages may differ from what was published")
            }
        }
        files = try SnapshotExporter.export(specs, context: context, logger: logger) + files
        return (run.id, files)
    }
}
