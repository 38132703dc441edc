import Catalog
import Crawl
import Foundation

/// A kind of source (`kind:` in a job file): its settings, how they are read
/// and validated, and how a source of this kind is crawled.
///
/// A conforming type is the settings value itself. Adding a kind is one file
/// holding such a type and one line in ``SourceRegistry/standard`` (or
/// ``SourceRegistry/adding(_:)`` for a kind defined outside this module).
public protocol SourceKind: Sendable, Equatable {
    /// The job file's `kind:` value, e.g. `itunes-search`.
    static var name: String { get }
    /// The keys this kind takes besides `name`, `kind`, `baseURL` and `removal`.
    static var settingKeys: [String] { get }
    /// Reads and validates this kind's settings from a source's mapping;
    /// every problem goes to `reader`. Nil when the settings cannot be built.
    static func read(_ fields: SettingsReader.Fields, path: String, reader: inout SettingsReader) -> Self?

    /// The real service's address, used unless the job sets `baseURL` or runs
    /// a simulator; nil for sources whose addresses come from records or the disk.
    var defaultBaseURL: URL? { get }
    /// What the source needs from the snapshot before its scopes can be
    /// built (an earlier source's records), if anything.
    var inputRequest: InputRequest? { get }
    /// The scopes of a run. `baseURL` is where the API lives; `inputs` are
    /// the records ``inputRequest`` asked for, in entity then key order.
    func scopes(baseURL: URL, inputs: [Record]) -> [CrawlScope]
    /// Whether the source follows up on what its own scopes added or changed
    /// (so the runner reads those records back only where it matters: on a
    /// million-row night that read would cost more than the diff).
    var hasFollowUps: Bool { get }
    /// Scopes crawled after the source's own, for the records they added or
    /// changed in this run (marketplace product details). Never sweeping.
    func followUpScopes(baseURL: URL, newOrChanged: [Record]) -> [CrawlScope]

    /// Maps a record this source produced (its entity and wire fields, as
    /// stored) into the canonical model (``CanonicalSchema``). Pure: the
    /// snapshot calls it for added and changed records, and again over stored
    /// payloads when it rebuilds its entities after an upgrade.
    func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord
    /// How this source's sightings of `entity` count for removal.
    func role(of entity: EntityKind) -> RecordRole
    /// Canonical fields of `entity` this source decides over every other
    /// source (see ``SourceMapping/owns``); none by default.
    func ownedFields(of entity: EntityKind) -> Set<String>
    /// Entities whose records an older release keyed differently, each with
    /// the rule giving a stored record (its key and wire fields) the key this
    /// release gives it (``SourceMapping/keyRules``); none by default.
    var keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String] { get }
    /// True when ``canonical(_:_:)`` keeps `entity`'s wire fields exactly as
    /// they are, whatever they hold: the store then takes a record's payload
    /// as its canonical fields without building them. False by default.
    func keepsWireFields(of entity: EntityKind) -> Bool
}

extension SourceKind {
    public var defaultBaseURL: URL? { nil }
    public var inputRequest: InputRequest? { nil }
    public var hasFollowUps: Bool { false }
    public func followUpScopes(baseURL: URL, newOrChanged: [Record]) -> [CrawlScope] { [] }
    /// A kind that knows no canonical model keeps its fields as they are.
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        CanonicalRecord(entity: entity, fields: wire)
    }
    public func role(of entity: EntityKind) -> RecordRole { .lists }
    public func ownedFields(of entity: EntityKind) -> Set<String> { [] }
    public var keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String] { [:] }
    public func keepsWireFields(of entity: EntityKind) -> Bool { false }

    /// The earlier source of the same job this one starts from, if any.
    public var upstream: String? { inputRequest?.source }

    func isEqual(to other: any SourceKind) -> Bool { (other as? Self) == self }
}

/// One source of a job: a name, a kind with its settings, and the rules shared by every kind.
public struct SourceSpec: Sendable, Equatable {
    /// Unique within the job; records and checkpoints are filed under it.
    public var name: String
    public var settings: any SourceKind
    /// nil = the service's real address (or the simulator's when the job runs one).
    public var baseURL: URL?
    public var removal: RemovalPolicy

    public init(name: String, baseURL: URL? = nil, removal: RemovalPolicy = .init(), settings: any SourceKind) {
        self.name = name
        self.settings = settings
        self.baseURL = baseURL
        self.removal = removal
    }

    /// The kind's name as the job file spells it.
    public var kind: String { type(of: settings).name }

    /// The address crawled when the job sets none and runs no simulator.
    public var defaultBaseURL: URL? { settings.defaultBaseURL }

    public static func == (lhs: SourceSpec, rhs: SourceSpec) -> Bool {
        lhs.name == rhs.name && lhs.baseURL == rhs.baseURL && lhs.removal == rhs.removal && lhs.settings.isEqual(to: rhs.settings)
    }

    /// The scopes of this source. Its own `baseURL` wins; then `baseURL`, where
    /// the run's services are (a simulator); nil there means the real service's.
    public func scopes(baseURL: URL?, inputs: [Record] = []) -> [CrawlScope] {
        settings.scopes(baseURL: resolved(baseURL), inputs: inputs)
    }

    /// The follow-up scopes for what this source added or changed.
    public func followUpScopes(baseURL: URL?, newOrChanged: [Record]) -> [CrawlScope] {
        settings.followUpScopes(baseURL: resolved(baseURL), newOrChanged: newOrChanged)
    }

    private func resolved(_ baseURL: URL?) -> URL {
        // Sources whose URLs come from records or the disk never use it.
        self.baseURL ?? baseURL ?? defaultBaseURL ?? URL(string: "http://localhost")!
    }
}

/// The source kinds a job file may name.
public struct SourceRegistry: Sendable {
    public private(set) var kinds: [any SourceKind.Type]

    public init(_ kinds: [any SourceKind.Type]) {
        self.kinds = kinds
    }

    /// Every kind storesync ships.
    public static let standard = SourceRegistry([
        ITunesGenresSettings.self,
        ITunesChartsSettings.self,
        ITunesSearchSettings.self,
        ITunesLookupSettings.self,
        MarketplaceSettings.self,
        PodcastFeedSettings.self,
        RecordsFileSettings.self,
    ])

    /// This registry with one more kind (a kind of the caller's own).
    public func adding(_ kind: any SourceKind.Type) -> SourceRegistry {
        var copy = self
        copy.kinds.removeAll { $0.name == kind.name }
        copy.kinds.append(kind)
        return copy
    }

    public func kind(named name: String) -> (any SourceKind.Type)? {
        kinds.first { $0.name == name }
    }

    public var names: [String] { kinds.map { $0.name } }
}

/// The upstream records a dependent source is built from.
public struct InputRequest: Sendable, Equatable {
    /// An earlier source of the same job.
    public var source: String
    /// Only these entities (empty = all).
    public var entities: [EntityKind]
    public var selection: InputSelection
    /// This source's own current records of these entities, appended to the
    /// inputs after the upstream's (all of them, whatever `selection` says):
    /// what the source itself learnt last time, e.g. that a feed moved.
    public var ownEntities: [EntityKind] = []
    /// The payload members the source reads from its inputs (empty: every
    /// member). Inputs are held together while the scopes are built, so a
    /// source that needs a few members of each says which.
    public var fields: [String] = []

    public init(source: String, entities: [EntityKind], selection: InputSelection, ownEntities: [EntityKind] = [],
                fields: [String] = []) {
        self.source = source
        self.entities = entities
        self.selection = selection
        self.ownEntities = ownEntities
        self.fields = fields
    }
}
