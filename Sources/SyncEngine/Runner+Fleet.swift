import Catalog
import Connectors
import Crawl
import Foundation
import Snapshot
import Synchronization

/// How a worker of a fleet takes part in a night (`storesync run JOB --worker`).
public struct WorkerOptions: Sendable {
    /// The night's key: every worker of one night passes the same (the
    /// Kubernetes Job's name, or the date in a crontab). A new key is a new night.
    public var fleet: String
    /// This worker's name in the store and in messages (an index, a host name).
    public var name: String
    /// How long a claim lasts unless renewed: a worker silent for longer (paused,
    /// partitioned, dead) loses its scopes to the others. Renewed every third of it.
    public var leaseSeconds: Double
    /// How many workers share the job's per-host request budget: each keeps
    /// its own token bucket per host, at 1/`fleetSize` of `http.requestsPerMinute`.
    ///
    /// Divided statically rather than enforced through the store: a token
    /// taken from PostgreSQL per request would put a commit (and a hot row)
    /// in front of every request of the fleet, and would make the database
    /// the rate limiter's single point of failure. The division is exact when
    /// all N run and errs on the polite side when fewer do (a dead worker's
    /// share goes unused until the next night). Where the service limits each
    /// client (the iTunes Store, by address) leave it at 1: every worker on its
    /// own machine then has the whole per-client budget, which is the point of
    /// a fleet.
    public var fleetSize: Int

    public init(fleet: String, name: String, leaseSeconds: Double = 60, fleetSize: Int = 1) {
        self.fleet = fleet
        self.name = name
        self.leaseSeconds = leaseSeconds
        self.fleetSize = max(1, fleetSize)
    }

    /// The job's HTTP settings with this worker's share of every per-host budget.
    public func share(of http: HTTPSettings) -> HTTPSettings {
        guard fleetSize > 1 else { return http }
        var shared = http
        shared.requestsPerMinute = http.requestsPerMinute.mapValues { $0 / Double(fleetSize) }
        shared.defaultRequestsPerMinute = http.defaultRequestsPerMinute.map { $0 / Double(fleetSize) }
        return shared
    }

    /// The leases a worker accepts: long enough for a page and its commit, short
    /// enough that a dead worker's scopes move on the same night.
    public static let leaseRange = 2.0...3_600.0
}

/// A value the claim loops of one worker share.
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<T: Sendable>(_ body: (inout Value) -> T) -> T { value.withLock { body(&$0) } }
}

/// A fleet's share of a night for this worker: which scopes it crawls (claimed
/// one at a time from the store) and whether it runs a source's closing step.
struct FleetDealer: Sendable {
    let store: any FleetStore
    let worker: WorkerOptions
    let run: RunInfo
    /// Claims this worker holds, renewed in the background between commits.
    let held = Shared<Set<ScopeClaim>>([])
    /// How recently a request must have waited for its host's budget for a
    /// worker to hold back from claiming another scope at once.
    static let pacedWindowSeconds = 1.0

