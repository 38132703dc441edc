import Catalog
import Foundation
import Synchronization

/// The ``SnapshotStore`` over SQL tables: one SQLite file in WAL mode
/// (GRDB), the embedded default, or one PostgreSQL database shared by a
/// fleet of workers. The logic is written once, over ``SQLSession`` and
/// ``SQLEngine``; where an engine has a faster way (SQLite's prepared inserts
/// for a first load, its digest read), its session offers it, and each
/// engine opens itself (``SQLiteEngine/open(_:readOnly:)``, ``PostgresBackend``).
///
/// Its tables, SQL and column types (rowids, hashes stored as signed
/// integers) stay in this target; everything else reads and writes it
/// through the protocol.
package final class SQLSnapshotStore: SnapshotStore {
    /// The database file, or the PostgreSQL URL without its password: names the store in messages.
    package let path: String
    /// Where the tables are: SQLite's pool or a PostgreSQL database.
    let engine: any SQLEngine
    /// Keys seen in the current run, per source: dedup within a run and the
    /// input of the removal pass. Rebuilt from `run_pages` when a run resumes.
    let seen = Mutex<[String: SeenKeys]>([:])
    /// Per source, what each record the current run changed held when the
    /// run began (its hash): a later version of it in the same run is
    /// counted against that (``BatchWrites/starts``). Records the run added
    /// are not kept: the store says so (`added_run`).
    let runStarts = Mutex<(runID: Int64, bySource: [String: [RecordIdentity: Int64]])>((0, [:]))
    /// The first `records` rowid this process can have inserted in a run:
    /// the largest stored plus one when its first write of the run began (ids
    /// are numbered that way on both engines, and this store is the one
    /// writer). A record at or past it was added by the run, which a later
    /// version of it in the same run needs to know (it counts as added): known
    /// here, not asked of the store once per record. Below it, the store is
    /// asked (a resumed run's, or another worker's, additions).
    let runRowidFloor = Mutex<(runID: Int64, floor: Int64)?>(nil)
    /// Each source's stored digests, read on first use and kept in step with
    /// every write this store makes (it is the only writer: the run lock).
    private let digestIndexes = Mutex<[String: DigestIndex]>([:])
    /// Per source, the records a run has not seen, grouped by scope, found at
    /// its first sweep (``unseenMembers(_:runID:source:scope:seen:)``).
    let unseenByScope = Mutex<[String: (runID: Int64, byScope: [String: [RecordIdentity]]?)]>([:])
    /// How each source of the run maps into the canonical model (``prepareEntities(_:)``).
    let mappings = Mutex<[String: SourceMapping]>([:])
    /// On PostgreSQL, the SQLite copy an as-of export reads, with the
    /// engine's write count it was taken at (``snapshotFile()``).
    let mirror = Mutex<(writes: Int, store: SQLSnapshotStore, discard: @Sendable () -> Void)?>(nil)
    /// The claims that fence every write of a scope, once a fleet's worker
    /// wraps this store (``StagingFleetStore``); nil otherwise.
    private let claimFences = Mutex<ClaimFences?>(nil)
    /// Set while a first load into the empty store runs (``beginFirstLoad()``).
    let firstLoad = Mutex<FirstLoadState?>(nil)
    /// How many pages this store wrote in the first-load mode (a test reads it).
    package let firstLoadPages = Atomic<Int>(0)
    /// How many records this store mapped by parsing their payload text
    /// again, rather than from the fields their decoder produced: zero on a
    /// night's data path (decode once). A test reads it; records replayed
    /// from a fleet's staged log are parsed here once, in the process that
    /// applies them.
    package let payloadParses = Atomic<Int>(0)
    /// The store's first run: its added entities log no values (the entities
    /// table is exactly what it added, and a million-row baseline would double
    /// the file). Decided by the run, not by how it went, so a resumed first
    /// run logs what an uninterrupted one would.
    let baselineRun = Mutex<Int64?>(nil)
    /// The `store_meta` entry naming the store's first run (its baseline); absent
    /// in stores begun before it was kept, whose first night is long past.
    static let baselineRunKey = "baseline_run"
    /// SQL true for a row whose `column` is the baseline run's id.
    static func isBaseline(_ column: String) -> String {
        // The run id cast to text rather than every value to a number: PostgreSQL would cast other rows' values too, and fail on text.
        "EXISTS (SELECT 1 FROM store_meta WHERE name = '\(baselineRunKey)' AND value = CAST(\(column) AS TEXT))"
    }

    /// Opens (creating if needed) the store at `path` and brings its schema up to date.
    package convenience init(path: String) throws(StoreSyncError) {
        try self.init(path: path, readOnly: false)
    }

    /// Opens the SQLite store at `path` (``SQLiteEngine/open(_:readOnly:)``).
    /// Read-only, it must exist and is never written to, not even to migrate
    /// it: a store whose schema is older (or newer) than this storesync is
    /// refused with a message saying so, since upgrading it is the next run's
    /// job, under the run lock.
    package convenience init(path: String, readOnly: Bool) throws(StoreSyncError) {
        self.init(name: path, engine: try SQLiteEngine.open(path, readOnly: readOnly))
    }

    package func checkInPlace() throws(StoreSyncError) {
        try engine.checkInPlace()
    }

    /// A store over `engine`'s tables, which the caller has brought up to date.
    init(name: String, engine: any SQLEngine) {
        path = name
        self.engine = engine
    }

    deinit {
        mirror.withLock { $0?.discard() }
    }

    /// The store as a SQLite file, for an as-of export to attach: this one on
    /// SQLite; on PostgreSQL a SQLite copy of it, taken in one consistent read
    /// and again once anything was written since.
    package func snapshotFile() throws -> String { try engine.sqliteSnapshot(of: self).path }

    /// Whether a SQLite copy of this store was taken (on PostgreSQL, for an
    /// as-of export only): the other reads stream from the store itself.
    package var holdsSQLiteCopy: Bool { mirror.withLock { $0 != nil } }

    /// Statements this store's writer has sent to its server (nil for an
    /// engine in the process): what a page costs in round trips, which tests bound.
    package var statementsSent: Int? { engine.statementsSent }

    /// Sets one `store_meta` entry.
    static func setMeta(_ db: any SQLSession, _ name: String, _ value: String) throws {
        try db.execute("""
            INSERT INTO store_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value
            """, [name, value])
    }

    /// A write transaction whose wait is not on a thread of the cooperative
    /// pool: GRDB's writer queue on SQLite, the engine's own thread on PostgreSQL.
    func writeAwaiting<T: Sendable>(_ body: @escaping @Sendable (any SQLSession) throws -> T) async throws -> T {
        try await engine.writeAwaiting(body)
    }

    /// Fences this store's writes by a fleet worker's claims: each write of a
    /// scope then checks, in its own transaction, that the worker still holds
    /// the scope's claim (or its source's), and fails otherwise. The store's
    /// logic is the same either way; only who may commit changes.
    func fence(with fences: ClaimFences) {
        claimFences.withLock { $0 = fences }
    }

    /// Within a write transaction: fails unless the claim fencing
    /// `source`/`scope` is still held, and renews it; nothing to check outside a fleet.
    func checkFence(_ db: any SQLSession, source: String, scope: String) throws {
        try claimFences.withLock({ $0 })?.check(db, source: source, scope: scope)
    }

    @discardableResult
    func wrap<T>(_ body: () throws -> T) throws(StoreSyncError) -> T {
        do {
            return try body()
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: path, reason: "\(error)", cause: error)
        }
    }

    /// ``wrap(_:)`` for a body that awaits.
    @discardableResult
    func wrap<T>(_ body: () async throws -> T) async throws(StoreSyncError) -> T {
        do {
            return try await body()
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: path, reason: "\(error)", cause: error)
        }
    }

    // MARK: Runs

    /// Starts a run, or resumes the last one if it never finished (it was killed).
    ///
    /// The simulated night advances only after a run that finished: a resumed
    /// run crawls the night it started, so it converges to what an
    /// uninterrupted run would have stored.
    /// A run whose crawl finished but whose exports did not (killed while
    /// exporting, or an export failed) is resumed too, by exporting only,
    /// unless `resumeExports` is false (a dry run crawls the next night).
    package func beginRun(job: String, at date: Date, simulated: Bool, night requestedNight: Int? = nil,
                         resumeExports: Bool = true) throws(StoreSyncError) -> RunInfo {
        let info: RunInfo = try wrap {
            try engine.write { db in
                try Self.beginRun(db, job: job, at: date, simulated: simulated, night: requestedNight, resumeExports: resumeExports)
            }
        }
        try runBegun(info)
        return info
    }

    /// What a store holds in memory for a run it begins or joins: the keys
    /// its committed pages saw, and which run is the store's baseline.
    func runBegun(_ info: RunInfo) throws(StoreSyncError) {
        try loadSeen(runID: info.id)
        let first = try wrap { try engine.read { db in try db.value(as: Int64.self, "SELECT min(id) FROM runs") } }
        baselineRun.withLock { $0 = first }
    }

    /// ``beginRun(job:at:simulated:night:resumeExports:)`` within a transaction.
    static func beginRun(_ db: any SQLSession, job: String, at date: Date, simulated: Bool, night requestedNight: Int?,
                         resumeExports: Bool) throws -> RunInfo {
                let last = try db.row("SELECT id, night, status, crawl_status, exported, started_at FROM runs ORDER BY id DESC LIMIT 1")
                let sameNight = requestedNight == nil || requestedNight == last?["night"]
                if let last, last["status"] as String == RunStatus.running.rawValue, sameNight {
                    let id: Int64 = last["id"]
                    // Running again: how the last attempt stopped is history (a kill now leaves NULL: killed).
                    try db.execute("UPDATE runs SET attempts = attempts + 1, stopped = NULL WHERE id = ?", [id])
                    return RunInfo(id: id, night: last["night"], resumed: true,
                                   startedAt: Date(timeIntervalSince1970: last["started_at"]))
                }
                if resumeExports, let last, last["exported"] as Int == 0, sameNight {
                    let id: Int64 = last["id"]
                    try db.execute("UPDATE runs SET attempts = attempts + 1 WHERE id = ?", [id])
                    let crawl = (last["crawl_status"] as String?).flatMap(RunStatus.init(rawValue:)) ?? .failed
                    return RunInfo(id: id, night: last["night"], resumed: true,
                                   startedAt: Date(timeIntervalSince1970: last["started_at"]), exportOnly: true, crawlStatus: crawl)
                }
                if let last, last["status"] as String == RunStatus.running.rawValue {
                    // A different night was asked for: the unfinished run is abandoned.
                    try db.execute("UPDATE runs SET status = 'failed', message = 'abandoned: a later run asked for another night' WHERE id = ?",
                                   [last["id"] as Int64])
                }
                var night: Int? = requestedNight
                if night == nil, simulated {
                    let lastNight: Int? = last?["night"]
                    let lastCrawl: String? = last?["crawl_status"] ?? last?["status"]
                    night = lastCrawl == RunStatus.failed.rawValue ? (lastNight ?? 1) : (lastNight ?? 0) + 1
                }
                let id = try db.insert("INSERT INTO runs (job, night, started_at, status, exported) VALUES (?, ?, ?, 'running', 0)",
                                       [job, night, date.timeIntervalSince1970], returning: "id")
                if last == nil {
                    // A new store's first run is its baseline: everything it finds was
                    // there before, not news, so the new-items feeds leave it out.
                    // Kept by name, since retention may prune the run itself.
                    try Self.setMeta(db, Self.baselineRunKey, String(id))
                }
                return RunInfo(id: id, night: night, resumed: false, startedAt: date)
    }

    /// The memo of a page's last stored answer, if any.
    package func pageMemo(source: String, scope: String, page: Int) throws(StoreSyncError) -> PageMemo? {
        try wrap {
            try engine.readStatement { db in
                guard let row = try db.row("""
                    SELECT url, etag, last_modified, body_hash, row_count, has_next, keys FROM page_memos
                    WHERE source = ? AND scope = ? AND page = ?
                    """, [source, scope, page]) else { return nil }
                var memo = PageMemo(url: row["url"], etag: row["etag"], lastModified: row["last_modified"],
                                    bodyHash: ContentHash(sqliteValue: row["body_hash"]), rowCount: row["row_count"],
                                    hasNext: row["has_next"])
                memo.keyList = row["keys"]
                return memo
            }
        }
    }

    static func identities(_ keyList: String) -> [RecordIdentity] {
        keyList.split(separator: "\n").compactMap { (line: Substring) -> RecordIdentity? in
            guard let tab = line.firstIndex(of: "\t"), let entity = EntityKind(rawValue: String(line[..<tab])) else { return nil }
            return RecordIdentity(entity: entity, key: String(line[line.index(after: tab)...]))
        }
    }

    func loadSeen(runID: Int64) throws(StoreSyncError) {
        let pages = try wrap {
            try engine.read { db in
                try db.rows("SELECT source, keys FROM run_pages WHERE run_id = ?", [runID])
                    .map { ($0["source"] as String, $0["keys"] as String) }
            }
        }
        var sets: [String: SeenKeys] = [:]
        for (source, keys) in pages {
            // Marked by position in the source's index if it was read already; else rebased at the next page.
            var set = sets[source] ?? SeenKeys(index: digests(of: source))
            _ = set.insert(Self.identities(keys))
            sets[source] = set
        }
        seen.withLock { $0 = sets }
    }

    func seenSnapshot(source: String) -> SeenKeys {
        seen.withLock { $0[source] ?? SeenKeys(index: digests(of: source)) }
    }

    /// Records the run's request counters, duration and messages for reports.
    package func recordTotals(_ runID: Int64, _ totals: RunTotals) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try db.execute("""
                    UPDATE runs SET requests = ?, retries = ?, throttled = ?, not_modified = ?, failures = ?,
                        seconds = ?, warnings = ?, errors = ? WHERE id = ?
                    """, [totals.requests.requests, totals.requests.retries, totals.requests.throttled, totals.requests.notModified, totals.requests.failures,
                                     totals.seconds, Self.jsonList(totals.warnings.map(\.json)), Self.jsonList(totals.errors.map(\.json)), runID])
            }
        }
    }

    static func jsonList(_ items: [String]) -> String {
        CanonicalJSON.string(.array(items.map(JSONValue.string)))
    }

    static func jsonList(_ items: [JSONValue]) -> String {
        CanonicalJSON.string(.array(items))
    }

    /// Records how the crawl ended. With `exportsFollow`, the run counts as
    /// finished only once ``markExported(_:message:status:)`` says its exports are
    /// written too; until then the next start resumes it by exporting.
    package func finishRun(_ runID: Int64, status: RunStatus, message: String?, at date: Date,
                          exportsFollow: Bool) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try db.execute("UPDATE runs SET status = ?, crawl_status = ?, message = ?, finished_at = ?, exported = ? WHERE id = ?",
                               [status.rawValue, status.rawValue, message, date.timeIntervalSince1970,
                                           exportsFollow ? 0 : 1, runID])
                // A baseline run logs its additions without values: nothing to settle.
                if baselineRun.withLock({ $0 }) != runID { try Self.settleAdditions(db, runID: runID) }
                // The page key lists only serve a resume of this run.
                try db.execute("DELETE FROM run_pages WHERE run_id <= ?", [runID])
            }
        }
        seen.withLock { $0 = [:] }
        unseenByScope.withLock { $0 = [:] }
    }

    /// Sets what each entity the run added holds in the log's `added` line
    /// (`after`) to what the run leaves, where the run met it again in
    /// another version after adding it (``EntityWriter``: an entity the run
    /// added is refined, not changed). Once per run, over the run's additions
    /// alone, rather than an update of the log per sighting: the log has no
    /// index by key for additions, and a night of many storefronts meets most
    /// new entities several times.
    static func settleAdditions(_ db: any SQLSession, runID: Int64) throws {
        try db.execute("""
            UPDATE changes SET after = (SELECT e.fields FROM entities e WHERE e.entity = changes.entity AND e.key = changes.key)
            WHERE run_id = ? AND op = 'added' AND after IS NOT NULL
                AND after <> (SELECT e.fields FROM entities e WHERE e.entity = changes.entity AND e.key = changes.key)
            """, [runID])
    }

    /// An export failed: the run says so, and the next start retries the exports (not the crawl).
    package func markExportFailed(_ runID: Int64, message: String) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try db.execute("UPDATE runs SET status = 'failed', message = ? WHERE id = ?", [message, runID])
            }
        }
    }

    package func lowerStatus(_ runID: Int64, to status: RunStatus) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in try db.execute("UPDATE runs SET status = ? WHERE id = ?", [status.rawValue, runID]) }
        }
    }

    package func markStopped(_ runID: Int64, stopped: String, message: String) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try db.execute("UPDATE runs SET message = ?, stopped = ? WHERE id = ? AND status = 'running'", [message, stopped, runID])
            }
        }
    }

    /// Every export of the run is written: the run is done, with its crawl's verdict as its status.
    package func markExported(_ runID: Int64, message: String?, status: RunStatus? = nil) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try db.execute("UPDATE runs SET exported = 1, status = COALESCE(?, crawl_status, status), message = ? WHERE id = ?",
                               [status?.rawValue, message, runID])
            }
        }
    }

    /// The scope's checkpoint within `runID`, or nil if this run has not touched it.
    package func checkpoint(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> ScopeCheckpoint? {
        try wrap { try engine.read { db in try Self.snapshotCheckpoint(db, runID: runID, source: source, scope: scope) } }
    }

    /// The scope's checkpoint as the snapshot's pages left it (`scopes`), within `db`.
    static func snapshotCheckpoint(_ db: any SQLSession, runID: Int64, source: String, scope: String) throws -> ScopeCheckpoint? {
        try db.row("SELECT state, next_page FROM scopes WHERE source = ? AND scope = ? AND run_id = ?", [source, scope, runID])
            .map { ScopeCheckpoint(state: ScopeState(rawValue: $0["state"]) ?? .failed, nextPage: $0["next_page"]) }
    }

    // MARK: Pages

    /// The digest index of `source`, read within `db` the first time.
    func digestIndex(_ db: any SQLSession, source: String) throws -> DigestIndex {
        if let index = digestIndexes.withLock({ $0[source] }) { return index }
        let index = try DigestIndex.load(db, source: source)
        digestIndexes.withLock { $0[source] = index }
        return index
    }

    /// `source`'s digest index, read in a transaction of its own only the first
    /// time: on PostgreSQL an empty read is still two round trips (BEGIN,
    /// COMMIT), which every page paid for an index already held.
    func digestIndex(source: String) throws(StoreSyncError) -> DigestIndex {
        if let index = digests(of: source) { return index }
        return try wrap { try engine.read { db in try digestIndex(db, source: source) } }
    }

    /// Drops `source`'s digest index: other workers wrote the source since it was read.
    func forgetDigests(source: String) {
        digestIndexes.withLock { $0[source] = nil }
    }

    /// The digest index of `source` if it was read already.
    func digests(of source: String) -> DigestIndex? {
        digestIndexes.withLock { $0[source] }
    }

    /// `identities` were just written to `source`'s digest index: its seen
    /// keys among them are marked by position from now on (``SeenKeys/absorbIndexed(_:)``).
    func seenKeysIndexed(_ source: String, _ identities: [RecordIdentity]) {
        guard !identities.isEmpty else { return }
        seen.withLock { sets in sets[source]?.absorbIndexed(identities) }
    }

    /// What the store holds of `source`'s rows, for a decoder to recognise
    /// unchanged rows by their bytes. Safe to use while pages are applied.
    package func rowMemory(source: String) throws(StoreSyncError) -> any RowMemory {
        let index = try digestIndex(source: source)
        // The first load's source, or the first to come (``mayLoad(_:)`` takes the first to apply a page).
        let loading = firstLoad.withLock { state in state.map { $0.source == nil || $0.source == source } ?? false }
        return StoredRowMemory(index: index, isFirstLoad: loading)
    }

    /// Whether every row recognised by a decoder is still stored from those
    /// very bytes. False only when a page applied since the decoder looked
    /// wrote one of them (the same key twice in one run); the page must then
    /// be decoded in full.
    package func stillHolds(source: String, rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> Bool {
        guard let index = digests(of: source) else { return rows.isEmpty }
        return index.stillHolds(rows)
    }

    /// Diffs a page against the stored hashes and, in one transaction, writes
    /// only added and changed records, their field-level changes, the page's
    /// key list and the scope's checkpoint. Unchanged records cost no write.
    package func apply(_ page: PageInput) async throws(StoreSyncError) -> PageResult {
        try await apply([page])[0]
    }

    /// Applies consecutive pages of one source, in order, in one transaction:
    /// each exactly as ``apply(_:)`` would, a later page comparing against
    /// what an earlier one wrote, and the last page's checkpoint the one a
    /// resume sees. A kill loses the whole batch or none of it.
    package func apply(_ pages: [PageInput]) async throws(StoreSyncError) -> [PageResult] {
        try await applyNow(pages)
    }

    /// ``apply(_:)`` into the snapshot itself; `alongside` runs in the same
    /// transaction (a replay deleting the pages it applied from its log).
    func applyNow(_ pages: [PageInput],
                  alongside: (@Sendable (any SQLSession) throws -> Void)? = nil) async throws(StoreSyncError) -> [PageResult] {
        guard let batch = try preparedBatch(pages, alongside: alongside) else { return [] }
        return try await commit(batch)
    }

    /// A batch of pages made ready to write: what ``applyNow(_:alongside:)``
    /// computes before its transaction.
    struct PreparedBatch: Sendable {
        fileprivate let pages: [PageInput]
        fileprivate let transaction: @Sendable (any SQLSession) throws -> ([PageResult], BatchWrites)
    }

    /// The first half of ``applyNow(_:alongside:)``: each page's records
    /// deduplicated against the run's seen keys and mapped, on every core.
    ///
    /// It may run while the batch before it commits (a fleet's replay
    /// overlaps the two): the transaction it returns compares every record
    /// against the digests as they are when it runs, so a record this
    /// looked up before the earlier batch committed is mapped again there
    /// if it has to be, and its seen keys were marked in page order.
    func preparedBatch(_ pages: [PageInput],
                       alongside: (@Sendable (any SQLSession) throws -> Void)? = nil) throws(StoreSyncError) -> PreparedBatch? {
        guard let source = pages.first?.source else { return nil }
        precondition(pages.allSatisfy { $0.source == source }, "a batch of pages is of one source")
        var prepared: [PreparedPage] = []
        for page in pages { prepared.append(try prepare(page)) }
        let steps = prepared
        let scopes = pages.reduce(into: [String]()) { if !$0.contains($1.scope) { $0.append($1.scope) } }
        @Sendable func transaction(_ db: any SQLSession) throws -> ([PageResult], BatchWrites) {
            // Within the batch, a later row with the key of an earlier one compares against what that row wrote.
            var written = BatchWrites()
            var results: [PageResult] = []
            // A fleet's claim, once per scope: its row stays locked by this transaction until it
            // commits, so checking it again before each page asked the server the same question.
            for scope in scopes { try checkFence(db, source: source, scope: scope) }
            // On a server, the entity rows of the whole batch are read at once, before its first
            // write: no page then waits for a read, so its writes queue behind the page before's and
            // go out as a few statements for the batch (per page they were a dozen, each awaited).
            let entityRows = db.dialect.statementsAreRoundTrips ? EntityRowCache() : nil
            try entityRows?.prefetch(steps.lazy.flatMap(\.entities), in: db)
            for step in steps { results.append(try step.write(db, &written, entityRows)) }
            try written.pages.write(db)
            try alongside?(db)
            // Renewed again at the commit: a batch that took longer than a lease
            // commits with its claim alive from now, not from when it began.
            try checkFence(db, source: source, scope: pages[0].scope)
            return (results, written)
        }
        return PreparedBatch(pages: pages, transaction: transaction)
    }

    /// The second half of ``applyNow(_:alongside:)``: the batch's
    /// transaction, then what this process holds of the source follows it.
    func commit(_ batch: PreparedBatch) async throws(StoreSyncError) -> [PageResult] {
        let pages = batch.pages, source = pages[0].source
        let results: [PageResult]
        let written: BatchWrites
        do {
            (results, written) = try await writeAwaiting(batch.transaction)
        } catch {
            let what = pages.count == 1 ? "page \(pages[0].page)" : "pages \(pages[0].page)–\(pages[pages.count - 1].page)"
            throw .storage(path: path, reason: "applying \(what) of \(source)/\(pages[0].scope): \(error)")
        }
        // Committed: the index follows, and the seen keys it now holds become bits.
        digests(of: source)?.update(written.digests.map { ($0.key, $0.value) })
        seenKeysIndexed(source, Array(written.digests.keys))
        if !written.starts.isEmpty {
            runStarts.withLock { state in
                if state.runID != pages[0].runID { state = (pages[0].runID, [:]) }
                state.bySource[source, default: [:]].merge(written.starts) { first, _ in first }
            }
        }
        return results
    }

    /// ``runRowidFloor`` for `runID`, read within `db` at this process's first write of the run.
    func runRowidFloor(_ db: any SQLSession, runID: Int64) throws -> Int64 {
        if let known = runRowidFloor.withLock({ $0 }), known.runID == runID { return known.floor }
        let floor = (try db.value(as: Int64.self, "SELECT max(rowid) FROM records") ?? 0) + 1
        runRowidFloor.withLock { $0 = (runID, floor) }
        return floor
    }

    /// What a record held when `runID` began, if the run changed it in a committed batch.
    private func runStart(_ runID: Int64, _ source: String, _ identity: RecordIdentity) -> Int64? {
        runStarts.withLock { $0.runID == runID ? $0.bySource[source]?[identity] : nil }
    }

    /// A page's records as the store takes them: the last version of each
    /// key (issue 13: a page that lists a key twice, in two versions, would
    /// otherwise write it twice and log a change from one to the other every
    /// night), with whether that key was seen before the page (`repeated`,
    /// as ``prepare(_:)`` marked each row in page order), and how many rows
    /// gave way to a later one of their key.
    static func lastOfEachKey(_ records: [Catalog.Record], repeated: [Bool])
        -> (records: [Catalog.Record], repeated: [Bool], superseded: Int) {
        // A key twice in a page makes its second row a repeat: a page without one has none.
        guard repeated.contains(true) else { return (records, repeated, 0) }
        var last: [RecordIdentity: (position: Int, repeated: Bool)] = [:]
        last.reserveCapacity(records.count)
        for (position, record) in records.enumerated() {
            // Seen before the page only if its first row in the page was a repeat.
            last[record.identity] = (position, last[record.identity]?.repeated ?? repeated[position])
        }
        guard last.count < records.count else { return (records, repeated, 0) }
        var kept: [Catalog.Record] = [], keptRepeated: [Bool] = []
        kept.reserveCapacity(last.count)
        keptRepeated.reserveCapacity(last.count)
        for (position, record) in records.enumerated() {
            guard let winner = last[record.identity], winner.position == position else { continue }
            kept.append(record)
            keptRepeated.append(winner.repeated)
        }
        return (kept, keptRepeated, records.count - kept.count)
    }

    /// A page made ready to write (``prepare(_:)``).
    struct PreparedPage: Sendable {
        /// The entity rows its records may merge into, as the digests said
        /// before the batch: read for the whole batch at once, on a server.
        let entities: [(entity: EntityKind, key: String)]
        /// Writes it, in the batch's transaction, with the entity rows the batch read or wrote so far.
        let write: @Sendable (any SQLSession, inout BatchWrites, EntityRowCache?) throws -> PageResult
    }

    /// What ``apply(_:)`` does before its transaction (marking the page's keys
    /// seen, mapping the records it will write), and the step that writes the
    /// page within it. A page of a first load that is new throughout is
    /// written in that mode (FirstLoad.swift): nothing looked up, every record
    /// and entity inserted.
    private func prepare(_ page: PageInput) throws(StoreSyncError) -> PreparedPage {
        let index = try digestIndex(source: page.source)
        let mapping = mapping(for: page.source)
        let loading = try firstLoadPage(page, mapping)
        // Dedup against what this run already saw; content that differs from a
        // sighting earlier in the run (drift) still goes through, the last
        // version sighted being the record, counted against the run's start.
        // The page's keys are marked seen here, one probe each: a key met
        // before, on an earlier page or earlier on this one, is a repeat. Should
        // the page then fail, its keys stay marked, which can only keep a record
        // from removal (they were sighted), never remove one. A first-load page
        // claimed its keys, every one new.
        let (repeatedRow, repeatedUnchanged, repeatedRaw) = loading != nil
            ? ([Bool](repeating: false, count: page.records.count), [Bool](), [Bool]())
            : seen.withLock { sets in
                // Removed while in use: an update in place, never a copy of the set.
                var seenKeys = (sets.removeValue(forKey: page.source) ?? SeenKeys(index: index)).rebased(onto: index)
                defer { sets[page.source] = seenKeys }
                return (seenKeys.insert(page.records.map(\.identity)).map(!),
                        seenKeys.insert(page.unchangedKeys).map(!),
                        seenKeys.insert(page.rawUnchanged).map(!))
            }
        let (records, repeatedRecord, superseded) = Self.lastOfEachKey(page.records, repeated: repeatedRow)
        let logAddedValues = baselineRun.withLock { $0 } != page.runID
        // Records the diff will write are parsed and mapped before the write
        // transaction, on every core: the single writer only writes.
        let preStored = loading != nil ? [StoredDigest?](repeating: nil, count: records.count) : index.lookup(records.lazy.map(\.identity))
        let mapped: [MappedRecord?] = loading?.map(\.mapped) ?? ParallelChunks.map(records.count) { range in
            range.map { position -> MappedRecord? in
                if let stored = preStored[position], stored.hash == records[position].hash.sqliteValue { return nil }
                return MappedRecord(records[position], mapping, parses: payloadParses)
            }
        }.flatMap { $0 }
        var entityKeys: [(entity: EntityKind, key: String)] = []
        if loading == nil {
            for (position, record) in records.enumerated() {
                if let stored = preStored[position], stored.hash == record.hash.sqliteValue { continue }
                let canonical = mapped[position]?.canonical.entity ?? mapping.entity(of: record.entity)
                entityKeys.append((canonical, EntityWriter.entityKey(canonical, record.key, source: page.source)))
            }
        }
        return PreparedPage(entities: entityKeys) { [self] db, written, entityRows in
            var result = PageResult()
            let rowidFloor = try runRowidFloor(db, runID: page.runID)
            let index = try digestIndex(db, source: page.source)
            let insertSQL = "INSERT INTO records (\(Self.recordColumns.joined(separator: ", "))) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
            // Bound straight into a prepared statement where the engine has one: an added record's cost is mostly this.
            let preparedInsert = try db.preparedInsert(insertSQL)
            let entities = try EntityWriter(db, runID: page.runID, logAddedValues: logAddedValues, owns: ownership,
                                            allNew: loading != nil, cache: entityRows)
            func merge(_ record: Catalog.Record, _ mappedRecord: MappedRecord, at position: Int) throws {
                let sighting = Sighting(source: page.source, kind: record.entity, role: mapping.role(record.entity))
                // Read once a transaction, not once a page (a round trip each on PostgreSQL).
                if written.registry == nil { written.registry = try FieldRegistryWriter(db, source: page.source, runID: page.runID) }
                func note(_ mapped: MappedRecord) throws {
                    if let shape = mapped.shape {
                        try written.registry!.note(record.entity, shape: shape, order: record.fieldOrder, in: db)
                    } else {
                        try written.registry!.note(record.entity, mapped.fields, order: record.fieldOrder, in: db)
                    }
                }
                if let row = loading?[position] {
                    try entities.insert(sighting, entity: row.entity, key: row.entityKey, fieldsText: row.canonicalText,
                                        hash: row.canonicalHash)
                    try note(mappedRecord)
                } else if mappedRecord.wire != nil,
                          try entities.insertNew(sighting, key: record.key, entity: record.entity, fieldsText: record.payload,
                                                 hash: record.hash.sqliteValue) {
                    try note(mappedRecord)
                } else if let written = mappedRecord.decoderFields,
                          try entities.insertNew(sighting, key: record.key, entity: written.entity, fieldsText: written.text,
                                                 hash: written.hash.sqliteValue) {
                    try note(mappedRecord)
                } else {
                    // An entity row to merge into needs the fields themselves.
                    let full = mappedRecord.isBuilt ? mappedRecord : MappedRecord.decoded(record, mapping, parses: payloadParses)
                    try entities.upsert(sighting, key: record.key, canonical: full.canonical)
                    try note(full)
                }
            }
            let stored = loading != nil ? preStored : index.lookup(records.lazy.map(\.identity))
            // The entities this page will merge into, read at once (PostgreSQL: one query, not one per
            // record), where the batch's read did not have them: the digests it went by were read before
            // an earlier page of the batch, or a batch committed since it was prepared, changed the record.
            if db.dialect.statementsAreRoundTrips, loading == nil {
                var merging: [(entity: EntityKind, key: String)] = []
                for (position, (record, storedDigest)) in zip(records, stored).enumerated() {
                    if let current = written.digests[record.identity] ?? storedDigest, current.hash == record.hash.sqliteValue { continue }
                    let canonical = mapped[position]?.canonical.entity ?? mapping.entity(of: record.entity)
                    merging.append((canonical, EntityWriter.entityKey(canonical, record.key, source: page.source)))
                }
                try entities.prefetch(merging)
            }
            var keyList = ""
            keyList.reserveCapacity(32 * (page.records.count + page.rawUnchanged.count + page.unchangedKeys.count))
            func list(_ entity: EntityKind, _ key: String) {
                keyList.append(entity.rawValue)
                keyList.append("\t")
                keyList.append(key)
                keyList.append("\n")
            }
            // Every row, superseded ones too: the page replayed from its memo counts as it did decoded.
            for record in page.records { list(record.entity, record.key) }
            result.duplicates += superseded
            for (position, (record, storedDigest)) in zip(records, stored).enumerated() {
                let entity = record.entity.rawValue
                var digest = StoredDigest(hash: record.hash.sqliteValue, rawHash: record.rawHash?.sqliteValue, rowid: 0)
                guard let current = written.digests[record.identity] ?? storedDigest else {
                    let mappedRecord = mapped[position] ?? MappedRecord(record, mapping, parses: payloadParses)
                    let payload = Self.storedPayload(record, mappedRecord)
                    if let insert = preparedInsert {
                        insert.bind(1, page.source)
                        insert.bind(2, entity)
                        insert.bind(3, record.key)
                        insert.bind(4, page.scope)
                        insert.bind(5, digest.hash)
                        insert.bind(6, payload)
                        insert.bind(7, page.runID)
                        insert.bind(8, page.runID)
                        insert.bind(9, digest.rawHash)
                        digest.rowid = try insert.run()
                    } else {
                        digest.rowid = try db.queueInsert(
                            into: "records", columns: Self.recordColumns,
                            values: [page.source, entity, record.key, page.scope, digest.hash, payload,
                                     page.runID, page.runID, digest.rawHash], id: "rowid") ?? 0
                    }
                    result.recordRowsWritten += 1
                    try merge(record, mappedRecord, at: position)
                    written.digests[record.identity] = digest
                    result.added += 1
                    continue
                }
                if current.hash == digest.hash {
                    if repeatedRecord[position] { result.duplicates += 1 } else { result.unchanged += 1 }
                    continue
                }
                if repeatedRecord[position] {
                    // Met earlier in the run in another version (issue 13): the record is
                    // counted already, as what it was then against the start of the run;
                    // this version may move it between unchanged and changed.
                    result.duplicates += 1
                    let start = try written.starts[record.identity] ?? runStart(page.runID, page.source, record.identity)
                        ?? (current.rowid >= rowidFloor ? nil : Self.runStart(db, current, runID: page.runID))
                    if let start {
                        if start == current.hash {
                            written.starts[record.identity] = start
                            result.unchanged -= 1
                            result.changed += 1
                        } else if start == digest.hash {
                            result.changed -= 1
                            result.unchanged += 1
                        }
                    }
                } else {
                    written.starts[record.identity] = current.hash
                    result.changed += 1
                }
                digest.rowid = current.rowid
                let mappedRecord = mapped[position] ?? MappedRecord(record, mapping, parses: payloadParses)
                // The row is there (the digest index is the table's, kept in step): one row written.
                try db.queueUpdate("records", key: .integer("rowid"), current.rowid,
                                   set: [.integer("hash"), .text("payload"), .text("scope"), .integer("changed_run"), .integer("raw_hash")],
                                   [digest.hash, Self.storedPayload(record, mappedRecord), page.scope, page.runID, digest.rawHash])
                result.recordRowsWritten += 1
                written.digests[record.identity] = digest
                try merge(record, mappedRecord, at: position)
            }
            for (identity, repeated) in zip(page.rawUnchanged, repeatedRaw) {
                list(identity.entity, identity.key)
                if repeated { result.duplicates += 1 } else { result.unchanged += 1 }
            }
            for (identity, repeated) in zip(page.unchangedKeys, repeatedUnchanged) {
                list(identity.entity, identity.key)
                if repeated { result.duplicates += 1 } else { result.unchanged += 1 }
                result.unread += 1
            }
            // Its memo, key list, checkpoint and counters: written once for the batch, at its end.
            written.pages.add(page, keyList: keyList, result: result)
            return result
        }
    }

    static let recordColumns = ["source", "entity", "key", "scope", "hash", "payload", "added_run", "changed_run", "raw_hash"]

    /// What `records.payload` holds for `record`: its canonical JSON, or the
    /// empty text when that JSON is, byte for byte, the `fields` of the
    /// entity it is the one sighting of (a records-file row whose mapping
    /// keeps its fields as they are). Such a row's JSON is then stored once,
    /// in `entities`, not twice: at a million rows, half of what a load
    /// writes. ``recordPayloadSQL`` reads it back; an upgrade that rebuilds
    /// entities first puts it back in place (``restoreSharedPayloads(_:)``).
    static func storedPayload(_ record: Catalog.Record, _ mapped: MappedRecord) -> String {
        if let shape = mapped.wire {
            // Its canonical fields are its payload, and its entity its kind.
            return record.entity == .record && !shape.names.isEmpty ? "" : record.payload
        }
        return Self.sharesEntityFields(record, canonical: mapped.canonical, fields: mapped.fields) ? "" : record.payload
    }

    /// Whether `record`'s payload is the entity row's `fields` text (see ``storedPayload(_:_:)``).
    static func sharesEntityFields(_ record: Catalog.Record, canonical: CanonicalRecord, fields: [String: JSONValue]) -> Bool {
        // Only a records-file row's entity is its alone (keyed by its source):
        // any other may merge a second source's fields into its row.
        record.entity == .record && canonical.entity == .record && !fields.isEmpty && canonical.fields == fields
    }

    /// A `records` row's payload in SQL: the row's own, or its entity's fields
    /// when the row shares them (``storedPayload(_:_:)``).
    static let recordPayloadSQL = """
        CASE WHEN records.payload <> '' THEN records.payload ELSE (SELECT e.fields FROM entities e
            WHERE e.entity = records.entity AND e.key = records.source || ':' || records.key) END
        """

    /// Writes every shared payload back into its `records` row, before an
    /// upgrade re-derives the entities from the records (which would
    /// otherwise read an empty payload for them).
    static func restoreSharedPayloads(_ db: any SQLSession) throws {
        try db.execute("UPDATE records SET payload = \(recordPayloadSQL) WHERE payload = ''")
    }

    /// What a record met again in `runID`, not changed by a committed batch
    /// nor this one, held when the run began: what it holds now (`current`),
    /// unless the run wrote it: nil then, since it counts as added (the run
    /// added it, on a first load's path) or its start was lost with the
    /// process that changed it (a resumed run counts it changed).
    static func runStart(_ db: any SQLSession, _ current: StoredDigest, runID: Int64) throws -> Int64? {
        let written = try db.value(as: Int64.self, "SELECT CASE WHEN added_run = ? OR changed_run = ? THEN 1 ELSE 0 END FROM records WHERE rowid = ?",
                                   [runID, runID, current.rowid])
        return written == 1 ? nil : current.hash
    }

    static func addCounts(_ db: any SQLSession, runID: Int64, source: String, pages: Int = 0, requests: Int = 0,
                          added: Int = 0, changed: Int = 0, unchanged: Int = 0, removed: Int = 0,
                          skipped: Int = 0, seconds: Double = 0, recordWrites: Int = 0) throws {
        // One statement: on PostgreSQL every statement is a round trip, and this one runs for every page.
        try db.execute("""
            INSERT INTO run_sources (run_id, source, pages, requests, added, changed, unchanged, removed, skipped, seconds, record_writes)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (run_id, source) DO UPDATE SET
                pages = run_sources.pages + excluded.pages, requests = run_sources.requests + excluded.requests,
                added = run_sources.added + excluded.added, changed = run_sources.changed + excluded.changed,
                unchanged = run_sources.unchanged + excluded.unchanged, removed = run_sources.removed + excluded.removed,
                skipped = run_sources.skipped + excluded.skipped, seconds = run_sources.seconds + excluded.seconds,
                record_writes = run_sources.record_writes + excluded.record_writes
            """, [runID, source, pages, requests, added, changed, unchanged, removed, skipped, seconds, recordWrites])
    }

    /// Adds time and requests spent outside pages (e.g. a failed page) to a source's counters.
    package func addSourceTime(runID: Int64, source: String, requests: Int, seconds: Double) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try Self.addCounts(db, runID: runID, source: source, requests: requests, seconds: seconds)
            }
        }
    }
}

