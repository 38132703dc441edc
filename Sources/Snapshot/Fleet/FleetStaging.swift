import Catalog
import Foundation

/// How a fleet stores what its workers crawl: each page is committed as it
/// arrives, fenced by its scope's claim, into a staging log (`fleet_pages`)
/// beside the snapshot; once every scope of a source is done, one worker (the
/// source's closing step) applies the log to the snapshot scope by scope, page
/// by page, in the order one process would have applied it.
///
/// Why not diff straight into the snapshot from every worker: the snapshot's
/// rows would then be written in whatever order the workers' commits came,
/// so row order (what "in order of insertion" exports follow), change-log
/// order, and the merge of an entity two sources list would all depend on
/// timing. Applied in one order by one writer, a fleet's night is the same
/// night as one process's, row for row, by construction (the same code path
/// applies both). The crawl, which is where the night's time goes (rate
/// limits, latency), is what the fleet parallelises; the apply is serial in
/// either design (one writer's transactions on one table set).
///
/// A replay deletes each page from the log in the transaction that applies
/// it, so a closing step taken over from a dead worker resumes where it stopped.
extension StagingFleetStore {
    static let stagingTable = """
        CREATE TABLE IF NOT EXISTS fleet_pages (
            run_id BIGINT NOT NULL,
            source TEXT COLLATE "C" NOT NULL,
            scope TEXT COLLATE "C" NOT NULL,
            seq BIGINT NOT NULL,
            page BIGINT,
            state TEXT COLLATE "C",
            body TEXT COLLATE "C" NOT NULL,
            PRIMARY KEY (run_id, source, scope, seq)
        )
        """

    /// A scope's end comes after all its pages in the log.
    static let finishSeq: Int64 = 1 << 40

    /// Commits pages of one scope to the staging log, fenced by the scope's
    /// claim: one statement, which renews the claim in a `WITH` and inserts
    /// the pages `FROM` it, so it stages them only while the claim holds (a
    /// transaction of four round trips before).
    func stage(_ pages: [PageInput]) async throws(StoreSyncError) -> [PageResult] {
        guard let first = pages.first else { return [] }
        let fence = fences.fence(source: first.source, scope: first.scope)
        let rows = Array(repeating: "(?, ?, ?, ?, ?, ?, ?)", count: pages.count).joined(separator: ", ")
        let arguments = pages.flatMap(Self.stagedRow)
        try await wrap {
            try await postgres.stagingStatementAwaiting { [fences, path] db in
                if let fence {
                    let renewal = ClaimFences.renewal(fence)
                    let staged = try db.execute(renewal.sql + """
                        INSERT INTO fleet_pages (run_id, source, scope, seq, page, state, body)
                        SELECT staged.* FROM fence, (VALUES \(rows)) AS staged (run_id, source, scope, seq, page, state, body)
                        ON CONFLICT (run_id, source, scope, seq) DO UPDATE SET body = excluded.body, state = excluded.state
                        """, renewal.arguments + arguments)
                    if staged == pages.count { return }
                }
                // Not staged: the claim is gone, and the check says to whom (it throws).
                try fences.check(db, source: first.source, scope: first.scope)
                throw StoreSyncError.storage(path: path, reason: "pages of \(first.source)/\(first.scope) were not staged, though this worker holds its claim")
            }
        }
        return Self.results(pages)
    }

    /// A page's row of the log: run, source, scope, seq, page, state, body.
    private static func stagedRow(_ page: PageInput) -> [SQLValue] {
        ([page.runID, page.source, page.scope, Int64(page.page), page.page,
          page.completesScope ? ScopeState.complete.rawValue : ScopeState.running.rawValue, encode(page)] as [any SQLArgument]).map(\.sqlValue)
    }

    /// What staging pages reports of them: the rows they name as unchanged, unread.
    private static func results(_ pages: [PageInput]) -> [PageResult] {
        pages.map { page in
            var result = PageResult()
            result.unread = page.unchangedKeys.count
            return result
        }
    }

    /// Commits a scope's end to the staging log, fenced by its claim.
    func stageFinish(runID: Int64, source: String, scope: String, state: ScopeState, error: RunProblem?) throws(StoreSyncError) {
        try wrap {
            try postgres.stagingWrite { db in
                try fences.check(db, source: source, scope: scope)
                let body: JSONValue = .object(["state": .string(state.rawValue), "error": error?.json ?? .null])
                try db.execute("""
                    INSERT INTO fleet_pages (run_id, source, scope, seq, page, state, body) VALUES (?, ?, ?, ?, NULL, ?, ?)
                    ON CONFLICT (run_id, source, scope, seq) DO UPDATE SET body = excluded.body, state = excluded.state
                    """, [runID, source, scope, Self.finishSeq, state.rawValue, CanonicalJSON.string(body)])
            }
        }
    }

