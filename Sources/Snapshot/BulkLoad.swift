import Catalog
import GRDB

extension SQLSnapshotStore {
    /// Prepares a first load into an empty snapshot: drops the key indexes of
    /// records and entities, to be built once, sorted, by ``endBulkLoad()``,
    /// and takes the first-load path (``applyFirstLoad(_:)``) for the pages
    /// that follow. Returns whether it did.
    ///
    /// Each page is its own transaction (a kill loses at most a page), and
    /// scattered keys land on most leaves of a key index: at 1M records every
    /// commit rewrote tens of MB of index pages into the WAL, and the load was
    /// bound by that. The store itself never needs the indexes while loading
    /// (it diffs against its digest index, rewrites rows by rowid, and knows
    /// which entities it wrote), and every row of a first load is new. A run
    /// killed in between leaves the indexes missing; opening the store builds
    /// them again.
    ///
    /// The load also runs with `synchronous = OFF`: WAL frames are not synced
    /// at each checkpoint, which a kill -9 cannot tell (the operating system
    /// holds what was written), and ``endBulkLoad()`` syncs everything once.
    package func beginBulkLoad() throws(StoreSyncError) -> Bool {
        // PostgreSQL's indexes are shared with the workers loading beside this one: none is dropped.
        guard sqlite != nil else { return false }
        // Outside a transaction: SQLite refuses to change the safety level within one.
        try wrap { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = OFF") } }
        let began: Bool
        do {
            began = try wrap {
                try pool.write { db in
                    guard try Bool.fetchOne(db, sql: """
                        SELECT NOT EXISTS (SELECT 1 FROM records) AND NOT EXISTS (SELECT 1 FROM entities)
                        """) == true else { return false }
                    try db.execute(sql: "DROP INDEX IF EXISTS records_by_key")
                    try db.execute(sql: "DROP INDEX IF EXISTS entities_by_key")
                    return true
                }
            }
        } catch {
            try? wrap { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") } }
            throw error
        }
        guard began else {
            try wrap { try pool.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous = NORMAL") } }
            return false
        }
        firstLoad.withLock { $0 = FirstLoadState() }
        return true
    }

    /// Builds the key indexes a bulk load dropped (one sorted pass each) and
    /// makes the load durable: the store's usual safety level again, and a
    /// checkpoint that syncs the WAL and the database file.
    package func endBulkLoad() throws(StoreSyncError) {
        guard sqlite != nil else { return }
        firstLoad.withLock { $0 = nil }
        try wrap {
            try pool.write { db in
                try db.execute(sql: Schema.keyIndex)
                try db.execute(sql: Schema.entityKeyIndex)
            }
            try pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.execute(sql: "PRAGMA wal_checkpoint(PASSIVE)")
            }
        }
    }
}
