// The values the store interface takes and returns: plain data, no backend types.
import Catalog
import Foundation

/// A run as the store knows it.
public struct RunInfo: Sendable, Equatable {
    public var id: Int64
    /// The simulated night this run crawled, when the job runs the simulator.
    public var night: Int?
    /// True when this run continues one that was killed before it finished.
    public var resumed: Bool
    public var startedAt: Date
    /// The run's crawl had finished; only its exports remain to be written.
    public var exportOnly: Bool = false
    /// For an export-only resume: how the crawl ended.
    public var crawlStatus: RunStatus?

    package init(id: Int64, night: Int?, resumed: Bool, startedAt: Date, exportOnly: Bool = false, crawlStatus: RunStatus? = nil) {
        self.id = id
        self.night = night
        self.resumed = resumed
        self.startedAt = startedAt
        self.exportOnly = exportOnly
        self.crawlStatus = crawlStatus
    }
}


/// What the store remembers of the last answer a page got, so the next run
/// can ask "has it changed?" (conditional GET) or see that the body did not.
public struct PageMemo: Sendable, Equatable {
    /// The URL the memo is for; a memo for another URL (the job's page size
    /// changed) is never used.
    public var url: String
    public var etag: String?
    public var lastModified: String?
    /// ``ContentHash`` of the raw body.
    public var bodyHash: ContentHash
    public var rowCount: Int
    public var hasNext: Bool?
    /// The records the page held, as the store keeps them (one
    /// `entity<TAB>key` line each); read through ``keys`` only when the page
    /// turns out unchanged, since a changed page never needs them.
    var keyList: String

    /// The records the page held (filled by the store when it saves a memo).
    public var keys: [RecordIdentity] { SQLSnapshotStore.identities(keyList) }

    public init(url: String, etag: String?, lastModified: String?, bodyHash: ContentHash, rowCount: Int, hasNext: Bool?) {
        self.url = url
        self.etag = etag
        self.lastModified = lastModified
        self.bodyHash = bodyHash
        self.rowCount = rowCount
        self.hasNext = hasNext
        self.keyList = ""
    }
}

/// What one page brought, to be applied in one transaction.
public struct PageInput: Sendable {
    public var runID: Int64
    public var source: String
    public var scope: String
    /// Zero-based page index within the scope.
    public var page: Int
    public var records: [Catalog.Record]
    /// HTTP requests spent on this page (retries included).
    public var requests: Int
    public var skippedRows: Int
    public var seconds: Double
    /// Records the page holds unchanged since the memo (a 304, or the same
    /// body as last time): marked seen without being decoded or written.
    public var unchangedKeys: [RecordIdentity]
    /// Saved with the page when the page was decoded from a fresh body.
    public var memo: PageMemo?
    /// Rows of a decoded page recognised from their raw bytes as the stored
    /// record (``RowMemory``): unchanged, not decoded. Unlike `unchangedKeys`
    /// they do not make the page an unchanged page.
    public var rawUnchanged: [RecordIdentity] = []
    /// This is the scope's last page: its checkpoint says "complete" in the
    /// same transaction, so a kill right after it never fetches past the end.
    public var completesScope = false
    /// Rows of this page already met on an earlier page of the same scope in this run.
    public var driftRows = 0

    public init(runID: Int64, source: String, scope: String, page: Int, records: [Catalog.Record],
                requests: Int = 1, skippedRows: Int = 0, seconds: Double = 0,
                unchangedKeys: [RecordIdentity] = [], memo: PageMemo? = nil) {
        self.unchangedKeys = unchangedKeys
        self.memo = memo
        self.runID = runID
        self.source = source
        self.scope = scope
        self.page = page
        self.records = records
        self.requests = requests
        self.skippedRows = skippedRows
        self.seconds = seconds
    }
}

/// What applying a page changed.
///
/// A record counts once in a run, as added, changed or unchanged against
/// what the store held when the run began. A later version of it in the
/// same run may move it from one to the other: the page that undoes an
/// earlier page's change counts `changed` -1 and `unchanged` +1, so the run's
/// sums stay true (issue 13).
public struct PageResult: Sendable, Equatable {
    public var added = 0
    public var changed = 0
    public var unchanged = 0
    /// Rows of records met before in this run, or superseded by a later row
    /// of their key on the same page (the last row of a key is the record).
    public var duplicates = 0
    /// Rows of the `records` table inserted, updated or deleted, as counted by
    /// SQLite itself (`sqlite3_changes`).
    public var recordRowsWritten = 0
    /// Records marked seen from a page memo, without decoding (part of `unchanged`/`duplicates`).
    public var unread = 0

    public init(added: Int = 0, changed: Int = 0, unchanged: Int = 0, duplicates: Int = 0, recordRowsWritten: Int = 0) {
        self.added = added
        self.changed = changed
        self.unchanged = unchanged
        self.duplicates = duplicates
        self.recordRowsWritten = recordRowsWritten
    }
}

