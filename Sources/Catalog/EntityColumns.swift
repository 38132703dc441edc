/// A typed column of an entity's export, read from the record's payload.
///
/// In Catalog because two owners share it: the store applies the projection
/// (it reads the member out of the stored payload, however its backend can),
/// and the exports name and type their columns after it.
public struct ExportColumn: Sendable, Equatable {
    public enum Kind: String, Sendable { case text = "TEXT", integer = "INTEGER", real = "REAL" }
    public var name: String
    /// The payload member it comes from.
    public var field: String
    public var kind: Kind

    public init(_ name: String, _ field: String, _ kind: Kind = .text) {
        self.name = name
        self.field = field
        self.kind = kind
    }
}

/// The fixed column order of each entity in CSV and SQLite exports. Fixed so
/// that spreadsheets and scripts built on one night's file read the next;
/// columns are only ever appended.
public enum EntityColumns {
    /// The columns of `entity`, in file order (none for free-form records).
    public static func columns(for entity: EntityKind) -> [ExportColumn] {
        switch entity {
        case .podcast:
            [.init("name", "trackName"), .init("artist", "artistName"), .init("artist_id", "artistId", .integer),
             .init("genre", "primaryGenreName"), .init("feed_url", "feedUrl"), .init("release_date", "releaseDate"),
             .init("track_count", "trackCount", .integer), .init("explicitness", "trackExplicitness"),
             .init("content_advisory", "contentAdvisoryRating"), .init("country", "country"),
             .init("view_url", "collectionViewUrl"), .init("artwork_url", "artworkUrl600")]
        case .episode:
            [.init("name", "trackName"), .init("podcast", "collectionName"), .init("podcast_id", "collectionId", .integer),
             .init("release_date", "releaseDate"), .init("duration_ms", "trackTimeMillis", .integer),
             .init("episode_url", "episodeUrl"), .init("description", "description")]
        case .song, .musicVideo:
            [.init("name", "trackName"), .init("artist", "artistName"), .init("album", "collectionName"),
             .init("genre", "primaryGenreName"), .init("price", "trackPrice", .real), .init("currency", "currency"),
             .init("release_date", "releaseDate"), .init("duration_ms", "trackTimeMillis", .integer),
             .init("view_url", "trackViewUrl")]
        case .album, .audiobook:
            [.init("name", "collectionName"), .init("artist", "artistName"), .init("genre", "primaryGenreName"),
             .init("price", "collectionPrice", .real), .init("currency", "currency"), .init("track_count", "trackCount", .integer),
             .init("release_date", "releaseDate"), .init("view_url", "collectionViewUrl")]
        case .movie, .app, .ebook:
            [.init("name", "trackName"), .init("artist", "artistName"), .init("genre", "primaryGenreName"),
             .init("price", "price", .real), .init("track_price", "trackPrice", .real), .init("currency", "currency"),
             .init("release_date", "releaseDate"), .init("view_url", "trackViewUrl")]
        case .listing:
            [.init("name", "name"), .init("vendor_id", "vendor_id", .integer), .init("price", "price", .real),
             .init("bargain_price", "bargain_price", .real), .init("discounted_price", "discounted_price", .real),
             .init("currency", "currency"), .init("stock", "stock", .integer), .init("created_at", "created_at"),
             .init("issued_at", "issued_at"), .init("thumbnail", "thumbnail"), .init("description", "description")]
        case .listingDetail:
            [.init("name", "name"), .init("vendor_id", "vendor_id", .integer), .init("price", "price", .real),
             .init("bargain_price", "bargain_price", .real), .init("currency", "currency"), .init("stock", "stock", .integer),
             .init("description", "description"), .init("created_at", "created_at"), .init("issued_at", "issued_at")]
        case .genre:
            [.init("name", "name"), .init("parent_id", "parentId"), .init("url", "url")]
        case .artist:
            [.init("name", "artistName"), .init("genre", "primaryGenreName"), .init("link", "artistLinkUrl")]
        case .chartEntry:
            [.init("chart", ChartEntry.chart), .init("country", ChartEntry.country), .init("genre_id", ChartEntry.genreID),
             .init("genre", ChartEntry.genreName), .init("rank", ChartEntry.rank, .integer),
             .init("item_entity", ChartEntry.itemEntity), .init("item_key", ChartEntry.itemKey),
             .init("name", ChartEntry.name), .init("artist", ChartEntry.artistName), .init("artwork_url", ChartEntry.artworkURL),
             .init("link", ChartEntry.link)]
        case .record:
            []
        }
    }
}
