import Catalog
import Connectors
import Crawl
import Snapshot

/// The two crawls of a source's night: its own scopes, then the follow-ups
/// for what they added or changed (marketplace details).
enum CrawlStep: Sendable {
    case scopes
    case followUps

    /// The claims a fleet's workers take for the step's scopes.
    var fleetPhase: FleetPhase {
        switch self {
        case .scopes: .scopes
        case .followUps: .followUps
        }
    }
}

/// A step's crawl as this process saw it.
struct StepCrawl: Sendable {
    /// What the night found in the step's scopes (a fleet's: every worker's).
    var result = SourceCrawler.Result()
    /// Set when this process stopped before the step's scopes were all done
    /// (asked to stop, its deadline, a lost claim): what it did so far. The
    /// source then stops at this page boundary, as a kill would.
    var stoppedEarly: SourceCrawler.Result?
}

/// One source's night, as ``Runner`` hands it to the coordinator: what crawls
/// its scopes, and the two decisions its closing step makes.
struct SourceNight: Sendable {
    let source: SourceSpec
    let run: RunInfo
    let crawler: SourceCrawler
    /// Scopes crawled at once (a fleet's worker claims this many at a time).
    let loops: Int
    let stop: RunStop?
    /// Keeps the upstream records of a step's scopes that did not settle owed,
    /// so the next run works for them again (a no-op where the step owes nothing).
    let keepOwed: @Sendable (CrawlStep, [CrawlScope], inout SourceCrawler.Result) -> Void
    /// The source's removal pass, on the whole night's crawl.
    let sweep: @Sendable (inout SourceCrawler.Result) -> Void
}

/// How a night's work is shared out: by this process alone (``LocalNight``),
/// or among a fleet of workers on one PostgreSQL store (``FleetNight``).
/// ``Runner`` walks a source's night through these steps in order, the same
/// for both; each strategy decides who does each step and when its writes
/// reach the snapshot. Both leave the store row for row the same.
protocol NightCoordinator: Sendable {
    /// Begins this process's part of the night in `store`: the run it crawls for.
    func begin(in store: any SnapshotStore, runner: Runner, options: RunOptions, resumeExports: Bool) throws(StoreSyncError) -> RunInfo
    /// Runs the night's crawl (a fleet's worker renews its claims meanwhile).
    func whileCrawling(_ crawl: () async throws(StoreSyncError) -> Runner.CrawlPhase) async throws(StoreSyncError) -> Runner.CrawlPhase
    /// The crawl of this process is over, whole or stopped: what it adds to the run's account.
    func crawlEnded(_ run: RunInfo, _ phase: Runner.CrawlPhase, store: any SnapshotStore) throws(StoreSyncError)
    /// Records the crawl's verdict and totals with the run, once its crawl is whole.
    func recordVerdict(of run: RunInfo, _ phase: inout Runner.CrawlPhase, store: any SnapshotStore, runner: Runner,
                       started: Double, earlierSeconds: Double, exportsFollow: Bool) async throws(StoreSyncError)
    /// Whether this process writes the night's exports: a fleet's worker
    /// does not (`storesync export` does, once the fleet is done).
    var writesExports: Bool { get }
    /// The HTTP settings this process fetches with.
    func httpSettings(_ http: HTTPSettings) -> HTTPSettings
    /// Whether this process speaks for the run when it stops early (records
    /// the night's totals and marks it stopped): one worker of a fleet does not.
    var speaksForRun: Bool { get }
    /// Crawls a step's scopes.
    func crawl(_ step: CrawlStep, _ scopes: [CrawlScope], of night: SourceNight) async -> StepCrawl
    /// The source's own scopes are crawled: their pages are in the snapshot
    /// when this returns, before anything reads them. Failures go to `result`.
    func scopesCrawled(_ scopes: [CrawlScope], of night: SourceNight, result: inout SourceCrawler.Result) async
    /// The source's own scopes ended without a stop or a deadline.
    func scopesEnded(_ scopes: [CrawlScope], of night: SourceNight, result: inout SourceCrawler.Result)
    /// The source's closing step, once its crawl is whole: what stays owed and
    /// the removal pass. `followUps` is nil when none were selected (their
    /// inputs could not be read). Its warnings and errors go to `result`.
    func close(_ night: SourceNight, scopes: [CrawlScope], followUps: [CrawlScope]?, result: inout SourceCrawler.Result) async
}

