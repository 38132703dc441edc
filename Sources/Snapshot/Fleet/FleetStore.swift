import Catalog
import Foundation

/// A snapshot store as one worker of a fleet sees it (`storesync run JOB
/// --worker`), handed out by ``StoreBackend/openFleet(_:)``.
///
/// It is the job's ``SnapshotStore`` with two differences the engine never
/// has to test for: a worker's pages and scope ends go to the fleet's staging
/// log instead of the snapshot (``apply(_:)``, ``finishScope(runID:source:scope:state:error:)``,
/// ``checkpoint(runID:source:scope:)`` read that log), and every write is
/// fenced by a claim this worker holds, so a worker that lost its claim
/// (paused past its lease, partitioned, started twice) commits nothing more.
/// The rest of a fleet's night is claimed step by step through the methods
/// below; the snapshot itself is written only by ``applyStaged(runID:source:scopes:continuing:)``,
/// in the order one process would have written it.
public protocol FleetStore: SnapshotStore {
    /// Joins the run of `fleet` (every worker of one night passes the same
    /// key), or begins it as ``SnapshotStore/beginRun(job:at:simulated:night:resumeExports:)``
    /// would, the first worker to ask deciding: an unfinished run is resumed.
    /// A worker that names a `night` other than the fleet's run's is refused
    /// (`invalidArguments`, naming the fleet): joined, it would crawl nothing
    /// of its night and exit 0.
    func joinFleetRun(job: String, fleet: String, at date: Date, simulated: Bool, night: Int?,
                      leaseSeconds: Double) throws(StoreSyncError) -> RunInfo

    /// Claims the first scope of `scopes` (in their order) that no live
    /// worker holds and that is not done: a new one, or one whose lease ran
    /// out (taken over: its pages resume from the last committed one).
    func claimScope(runID: Int64, source: String, phase: FleetPhase, among scopes: [String], worker: String,
                    leaseSeconds: Double) throws(StoreSyncError) -> ClaimAnswer

    /// Fences this store's writes for `claim`'s scope (or, for a source-wide
    /// claim, the source's) by the claim: each write checks and renews it in its
    /// own transaction, or fails with ``StoreSyncError/leaseLost(store:scope:worker:holder:)``.
    func hold(_ claim: ScopeClaim, runID: Int64, leaseSeconds: Double, worker: String)

    /// Marks `claim` done with what its step found (`outcome`, kept for the
    /// source's closing step), in a transaction fenced by the claim itself.
    func completeClaim(_ claim: ScopeClaim, runID: Int64, outcome: String) throws(StoreSyncError)

    /// Gives up `claim` without finishing it (its holder stopped, or its step
    /// failed): this store no longer writes under it, and its lease ends now, so
    /// the next worker to ask takes it over at once rather than after the lease.
    func release(_ claim: ScopeClaim, runID: Int64)

    /// Renews the leases of `claims` (a worker's heartbeat between commits).
    /// Returns the claims it no longer holds.
    func renew(_ claims: [ScopeClaim], runID: Int64, leaseSeconds: Double) throws(StoreSyncError) -> [ScopeClaim]

    /// Records that the heartbeat found `claim` gone: the worker stops at its
    /// next step, as if a commit had been refused (which it would be).
    func noteLost(_ claim: ScopeClaim, runID: Int64, worker: String)

    /// The first write of this worker refused because its claim was gone (or
    /// the heartbeat's finding of it): what stops the worker. Nil while it holds its claims.
    var lostClaimError: StoreSyncError? { get }

    /// What each done scope of `phase` reported, by scope.
    func claimOutcomes(runID: Int64, source: String, phase: FleetPhase) throws(StoreSyncError) -> [String: String]

    /// The scopes of `phase` some worker finished (crawled, their pages
    /// staged): what a source's applier may apply, in scope order.
    func doneScopes(runID: Int64, source: String, phase: FleetPhase) throws(StoreSyncError) -> Set<String>

    /// Applies the staged log of `scopes` (in this order) to the snapshot, as
    /// one process would have applied their pages, under the source's apply or
    /// closing claim (which fences every write). `continuing`: this store
    /// applied the source's scopes before these under the same claim, so what
    /// it holds of the source (digests, seen keys) need not be read again.
    func applyStaged(runID: Int64, source: String, scopes: [String], continuing: Bool) async throws(StoreSyncError)

    /// Adds a worker's requests to its run's (the run's totals are the fleet's).
    func addFleetRequests(_ runID: Int64, _ requests: RequestCounts) throws(StoreSyncError)

    /// The run's verdict fields, its requests left as the workers added them.
    func recordFleetTotals(_ runID: Int64, _ totals: RunTotals) throws(StoreSyncError)
}

extension FleetStore {
    /// Whether a write of this worker was refused because its claim was gone.
    public var lostClaim: Bool { lostClaimError != nil }

    /// ``applyStaged(runID:source:scopes:continuing:)`` reading the source afresh.
    public func applyStaged(runID: Int64, source: String, scopes: [String]) async throws(StoreSyncError) {
        try await applyStaged(runID: runID, source: source, scopes: scopes, continuing: false)
    }
}

