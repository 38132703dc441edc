import Catalog
import Foundation
import Synchronization

/// What a fleet's claim is for: the steps of a night that exactly one worker
/// does, each claimed under its name (stored in `scope_claims.phase`, so the
/// raw values are the store's and never change).
public enum FleetPhase: String, Sendable, Hashable, CaseIterable {
    /// One of a source's own scopes, crawled.
    case scopes
    /// One of a source's follow-up scopes (marketplace details), crawled.
    case followUps = "follow-ups"
    /// The pages the workers staged for a source's own scopes, applied to the snapshot in scope order.
    case applied
    /// A source's closing step: its follow-ups' staged pages applied, what stays owed, the removal pass.
    case finish
    /// The run's verdict and totals, recorded once every source is closed.
    case run

    /// Whether a claim of this phase is a scope's crawl, whose writes are fenced
    /// to that scope; the other phases act on the whole source.
    public var crawlsAScope: Bool { self == .scopes || self == .followUps }
}

/// A scope (or a source's closing step) a worker holds, until its lease runs out.
public struct ScopeClaim: Sendable, Hashable {
    public let source: String
    /// What the claim is for.
    public let phase: FleetPhase
    public let scope: String
    /// This claim's own id: a worker started twice under one name still holds two.
    public let token: String

    /// The scope whose writes the claim fences: its own for a crawl, the whole
    /// source (`*`) for the source's closing step.
    var fencedScope: String { phase.crawlsAScope ? scope : "*" }
}

/// What a worker asking for work is told.
public enum ClaimAnswer: Sendable, Equatable {
    /// This scope is now the worker's, until its lease runs out.
    case claimed(ScopeClaim)
    /// Every open scope is held by a live worker: ask again after this many seconds
    /// (at most until the soonest lease runs out, when the scope can be taken over).
    case wait(seconds: Double)
    /// Every scope asked about is done.
    case allDone
}

/// The fleet's side of a worker: runs joined by a fleet key, scopes claimed
/// with leases that expire, and every write of a claimed scope fenced by its
/// claim, so a worker that lost its claim (paused past its lease, partitioned,
/// started twice) commits nothing more. PostgreSQL only: these tables live
/// beside the snapshot's and are not part of it (a migration leaves them).
extension StagingFleetStore {
    static let fleetTables = """
        CREATE TABLE IF NOT EXISTS fleet_runs (
            fleet TEXT COLLATE "C" PRIMARY KEY,
            run_id BIGINT NOT NULL,
            joined BIGINT NOT NULL DEFAULT 1
        );
        CREATE TABLE IF NOT EXISTS scope_claims (
            run_id BIGINT NOT NULL,
            source TEXT COLLATE "C" NOT NULL,
            phase TEXT COLLATE "C" NOT NULL,
            scope TEXT COLLATE "C" NOT NULL,
            worker TEXT COLLATE "C" NOT NULL,
            token TEXT COLLATE "C" NOT NULL,
            expires_at TIMESTAMPTZ NOT NULL,
            done BOOLEAN NOT NULL DEFAULT false,
            outcome TEXT COLLATE "C",
            takeovers BIGINT NOT NULL DEFAULT 0,
            PRIMARY KEY (run_id, source, phase, scope)
        )
        """

    func joinFleetRun(job: String, fleet: String, at date: Date, simulated: Bool, night: Int?,
                              leaseSeconds: Double) throws(StoreSyncError) -> RunInfo {
        try wrap { try postgres.joinFleet(idleSeconds: leaseSeconds) }
        let info: RunInfo = try wrap {
            try postgres.write { db in
                try db.execute("SELECT pg_advisory_xact_lock(hashtext('storesync fleet runs'))")
                if let row = try db.row("""
                    SELECT r.id, r.night, r.started_at, r.status FROM fleet_runs f JOIN runs r ON r.id = f.run_id WHERE f.fleet = ?
                    """, [fleet]) {
                    let runID: Int64 = row[0]
                    let fleetNight: Int? = row[1]
                    if let night, night != fleetNight {
                        let theirs = fleetNight.map { "night \($0)" } ?? "a night with no number"
                        throw StoreSyncError(.invalidArguments, """
                            fleet '\(fleet)' is the run of \(theirs) (run \(runID)); --night \(night) asks for another night: \
                            this worker did not join it and crawled nothing
                            """, place: .store(path), remedy: "Give night \(night) a fleet key of its own (--fleet \(fleet)-night-\(night)), "
                                + "or leave --night out to join \(theirs)")
                    }
                    try db.execute("UPDATE fleet_runs SET joined = joined + 1 WHERE fleet = ?", [fleet])
                    return RunInfo(id: runID, night: fleetNight, resumed: true, startedAt: Date(timeIntervalSince1970: row[2]))
                }
                // A fleet's workers write no exports: `storesync export` does, once they are done.
                let info = try SQLSnapshotStore.beginRun(db, job: job, at: date, simulated: simulated, night: night, resumeExports: false)
                try db.execute("INSERT INTO fleet_runs (fleet, run_id) VALUES (?, ?)", [fleet, info.id])
                return info
            }
        }
        try snapshot.runBegun(info)
        return info
    }

