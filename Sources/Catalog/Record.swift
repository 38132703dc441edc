/// What kind of thing a record is. The raw value is what the snapshot and the
/// exports store, so existing values must never be renamed.
public enum EntityKind: String, Sendable, Hashable, CaseIterable, Comparable {
    case genre, podcast, episode, song, album, artist, movie, app, audiobook, ebook
    case musicVideo = "music-video"
    case chartEntry = "chart-entry"
    case listing
    /// A marketplace product's detail page (`/api/products/{id}`).
    case listingDetail = "listing-detail"
    /// A row of a user's own dataset (`records-file` sources).
    case record

    public static func < (a: EntityKind, b: EntityKind) -> Bool { a.rawValue < b.rawValue }
}

/// One record as a source saw it on one night: identity plus canonical content.
///
/// `payload` is the canonical JSON of every field the API sent (minus fields
/// that vary per request, such as `uo=4` tracking parameters), so the content
/// hash is stable and nothing the API sent is lost.
public struct Record: Sendable, Equatable {
    public let entity: EntityKind
    /// The record's id within its entity, e.g. an iTunes `trackId` as text.
    public let key: String
    /// Canonical JSON object (see ``CanonicalJSON``).
    public let payload: String
    public let hash: ContentHash
    /// The hash of the exact bytes the source sent for this record, where its
    /// connector can delimit them (a JSON Lines row). Stored with the record,
    /// it lets the next run recognise the same bytes without decoding them
    /// (see ``RowMemory``).
    public var rawHash: ContentHash?
    /// The source's own column order, for sources whose users think in
    /// columns (a records file's CSV header). It may name fields this record
    /// lacks (an empty cell is an absent field); nil when the source has no
    /// order of its own. Not part of the payload or its hash: reordering a
    /// file's columns changes no record.
    public var fieldOrder: [String]?
    /// The fields `payload` encodes, as the decoder produced them: they travel
    /// with the record through diff and apply, so nothing downstream parses
    /// the payload again to map it. Nil for a record rebuilt from stored text.
    private let decodedFields: [String: JSONValue]?
    /// For a record written straight to canonical bytes by its decoder (a
    /// records file's row on a first load): its fields' names and types,
    /// all the store needs of them when the fields map as they are. Its
    /// fields were never built as values; ``fields()`` parses the payload.
    public let shape: FieldShape?
    /// The canonical fields of the entity this record maps to, written by its
    /// decoder from the bytes it read (a marketplace list row), for a store
    /// whose mapping takes them (``SourceMapping/takesDecoderFields``): it
    /// writes them as they are, mapping nothing and parsing nothing.
    public let entityFields: EntityFields?

    /// Builds a record from decoded fields, computing the canonical payload and hash.
    public init(entity: EntityKind, key: String, fields: [String: JSONValue], rawHash: ContentHash? = nil,
                fieldOrder: [String]? = nil) {
        let bytes = CanonicalJSON.encodeObject(fields)
        self.entity = entity
        self.key = key
        self.hash = ContentHash(bytes: bytes)
        self.payload = String(decoding: bytes, as: UTF8.self)
        self.rawHash = rawHash
        self.fieldOrder = fieldOrder
        // As they read back from the payload (`0.0` is `0`): mapping them must
        // give what mapping the stored payload gives (a fleet's replay, an upgrade).
        self.decodedFields = CanonicalJSON.readBack(fields)
        self.shape = nil
        self.entityFields = nil
    }

    /// Builds a record from the canonical object its decoder wrote (``JSONParser/canonicalObject(_:keyField:scratch:)``).
    package init(entity: EntityKind, key: String, canonical: CanonicalObject, rawHash: ContentHash? = nil,
                 entityFields: EntityFields? = nil) {
        self.entity = entity
        self.key = key
        self.hash = ContentHash(bytes: canonical.bytes)
        self.payload = String(decoding: canonical.bytes, as: UTF8.self)
        self.rawHash = rawHash
        self.fieldOrder = nil
        self.decodedFields = nil
        self.shape = canonical.shape
        self.entityFields = entityFields
    }