/// The ``FleetStore`` of a PostgreSQL snapshot: the snapshot store
/// (``SQLSnapshotStore``) wrapped, its pages and scope ends staged
/// (FleetStaging), its claims kept in `scope_claims` (Fleet), and its writes
/// fenced by ``ClaimFences``, which the wrapped store checks in every write
/// transaction it makes.
final class StagingFleetStore: FleetStore {
    /// The snapshot, written only through the staged log's apply.
    let snapshot: SQLSnapshotStore
    /// Where the fleet's tables are: the claims and the staging log live beside the snapshot's.
    let postgres: PostgresEngine
    /// The claims this worker holds, fencing every write of ``snapshot``.
    let fences: ClaimFences

    init(snapshot: SQLSnapshotStore, postgres: PostgresEngine) {
        self.snapshot = snapshot
        self.postgres = postgres
        fences = ClaimFences(store: snapshot.path)
        snapshot.fence(with: fences)
    }

    var path: String { snapshot.path }

    @discardableResult
    func wrap<T>(_ body: () throws -> T) throws(StoreSyncError) -> T { try snapshot.wrap(body) }

    @discardableResult
    func wrap<T>(_ body: () async throws -> T) async throws(StoreSyncError) -> T { try await snapshot.wrap(body) }

    // MARK: What a worker writes differently: staged, not applied

    func apply(_ page: PageInput) async throws(StoreSyncError) -> PageResult {
        try await stage([page])[0]
    }

    func apply(_ pages: [PageInput]) async throws(StoreSyncError) -> [PageResult] {
        try await stage(pages)
    }

    func finishScope(runID: Int64, source: String, scope: String, state: ScopeState, error: RunProblem?) throws(StoreSyncError) {
        try stageFinish(runID: runID, source: source, scope: scope, state: state, error: error)
    }

