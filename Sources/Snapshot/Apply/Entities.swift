import Catalog
import Foundation

/// One source's sighting of an entity, as the entity's row lists it: which
/// source, which of its record kinds (a detail page's `listing-detail` is
/// its listing's sighting too) and how the sighting counts.
struct Sighting: Hashable, Sendable {
    var source: String
    var kind: EntityKind
    var role: RecordRole

    /// Names the sighting's part in ``EntityRow/parts``.
    var partKey: String { "\(source)\t\(kind.rawValue)" }

    /// Whether it keeps the entity alive: a source that only describes
    /// entities others list never does.
    var keepsAlive: Bool { role != .describes }

    /// Which part wins a field when sources disagree: a list the entity is
    /// in, then a ranked list, then a description (a detail page fills what
    /// the list lacks, but never overrides its fresher price); ties by name.
    var authority: Int {
        switch role {
        case .lists: 3
        case .ranks: 2
        case .describes: 1
        }
    }

    static func decode(_ text: String) -> [Sighting] {
        text.split(separator: "\n").compactMap { line in
            let parts = line.split(separator: "\t", omittingEmptySubsequences: false)
            guard parts.count == 3, let kind = EntityKind(rawValue: String(parts[1])),
                  let role = RecordRole(rawValue: String(parts[2])) else { return nil }
            return Sighting(source: String(parts[0]), kind: kind, role: role)
        }
    }

    static func encode(_ sightings: [Sighting]) -> String {
        sightings.map { "\($0.source)\t\($0.kind.rawValue)\t\($0.role.rawValue)" }.sorted().joined(separator: "\n")
    }
}

/// One entity's stored row.
struct EntityRow {
    var rowid: Int64
    var fieldsText: String
    var hash: Int64
    var sightings: [Sighting]
    var partsText: String?
    /// The runs that added it and last changed its fields.
    var addedRun: Int64
    var changedRun: Int64

    var fields: [String: JSONValue] { (try? JSONParser.parse(Array(fieldsText.utf8)).objectValue) ?? [:] }

    /// Each sighting's canonical fields. A row seen by one source keeps no
    /// parts: its fields are that source's.
    var parts: [String: [String: JSONValue]] {
        if let partsText, case .object(let members)? = try? JSONParser.parse(Array(partsText.utf8)) {
            return members.compactMapValues(\.objectValue)
        }
        guard let only = sightings.first else { return [:] }
        return [only.partKey: fields]
    }
}

/// Writes the entity layer within a store transaction: one row per entity,
/// its canonical fields merged over its sightings, and the change log in
/// canonical field names.
///
/// The change log is the entities': a source whose sighting changed only
/// in a field outside the canonical model rewrites its raw payload (counted
/// for that source) but logs nothing, and a sighting that ends while another
/// source still lists the entity logs only what the merge lost.
struct EntityWriter {
    let db: any SQLSession
    let runID: Int64
    /// Added entities carry their fields in the log (`after`), except in the
    /// store's first run, where the entities table itself is what was added.
    let logAddedValues: Bool

    /// The fields a sighting's source owns (``SourceMapping/owns``).
    let owns: (Sighting) -> Set<String>

    /// On PostgreSQL, the entity rows this writer read or wrote, by kind and
    /// key (nil: known absent): read a page at a time (``prefetch(_:)``), not
    /// a round trip each, and kept as this writer changes them. SQLite reads
    /// in process and keeps none.
    private let cache: EntityRowCache?

    /// Set for a first-load page (FirstLoad.swift): every entity it writes is
    /// new, so none is looked up (on SQLite the key index is not there to look with).
    let allNew: Bool

    /// On SQLite, the entity insert and the change log's insert bound through
    /// the C API (``RawStatement``): a first load makes one of each per record,
    /// and building `StatementArguments` for them cost as much as the inserts.
    private let preparedInserts: (entity: any PreparedInsert, log: any PreparedInsert)?