/// The outcome of the removal pass of a complete scope.
public struct RemovalResult: Sendable, Equatable {
    public var removed = 0
    /// Missed this time but kept until `afterMisses` is reached.
    public var pending = 0
    /// Removal refused by the `maxRatio` guard: the message says why.
    public var guardWarning: String?
    public var recordRowsWritten = 0

    public init() {}
}

/// Where a scope stands within a run.
public struct ScopeCheckpoint: Sendable, Equatable {
    public var state: ScopeState
    public var nextPage: Int

    public init(state: ScopeState, nextPage: Int) {
        self.state = state
        self.nextPage = nextPage
    }
}

/// Whole-run counters that do not belong to one page.
public struct RunTotals: Sendable, Equatable {
    public var requests = RequestCounts()
    public var seconds = 0.0
    public var warnings: [RunProblem] = []
    public var errors: [RunProblem] = []

    public init() {}
}

/// Per-source counters of one run.
public struct SourceCounts: Sendable, Equatable {
    public var source: String
    public var pages = 0
    public var requests = 0
    public var added = 0
    public var changed = 0
    public var unchanged = 0
    public var removed = 0
    public var skipped = 0
    public var seconds = 0.0
    public var recordRowsWritten = 0
    /// Rows met twice within one scope (the listing shifted while it was paged).
    public var drift = 0
    /// Pages answered 304 or with the body stored last time, not decoded.
    public var unchangedPages = 0

    public init(source: String) { self.source = source }
}


/// One row of the change log.
public struct ChangeRow: Sendable, Equatable {
    /// The change's id in the log: numbered in the order it was logged (the
    /// largest plus one), the same on every engine.
    public var id: Int64 = 0
    public var runID: Int64
    public var source: String
    public var entity: String
    public var key: String
    public var op: String
    public var field: String?
    public var before: String?
    public var after: String?
    /// A removal's entity as it was: its id in the store and the run that
    /// added it (nil on other changes, and on removals logged before storesync kept them).
    public var removedEntityID: Int64?
    public var removedEntityAddedRun: Int64?
}

/// Where a scope stands, for `status`.
public struct ScopeRow: Sendable, Equatable {
    public var source: String
    public var scope: String
    /// The run that touched the scope last.
    public var runID: Int64
    public var state: ScopeState
    public var nextPage: Int
    /// Why the scope failed last; code `unknown` when an older version stored only the text.
    public var error: RunProblem?
    /// Records the scope holds now.
    public var records: Int
}

/// A finished or running run, for `status` and reports.
public struct RunRow: Sendable, Equatable {
    public var id: Int64
    public var job: String
    public var night: Int?
    public var startedAt: Date
    public var finishedAt: Date?
    public var status: RunStatus
    public var attempts: Int
    public var message: String?
    public var totals: RunTotals
    /// The crawl finished and was stored but its exports were never written
    /// (killed while exporting, or they failed): the next `run` of the same
    /// night, or `storesync export`, writes them.
    public var exportsPending: Bool = false
    /// How the last attempt of an unfinished run stopped: a signal's name, or
    /// ``Catalog/NightOutcome/deadlineMark``; nil when it was killed, or the run ended.
    public var stopped: String?

    /// The night's outcome as every surface tells it; `runningNow`: a process holds the run's lock.
    public func outcome(runningNow: Bool = false) -> NightOutcome {
        NightOutcome.of(status: status, stopped: stopped, exportsPending: exportsPending, runningNow: runningNow)
    }
}


/// A run with its per-source counters summed, for the exported runs table.
public struct RunSummary: Sendable, Equatable {
    /// The run as ``SnapshotStore/run(_:)`` reads it.
    public var run: RunRow
    /// Summed over the run's sources (`source` is empty); nil when the run stored no counters.
    public var counts: SourceCounts?
}

/// One source's records of one entity: what a run did to them and how many there are now.
public struct EntityTally: Sendable, Equatable {
    /// The source that stored the records.
    public var source: String
    /// The entity's name (``Catalog/EntityKind`` raw value).
    public var entity: String
    /// Records (not field changes) the run added, changed and removed.
    public var added = 0, changed = 0, removed = 0
    /// Records held now.
    public var records = 0
}

/// A value read out of a stored payload: what a typed export column holds.
public enum StoredValue: Sendable, Equatable {
    /// The member is absent or JSON `null`.
    case null
    /// A JSON integer (or boolean, as 0/1).
    case integer(Int64)
    /// A JSON number with a fraction or exponent.
    case real(Double)
    /// A JSON string, or an object or array as its JSON text.
    case text(String)
}