    /// Rebuilds a record from what the snapshot stored.
    public init(entity: EntityKind, key: String, payload: String, hash: ContentHash) {
        self.entity = entity
        self.key = key
        self.payload = payload
        self.hash = hash
        self.decodedFields = nil
        self.shape = nil
        self.entityFields = nil
    }

    /// The record's fields: those it was decoded from, or, for a record
    /// rebuilt from stored text, its payload parsed.
    public func fields() throws(JSONSyntaxError) -> [String: JSONValue] {
        if let decodedFields { return decodedFields }
        return try JSONParser.parse(Array(payload.utf8)).objectValue ?? [:]
    }

    /// Whether ``fields()`` returns what the decoder produced, parsing nothing.
    public var carriesDecodedFields: Bool { decodedFields != nil }

    /// Records are equal when they say the same: whether one still carries
    /// the fields it was decoded from does not matter.
    public static func == (a: Record, b: Record) -> Bool {
        a.entity == b.entity && a.key == b.key && a.payload == b.payload && a.hash == b.hash && a.rawHash == b.rawHash
            && a.fieldOrder == b.fieldOrder
    }
}

/// An entity's canonical fields as a decoder wrote them (``Record/entityFields``).
public struct EntityFields: Sendable, Equatable {
    /// The entity the record maps to.
    public let entity: EntityKind
    /// Their canonical encoding (``CanonicalJSON``).
    public let text: String
    public let hash: ContentHash
    /// Their names, in canonical order.
    public let names: [String]

    package init(entity: EntityKind, bytes: [UInt8], names: [String]) {
        self.entity = entity
        self.text = String(decoding: bytes, as: UTF8.self)
        self.hash = ContentHash(bytes: bytes)
        self.names = names
    }
}

/// The identity of a record in the snapshot.
///
/// Keys are equal, hashed and ordered by their UTF-8 bytes, as the store's
/// tables (SQLite's and PostgreSQL's text comparison, the digest index)
/// hold them. Swift's String equality is canonical equivalence: a key with a
/// precomposed "é" and one with "e" and a combining accent are two records
/// upstream, and were one in every dictionary of the store.
public struct RecordIdentity: Sendable, Hashable, Comparable {
    public var entity: EntityKind
    public var key: String

    public init(entity: EntityKind, key: String) {
        self.entity = entity
        self.key = key
    }

    public static func == (a: RecordIdentity, b: RecordIdentity) -> Bool {
        a.entity == b.entity && a.key.utf8.elementsEqual(b.key.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(entity)
        var key = key
        key.withUTF8 { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
    }

    public static func < (a: RecordIdentity, b: RecordIdentity) -> Bool {
        if a.entity != b.entity { return a.entity.rawValue < b.entity.rawValue }
        return a.key.utf8.lexicographicallyPrecedes(b.key.utf8)
    }
}

extension Record {
    public var identity: RecordIdentity { RecordIdentity(entity: entity, key: key) }
}

/// What the snapshot remembers of the rows a source sent before, so that a
/// decoder can pass over a row whose bytes are exactly those of the stored
/// record instead of parsing, canonicalising and hashing it again: on a
/// night where 1% of a catalog changed, 99% of the rows cost one hash of
/// their bytes.
public protocol RowMemory: Sendable {
    /// True when the snapshot holds `identity`, stored from bytes that hashed to `rawHash`.
    func holds(_ identity: RecordIdentity, rawHash: ContentHash) -> Bool

    /// ``holds(_:rawHash:)`` for many rows at once: an implementation behind
    /// a lock takes it once per batch instead of once per row.
    func holdEach(_ rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> [Bool]

    /// True while the store holds nothing of the source and is in its first
    /// load of it (its first night): no row can be held, and a decoder that can write a
    /// row's canonical bytes straight from what it read (``Record/shape``)
    /// should, since no stored version will be diffed field by field against it.
    var isFirstLoad: Bool { get }
}

extension RowMemory {
    public var isFirstLoad: Bool { false }

    public func holdEach(_ rows: [(identity: RecordIdentity, rawHash: ContentHash)]) -> [Bool] {
        rows.map { holds($0.identity, rawHash: $0.rawHash) }
    }
}
