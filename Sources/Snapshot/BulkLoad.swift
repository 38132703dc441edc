import Catalog
import GRDB

extension SQLiteSnapshotStore {
    /// Prepares a first load into an empty snapshot: drops the key index, to be
    /// built once, sorted, by ``endBulkLoad()``. Returns whether it did.
    ///
    /// Each page is its own transaction (a kill loses at most a page), and
    /// scattered keys land on most leaves of a key index: at 1M records every
    /// commit rewrote tens of MB of index pages into the WAL, and the load was
    /// bound by that. The store itself never needs the index while loading (it
    /// diffs against its digest index and rewrites rows by rowid), and every
    /// row of a first load is new, so nothing is looked up by key. A run killed
    /// in between leaves the index missing; opening the store builds it again.
    package func beginBulkLoad() throws(StoreSyncError) -> Bool {
        try wrap {
            try pool.write { db in
                guard try Bool.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM records)") == true else { return false }
                try db.execute(sql: "DROP INDEX IF EXISTS records_by_key")
                return true
            }
        }
    }

    /// Builds the key index a bulk load dropped (one sorted pass over the records).
    package func endBulkLoad() throws(StoreSyncError) {
        try wrap { try pool.write { db in try db.execute(sql: Schema.keyIndex) } }
    }
}