    /// `cache`: the rows the transaction read or wrote already (the pages of
    /// one batch share them); a writer of its own by default.
    init(_ db: any SQLSession, runID: Int64, logAddedValues: Bool, owns: @escaping (Sighting) -> Set<String> = { _ in [] },
         allNew: Bool = false, cache shared: EntityRowCache? = nil) throws {
        self.owns = owns
        self.db = db
        self.runID = runID
        self.logAddedValues = logAddedValues
        self.allNew = allNew
        cache = db.dialect.statementsAreRoundTrips ? shared ?? EntityRowCache() : nil
        if let entity = try db.preparedInsert("""
                INSERT INTO entities (entity, key, fields, hash, sources, parts, added_run, changed_run) VALUES (?, ?, ?, ?, ?, NULL, ?, ?)
                """),
           let log = try db.preparedInsert("""
                INSERT INTO changes (run_id, source, entity, key, op, field, before, after, entity_rowid, entity_added_run)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """) {
            preparedInserts = (entity, log)
        } else {
            preparedInserts = nil
        }
    }

    static let columns = "rowid, fields, hash, sources, parts, added_run, changed_run"

    static func entityRow(_ row: SQLRow) -> EntityRow {
        EntityRow(rowid: row[0], fieldsText: row[1], hash: row[2], sightings: Sighting.decode(row[3]), partsText: row[4],
                  addedRun: row[5], changedRun: row[6])
    }

    func row(_ entity: EntityKind, _ key: String) throws -> EntityRow? {
        if allNew { return nil }
        if let cache, let known = cache.rows[EntityRowCache.Key(entity: entity, key: key)] { return known }
        let found = try db.row("SELECT \(Self.columns) FROM entities WHERE entity = ? AND key = ?",
                               [entity.rawValue, key]).map(Self.entityRow)
        cache?.rows[EntityRowCache.Key(entity: entity, key: key)] = .some(found)
        return found
    }

    /// Reads the rows of these entities in a few queries (PostgreSQL; a no-op on SQLite).
    func prefetch(_ identities: some Sequence<(entity: EntityKind, key: String)>) throws {
        try cache?.prefetch(identities, in: db)
    }

    /// Reads the rows of the entities `source`'s records `identities` are sightings of (a sweep's).
    func prefetch(endingSightingsOf identities: [RecordIdentity], source: String, mapping: SourceMapping) throws {
        try prefetch(identities.lazy.map { identity in
            let entity = mapping.entity(of: identity.entity)
            return (entity, Self.entityKey(entity, identity.key, source: source))
        })
    }

    private func remember(_ entity: EntityKind, _ key: String, _ row: EntityRow?) {
        cache?.rows[EntityRowCache.Key(entity: entity, key: key)] = .some(row)
    }

    /// Logs one change; a removal passes the row it removed (`removed`), whose id and first run the log keeps.
    func log(_ source: String, _ entity: EntityKind, _ key: String, _ op: String,
             field: String? = nil, before: String? = nil, after: String? = nil, removed: EntityRow? = nil) throws {
        guard let raw = preparedInserts else {
            try db.queueInsert(into: "changes", columns: ["run_id", "source", "entity", "key", "op", "field", "before", "after",
                                                          "entity_rowid", "entity_added_run"],
                               values: [runID, source, entity.rawValue, key, op, field, before, after, removed?.rowid, removed?.addedRun],
                               id: "id")
            return
        }
        raw.log.bind(1, runID)
        raw.log.bind(2, source)
        raw.log.bind(3, entity.rawValue)
        raw.log.bind(4, key)
        raw.log.bind(5, op)
        raw.log.bind(6, field)
        raw.log.bind(7, before)
        raw.log.bind(8, after)
        raw.log.bind(9, removed?.rowid)
        raw.log.bind(10, removed?.addedRun)
        _ = try raw.log.run()
    }