    /// Claims the first scope of `scopes` (in their order) that no live
    /// worker holds and that is not done: a new one, or one whose lease ran
    /// out (taken over: its pages resume from the last committed one).
    func claimScope(runID: Int64, source: String, phase: FleetPhase, among scopes: [String], worker: String,
                            leaseSeconds: Double) throws(StoreSyncError) -> ClaimAnswer {
        try wrap {
            try postgres.write { db in
                // Claims of one source and phase are decided one at a time.
                try db.execute("SELECT pg_advisory_xact_lock(hashtext(?))", ["claims\t\(runID)\t\(source)\t\(phase.rawValue)"])
                var held: [String: (done: Bool, secondsLeft: Double)] = [:]
                for row in try db.rows("""
                    SELECT scope, done, EXTRACT(EPOCH FROM (expires_at - clock_timestamp()))::float8
                    FROM scope_claims WHERE run_id = ? AND source = ? AND phase = ?
                    """, [runID, source, phase.rawValue]) {
                    held[row[0]] = (row[1], row[2])
                }
                var soonest: Double?
                for scope in scopes {
                    let token = UUID().uuidString
                    guard let claim = held[scope] else {
                        try db.execute("""
                            INSERT INTO scope_claims (run_id, source, phase, scope, worker, token, expires_at)
                            VALUES (?, ?, ?, ?, ?, ?, clock_timestamp() + ? * interval '1 second')
                            """, [runID, source, phase.rawValue, scope, worker, token, leaseSeconds])
                        return .claimed(ScopeClaim(source: source, phase: phase, scope: scope, token: token))
                    }
                    if claim.done { continue }
                    if claim.secondsLeft <= 0, let recheck = try db.row("""
                        SELECT done, EXTRACT(EPOCH FROM (expires_at - clock_timestamp()))::float8
                        FROM scope_claims WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? FOR UPDATE
                        """, [runID, source, phase.rawValue, scope]) {
                        // Locked, then read again: a holder's commit in flight (which renews
                        // its lease in the same transaction, however long it took) is waited
                        // for before its scope is judged abandoned. Only this row is locked,
                        // so a claimer paused here never stops the others renewing theirs.
                        let done: Bool = recheck[0]
                        let secondsLeft: Double = recheck[1]
                        if done { continue }
                        if secondsLeft > 0 {
                            soonest = min(soonest ?? secondsLeft, secondsLeft)
                            continue
                        }
                        try db.execute("""
                            UPDATE scope_claims SET worker = ?, token = ?, expires_at = clock_timestamp() + ? * interval '1 second',
                                takeovers = takeovers + 1
                            WHERE run_id = ? AND source = ? AND phase = ? AND scope = ?
                            """, [worker, token, leaseSeconds, runID, source, phase.rawValue, scope])
                        return .claimed(ScopeClaim(source: source, phase: phase, scope: scope, token: token))
                    }
                    soonest = min(soonest ?? claim.secondsLeft, claim.secondsLeft)
                }
                return soonest.map { .wait(seconds: $0) } ?? .allDone
            }
        }
    }

    /// Fences this store's writes for `claim`'s scope (or, for a source-wide
    /// claim, the source's) by the claim: each write checks and renews it in its
    /// own transaction, or fails with ``StoreSyncError/leaseLost(store:scope:worker:holder:)``.
    func hold(_ claim: ScopeClaim, runID: Int64, leaseSeconds: Double, worker: String) {
        fences.hold(Fence(claim: claim, runID: runID, leaseSeconds: leaseSeconds, worker: worker))
    }

