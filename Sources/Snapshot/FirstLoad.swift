import Catalog
import GRDB
import Synchronization

/// What a first load into an empty snapshot knows that a night's diff must
/// look up: every entity it writes is new, unless its key was written
/// earlier in the same load.
///
/// The entities' key index is dropped for the load and built once at its end
/// (``SQLSnapshotStore/endBulkLoad()``): every page is its own
/// transaction, and a unique index of scattered keys rewrites most of its
/// pages at every commit (the records' key index was dropped for that reason
/// before). Without it, an entity row cannot be looked up by key, so the
/// load keeps the 64-bit hashes of the entity keys it wrote: a key not among
/// them is new for certain; a key among them (a row repeated within the run,
/// two record kinds that map to one entity, or a hash collision) ends the
/// first-load path, the index is built there and then, and the page goes
/// through the night's diff like any other. A kind that is its own entity
/// and no other kind's (a records file's rows) keeps no hashes: its entity
/// keys repeat exactly when its record keys do, which the run's seen keys
/// tell already (a million hashes were 17 MB, 25 while the set grew).
struct FirstLoadState: Sendable {
    /// The source whose first load this is: the first to apply a page (only
    /// the first source of a job into an empty store loads this way).
    var source: String?
    /// Hashes of `entity\tkey` of every entity row the load wrote or may have written.
    var entityKeys: Set<UInt64> = []
}

/// A record of a first-load page, made ready off the writer thread: parsed,
/// mapped into the canonical model and encoded, so the single writer only binds.
private struct FirstLoadRow: Sendable {
    /// The record's fields for the registry: built, or only their shape (``MappedRecord/wire``).
    var fields: [String: JSONValue]
    var shape: FieldShape?
    var entity: EntityKind
    var entityKey: String
    /// Nil for a kind whose entities only its own records map to: its entity
    /// keys are distinct exactly when its record keys are, which the run's
    /// seen keys check already.
    var entityKeyHash: UInt64?
    var canonicalText: String
    var canonicalHash: Int64
    /// What `records.payload` holds: empty when it is `canonicalText` (``SQLSnapshotStore/storedPayload(_:_:)``).
    var storedPayload: String
}

