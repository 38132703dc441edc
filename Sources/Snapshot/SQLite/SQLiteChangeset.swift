import Foundation
import GRDB
import GRDBSQLite

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// SQLite changesets (the session extension) between two versions of a file:
/// what turns last night's consumer database into tonight's, applied by a
/// replica with `sqlite3changeset_apply` (or apsw's `Changeset.apply`).
///
/// The extension's functions are looked up when first used, not linked: a
/// system SQLite built without `SQLITE_ENABLE_SESSION` still runs every other
/// export, and this one says what it lacks (``ChangesetError/unavailable(_:)``).
/// Debian's libsqlite3 has it; its header hides the declarations behind that
/// same macro, which GRDB's module map does not define.
package enum SQLiteChangeset {
    /// A changeset's effect on one file: what ``diff(from:to:)`` found.
    package struct Diff: Sendable {
        /// The changeset's bytes; empty when the files hold the same rows.
        package var bytes: Data
        /// Rows the changeset inserts, updates and deletes, by table.
        package var tables: [String: Int]
        /// Rows the changeset inserts, updates and deletes, summed over its tables.
        package var changes: Int { tables.values.reduce(0, +) }
    }

    /// Why a changeset could not be made or applied.
    package enum ChangesetError: Error, CustomStringConvertible, Equatable {
        /// The SQLite in this process lacks the session extension.
        case unavailable(String)
        /// The two files' tables, indexes, views or triggers differ: a changeset
        /// carries rows, never schema, so a replica must copy the new file whole.
        case schemaChanged(String)
        /// A table without a primary key, whose rows a changeset would silently skip.
        case noPrimaryKey(String)
        /// SQLite refused (with its message).
        case sqlite(String)
        /// Applying met a row that is not as the changeset expects: the
        /// replica is not at the changeset's starting point. Nothing was applied.
        case conflict(String)

        package var description: String {
            switch self {
            case .unavailable(let what):
                "this process's SQLite has no session extension (\(what)); changesets need a libsqlite3 built with "
                    + "SQLITE_ENABLE_SESSION and SQLITE_ENABLE_PREUPDATE_HOOK (Debian's and Homebrew's are)"
            case .schemaChanged(let what): "the schema changed: \(what)"
            case .noPrimaryKey(let table): "table \(table) has no primary key, so a changeset would skip its rows"
            case .sqlite(let message): message
            case .conflict(let what): "the database is not where the changeset starts (\(what)); nothing was applied"
            }
        }
    }

    /// Why this process's SQLite cannot make or apply changesets; nil when it can.
    package static var unavailableReason: String? {
        if case .failure(let error) = SessionAPI.shared { return error.description }
        return nil
    }

    /// The changeset that turns the file at `old` into the file at `new`
    /// (neither is written): every table with its rows, none of a full-text
    /// index's own tables, which the triggers of its content table keep in
    /// step where the changeset is applied.
    ///
    /// Throws ``ChangesetError/schemaChanged(_:)`` when the two files do not
    /// declare the same tables, indexes, views and triggers.
    package static func diff(from old: String, to new: String) throws -> Diff {
        let api = try SessionAPI.shared.get()
        var configuration = Configuration()
        configuration.readonly = true
        let queue = try DatabaseQueue(path: new, configuration: configuration)
        defer { try? queue.close() }
        return try queue.inDatabase { db in
            try db.execute(sql: "ATTACH DATABASE ? AS base", arguments: [old])
            defer { try? db.execute(sql: "DETACH DATABASE base") }
            if let difference = try schemaDifference(db) { throw ChangesetError.schemaChanged(difference) }
            let tables = try rowTables(db)
            guard let connection = db.sqliteConnection else { throw ChangesetError.sqlite("the database is closed") }
            var session: OpaquePointer?
            try check(api.create(connection, "main", &session), connection)
            defer { api.delete(session) }
            for table in tables {
                try check(api.attach(session, table), connection)
                var message: UnsafeMutablePointer<CChar>?
                let code = api.diff(session, "base", table, &message)
                if code != SQLITE_OK {
                    let text = message.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code))
                    sqlite3_free(message)
                    throw ChangesetError.sqlite("cannot compare table \(table): \(text)")
                }
            }
            var size: Int32 = 0
            var buffer: UnsafeMutableRawPointer?
            try check(api.changeset(session, &size, &buffer), connection)
            defer { sqlite3_free(buffer) }
            let bytes = buffer.map { Data(bytes: $0, count: Int(size)) } ?? Data()
            return Diff(bytes: bytes, tables: try rowsByTable(bytes, api: api))
        }
    }

    /// Applies `changeset` to the file at `path` in one transaction: all of it,
    /// or, at the first row that is not as the changeset expects, none of it
    /// (``ChangesetError/conflict(_:)``). Foreign keys are not enforced, as the
    /// consumer database declares them for readers only.
    package static func apply(_ changeset: Data, to path: String) throws {
        let api = try SessionAPI.shared.get()
        var configuration = Configuration()
        configuration.foreignKeysEnabled = false
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        defer { try? queue.close() }
        try queue.writeWithoutTransaction { db in
            guard let connection = db.sqliteConnection else { throw ChangesetError.sqlite("the database is closed") }
            let conflicts = ConflictLog()
            let code = changeset.withUnsafeBytes { raw in
                api.apply(connection, Int32(raw.count), UnsafeMutableRawPointer(mutating: raw.baseAddress), nil, { context, kind, _ in
                    // Any conflict aborts: the changeset undoes nothing and the file stays as it was.
                    Unmanaged<ConflictLog>.fromOpaque(context!).takeUnretainedValue().kinds.append(kind)
                    return 2  // SQLITE_CHANGESET_ABORT
                }, Unmanaged.passUnretained(conflicts).toOpaque())
            }
            if let first = conflicts.kinds.first {
                throw ChangesetError.conflict("\(conflicts.kinds.count) row(s) in conflict, the first: \(ConflictLog.name(first))")
            }
            try check(code, connection)
        }
    }

    // MARK: The files' shape

    /// Where the two files' declarations differ, or nil when they do not.
    private static func schemaDifference(_ db: Database) throws -> String? {
        func declarations(_ schema: String) throws -> [String: String] {
            var found: [String: String] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT type, name, sql FROM \(schema).sqlite_master") {
                let type: String = row["type"], name: String = row["name"]
                found["\(type) \(name)"] = row["sql"] ?? ""
            }
            return found
        }
        let before = try declarations("base"), after = try declarations("main")
        let added = after.keys.filter { before[$0] == nil }.sorted()
        let removed = before.keys.filter { after[$0] == nil }.sorted()
        let altered = after.keys.filter { before[$0] != nil && before[$0] != after[$0] }.sorted()
        var parts: [String] = []
        if !added.isEmpty { parts.append("added \(listed(added))") }
        if !removed.isEmpty { parts.append("removed \(listed(removed))") }
        if !altered.isEmpty { parts.append("redefined \(listed(altered))") }
        return parts.isEmpty ? nil : parts.joined(separator: "; ")
    }

    private static func listed(_ names: [String]) -> String {
        names.count <= 5 ? names.joined(separator: ", ") : names.prefix(5).joined(separator: ", ") + " and \(names.count - 5) more"
    }

    /// The tables whose rows a changeset carries, in the file's order: all
    /// but SQLite's own and the shadow tables of its virtual tables (a
    /// full-text index is the trigger's work on the replica, not rows to ship).
    private static func rowTables(_ db: Database) throws -> [String] {
        let virtual = try String.fetchAll(db, sql: "SELECT name FROM main.sqlite_master WHERE type = 'table' AND sql LIKE 'CREATE VIRTUAL TABLE%'")
        let shadowSuffixes = ["_data", "_idx", "_content", "_docsize", "_config"]
        var tables: [String] = []
        for name in try String.fetchAll(db, sql: """
            SELECT name FROM main.sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'
                AND sql NOT LIKE 'CREATE VIRTUAL TABLE%' ORDER BY rowid
            """) {
            if virtual.contains(where: { base in shadowSuffixes.contains { name == base + $0 } }) { continue }
            let keyed = try Bool.fetchOne(db, sql: "SELECT EXISTS (SELECT 1 FROM pragma_table_info(?) WHERE pk > 0)", arguments: [name]) ?? false
            guard keyed else { throw ChangesetError.noPrimaryKey(name) }
            tables.append(name)
        }
        return tables
    }

    /// How many rows `changeset` changes in each table.
    package static func rowsByTable(_ changeset: Data) throws -> [String: Int] {
        try rowsByTable(changeset, api: try SessionAPI.shared.get())
    }

    private static func rowsByTable(_ changeset: Data, api: SessionAPI) throws -> [String: Int] {
        guard !changeset.isEmpty else { return [:] }
        return try changeset.withUnsafeBytes { raw in
            var iterator: OpaquePointer?
            var code = api.start(&iterator, Int32(raw.count), UnsafeMutableRawPointer(mutating: raw.baseAddress))
            guard code == SQLITE_OK else { throw ChangesetError.sqlite(String(cString: sqlite3_errstr(code))) }
            var rows: [String: Int] = [:]
            while api.next(iterator) == SQLITE_ROW {
                var table: UnsafePointer<CChar>?
                var columns: Int32 = 0, operation: Int32 = 0, indirect: Int32 = 0
                guard api.operation(iterator, &table, &columns, &operation, &indirect) == SQLITE_OK, let table else { continue }
                rows[String(cString: table), default: 0] += 1
            }
            code = api.finalize(iterator)
            guard code == SQLITE_OK else { throw ChangesetError.sqlite(String(cString: sqlite3_errstr(code))) }
            return rows
        }
    }

    private static func check(_ code: Int32, _ connection: OpaquePointer) throws {
        guard code != SQLITE_OK else { return }
        throw ChangesetError.sqlite(String(cString: sqlite3_errmsg(connection)))
    }

    /// The conflicts an apply met (its handler's context).
    private final class ConflictLog {
        var kinds: [Int32] = []

        static func name(_ kind: Int32) -> String {
            switch kind {
            case 1: "a row differs from the changeset's old values (DATA)"
            case 2: "a row the changeset changes is missing (NOTFOUND)"
            case 3: "a row the changeset inserts is there already (CONFLICT)"
            case 4: "a constraint fails (CONSTRAINT)"
            case 5: "a foreign key fails (FOREIGN_KEY)"
            default: "conflict \(kind)"
            }
        }
    }
}

