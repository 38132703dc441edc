import Catalog
import Foundation
import Snapshot

/// What each table and column of the consumer exports means, for the
/// descriptions written beside them (Datasette's `metadata.json`, the CSV
/// files' `datapackage.json`). Column meanings are the canonical model's own
/// (``CanonicalField/meaning``, which docs/entities.md also shows), so every
/// surface says the same.
enum ExportDescriptions {
    /// One line on what a row of `entity`'s table is.
    static func table(_ entity: EntityKind) -> String {
        switch entity {
        case .podcast: "One row per podcast (a show, by its iTunes id): listed by Search, ranked by charts, described by Lookup."
        case .episode: "One row per episode: from the podcasts' own feeds, and Lookup's episode lists."
        case .song: "One row per song (an iTunes track)."
        case .musicVideo: "One row per music video (an iTunes track)."
        case .album: "One row per album (an iTunes collection)."
        case .audiobook: "One row per audiobook (an iTunes collection)."
        case .movie: "One row per movie."
        case .app: "One row per app."
        case .ebook: "One row per ebook."
        case .artist: "One row per artist."
        case .genre: "One row per genre of the store's genre tree; parent_id links a genre to its parent."
        case .chartEntry: "One row per chart entry of the latest crawl: (chart, country, genre, item) at its rank."
        case .listing: "One row per marketplace product: the list's fields, completed by its detail page where fetched."
        case .listingDetail: "Marketplace detail pages, as a store from before one row per product keeps them."
        case .record: "One row per row of a records file."
        }
    }

    /// The meaning of `column` of `entity`'s table: a canonical field's, or
    /// one of the columns the export adds; nil for a name it does not know.
    static func column(_ column: String, of entity: EntityKind) -> String? {
        if let field = CanonicalSchema.field(column, of: entity) { return field.meaning }
        return added[column]
    }

    /// The columns the export adds to entity tables and their histories.
    static let added: [String: String] = [
        "id": "the row's id (the primary key): the entity's id in the store, kept from night to night while it is stored",
        "key": "the entity's key (its id at the source), unique; what other tables link to",
        "extra": "the record's members no column holds, as a JSON object (NULL when none)",
        "first_seen_run": "the run that added the entity (runs.id): the night it came back, if it was removed and returned; {table}_history keeps every earlier version",
        "first_seen": "when that run began (UTC; NULL once retention pruned the run)",
        "last_changed_run": "the last run that changed the entity's fields (runs.id)",
        "last_changed": "when that run began (UTC; NULL once retention pruned the run)",
        "_version": "the version's number: 1 for the oldest the history holds",
        "_event": "how the version began: added, changed, removed (a tombstone), returned (after a removal), "
            + "or baseline (the state before the oldest change the history holds)",
        "_valid_from_run": "the run that began the version (NULL for a baseline)",
        "_valid_from": "when that run began (UTC)",
        "_valid_to_run": "the run that ended it (NULL while it is current)",
        "_valid_to": "when that run began (UTC)",
        "_deleted": "1 for a removal's tombstone, which keeps the fields the entity was removed with",
        "_changed_fields": "the fields the version's run changed, a JSON array (changed versions)",
    ]

    /// The other tables and the views of the consumer database.
    static let otherTables: [String: String] = [
        "changes": "The change log: one row per added or removed entity and per changed field, "
            + "before and after as canonical JSON.",
        "runs": "One row per run (night), with its outcome and counters summed over its sources.",
        "vendors": "One row per seller the listings name, with how many listings it has.",
        "charts": "One row per chart slot of the latest crawl, in rank order, with the item's name from its own table.",
        "episodes_with_podcast": "Each episode with its podcast's name, artist, genre, feed and artwork.",
        "podcasts_by_genre": "Per genre: podcasts, episodes listed and the latest release.",
        "price_drops": "Listings whose latest price change went down.",
        "latest_changes": "What the exported run changed, each row with the entity's name.",
    ]

    static let otherColumns: [String: [String: String]] = [
        "changes": [
            "id": "the change's number in the log, kept from night to night",
            "run_id": "the run that made the change (runs.id)", "source": "the source whose record changed",
            "entity": "the entity's kind", "key": "the entity's key", "op": "added, changed or removed",
            "field": "the changed field (changed rows)", "before": "the value before, canonical JSON",
            "after": "the value after, canonical JSON",
        ],
        "runs": [
            "id": "the run's number", "job": "the job's name", "night": "the simulated night it crawled (simulator jobs)",
            "started_at": "when it began (UTC)", "finished_at": "when it ended (UTC)",
            "status": "ok, partial, failed, or running", "added": "entities added", "changed": "entities changed",
            "removed": "entities removed", "unchanged": "records seen unchanged", "pages": "pages crawled",
            "requests": "HTTP requests made",
        ],
        "vendors": ["id": "the seller's id", "name": "its name, where a listing gives one", "listings": "its listings"],
    ]
}
