import Foundation
import GRDB
import Snapshot

/// A downstream copy of the consumer database that follows it by changesets
/// alone (issue 30, item 6): started from a copy of the first night's file,
/// then each night the changeset from the run it holds to the run published
/// is applied, with libsqlite3's own `sqlite3changeset_apply`, and the copy
/// must equal the published file.
public struct ChangesetReplica {
    public let replica: URL
    public let published: URL
    public let changesets: URL
    public private(set) var started = false

    public init(replica: URL, published: URL, changesets: URL) {
        self.replica = replica
        self.published = published
        self.changesets = changesets
    }

    /// Brings the replica to the file published now; returns its problems.
    public mutating func follow() throws -> [String] {
        guard started else {
            try? FileManager.default.removeItem(at: replica)
            try FileManager.default.copyItem(at: published, to: replica)
            started = true
            return []
        }
        let held = try Self.lastRun(replica), now = try Self.lastRun(published)
        let name = "\(held)-\(now).changeset"
        guard let changeset = try? Data(contentsOf: changesets.appendingPathComponent(name)) else {
            let there = (try? FileManager.default.contentsOfDirectory(atPath: changesets.path))?.sorted() ?? []
            return ["no changeset \(name) for a replica at run \(held) (the folder holds \(there.joined(separator: ", ")))"]
        }
        try SQLiteChangeset.apply(changeset, to: replica.path)
        return try Self.differences(replica, published)
    }

    public static func lastRun(_ url: URL) throws -> Int64 {
        try DatabaseQueue(path: url.path).read { db in try Int64.fetchOne(db, sql: "SELECT max(id) FROM runs") ?? 0 }
    }

    /// Where `copy` differs from `original`: a table's rows (every table a
    /// changeset carries, compared whole, ids included), a full-text index
    /// that fails its integrity check against its table, or whose terms,
    /// documents and counts differ (read through fts5vocab).
    public static func differences(_ copy: URL, _ original: URL) throws -> [String] {
        var problems: [String] = []
        let queue = try DatabaseQueue(path: copy.path)
        try queue.writeWithoutTransaction { db in
            try db.execute(sql: "ATTACH DATABASE ? AS original", arguments: [original.path])
            let tables = try String.fetchAll(db, sql: """
                SELECT name FROM original.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'
                  AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' AND name NOT GLOB '*_fts_*' ORDER BY name
                """)
            for table in tables {
                let quoted = "\"\(table)\""
                let missing = try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT * FROM original.\(quoted) EXCEPT SELECT * FROM main.\(quoted))") ?? 0
                let extra = try Int.fetchOne(db, sql: "SELECT count(*) FROM (SELECT * FROM main.\(quoted) EXCEPT SELECT * FROM original.\(quoted))") ?? 0
                if missing + extra > 0 { problems.append("\(table): \(missing) rows of the published file missing, \(extra) rows it lacks") }
            }
            let indexes = try String.fetchAll(db, sql: "SELECT name FROM original.sqlite_master WHERE sql LIKE 'CREATE VIRTUAL TABLE%fts5%'")
            for index in indexes {
                do {
                    // rank 1: the index is also checked against its content table's rows.
                    try db.execute(sql: "INSERT INTO main.\"\(index)\" (\"\(index)\", rank) VALUES ('integrity-check', 1)")
                } catch {
                    problems.append("\(index): fails its integrity check: \(error)")
                }
                try db.execute(sql: "CREATE VIRTUAL TABLE temp.copy_terms USING fts5vocab(main, '\(index)', 'row')")
                try db.execute(sql: "CREATE VIRTUAL TABLE temp.original_terms USING fts5vocab(original, '\(index)', 'row')")
                let differing = try Int.fetchOne(db, sql: """
                    SELECT count(*) FROM (SELECT * FROM (SELECT term, doc, cnt FROM temp.copy_terms EXCEPT SELECT term, doc, cnt FROM temp.original_terms)
                                          UNION ALL SELECT * FROM (SELECT term, doc, cnt FROM temp.original_terms EXCEPT SELECT term, doc, cnt FROM temp.copy_terms))
                    """) ?? 0
                if differing > 0 { problems.append("\(index): \(differing) terms index other documents than the published file's") }
                try db.execute(sql: "DROP TABLE temp.copy_terms; DROP TABLE temp.original_terms")
            }
            try db.execute(sql: "DETACH DATABASE original")
        }
        return problems
    }
}
