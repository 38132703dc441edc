/// One field of an entity's canonical model: what every connector that
/// knows the entity maps its wire shape into, and what every export reads.
public struct CanonicalField: Sendable, Equatable {
    /// snake_case, so a consumer table needs no quoting; also the export column's name.
    public var name: String
    public var kind: ExportColumn.Kind
    /// One line for the entity tables in the documentation.
    public var meaning: String

    public init(_ name: String, _ kind: ExportColumn.Kind, _ meaning: String) {
        self.name = name
        self.kind = kind
        self.meaning = meaning
    }
}

/// The canonical model: one list of fields per entity kind, whichever
/// source (Search, Lookup, feeds, charts, marketplace eras, user files) saw it.
///
/// The snapshot keeps one row per entity holding these fields (merged over
/// every source that lists it) beside each source's raw payload, so a wire
/// field no connector maps yet is never lost. Fields are only ever appended:
/// scripts and spreadsheets built on one night's export read the next.
///
/// Conventions: dates are ISO 8601 text (`2024-05-01T12:00:00Z`, or a bare
/// date when the source gives no time); prices are numbers in `currency`;
/// `explicit` is 1 or 0; ids of other entities are their keys as text or
/// integers as the source gives them; a field a source does not give is absent.
public enum CanonicalSchema {
    /// Podcasting 2.0 tags a channel and an item may both carry: the last
    /// columns of both `podcast` and `episode`.
    private static let podcastingShared: [CanonicalField] = [
        .init("persons", .text, "podcast:person: JSON array of {name, role, group, href, img}"),
        .init("location", .text, "podcast:location: JSON object {name, geo, osm, rel, country}"),
        .init("license", .text, "podcast:license: the licence's name (an SPDX identifier or the publisher's)"),
        .init("license_url", .text, "podcast:license url: the licence's text"),
        .init("txt", .text, "podcast:txt: JSON array of {purpose, text}"),
    ]