    /// Marks `claim` done with what its crawl found (kept for the source's
    /// closing step), in a transaction fenced by the claim itself.
    func completeClaim(_ claim: ScopeClaim, runID: Int64, outcome: String) throws(StoreSyncError) {
        defer { fences.drop(claim) }
        try wrap {
            try postgres.write { db in
                try fences.check(db, source: claim.source, scope: claim.fencedScope)
                try db.execute("""
                    UPDATE scope_claims SET done = true, outcome = ? WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? AND token = ?
                    """, [outcome, runID, claim.source, claim.phase.rawValue, claim.scope, claim.token])
            }
        }
    }

    /// Renews the leases of `claims` (a worker's heartbeat between commits).
    /// Returns the claims it no longer holds: another token, or a lease that
    /// ran out before the scope was done (one done meanwhile, since the
    /// heartbeat listed it, is still this worker's).
    func renew(_ claims: [ScopeClaim], runID: Int64, leaseSeconds: Double) throws(StoreSyncError) -> [ScopeClaim] {
        try wrap {
            try postgres.renewals { db in
                try claims.filter { claim in
                    try db.execute("""
                        UPDATE scope_claims SET expires_at = clock_timestamp() + ? * interval '1 second'
                        WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? AND token = ?
                            AND (done OR expires_at > clock_timestamp())
                        """, [leaseSeconds, runID, claim.source, claim.phase.rawValue, claim.scope, claim.token]) == 0
                }
            }
        }
    }

    /// What each done scope of `phase` reported, by scope.
    func claimOutcomes(runID: Int64, source: String, phase: FleetPhase) throws(StoreSyncError) -> [String: String] {
        try wrap {
            try postgres.read { db in
                var outcomes: [String: String] = [:]
                for row in try db.rows("""
                    SELECT scope, outcome FROM scope_claims WHERE run_id = ? AND source = ? AND phase = ? AND done
                    """, [runID, source, phase.rawValue]) {
                    outcomes[row[0]] = row[1] as String? ?? ""
                }
                return outcomes
            }
        }
    }

    /// The scopes of `phase` some worker finished (crawled, their pages staged):
    /// what a source's applier may apply, in scope order.
    func doneScopes(runID: Int64, source: String, phase: FleetPhase) throws(StoreSyncError) -> Set<String> {
        try wrap {
            try postgres.readStatement { db in
                Set(try db.rows("SELECT scope FROM scope_claims WHERE run_id = ? AND source = ? AND phase = ? AND done",
                                [runID, source, phase.rawValue]).map { $0[0] as String })
            }
        }
    }

    /// Gives up `claim` without finishing it (its holder stopped, or its step
    /// failed): this store no longer writes under it, and its lease ends now, so
    /// the next worker to ask takes it over at once rather than after the lease,
    /// resuming where it stopped, as it would a killed worker's.
    func release(_ claim: ScopeClaim, runID: Int64) {
        fences.drop(claim)
        // Best effort: left as it is, the lease runs out on its own.
        _ = try? postgres.write { db in
            try db.execute("""
                UPDATE scope_claims SET expires_at = clock_timestamp()
                WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? AND token = ? AND NOT done
                """, [runID, claim.source, claim.phase.rawValue, claim.scope, claim.token])
        }
    }

    /// Records that the heartbeat found `claim` gone: the worker stops at its
    /// next step, as if a commit had been refused (which it would be).
    func noteLost(_ claim: ScopeClaim, runID: Int64, worker: String) {
        let holder = try? postgres.read { db in
            try db.value(as: String.self, "SELECT worker FROM scope_claims WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? AND token <> ?",
                         [runID, claim.source, claim.phase.rawValue, claim.scope, claim.token])
        }
        fences.noteLost(.leaseLost(store: path, scope: "\(claim.source)/\(claim.scope)", worker: worker, holder: holder ?? nil))
    }

    var lostClaimError: StoreSyncError? { fences.lost }

    /// Adds a worker's requests to its run's (the run's totals are the fleet's).
    func addFleetRequests(_ runID: Int64, _ requests: RequestCounts) throws(StoreSyncError) {
        try wrap {
            try postgres.write { db in
                try db.execute("""
                    UPDATE runs SET requests = requests + ?, retries = retries + ?, throttled = throttled + ?,
                        not_modified = not_modified + ?, failures = failures + ? WHERE id = ?
                    """, [requests.requests, requests.retries, requests.throttled, requests.notModified, requests.failures, runID])
            }
        }
    }

