import CLibXML2
import CSV
import Catalog
@testable import Export
import Foundation
import GRDB
import Snapshot
import TestSupport

/// Checks of a night's export folder that need nothing but the files and the
/// store's typed reads. Each returns its problems, one line each (empty: fine).
enum SoakExportChecks {
    /// Every RSS, Atom and OPML file under `folder`, relative path first.
    static func xmlFiles(in folder: URL) -> [URL] {
        let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        var files: [URL] = []
        while let url = enumerator?.nextObject() as? URL {
            if ["xml", "atom", "opml"].contains(url.pathExtension) { files.append(url) }
        }
        return files.sorted { $0.path < $1.path }
    }

    /// Each file parsed strictly (libxml2, no recovery, namespaces checked),
    /// and no item id twice within a feed: RSS `<guid>`, Atom `<entry><id>`.
    static func feedProblems(_ files: [URL]) -> [String] {
        var problems: [String] = []
        for url in files {
            let name = url.lastPathComponent
            guard let data = try? Data(contentsOf: url) else {
                problems.append("\(name): cannot be read")
                continue
            }
            do {
                try XMLValidator.validateStrict(data, name: name)
            } catch {
                problems.append("\(name): not well-formed: \(error)")
                continue
            }
            guard url.pathExtension != "opml" else { continue }
            let ids = itemIDs(data, name: name)
            var seen: [String: Int] = [:]
            for id in ids { seen[id, default: 0] += 1 }
            let repeated = seen.filter { $0.value > 1 }
            if !repeated.isEmpty {
                let sample = repeated.keys.sorted().prefix(3).joined(separator: ", ")
                problems.append("\(url.path.split(separator: "/").suffix(2).joined(separator: "/")): "
                                + "\(repeated.count) of \(ids.count) item ids appear more than once (\(sample))")
            }
        }
        return problems
    }

