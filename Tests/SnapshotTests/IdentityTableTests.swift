import Catalog
import Testing
import TestSupport
@testable import Snapshot

/// The compact key table behind the digest index and the seen keys must
/// answer as a dictionary would, through growth, removal and return.
@Suite struct IdentityTableTests {
    @Test func answersAsADictionaryDoes() {
        var generator = SeededGenerator(seed: 26)
        var table = IdentityTable<Int64>()
        var model: [RecordIdentity: Int64] = [:]
        // Keys that collide in every way a table can be fooled: the same key
        // under two entities, a key and its prefix, the empty key, long and non-ASCII keys.
        let keys = (0..<3_000).map { n -> String in
            switch n % 6 {
            case 0: String(n)
            case 1: String(n / 6)
            case 2: ""
            case 3: "é😀\(n)"
            case 4: String(repeating: "k", count: n % 97) + "\u{0}"
            default: "https://example.com/\(n)?uo=4"
            }
        }
        let entities: [EntityKind] = [.record, .podcast, .episode]
        for step in 0..<60_000 {
            let identity = RecordIdentity(entity: entities.randomElement(using: &generator)!, key: keys.randomElement(using: &generator)!)
            switch generator.next() % 4 {
            case 0, 1:
                let value = Int64(step)
                #expect(table.insert(identity, value) == (model[identity] == nil))
                model[identity] = value
            case 2:
                #expect(table.remove(identity) == (model.removeValue(forKey: identity) != nil))
            default:
                #expect(table[identity] == model[identity])
                #expect(table.contains(identity) == (model[identity] != nil))
            }
        }
        #expect(table.count == model.count)
        var listed: [RecordIdentity: Int64] = [:]
        table.forEach { identity, value in
            #expect(listed.updateValue(value, forKey: identity) == nil, "each key listed once")
        }
        #expect(listed == model)
    }

    /// Past one segment of entries (65,536), and through several growths of the slots.
    @Test func holdsMoreKeysThanOneSegment() {
        var table = IdentityTable<Int64>()
        let identities = (0..<150_000).map { RecordIdentity(entity: $0 % 2 == 0 ? .record : .listing, key: "k\($0 / 2)") }
        var fresh = 0
        for (position, identity) in identities.enumerated() where table.insert(identity, Int64(position)) { fresh += 1 }
        #expect(fresh == identities.count)
        for position in stride(from: 0, to: identities.count, by: 3) { table.remove(identities[position]) }
        #expect(table.count == 100_000)
        var seen = 0
        table.forEach { identity, value in
            seen += 1
            if identities[Int(value)] != identity || value % 3 == 0 { Issue.record("\(identity) holds \(value)") }
        }
        #expect(seen == 100_000)
        #expect(table[identities[149_999]] == 149_999 && table[identities[149_997]] == nil)
        #expect(table.insert(identities[3], 7) && table[identities[3]] == 7, "a removed key comes back, in any segment")
    }

    @Test func aSetIsItsKeys() {
        var set: IdentitySet = []
        let a = RecordIdentity(entity: .record, key: "1"), b = RecordIdentity(entity: .song, key: "1")
        let inserted = [set.insert(a), set.insert(b), set.insert(a)]
        #expect(inserted == [true, true, false])
        #expect(set.count == 2 && set.contains(b))
        let removed = [set.remove(a), set.remove(a)]
        #expect(removed == [true, false] && !set.contains(a))
        let back = set.insert(a)
        #expect(back, "a removed key comes back")
        var copy = set
        copy.insert(RecordIdentity(entity: .app, key: "x"))
        #expect(set.count == 2 && copy.count == 3, "a copy is a value")
    }
}

/// A sweep finds the page memos that list a removed row in their key lists
/// without parsing them (``SQLSnapshotStore/KeyListLines``).
@Suite struct KeyListLinesTests {
    @Test func findsAWholeLineAndNothingElse() {
        let gone = [RecordIdentity(entity: .listing, key: "42"), RecordIdentity(entity: .record, key: "é 7")]
        let lines = SQLSnapshotStore.KeyListLines(gone)
        #expect(lines.anyListed(in: "listing\t1\nlisting\t42\nlisting\t43\n"))
        #expect(lines.anyListed(in: "record\té 7"), "the last line needs no newline")
        #expect(!lines.anyListed(in: "listing\t420\nlisting\t4\nsong\t42\nlisting\t42 \n"), "a prefix, another entity or a longer line is not the row")
        #expect(!lines.anyListed(in: ""))
        #expect(!SQLSnapshotStore.KeyListLines([]).anyListed(in: "listing\t42\n"))
    }
}
