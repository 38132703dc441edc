import Catalog
import Foundation

extension SQLSnapshotStore {
    /// Stands for the job file in the command a guard warning suggests; the
    /// runner, which knows the file, puts its path there.
    public static let jobPlaceholder = "JOB"

    /// Records how a scope's crawl ended (its checkpoint state for this run).
    package func finishScope(runID: Int64, source: String, scope: String, state: ScopeState, error: RunProblem?) throws(StoreSyncError) {
        try finishScopeNow(runID: runID, source: source, scope: scope, state: state, error: error)
    }

    /// ``finishScope(runID:source:scope:state:error:)`` into the snapshot; `alongside` runs in its transaction.
    func finishScopeNow(runID: Int64, source: String, scope: String, state: ScopeState, error: RunProblem?,
                        alongside: ((any SQLSession) throws -> Void)? = nil) throws(StoreSyncError) {
        try wrap {
            try engine.write { db in
                try checkFence(db, source: source, scope: scope)
                try alongside?(db)
                try writeScopeEnd(db, runID: runID, source: source, scope: scope, state: state, error: error)
            }
        }
    }

    /// What ``finishScopeNow(runID:source:scope:state:error:alongside:)``
    /// writes, within a transaction of the caller's (a fleet's replay ends a
    /// scope in the transaction of its last pages).
    func writeScopeEnd(_ db: any SQLSession, runID: Int64, source: String, scope: String, state: ScopeState, error: RunProblem?) throws {
        // The error's code and URL beside its text: `status --json` and a
        // report rebuilt from the store show the same structure as the run did.
        try db.execute("""
            INSERT INTO scopes (source, scope, run_id, next_page, state, error, error_code, error_url) VALUES (?, ?, ?, 0, ?, ?, ?, ?)
            ON CONFLICT (source, scope) DO UPDATE SET
                -- A scope that failed before its first page in this run must not
                -- inherit an older run's next page: a resume would skip pages.
                next_page = CASE WHEN scopes.run_id = excluded.run_id THEN scopes.next_page ELSE 0 END,
                run_id = excluded.run_id, state = excluded.state, error = excluded.error,
                error_code = excluded.error_code, error_url = excluded.error_url
            """, [source, scope, runID, state.rawValue, error?.message, error?.code, error?.url])
    }

    /// The removal pass of one complete scope (Invariant 2), run once every
    /// scope of the source has been crawled, so a record that moved to another
    /// scope of the same source is seen there and not removed.
    ///
    /// A record of this scope that no page of this run listed is missed once
    /// more; at `afterMisses` consecutive misses it is removed — unless that
    /// would remove more than `maxRatio` of the scope, in which case nothing
    /// is removed and a warning says why. Each scope is swept at most once per
    /// run, in one transaction, so a run killed mid-pass never counts a miss twice;
    /// asked again in the same run (a resumed run), it returns the first pass's
    /// guard warning and removes nothing more.
    package func sweepScope(runID: Int64, source: String, scope: String, removal policy: RemovalPolicy) throws(StoreSyncError) -> RemovalResult {
        let seenKeys = seenSnapshot(source: source)
        let mapping = mapping(for: source)
        var removed: [RecordIdentity] = []
        var cascaded: [(source: String, identity: RecordIdentity)] = []
        defer {
            // Only a committed pass leaves `removed` filled.
            digests(of: source)?.update(removed.map { ($0, nil) })
            for (other, identity) in cascaded { digests(of: other)?.update([(identity, nil)]) }
        }
        do {
            return try engine.write { db in
                try checkFence(db, source: source, scope: scope)
                removed = []
                let checkpoint = try db.row("SELECT state, run_id, swept_run, swept_warning FROM scopes WHERE source = ? AND scope = ?",
                                            [source, scope])
                guard let checkpoint, checkpoint["state"] as String? == "complete", checkpoint["run_id"] as Int64? == runID else {
                    return RemovalResult()
                }
                if (checkpoint["swept_run"] as Int64?) == runID {
                    // Swept before this run was killed: the pass is not repeated, but
                    // what its guard refused is still tonight's news.
                    var earlier = RemovalResult()
                    earlier.guardWarning = checkpoint["swept_warning"]
                    return earlier
                }
                var gone: [RecordIdentity] = []
                var orphans: [(source: String, identity: RecordIdentity)] = []
                let unseen = try unseenMembers(db, runID: runID, source: source, scope: scope, seen: seenKeys)
                let result = try Self.removalPass(db, runID: runID, source: source, scope: scope, seen: seenKeys, policy: policy,
                                                  mapping: mapping, owns: ownership, unseen: unseen, removed: &gone, cascaded: &orphans)
                // In the pass's transaction: a kill leaves either both or neither.
                try db.execute("UPDATE scopes SET swept_run = ?, swept_warning = ? WHERE source = ? AND scope = ?",
                               [runID, result.guardWarning, source, scope])
                // A long pass commits with its claim renewed from now (see applyNow).
                try checkFence(db, source: source, scope: scope)
                removed = gone
                cascaded = orphans
                return result
            }
        } catch let error as StoreSyncError {
            removed = []
            cascaded = []
            throw error
        } catch {
            removed = []
            cascaded = []
            throw .storage(path: path, reason: "removal pass of \(source)/\(scope): \(error)")
        }
    }

