import Catalog
import Synchronization

/// A first load: the mode of the one writer (``SQLSnapshotStore/apply(_:)``)
/// for pages whose every record and entity is new to an empty store.
///
/// Such a page is written with no lookup per record: its records have no
/// stored digest, its entities no row to merge into. The mode is entered by
/// ``SQLSnapshotStore/beginFirstLoad()``, claimed page by page (a page is
/// written this way only if all of it is new, checked before its write), and
/// left for good at the first page that is not, or by
/// ``SQLSnapshotStore/endFirstLoad()``.
///
/// On SQLite the key indexes of records and entities are dropped for the load
/// and built once, sorted, at its end: pages commit as the diff's do (a kill
/// loses at most the batch being written), and scattered keys land on most
/// leaves of a key index, so at 1M records every commit rewrote tens of MB of
/// index pages into the WAL. The store never needs the indexes while loading (it diffs
/// against its digest index, rewrites rows by rowid, and knows which entities
/// it wrote). Without the entities' index a row cannot be looked up by key,
/// so the load keeps the 64-bit hashes of the entity keys it wrote: a key not
/// among them is new for certain; a key among them (a row repeated within the
/// run, two record kinds that map to one entity, or a hash collision) ends the
/// mode, the index is built there and then, and the page goes through the
/// night's diff like any other. A kind that is its own entity and no other
/// kind's (a records file's rows) keeps no hashes: its entity keys repeat
/// exactly when its record keys do, which the run's seen keys tell already
/// (a million hashes were 17 MB, 25 while the set grew).
///
/// PostgreSQL keeps its indexes (a unique index would refuse a key written
/// twice rather than let it through) and takes the same mode in a single
/// process; a fleet's workers stage their pages and the closing step applies
/// them by the diff, since no one process there knows what the others wrote.
struct FirstLoadState: Sendable {
    /// The source whose first load this is: the first to apply a page (only
    /// the first source of a job into an empty store loads this way).
    var source: String?
    /// Hashes of `entity\tkey` of every entity row the load wrote or may have written.
    var entityKeys: Set<UInt64> = []
}

/// A record of a first-load page, made ready off the writer thread: mapped
/// into the canonical model and encoded, so the single writer only binds.
struct FirstLoadRow: Sendable {
    var mapped: MappedRecord
    var entity: EntityKind
    var entityKey: String
    /// Nil for a kind whose entities only its own records map to (see ``FirstLoadState``).
    var entityKeyHash: UInt64?
    /// The entity row's `fields` and their hash.
    var canonicalText: String
    var canonicalHash: Int64
}

extension SQLSnapshotStore {
    /// True when the store holds no record and no entity: the only store a first load may enter.
    static let storeIsEmpty = "SELECT NOT EXISTS (SELECT 1 FROM records) AND NOT EXISTS (SELECT 1 FROM entities)"

    /// Enters the first-load mode if the store holds no record and no entity
    /// (see ``FirstLoadState``). Returns whether it did.
    ///
    /// A SQLite load also runs with `synchronous = OFF`: WAL frames are not
    /// synced at each checkpoint, which a kill -9 cannot tell (the operating
    /// system holds what was written), and ``endFirstLoad()`` syncs everything
    /// once. A run killed in between leaves the key indexes missing; opening
    /// the store builds them again.
    package func beginFirstLoad() throws(StoreSyncError) -> Bool {
        guard try wrap({ try engine.beginBulkLoad(isEmpty: Self.storeIsEmpty) }) else { return false }
        firstLoad.withLock { $0 = FirstLoadState() }
        return true
    }

    /// Ends what ``beginFirstLoad()`` began: on SQLite, builds the key indexes
    /// it dropped (one sorted pass each) and makes the load durable (the
    /// store's usual safety level again, and a checkpoint that syncs the WAL
    /// and the database file).
    package func endFirstLoad() throws(StoreSyncError) {
        firstLoad.withLock { $0 = nil }
        try wrap { try engine.endBulkLoad() }
    }