    /// The ids of a feed's items in document order: `channel/item/guid`
    /// (RSS 2.0) or `feed/entry/id` (Atom 1.0).
    static func itemIDs(_ data: Data, name: String) -> [String] {
        XMLValidator.ensureInitialized()
        let doc = data.withUnsafeBytes { raw in
            xmlReadMemory(raw.baseAddress?.assumingMemoryBound(to: CChar.self), Int32(raw.count), name, nil,
                          Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue))
        }
        guard let doc else { return [] }
        defer { xmlFreeDoc(doc) }
        guard let root = xmlDocGetRootElement(doc) else { return [] }
        var ids: [String] = []
        switch localName(root) {
        case "rss":
            for channel in children(root, "channel") {
                for item in children(channel, "item") { ids += children(item, "guid").map(text) }
            }
        case "feed":
            for entry in children(root, "entry") { ids += children(entry, "id").map(text) }
        default: break
        }
        return ids
    }

    static func localName(_ node: xmlNodePtr) -> String { String(cString: node.pointee.name) }

    static func children(_ node: xmlNodePtr, _ name: String) -> [xmlNodePtr] {
        var result: [xmlNodePtr] = []
        var child = node.pointee.children
        while let c = child {
            // Namespaced children (itunes:title, atom:link) are not the core elements asked for.
            if c.pointee.type == XML_ELEMENT_NODE, localName(c) == name,
               c.pointee.ns == nil || c.pointee.ns == node.pointee.ns {
                result.append(c)
            }
            child = c.pointee.next
        }
        return result
    }

    static func text(_ node: xmlNodePtr) -> String {
        var bytes: [UInt8] = []
        var child = node.pointee.children
        while let c = child {
            if c.pointee.type == XML_TEXT_NODE || c.pointee.type == XML_CDATA_SECTION_NODE, var p = c.pointee.content {
                while p.pointee != 0 {
                    bytes.append(p.pointee)
                    p += 1
                }
            }
            child = c.pointee.next
        }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The consumer table (and CSV file) of `entity`, named as a data person
    /// expects: snake_case plural (`chart_entries`), spelled out here rather
    /// than asked of the exporter, so a renamed file fails this check.
    static func tableName(_ entity: EntityKind) -> String {
        let name = entity.rawValue.replacingOccurrences(of: "-", with: "_")
        return name.hasSuffix("entry") ? String(name.dropLast()) + "ies" : name + "s"
    }

    /// Each entity's `{table}.csv` read back with an independent RFC 4180
    /// parser equals the store's rows of that entity, read through
    /// `forEachRecord` in insertion order: same number of rows, and in every
    /// row the key, the source and every column the header shares with
    /// ``EntityColumns`` hold the store's value (numbers compared as numbers).
    static func csvProblems(directory: URL, store: any SnapshotStore) throws -> [String] {
        var problems: [String] = []
        for entity in try store.entities() {
            let file = "\(tableName(entity)).csv"
            let url = directory.appendingPathComponent(file)
            guard let text = try? String(contentsOf: url, encoding: .utf8) else {
                problems.append("\(file): missing or not UTF-8")
                continue
            }
            let reader = try CSVReader(string: text, hasHeaderRow: true)
            let header = reader.headerRow ?? []
            let columns = EntityColumns.columns(for: entity)
            var stored: [ProjectedRecord] = []
            try store.forEachRecord(of: entity, columns: columns, order: .insertion) { stored.append($0) }
            var rowNumber = 0
            var mismatches: [String] = []
            while let row = reader.next() {
                defer { rowNumber += 1 }
                guard rowNumber < stored.count else { continue }
                let record = stored[rowNumber]
                for (position, name) in header.enumerated() where position < row.count {
                    let cell = row[position]
                    let expected: StoredValue?
                    switch name {
                    case "key": expected = .text(record.key)
                    case "source": expected = .text(record.source)
                    default: expected = columns.firstIndex { $0.name == name }.map { record.values[$0] }
                    }
                    if let expected, !cellMatches(cell, expected) {
                        mismatches.append("row \(rowNumber + 1) key \(record.key) \(name): csv '\(cell)' store \(expected)")
                    }
                }
            }
            if rowNumber != stored.count {
                problems.append("\(file): \(rowNumber) rows, the store holds \(stored.count)")
            }
            if !mismatches.isEmpty {
                problems.append("\(file): \(mismatches.count) cells differ from the store, e.g. "
                                + mismatches.prefix(3).joined(separator: "; "))
            }
        }
        return problems
    }

    /// The consumer database's linking columns: each row `PRAGMA
    /// foreign_key_check` lists (a key naming no row), and each column that
    /// holds a key (`key`, `…_id`, `…_key`, or a declared foreign key) with ''
    /// in it, which no row can have as its key: a missing value is NULL.
    static func consumerKeyProblems(_ url: URL) throws -> [String] {
        try DatabaseQueue(path: url.path).read { db in
            var problems: [String] = []
            var dangling: [String: Int] = [:]
            for row in try Row.fetchAll(db, sql: "PRAGMA foreign_key_check") {
                let table: String = row["table"], parent: String = row["parent"], id: Int = row["fkid"]
                let column = try String.fetchOne(db, sql: "SELECT \"from\" FROM pragma_foreign_key_list(?) WHERE id = ?",
                                                 arguments: [table, id]) ?? "?"
                dangling["\(table).\(column) → \(parent)", default: 0] += 1
            }
            problems += dangling.sorted { $0.key < $1.key }.map { "\($0.value) rows of \($0.key) name no row" }
            let tables = try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE '%_fts%'")
            for table in tables.sorted() {
                let declared = Set(try String.fetchAll(db, sql: "SELECT \"from\" FROM pragma_foreign_key_list(?)", arguments: [table]))
                for column in try String.fetchAll(db, sql: "SELECT name FROM pragma_table_info(?)", arguments: [table])
                where declared.contains(column) || column == "key" || column.hasSuffix("_id") || column.hasSuffix("_key") {
                    let quoted = { (name: String) in "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\"" }
                    let empty = try Int.fetchOne(db, sql: "SELECT count(*) FROM \(quoted(table)) WHERE \(quoted(column)) = ''") ?? 0
                    if empty > 0 { problems.append("\(empty) rows of \(table).\(column) hold ''") }
                }
            }
            return problems
        }
    }

    /// The consumer database's history tables (`history: true`): in each,
    /// a key's versions are numbered 1… without a gap and chain (each ends at
    /// the run the next begins, later than it began), exactly one is open, the
    /// open ones not removed are the entity table's rows, column for column,
    /// and every key whose last logged change removed it ends in a tombstone.
    static func historyProblems(_ url: URL) throws -> [String] {
        try DatabaseQueue(path: url.path).read { db in
            var problems: [String] = []
            for entity in EntityKind.allCases where entity != .record && entity != .listingDetail {
                let table = tableName(entity), history = tableName(entity) + "_history"
                guard try db.tableExists(history) else {
                    problems.append("\(history) is missing")
                    continue
                }
                let columns = (["key"] + EntityColumns.columns(for: entity).map(\.name) + ["extra"])
                    .map { "\"\($0)\"" }.joined(separator: ", ")
                let checks: [(String, String)] = [
                    ("versions that do not chain", """
                        SELECT count(*) FROM \(history) a JOIN \(history) b ON b.key = a.key AND b._version = a._version + 1
                        WHERE a._valid_to_run IS NOT b._valid_from_run
                        """),
                    ("versions that end before they begin", """
                        SELECT count(*) FROM \(history) WHERE _valid_from_run >= _valid_to_run
                        """),
                    ("keys whose versions are not numbered 1…n", """
                        SELECT count(*) FROM (SELECT key FROM \(history) GROUP BY key HAVING min(_version) != 1 OR max(_version) != count(*))
                        """),
                    ("keys without exactly one open version", """
                        SELECT count(*) FROM (SELECT key FROM \(history) GROUP BY key HAVING sum(_valid_to_run IS NULL) != 1)
                        """),
                    ("rows that are not an open version", """
                        SELECT count(*) FROM (SELECT \(columns) FROM \(table)
                                              EXCEPT SELECT \(columns) FROM \(history) WHERE _valid_to_run IS NULL AND _deleted = 0)
                        """),
                    ("open versions that are not a row", """
                        SELECT count(*) FROM (SELECT \(columns) FROM \(history) WHERE _valid_to_run IS NULL AND _deleted = 0
                                              EXCEPT SELECT \(columns) FROM \(table))
                        """),
                    ("removed keys without a tombstone", """
                        SELECT count(*) FROM (SELECT key, op FROM changes c WHERE entity = '\(entity.rawValue)'
                                                AND c.rowid = (SELECT max(rowid) FROM changes WHERE entity = c.entity AND key = c.key)) last
                        WHERE last.op = 'removed'
                          AND NOT EXISTS (SELECT 1 FROM \(history) h WHERE h.key = last.key AND h._valid_to_run IS NULL AND h._deleted = 1)
                        """),
                ]
                for (what, sql) in checks {
                    let count = try Int.fetchOne(db, sql: sql) ?? 0
                    if count > 0 { problems.append("\(history): \(count) \(what)") }
                }
            }
            return problems
        }
    }

    /// A CSV cell against a stored value: text exactly (a leading `'` is the
    /// writer's formula neutralisation), numbers as numbers, null as empty.
    static func cellMatches(_ cell: String, _ value: StoredValue) -> Bool {
        switch value {
        case .null: return cell.isEmpty
        case .integer(let i): return Int64(cell) == i
        case .real(let d): return Double(cell).map { $0 == d || abs($0 - d) <= 1e-9 * max(1, abs(d)) } ?? false
        case .text(let s):
            if cell == s { return true }
            let formulaStarts: Set<Character> = ["=", "+", "-", "@", "\t", "\r"]
            return s.first.map(formulaStarts.contains) == true && cell == "'" + s
        }
    }
}

/// `python3 Tests/scripts/check_feeds.py` (feedparser, podcastparser, listparser): real readers.
enum SoakFeedReaders {
    static let script = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("scripts/check_feeds.py")

    /// Whether python3 with feedparser and podcastparser can run here (checked once).
    static let available: Bool = (try? Python.runWaitingHere(["-c", "import feedparser, podcastparser"]).status) == 0


    /// Structure only: every file parses without the readers' error flag and every item has an id and a title.
    static func check(_ files: [URL]) async throws -> (status: Int32, output: String) {
        try await Python.run([script.path] + files.map(\.path))
    }

    /// `check_apple_podcasts.py FOLDER`: feedparser and podcastparser on every feed,
    /// and Apple's rules (artwork size, categories, enclosures, unique GUIDs) on podcast feeds.
    static func checkApple(_ folder: URL, extra: [String] = []) async throws -> (status: Int32, output: String) {
        try await Python.run([script.deletingLastPathComponent().appendingPathComponent("check_apple_podcasts.py").path, folder.path] + extra)
    }
}