    /// The records of `scope` that this run has not seen, or nil when they
    /// are better found by scanning the scope.
    ///
    /// Found once per source and run from the digest index (the source's
    /// records minus the seen-set, one probe each), then one point query per
    /// unseen record for its scope, kept for the source's other sweeps. On a
    /// normal night few records are unseen; where many are (a scope failed),
    /// the per-scope scan of the key index is cheaper than that many queries.
    func unseenMembers(_ db: any SQLSession, runID: Int64, source: String, scope: String,
                       seen: SeenKeys) throws -> [RecordIdentity]? {
        if let cached = unseenByScope.withLock({ $0[source] }), cached.runID == runID {
            return cached.byScope.map { $0[scope] ?? [] }
        }
        let index = try digestIndex(db, source: source)
        var byScope: [String: [RecordIdentity]]?
        if let unseen = index.identities(unseenIn: seen, limit: max(10_000, index.initialCount / 10)) {
            var grouped: [String: [RecordIdentity]] = [:]
            if db.dialect.statementsAreRoundTrips {
                // A query per thousand keys, not a round trip each.
                let owners = try Self.scopes(db, source: source, of: unseen)
                for identity in unseen {
                    if let owner = owners[identity] { grouped[owner, default: []].append(identity) }
                }
            } else {
                for identity in unseen {
                    guard let owner = try db.value(as: String.self, "SELECT scope FROM records WHERE source = ? AND entity = ? AND key = ?",
                                                   [source, identity.entity.rawValue, identity.key]) else { continue }
                    grouped[owner, default: []].append(identity)
                }
            }
            byScope = grouped
        }
        unseenByScope.withLock { $0[source] = (runID, byScope) }
        return byScope.map { $0[scope] ?? [] }
    }

