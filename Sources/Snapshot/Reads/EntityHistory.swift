import Catalog
import Foundation

/// How a version of an entity began.
public enum VersionEvent: String, Sendable, Equatable, CaseIterable {
    /// First seen.
    case added
    /// One or more of its fields changed.
    case changed
    /// Removed: the version is a tombstone that keeps the last fields.
    case removed
    /// Seen again after a removal.
    case returned
    /// The oldest version the history holds, begun before the oldest change
    /// it keeps (retention, or the export's `historyDays`, left the start out).
    case baseline
}

/// One version of an entity: its fields from one run until the next run
/// that changed or removed it.
public struct EntityVersion: Sendable, Equatable {
    /// 1 for the oldest version the history holds, then one more per version.
    public var number: Int
    public var event: VersionEvent
    /// The run whose crawl began this version; nil for a ``VersionEvent/baseline``.
    public var validFromRun: Int64?
    /// The run that ended it (changed or removed the entity); nil while it is current.
    public var validToRun: Int64?
    /// The entity's canonical fields in this version, as canonical JSON; a
    /// tombstone keeps the fields it had when it was removed.
    public var payload: String
    /// For a ``VersionEvent/changed`` version: each field that changed (canonical JSON before and after), by field name.
    public var changes: [FieldChange]
    /// The sources whose records made the change, in name order.
    public var sources: [String]

    /// Whether this version is a removal's tombstone.
    public var deleted: Bool { event == .removed }
}

/// Every version of one entity the store's change log still tells.
public struct EntityHistory: Sendable, Equatable {
    public var entity: EntityKind
    public var key: String
    /// Oldest first.
    public var versions: [EntityVersion]
    /// The run that first saw the entity and the last that changed its
    /// fields, for an entity held now (nil for one that was removed).
    public var firstSeenRun: Int64?
    public var lastChangedRun: Int64?
}

/// Builds an entity's versions from its current row and its change log.
///
/// The history is not stored twice: the change log already holds, field by
/// field, what each run changed (``ChangeRow``), and a removal keeps the whole
/// record it removed. Walking an entity's log backwards from its current
/// fields undoes one run at a time and gives every earlier version exactly,
/// back to the oldest change the log keeps (retention bounds both alike).
enum EntityHistoryBuilder {
    /// The entity as it is held now.
    struct Current {
        var payload: String
        var addedRun: Int64
        var changedRun: Int64
    }

    /// The fields of one state, parsed only when a change must be undone.
    private struct State {
        private var text: String?
        private var parsed: [String: JSONValue]?

        init(text: String?) { self.text = text }

        static let none = State(text: nil)
        var exists: Bool { text != nil || parsed != nil }

        mutating func payload() -> String {
            if let text { return text }
            let encoded = String(decoding: CanonicalJSON.encodeObject(parsed ?? [:]), as: UTF8.self)
            text = encoded
            return encoded
        }

        mutating func set(_ field: String, toJSON json: String?) {
            var members = parsed ?? Self.members(text)
            members[field] = json.flatMap { try? JSONParser.parse($0) }
            parsed = members
            text = nil
        }

        static func members(_ text: String?) -> [String: JSONValue] {
            guard let text, case .object(let members)? = try? JSONParser.parse(text) else { return [:] }
            return members
        }
    }

    /// `changes` are the entity's change rows in the order they were logged.
    static func versions(current: Current?, changes: [ChangeRow]) -> [EntityVersion] {
        // A run's rows for one entity are logged together: one version per run.
        var runs: [ArraySlice<ChangeRow>] = []
        var start = changes.startIndex
        for index in changes.indices.dropFirst() where changes[index].runID != changes[start].runID {
            runs.append(changes[start..<index])
            start = index
        }
        if !changes.isEmpty { runs.append(changes[start...]) }

        var newestFirst: [EntityVersion] = []
        var state = State(text: current?.payload)
        var validTo: Int64?
        if let current, runs.last.map({ $0.last!.op == "removed" || $0.first!.runID < current.changedRun }) ?? true {
            // The current version began at the run that last changed it, which the
            // log (pruned, or written before this release) may no longer hold.
            let fresh = current.changedRun == current.addedRun
            newestFirst.append(EntityVersion(number: 0, event: fresh ? .added : .changed, validFromRun: current.changedRun,
                                             validToRun: nil, payload: state.payload(), changes: [], sources: []))
            validTo = current.changedRun
        }
        for run in runs.reversed() {
            let last = run.last!
            // A run that added an entity may change it too (a detail page, or another
            // source, fills fields in after the list added it): still its first version.
            let event: VersionEvent = if last.op == "removed" {
                .removed
            } else if run.contains(where: { $0.op == "added" }) {
                .added
            } else {
                .changed
            }
            let payload = event == .removed ? (last.before ?? state.payload()) : state.payload()
            let changes = run.filter { $0.op == "changed" }.compactMap { row in
                row.field.map { FieldChange(field: $0, before: row.before, after: row.after) }
            }.sorted { $0.field.utf8.lexicographicallyPrecedes($1.field.utf8) }
            newestFirst.append(EntityVersion(number: 0, event: event, validFromRun: last.runID, validToRun: validTo,
                                             payload: payload, changes: event == .changed ? changes : [],
                                             sources: Set(run.map(\.source)).sorted()))
            for row in run.reversed() {
                switch row.op {
                case "removed": state = State(text: row.before)
                case "added": state = .none
                default: if let field = row.field { state.set(field, toJSON: row.before) }
                }
            }
            validTo = last.runID
        }
        if state.exists, !runs.isEmpty {
            newestFirst.append(EntityVersion(number: 0, event: .baseline, validFromRun: nil, validToRun: validTo,
                                             payload: state.payload(), changes: [], sources: []))
        }
        var versions = Array(newestFirst.reversed())
        for index in versions.indices {
            versions[index].number = index + 1
            if versions[index].event == .added, index > 0, versions[index - 1].event == .removed {
                versions[index].event = .returned
            }
        }
        return versions
    }
}