    /// The run's verdict fields, its requests left as the workers added them.
    func recordFleetTotals(_ runID: Int64, _ totals: RunTotals) throws(StoreSyncError) {
        try wrap {
            try postgres.write { db in
                try db.execute("UPDATE runs SET seconds = ?, warnings = ?, errors = ? WHERE id = ?",
                               [totals.seconds, SQLSnapshotStore.jsonList(totals.warnings.map(\.json)),
                                SQLSnapshotStore.jsonList(totals.errors.map(\.json)), runID])
            }
        }
    }
}

/// The claims one worker holds, by source and scope: what fences every write
/// its store makes (the snapshot's own transactions check them too, through
/// ``SQLSnapshotStore/fence(with:)``), and the first refusal, which stops the worker.
final class ClaimFences: Sendable {
    /// The store, named in errors.
    let store: String
    private let held = Mutex<[String: Fence]>([:])
    private let refused = Mutex<StoreSyncError?>(nil)

    init(store: String) {
        self.store = store
    }

    private static func key(_ source: String, _ scope: String) -> String { "\(source)\t\(scope)" }

    func hold(_ fence: Fence) {
        held.withLock { $0[Self.key(fence.claim.source, fence.claim.fencedScope)] = fence }
    }

    func drop(_ claim: ScopeClaim) {
        held.withLock { $0[Self.key(claim.source, claim.fencedScope)] = nil }
    }

    /// The first refusal (a write, or the heartbeat's finding), which stops this worker.
    var lost: StoreSyncError? { refused.withLock { $0 } }

    func noteLost(_ error: StoreSyncError) {
        refused.withLock { $0 = $0 ?? error }
    }

    /// The claim fencing `source`/`scope` (or the whole source), if this worker holds it.
    func fence(source: String, scope: String) -> Fence? {
        held.withLock { $0[Self.key(source, scope)] ?? $0[Self.key(source, "*")] }
    }

    /// The renewal of `fence` as a `WITH` query of one row where this worker
    /// still holds it and none where not: a statement that writes `FROM` it
    /// writes only under the claim, in one round trip.
    static func renewal(_ fence: Fence) -> (sql: String, arguments: [SQLValue]) {
        ("""
            WITH fence AS (
                UPDATE scope_claims SET expires_at = clock_timestamp() + ? * interval '1 second'
                WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? AND token = ? AND NOT done AND expires_at > clock_timestamp()
                RETURNING 1)
            """, ([fence.leaseSeconds, fence.runID, fence.claim.source, fence.claim.phase.rawValue, fence.claim.scope,
                   fence.claim.token] as [any SQLArgument]).map(\.sqlValue))
    }

    /// Within a write transaction: fails unless this worker still holds the
    /// claim fencing `source`/`scope` (or the whole source), and renews it.
    func check(_ db: any SQLSession, source: String, scope: String) throws {
        let fence = held.withLock { $0[Self.key(source, scope)] ?? $0[Self.key(source, "*")] }
        guard let fence else {
            throw StoreSyncError.leaseLost(store: store, scope: "\(source)/\(scope)", worker: "this worker", holder: nil)
        }
        let claim = fence.claim
        let renewed = try db.execute("""
            UPDATE scope_claims SET expires_at = clock_timestamp() + ? * interval '1 second'
            WHERE run_id = ? AND source = ? AND phase = ? AND scope = ? AND token = ? AND NOT done AND expires_at > clock_timestamp()
            """, [fence.leaseSeconds, fence.runID, claim.source, claim.phase.rawValue, claim.scope, claim.token])
        guard renewed == 1 else {
            let holder = try db.row("SELECT worker, token FROM scope_claims WHERE run_id = ? AND source = ? AND phase = ? AND scope = ?",
                                    [fence.runID, claim.source, claim.phase.rawValue, claim.scope])
            let other = holder.flatMap { row -> String? in (row[1] as String) == claim.token ? nil : row[0] }
            let error = StoreSyncError.leaseLost(store: store, scope: "\(claim.source)/\(claim.scope)", worker: fence.worker, holder: other)
            noteLost(error)
            throw error
        }
    }
}

/// A claim that fences a worker's writes for its scope.
struct Fence: Sendable {
    let claim: ScopeClaim
    let runID: Int64
    let leaseSeconds: Double
    let worker: String
}
