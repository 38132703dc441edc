@testable import Snapshot
import Testing

/// The digest index keeps one ``StoredDigest`` per stored record: its packed
/// form must give back exactly what it was given.
@Suite struct StoredDigestTests {
    @Test(arguments: [0, 1, 42, 1 << 40, (1 << 62) - 1, -1, -(1 << 40)] as [Int64])
    func rowidAndRawHashRoundTrip(rowid: Int64) {
        for rawHash in [nil, Int64(0), 1, -1, .min, .max] as [Int64?] {
            var digest = StoredDigest(hash: .min, rawHash: rawHash, rowid: rowid)
            #expect(digest.hash == .min)
            #expect(digest.rawHash == rawHash, "raw hash \(String(describing: rawHash)), rowid \(rowid)")
            #expect(digest.rowid == rowid)
            // The store sets the rowid after the insert: the raw hash stays.
            digest.rowid = rowid / 2 + 7
            #expect(digest.rowid == rowid / 2 + 7)
            #expect(digest.rawHash == rawHash)
        }
    }

    @Test func threeWordsPerDigest() {
        // A million-record index holds a million of them (and a Dictionary's spare slots).
        #expect(MemoryLayout<StoredDigest>.stride == 24)
    }
}