    /// Crawls the scopes of `phase` this worker manages to claim, until every
    /// scope is done by some worker, and returns what the whole fleet found,
    /// scope by scope as one process would have (each scope's outcome is kept
    /// with its claim). Nil when this worker stopped early (asked to, its
    /// deadline, or a lost claim): what it committed stays, the rest is the others'.
    func crawl(_ scopes: [CrawlScope], phase: FleetPhase, source: SourceSpec, crawler: SourceCrawler, loops: Int,
               stop: RunStop?) async -> (result: SourceCrawler.Result, stoppedEarly: SourceCrawler.Result?) {
        guard !scopes.isEmpty else { return (SourceCrawler.Result(), nil) }
        let byID = Dictionary(scopes.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let ids = scopes.map(\.id)
        let stopped = Shared<SourceCrawler.Result?>(nil)
        let problems = Shared<[RunProblem]>([])
        let sourceName = source.name
        // A source's own scopes are applied as they are crawled (FleetApplier); follow-ups by its closing step.
        let applier = phase == .scopes ? FleetApplier(dealer: self, source: sourceName, scopes: ids, stop: stop) : nil
        let crawling = Shared(max(1, loops))
        let began = ContinuousClock.now
        let allDone = Shared(false)
        await withTaskGroup(of: Void.self) { group in
            if let applier { group.addTask { await applier.run() } }
            for loop in 0..<max(1, loops) {
                group.addTask {
                    defer {
                        let last = crawling.withLock { count -> Bool in
                            count -= 1
                            return count == 0
                        }
                        if last {
                            let early = stopped.withLock { $0 != nil } || stop?.isRequested == true || store.lostClaim
                                || !problems.withLock { $0.isEmpty }
                            applier?.crawlEnded(early: early)
                        }
                    }
                    while stopped.withLock({ $0 == nil ? true : false }), stop?.isRequested != true, !store.lostClaim {
                        // A second scope at once only where this worker's budget has room for it. Where its
                        // requests already wait for their host (a rate limit, a server's pause, a refusal), a
                        // second scope adds no page a second: it halves the pace of the first, so each scope
                        // ends later, and the applier, which takes scopes strictly in order, starts later
                        // (4 workers at 600 requests a minute each: 13.0-13.8 s with one scope at a time,
                        // 15.9-19.4 s with four). So the loops start one a window apart, each once the
                        // window passed with no request waiting; where nothing waits (many hosts, no
                        // limit), all run after a few windows.
                        if loop > 0, ContinuousClock.now < began + .seconds(Self.pacedWindowSeconds * Double(loop))
                            || crawler.fetcher.pacedRecently(within: Self.pacedWindowSeconds) {
                            // Another loop found every scope done: nothing is left to wait for.
                            if allDone.withLock({ $0 }) || Task.isCancelled { return }
                            try? await Task.sleep(for: .seconds(Self.pacedWindowSeconds / 4))
                            continue
                        }
                        let answer: ClaimAnswer
                        do throws(StoreSyncError) {
                            answer = try store.claimScope(runID: run.id, source: sourceName, phase: phase, among: ids,
                                                          worker: worker.name, leaseSeconds: worker.leaseSeconds)
                        } catch {
                            problems.withLock { $0.append(RunProblem(error, source: sourceName)) }
                            return
                        }
                        switch answer {
                        case .allDone:
                            allDone.withLock { $0 = true }
                            return
                        case .wait(let seconds):
                            // Bounded: at most until the soonest lease runs out, when its scope is free.
                            try? await Task.sleep(for: .seconds(min(max(seconds, 0.05), Self.scopeClaimPollSeconds)))
                        case .claimed(let claim):
                            guard let scope = byID[claim.scope] else { continue }
                            store.hold(claim, runID: run.id, leaseSeconds: worker.leaseSeconds, worker: worker.name)
                            _ = held.withLock { $0.insert(claim) }
                            let result = await crawler.crawl([scope])
                            _ = held.withLock { $0.remove(claim) }
                            if store.lostClaim { return }
                            if !result.deadlineLeft.isEmpty || stop?.isRequested == true {
                                // Left unfinished and unclaimed once its lease runs out: the next worker resumes it.
                                stopped.withLock { $0 = result }
                                return
                            }
                            do throws(StoreSyncError) {
                                try store.completeClaim(claim, runID: run.id, outcome: Self.encode(result))
                            } catch {
                                problems.withLock { $0.append(RunProblem(error, source: sourceName)) }
                                return
                            }
                            applier?.scopeFinished()
                        }
                    }
                }
            }
        }
        var total = SourceCrawler.Result()
        if let early = stopped.withLock({ $0 }) { return (total, early) }
        if store.lostClaim || stop?.isRequested == true { return (total, SourceCrawler.Result()) }
        do throws(StoreSyncError) {
            let outcomes = try store.claimOutcomes(runID: run.id, source: source.name, phase: phase)
            for id in ids {
                guard let outcome = outcomes[id] else { continue }
                total.add(Self.decode(outcome))
            }
        } catch {
            total.errors.append(RunProblem(error, source: source.name))
        }
        total.scopesTotal = ids.count
        total.errors += problems.withLock { $0 }
        return (total, nil)
    }

    /// Runs `body` (a source's removal pass and what stays owed) in exactly one
    /// worker, once every scope of the source is done; the others wait for it,
    /// so the next source starts from the finished one. Returns whether this
    /// worker ran it.
    func finish(source: String, phase: FleetPhase, stop: RunStop?,
                _ body: () async throws(StoreSyncError) -> String) async throws(StoreSyncError) -> Bool {
        while stop?.isRequested != true, !store.lostClaim {
            switch try store.claimScope(runID: run.id, source: source, phase: phase, among: [Self.closingScope(phase)],
                                        worker: worker.name, leaseSeconds: worker.leaseSeconds) {
            case .allDone:
                return false
            case .wait(let seconds):
                try? await Task.sleep(for: .seconds(min(max(seconds, 0.02), Self.closingPollSeconds)))
            case .claimed(let claim):
                store.hold(claim, runID: run.id, leaseSeconds: worker.leaseSeconds, worker: worker.name)
                _ = held.withLock { $0.insert(claim) }
                defer { _ = held.withLock { $0.remove(claim) } }
                let outcome = try await body()
                try store.completeClaim(claim, runID: run.id, outcome: outcome)
                return true
            }
        }
        return false
    }

    /// Renews this worker's claims every third of a lease while `body` runs.
    ///
    /// On a thread of its own, not a task: the store's calls wait for the
    /// server synchronously, and a worker's claim loops waiting on a lock can
    /// hold every thread of the cooperative pool (two, on two cores) for
    /// seconds; a heartbeat queued behind them would let the worker's own
    /// leases run out while it is alive and well.
    func withHeartbeat<T: Sendable>(_ body: () async throws(StoreSyncError) -> T) async throws(StoreSyncError) -> T {
        let stopped = Shared(false)
        let beat = Thread { [store, held, run, worker] in
            while true {
                Thread.sleep(forTimeInterval: worker.leaseSeconds / 3)
                if stopped.withLock({ $0 }) { return }
                let claims = held.withLock { Array($0) }
                guard !claims.isEmpty else { continue }
                // A claim lost here stops the worker at its next step; its next commit would be refused anyway.
                if let lost = try? store.renew(claims, runID: run.id, leaseSeconds: worker.leaseSeconds).first {
                    store.noteLost(lost, runID: run.id, worker: worker.name)
                }
            }
        }
        beat.name = "storesync lease heartbeat"
        beat.start()
        defer { stopped.withLock { $0 = true } }
        return try await body()
    }

    /// How long a worker whose every remaining scope is claimed by others
    /// waits before asking again: for a scope freed by a dead worker, and to
    /// see the last one done, after which it waits for the closing steps.
    static let scopeClaimPollSeconds = 0.25

    /// How long a worker waits before asking again whether a closing step
    /// (the apply, the removal pass, the run's verdict) another worker runs
    /// is done. Every worker waits for each, and the night ends with the last
    /// to see it: at 0.25 s, three steps added most of a second to an
    /// 8-worker night of 8 s. A question is one claim row read (a fraction of
    /// a millisecond of the server's time), asked for as long as a step runs.
    static let closingPollSeconds = 0.05

    /// The one "scope" of a step that acts on a whole source (or run).
    static func closingScope(_ phase: FleetPhase) -> String { "#\(phase.rawValue)" }

    // What a scope's crawl found, kept with its claim for the source's closing step.

    static func encode(_ result: SourceCrawler.Result) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        // Cannot fail: strings, numbers and lists of them.
        return (try? encoder.encode(result)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
    }

    /// What ``encode(_:)`` stored; an empty result for an outcome that does not
    /// decode (a closing step that recorded none).
    static func decode(_ text: String) -> SourceCrawler.Result {
        (try? JSONDecoder().decode(SourceCrawler.Result.self, from: Data(text.utf8))) ?? SourceCrawler.Result()
    }
}

extension Runner {
    /// One worker's part of a fleet's night: joins the night's run, crawls the
    /// scopes it claims, closes the sources it happens to finish last, and the
    /// last one out records the run's verdict. It writes no exports
    /// (`storesync export` does, once the fleet is done) and takes no run lock:
    /// the claims are the lock, scope by scope.
    func runWorker(_ options: RunOptions, worker: WorkerOptions) async throws(StoreSyncError) -> RunReport {
        guard WorkerOptions.leaseRange.contains(worker.leaseSeconds) else {
            throw StoreSyncError(.invalidArguments, "--lease \(worker.leaseSeconds) is outside \(Int(WorkerOptions.leaseRange.lowerBound))…\(Int(WorkerOptions.leaseRange.upperBound)) seconds; nothing was crawled",
                                 remedy: "Give the seconds a worker may go silent before its scopes move to another, e.g. --lease 60")
        }
        let store = try environment.store.openFleet(job.storePath)
        try checkStoreOwner(try store.runs(limit: 1).first, options)
        let run = try store.joinFleetRun(job: job.name, fleet: worker.fleet, at: environment.now(),
                                         simulated: environment.services.hasNights, night: options.night,
                                         leaseSeconds: worker.leaseSeconds)
        logger.info("worker \(worker.name) joined run \(run.id) (fleet \(worker.fleet))")
        return try await self.run(options, store: store, exports: false,
                                  coordinator: FleetNight(dealer: FleetDealer(store: store, worker: worker, run: run), stop: options.stop))
    }
}
