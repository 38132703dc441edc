import Catalog
import Foundation

/// The snapshot: every record's current content and hash, the change log,
/// runs, checkpoints and page memos, behind one interface.
///
/// The engine and the exports know the store only through this protocol, so
/// a backend (``SQLSnapshotStore`` today, PostgreSQL for fleets later)
/// keeps its schema, its query language and its storage types to itself:
/// nothing outside the backend reads or writes its tables.
///
/// Methods throw ``StoreSyncError`` (a backend wraps its own errors as
/// ``StoreSyncError/storage(path:reason:)``). The streaming reads hand each
/// row to a callback instead of returning a list, so a million-row export
/// holds one row at a time; they throw untyped because the callback's own
/// errors (a full disk while writing a CSV) come back out unchanged.
///
/// Writes are made by one run at a time (the run lock): a backend may keep
/// per-run state in memory (what the run has seen, its digest index).
public protocol SnapshotStore: AnyObject, Sendable {
    // MARK: Runs

    /// Starts a run, or resumes the last one if it never finished (it was killed).
    ///
    /// The simulated night advances only after a run that finished: a resumed
    /// run crawls the night it started, so it converges to what an
    /// uninterrupted run would have stored. A run whose crawl finished but
    /// whose exports did not is resumed by exporting only, unless
    /// `resumeExports` is false (a dry run crawls the next night).
    func beginRun(job: String, at date: Date, simulated: Bool, night: Int?, resumeExports: Bool) throws(StoreSyncError) -> RunInfo

    /// Records the run's request counters, duration and messages for reports.
    func recordTotals(_ runID: Int64, _ totals: RunTotals) throws(StoreSyncError)

    /// Records how the crawl ended. With `exportsFollow`, the run counts as
    /// finished only once ``markExported(_:message:status:)`` says its exports are
    /// written too; until then the next start resumes it by exporting.
    func finishRun(_ runID: Int64, status: RunStatus, message: String?, at date: Date, exportsFollow: Bool) throws(StoreSyncError)

    /// An export failed: the run says so, and the next start retries the exports (not the crawl).
    func markExportFailed(_ runID: Int64, message: String) throws(StoreSyncError)

    /// The run was stopped early at a page boundary, on request (a signal: its
    /// name in `stopped`) or at its deadline (``Catalog/NightOutcome/deadlineMark``):
    /// it stays unfinished (`running`, so the next start resumes it as after a
    /// kill) and `message` says why.
    func markStopped(_ runID: Int64, stopped: String, message: String) throws(StoreSyncError)

    /// The run's exports lowered its verdict (a feed broke an Apple
    /// requirement: partial): the status the reports read, before they are written.
    func lowerStatus(_ runID: Int64, to status: RunStatus) throws(StoreSyncError)

    /// Every export of the run is written: the run is done, with its crawl's
    /// verdict as its status, or `status` when the exports lowered it (a feed
    /// that breaks Apple's rules makes an ok crawl a partial run).
    func markExported(_ runID: Int64, message: String?, status: RunStatus?) throws(StoreSyncError)

    /// Adds time and requests spent outside pages (e.g. a failed page) to a source's counters.
    func addSourceTime(runID: Int64, source: String, requests: Int, seconds: Double) throws(StoreSyncError)

    // MARK: The entity model

    /// Tells the store how each source of the run maps into the canonical
    /// model (a source it is not told about keeps its fields as they are),
    /// and builds the entities of a store upgraded from before the entity
    /// model from its stored payloads. Call it after ``beginRun(job:at:simulated:night:resumeExports:)``
    /// or before a re-export, under the run lock.
    ///
    /// `fingerprint` names what the mappings produce (``CanonicalSchema/mappingVersion``
    /// and the job's settings that shape canonical values): when it differs
    /// from the one the store last recorded, the entities are re-derived from
    /// the stored sightings, without logging changes, because the sources said
    /// nothing new; and every page is fetched and read again once, since an
    /// unchanged page may now give more than it did. Nil leaves the recorded one as it is.
    func prepareEntities(_ mappings: [String: SourceMapping], fingerprint: String?) throws(StoreSyncError)

    /// The wire fields `source` has sent for `entity`, in the source's own
    /// order (a records file's header order) as first seen.
    func registeredFields(source: String, entity: EntityKind) throws(StoreSyncError) -> [RegisteredField]

    /// The fields `runID` saw for the first time, or whose type it changed.
    func schemaChanges(runID: Int64) throws(StoreSyncError) -> [SchemaChange]

    // MARK: Pages and scopes

