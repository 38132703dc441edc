import Catalog

/// A batch's page bookkeeping, gathered while its pages are applied and
/// written once, at the end of the batch's transaction: each page's memo and
/// key list, each scope's checkpoint, each source's counters.
///
/// A statement per table rather than four or five per page: on PostgreSQL
/// each statement is a round trip, and a fleet's apply replays a scope's
/// staged pages 32 to a transaction. Nothing within a batch reads these
/// tables back before its commit, and a later page's row replaces an earlier
/// one's of the same key, so what commits is what page-by-page writes left.
struct PageBookkeeping: Sendable {
    private struct ScopeKey: Hashable, Sendable {
        let source: String
        let scope: String
    }
    private struct PageKey: Hashable, Sendable {
        let runID: Int64
        let source: String
        let scope: String
        let page: Int
    }
    private struct SourceKey: Hashable, Sendable {
        let runID: Int64
        let source: String
    }
    private struct Counts: Sendable {
        var pages = 0, requests = 0, added = 0, changed = 0, unchanged = 0, skipped = 0, recordWrites = 0
        var seconds = 0.0
        var drift = 0, unchangedPages = 0
    }

    private var memos: [PageKey: [SQLValue]] = [:]
    private var memoOrder: [PageKey] = []
    private var keyLists: [PageKey: String] = [:]
    private var keyListOrder: [PageKey] = []
    private var checkpoints: [ScopeKey: (runID: Int64, nextPage: Int, state: String)] = [:]
    private var checkpointOrder: [ScopeKey] = []
    private var counts: [SourceKey: Counts] = [:]
    private var countOrder: [SourceKey] = []

    /// Notes `page`'s bookkeeping: its memo (if any) and key list, its scope's checkpoint, its counts (`result`).
    mutating func add(_ page: PageInput, keyList: String, result: PageResult) {
        let key = PageKey(runID: page.runID, source: page.source, scope: page.scope, page: page.page)
        if let memo = page.memo {
            if memos[key] == nil { memoOrder.append(key) }
            memos[key] = [.text(page.source), .text(page.scope), .integer(Int64(page.page)), .text(memo.url),
                          memo.etag.map(SQLValue.text) ?? .null, memo.lastModified.map(SQLValue.text) ?? .null,
                          .integer(memo.bodyHash.sqliteValue), .integer(Int64(memo.rowCount)),
                          memo.hasNext.map { .integer($0 ? 1 : 0) } ?? .null, .text(keyList)]
        }
        if keyLists[key] == nil { keyListOrder.append(key) }
        keyLists[key] = keyList
        let scope = ScopeKey(source: page.source, scope: page.scope)
        if checkpoints[scope] == nil { checkpointOrder.append(scope) }
        checkpoints[scope] = (page.runID, page.page + 1, page.completesScope ? ScopeState.complete.rawValue : ScopeState.running.rawValue)
        let source = SourceKey(runID: page.runID, source: page.source)
        if counts[source] == nil { countOrder.append(source) }
        var sums = counts[source] ?? Counts()
        sums.pages += 1
        sums.requests += page.requests
        sums.added += result.added
        sums.changed += result.changed
        sums.unchanged += result.unchanged
        sums.skipped += page.skippedRows
        sums.seconds += page.seconds
        sums.recordWrites += result.recordRowsWritten
        sums.drift += page.driftRows
        sums.unchangedPages += result.unread > 0 ? 1 : 0
        counts[source] = sums
    }

    /// Rows to a statement: well within both engines' limits on bound values
    /// (SQLite 32,766, PostgreSQL 65,535) at ten columns.
    static let rowsPerStatement = 500

    /// Writes what ``add(_:keyList:result:)`` gathered, within the batch's transaction.
    func write(_ db: any SQLSession) throws {
        try Self.upsert(db, """
            INSERT INTO page_memos (source, scope, page, url, etag, last_modified, body_hash, row_count, has_next, keys) VALUES
            """, columns: 10, rows: memoOrder.compactMap { memos[$0] }, """
            ON CONFLICT (source, scope, page) DO UPDATE SET url = excluded.url, etag = excluded.etag,
                last_modified = excluded.last_modified, body_hash = excluded.body_hash, row_count = excluded.row_count,
                has_next = excluded.has_next, keys = excluded.keys
            """)
        try Self.upsert(db, "INSERT INTO run_pages (run_id, source, scope, page, keys) VALUES", columns: 5,
                        rows: keyListOrder.map { key in
                            [.integer(key.runID), .text(key.source), .text(key.scope), .integer(Int64(key.page)), .text(keyLists[key] ?? "")]
                        }, "ON CONFLICT (run_id, source, scope, page) DO UPDATE SET keys = excluded.keys")
        try Self.upsert(db, "INSERT INTO scopes (source, scope, run_id, next_page, state) VALUES", columns: 5,
                        rows: checkpointOrder.compactMap { key in
                            checkpoints[key].map { [.text(key.source), .text(key.scope), .integer($0.runID), .integer(Int64($0.nextPage)), .text($0.state)] }
                        }, """
            ON CONFLICT (source, scope) DO UPDATE SET run_id = excluded.run_id, next_page = excluded.next_page,
                state = excluded.state, error = NULL, error_code = NULL, error_url = NULL
            """)
        for key in countOrder {
            guard let sums = counts[key] else { continue }
            try SQLSnapshotStore.addCounts(db, runID: key.runID, source: key.source, pages: sums.pages, requests: sums.requests,
                                           added: sums.added, changed: sums.changed, unchanged: sums.unchanged, removed: 0,
                                           skipped: sums.skipped, seconds: sums.seconds, recordWrites: sums.recordWrites)
            if sums.drift > 0 || sums.unchangedPages > 0 {
                try db.execute("""
                    UPDATE run_sources SET drift = drift + ?, unchanged_pages = unchanged_pages + ? WHERE run_id = ? AND source = ?
                    """, [sums.drift, sums.unchangedPages, key.runID, key.source])
            }
        }
    }

    /// `insert` (ending in `VALUES`) with a row of `columns` placeholders per
    /// row, then `conflict`: a multi-row upsert, in chunks. Each key appears
    /// once among `rows` (PostgreSQL refuses to update a row twice in one statement).
    static func upsert(_ db: any SQLSession, _ insert: String, columns: Int, rows: [[SQLValue]], _ conflict: String) throws {
        let row = "(" + repeatElement("?", count: columns).joined(separator: ", ") + ")"
        for start in stride(from: 0, to: rows.count, by: rowsPerStatement) {
            let chunk = rows[start..<min(start + rowsPerStatement, rows.count)]
            try db.execute(insert + " " + repeatElement(row, count: chunk.count).joined(separator: ", ") + "\n" + conflict,
                           chunk.flatMap { $0 })
        }
    }
}