    /// The scope each of `identities` is stored under (absent: not stored).
    static func scopes(_ db: any SQLSession, source: String, of identities: [RecordIdentity]) throws -> [RecordIdentity: String] {
        var owners: [RecordIdentity: String] = [:]
        let byKind = Dictionary(grouping: identities, by: \.entity)
        for (kind, members) in byKind.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            try db.rows(keyedBy: members.map(\.key), [source, kind.rawValue],
                        { "SELECT key, scope FROM records WHERE source = ? AND entity = ? AND key IN (\($0))" }) { row in
                owners[RecordIdentity(entity: kind, key: row[0])] = row[1]
            }
        }
        return owners
    }

    /// Ends `source`'s sighting of `identity`: its row and miss count go and
    /// its entity loses it; descriptions the entity leaves behind when it goes
    /// (a removed product's detail page) go with it. Returns the record rows
    /// deleted of this sighting's own row (`rowsWritten`) and every row deleted,
    /// by source, for the digest indexes. The deleted rows are added to
    /// `vouching` under the scope they were filed in (the sighting's own row
    /// under `scope`), for ``forgetMemos(_:vouchingFor:)``.
    static func endSighting(_ db: any SQLSession, source: String, scope: String, _ identity: RecordIdentity, mapping: SourceMapping,
                            entities: EntityWriter, vouching: inout MemoVouchers) throws
        -> (rowsWritten: Int, rows: [(source: String, identity: RecordIdentity)]) {
        func delete(_ owner: String, _ row: RecordIdentity) throws {
            for table in ["records", "misses"] {
                try db.queueDelete(from: table, where: [.text("source"), .text("entity"), .text("key")],
                                   [owner, row.entity.rawValue, row.key])
            }
        }
        // The row is there: the sighting ended is one the store holds (read from its records or their index).
        try delete(source, identity)
        vouching[MemoScope(source: source, scope: scope), default: []].insert(identity)
        let rowsWritten = 1
        var rows: [(source: String, identity: RecordIdentity)] = [(source, identity)]
        let sighting = Sighting(source: source, kind: identity.entity, role: mapping.role(identity.entity))
        for orphan in try entities.end(sighting, entity: mapping.entity(of: identity.entity), key: identity.key) {
            let row = RecordIdentity(entity: orphan.kind, key: identity.key)
            // Descriptions left behind are few (a removed product's detail): a lookup each.
            if let filed = try db.value(as: String.self, "SELECT scope FROM records WHERE source = ? AND entity = ? AND key = ?",
                                        [orphan.source, row.entity.rawValue, row.key]) {
                vouching[MemoScope(source: orphan.source, scope: filed), default: []].insert(row)
            }
            try delete(orphan.source, row)
            rows.append((orphan.source, row))
        }
        return (rowsWritten, rows)
    }

    /// A scope whose page memos may vouch for rows that are gone.
    struct MemoScope: Hashable {
        var source: String
        var scope: String
    }
    typealias MemoVouchers = [MemoScope: Set<RecordIdentity>]

    /// A page memo vouches for the rows its page listed: a 304, or the same
    /// body, marks them seen without reading them. Once a row is gone, a memo
    /// that listed it must go too, or the row could never come back: a product
    /// unlisted one night and relisted unchanged the next would get a 304 for
    /// its detail and stay without it; a list that shrank and grew back would
    /// mark removed rows seen. The next night fetches those pages in full.
    static func forgetMemos(_ db: any SQLSession, vouchingFor gone: MemoVouchers) throws {
        for (place, rows) in gone.sorted(by: { ($0.key.source, $0.key.scope) < ($1.key.source, $1.key.scope) }) {
            let lines = KeyListLines(rows)
            let memos = try db.rows("SELECT page, keys FROM page_memos WHERE source = ? AND scope = ?", [place.source, place.scope])
            for memo in memos where lines.anyListed(in: memo["keys"]) {
                try db.execute("DELETE FROM page_memos WHERE source = ? AND scope = ? AND page = ?",
                               [place.source, place.scope, memo["page"] as Int])
            }
        }
    }

    /// A few records' lines of a key list (`entity<TAB>key`), found in a
    /// long list without parsing it: a night removes a few rows, and the
    /// memos of a large scope list every row it has (a hundred thousand
    /// identities parsed per sweep were a tenth of a night-2 apply).
    struct KeyListLines {
        private var byHash: [UInt64: [[UInt8]]] = [:]

        init(_ identities: some Sequence<RecordIdentity>) {
            for identity in identities {
                let line = Array("\(identity.entity.rawValue)\t\(identity.key)".utf8)
                byHash[line.withUnsafeBufferPointer { XXH64.hash($0, seed: 0) }, default: []].append(line)
            }
        }

        /// Whether `keyList` has a line that is one of these.
        func anyListed(in keyList: String) -> Bool {
            guard !byHash.isEmpty else { return false }
            var keyList = keyList
            return keyList.withUTF8 { bytes in
                var start = 0
                while start < bytes.count {
                    var end = start
                    while end < bytes.count, bytes[end] != 0x0A { end += 1 }
                    let line = UnsafeBufferPointer(rebasing: bytes[start..<end])
                    if let candidates = byHash[XXH64.hash(line, seed: 0)], candidates.contains(where: { $0.elementsEqual(line) }) {
                        return true
                    }
                    start = end + 1
                }
                return false
            }
        }
    }

    static func removalPass(
        _ db: any SQLSession, runID: Int64, source: String, scope: String, seen: SeenKeys, policy: RemovalPolicy,
        mapping: SourceMapping, owns: @escaping (Sighting) -> Set<String>, unseen: [RecordIdentity]?,
        removed: inout [RecordIdentity], cascaded: inout [(source: String, identity: RecordIdentity)]
    ) throws -> RemovalResult {
        var result = RemovalResult()
        var members = 0
        var missed: [RecordIdentity] = []
        if let unseen {
            members = try db.value(as: Int.self, "SELECT count(*) FROM records WHERE source = ? AND scope = ?",
                                       [source, scope]) ?? 0
            missed = unseen
        } else {
            // The covering key index holds the scope: a scan of it, never of the payloads.
            let hint = db.dialect.indexHint("records_by_key")
            // Columns by position and entity names parsed once: this loop meets every record of the scope.
            var entities: [String: EntityKind] = [:]
            try db.forEachRow("SELECT entity, key FROM records \(hint) WHERE source = ? AND scope = ?", [source, scope]) { row in
                members += 1
                let name: String = row[0]
                guard let entity = entities[name] ?? EntityKind(rawValue: name) else { return }
                entities[name] = entity
                let identity = RecordIdentity(entity: entity, key: row[1])
                if !seen.contains(identity) { missed.append(identity) }
            }
        }
        let night = try db.value(as: Int.self, "SELECT night FROM runs WHERE id = ?", [runID])
        var missCounts: [RecordIdentity: (count: Int, night: Int?)] = [:]
        for row in try db.rows("SELECT entity, key, count, night FROM misses WHERE source = ?", [source]) {
            guard let entity = EntityKind(rawValue: row["entity"]) else { continue }
            missCounts[RecordIdentity(entity: entity, key: row["key"])] = (row["count"], row["night"])
        }
        /// Consecutive complete crawls that missed `identity`, this one included.
        func misses(_ identity: RecordIdentity) -> Int {
            guard let previous = missCounts[identity] else { return 1 }
            if let night, previous.night == night { return previous.count }
            return previous.count + 1
        }
        // A record that came back is no longer missing.
        for identity in missCounts.keys where seen.contains(identity) {
            try db.queueDelete(from: "misses", where: [.text("source"), .text("entity"), .text("key")],
                               [source, identity.entity.rawValue, identity.key])
        }
        missed.sort()
        let entities = try EntityWriter(db, runID: runID, logAddedValues: true, owns: owns)
        try entities.prefetch(endingSightingsOf: missed, source: source, mapping: mapping)
        func sighting(_ identity: RecordIdentity) -> Sighting {
            Sighting(source: source, kind: identity.entity, role: mapping.role(identity.entity))
        }
        // A ranked list's sightings end the night it stops listing them: leaving
        // a chart is churn, not evidence that anything disappeared.
        func isRanked(_ identity: RecordIdentity) -> Bool { mapping.role(identity.entity) == .ranks }
        func isDue(_ identity: RecordIdentity) -> Bool {
            isRanked(identity) || misses(identity) >= policy.afterMisses
        }
        if !missed.isEmpty, missed.count == members, missed.allSatisfy(isRanked) {
            result.guardWarning = "\(source)/\(scope): the list came back empty where it held \(members) entries; nothing was removed. "
                + "If the list really is empty now, the next complete crawl that lists something replaces it."
        } else {
            // The ratio guard weighs evidence of disappearance only: sightings
            // whose entity no other source lists. An entity another source still
            // lists is not disappearing, whatever this scope's churn.
            var disappearing = 0
            for identity in missed where isDue(identity) && !isRanked(identity) {
                if try entities.wouldRemove(sighting(identity), entity: mapping.entity(of: identity.entity), key: identity.key) {
                    disappearing += 1
                }
            }
            let allowed = Int((policy.maxRatio * Double(members)).rounded(.up))
            if disappearing > allowed {
                // The smallest ratio (in hundredths) that lets these removals through, for the command to copy.
                var needed = (Double(disappearing) / Double(members) * 100).rounded(.up) / 100
                if Int((needed * Double(members)).rounded(.up)) < disappearing { needed += 0.01 }
                let ratio = String(format: "%.2f", min(needed, 1))
                result.guardWarning = "\(source)/\(scope): \(disappearing) of \(members) records would be removed, above maxRemovalRatio \(policy.maxRatio); nothing was removed. If the source really shrank, allow it for one run: storesync run \(Self.jobPlaceholder) --set sources.\(source).removal.maxRatio=\(ratio)"
            }
        }
        var vouching: MemoVouchers = [:]
        // Written together at the end, a few statements rather than one a record.
        var pendingMisses: [[SQLValue]] = []
        for identity in missed {
            let count = misses(identity)
            if isDue(identity), result.guardWarning == nil {
                let ended = try Self.endSighting(db, source: source, scope: scope, identity, mapping: mapping, entities: entities, vouching: &vouching)
                result.recordRowsWritten += ended.rowsWritten
                for (owner, row) in ended.rows {
                    if owner == source { removed.append(row) } else { cascaded.append((owner, row)) }
                }
                result.removed += 1
            } else if !isRanked(identity) {
                pendingMisses.append([.text(source), .text(identity.entity.rawValue), .text(identity.key), .integer(Int64(count)),
                                      night.map { .integer(Int64($0)) } ?? .null])
                result.pending += 1
            }
        }
        // `missed` holds each identity once: no key twice in one statement.
        try PageBookkeeping.upsert(db, "INSERT INTO misses (source, entity, key, count, night) VALUES", columns: 5, rows: pendingMisses,
                                   "ON CONFLICT (source, entity, key) DO UPDATE SET count = excluded.count, night = excluded.night")
        try forgetMemos(db, vouchingFor: vouching)
        try addCounts(db, runID: runID, source: source, removed: result.removed, recordWrites: result.recordRowsWritten)
        return result
    }
}

