import Catalog
import Foundation
import GRDB
@testable import Snapshot
import Testing

/// A store failure says what failed in words and keeps the engine's own error
/// underneath, so a caller can branch on it (a full disk, a busy database).
@Suite struct StoreErrorCauseTests {
    let files = StoreFiles("store-error-cause")

    @Test func aStoreFailureKeepsTheEnginesError() throws {
        let store = try SQLSnapshotStore(path: files.path("cause"))
        do {
            try store.wrap { try store.engine.read { db in _ = try db.rows("SELECT * FROM no_such_table") } }
            Issue.record("a read of a missing table did not fail")
        } catch {
            #expect(error.code == .storage)
            #expect(error.place == .store(files.path("cause")))
            let cause = try #require(error.cause as? DatabaseError)
            #expect(cause.resultCode == .SQLITE_ERROR)
            #expect(error.description.contains("no such table: no_such_table"))
            // Said once: the message already quotes the cause.
            #expect(error.description.components(separatedBy: "no such table").count == 2, "\(error.description)")
        }
    }
}
