import Catalog
import Foundation
import Snapshot
import Synchronization

/// Applies a source's staged pages while the fleet still crawls it: each
/// scope as soon as it and every scope before it are crawled, so the apply,
/// which one writer does in scope order, overlaps the crawl instead of
/// following it (issue 27, item 5).
///
/// Why the night stays the one a single process writes: the applier takes
/// the source's one apply claim (`applied`, `#applied`), and applies scopes
/// strictly in the source's scope order, a scope only once some worker marked
/// its crawl done (every page and its end staged, fenced by its claim, before
/// the mark); so the snapshot sees the same pages in the same order as when
/// the whole log was applied after the crawl. Follow-up scopes and what stays
/// owed, and the removal pass, still wait for the whole crawl (the source's
/// closing step): they read every scope. A retired scope is not in the list.
///
/// One worker applies for the whole crawl, so what it holds of the source
/// (digests, seen keys) stays the store's from one scope to the next and is
/// read once. It is whichever worker first asks; the others ask again after
/// each scope they finish, and take it over once its holder is gone (its lease
/// run out, or let go when it stopped or its apply failed). Whatever is still
/// staged when the crawl ends is applied by the source's closing `applied`
/// step, as before: the same claim, which either waits for this applier or
/// takes over from it, resuming from the log (an applied page leaves the log
/// in the transaction that applies it).
final class FleetApplier: Sendable {
    private let dealer: FleetDealer
    private let source: String
    private let scopes: [String]
    private let stop: RunStop?

    private struct State {
        var claim: ScopeClaim?
        /// Scopes this worker's crawl loops finished since the applier last asked for the claim.
        var finished = 0
        /// The first scope not yet applied under this worker's claim.
        var next = 0
        /// Set once this worker's crawl of the phase is over, and whether it ended early.
        var crawlOver = false
        var stoppedEarly = false
    }
    private let state = Mutex(State())

    init(dealer: FleetDealer, source: String, scopes: [String], stop: RunStop?) {
        self.dealer = dealer
        self.source = source
        self.scopes = scopes
        self.stop = stop
    }

    /// A crawl loop of this worker finished a scope: the applier may now
    /// proceed (if it is this worker) or become this worker.
    func scopeFinished() {
        state.withLock { $0.finished += 1 }
    }

    /// This worker's crawl of the phase is over; `early` when it stopped before every scope was done.
    func crawlEnded(early: Bool) {
        state.withLock {
            $0.crawlOver = true
            $0.stoppedEarly = $0.stoppedEarly || early
        }
    }

    /// Runs until every scope is applied, or this worker's crawl is over and it
    /// does not hold the claim, or it stopped. Errors are not reported here: the
    /// claim is let go, and the closing step that takes it over reports them.
    func run() async {
        let store = dealer.store, run = dealer.run
        var askedAt = -1
        while true {
            let now = state.withLock { $0 }
            if now.stoppedEarly || stop?.isRequested == true || store.lostClaim {
                letGo()
                return
            }
            if now.claim == nil {
                // Asked again only when this worker finished a scope: the claim's
                // holder is busy or gone, and a scope finished here is when it matters.
                if now.finished != askedAt {
                    askedAt = now.finished
                    do throws(StoreSyncError) {
                        switch try store.claimScope(runID: run.id, source: source, phase: .applied,
                                                    among: [FleetDealer.closingScope(.applied)], worker: dealer.worker.name,
                                                    leaseSeconds: dealer.worker.leaseSeconds) {
                        case .claimed(let claim):
                            store.hold(claim, runID: run.id, leaseSeconds: dealer.worker.leaseSeconds, worker: dealer.worker.name)
                            _ = dealer.held.withLock { $0.insert(claim) }
                            state.withLock {
                                $0.claim = claim
                                $0.next = 0
                            }
                            continue
                        case .allDone:
                            return
                        case .wait:
                            break
                        }
                    } catch {
                        return
                    }
                }
                if now.crawlOver { return }
                try? await Task.sleep(for: Self.poll)
                continue
            }
            do throws(StoreSyncError) {
                if try await applyCrawled() { return }
            } catch {
                // Not reported here: the closing step takes the claim over at once and meets it again, or succeeds.
                letGo()
                return
            }
            if state.withLock({ $0.crawlOver && !$0.stoppedEarly }) {
                // Every scope is crawled: the next round applies the rest at once.
                continue
            }
            try? await Task.sleep(for: Self.poll)
        }
    }

    /// Applies every scope crawled since the last call, in order, up to the
    /// first that is not; true once all are applied (and the claim is done).
    private func applyCrawled() async throws(StoreSyncError) -> Bool {
        let store = dealer.store, run = dealer.run
        guard let claim = state.withLock({ $0.claim }) else { return false }
        let crawled = try store.doneScopes(runID: run.id, source: source, phase: .scopes)
        var next = state.withLock { $0.next }
        var ready = next
        while ready < scopes.count, crawled.contains(scopes[ready]) { ready += 1 }
        if ready > next {
            if stop?.isRequested == true || store.lostClaim { return false }
            // In one call, so the replay prepares a scope while the one before it commits. The first
            // scope under a new claim reads the source again: another worker may have applied before it.
            try await store.applyStaged(runID: run.id, source: source, scopes: Array(scopes[next..<ready]), continuing: next > 0)
            next = ready
            state.withLock { $0.next = next }
        }
        guard next == scopes.count else { return false }
        try store.completeClaim(claim, runID: run.id, outcome: "")
        _ = dealer.held.withLock { $0.remove(claim) }
        state.withLock { $0.claim = nil }
        return true
    }

    private func letGo() {
        guard let claim = state.withLock({ state in defer { state.claim = nil }; return state.claim }) else { return }
        _ = dealer.held.withLock { $0.remove(claim) }
        dealer.store.release(claim, runID: dealer.run.id)
    }

    /// How often the applier looks for newly crawled scopes: a scope takes a
    /// second or more to crawl, and a look is one small read.
    static let poll = Duration.milliseconds(100)
}