    /// A sighting was added or its record changed: merge its canonical fields in.
    /// `addedRun` is the run that first saw it (an upgrade rebuilding entities
    /// passes the record's own); `log` is false only for that rebuild.
    func upsert(_ sighting: Sighting, key recordKey: String, canonical: CanonicalRecord,
                addedRun: Int64? = nil, log: Bool = true) throws {
        let entity = canonical.entity
        let key = Self.entityKey(entity, recordKey, source: sighting.source)
        guard let row = try row(entity, key) else {
            let bytes = CanonicalJSON.encodeObject(canonical.fields)
            try insert(sighting, entity: entity, key: key, fieldsText: String(decoding: bytes, as: UTF8.self),
                       hash: ContentHash(bytes: bytes).sqliteValue, addedRun: addedRun, log: log)
            return
        }
        var sightings = row.sightings.filter { $0.partKey != sighting.partKey }
        sightings.append(sighting)
        var parts = row.parts
        parts[sighting.partKey] = canonical.fields
        try rewrite(row, entity: entity, key: key, sightings: sightings, parts: parts, cause: sighting.source, log: log)
    }

    /// Adds the entity row of a sighting whose canonical fields are
    /// `fieldsText` (their canonical encoding, hashing to `hash`), unless the
    /// row exists: false then, and nothing is written (``upsert(_:key:canonical:addedRun:log:)``
    /// merges into it, from the fields themselves).
    func insertNew(_ sighting: Sighting, key recordKey: String, entity: EntityKind, fieldsText: String, hash: Int64) throws -> Bool {
        let key = Self.entityKey(entity, recordKey, source: sighting.source)
        guard try row(entity, key) == nil else { return false }
        try insert(sighting, entity: entity, key: key, fieldsText: fieldsText, hash: hash, addedRun: nil, log: true)
        return true
    }

    /// Inserts the entity row `key` (its key as ``entityKey(_:_:source:)`` makes it), which must not exist.
    func insert(_ sighting: Sighting, entity: EntityKind, key: String, fieldsText text: String, hash: Int64,
                addedRun: Int64? = nil, log: Bool = true) throws {
        let sources = Sighting.encode([sighting])
        let rowid: Int64?
        if let raw = preparedInserts {
            raw.entity.bind(1, entity.rawValue)
            raw.entity.bind(2, key)
            raw.entity.bind(3, text)
            raw.entity.bind(4, hash)
            raw.entity.bind(5, sources)
            raw.entity.bind(6, addedRun ?? runID)
            raw.entity.bind(7, addedRun ?? runID)
            rowid = try raw.entity.run()
        } else {
            rowid = try db.queueInsert(
                into: "entities", columns: ["entity", "key", "fields", "hash", "sources", "parts", "added_run", "changed_run"],
                values: [entity.rawValue, key, text, hash, sources, SQLValue.null, addedRun ?? runID, addedRun ?? runID],
                id: "rowid")
        }
        if cache != nil {
            remember(entity, key, EntityRow(rowid: rowid ?? 0, fieldsText: text, hash: hash, sightings: [sighting], partsText: nil,
                                            addedRun: addedRun ?? runID, changedRun: addedRun ?? runID))
        }
        if log { try self.log(sighting.source, entity, key, "added", after: logAddedValues ? text : nil) }
    }

    /// A sighting ended (its source removed the record). Returns the
    /// sightings left behind when the entity is gone with it: descriptions
    /// that must leave with their entity.
    func end(_ sighting: Sighting, entity: EntityKind, key recordKey: String) throws -> [Sighting] {
        let key = Self.entityKey(entity, recordKey, source: sighting.source)
        guard let row = try row(entity, key) else { return [] }
        let sightings = row.sightings.filter { $0.partKey != sighting.partKey }
        guard sightings.contains(where: \.keepsAlive) else {
            try db.queueDelete(from: "entities", where: [.integer("rowid")], [row.rowid])
            remember(entity, key, nil)
            try log(sighting.source, entity, key, "removed", before: row.fieldsText, removed: row)
            return sightings
        }
        var parts = row.parts
        parts[sighting.partKey] = nil
        try rewrite(row, entity: entity, key: key, sightings: sightings, parts: parts, cause: sighting.source, log: true)
        return []
    }