/// A night crawled by this process alone: every page is applied as it
/// arrives, each step decides what stays owed as it ends.
struct LocalNight: NightCoordinator {
    func begin(in store: any SnapshotStore, runner: Runner, options: RunOptions, resumeExports: Bool) throws(StoreSyncError) -> RunInfo {
        let run = try store.beginRun(job: runner.job.name, at: runner.environment.now(), simulated: runner.environment.services.hasNights,
                                     night: options.night, resumeExports: resumeExports)
        if run.resumed, !run.exportOnly {
            runner.logger.notice("resuming run \(run.id) that did not finish; committed pages are not fetched again")
        }
        return run
    }

    func whileCrawling(_ crawl: () async throws(StoreSyncError) -> Runner.CrawlPhase) async throws(StoreSyncError) -> Runner.CrawlPhase {
        try await crawl()
    }

    func crawlEnded(_ run: RunInfo, _ phase: Runner.CrawlPhase, store: any SnapshotStore) throws(StoreSyncError) {}

    func recordVerdict(of run: RunInfo, _ phase: inout Runner.CrawlPhase, store: any SnapshotStore, runner: Runner,
                       started: Double, earlierSeconds: Double, exportsFollow: Bool) async throws(StoreSyncError) {
        try store.finishRun(run.id, status: phase.outcome, message: (phase.errors + phase.warnings).first?.message,
                            at: runner.environment.now(), exportsFollow: exportsFollow)
        phase.totals.seconds = runner.clock.now() - started + earlierSeconds
        try store.recordTotals(run.id, phase.totals)
    }

    var writesExports: Bool { true }

    func httpSettings(_ http: HTTPSettings) -> HTTPSettings { http }

    var speaksForRun: Bool { true }

    func crawl(_ step: CrawlStep, _ scopes: [CrawlScope], of night: SourceNight) async -> StepCrawl {
        var result = scopes.isEmpty ? SourceCrawler.Result() : await night.crawler.crawl(scopes)
        // A follow-up not fetched (a deadline among them) stays owed; nothing is swept then.
        if step == .followUps { night.keepOwed(.followUps, scopes, &result) }
        return StepCrawl(result: result)
    }

    func scopesCrawled(_ scopes: [CrawlScope], of night: SourceNight, result: inout SourceCrawler.Result) async {}

    func scopesEnded(_ scopes: [CrawlScope], of night: SourceNight, result: inout SourceCrawler.Result) {
        night.keepOwed(.scopes, scopes, &result)
    }

    func close(_ night: SourceNight, scopes: [CrawlScope], followUps: [CrawlScope]?, result: inout SourceCrawler.Result) async {
        night.sweep(&result)
    }
}

/// A night shared by a fleet: this worker crawls the scopes it claims and
/// stages their pages; the steps that act on the whole source (applying the
/// staged pages in scope order, what stays owed, the removal pass) are each
/// claimed by one worker, and every worker waits for them and reads what
/// they found, so all report the same night.
struct FleetNight: NightCoordinator {
    let dealer: FleetDealer
    /// This worker's stop: it no longer waits for a closing step once asked to stop.
    let stop: RunStop?

    /// The run was joined when the dealer was made (``Runner/runWorker(_:worker:)``).
    func begin(in store: any SnapshotStore, runner: Runner, options: RunOptions, resumeExports: Bool) throws(StoreSyncError) -> RunInfo {
        dealer.run
    }

    func whileCrawling(_ crawl: () async throws(StoreSyncError) -> Runner.CrawlPhase) async throws(StoreSyncError) -> Runner.CrawlPhase {
        let phase = try await dealer.withHeartbeat(crawl)
        if let lost = dealer.store.lostClaimError { throw lost }
        return phase
    }