/// A current record with its projected columns, as the streaming read hands it over.
public struct ProjectedRecord: Sendable {
    /// The source that stored the record.
    public var source: String
    /// The record's key within its entity.
    public var key: String
    /// One value per requested ``ExportColumn``, in the requested order.
    public var values: [StoredValue]
    /// The record's canonical JSON (every field, also those no column names).
    public var payload: String
    /// The run that first saw the record, and the last run that changed its fields.
    public var addedRun: Int64 = 0, changedRun: Int64 = 0
    /// The entity's row id in the store: kept while the entity is stored,
    /// numbered the same on every engine (the largest plus one, so a removed
    /// entity's id can be given to one added later), kept by a store copied;
    /// the consumer database's `id`.
    public var id: Int64 = 0
}

/// A current record as the store holds it, for readers that work on bytes:
/// each buffer is valid only inside the callback that receives it.
public struct StoredRecordBytes {
    /// The source that first stored the record (UTF-8).
    public var source: UnsafeBufferPointer<UInt8>
    /// The record's key within its entity (UTF-8).
    public var key: UnsafeBufferPointer<UInt8>
    /// The record's canonical JSON.
    public var payload: UnsafeBufferPointer<UInt8>
    /// The run that first saw the record, and the last run that changed its fields.
    public var addedRun: Int64 = 0, changedRun: Int64 = 0
    /// The entity's row id in the store (``ProjectedRecord/id``).
    public var id: Int64 = 0
}

/// The order records are streamed in.
public enum RecordOrder: Sendable {
    /// The order the store first stored them: stable from night to night (a
    /// changed record keeps its place, new ones come last), so two nights'
    /// files diff line by line; the cheapest order for a backend to scan.
    case insertion
    /// By source, then key.
    case sourceAndKey
}

/// The order change-log rows are streamed in.
public enum ChangeOrder: Sendable {
    /// The order they were logged.
    case insertion
    /// By source, entity, key, operation and field.
    case record
}

/// Which records a feed lists, and in which order (``SnapshotStore/forEachFeedRecord(_:limit:_:)``).
public enum FeedQuery: Sendable {
    /// Records of these entities newest first by a payload member (ISO 8601 text), ties by entity then key:
    /// ``SnapshotStore/recordsNewestFirst(_:by:)``.
    case newestFirst([EntityKind], by: String)
    /// Records the latest runs added, then newest first by a payload member, then by key; the
    /// baseline's left out: ``SnapshotStore/recordsNewestAdded(_:thenBy:)``.
    case newestAdded(EntityKind, thenBy: String)
    /// One chart's entries in rank order: ``SnapshotStore/chartEntries(chart:)``.
    case chart(String)
}

/// A record a feed may list.
public struct FeedRecord: Sendable {
    /// What the record is.
    public var entity: EntityKind
    /// The record's key within its entity.
    public var key: String
    /// Canonical JSON of its fields.
    public var payload: String
    /// When the run that added it started (``SnapshotStore/recordsNewestAdded(_:thenBy:)`` only).
    public var addedRunStartedAt: Date?
}

/// A field of a record that went down at its latest change.
public struct FieldDecrease: Sendable {
    /// The record's key within its entity.
    public var key: String
    /// The record's current canonical JSON.
    public var payload: String
    /// The field's value before and after, as canonical JSON.
    public var before: String
    public var after: String
    /// When the run that logged the change started.
    public var runStartedAt: Date
}

/// A change-log row with the record's current payload, or nil once removed.
public struct ChangeWithRecord: Sendable {
    /// The change-log row.
    public var change: ChangeRow
    /// The record's canonical JSON now, or nil once it was removed.
    public var currentPayload: String?
}

/// A wire field a source has sent, as the store's field registry keeps it.
public struct RegisteredField: Sendable, Equatable {
    public var source: String
    public var entity: EntityKind
    public var name: String
    /// A ``FieldType`` name (`integer`, `real`, `date`, `text`): the widest
    /// type its values have had (integer and real make real; any other mix
    /// makes text); `empty` for a column of a CSV file's header that no row
    /// has filled yet.
    public var kind: String
    /// The run that first saw it.
    public var firstRun: Int64

    public init(source: String, entity: EntityKind, name: String, kind: String, firstRun: Int64) {
        self.source = source
        self.entity = entity
        self.name = name
        self.kind = kind
        self.firstRun = firstRun
    }
}

/// A field a run saw for the first time from a source that sent others
/// before, or whose values changed type.
public struct SchemaChange: Sendable, Equatable {
    public var source: String
    public var entity: EntityKind
    public var field: String
    public var kind: String
    /// The type before, when the type changed; nil for a new field.
    public var previousKind: String?

    public init(source: String, entity: EntityKind, field: String, kind: String, previousKind: String?) {
        self.source = source
        self.entity = entity
        self.field = field
        self.kind = kind
        self.previousKind = previousKind
    }

    /// One line for the run report.
    public var description: String {
        if let previousKind {
            return "\(source): field \(field) of \(entity.rawValue) changed type from \(previousKind) to \(kind)"
        }
        return "\(source): new field \(field) (\(kind)) in \(entity.rawValue); kept in the raw payload"
    }
}