    /// The sighting leaves the entity row `recordKey` names, unlogged: its
    /// record is keyed anew (an upgrade, ``SourceMapping/keyRules``), not gone.
    func detach(_ sighting: Sighting, entity: EntityKind, key recordKey: String) throws {
        let key = Self.entityKey(entity, recordKey, source: sighting.source)
        guard let row = try row(entity, key) else { return }
        let sightings = row.sightings.filter { $0.partKey != sighting.partKey }
        guard !sightings.isEmpty else {
            try db.queueDelete(from: "entities", where: [.integer("rowid")], [row.rowid])
            remember(entity, key, nil)
            return
        }
        var parts = row.parts
        parts[sighting.partKey] = nil
        try rewrite(row, entity: entity, key: key, sightings: sightings, parts: parts, cause: sighting.source, log: false)
    }

    /// Whether ending `sighting` would remove its entity: no other source lists it.
    func wouldRemove(_ sighting: Sighting, entity: EntityKind, key recordKey: String) throws -> Bool {
        guard let row = try row(entity, Self.entityKey(entity, recordKey, source: sighting.source)) else { return false }
        return !row.sightings.contains { $0.partKey != sighting.partKey && $0.keepsAlive }
    }

    private func rewrite(_ row: EntityRow, entity: EntityKind, key: String, sightings: [Sighting],
                         parts: [String: [String: JSONValue]], cause: String, log: Bool) throws {
        let merged = Self.merge(sightings: sightings, parts: parts, owns: owns)
        let bytes = CanonicalJSON.encodeObject(merged)
        let hash = ContentHash(bytes: bytes).sqliteValue
        let sourcesText = Sighting.encode(sightings)
        var partsText: String?
        if sightings.count > 1 {
            let object = JSONValue.object(parts.filter { key, _ in sightings.contains { $0.partKey == key } }.mapValues(JSONValue.object))
            partsText = String(decoding: CanonicalJSON.encode(object), as: UTF8.self)
        }
        let fieldsText = String(decoding: bytes, as: UTF8.self)
        if hash == row.hash {
            guard sourcesText != Sighting.encode(row.sightings) || partsText != row.partsText else { return }
            // Who sees it changed, not what it is: `changed_run` stays.
            try db.queueUpdate("entities", key: .integer("rowid"), row.rowid, set: [.text("sources"), .text("parts")],
                               [sourcesText, partsText])
            remember(entity, key, EntityRow(rowid: row.rowid, fieldsText: row.fieldsText, hash: row.hash,
                                            sightings: sightings, partsText: partsText,
                                            addedRun: row.addedRun, changedRun: row.changedRun))
            return
        }
        remember(entity, key, EntityRow(rowid: row.rowid, fieldsText: fieldsText, hash: hash, sightings: sightings, partsText: partsText,
                                        addedRun: row.addedRun, changedRun: log ? runID : row.changedRun))
        // An entity this run added, met again in another version (a podcast
        // listed by two storefronts, whose country and link differ) or filled
        // in by another source the night it appears: it was not there when
        // the run began, so the run added what it leaves, and changed nothing.
        // Its addition is the one line the log keeps (its `after` is set to
        // what the run leaves when the run finishes: `settleAdditions`).
        guard log, row.addedRun != runID else {
            // Re-derived, not changed: what the sources said is what they said then.
            try db.queueUpdate("entities", key: .integer("rowid"), row.rowid,
                               set: [.text("fields"), .integer("hash"), .text("sources"), .text("parts")],
                               [fieldsText, hash, sourcesText, partsText])
            return
        }
        try db.queueUpdate("entities", key: .integer("rowid"), row.rowid,
                           set: [.text("fields"), .integer("hash"), .text("sources"), .text("parts"), .integer("changed_run")],
                           [fieldsText, hash, sourcesText, partsText, runID])
        let changes = FieldChange.between(row.fields, merged)
        guard row.changedRun == runID else {
            for change in changes {
                try self.log(cause, entity, key, "changed", field: change.field, before: change.before, after: change.after)
            }
            return
        }
        try relog(changes, entity: entity, key: key, cause: cause)
    }