extension SQLSnapshotStore {
    /// Applies `page` by the first-load path when the store is in a first load
    /// of `page.source` and every record of the page is new; returns nil
    /// otherwise, having left the first-load path if the page showed it no
    /// longer holds, so the caller diffs the page as usual.
    ///
    /// Writes what ``apply(_:)`` writes for a page of new records (the records,
    /// their entities, the change log, the field registry, the page's key list
    /// and memo, the checkpoint and counters), in one transaction, without a
    /// lookup per record.
    func applyFirstLoad(_ page: PageInput) async throws(StoreSyncError) -> PageResult? {
        // The source of the load is the first one to apply a page after beginBulkLoad().
        let ours = firstLoad.withLock { state -> Bool? in
            guard state != nil else { return nil }
            if state!.source == nil { state!.source = page.source }
            return state!.source == page.source
        }
        guard let ours else { return nil }
        guard ours else {
            // Another source (none does while a load runs, but the index must be there for its diff).
            try leaveFirstLoad()
            return nil
        }
        // Pages the decoder did not read in full name rows the store holds: not a first load's.
        guard page.unchangedKeys.isEmpty, page.rawUnchanged.isEmpty else {
            try leaveFirstLoad()
            return nil
        }
        let records = page.records
        let mapping = mapping(for: page.source)
        let logAddedValues = baselineRun.withLock { $0 } != page.runID
        // Kinds that are their own entity and no other kind's (a records file's rows): see FirstLoadRow.entityKeyHash.
        let soleKinds = Set(Set(records.map(\.entity)).filter { kind in
            mapping.entity(of: kind) == kind && !EntityKind.allCases.contains { $0 != kind && mapping.entity(of: $0) == kind }
        })
        let rows: [FirstLoadRow] = ParallelChunks.map(records.count) { range in
            range.map { position in
                let record = records[position]
                let mapped = MappedRecord(record, mapping, parses: payloadParses)
                let entity = mapped.canonical.entity
                let entityKey = EntityWriter.entityKey(entity, record.key, source: page.source)
                var keyHash: UInt64?
                if !soleKinds.contains(record.entity) {
                    var keyBytes = Array(entity.rawValue.utf8)
                    keyBytes.append(9)
                    keyBytes.append(contentsOf: entityKey.utf8)
                    keyHash = ContentHash(bytes: keyBytes).rawValue
                }
                let text: String, hash: Int64
                if mapped.wire != nil {
                    // Decoded straight to canonical bytes, of a kind mapped as it is: nothing built, nothing encoded.
                    (text, hash) = (record.payload, record.hash.sqliteValue)
                } else if entity == record.entity, mapped.canonical.fields == mapped.fields, !mapped.fields.isEmpty {
                    // The canonical fields are the record's own (a records file's
                    // row): its payload is their canonical encoding already, and its
                    // hash that encoding's. Encoding them again was a tenth of the load.
                    (text, hash) = (record.payload, record.hash.sqliteValue)
                } else {
                    let bytes = CanonicalJSON.encodeObject(mapped.canonical.fields)
                    (text, hash) = (String(decoding: bytes, as: UTF8.self), ContentHash(bytes: bytes).sqliteValue)
                }
                return FirstLoadRow(fields: mapped.fields, shape: mapped.wire, entity: entity, entityKey: entityKey,
                                    entityKeyHash: keyHash,
                                    canonicalText: text, canonicalHash: hash,
                                    storedPayload: SQLSnapshotStore.storedPayload(record, mapped))
            }
        }.flatMap { $0 }
        // Every record and entity of the page must be new to this run. Both
        // are claimed before the write, as apply marks a page's keys seen: a
        // failed write can only make a later page leave the first-load path,
        // never write a key twice.
        let allNew = firstLoad.withLock { state -> Bool in
            guard state != nil, state!.source == page.source else { return false }
            var pageKeys = Set<UInt64>(minimumCapacity: rows.count)
            for row in rows {
                guard let hash = row.entityKeyHash else { continue }
                if state!.entityKeys.contains(hash) || !pageKeys.insert(hash).inserted { return false }
            }
            guard markAllSeen(page.source, records.lazy.map(\.identity)) else { return false }
            // In place: a copy of a million hashes per page would cost more than the lookups saved.
            state!.entityKeys.formUnion(pageKeys)
            return true
        }
        guard allNew else {
            try leaveFirstLoad()
            return nil
        }
        let written: [(RecordIdentity, StoredDigest?)]
        let result: PageResult
        do {
            (result, written) = try await pool.write { db in
                let session = GRDBSession(db: db)
                _ = try digestIndex(session, source: page.source)
                var result = PageResult()
                let insert = RawStatement(try db.cachedStatement(sql: """
                    INSERT INTO records (source, entity, key, scope, hash, payload, added_run, changed_run, raw_hash)
                    VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """))
                let insertEntity = RawStatement(try db.cachedStatement(sql: """
                    INSERT INTO entities (entity, key, fields, hash, sources, parts, added_run, changed_run) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
                    """))
                let log = RawStatement(try db.cachedStatement(sql: """
                    INSERT INTO changes (run_id, source, entity, key, op, field, before, after) VALUES (?, ?, ?, ?, 'added', NULL, NULL, ?)
                    """))
                var registry = try FieldRegistryWriter(session, source: page.source, runID: page.runID)
                var sources: [EntityKind: String] = [:]
                var written: [(RecordIdentity, StoredDigest?)] = []
                written.reserveCapacity(records.count)
                var keyList = ""
                keyList.reserveCapacity(32 * records.count)
                for (record, row) in zip(records, rows) {
                    keyList.append(record.entity.rawValue)
                    keyList.append("\t")
                    keyList.append(record.key)
                    keyList.append("\n")
                    let hash = record.hash.sqliteValue, rawHash = record.rawHash?.sqliteValue
                    insert.bind(1, page.source)
                    insert.bind(2, record.entity.rawValue)
                    insert.bind(3, record.key)
                    insert.bind(4, page.scope)
                    insert.bind(5, hash)
                    insert.bind(6, row.storedPayload)
                    insert.bind(7, page.runID)
                    insert.bind(8, page.runID)
                    insert.bind(9, rawHash)
                    try insert.execute(db)
                    result.recordRowsWritten += db.changesCount
                    written.append((record.identity, StoredDigest(hash: hash, rawHash: rawHash, rowid: db.lastInsertedRowID)))

                    let sighting = sources[record.entity] ?? Sighting.encode(
                        [Sighting(source: page.source, kind: record.entity, role: mapping.role(record.entity))])
                    sources[record.entity] = sighting
                    insertEntity.bind(1, row.entity.rawValue)
                    insertEntity.bind(2, row.entityKey)
                    insertEntity.bind(3, row.canonicalText)
                    insertEntity.bind(4, row.canonicalHash)
                    insertEntity.bind(5, sighting)
                    insertEntity.bind(6, page.runID)
                    insertEntity.bind(7, page.runID)
                    try insertEntity.execute(db)
                    log.bind(1, page.runID)
                    log.bind(2, page.source)
                    log.bind(3, row.entity.rawValue)
                    log.bind(4, row.entityKey)
                    log.bind(5, logAddedValues ? row.canonicalText : nil)
                    try log.execute(db)
                    if let shape = row.shape {
                        try registry.note(record.entity, shape: shape, order: record.fieldOrder)
                    } else {
                        try registry.note(record.entity, row.fields, order: record.fieldOrder)
                    }
                    result.added += 1
                }
                try Self.recordPage(session, page, keyList: keyList, result: result)
                return (result, written)
            }
        } catch {
            throw .storage(path: path, reason: "applying page \(page.page) of \(page.source)/\(page.scope): \(error)")
        }
        // Committed: the index follows, and the seen keys it now holds become bits.
        digests(of: page.source)?.update(written)
        seenKeysIndexed(page.source, written.map(\.0))
        return result
    }