/// What the pages of a batch wrote, for the later pages of the batch and,
/// once committed, for the store.
struct BatchWrites: Sendable {
    /// The digest of each record written.
    var digests: [RecordIdentity: StoredDigest] = [:]
    /// What each record changed (not added) held when the run began.
    var starts: [RecordIdentity: Int64] = [:]
    /// The pages' memos, key lists, checkpoints and counters, written at the batch's end.
    var pages = PageBookkeeping()
    /// The source's field registry as the batch found and extended it.
    var registry: FieldRegistryWriter?
}

/// A record the diff will write, mapped into the canonical model.
struct MappedRecord: Sendable {
    var fields: [String: JSONValue]
    var canonical: CanonicalRecord
    /// Set when the record's payload is its canonical fields as they are (a
    /// record its decoder wrote straight to canonical bytes, of a kind its
    /// mapping keeps as it is): nothing was built, `fields` and
    /// `canonical.fields` are empty, and a writer that needs the fields
    /// themselves (to merge them into an entity row that exists) takes
    /// ``decoded(_:_:parses:)``.
    var wire: FieldShape?
    /// Set when the record's decoder wrote its entity's canonical fields
    /// (``Catalog/Record/entityFields``) and the mapping takes them: nothing
    /// was built, `fields` and `canonical.fields` are empty, and the record's
    /// wire shape (for the field registry) is `shape`.
    var decoderFields: EntityFields?
    var shape: FieldShape? { wire ?? (decoderFields != nil ? recordShape : nil) }
    private var recordShape: FieldShape?