    /// Logs `changes` of an entity this run changed before (its key met again
    /// in another version, issue 13, or another source's sighting), so that
    /// the run's log says how the entity went from where the run found it to
    /// where it leaves it, and nothing when it is back there.
    ///
    /// Each field keeps one change at most, from its value when the run began
    /// (the `before` of the run's first change of it) to its value now; a
    /// field that came back loses its changes. Fields not changing now keep
    /// what the run logged for them, with their causes.
    private func relog(_ changes: [FieldChange], entity: EntityKind, key: String, cause: String) throws {
        // The run's earlier changes of the fields changing now, oldest first (`changes_by_entity`).
        let fields = Set(changes.map(\.field))
        var earlier: [String: (before: String?, ids: [Int64])] = [:]
        for row in try db.rows("""
            SELECT id, field, before FROM changes WHERE entity = ? AND key = ? AND op = 'changed' AND run_id = ? ORDER BY id
            """, [entity.rawValue, key, runID]) {
            guard let field: String = row[1], fields.contains(field) else { continue }
            if earlier[field] == nil { earlier[field] = (row[2], []) }
            earlier[field]!.ids.append(row[0])
        }
        for change in changes {
            var before = change.before
            if let logged = earlier[change.field] {
                for id in logged.ids { try db.queueDelete(from: "changes", where: [.integer("id")], [id]) }
                before = logged.before
                if before == change.after { continue }
            }
            try log(cause, entity, key, "changed", field: change.field, before: before, after: change.after)
        }
    }

    /// The entity's key. A records-file row is its file's own: two files
    /// whose rows share a key are two tables, not one, so the key names the
    /// source (`inventory:42`). Every other entity is the same thing
    /// whichever source lists it, by its key alone.
    static func entityKey(_ entity: EntityKind, _ key: String, source: String) -> String {
        entity == .record ? "\(source):\(key)" : key
    }

    /// The entity's fields: each field from the most authoritative sighting that has it.
    static func merge(sightings: [Sighting], parts: [String: [String: JSONValue]],
                      owns: (Sighting) -> Set<String> = { _ in [] }) -> [String: JSONValue] {
        if sightings.count == 1, let only = parts[sightings[0].partKey] { return only }
        let ordered = sightings.sorted { ($0.authority, $1.partKey) > ($1.authority, $0.partKey) }
        var merged: [String: JSONValue] = [:]
        // Fields a source owns first, then the rest by authority.
        for sighting in ordered {
            let part = parts[sighting.partKey] ?? [:]
            for field in owns(sighting) where merged[field] == nil {
                if let value = part[field], value != .null { merged[field] = value }
            }
        }
        for sighting in ordered {
            for (field, value) in parts[sighting.partKey] ?? [:] where merged[field] == nil && value != .null {
                merged[field] = value
            }
        }
        return merged
    }
}

/// The entity rows an ``EntityWriter`` knows (a class: the writer is passed by value).
final class EntityRowCache {
    /// Equal and hashed by the key's bytes, as the table holds it (``RecordIdentity``).
    struct Key: Hashable {
        var entity: EntityKind
        var key: String

        static func == (a: Key, b: Key) -> Bool { a.entity == b.entity && a.key.utf8.elementsEqual(b.key.utf8) }

        func hash(into hasher: inout Hasher) {
            hasher.combine(entity)
            var key = key
            key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        }
    }

    var rows: [Key: EntityRow?] = [:]

    /// Reads the rows of these entities not known yet, in a few queries.
    func prefetch(_ identities: some Sequence<(entity: EntityKind, key: String)>, in db: any SQLSession) throws {
        var byKind: [EntityKind: Set<String>] = [:]
        for identity in identities where rows[Key(entity: identity.entity, key: identity.key)] == nil {
            byKind[identity.entity, default: []].insert(identity.key)
        }
        for (kind, keys) in byKind.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            // Known absent unless the query finds it.
            for key in keys { rows[Key(entity: kind, key: key)] = .some(nil) }
            try db.rows(keyedBy: keys.sorted(), [kind.rawValue], {
                "SELECT \(EntityWriter.columns), key FROM entities WHERE entity = ? AND key IN (\($0))"
            }) { row in
                rows[Key(entity: kind, key: row[7])] = .some(EntityWriter.entityRow(row))
            }
        }
    }
}

extension SQLSnapshotStore {
    /// The mapping of `source`; a source the run did not name keeps its fields.
    func mapping(for source: String) -> SourceMapping {
        mappings.withLock { $0[source] } ?? .identity
    }

