import Catalog
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A map from record identities to a small fixed-size value, laid out for a
/// million keys and more: every key's bytes in one arena, entries in
/// fixed-size segments, and an open-addressing array of 64-bit slots
/// pointing into them.
///
/// A `[RecordIdentity: StoredDigest]` took ~100 B a key at 1M records (its
/// table is a power of two, at most three quarters full, of 48-byte
/// buckets), and the run's `Set<RecordIdentity>` of seen keys ~50 B more;
/// here a key costs its bytes, 16 B of entry, the value and 8–16 B of slots.
/// A slot holds the key's 32-bit hash beside its entry's number, so a probe
/// passes another key's slot without reading that key's entry: at 1M keys
/// every entry read is a cache miss, and loading a source's digests probed
/// ~2.5 slots a key.
/// Entries grow a segment at a time: a million-entry array that doubles
/// holds the old copy and the new one at once, tens of MB at the peak.
/// Removing a key marks its entry removed (the entry and its slot stay, and
/// the key comes back into the same entry): a run removes few keys, and each
/// run reads its tables afresh.
struct IdentityTable<Value: BitwiseCopyable & Sendable>: Sendable {
    private struct Entry: Sendable {
        /// Where the key's UTF-8 bytes start in ``arena``, shifted left 8
        /// bits, and the entity's code in the low byte.
        var startAndEntity: UInt64
        /// The key's byte count, with ``removedBit`` set once it is removed.
        var length: UInt32
        var hash: UInt32
        var value: Value

        var start: Int { Int(startAndEntity >> 8) }
        var entity: UInt8 { UInt8(truncatingIfNeeded: startAndEntity) }
    }

    private static var removedBit: UInt32 { 1 << 31 }
    private static var segmentShift: Int { 16 }
    private static var segmentSize: Int { 1 << segmentShift }

    private var arena: [UInt8] = []
    private var segments: [[Entry]] = []
    private var entryCount = 0
    /// 0 for an empty slot, else the key's hash in the high 32 bits and its
    /// entry's index plus one in the low 32. Never more than half full, so a
    /// probe ends soon.
    private var slots: [UInt64]
    /// Keys held (removed ones not counted).
    private(set) var count = 0

    init(minimumCapacity: Int = 0) {
        var size = 16
        while size < 2 * minimumCapacity { size <<= 1 }
        slots = Array(repeating: 0, count: size)
        arena.reserveCapacity(minimumCapacity * 12)
    }

    var isEmpty: Bool { count == 0 }

    private static func entityCode(_ entity: EntityKind) -> UInt8 {
        UInt8(EntityCodes.all.firstIndex(of: entity)!)
    }

    private static func hash(_ entity: UInt8, _ key: UnsafeBufferPointer<UInt8>) -> UInt32 {
        let full = XXH64.hash(key, seed: UInt64(entity))
        return UInt32(truncatingIfNeeded: full ^ (full >> 32))
    }

    private static func slot(hash: UInt32, entry index: Int) -> UInt64 {
        UInt64(hash) << 32 | UInt64(index + 1)
    }

    private func entry(_ index: Int) -> Entry {
        segments[index >> Self.segmentShift][index & (Self.segmentSize - 1)]
    }

    private mutating func update(_ index: Int, _ body: (inout Entry) -> Void) {
        body(&segments[index >> Self.segmentShift][index & (Self.segmentSize - 1)])
    }

    /// The slot holding `key`, or the empty slot where it would go.
    private func probe(_ entity: UInt8, _ key: UnsafeBufferPointer<UInt8>, hash: UInt32) -> (slot: Int, entry: Int?) {
        let mask = slots.count - 1
        var slot = Int(hash) & mask
        while true {
            let held = slots[slot]
            guard held != 0 else { return (slot, nil) }
            let index = Int(UInt32(truncatingIfNeeded: held)) - 1
            if UInt32(truncatingIfNeeded: held >> 32) == hash, case let entry = entry(index), entry.entity == entity,
               Int(entry.length & ~Self.removedBit) == key.count,
               arena.withUnsafeBufferPointer({ arena in
                   key.isEmpty || memcmp(arena.baseAddress! + entry.start, key.baseAddress!, key.count) == 0
               }) {
                return (slot, index)
            }
            slot = (slot + 1) & mask
        }
    }

    private func find(_ identity: RecordIdentity) -> Int? {
        var key = identity.key
        let entity = Self.entityCode(identity.entity)
        return key.withUTF8 { bytes in
            guard let index = probe(entity, bytes, hash: Self.hash(entity, bytes)).entry,
                  entry(index).length & Self.removedBit == 0 else { return nil }
            return index
        }
    }

    func contains(_ identity: RecordIdentity) -> Bool { find(identity) != nil }

    /// The entry of `identity`, held or removed: a position that stays the
    /// key's for as long as the table lives (a removed key that comes back
    /// takes its entry again), so a caller can keep a flag per key in a
    /// bitset beside the table.
    func position(of identity: RecordIdentity) -> Int? {
        var key = identity.key
        let entity = Self.entityCode(identity.entity)
        return key.withUTF8 { bytes in probe(entity, bytes, hash: Self.hash(entity, bytes)).entry }
    }

    /// The key at `position` (``position(of:)``), held or removed.
    func identity(atPosition position: Int) -> RecordIdentity {
        identity(of: entry(position))
    }