/// The session extension's functions, found in the process's SQLite by name.
private struct SessionAPI: Sendable {
    typealias Create = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafeMutablePointer<OpaquePointer?>?) -> Int32
    typealias Attach = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?) -> Int32
    typealias Diff = @convention(c) (OpaquePointer?, UnsafePointer<CChar>?, UnsafePointer<CChar>?,
                                     UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32
    typealias Changeset = @convention(c) (OpaquePointer?, UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<UnsafeMutableRawPointer?>?) -> Int32
    typealias Delete = @convention(c) (OpaquePointer?) -> Void
    typealias Conflict = @convention(c) (UnsafeMutableRawPointer?, Int32, OpaquePointer?) -> Int32
    typealias Filter = @convention(c) (UnsafeMutableRawPointer?, UnsafePointer<CChar>?) -> Int32
    typealias Apply = @convention(c) (OpaquePointer?, Int32, UnsafeMutableRawPointer?, Filter?, Conflict?, UnsafeMutableRawPointer?) -> Int32
    typealias Start = @convention(c) (UnsafeMutablePointer<OpaquePointer?>?, Int32, UnsafeMutableRawPointer?) -> Int32
    typealias Step = @convention(c) (OpaquePointer?) -> Int32
    typealias Operation = @convention(c) (OpaquePointer?, UnsafeMutablePointer<UnsafePointer<CChar>?>?, UnsafeMutablePointer<Int32>?,
                                          UnsafeMutablePointer<Int32>?, UnsafeMutablePointer<Int32>?) -> Int32

    let create: Create, attach: Attach, diff: Diff, changeset: Changeset, delete: Delete, apply: Apply
    let start: Start, next: Step, finalize: Step, operation: Operation

    static let shared: Result<SessionAPI, SQLiteChangeset.ChangesetError> = {
        // The process's own symbols, libsqlite3 (loaded for GRDB) among them.
        guard let process = dlopen(nil, RTLD_NOW) else { return .failure(.unavailable("dlopen failed")) }
        func find<Function>(_ name: String, as _: Function.Type) throws(SQLiteChangeset.ChangesetError) -> Function {
            guard let symbol = dlsym(process, name) else {
                throw .unavailable("SQLite \(String(cString: sqlite3_libversion())) has no \(name)")
            }
            return unsafeBitCast(symbol, to: Function.self)
        }
        do throws(SQLiteChangeset.ChangesetError) {
            return .success(SessionAPI(
                create: try find("sqlite3session_create", as: Create.self),
                attach: try find("sqlite3session_attach", as: Attach.self),
                diff: try find("sqlite3session_diff", as: Diff.self),
                changeset: try find("sqlite3session_changeset", as: Changeset.self),
                delete: try find("sqlite3session_delete", as: Delete.self),
                apply: try find("sqlite3changeset_apply", as: Apply.self),
                start: try find("sqlite3changeset_start", as: Start.self),
                next: try find("sqlite3changeset_next", as: Step.self),
                finalize: try find("sqlite3changeset_finalize", as: Step.self),
                operation: try find("sqlite3changeset_op", as: Operation.self)))
        } catch {
            return .failure(error)
        }
    }()
}