    /// Which fields each sighting's source owns, from the run's mappings.
    var ownership: (Sighting) -> Set<String> {
        let mappings = self.mappings.withLock { $0 }
        return { sighting in mappings[sighting.source]?.owns(sighting.kind) ?? [] }
    }

    package func prepareEntities(_ mappings: [String: SourceMapping], fingerprint: String?) throws(StoreSyncError) {
        self.mappings.withLock { $0 = mappings }
        var rekeyed = false
        try wrap {
            try engine.write { db in
                let upgraded = try db.value(as: String.self, "SELECT value FROM store_meta WHERE name = 'entities'") == "rebuild"
                var remapped = false
                if let fingerprint {
                    let stored = try db.value(as: String.self, "SELECT value FROM store_meta WHERE name = 'mapping'")
                    // A store that holds records but never recorded one was written by a release whose mappings differ.
                    let hasRecords = try db.value(as: Bool.self, "SELECT EXISTS (SELECT 1 FROM records)") ?? false
                    remapped = stored != fingerprint && (stored != nil || hasRecords)
                    if stored != fingerprint {
                        try Self.setMeta(db, "mapping", fingerprint)
                    }
                }
                guard upgraded || remapped else { return }
                let lastRun = try db.value(as: Int64.self, "SELECT max(id) FROM runs") ?? 0
                // One writer for both steps: on PostgreSQL it remembers the rows it wrote.
                let writer = try EntityWriter(db, runID: lastRun, logAddedValues: false, owns: ownership)
                // Both steps read every record's payload, and the rebuild rewrites the entities some share theirs with.
                try Self.restoreSharedPayloads(db)
                if remapped {
                    // Pages are read differently now (new fields, new records): what an
                    // unchanged page held last time says nothing about what it holds now.
                    try db.execute("DELETE FROM page_memos")
                    rekeyed = try rekeyRecords(db, writer: writer)
                }
                try rebuildEntities(db, writer: writer)
                try db.execute("DELETE FROM store_meta WHERE name = 'entities'")
            }
        }
        // A resumed run's committed pages now name the records by their new keys.
        if rekeyed, let run = try wrap({ try engine.read { db in try db.value(as: Int64.self, "SELECT max(id) FROM runs") } }) {
            try loadSeen(runID: run)
        }
    }