    /// A scope's checkpoint as its staged log says: where a worker taking it
    /// over resumes (the pages staged are committed pages).
    func stagedCheckpoint(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> ScopeCheckpoint? {
        try wrap {
            try postgres.read { db in
                if let end = try db.value(as: String.self, "SELECT state FROM fleet_pages WHERE run_id = ? AND source = ? AND scope = ? AND seq = ?",
                                          [runID, source, scope, Self.finishSeq]) {
                    let next = try db.value(as: Int.self, "SELECT max(page) + 1 FROM fleet_pages WHERE run_id = ? AND source = ? AND scope = ?",
                                            [runID, source, scope])
                        ?? SQLSnapshotStore.snapshotCheckpoint(db, runID: runID, source: source, scope: scope)?.nextPage ?? 0
                    return ScopeCheckpoint(state: ScopeState(rawValue: end) ?? .failed, nextPage: next)
                }
                if let last = try db.row("""
                    SELECT page, state FROM fleet_pages WHERE run_id = ? AND source = ? AND scope = ? AND page IS NOT NULL
                    ORDER BY page DESC LIMIT 1
                    """, [runID, source, scope]) {
                    return ScopeCheckpoint(state: ScopeState(rawValue: last[1]) ?? .running, nextPage: (last[0] as Int) + 1)
                }
                // Nothing staged: the pages staged so far may have been applied (and
                // dropped from the log) already: the snapshot's checkpoint says where
                // they end. Read in the same transaction, so a page is in exactly one
                // of the two, whoever applied it and whenever.
                return try SQLSnapshotStore.snapshotCheckpoint(db, runID: runID, source: source, scope: scope)
            }
        }
    }

    /// Applies the staged log of `scopes` (in this order) to the snapshot, as
    /// one process would have applied their pages, under the source's apply
    /// claim (``FleetApplier``, or the closing step), which fences every write.
    /// Up to ``pagesPerReplay`` pages of a scope go in one transaction, the
    /// scope's end in that of its last pages: each leaves the log in the
    /// transaction that applies it, so whoever takes the claim over resumes
    /// from the log.
    ///
    /// It starts from what the whole fleet committed, whichever worker applied
    /// it: the keys every applied page of the run saw, and the source's stored
    /// digests read again (this worker's cache predates the night's pages). The
    /// removal pass that follows in the same step decides on that whole crawl,
    /// never on one worker's.
    ///
    /// `continuing`: this worker applied the source's scopes up to these under
    /// the same claim, so no other worker wrote the source since, and what it
    /// holds (digests, seen keys) is the store's: reading them again would make
    /// a night of N scopes read the source's index N times.
    func applyStaged(runID: Int64, source: String, scopes: [String], continuing: Bool) async throws(StoreSyncError) {
        if !continuing {
            snapshot.forgetDigests(source: source)
            snapshot.unseenByScope.withLock { $0[source] = nil }
            try snapshot.loadSeen(runID: runID)
        }
        // The next batch is read, decoded and mapped while the one before it
        // commits, so the server writes one while this process makes the other
        // ready: done in turn, each waited for the other, and the apply, the
        // fleet's one serial step, used one core of two. Not while the store
        // is in its first load, whose mode a page may end.
        let overlaps = snapshot.firstLoad.withLock { $0 == nil }
        var committing: Task<Void, any Error>?
        func committed() async throws(StoreSyncError) {
            guard let batch = committing else { return }
            committing = nil
            do {
                try await batch.value
            } catch let error as StoreSyncError {
                throw error
            } catch {
                throw .storage(path: path, reason: "\(error)", cause: error)
            }
        }
        do throws(StoreSyncError) {
            for scope in scopes {
                // Past the pages read already: those of the batch still committing are in the log until it commits.
                var after: Int64 = -1
                var ended = false
                while !ended {
                    // A few pages at a time: the log of a long scope is never held whole.
                    let events = try wrap {
                        try postgres.readStatement { db in
                            try db.rows("""
                                SELECT seq, page, body FROM fleet_pages WHERE run_id = ? AND source = ? AND scope = ? AND seq > ?
                                ORDER BY seq LIMIT ?
                                """, [runID, source, scope, after, Self.pagesPerReplay])
                        }
                    }
                    guard !events.isEmpty else { break }
                    var pages: [PageInput] = []
                    var end: (state: ScopeState, problem: RunProblem?)?
                    for event in events {
                        let seq: Int64 = event[0]
                        after = seq
                        if seq == Self.finishSeq {
                            let fields = (try? JSONParser.parse(event[2] as String).objectValue) ?? [:]
                            end = (ScopeState(rawValue: fields["state"]?.stringValue ?? "") ?? .failed,
                                   fields["error"].flatMap { $0 == .null ? nil : RunProblem(json: $0) })
                            break
                        }
                        guard let page = Self.decodePage(event[2], runID: runID, source: source, scope: scope) else {
                            throw StoreSyncError.storage(path: path, reason: "the staged page \(seq) of \(source)/\(scope) cannot be read back")
                        }
                        pages.append(page)
                    }
                    ended = end != nil
                    // Each page leaves the log in the transaction that applies it, and the scope's end in the one that records it.
                    let applied = pages.map { Int64($0.page) } + (end == nil ? [] : [Self.finishSeq])
                    @Sendable func leaveLog(_ db: any SQLSession) throws {
                        for seq in applied {
                            try db.queueDelete(from: "fleet_pages", where: [.integer("run_id"), .text("source"), .text("scope"), .integer("seq")],
                                               [runID, source, scope, seq])
                        }
                    }
                    guard !pages.isEmpty else {
                        try await committed()
                        if let end {
                            try snapshot.finishScopeNow(runID: runID, source: source, scope: scope, state: end.state, error: end.problem,
                                                        alongside: leaveLog)
                        }
                        continue
                    }
                    if !overlaps { try await committed() }
                    let scopeEnd = end
                    let batch = try snapshot.preparedBatch(pages) { [snapshot] db in
                        try leaveLog(db)
                        if let scopeEnd {
                            try snapshot.writeScopeEnd(db, runID: runID, source: source, scope: scope, state: scopeEnd.state, error: scopeEnd.problem)
                        }
                    }
                    try await committed()
                    if let batch {
                        committing = Task { [snapshot] in _ = try await snapshot.commit(batch) }
                    }
                }
            }
            try await committed()
        } catch {
            // Never left writing behind an error: the claim this runs under is let go next.
            try? await committed()
            throw error
        }
    }

    /// Pages read and applied together in a replay (one transaction): what a
    /// transaction costs in round trips (its claim checked, ids read) is paid
    /// once per this many pages. A batch's records are held in memory: 32 pages
    /// of the largest the sources serve (a few hundred records) are a few MB.
    static let pagesPerReplay = 32

    // MARK: The log's pages as text

    /// A staged page as text: its records' canonical payloads verbatim, one
    /// element each of `payloads`, beside the rest of the page as plain JSON.
    ///
    /// Why not one JSON value: a payload held as a JSON string is escaped
    /// character by character when staged, and unescaped into a new string when
    /// replayed, for text that is JSON already; held as the element it is, it is
    /// copied in and, at the replay, delimited and copied out
    /// (``JSONParser/rows(ofPageIn:rowsMember:)``), never parsed as a page.
    static func encode(_ page: PageInput) -> String {
        func identities(_ list: [RecordIdentity]) -> JSONValue {
            .array(list.map { .array([.string($0.entity.rawValue), .string($0.key)]) })
        }
        var object: [String: JSONValue] = [
            // One array a record, in the payloads' order: entity, key, hash, then the raw hash and field order where it has them.
            "records": .array(page.records.map { record in
                var fields: [JSONValue] = [.string(record.entity.rawValue), .string(record.key), .int(record.hash.sqliteValue),
                                           record.rawHash.map { .int($0.sqliteValue) } ?? .null]
                if let order = record.fieldOrder { fields.append(.array(order.map(JSONValue.string))) }
                return .array(fields)
            }),
            "requests": .int(Int64(page.requests)), "skipped": .int(Int64(page.skippedRows)), "seconds": .double(page.seconds),
            "unchanged": identities(page.unchangedKeys), "raw": identities(page.rawUnchanged),
            "completes": .bool(page.completesScope), "drift": .int(Int64(page.driftRows)), "page": .int(Int64(page.page)),
        ]
        if let memo = page.memo {
            object["memo"] = .object([
                "url": .string(memo.url), "etag": memo.etag.map(JSONValue.string) ?? .null,
                "lastModified": memo.lastModified.map(JSONValue.string) ?? .null, "body": .int(memo.bodyHash.sqliteValue),
                "rows": .int(Int64(memo.rowCount)), "next": memo.hasNext.map(JSONValue.bool) ?? .null,
            ])
        }
        var text: [UInt8] = []
        text.reserveCapacity(page.records.reduce(256) { $0 + $1.payload.utf8.count + 1 } + 64 * page.records.count)
        text.append(contentsOf: #"{"payloads":["#.utf8)
        for (position, record) in page.records.enumerated() {
            if position > 0 { text.append(UInt8(ascii: ",")) }
            text.append(contentsOf: record.payload.utf8)
        }
        text.append(contentsOf: "],".utf8)
        // The rest of the page's members, after its opening brace.
        text.append(contentsOf: CanonicalJSON.encodeObject(object).dropFirst())
        return String(decoding: text, as: UTF8.self)
    }

    static func decodePage(_ text: String, runID: Int64, source: String, scope: String) -> PageInput? {
        var text = text
        return text.withUTF8 { buffer -> PageInput? in
            guard let (payloadRanges, fields) = JSONParser.rows(ofPageIn: buffer, rowsMember: "payloads") else {
                return stagedByEarlierRelease(buffer, runID: runID, source: source, scope: scope)
            }
            guard let metas = fields["records"]?.arrayValue, metas.count == payloadRanges.count,
                  let pageNumber = fields["page"]?.intValue else { return nil }
            var records: [Catalog.Record] = []
            records.reserveCapacity(metas.count)
            for (meta, range) in zip(metas, payloadRanges) {
                guard let items = meta.arrayValue, items.count >= 4,
                      let entity = items[0].stringValue.flatMap(EntityKind.init(rawValue:)),
                      let key = items[1].stringValue, let hash = items[2].intValue else { return nil }
                let payload = UnsafeBufferPointer(rebasing: buffer[range])
                // The row is delimited, not parsed: its hash says it is the payload staged.
                guard ContentHash(bytes: payload).sqliteValue == hash else { return nil }
                var decoded = Catalog.Record(entity: entity, key: key, payload: String(decoding: payload, as: UTF8.self),
                                             hash: ContentHash(sqliteValue: hash))
                decoded.rawHash = items[3].intValue.map(ContentHash.init(sqliteValue:))
                decoded.fieldOrder = items.count > 4 ? items[4].arrayValue?.compactMap(\.stringValue) : nil
                records.append(decoded)
            }
            return page(fields, number: Int(pageNumber), records: records, runID: runID, source: source, scope: scope)
        }
    }

    /// A page staged by a release before 2026-12 (a worker upgraded within a
    /// night): one JSON value, each record an object with its payload as a string.
    private static func stagedByEarlierRelease(_ buffer: UnsafeBufferPointer<UInt8>, runID: Int64, source: String, scope: String) -> PageInput? {
        guard let fields = try? JSONParser.parse(buffer).objectValue, let pageNumber = fields["page"]?.intValue else { return nil }
        var records: [Catalog.Record] = []
        for value in fields["records"]?.arrayValue ?? [] {
            guard let record = value.objectValue, let entity = record["e"]?.stringValue.flatMap(EntityKind.init(rawValue:)),
                  let key = record["k"]?.stringValue, let payload = record["p"]?.stringValue, let hash = record["h"]?.intValue else { return nil }
            var decoded = Catalog.Record(entity: entity, key: key, payload: payload, hash: ContentHash(sqliteValue: hash))
            decoded.rawHash = record["r"]?.intValue.map(ContentHash.init(sqliteValue:))
            decoded.fieldOrder = record["o"]?.arrayValue?.compactMap(\.stringValue)
            records.append(decoded)
        }
        return page(fields, number: Int(pageNumber), records: records, runID: runID, source: source, scope: scope)
    }

    /// The page around its records, from its other members.
    private static func page(_ fields: [String: JSONValue], number: Int, records: [Catalog.Record],
                             runID: Int64, source: String, scope: String) -> PageInput {
        func identities(_ value: JSONValue?) -> [RecordIdentity] {
            (value?.arrayValue ?? []).compactMap { pair in
                guard let items = pair.arrayValue, items.count == 2, let entity = items[0].stringValue.flatMap(EntityKind.init(rawValue:)),
                      let key = items[1].stringValue else { return nil }
                return RecordIdentity(entity: entity, key: key)
            }
        }
        var memo: PageMemo?
        if let stored = fields["memo"]?.objectValue, let url = stored["url"]?.stringValue, let body = stored["body"]?.intValue {
            memo = PageMemo(url: url, etag: stored["etag"]?.stringValue, lastModified: stored["lastModified"]?.stringValue,
                            bodyHash: ContentHash(sqliteValue: body), rowCount: Int(stored["rows"]?.intValue ?? 0),
                            hasNext: stored["next"].flatMap { if case .bool(let flag) = $0 { flag } else { nil } })
        }
        var page = PageInput(runID: runID, source: source, scope: scope, page: number, records: records,
                             requests: Int(fields["requests"]?.intValue ?? 0), skippedRows: Int(fields["skipped"]?.intValue ?? 0),
                             seconds: fields["seconds"].flatMap { if case .double(let value) = $0 { value } else { $0.intValue.map(Double.init) } } ?? 0,
                             unchangedKeys: identities(fields["unchanged"]), memo: memo)
        page.rawUnchanged = identities(fields["raw"])
        if case .bool(let completes)? = fields["completes"] { page.completesScope = completes }
        page.driftRows = Int(fields["drift"]?.intValue ?? 0)
        return page
    }
}