extension SQLSnapshotStore {
    package func forEachEntityHistory(of entity: EntityKind, runs: [Int64]?,
                                      _ body: (EntityHistory) throws -> Void) throws {
        try stream { db in
            // Two reads in key order (bytewise on both engines), merged: the entities
            // held now and the log's rows, so a removed entity's tombstone is found too.
            let current = try db.cursor("SELECT key, fields, added_run, changed_run FROM entities WHERE entity = ? ORDER BY key", [entity.rawValue])
            // Run ids are numbers this code formats: written into the query, not bound one by one.
            let filter = runs.map { $0.isEmpty ? "AND 1 = 0" : "AND run_id IN (\($0.map(String.init).joined(separator: ", ")))" } ?? ""
            let logged = try db.cursor(Self.historyChangeColumns + " WHERE entity = ? \(filter) ORDER BY key, id", [entity.rawValue])

            var held = try current.next() ? Self.currentRow(current) : nil
            var pending = try logged.next() ? Self.historyChangeRow(logged, entity: entity) : nil
            while held != nil || pending != nil {
                let key: String
                if let held, let pending {
                    key = held.key.utf8.lexicographicallyPrecedes(pending.key.utf8) ? held.key : pending.key
                } else {
                    key = held?.key ?? pending!.key
                }
                // Keys compared as the engines order them, byte for byte: Swift's `==` would
                // take two spellings of "é" for one key.
                var changes: [ChangeRow] = []
                while let row = pending, row.key.utf8.elementsEqual(key.utf8) {
                    changes.append(row)
                    pending = try logged.next() ? Self.historyChangeRow(logged, entity: entity) : nil
                }
                var now: EntityHistoryBuilder.Current?
                if let row = held, row.key.utf8.elementsEqual(key.utf8) {
                    now = row.current
                    held = try current.next() ? Self.currentRow(current) : nil
                }
                let history = EntityHistory(entity: entity, key: key, versions: EntityHistoryBuilder.versions(current: now, changes: changes),
                                            firstSeenRun: now?.addedRun, lastChangedRun: now?.changedRun)
                try handOver { try body(history) }
            }
        }
    }

    package func entityHistory(of entity: EntityKind, key: String) throws(StoreSyncError) -> EntityHistory? {
        var found: EntityHistory?
        do {
            try stream { db in
                var now: EntityHistoryBuilder.Current?
                let current = try db.cursor("SELECT key, fields, added_run, changed_run FROM entities WHERE entity = ? AND key = ?",
                                            [entity.rawValue, key])
                if try current.next() { now = Self.currentRow(current).current }
                let logged = try db.cursor(Self.historyChangeColumns + " WHERE entity = ? AND key = ? ORDER BY id", [entity.rawValue, key])
                var changes: [ChangeRow] = []
                while try logged.next() { changes.append(Self.historyChangeRow(logged, entity: entity)) }
                guard now != nil || !changes.isEmpty else { return }
                found = EntityHistory(entity: entity, key: key, versions: EntityHistoryBuilder.versions(current: now, changes: changes),
                                      firstSeenRun: now?.addedRun, lastChangedRun: now?.changedRun)
            }
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: path, reason: "cannot read the history of \(entity.rawValue) \(key): \(error)", cause: error)
        }
        return found
    }

    private static func currentRow(_ rows: any SQLCursor) -> (key: String, current: EntityHistoryBuilder.Current) {
        (rows.text(0), EntityHistoryBuilder.Current(payload: rows.text(1), addedRun: rows.int64(2), changedRun: rows.int64(3)))
    }

    private static let historyChangeColumns = "SELECT key, run_id, source, op, field, before, after, id FROM changes"

    private static func historyChangeRow(_ rows: any SQLCursor, entity: EntityKind) -> ChangeRow {
        ChangeRow(id: rows.int64(7), runID: rows.int64(1), source: rows.text(2), entity: entity.rawValue, key: rows.text(0),
                  op: rows.text(3), field: rows.optionalText(4), before: rows.optionalText(5), after: rows.optionalText(6))
    }
}
