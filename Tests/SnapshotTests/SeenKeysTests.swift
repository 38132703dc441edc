import Catalog
import Testing
import TestSupport
@testable import Snapshot

/// A run's seen keys are bits beside the digest index for the keys it holds
/// and keys for the others: they must answer as a plain set does while the
/// index changes under them (keys written and removed during the run), when
/// rebased onto an index read again, and in the removal pass's question
/// (which stored keys were not seen).
@Suite struct SeenKeysTests {
    private static func digest(_ n: Int) -> StoredDigest { StoredDigest(hash: Int64(n), rawHash: nil, rowid: Int64(n)) }

    private static func index(_ identities: [RecordIdentity]) -> DigestIndex {
        var table = IdentityTable<StoredDigest>()
        for (n, identity) in identities.enumerated() { table.insert(identity, digest(n)) }
        return DigestIndex(table)
    }

    @Test func answersAsASetDoesWhileTheIndexChanges() {
        var generator = SeededGenerator(seed: 2611)
        let keys = (0..<4_000).map { RecordIdentity(entity: $0 % 3 == 0 ? .podcast : .record, key: "k\($0 % 2_900)") }
        var stored = Set(keys.prefix(2_000))
        var index = Self.index(Array(stored).sorted { $0.key < $1.key })
        var seen = SeenKeys(index: index)
        var model = Set<RecordIdentity>()
        for step in 0..<40_000 {
            let identity = keys.randomElement(using: &generator)!
            switch generator.next() % 10 {
            case 0...3:
                #expect(seen.insert(identity) == model.insert(identity).inserted, "insert \(identity) at \(step)")
            case 4:
                // A page of keys at once, with a key twice in it.
                let page = [identity, keys.randomElement(using: &generator)!, identity]
                let expected = page.map { model.insert($0).inserted }
                #expect(seen.insert(page) == expected, "page at \(step)")
            case 5:
                #expect(seen.remove(identity) == (model.remove(identity) != nil), "remove \(identity) at \(step)")
            case 6:
                // The run writes the key (added or changed) or removes it from the store.
                if generator.next() % 2 == 0 {
                    index.update([(identity, Self.digest(step))])
                    stored.insert(identity)
                    // As the store does once a page is committed.
                    if generator.next() % 2 == 0 { seen.absorbIndexed([identity]) }
                } else {
                    index.update([(identity, nil)])
                    stored.remove(identity)
                }
            case 7 where step % 97 == 0:
                // Read again (a fleet's closing step): the same keys, by their new positions.
                index = Self.index(Array(stored).sorted { $0.key < $1.key })
                seen = seen.rebased(onto: index)
            default:
                #expect(seen.contains(identity) == model.contains(identity), "contains \(identity) at \(step)")
            }
        }
        let unseen = index.identities(unseenIn: seen, limit: .max)
        #expect(unseen.map(Set.init) == stored.subtracting(model), "the stored keys not seen")
        #expect(unseen?.count == Set(unseen ?? []).count, "each listed once")
    }

    /// A first load: every key new, seen, then written page by page. Once a
    /// page is in the index its keys are bits, so the seen keys held as keys
    /// never exceed a page, and the set answers as before.
    @Test func aFirstLoadHoldsAPageOfKeysAsKeys() {
        let index = Self.index([])
        var seen = SeenKeys(index: index)
        var written: [RecordIdentity] = []
        for page in 0..<20 {
            let keys = (0..<500).map { RecordIdentity(entity: .record, key: "p\(page)-\($0)") }
            let inserted = seen.insert(keys)
            #expect(inserted.allSatisfy { $0 })
            #expect(seen.keysHeld == 500)
            index.update(keys.enumerated().map { ($1, Self.digest(page * 500 + $0)) })
            seen.absorbIndexed(keys)
            #expect(seen.keysHeld == 0)
            written += keys
        }
        #expect(written.allSatisfy(seen.contains))
        let again = seen.insert(written[1_234])
        #expect(!again, "seen already")
        #expect(index.identities(unseenIn: seen, limit: .max) == [])
        let removed = seen.remove(written[7])
        #expect(removed)
        #expect(index.identities(unseenIn: seen, limit: .max) == [written[7]])
    }

    /// Marks made before the index was read (a resumed run's pages) count once rebased, and
    /// the removal pass asked of another index than the one marked answers the same.
    @Test func rebasedAndForeignMarksAnswerTheSame() {
        let stored = (0..<1_000).map { RecordIdentity(entity: .record, key: String($0)) }
        var early = SeenKeys(index: nil)
        _ = early.insert(Array(stored[0..<600]) + [RecordIdentity(entity: .record, key: "new")])
        let index = Self.index(stored)
        let expected = Set(stored[600...])
        #expect(index.identities(unseenIn: early, limit: .max).map(Set.init) == expected, "marks of no index")
        let rebased = early.rebased(onto: index)
        #expect(rebased.index === index)
        #expect(index.identities(unseenIn: rebased, limit: .max).map(Set.init) == expected, "marks by position")
        #expect(rebased.contains(RecordIdentity(entity: .record, key: "new")) && rebased.contains(stored[0]))
        #expect(!rebased.contains(stored[700]))
        let other = Self.index(stored.reversed())
        #expect(other.identities(unseenIn: rebased, limit: .max).map(Set.init) == expected, "marks of another index")
        #expect(index.identities(unseenIn: rebased, limit: 10) == nil, "nil past the limit")
    }
}
