import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import GRDB

extension SQLiteEngine {
    /// The writer's page cache (`PRAGMA cache_size`, negative: KiB).
    static let writerCacheSize = -32_768

    /// Opens the store's file at `path`: for writing, creating it or bringing
    /// its schema up to date (a pool in WAL mode); read-only, a queue that
    /// never writes, refusing a schema older or newer than this storesync's.
    static func open(_ path: String, readOnly: Bool) throws(StoreSyncError) -> SQLiteEngine {
        guard !readOnly else {
            return SQLiteEngine(pool: try openReadOnly(path), path: path, fileIdentity: nil)
        }
        let pool: DatabasePool
        do {
            try FileManager.default.createDirectory(
                atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            configuration.prepareDatabase { db in
                // NORMAL is durable across process crashes in WAL mode; only a
                // power loss can drop the last transactions, never corrupt.
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                // 32 MiB instead of 2 for the writer: the key index pages a night
                // with scattered keys touches stay cached (64 MiB measured no faster
                // at 1M records, a first load building the index once at its end).
                // Readers scan (digests, exports) and keep the default: a reader per
                // pool slot with a large cache would cost memory for nothing.
                if !db.configuration.readonly {
                    try db.execute(sql: "PRAGMA cache_size = \(Self.writerCacheSize)")
                }
            }
            pool = try DatabasePool(path: path, configuration: configuration)
            try Schema.migrator.migrate(pool)
            try pool.write { db in
                try db.execute(sql: Schema.keyIndex)
                try db.execute(sql: Schema.entityKeyIndex)
            }
        } catch {
            throw .storage(path: path, reason: "cannot open: \(error)")
        }
        return SQLiteEngine(pool: pool, path: path, fileIdentity: FileIdentity(path))
    }

    /// The device and inode of a file, as it was when the store opened it for writing.
    struct FileIdentity: Equatable {
        let device: UInt64
        let inode: UInt64

        init?(_ path: String) {
            var info = stat()
            guard stat(path, &info) == 0 else { return nil }
            device = UInt64(info.st_dev)
            inode = UInt64(info.st_ino)
        }
    }

    /// SQLite in WAL mode goes on writing an unlinked file without an error,
    /// so a run whose store was removed or replaced would otherwise end ok
    /// and the next night start over.
    func checkInPlace() throws(StoreSyncError) {
        guard let fileIdentity else { return }
        let now = FileIdentity(path)
        guard let now, now == fileIdentity else {
            throw StoreSyncError(.storeLost, now == nil
                ? "the store was removed while this run wrote it; what the run stored went with it"
                : "the store was replaced by another file while this run wrote it; what the run stored is not in it",
                place: .store(path),
                remedy: "Restore the store (and its .history marker) from a backup and run the job again; "
                    + "nothing of this night was exported. To start over on purpose, run once with --new-store")
        }
    }

    private static func openReadOnly(_ path: String) throws(StoreSyncError) -> DatabaseQueue {
        guard FileManager.default.fileExists(atPath: path) else {
            throw .storage(path: path, reason: "no store here")
        }
        let queue: DatabaseQueue
        let (complete, superseded): (Bool, Bool)
        do {
            var configuration = Configuration()
            configuration.readonly = true
            configuration.busyMode = .timeout(10)
            if let immutable = immutableFilename(path) {
                // A SQLite built without URI filenames takes it for a file name and fails: the plain open follows.
                queue = try (try? DatabaseQueue(path: immutable, configuration: configuration))
                    ?? DatabaseQueue(path: path, configuration: configuration)
            } else {
                queue = try DatabaseQueue(path: path, configuration: configuration)
            }
            (complete, superseded) = try queue.read { db in
                (try Schema.migrator.hasCompletedMigrations(db), try Schema.migrator.hasBeenSuperseded(db))
            }
        } catch {
            throw .storage(path: path, reason: "cannot open read-only: \(error)")
        }
        if superseded {
            throw .storage(path: path, reason: "the store was written by a newer storesync; use that version to read it")
        }
        if !complete {
            throw .storage(path: path, reason: "the store's schema is older than this storesync; a read-only open does not "
                           + "upgrade it: `storesync run` the job once (it migrates under the run lock), then read it")
        }
        return queue
    }

    /// The URI filename that opens the store at `path` as immutable, when that
    /// is both needed and true: its folder is not writable (so no run can
    /// write there: a run must create the `-wal` beside it) and no `-wal` is
    /// there. A WAL-mode store read through SQLite's read-only mode needs a
    /// `-shm` beside it, which such a folder cannot take (SQLite error 8,
    /// "attempt to write a readonly database"); an immutable one needs none
    /// and takes no locks. Nil otherwise: read-only mode (`SQLITE_OPEN_READONLY`)
    /// then sees a run's committed pages while it writes.
    static func immutableFilename(_ path: String) -> String? {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        let folder = (absolute as NSString).deletingLastPathComponent
        guard !FileManager.default.fileExists(atPath: absolute + "-wal"),
              access(folder, W_OK) != 0,
              let encoded = absolute.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) else { return nil }
        return "file:\(encoded)?mode=ro&immutable=1"
    }

    /// Copies the store at `source`, consistently and without writing to it,
    /// to a new file at `destination` (SQLite's online backup, which sees one
    /// committed state even while another process writes): a dry run works on such a copy.
    static func copy(from source: String, to destination: String) throws(StoreSyncError) {
        do {
            var configuration = Configuration()
            configuration.readonly = true
            let original = try DatabaseQueue(path: source, configuration: configuration)
            let copy = try DatabaseQueue(path: destination)
            try original.backup(to: copy)
            try copy.close()
            try original.close()
        } catch {
            throw .storage(path: source, reason: "cannot copy the store for a dry run: \(error)")
        }
    }

}