extension SQLSnapshotStore {
    /// Ends a scope the job no longer has (a dependent source's feed whose
    /// podcast left its upstream): its records have left every scope of the
    /// source, so their sightings end now, and its checkpoint and page memos go.
    package func retireScope(runID: Int64, source: String, scope: String) throws(StoreSyncError) -> RemovalResult {
        let mapping = mapping(for: source)
        // A record another scope of the source listed tonight stays, whatever
        // scope it was filed under (batches of ids regroup as inputs change).
        let seenKeys = seenSnapshot(source: source)
        var removed: [RecordIdentity] = []
        var cascaded: [(source: String, identity: RecordIdentity)] = []
        defer {
            digests(of: source)?.update(removed.map { ($0, nil) })
            for (other, identity) in cascaded { digests(of: other)?.update([(identity, nil)]) }
        }
        do {
            return try engine.write { db in
                try checkFence(db, source: source, scope: scope)
                var result = RemovalResult()
                let entities = try EntityWriter(db, runID: runID, logAddedValues: true, owns: ownership)
                let members = try db.rows("SELECT entity, key FROM records WHERE source = ? AND scope = ? ORDER BY entity, key",
                                               [source, scope]).compactMap { row -> RecordIdentity? in
                    EntityKind(rawValue: row[0]).map { RecordIdentity(entity: $0, key: row[1]) }
                }
                var gone: [RecordIdentity] = []
                var orphans: [(source: String, identity: RecordIdentity)] = []
                let ending = members.filter { !seenKeys.contains($0) }
                try entities.prefetch(endingSightingsOf: ending, source: source, mapping: mapping)
                var vouching: MemoVouchers = [:]
                for identity in ending {
                    let ended = try Self.endSighting(db, source: source, scope: scope, identity, mapping: mapping, entities: entities, vouching: &vouching)
                    result.recordRowsWritten += ended.rowsWritten
                    for (owner, row) in ended.rows {
                        if owner == source { gone.append(row) } else { orphans.append((owner, row)) }
                    }
                    result.removed += 1
                }
                try db.execute("DELETE FROM scopes WHERE source = ? AND scope = ?", [source, scope])
                try db.execute("DELETE FROM page_memos WHERE source = ? AND scope = ?", [source, scope])
                try Self.forgetMemos(db, vouchingFor: vouching)
                try Self.addCounts(db, runID: runID, source: source, removed: result.removed, recordWrites: result.recordRowsWritten)
                removed = gone
                cascaded = orphans
                return result
            }
        } catch {
            removed = []
            cascaded = []
            throw .storage(path: path, reason: "retiring \(source)/\(scope): \(error)")
        }
    }
}