    /// The scope's checkpoint within `runID`, or nil if this run has not touched it.
    func checkpoint(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> ScopeCheckpoint?

    /// The memo of a page's last stored answer, if any.
    func pageMemo(source: String, scope: String, page: Int) throws(StoreSyncError) -> PageMemo?

    /// What the store holds of `source`'s rows, for a decoder to recognise
    /// unchanged rows by their bytes. Safe to use while pages are applied.
    func rowMemory(source: String) throws(StoreSyncError) -> any RowMemory

    /// Whether every row recognised by a decoder is still stored from those
    /// very bytes. False only when a page applied since the decoder looked
    /// wrote one of them; the page must then be decoded in full.
    func stillHolds(source: String, rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> Bool

    /// Diffs a page against the stored hashes and, atomically, writes only
    /// added and changed records, their field-level changes, the page's keys
    /// and the scope's checkpoint. Unchanged records cost no write.
    func apply(_ page: PageInput) async throws(StoreSyncError) -> PageResult

    /// Applies consecutive pages of one source in order, as ``apply(_:)``
    /// would one by one, in one transaction: all of them or none, the last
    /// page's checkpoint the one a resume sees.
    func apply(_ pages: [PageInput]) async throws(StoreSyncError) -> [PageResult]

    /// Records how a scope's crawl ended (its checkpoint state for this run).
    func finishScope(runID: Int64, source: String, scope: String, state: ScopeState, error: RunProblem?) throws(StoreSyncError)

    /// The guarded removal pass of one complete scope (Invariant 2), at most
    /// once per scope and run, atomically.
    func sweepScope(runID: Int64, source: String, scope: String, removal policy: RemovalPolicy) throws(StoreSyncError) -> RemovalResult

    /// Ends a scope the job no longer has (a dependent source's scope whose
    /// upstream record is gone or no longer selected): its records' sightings
    /// end at once, and its checkpoint goes.
    func retireScope(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> RemovalResult

    /// Enters the writer's first-load mode if the store is empty: pages new
    /// throughout are then written with no lookup per record (a backend may
    /// drop indexes to build them once at the end). Returns whether it did.
    func beginFirstLoad() throws(StoreSyncError) -> Bool

    /// Ends what ``beginFirstLoad()`` began.
    func endFirstLoad() throws(StoreSyncError)

    // MARK: Retention

    /// Deletes history older than `days` days before run `runID` (change-log
    /// rows, runs and their per-source counters) and hands the space back to
    /// the file system when enough of it is free (`retention:` in a job file).
    /// Age is counted in simulated nights when `runID` crawled one, otherwise
    /// on start times. Never pruned: `runID` itself and any run a resume
    /// needs (one still running, or whose exports are owed); never touched:
    /// records, scopes, checkpoints and other live state.
    func pruneHistory(olderThan days: Int, before runID: Int64) throws(StoreSyncError) -> PruneResult

    // MARK: Dependent sources

    /// The records a dependent source starts from: those of `source` (of the
    /// given entities, all when empty) that exist now, or only those added or
    /// changed by `runID` plus those `consumer` still owes work from earlier
    /// runs (``setPendingInputs(consumer:_:)``), in entity then key order.
    /// With `fields`, each record carries only those members of its payload.
    func inputRecords(source: String, entities: [EntityKind], selection: InputSelection,
                      runID: Int64, consumer: String, fields: [String]) throws(StoreSyncError) -> [Catalog.Record]

    /// The upstream records `consumer` selects again next run until it has
    /// done their work. Replaces the previous list.
    func setPendingInputs(consumer: String, _ identities: [RecordIdentity]) throws(StoreSyncError)

    // MARK: Reads for status and reports

    /// One run by id.
    func run(_ id: Int64) throws(StoreSyncError) -> RunRow?

    /// The most recent runs, newest first.
    func runs(limit: Int) throws(StoreSyncError) -> [RunRow]

    /// Every run up to and including `runID`, oldest first, each with its
    /// per-source counters summed (nil for a run that stored none).
    func runSummaries(through runID: Int64) throws(StoreSyncError) -> [RunSummary]

    /// Per-source counters of a run, in source-name order.
    func sourceCounts(runID: Int64) throws(StoreSyncError) -> [SourceCounts]

    /// Per source and entity: the records `runID` added, changed and removed
    /// (records, not field changes) and the records held now.
    func entityTallies(runID: Int64) throws(StoreSyncError) -> [EntityTally]

    /// Every scope's checkpoint, by source and scope.
    func scopeStates() throws(StoreSyncError) -> [ScopeRow]

    /// How many records of `entity` the store holds now.
    func recordCount(of entity: EntityKind) throws(StoreSyncError) -> Int

    // MARK: Reads for exports

    /// The entities present, in name order.
    func entities() throws(StoreSyncError) -> [EntityKind]

    /// The sources that hold records-file rows (entity `record`), in name order.
    func recordSources() throws(StoreSyncError) -> [String]

    /// Streams the current records of `entity` in `order`, each with the
    /// `columns` read from its payload (``ProjectedRecord/values``, one per column).
    func forEachRecord(of entity: EntityKind, columns: [ExportColumn], order: RecordOrder,
                       _ body: (ProjectedRecord) throws -> Void) throws

    /// ``forEachRecord(of:columns:order:_:)`` without making a String: each
    /// record's source, key and payload as the store's bytes, for writers
    /// that copy them to a file.
    func forEachRecordBytes(of entity: EntityKind, order: RecordOrder,
                            _ body: (StoredRecordBytes) throws -> Void) throws

    /// Streams the change log, of one run or (nil) of every run, in `order`.
    func forEachChange(runID: Int64?, order: ChangeOrder, _ body: (ChangeRow) throws -> Void) throws

    /// Streams every entity of `entity` with its versions (``EntityHistory``):
    /// those held now and those the log says were removed, in key order (byte
    /// order). `runs`: the change log of these runs only (nil: all it keeps);
    /// the versions before them fold into one ``VersionEvent/baseline``.
    func forEachEntityHistory(of entity: EntityKind, runs: [Int64]?, _ body: (EntityHistory) throws -> Void) throws

    /// How many held entities of `entity` name, in their text `field`, a key
    /// (not empty) that no held `target` entity has: the orphans a link from
    /// `field` to `target`'s key would have.
    func unlinkedCount(of entity: EntityKind, field: String, target: EntityKind) throws(StoreSyncError) -> Int

    /// One entity's versions, from all the change log keeps; nil when the
    /// store neither holds it nor logged it.
    func entityHistory(of entity: EntityKind, key: String) throws(StoreSyncError) -> EntityHistory?

    /// Streams the records a feed lists, in the feed's order, at most `limit`
    /// of them (nil: all; SQLite then sorts only what it keeps). `body`
    /// returns false to stop reading: memory follows the feed, not the store.
    func forEachFeedRecord(_ query: FeedQuery, limit: Int?, _ body: (FeedRecord) throws -> Bool) throws

    /// ``latestDecreases(of:field:)`` streamed, at most `limit`; `body` returns false to stop.
    func forEachDecrease(of entity: EntityKind, field: String, limit: Int?, _ body: (FieldDecrease) throws -> Bool) throws

    /// ``changesWithRecords(runID:)`` streamed (a record's rows are consecutive); `body` returns false to stop.
    func forEachChangeWithRecord(runID: Int64, _ body: (ChangeWithRecord) throws -> Bool) throws

    /// Records of `entities` newest first by the payload member `field`
    /// (ISO 8601 text), ties by entity then key.
    func recordsNewestFirst(_ entities: [EntityKind], by field: String) throws(StoreSyncError) -> [FeedRecord]

    /// Records of `entity`, those added by the latest run first, then newest
    /// first by the payload member `field`, then by key; each with the start
    /// of the run that added it. What the store's first run (its baseline)
    /// added is left out: it was there before, not new (Invariant 10).
    func recordsNewestAdded(_ entity: EntityKind, thenBy field: String) throws(StoreSyncError) -> [FeedRecord]

    /// The latest change of `field` of each `entity` record still held, where
    /// it went down (compared as numbers): latest run first, then by key.
    func latestDecreases(of entity: EntityKind, field: String) throws(StoreSyncError) -> [FieldDecrease]

    /// The entries of one chart (payload member `chart`), in rank order:
    /// country, genre, rank, key.
    func chartEntries(chart: String) throws(StoreSyncError) -> [FeedRecord]

    /// The entities of kind `entity` with these keys (those that exist), in key order:
    /// what a feed looks up about the items it lists (an episode's podcast).
    func entitiesByKey(_ entity: EntityKind, keys: [String]) throws(StoreSyncError) -> [FeedRecord]

    /// The change log of `runID` with each record's current payload (nil once
    /// removed), by source, entity, key and field; empty for the store's
    /// first run (its baseline), whose log is the whole catalogue added.
    func changesWithRecords(runID: Int64) throws(StoreSyncError) -> [ChangeWithRecord]

    /// Throws when the store this object writes is no longer the one at its
    /// location: its file removed or replaced under a run. SQLite in WAL mode
    /// goes on writing an unlinked file without an error, so a run that lost
    /// its store would otherwise end ok and the next night start over.
    func checkInPlace() throws(StoreSyncError)

    /// A SQLite file holding the store's tables as they are now: the store
    /// itself on SQLite, a consistent copy of it on PostgreSQL (``AsOfSnapshot`` reads it).
    func snapshotFile() throws -> String
}

extension SnapshotStore {
    /// ``finishRun(_:status:message:at:exportsFollow:)`` for a run whose exports are not pending.
    public func finishRun(_ runID: Int64, status: RunStatus, message: String?, at date: Date) throws(StoreSyncError) {
        try finishRun(runID, status: status, message: message, at: date, exportsFollow: false)
    }
}

extension SnapshotStore {
    /// ``prepareEntities(_:fingerprint:)`` without a fingerprint: the mappings are what the store last used.
    public func prepareEntities(_ mappings: [String: SourceMapping]) throws(StoreSyncError) {
        try prepareEntities(mappings, fingerprint: nil)
    }
}
