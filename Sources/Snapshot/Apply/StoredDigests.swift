import Catalog
import Synchronization

/// What the store holds of one record, as far as diffing needs: its content
/// hash and, when its connector computes one, the hash of the raw bytes it
/// was stored from.
struct StoredDigest: Sendable {
    var hash: Int64
    /// The raw hash's bits; meaningful only when ``rawHash`` is not nil.
    private var rawBits: Int64
    /// The rowid shifted left once, its low bit saying whether a raw hash is
    /// held: three words instead of an optional's four (an index of a million
    /// records is ~17 MB smaller).
    private var rowidAndFlag: Int64

    init(hash: Int64, rawHash: Int64?, rowid: Int64) {
        self.hash = hash
        rawBits = rawHash ?? 0
        rowidAndFlag = rowid << 1 | (rawHash == nil ? 0 : 1)
    }

    var rawHash: Int64? {
        rowidAndFlag & 1 == 1 ? rawBits : nil
    }

    /// The record's row: the store reads, rewrites and deletes it by rowid,
    /// so diffing needs no key index (see ``SnapshotStore/beginFirstLoad()``).
    /// SQLite rowids are below 2^62, so the shift loses nothing.
    var rowid: Int64 {
        get { rowidAndFlag >> 1 }
        set { rowidAndFlag = newValue << 1 | (rowidAndFlag & 1) }
    }
}

/// The stored digests of one source, read once per run in one sequential
/// scan and kept in step with every write.
///
/// Diffing a page then costs a hash-table probe per record instead of an
/// indexed `SELECT` (1M probes take ~0.1 s; 1M point queries ~3 s), and the
/// same table answers a decoder's "do I know these bytes?" (``RowMemory``)
/// from another thread. A class behind a mutex, never copied out, so an
/// update never copies a million entries.
final class DigestIndex: Sendable {
    private struct Table {
        var digests: IdentityTable<StoredDigest>
        /// Identities the index held that were rewritten or removed since it
        /// was read: few on a normal night, and the only ones a decoder's
        /// earlier look can be stale for.
        var rewritten: IdentitySet = []
    }

    private let table: Mutex<Table>
    /// How many records the index held when it was read (the removal pass's
    /// bound on unseen keys worth listing one by one).
    let initialCount: Int

    init(_ digests: IdentityTable<StoredDigest>) {
        initialCount = digests.count
        table = Mutex(Table(digests: digests))
    }

    /// Reads every record of `source`: the engine's own way where it has a
    /// faster one (``SQLSession/digestIndex(source:)``), else this query.
    static func load(_ db: any SQLSession, source: String) throws -> DigestIndex {
        if let index = try db.digestIndex(source: source) { return index }
        var digests = IdentityTable<StoredDigest>()
        try db.forEachRow("SELECT entity, key, hash, raw_hash, rowid FROM records WHERE source = ?", [source]) { row in
            guard let entity = EntityKind(rawValue: row[0]) else { return }
            digests[RecordIdentity(entity: entity, key: row[1])] = StoredDigest(hash: row[2], rawHash: row[3], rowid: row[4])
        }
        return DigestIndex(digests)
    }

    /// The digests of `identities`, read under one lock.
    func lookup(_ identities: some Sequence<RecordIdentity>) -> [StoredDigest?] {
        table.withLock { table in identities.map { table.digests[$0] } }
    }

    /// Applies the writes of a committed transaction: a digest to set, or nil for a removal.
    func update(_ writes: [(RecordIdentity, StoredDigest?)]) {
        guard !writes.isEmpty else { return }
        table.withLock { table in
            for (identity, digest) in writes {
                // A decoder's look can be stale only for a key the index held
                // then: a key new to it was decoded in full. So only a rewrite or
                // removal is noted, and a first load notes nothing.
                let held = if let digest { !table.digests.insert(identity, digest) } else { table.digests.remove(identity) }
                if held { table.rewritten.insert(identity) }
            }
        }
    }

    func holds(_ identity: RecordIdentity, rawHash: ContentHash) -> Bool {
        table.withLock { $0.digests[identity]?.rawHash == rawHash.sqliteValue }
    }

    /// The identities held that `seen` does not hold, or nil past `limit` of them.
    ///
    /// When `seen` marks keys by their position in this index (the usual
    /// case), the pass reads the index in order and makes an identity only
    /// for a key left unmarked: on a night that saw nearly every key, it
    /// visits the few it did not, not a million probes.
    func identities(unseenIn seen: SeenKeys, limit: Int) -> [RecordIdentity]? {
        let marksHere = seen.index === self
        return table.withLock { table in
            var unseen: [RecordIdentity] = []
            var overLimit = false
            table.digests.forEach(skipping: { marksHere && seen.isMarked($0) }) { identity in
                // Not marked here: seen only if the index did not hold it then
                // (or, for another index's marks, if that one says so).
                guard !overLimit, !(marksHere ? seen.holdsUnindexed(identity) : seen.contains(identity)) else { return }
                unseen.append(identity)
                if unseen.count > limit { overLimit = true }
            }
            return overLimit ? nil : unseen
        }
    }

    /// Where each of `identities` sits in the index (``IdentityTable/position(of:)``), under one lock.
    func positions(of identities: [RecordIdentity]) -> [Int?] {
        table.withLock { table in identities.map { table.digests.position(of: $0) } }
    }

    func position(of identity: RecordIdentity) -> Int? {
        table.withLock { $0.digests.position(of: identity) }
    }

    func identities(atPositions positions: [Int]) -> [RecordIdentity] {
        table.withLock { table in positions.map { table.digests.identity(atPosition: $0) } }
    }

    func holdEach(_ rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> [Bool] {
        table.withLock { table in rows.map { table.digests[$0.identity]?.rawHash == $0.rawHash.sqliteValue } }
    }

    /// Whether rows a decoder found held (``holds(_:rawHash:)``) still are:
    /// only those written since the index was read can have changed.
    func stillHolds(_ rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> Bool {
        table.withLock { table in
            table.rewritten.isEmpty || rows.allSatisfy { row in
                !table.rewritten.contains(row.identity) || table.digests[row.identity]?.rawHash == row.rawHash.sqliteValue
            }
        }
    }
}

/// A source's stored rows as a decoder sees them: ``RowMemory`` over the
/// store's digest index.
struct StoredRowMemory: RowMemory {
    let index: DigestIndex
    var isFirstLoad = false

    func holds(_ identity: RecordIdentity, rawHash: ContentHash) -> Bool {
        index.holds(identity, rawHash: rawHash)
    }

    func holdEach(_ rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> [Bool] {
        index.holdEach(rows)
    }
}