    /// The canonical fields of `entity`, in column order (none for records-file
    /// rows, whose columns are the file's own).
    public static func fields(of entity: EntityKind) -> [CanonicalField] {
        switch entity {
        case .podcast:
            [.init("name", .text, "the show's title"),
             .init("artist", .text, "who makes it (iTunes artistName, the feed's itunes:author)"),
             .init("artist_id", .integer, "the maker's iTunes artist id"),
             .init("genre", .text, "primary genre name"),
             .init("genre_id", .text, "primary genre id (a genre key)"),
             .init("feed_url", .text, "the show's RSS feed"),
             .init("release_date", .text, "latest episode's date"),
             .init("track_count", .integer, "episodes in the show"),
             .init("explicit", .integer, "1 when the show is marked explicit"),
             .init("content_advisory", .text, "the store's advisory rating, e.g. Clean"),
             .init("country", .text, "storefront country (ISO 3166 alpha-3 as iTunes gives it)"),
             .init("view_url", .text, "the show's page in the store"),
             .init("artwork_url", .text, "the largest cover art the source gave; iTunes CDN URLs at the job's artworkSize (default 3000×3000) over https"),
             .init("description", .text, "the show's summary"),
             .init("language", .text, "language code of the feed, when known"),
             .init("genres", .text, "every genre name, JSON array"),
             .init("owner_name", .text, "the feed's itunes:owner name"),
             .init("owner_email", .text, "the feed's itunes:owner e-mail"),
             .init("copyright", .text, "the feed's copyright line"),
             .init("podcast_type", .text, "episodic or serial (itunes:type)"),
             .init("categories", .text, "the feed's itunes:category paths, JSON array of \"Parent/Child\""),
             // Podcasting 2.0 (`podcast:`): the publisher's own channel tags.
             .init("locked", .integer, "podcast:locked: 1 when the publisher forbids importing the feed elsewhere, 0 when allowed"),
             .init("locked_owner", .text, "podcast:locked owner: the e-mail that may move the feed"),
             .init("podcast_guid", .text, "podcast:guid: the show's global identity (a UUIDv5 of its feed URL)"),
             .init("medium", .text, "podcast:medium: podcast, music, video, audiobook, newsletter, blog… (lower case)"),
             .init("funding", .text, "podcast:funding: JSON array of {url, text}"),
             .init("trailers", .text, "podcast:trailer: JSON array of {url, title, pubdate, length, type, season}"),
             .init("podroll", .text, "podcast:podroll: the shows it recommends, JSON array of {feedGuid, feedUrl, itemGuid, medium}")]
                + podcastingShared
        case .episode:
            [.init("name", .text, "the episode's title"),
             .init("podcast", .text, "the show's title"),
             .init("podcast_id", .text, "the show's key (a podcast entity)"),
             .init("release_date", .text, "publication date"),
             .init("duration_ms", .integer, "length in milliseconds"),
             .init("enclosure_url", .text, "the media file"),
             .init("description", .text, "show notes"),
             .init("guid", .text, "the feed's own identity for the item, as published"),
             .init("enclosure_length", .integer, "the media file's size in bytes, as the source gave it"),
             .init("enclosure_type", .text, "the media file's MIME type, as the source gave it"),
             .init("link", .text, "the episode's web page"),
             .init("episode_number", .integer, "itunes:episode"),
             .init("season", .integer, "itunes:season"),
             .init("episode_type", .text, "full, trailer or bonus"),
             .init("explicit", .integer, "1 when marked explicit"),
             .init("image_url", .text, "the episode's own artwork"),
             .init("view_url", .text, "the episode's page in the store"),
             .init("enclosures", .text, "every media file of an item that has more than one, JSON array of {url, length, type} (the first is enclosure_url)"),
             // Podcasting 2.0 (`podcast:`) item tags.
             .init("transcripts", .text, "podcast:transcript: every transcript, JSON array of {url, type, language, rel}"),
             .init("chapters_url", .text, "podcast:chapters url: the chapters file"),
             .init("chapters_type", .text, "podcast:chapters type, e.g. application/json+chapters"),
             .init("soundbites", .text, "podcast:soundbite: JSON array of {startTime, duration, title}"),
             .init("alternate_enclosures", .text, "podcast:alternateEnclosure: JSON array of {type, length, bitrate, height, lang, title, rel, codecs, default, sources: [{uri, contentType}], integrity}"),
             .init("season_name", .text, "podcast:season name"),
             .init("episode_display", .text, "podcast:episode display: how the publisher shows the number")]
                + podcastingShared
                + [.init("track_id", .integer, "the episode's iTunes id (Lookup's trackId)")]
        case .song, .musicVideo:
            [.init("name", .text, "track title"),
             .init("artist", .text, "performing artist"),
             .init("album", .text, "album title"),
             .init("genre", .text, "primary genre name"),
             .init("price", .real, "track price in currency"),
             .init("currency", .text, "ISO 4217 code"),
             .init("release_date", .text, "release date"),
             .init("duration_ms", .integer, "length in milliseconds"),
             .init("view_url", .text, "the track's page in the store"),
             .init("artist_id", .integer, "the artist's key (an artist entity)"),
             .init("album_id", .integer, "the album's key (an album entity)"),
             .init("track_number", .integer, "position on its disc"),
             .init("disc_number", .integer, "disc of the album"),
             .init("preview_url", .text, "30-second preview (audio/x-m4a or video)"),
             .init("artwork_url", .text, "the largest cover art the source gave; iTunes CDN URLs at the job's artworkSize (default 3000×3000) over https"),
             .init("explicit", .integer, "1 when marked explicit"),
             .init("country", .text, "storefront country")]
        case .album, .audiobook:
            [.init("name", .text, "title"),
             .init("artist", .text, "artist or author"),
             .init("genre", .text, "primary genre name"),
             .init("price", .real, "price in currency"),
             .init("currency", .text, "ISO 4217 code"),
             .init("track_count", .integer, "tracks or parts"),
             .init("release_date", .text, "release date"),
             .init("view_url", .text, "its page in the store"),
             .init("artist_id", .integer, "the artist's key (an artist entity)"),
             .init("artwork_url", .text, "the largest cover art the source gave; iTunes CDN URLs at the job's artworkSize (default 3000×3000) over https"),
             .init("explicit", .integer, "1 when marked explicit"),
             .init("copyright", .text, "copyright line"),
             .init("description", .text, "summary, where the source gives one"),
             .init("preview_url", .text, "audio preview (audiobooks)"),
             .init("country", .text, "storefront country")]
        case .movie, .app, .ebook:
            [.init("name", .text, "title"),
             .init("artist", .text, "director, developer or author"),
             .init("genre", .text, "primary genre name"),
             .init("price", .real, "purchase price in currency"),
             .init("track_price", .real, "the store's trackPrice where it differs (movies)"),
             .init("currency", .text, "ISO 4217 code"),
             .init("release_date", .text, "release date"),
             .init("view_url", .text, "its page in the store"),
             .init("artist_id", .integer, "the maker's iTunes id"),
             .init("artwork_url", .text, "the largest artwork the source gave; iTunes CDN URLs at the job's artworkSize over https"),
             .init("description", .text, "long description"),
             .init("content_advisory", .text, "advisory rating"),
             .init("duration_ms", .integer, "running time (movies)"),
             .init("preview_url", .text, "trailer or preview"),
             .init("version", .text, "app version"),
             .init("bundle_id", .text, "app bundle id"),
             .init("rating", .real, "average user rating"),
             .init("rating_count", .integer, "user ratings counted"),
             .init("country", .text, "storefront country")]
        case .artist:
            [.init("name", .text, "artist name"),
             .init("genre", .text, "primary genre name"),
             .init("link", .text, "the artist's page in the store")]
        case .genre:
            [.init("name", .text, "genre name"),
             .init("parent_id", .text, "the parent genre's key, empty for a root"),
             .init("url", .text, "the genre's page in the store")]
        case .chartEntry:
            [.init("chart", .text, "which chart, e.g. toppodcasts"),
             .init("country", .text, "ISO 3166 code, lower case"),
             .init("genre_id", .text, "the genre the chart is for (empty for all genres)"),
             .init("genre", .text, "that genre's name"),
             .init("rank", .integer, "1-based position in the latest crawl"),
             .init("item_entity", .text, "the charted item's entity, e.g. podcast"),
             .init("item_key", .text, "the charted item's key"),
             .init("name", .text, "the item's name as the chart gives it"),
             .init("artist", .text, "the item's artist as the chart gives it"),
             .init("artwork_url", .text, "the item's artwork from the chart; iTunes CDN URLs at the job's artworkSize over https"),
             .init("link", .text, "the item's page"),
             .init("release_date", .text, "the item's release date as the chart gives it")]
        case .listing, .listingDetail:
            [.init("name", .text, "product name"),
             .init("vendor_id", .integer, "the seller's id"),
             .init("price", .real, "list price in currency"),
             .init("bargain_price", .real, "the price asked now"),
             .init("discounted_price", .real, "the discount off price"),
             .init("currency", .text, "ISO 4217 code"),
             .init("stock", .integer, "units in stock"),
             .init("created_at", .text, "when listed"),
             .init("issued_at", .text, "when last issued"),
             .init("thumbnail", .text, "thumbnail image"),
             .init("description", .text, "description (from the detail page when fetched)"),
             .init("vendor_name", .text, "the seller's name, where known"),
             .init("images", .text, "full-size image URLs from the detail page, JSON array")]
        case .record:
            []
        }
    }