    /// Marks `identities` seen in this run if none of them was (nor is twice
    /// in the list); otherwise marks nothing and returns false.
    func markAllSeen(_ source: String, _ identities: some Collection<RecordIdentity>) -> Bool {
        seen.withLock { sets in
            var set = sets.removeValue(forKey: source) ?? SeenKeys(index: digests(of: source))
            defer { sets[source] = set }
            var added: [RecordIdentity] = []
            added.reserveCapacity(identities.count)
            for identity in identities {
                guard set.insert(identity) else {
                    for identity in added { set.remove(identity) }
                    return false
                }
                added.append(identity)
            }
            return true
        }
    }

    /// Ends the first-load path before its end (a page that is not all new):
    /// the entities' key index is built now, and pages are diffed from here on.
    func leaveFirstLoad() throws(StoreSyncError) {
        guard firstLoad.withLock({ $0 != nil }) else { return }
        _ = try wrap { try engine.write { db in try db.execute(Schema.entityKeyIndex) } }
        firstLoad.withLock { $0 = nil }
    }

    /// The page's bookkeeping beside its records, as ``apply(_:)`` writes it:
    /// its memo and key list, the scope's checkpoint and the source's counters.
    static func recordPage(_ db: any SQLSession, _ page: PageInput, keyList: String, result: PageResult) throws {
        if let memo = page.memo {
            try db.execute("""
                INSERT INTO page_memos (source, scope, page, url, etag, last_modified, body_hash, row_count, has_next, keys)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT (source, scope, page) DO UPDATE SET url = excluded.url, etag = excluded.etag,
                    last_modified = excluded.last_modified, body_hash = excluded.body_hash, row_count = excluded.row_count,
                    has_next = excluded.has_next, keys = excluded.keys
                """, [page.source, page.scope, page.page, memo.url, memo.etag, memo.lastModified,
                                 memo.bodyHash.sqliteValue, memo.rowCount, memo.hasNext, keyList])
        }
        try db.execute("""
            INSERT INTO run_pages (run_id, source, scope, page, keys) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (run_id, source, scope, page) DO UPDATE SET keys = excluded.keys
            """,
                       [page.runID, page.source, page.scope, page.page, keyList])
        try db.execute("""
            INSERT INTO scopes (source, scope, run_id, next_page, state) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (source, scope) DO UPDATE SET run_id = excluded.run_id, next_page = excluded.next_page,
                state = excluded.state, error = NULL, error_code = NULL, error_url = NULL
            """, [page.source, page.scope, page.runID, page.page + 1, page.completesScope ? "complete" : "running"])
        try addCounts(db, runID: page.runID, source: page.source, pages: 1, requests: page.requests,
                      added: result.added, changed: result.changed, unchanged: result.unchanged,
                      removed: 0, skipped: page.skippedRows, seconds: page.seconds,
                      recordWrites: result.recordRowsWritten)
        if page.driftRows > 0 || result.unread > 0 {
            try db.execute("""
                UPDATE run_sources SET drift = drift + ?, unchanged_pages = unchanged_pages + ? WHERE run_id = ? AND source = ?
                """, [page.driftRows, result.unread > 0 ? 1 : 0, page.runID, page.source])
        }
    }
}