    /// `page` made ready for the first-load mode and claimed, or nil when it
    /// goes to the diff (and the mode has ended, unless it was not on).
    func firstLoadPage(_ page: PageInput, _ mapping: SourceMapping) throws(StoreSyncError) -> [FirstLoadRow]? {
        guard try mayLoad(page) else { return nil }
        let rows = firstLoadRows(page, mapping)
        guard try claimFirstLoad(page, rows) else { return nil }
        firstLoadPages.add(1, ordering: .relaxed)
        return rows
    }

    /// Whether `page` may be written in the first-load mode, judged before
    /// anything about it is computed: the store is in a first load of its
    /// source (the first to apply a page), and its decoder read every row in
    /// full (a page that names rows as unchanged names rows the store holds).
    /// A page of another source ends the mode.
    func mayLoad(_ page: PageInput) throws(StoreSyncError) -> Bool {
        let ours = firstLoad.withLock { state -> Bool? in
            guard state != nil else { return nil }
            if state!.source == nil { state!.source = page.source }
            return state!.source == page.source
        }
        guard let ours else { return false }
        guard ours, page.unchangedKeys.isEmpty, page.rawUnchanged.isEmpty else {
            try leaveFirstLoad()
            return false
        }
        return true
    }

    /// `page`'s records made ready for the first-load mode, on every core.
    func firstLoadRows(_ page: PageInput, _ mapping: SourceMapping) -> [FirstLoadRow] {
        let records = page.records
        let soleKinds = Set(Set(records.map(\.entity)).filter { kind in
            mapping.entity(of: kind) == kind && !EntityKind.allCases.contains { $0 != kind && mapping.entity(of: $0) == kind }
        })
        return ParallelChunks.map(records.count) { range in
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
                if let written = mapped.decoderFields {
                    (text, hash) = (written.text, written.hash.sqliteValue)
                } else if mapped.wire != nil || (entity == record.entity && mapped.canonical.fields == mapped.fields && !mapped.fields.isEmpty) {
                    // The canonical fields are the record's own (a records file's
                    // row): its payload is their canonical encoding already, and its
                    // hash that encoding's. Encoding them again was a tenth of the load.
                    (text, hash) = (record.payload, record.hash.sqliteValue)
                } else {
                    let bytes = CanonicalJSON.encodeObject(mapped.canonical.fields)
                    (text, hash) = (String(decoding: bytes, as: UTF8.self), ContentHash(bytes: bytes).sqliteValue)
                }
                return FirstLoadRow(mapped: mapped, entity: entity, entityKey: entityKey, entityKeyHash: keyHash,
                                    canonicalText: text, canonicalHash: hash)
            }
        }.flatMap { $0 }
    }

    /// Claims `rows` (all of `page`) for the first-load mode: every record and
    /// entity must be new to this run. Both are claimed before the write, as
    /// the diff marks a page's keys seen: a failed write can only make a later
    /// page leave the mode, never write a key twice. When they are not all
    /// new, nothing is marked, the mode ends, and the page goes to the diff.
    func claimFirstLoad(_ page: PageInput, _ rows: [FirstLoadRow]) throws(StoreSyncError) -> Bool {
        let claimed = firstLoad.withLock { state -> Bool in
            guard state != nil, state!.source == page.source else { return false }
            var pageKeys = Set<UInt64>(minimumCapacity: rows.count)
            for row in rows {
                guard let hash = row.entityKeyHash else { continue }
                if state!.entityKeys.contains(hash) || !pageKeys.insert(hash).inserted { return false }
            }
            guard markAllSeen(page.source, page.records.lazy.map(\.identity)) else { return false }
            // In place: a copy of a million hashes per page would cost more than the lookups saved.
            state!.entityKeys.formUnion(pageKeys)
            return true
        }
        if !claimed { try leaveFirstLoad() }
        return claimed
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

    /// Ends the first-load mode before its end (a page that is not all new):
    /// the entities' key index is built now, and pages are diffed from here on.
    func leaveFirstLoad() throws(StoreSyncError) {
        guard firstLoad.withLock({ $0 != nil }) else { return }
        try wrap { try engine.leaveBulkLoad() }
        firstLoad.withLock { $0 = nil }
    }
}