    /// The canonical field named `name` of `entity`, if the model has one.
    public static func field(_ name: String, of entity: EntityKind) -> CanonicalField? {
        fields(of: entity).first { $0.name == name }
    }
}

/// How a source's sighting of an entity counts.
public enum RecordRole: String, Sendable, Hashable {
    /// The source lists the entity: a complete scope that no longer does is
    /// evidence that it is gone (Search, the marketplace list, feeds, files).
    case lists
    /// A ranked list (a chart): leaving it is list churn, never evidence of
    /// disappearance; its sightings end at once, unguarded.
    case ranks
    /// The source only describes entities others list (Lookup by upstream
    /// ids, a marketplace detail page): it never keeps an entity alive, and
    /// its sighting leaves with the entity.
    case describes
}

/// A record mapped into the canonical model: which entity it is (a detail
/// page's record is its listing's) and its canonical fields.
public struct CanonicalRecord: Sendable, Equatable {
    public var entity: EntityKind
    public var fields: [String: JSONValue]

    public init(entity: EntityKind, fields: [String: JSONValue]) {
        self.entity = entity
        self.fields = fields
        // A number no Int64 or Double holds (an id above 2^63, 1e400) is an
        // entity's field as its exact text: SQLite's JSON functions, which
        // every typed column and export reads through, would round it to a
        // REAL or Inf. The sighting's raw payload keeps it as a number.
        if fields.values.contains(where: { if case .number = $0 { true } else { false } }) {
            for (name, value) in fields {
                if case .number(let text) = value { self.fields[name] = .string(text) }
            }
        }
    }
}