    func checkpoint(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> ScopeCheckpoint? {
        try stagedCheckpoint(runID: runID, source: source, scope: scope)
    }

    /// A worker's pages are staged, never loaded: the first load's mode is one process's.
    func beginFirstLoad() throws(StoreSyncError) -> Bool { false }

    func endFirstLoad() throws(StoreSyncError) {}

    // MARK: The rest is the snapshot's

    func beginRun(job: String, at date: Date, simulated: Bool, night: Int?, resumeExports: Bool) throws(StoreSyncError) -> RunInfo {
        try snapshot.beginRun(job: job, at: date, simulated: simulated, night: night, resumeExports: resumeExports)
    }
    func recordTotals(_ runID: Int64, _ totals: RunTotals) throws(StoreSyncError) { try snapshot.recordTotals(runID, totals) }
    func finishRun(_ runID: Int64, status: RunStatus, message: String?, at date: Date, exportsFollow: Bool) throws(StoreSyncError) {
        try snapshot.finishRun(runID, status: status, message: message, at: date, exportsFollow: exportsFollow)
    }
    func markExportFailed(_ runID: Int64, message: String) throws(StoreSyncError) { try snapshot.markExportFailed(runID, message: message) }
    func markStopped(_ runID: Int64, stopped: String, message: String) throws(StoreSyncError) {
        try snapshot.markStopped(runID, stopped: stopped, message: message)
    }
    func lowerStatus(_ runID: Int64, to status: RunStatus) throws(StoreSyncError) { try snapshot.lowerStatus(runID, to: status) }
    func markExported(_ runID: Int64, message: String?, status: RunStatus?) throws(StoreSyncError) {
        try snapshot.markExported(runID, message: message, status: status)
    }
    func addSourceTime(runID: Int64, source: String, requests: Int, seconds: Double) throws(StoreSyncError) {
        try snapshot.addSourceTime(runID: runID, source: source, requests: requests, seconds: seconds)
    }
    func prepareEntities(_ mappings: [String: SourceMapping], fingerprint: String?) throws(StoreSyncError) {
        try snapshot.prepareEntities(mappings, fingerprint: fingerprint)
    }
    func registeredFields(source: String, entity: EntityKind) throws(StoreSyncError) -> [RegisteredField] {
        try snapshot.registeredFields(source: source, entity: entity)
    }
    func schemaChanges(runID: Int64) throws(StoreSyncError) -> [SchemaChange] { try snapshot.schemaChanges(runID: runID) }
    func pageMemo(source: String, scope: String, page: Int) throws(StoreSyncError) -> PageMemo? {
        try snapshot.pageMemo(source: source, scope: scope, page: page)
    }
    func rowMemory(source: String) throws(StoreSyncError) -> any RowMemory { try snapshot.rowMemory(source: source) }
    func stillHolds(source: String, rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> Bool {
        snapshot.stillHolds(source: source, rows: rows)
    }
    func sweepScope(runID: Int64, source: String, scope: String, removal policy: RemovalPolicy) throws(StoreSyncError) -> RemovalResult {
        try snapshot.sweepScope(runID: runID, source: source, scope: scope, removal: policy)
    }
    func retireScope(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> RemovalResult {
        try snapshot.retireScope(runID: runID, source: source, scope: scope)
    }
    func pruneHistory(olderThan days: Int, before runID: Int64) throws(StoreSyncError) -> PruneResult {
        try snapshot.pruneHistory(olderThan: days, before: runID)
    }
    func inputRecords(source: String, entities: [EntityKind], selection: InputSelection,
                      runID: Int64, consumer: String, fields: [String]) throws(StoreSyncError) -> [Catalog.Record] {
        try snapshot.inputRecords(source: source, entities: entities, selection: selection, runID: runID, consumer: consumer, fields: fields)
    }
    func setPendingInputs(consumer: String, _ identities: [RecordIdentity]) throws(StoreSyncError) {
        try snapshot.setPendingInputs(consumer: consumer, identities)
    }
    func run(_ id: Int64) throws(StoreSyncError) -> RunRow? { try snapshot.run(id) }
    func runs(limit: Int) throws(StoreSyncError) -> [RunRow] { try snapshot.runs(limit: limit) }
    func runSummaries(through runID: Int64) throws(StoreSyncError) -> [RunSummary] { try snapshot.runSummaries(through: runID) }
    func sourceCounts(runID: Int64) throws(StoreSyncError) -> [SourceCounts] { try snapshot.sourceCounts(runID: runID) }
    func entityTallies(runID: Int64) throws(StoreSyncError) -> [EntityTally] { try snapshot.entityTallies(runID: runID) }
    func scopeStates() throws(StoreSyncError) -> [ScopeRow] { try snapshot.scopeStates() }
    func recordCount(of entity: EntityKind) throws(StoreSyncError) -> Int { try snapshot.recordCount(of: entity) }
    func entities() throws(StoreSyncError) -> [EntityKind] { try snapshot.entities() }
    func recordSources() throws(StoreSyncError) -> [String] { try snapshot.recordSources() }
    func forEachRecord(of entity: EntityKind, columns: [ExportColumn], order: RecordOrder,
                       _ body: (ProjectedRecord) throws -> Void) throws {
        try snapshot.forEachRecord(of: entity, columns: columns, order: order, body)
    }
    func forEachRecordBytes(of entity: EntityKind, order: RecordOrder, _ body: (StoredRecordBytes) throws -> Void) throws {
        try snapshot.forEachRecordBytes(of: entity, order: order, body)
    }
    func forEachChange(runID: Int64?, order: ChangeOrder, _ body: (ChangeRow) throws -> Void) throws {
        try snapshot.forEachChange(runID: runID, order: order, body)
    }
    func forEachEntityHistory(of entity: EntityKind, runs: [Int64]?, _ body: (EntityHistory) throws -> Void) throws {
        try snapshot.forEachEntityHistory(of: entity, runs: runs, body)
    }
    func unlinkedCount(of entity: EntityKind, field: String, target: EntityKind) throws(StoreSyncError) -> Int {
        try snapshot.unlinkedCount(of: entity, field: field, target: target)
    }
    func entityHistory(of entity: EntityKind, key: String) throws(StoreSyncError) -> EntityHistory? {
        try snapshot.entityHistory(of: entity, key: key)
    }
    func forEachFeedRecord(_ query: FeedQuery, limit: Int?, _ body: (FeedRecord) throws -> Bool) throws {
        try snapshot.forEachFeedRecord(query, limit: limit, body)
    }
    func forEachDecrease(of entity: EntityKind, field: String, limit: Int?, _ body: (FieldDecrease) throws -> Bool) throws {
        try snapshot.forEachDecrease(of: entity, field: field, limit: limit, body)
    }
    func forEachChangeWithRecord(runID: Int64, _ body: (ChangeWithRecord) throws -> Bool) throws {
        try snapshot.forEachChangeWithRecord(runID: runID, body)
    }
    func recordsNewestFirst(_ entities: [EntityKind], by field: String) throws(StoreSyncError) -> [FeedRecord] {
        try snapshot.recordsNewestFirst(entities, by: field)
    }
    func recordsNewestAdded(_ entity: EntityKind, thenBy field: String) throws(StoreSyncError) -> [FeedRecord] {
        try snapshot.recordsNewestAdded(entity, thenBy: field)
    }
    func latestDecreases(of entity: EntityKind, field: String) throws(StoreSyncError) -> [FieldDecrease] {
        try snapshot.latestDecreases(of: entity, field: field)
    }
    func chartEntries(chart: String) throws(StoreSyncError) -> [FeedRecord] { try snapshot.chartEntries(chart: chart) }
    func entitiesByKey(_ entity: EntityKind, keys: [String]) throws(StoreSyncError) -> [FeedRecord] {
        try snapshot.entitiesByKey(entity, keys: keys)
    }
    func changesWithRecords(runID: Int64) throws(StoreSyncError) -> [ChangeWithRecord] { try snapshot.changesWithRecords(runID: runID) }
    func checkInPlace() throws(StoreSyncError) { try snapshot.checkInPlace() }
    func snapshotFile() throws -> String { try snapshot.snapshotFile() }
}