    private func identity(of entry: Entry) -> RecordIdentity {
        let length = Int(entry.length & ~Self.removedBit)
        let key = arena.withUnsafeBufferPointer { arena in
            String(decoding: UnsafeBufferPointer(rebasing: arena[entry.start..<(entry.start + length)]), as: UTF8.self)
        }
        return RecordIdentity(entity: EntityCodes.all[Int(entry.entity)], key: key)
    }

    /// Calls `body` with every key held whose position `skip` does not
    /// exclude, in the order first inserted; a skipped key costs no String.
    func forEach(skipping skip: (Int) -> Bool, _ body: (RecordIdentity) throws -> Void) rethrows {
        for (number, segment) in segments.enumerated() {
            let base = number << Self.segmentShift
            for (offset, entry) in segment.enumerated() where entry.length & Self.removedBit == 0 && !skip(base + offset) {
                try body(identity(of: entry))
            }
        }
    }

    subscript(identity: RecordIdentity) -> Value? {
        get { find(identity).map { entry($0).value } }
        set {
            if let newValue { _ = insert(identity, newValue) } else { remove(identity) }
        }
    }

    /// Sets the value of `identity`; returns whether the key was not held before.
    @discardableResult
    mutating func insert(_ identity: RecordIdentity, _ value: Value) -> Bool {
        var key = identity.key
        return key.withUTF8 { bytes in insert(identity.entity, keyBytes: bytes, value) }
    }

    /// ``insert(_:_:)`` of a key given as its UTF-8 bytes (a row read from
    /// the store): no String made for it.
    @discardableResult
    mutating func insert(_ entityKind: EntityKind, keyBytes bytes: UnsafeBufferPointer<UInt8>, _ value: Value) -> Bool {
        if 2 * (entryCount + 1) > slots.count { grow() }
        let entity = Self.entityCode(entityKind)
        let hash = Self.hash(entity, bytes)
        let (slot, found) = probe(entity, bytes, hash: hash)
        if let found {
            let wasRemoved = entry(found).length & Self.removedBit != 0
            update(found) { entry in
                entry.length &= ~Self.removedBit
                entry.value = value
            }
            if wasRemoved { count += 1 }
            return wasRemoved
        }
        let start = arena.count
        arena.append(contentsOf: bytes)
        if entryCount & (Self.segmentSize - 1) == 0 {
            segments.append([])
            // The first segment grows as it fills (most tables are small); the next ones are full at once.
            if entryCount > 0 { segments[segments.count - 1].reserveCapacity(Self.segmentSize) }
        }
        segments[segments.count - 1].append(Entry(startAndEntity: UInt64(start) << 8 | UInt64(entity),
                                                  length: UInt32(bytes.count), hash: hash, value: value))
        entryCount += 1
        slots[slot] = Self.slot(hash: hash, entry: entryCount - 1)
        count += 1
        return true
    }

    /// Removes `identity`; returns whether it was held.
    @discardableResult
    mutating func remove(_ identity: RecordIdentity) -> Bool {
        guard let index = find(identity) else { return false }
        update(index) { $0.length |= Self.removedBit }
        count -= 1
        return true
    }

    private mutating func grow() {
        slots = Array(repeating: 0, count: slots.count * 2)
        let mask = slots.count - 1
        for index in 0..<entryCount {
            var slot = Int(entry(index).hash) & mask
            while slots[slot] != 0 { slot = (slot + 1) & mask }
            slots[slot] = Self.slot(hash: entry(index).hash, entry: index)
        }
    }

    /// Calls `body` with every key held and its value, in the order first inserted.
    func forEach(_ body: (RecordIdentity, Value) throws -> Void) rethrows {
        for segment in segments {
            try forEach(in: segment, body)
        }
    }

    private func forEach(in segment: [Entry], _ body: (RecordIdentity, Value) throws -> Void) rethrows {
        for entry in segment where entry.length & Self.removedBit == 0 {
            try body(identity(of: entry), entry.value)
        }
    }
}

/// Entity kinds by the byte ``IdentityTable`` stores for them.
private enum EntityCodes {
    static let all = EntityKind.allCases
}

/// A set of record identities over ``IdentityTable``: a run's seen keys.
struct IdentitySet: Sendable, ExpressibleByArrayLiteral {
    private struct Present: BitwiseCopyable, Sendable {}
    private var table: IdentityTable<Present>

    init(minimumCapacity: Int = 0) {
        table = IdentityTable(minimumCapacity: minimumCapacity)
    }

    init(arrayLiteral identities: RecordIdentity...) {
        self.init(identities)
    }

    init(_ identities: some Sequence<RecordIdentity>) {
        table = IdentityTable(minimumCapacity: identities.underestimatedCount)
        for identity in identities { table.insert(identity, Present()) }
    }

    var count: Int { table.count }
    var isEmpty: Bool { table.isEmpty }

    func contains(_ identity: RecordIdentity) -> Bool { table.contains(identity) }

    /// Adds `identity`; returns whether it was not in the set.
    @discardableResult
    mutating func insert(_ identity: RecordIdentity) -> Bool { table.insert(identity, Present()) }

    @discardableResult
    mutating func remove(_ identity: RecordIdentity) -> Bool { table.remove(identity) }

    func forEach(_ body: (RecordIdentity) throws -> Void) rethrows {
        try table.forEach { identity, _ in try body(identity) }
    }
}