/// How one source's records enter the canonical model: the snapshot holds
/// one per source of a run and calls it for records added or changed, so
/// it never needs to know a wire shape itself.
extension CanonicalSchema {
    /// Bumped whenever a connector's mapping to canonical fields changes what
    /// it produces for the same wire record (a store then re-derives its
    /// entities instead of logging the difference as changes).
    /// 3: iTunes episode rows keyed `<collectionId>|<episodeGuid>` (one entity
    /// with the feed's item), and their `trackId` as `track_id`.
    public static let mappingVersion = 3
}

public struct SourceMapping: Sendable {
    /// Maps a record of the source (its entity kind and stored wire fields).
    /// The entity it maps to must depend on the kind alone (a detail record
    /// is always its listing's), so a removal can find the entity unread.
    public var canonical: @Sendable (EntityKind, [String: JSONValue]) -> CanonicalRecord
    public var role: @Sendable (EntityKind) -> RecordRole
    /// Canonical fields this source's sightings of a kind decide, whatever
    /// the other sources say (a feed's own address after it moved); every
    /// other field goes by role.
    public var owns: @Sendable (EntityKind) -> Set<String>
    /// Record kinds an older release keyed by another rule, each with the
    /// rule that gives a stored record (its key, its stored wire fields) the
    /// key this release gives it. A store re-keys such records once, when
    /// the mappings change (an upgrade), so the next crawl meets them
    /// unchanged instead of logging each as removed and added again.
    public var keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String]
    /// True when ``canonical`` maps a record of the kind whose fields have
    /// this shape to the same kind and the same fields: the store then takes
    /// its payload as its canonical fields, and a record decoded straight to
    /// canonical bytes (``Record/shape``) is never parsed to be mapped.
    public var keepsWire: @Sendable (EntityKind, FieldShape) -> Bool
    /// True when ``canonical`` maps a record to exactly the fields its
    /// decoder wrote (``Record/entityFields``): the decoder is the source's
    /// own connector, and the job adds nothing to those fields (no artwork
    /// URL to resize). The store then writes them as they are.
    public var takesDecoderFields: @Sendable (EntityFields) -> Bool

    public init(canonical: @escaping @Sendable (EntityKind, [String: JSONValue]) -> CanonicalRecord,
                role: @escaping @Sendable (EntityKind) -> RecordRole,
                owns: @escaping @Sendable (EntityKind) -> Set<String> = { _ in [] },
                keyRules: [EntityKind: @Sendable (String, [String: JSONValue]) -> String] = [:],
                keepsWire: @escaping @Sendable (EntityKind, FieldShape) -> Bool = { _, _ in false },
                takesDecoderFields: @escaping @Sendable (EntityFields) -> Bool = { _ in false }) {
        self.canonical = canonical
        self.role = role
        self.owns = owns
        self.keyRules = keyRules
        self.keepsWire = keepsWire
        self.takesDecoderFields = takesDecoderFields
    }

    /// Fields kept as they are, every sighting listing: what a source of a
    /// kind the store was not told about (one dropped from the job) maps by.
    public static let identity = SourceMapping(canonical: { CanonicalRecord(entity: $0, fields: $1) }, role: { _ in .lists },
                                               keepsWire: { _, _ in true })

    /// The entity a record of kind `entity` belongs to.
    public func entity(of entity: EntityKind) -> EntityKind { canonical(entity, [:]).entity }
}