    /// Gives every record an older release keyed by another rule
    /// (``SourceMapping/keyRules``) the key this release gives it, with
    /// everything that names it by key: its misses, the inputs a dependent
    /// owes, a resumed run's committed pages, and the change log (an entity's
    /// history follows it). Its sighting leaves the entity row of the old key
    /// (removed, unlogged, when nothing else sees it); the rebuild that
    /// follows merges it into the new key's. Two records that now share a key
    /// are one: the first stored is kept. Returns whether any record moved.
    private func rekeyRecords(_ db: any SQLSession, writer: EntityWriter) throws -> Bool {
        let mappings = self.mappings.withLock { $0 }
        var moved: [String: [RecordIdentity: String]] = [:]
        for (source, mapping) in mappings.sorted(by: { $0.key < $1.key }) {
            for (kind, rule) in mapping.keyRules.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
                var moves: [(old: String, new: String)] = []
                try db.forEachRow("SELECT key, payload FROM records WHERE source = ? AND entity = ? ORDER BY rowid",
                                  [source, kind.rawValue]) { row in
                    let key: String = row[0]
                    let payload: String = row[1]
                    let fields = (try? JSONParser.parse(Array(payload.utf8)).objectValue) ?? [:]
                    let current = rule(key, fields)
                    if current != key { moves.append((key, current)) }
                }
                guard !moves.isEmpty else { continue }
                let entity = mapping.entity(of: kind)
                let sighting = Sighting(source: source, kind: kind, role: mapping.role(kind))
                var history: [(old: String, new: String)] = []
                for (old, new) in moves {
                    try writer.detach(sighting, entity: entity, key: old)
                    let taken = try db.value(as: Bool.self, "SELECT EXISTS (SELECT 1 FROM records WHERE source = ? AND entity = ? AND key = ?)",
                                             [source, kind.rawValue, new]) ?? false
                    if taken {
                        try db.execute("DELETE FROM records WHERE source = ? AND entity = ? AND key = ?", [source, kind.rawValue, old])
                        try db.execute("DELETE FROM misses WHERE source = ? AND entity = ? AND key = ?", [source, kind.rawValue, old])
                    } else {
                        try db.execute("UPDATE records SET key = ? WHERE source = ? AND entity = ? AND key = ?", [new, source, kind.rawValue, old])
                        try db.execute("UPDATE misses SET key = ? WHERE source = ? AND entity = ? AND key = ?", [new, source, kind.rawValue, old])
                    }
                    // Inputs are the upstream's records by kind and key, whichever consumer owes them.
                    try db.execute("""
                        DELETE FROM pending_inputs WHERE entity = ? AND key = ?
                            AND consumer IN (SELECT consumer FROM pending_inputs WHERE entity = ? AND key = ?)
                        """, [kind.rawValue, old, kind.rawValue, new])
                    try db.execute("UPDATE pending_inputs SET key = ? WHERE entity = ? AND key = ?", [new, kind.rawValue, old])
                    if !taken { history.append((old, new)) }
                    moved[source, default: [:]][RecordIdentity(entity: kind, key: old)] = new
                }
                // The change log has no index on every row's key: one pass per slice of
                // keys, not one per record (a store's log outgrows its episodes many times).
                for start in stride(from: 0, to: history.count, by: 200) {
                    let slice = history[start..<min(start + 200, history.count)]
                    let cases = repeatElement("WHEN ? THEN ?", count: slice.count).joined(separator: " ")
                    try db.execute("""
                        UPDATE changes SET key = CASE key \(cases) END
                        WHERE entity = ? AND key IN (\(repeatElement("?", count: slice.count).joined(separator: ", ")))
                        """, slice.flatMap { [$0.old, $0.new] as [any SQLArgument] } + [entity.rawValue] + slice.map(\.old))
                }
            }
        }
        for (source, renames) in moved.sorted(by: { $0.key < $1.key }) {
            for row in try db.rows("SELECT run_id, scope, page, keys FROM run_pages WHERE source = ?", [source]) {
                let keys: String = row[3]
                var changed = false
                let renamed = Self.identities(keys).map { identity -> String in
                    let key = renames[identity].map { new -> String in changed = true; return new } ?? identity.key
                    return "\(identity.entity.rawValue)\t\(key)\n"
                }.joined()
                guard changed else { continue }
                let runID: Int64 = row[0]
                let scope: String = row[1]
                let page: Int64 = row[2]
                try db.execute("UPDATE run_pages SET keys = ? WHERE run_id = ? AND source = ? AND scope = ? AND page = ?",
                               [renamed, runID, source, scope, page])
            }
        }
        return !moved.isEmpty
    }

    /// Builds `entities` and the field registry from every stored payload, in
    /// one transaction (a store written before the entity model). The change
    /// log keeps its history as it was written; nothing is logged for this.
    private func rebuildEntities(_ db: any SQLSession, writer: EntityWriter) throws {
        let firstRun = try db.value(as: Int64.self, "SELECT min(id) FROM runs") ?? 0
        var registries: [String: FieldRegistryWriter] = [:]
        try db.forEachRow("SELECT source, entity, key, payload, added_run FROM records ORDER BY rowid", []) { row in
            let source: String = row[0]
            guard let kind = EntityKind(rawValue: row[1]) else { return }
            let payload: String = row[3]
            let fields = (try? JSONParser.parse(Array(payload.utf8)).objectValue) ?? [:]
            let mapping = mapping(for: source)
            let sighting = Sighting(source: source, kind: kind, role: mapping.role(kind))
            try writer.upsert(sighting, key: row[2], canonical: mapping.canonical(kind, fields), addedRun: row[4], log: false)
            if registries[source] == nil { registries[source] = try FieldRegistryWriter(db, source: source, runID: firstRun) }
            try registries[source]!.note(kind, fields, order: nil, in: db)
        }
    }
}
