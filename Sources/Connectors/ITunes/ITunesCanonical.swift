import Catalog
import Foundation

/// The canonical mapping of iTunes catalog rows: Search and Lookup rows, and
/// the item records the chart connector writes in the same field names.
///
/// Which wire member feeds a canonical field depends on the entity, because
/// the key set does: a podcast's name is its `collectionName` (Search repeats
/// it as `trackName`), an album's is `collectionName`, a song's `trackName`;
/// an album's price is `collectionPrice`, a song's `trackPrice`, an app's `price`.
enum ITunesCanonical {
    /// Maps one catalog row of `entity`. Entities that are not iTunes catalog
    /// items (a row of unknown `kind` is stored as `record`) have no canonical
    /// fields: their payload is kept beside, unmapped.
    static func item(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        var c = CanonicalFields(wire)
        switch entity {
        case .podcast: podcast(&c)
        case .episode: episode(&c)
        case .song, .musicVideo: track(&c)
        case .album, .audiobook: collection(&c)
        case .movie, .app, .ebook: product(&c)
        case .artist: artist(&c)
        case .genre, .chartEntry, .listing, .listingDetail, .record: break
        }
        return CanonicalRecord(entity: entity, fields: c.fields)
    }

    static func podcast(_ c: inout CanonicalFields) {
        // Search sends the show's title as both; collectionName is the show's own.
        c.text("name", from: "collectionName", "trackName")
        c.text("artist", from: "artistName")
        c.integer("artist_id", from: "artistId")
        c.text("genre", from: "primaryGenreName")
        c.set("genre_id", primaryGenreID(c.wire))
        c.text("feed_url", from: "feedUrl")
        c.date("release_date", from: "releaseDate")
        c.integer("track_count", from: "trackCount")
        // A show's trackExplicitness is what its advisory rating says (see the
        // Lookup sample: track explicit, collection notExplicit, rating Explicit).
        c.explicit("explicit", from: "trackExplicitness", "collectionExplicitness", "contentAdvisoryRating")
        c.text("content_advisory", from: "contentAdvisoryRating")
        c.text("country", from: "country")
        c.text("view_url", from: "collectionViewUrl", "trackViewUrl")
        c.set("artwork_url", CanonicalValue.largestArtwork(c.wire))
        c.text("description", from: "description", "longDescription", "shortDescription")
        c.set("genres", genreNames(c.wire))
    }

    static func episode(_ c: inout CanonicalFields) {
        c.text("name", from: "trackName")
        c.text("podcast", from: "collectionName")
        // The show's key is its iTunes id as text, as podcast records are keyed.
        c.text("podcast_id", from: "collectionId")
        c.date("release_date", from: "releaseDate")
        c.integer("duration_ms", from: "trackTimeMillis")
        c.text("enclosure_url", from: "episodeUrl", "previewUrl")
        c.text("description", from: "description", "shortDescription")
        c.text("guid", from: "episodeGuid")
        c.integer("enclosure_length", from: "episodeFileSize")
        c.set("enclosure_type", CanonicalValue.mimeType(contentType: c.first(["episodeContentType"])?.stringValue,
                                                         fileExtension: c.first(["episodeFileExtension"])?.stringValue)
            .map(JSONValue.string))
        c.explicit("explicit", from: "trackExplicitness", "contentAdvisoryRating")
        c.set("image_url", CanonicalValue.largestArtwork(c.wire))
        c.text("view_url", from: "trackViewUrl")
        // The key is the podcast and GUID when the row has a GUID: the iTunes id stays a field.
        c.integer("track_id", from: "trackId")
    }

    static func track(_ c: inout CanonicalFields) {
        c.text("name", from: "trackName")
        c.text("artist", from: "artistName")
        c.text("album", from: "collectionName")
        c.text("genre", from: "primaryGenreName")
        c.price("price", from: "trackPrice")
        c.text("currency", from: "currency")
        c.date("release_date", from: "releaseDate")
        c.integer("duration_ms", from: "trackTimeMillis")
        c.text("view_url", from: "trackViewUrl")
        c.integer("artist_id", from: "artistId")
        c.integer("album_id", from: "collectionId")
        c.integer("track_number", from: "trackNumber")
        c.integer("disc_number", from: "discNumber")
        c.text("preview_url", from: "previewUrl")
        c.set("artwork_url", CanonicalValue.largestArtwork(c.wire))
        c.explicit("explicit", from: "trackExplicitness", "contentAdvisoryRating")
        c.text("country", from: "country")
    }

    static func collection(_ c: inout CanonicalFields) {
        c.text("name", from: "collectionName", "trackName")
        c.text("artist", from: "artistName")
        c.text("genre", from: "primaryGenreName")
        c.price("price", from: "collectionPrice")
        c.text("currency", from: "currency")
        c.integer("track_count", from: "trackCount")
        c.date("release_date", from: "releaseDate")
        c.text("view_url", from: "collectionViewUrl")
        c.integer("artist_id", from: "artistId")
        c.set("artwork_url", CanonicalValue.largestArtwork(c.wire))
        c.explicit("explicit", from: "collectionExplicitness", "contentAdvisoryRating")
        c.text("copyright", from: "copyright")
        c.text("description", from: "description", "longDescription")
        c.text("preview_url", from: "previewUrl")
        c.text("country", from: "country")
    }

    /// Movies, apps and e-books: items sold on their own (`track*` keys).
    static func product(_ c: inout CanonicalFields) {
        c.text("name", from: "trackName")
        c.text("artist", from: "artistName")
        c.text("genre", from: "primaryGenreName")
        // Apps and books send `price`; movies only trackPrice, which is then the price.
        c.price("price", from: "price", "trackPrice")
        c.price("track_price", from: "trackPrice")
        c.text("currency", from: "currency")
        c.date("release_date", from: "releaseDate")
        c.text("view_url", from: "trackViewUrl")
        c.integer("artist_id", from: "artistId")
        c.set("artwork_url", CanonicalValue.largestArtwork(c.wire))
        c.text("description", from: "longDescription", "description", "shortDescription")
        c.text("content_advisory", from: "contentAdvisoryRating")
        c.integer("duration_ms", from: "trackTimeMillis")
        c.text("preview_url", from: "previewUrl")
        c.text("version", from: "version")
        c.text("bundle_id", from: "bundleId")
        c.real("rating", from: "averageUserRating")
        c.integer("rating_count", from: "userRatingCount")
        c.text("country", from: "country")
    }

    static func artist(_ c: inout CanonicalFields) {
        c.text("name", from: "artistName")
        c.text("genre", from: "primaryGenreName")
        c.text("link", from: "artistLinkUrl", "artistViewUrl")
    }

    /// `primaryGenreId` where the row has it (apps, chart items), else the
    /// first of `genreIds`, which Search lists primary genre first.
    static func primaryGenreID(_ wire: [String: JSONValue]) -> JSONValue? {
        if let id = wire["primaryGenreId"]?.stringValue { return .string(id) }
        if let first = wire["genreIds"]?.arrayValue?.first?.stringValue { return .string(first) }
        return nil
    }

    /// Every genre name as JSON text: `genres` is a list of names in Search
    /// rows and of `{name, id}` objects in Lookup episode rows.
    static func genreNames(_ wire: [String: JSONValue]) -> JSONValue? {
        guard let list = wire["genres"]?.arrayValue else { return nil }
        let names = list.compactMap { ($0["name"] ?? $0).stringValue }
        return names.isEmpty ? nil : CanonicalValue.jsonArrayText(names.map(JSONValue.string))
    }
}
