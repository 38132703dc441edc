import Catalog

/// The keys of one source that the current run has seen: the input of the
/// removal pass and of dedup within a run.
///
/// A key the source's digest index holds is marked by one bit at its
/// position there (``IdentityTable/position(of:)``); only keys the index
/// did not hold when they were seen (the night's new ones) are kept as
/// keys. A night that sees a million stored keys then holds 125 KB of bits
/// instead of a second million-key table (~34 MB), marking a key is the
/// probe the index needs anyway, and the removal pass reads the index in
/// order for the keys left unmarked (``DigestIndex/identities(unseenIn:limit:)``)
/// instead of probing a set once per stored key.
struct SeenKeys: Sendable {
    /// The index whose positions the bits refer to; nil before a source's index is read.
    let index: DigestIndex?
    private var bits: [UInt64] = []
    /// Keys seen while ``index`` did not hold them.
    private var unindexed = IdentitySet()

    init(index: DigestIndex?) {
        self.index = index
    }

    /// How many seen keys are held as keys, not bits.
    var keysHeld: Int { unindexed.count }

    func isMarked(_ position: Int) -> Bool {
        position >> 6 < bits.count && bits[position >> 6] & (1 << UInt64(position & 63)) != 0
    }

    /// Whether `identity` was seen while the index did not hold it.
    func holdsUnindexed(_ identity: RecordIdentity) -> Bool {
        !unindexed.isEmpty && unindexed.contains(identity)
    }

    func contains(_ identity: RecordIdentity) -> Bool {
        if let position = index?.position(of: identity), isMarked(position) { return true }
        return holdsUnindexed(identity)
    }

    /// Marks each of `identities` seen, in order; for each, whether it was
    /// not seen before (a key twice in the list is new only the first time).
    mutating func insert(_ identities: [RecordIdentity]) -> [Bool] {
        guard !identities.isEmpty else { return [] }
        let positions = index?.positions(of: identities) ?? Array(repeating: nil, count: identities.count)
        return zip(identities, positions).map { identity, position in insert(identity, at: position) }
    }

    @discardableResult
    mutating func insert(_ identity: RecordIdentity) -> Bool {
        insert(identity, at: index?.position(of: identity))
    }

    private mutating func insert(_ identity: RecordIdentity, at position: Int?) -> Bool {
        guard let position else { return unindexed.insert(identity) }
        // A key new to the index when first seen, and written to it since, is held as a key.
        guard !isMarked(position), !holdsUnindexed(identity) else { return false }
        mark(position)
        return true
    }

    private mutating func mark(_ position: Int) {
        let word = position >> 6
        if word >= bits.count { bits.append(contentsOf: repeatElement(0, count: word + 1 - bits.count)) }
        bits[word] |= 1 << UInt64(position & 63)
    }

    /// Marks by their position the keys among `identities` that were seen
    /// while the index did not hold them and that it holds now (written
    /// since), and lets go of the key table once it holds no key: a first
    /// load sees a million new keys, and this keeps about a page of them as
    /// keys instead of all of them (~50 MB at 1M).
    mutating func absorbIndexed(_ identities: [RecordIdentity]) {
        guard let index, !unindexed.isEmpty else { return }
        let candidates = identities.filter(unindexed.contains)
        guard !candidates.isEmpty else { return }
        for (identity, position) in zip(candidates, index.positions(of: candidates)) {
            guard let position else { continue }
            unindexed.remove(identity)
            mark(position)
        }
        // A removed key keeps its entry in the table: only a new table frees them.
        if unindexed.isEmpty { unindexed = IdentitySet() }
    }

    /// Unmarks `identity`; returns whether it was seen.
    @discardableResult
    mutating func remove(_ identity: RecordIdentity) -> Bool {
        var removed = unindexed.remove(identity)
        if let position = index?.position(of: identity), isMarked(position) {
            bits[position >> 6] &= ~(1 << UInt64(position & 63))
            removed = true
        }
        return removed
    }

    /// The same keys, marked by position in `other` where it holds them: a
    /// run's seen keys read back before its index was (a resumed run), or
    /// kept across an index read again (a fleet's closing step).
    func rebased(onto other: DigestIndex?) -> SeenKeys {
        guard other !== index else { return self }
        var moved = SeenKeys(index: other)
        var keys: [RecordIdentity] = []
        if let index {
            keys = index.identities(atPositions: (0..<(bits.count << 6)).filter(isMarked))
        }
        unindexed.forEach { keys.append($0) }
        _ = moved.insert(keys)
        return moved
    }
}