    /// A worker's requests are its own; the run's are every worker's.
    func crawlEnded(_ run: RunInfo, _ phase: Runner.CrawlPhase, store: any SnapshotStore) throws(StoreSyncError) {
        try dealer.store.addFleetRequests(run.id, phase.totals.requests)
    }

    /// Once every source is closed, by one worker: every worker computed the same verdict.
    func recordVerdict(of run: RunInfo, _ phase: inout Runner.CrawlPhase, store: any SnapshotStore, runner: Runner,
                       started: Double, earlierSeconds: Double, exportsFollow: Bool) async throws(StoreSyncError) {
        let fleet = dealer.store, crawled = phase
        _ = try await dealer.finish(source: "#run", phase: .run, stop: stop) { () async throws(StoreSyncError) -> String in
            // The night owes its exports until `storesync export` writes them (exportOwedNight).
            try fleet.finishRun(run.id, status: crawled.outcome, message: (crawled.errors + crawled.warnings).first?.message,
                                at: runner.environment.now(), exportsFollow: true)
            var totals = crawled.totals
            totals.seconds = runner.clock.now() - started
            try fleet.recordFleetTotals(run.id, totals)
            return ""
        }
        if let lost = fleet.lostClaimError { throw lost }
    }

    var writesExports: Bool { false }

    func httpSettings(_ http: HTTPSettings) -> HTTPSettings { dealer.worker.share(of: http) }

    var speaksForRun: Bool { false }

    func crawl(_ step: CrawlStep, _ scopes: [CrawlScope], of night: SourceNight) async -> StepCrawl {
        let dealt = await dealer.crawl(scopes, phase: step.fleetPhase, source: night.source, crawler: night.crawler,
                                       loops: night.loops, stop: night.stop)
        return StepCrawl(result: dealt.result, stoppedEarly: dealt.stoppedEarly)
    }

    func scopesCrawled(_ scopes: [CrawlScope], of night: SourceNight, result: inout SourceCrawler.Result) async {
        // The fleet's pages of these scopes go into the snapshot once, in their order (FleetStaging).
        let store = dealer.store, run = night.run, source = night.source.name
        do throws(StoreSyncError) {
            _ = try await dealer.finish(source: source, phase: .applied, stop: night.stop) { () async throws(StoreSyncError) -> String in
                try await store.applyStaged(runID: run.id, source: source, scopes: scopes.map(\.id))
                return ""
            }
        } catch {
            result.errors.append(RunProblem(error, source: source))
        }
    }

    /// What stays owed is decided once, by the source's closing step.
    func scopesEnded(_ scopes: [CrawlScope], of night: SourceNight, result: inout SourceCrawler.Result) {}

    func close(_ night: SourceNight, scopes: [CrawlScope], followUps: [CrawlScope]?, result: inout SourceCrawler.Result) async {
        let store = dealer.store, run = night.run, source = night.source.name
        var closing = SourceCrawler.Result()
        closing.settled = result.settled
        do throws(StoreSyncError) {
            _ = try await dealer.finish(source: source, phase: .finish, stop: night.stop) { () async throws(StoreSyncError) -> String in
                // Also what makes the removal pass see the whole fleet's crawl (even with no follow-ups).
                try await store.applyStaged(runID: run.id, source: source, scopes: (followUps ?? []).map(\.id))
                night.keepOwed(.scopes, scopes, &closing)
                if let followUps { night.keepOwed(.followUps, followUps, &closing) }
                night.sweep(&closing)
                return FleetDealer.encode(closing)
            }
            if let outcome = try store.claimOutcomes(runID: run.id, source: source, phase: .finish)[FleetDealer.closingScope(.finish)] {
                let closed = FleetDealer.decode(outcome)
                result.warnings += closed.warnings
                result.errors += closed.errors
            }
        } catch {
            result.errors.append(RunProblem(error, source: source))
        }
    }
}