    /// Maps `record`, counting in `parses` a record whose payload had to be
    /// parsed again (one rebuilt from text, not carrying its decoded fields).
    init(_ record: Catalog.Record, _ mapping: SourceMapping, parses: borrowing Atomic<Int>) {
        if let shape = record.shape, mapping.keepsWire(record.entity, shape) {
            fields = [:]
            canonical = CanonicalRecord(entity: record.entity, fields: [:])
            wire = shape
            return
        }
        if let shape = record.shape, let written = record.entityFields, mapping.entity(of: record.entity) == written.entity,
           mapping.takesDecoderFields(written) {
            fields = [:]
            canonical = CanonicalRecord(entity: written.entity, fields: [:])
            decoderFields = written
            recordShape = shape
            return
        }
        self = Self.decoded(record, mapping, parses: parses)
    }

    /// Whether the fields themselves were built (not a record's bytes taken as they are).
    var isBuilt: Bool { wire == nil && decoderFields == nil }

    private init(fields: [String: JSONValue], canonical: CanonicalRecord) {
        self.fields = fields
        self.canonical = canonical
    }

    /// `record` mapped from its fields, built (and counted) if it does not carry them.
    static func decoded(_ record: Catalog.Record, _ mapping: SourceMapping, parses: borrowing Atomic<Int>) -> MappedRecord {
        if !record.carriesDecodedFields { parses.add(1, ordering: .relaxed) }
        let fields = (try? record.fields()) ?? [:]
        return MappedRecord(fields: fields, canonical: mapping.canonical(record.entity, fields))
    }
}
