import Catalog
import Snapshot

/// The shape of the consumer exports (the SQLite file and the CSV files):
/// table names, foreign keys, full-text search and views, all derived from
/// the canonical model (``CanonicalSchema``) so the exports never name a
/// field the model does not define.
///
/// The export's own names are snake_case so no query needs quoting them (a
/// records-file source's table and columns are its user's names, which may
/// need it: ``quoted(_:)``). Every entity table has the
/// same layout: `key` (the entity's key, the primary key), one column per
/// canonical field in model order, and `extra`: the members of the stored
/// record that no column holds, as a JSON object (NULL when there are none;
/// a source kind whose wire fields are not mapped yet keeps them there).
enum ConsumerSchema {
    /// The entity tables every consumer database has, even when empty, so a
    /// script or a saved query written against one night's file reads the next.
    static let entityTables: [EntityKind] = [
        .podcast, .episode, .song, .album, .artist, .movie, .app, .audiobook, .ebook, .musicVideo,
        .genre, .chartEntry, .listing,
    ]

    /// The entity tables of an export from a store holding `stored`: every
    /// consumer table, and any other entity an older store still holds.
    static func tables(holding stored: [EntityKind]) -> [EntityKind] {
        entityTables + stored.filter { !entityTables.contains($0) && $0 != .record }
    }

    /// The table (and CSV file) of `entity`: its name in the plural, snake_case.
    static func table(for entity: EntityKind) -> String {
        switch entity {
        case .podcast: "podcasts"
        case .episode: "episodes"
        case .song: "songs"
        case .album: "albums"
        case .artist: "artists"
        case .movie: "movies"
        case .app: "apps"
        case .audiobook: "audiobooks"
        case .ebook: "ebooks"
        case .musicVideo: "music_videos"
        case .genre: "genres"
        case .chartEntry: "chart_entries"
        case .listing: "listings"
        // A store from before "one row per product" keeps details apart.
        case .listingDetail: "listing_details"
        // Records-file rows get one table per source (``RecordTables``); this
        // name is only their fallback.
        case .record: "records"
        }
    }

    /// The row id of an entity table: the entity's id in the store, kept from
    /// night to night while the entity is stored, so the full-text index (which
    /// points by rowid), a changeset and a replica can trust it.
    static let idColumn = "id"
    /// The identity column of an entity table: unique, what foreign keys name.
    static let keyColumn = "key"
    /// The column holding a record's members that no other column holds.
    static let extraColumn = "extra"

    /// When an entity was first seen and last changed: the last columns of
    /// every entity table (after `extra`, so files written before them keep
    /// their column positions). The run is a `runs` id; the time is its
    /// `started_at`, the time the crawl that saw it began. Not declared
    /// foreign keys: retention prunes old runs, and the entity keeps the id
    /// (its time is NULL then).
    static let seenColumns = [
        "first_seen_run INTEGER", "first_seen TEXT", "last_changed_run INTEGER", "last_changed TEXT",
    ]

    /// ``seenColumns``' names.
    static var seenColumnNames: [String] { seenColumns.map { String($0.prefix { $0 != " " }) } }

    /// The history table of `table` (``SQLiteExport/copyHistory(_:runs:runTimes:store:into:)``).
    static func historyTable(for table: String) -> String { "\(table)_history" }

    /// The columns a history table has before the entity's own: the key, the
    /// version's number, how it began, the runs (and times) it is valid from
    /// and until (NULL: still valid), whether it is a removal's tombstone, and
    /// the fields its run changed (a JSON array, for `changed` versions).
    /// Named with a leading `_`, which no canonical field has (an app has a
    /// `version`), as dlt names its own. The runs are not declared foreign
    /// keys, as ``seenColumns``'s are not.
    static let versionColumns = [
        "key TEXT NOT NULL", "_version INTEGER NOT NULL", "_event TEXT NOT NULL",
        "_valid_from_run INTEGER", "_valid_from TEXT", "_valid_to_run INTEGER", "_valid_to TEXT",
        "_deleted INTEGER NOT NULL", "_changed_fields TEXT",
    ]

    /// The history table's own column names (``versionColumns`` without their types).
    static var versionColumnNames: [String] { versionColumns.map { String($0.prefix { $0 != " " }) } }

    /// The tables and views the export itself defines, which a records-file
    /// source's table may not take.
    static var reservedNames: Set<String> {
        let entities = EntityKind.allCases.filter { $0 != .record }
        var names = Set(entities.map(table(for:)))
        names.formUnion(["changes", "runs", "vendors", "charts"])
        names.formUnion(views(entities: Set(EntityKind.allCases)).map(\.name))
        names.formUnion(entities.map { searchTable(for: table(for: $0)) })
        names.formUnion(entities.map { historyTable(for: table(for: $0)) })
        return names
    }

    // MARK: Foreign keys

    /// A column that holds another table's key.
    struct ForeignKey: Equatable {
        var column: String
        var table: String
        var targetColumn: String
    }

    /// The foreign keys of `entity`'s table. They are declared so that tools
    /// (Datasette, DB browsers) show links, never enforced: the file is
    /// written with `PRAGMA foreign_keys` off, as SQLite's default is, so an
    /// episode whose podcast was never crawled is an unlinked row, not an error.
    ///
    /// A chart entry's item may be any entity, and a foreign key names one
    /// table: `item_key` is declared a key of the item's table only when every
    /// chart entry in the file charts the same entity (`chartItems` holds
    /// exactly one); mixed charts are linked by the `charts` view instead.
    static func foreignKeys(of entity: EntityKind, chartItems: Set<String> = []) -> [ForeignKey] {
        func key(_ column: String, _ target: EntityKind) -> ForeignKey {
            ForeignKey(column: column, table: table(for: target), targetColumn: keyColumn)
        }
        switch entity {
        case .podcast:
            return [key("genre_id", .genre)]
        case .episode:
            return [key("podcast_id", .podcast)]
        case .song, .musicVideo:
            return [key("artist_id", .artist), key("album_id", .album)]
        case .album:
            return [key("artist_id", .artist)]
        case .genre:
            return [key("parent_id", .genre)]
        case .chartEntry:
            var keys = [key("genre_id", .genre)]
            if chartItems.count == 1, let only = chartItems.first.flatMap(EntityKind.init(rawValue:)),
               entityTables.contains(only), only != .chartEntry {
                keys.append(key("item_key", only))
            }
            return keys
        case .listing, .listingDetail:
            return [ForeignKey(column: "vendor_id", table: "vendors", targetColumn: "id")]
        case .artist, .movie, .app, .audiobook, .ebook, .record:
            // Their `artist_id` is a maker's iTunes id, not a row of `artists`.
            return []
        }
    }

    /// Whether `column` of an entity table holds another row's key: every
    /// foreign key, and the ids of things the file has no table for
    /// (`bundle_id`, a maker's `artist_id`) or of several tables (a mixed
    /// chart's `item_key`). Such a column is NULL where the key is missing
    /// *or empty*: the store keeps a root genre's `parent_id` and the
    /// all-genres chart's `genre_id` as '' (part of their content hash), and
    /// '' is no row's key, so Datasette would link it to a row that does not
    /// exist and `PRAGMA foreign_key_check` would list it.
    static func holdsKey(_ column: String) -> Bool {
        column.hasSuffix("_id") || column.hasSuffix("_key")
    }

    // MARK: Full-text search

    /// The columns of `entity` that full-text search covers: names and
    /// descriptions, plus who made the thing and what it belongs to. Chart
    /// entries repeat their items' names and have none.
    static func searchColumns(of entity: EntityKind) -> [String] {
        guard entity != .chartEntry else { return [] }
        let fields = Set(CanonicalSchema.fields(of: entity).map(\.name))
        return ["name", "artist", "album", "podcast", "description"].filter(fields.contains)
    }

    /// The FTS5 table of `table`. Named `{table}_fts` and declared with
    /// `content="{table}"` (double quotes), which is how Datasette finds it.
    static func searchTable(for table: String) -> String { "\(table)_fts" }

    /// The statements that create and fill `table`'s full-text index: an
    /// external-content FTS5 table over its rowids (the stable `id`), and the
    /// triggers that keep it in step, the layout `sqlite-utils enable-fts
    /// --create-triggers` makes. storesync never writes the file again; the
    /// triggers are for a replica applying a changeset (which fires them), so
    /// its index follows its rows with no rebuild step.
    static func searchStatements(table: String, columns: [String]) -> [String] {
        let fts = quoted(searchTable(for: table))
        let list = columns.map(quoted).joined(separator: ", ")
        func values(_ row: String) -> String { columns.map { "\(row).\(quoted($0))" }.joined(separator: ", ") }
        let remove = "INSERT INTO \(fts) (\(fts), rowid, \(list)) VALUES ('delete', old.rowid, \(values("old")));"
        let add = "INSERT INTO \(fts) (rowid, \(list)) VALUES (new.rowid, \(values("new")));"
        return [
            "CREATE VIRTUAL TABLE \(fts) USING fts5(\(list), content=\(quoted(table)), content_rowid=\"rowid\")",
            "INSERT INTO \(fts) (rowid, \(list)) SELECT rowid, \(list) FROM \(quoted(table))",
            "CREATE TRIGGER \(quoted("\(table)_ai")) AFTER INSERT ON \(quoted(table)) BEGIN \(add) END",
            "CREATE TRIGGER \(quoted("\(table)_ad")) AFTER DELETE ON \(quoted(table)) BEGIN \(remove) END",
            "CREATE TRIGGER \(quoted("\(table)_au")) AFTER UPDATE ON \(quoted(table)) BEGIN \(remove) \(add) END",
        ]
    }

    // MARK: Views

    /// A view that answers a common question in one `SELECT`.
    struct View {
        var name: String
        var sql: String
    }

    /// The views over the entity tables (`entities` are those with a table).
    static func views(entities: Set<EntityKind>) -> [View] {
        var views: [View] = []
        if entities.contains(.chartEntry) { views.append(chartsView(entities: entities)) }
        if entities.contains(.episode), entities.contains(.podcast) {
            views.append(View(name: "episodes_with_podcast", sql: """
                SELECT e.*, p.name AS podcast_name, p.artist AS podcast_artist, p.genre AS podcast_genre,
                       p.feed_url AS podcast_feed_url, p.artwork_url AS podcast_artwork_url
                FROM episodes e LEFT JOIN podcasts p ON p.key = e.podcast_id
                """))
        }
        if entities.contains(.podcast) {
            views.append(View(name: "podcasts_by_genre", sql: """
                SELECT genre, count(*) AS podcasts, sum(track_count) AS episodes, max(release_date) AS latest_release
                FROM podcasts GROUP BY genre ORDER BY podcasts DESC, genre
                """))
        }
        if entities.contains(.listing) {
            // The latest price change of each listing still listed, where it went down.
            views.append(View(name: "price_drops", sql: """
                SELECT l.key, l.name, l.vendor_id, CAST(c.before AS REAL) AS price_before, CAST(c.after AS REAL) AS price_after,
                       round(CAST(c.before AS REAL) - CAST(c.after AS REAL), 2) AS price_drop, l.currency,
                       c.run_id, r.started_at AS dropped_at
                FROM changes c JOIN listings l ON l.key = c.key LEFT JOIN runs r ON r.id = c.run_id
                WHERE c.entity = 'listing' AND c.op = 'changed' AND c.field = 'price'
                  AND c.rowid = (SELECT max(c2.rowid) FROM changes c2
                                 WHERE c2.entity = 'listing' AND c2.key = c.key AND c2.op = 'changed' AND c2.field = 'price')
                  AND CAST(c.after AS REAL) < CAST(c.before AS REAL)
                ORDER BY c.run_id DESC, l.key
                """))
        }
        views.append(latestChangesView(entities: entities))
        return views
    }

    /// Entities with a `name` column, in table order (what a join can label an item with).
    static func named(_ entities: Set<EntityKind>) -> [EntityKind] {
        entityTables.filter { entities.contains($0) && $0 != .chartEntry && CanonicalSchema.field("name", of: $0) != nil }
    }

    /// `charts`: exactly one row per (chart, country, genre_id, rank), in rank
    /// order, with the item's name and artist from its own table where the
    /// snapshot holds it (the chart's own text otherwise). The store keeps only
    /// the latest crawl of each chart; should two entries ever claim one slot,
    /// the one stored last (the newer) is the slot's.
    static func chartsView(entities: Set<EntityKind>) -> View {
        let items = named(entities)
        let joins = items.enumerated().map { index, entity in
            "LEFT JOIN \(quoted(table(for: entity))) i\(index) ON c.item_entity = '\(entity.rawValue)' AND i\(index).key = c.item_key"
        }
        func coalesce(_ column: String) -> String {
            let sources = items.enumerated().filter { CanonicalSchema.field(column, of: $0.element) != nil }
                .map { "i\($0.offset).\(quoted(column))" }
            return "COALESCE(" + (sources + ["c.\(quoted(column))"]).joined(separator: ", ") + ")"
        }
        let stored = items.indices.map { "i\($0).key IS NOT NULL" }.joined(separator: " OR ")
        return View(name: "charts", sql: """
            SELECT chart, country, genre_id, genre, rank, item_entity, item_key, name, artist, artwork_url, link, item_stored
            FROM (SELECT c.chart, c.country, c.genre_id, c.genre, c.rank, c.item_entity, c.item_key,
                         \(coalesce("name")) AS name, \(coalesce("artist")) AS artist, c.artwork_url, c.link,
                         (\(stored.isEmpty ? "0" : stored)) AS item_stored,
                         row_number() OVER (PARTITION BY c.chart, c.country, c.genre_id, c.rank ORDER BY c.rowid DESC) AS claim
                  FROM chart_entries c \(joins.joined(separator: " ")))
            WHERE claim = 1
            ORDER BY chart, country, genre_id, rank
            """)
    }

    /// `latest_changes`: what the exported run changed, each row with the
    /// entity's name (from its table, or for a removed one from the change log).
    static func latestChangesView(entities: Set<EntityKind>) -> View {
        let cases = named(entities).map { "WHEN '\($0.rawValue)' THEN (SELECT name FROM \(quoted(table(for: $0))) WHERE key = c.key)" }
        let current = cases.isEmpty ? "NULL" : "CASE c.entity \(cases.joined(separator: " ")) END"
        return View(name: "latest_changes", sql: """
            SELECT c.run_id, c.entity, c.key,
                   COALESCE(\(current),
                            CASE WHEN c.field IS NULL AND json_valid(c.before) THEN json_extract(c.before, '$.name') END,
                            CASE WHEN c.field IS NULL AND json_valid(c.after) THEN json_extract(c.after, '$.name') END) AS name,
                   c.op, c.field, c.before, c.after, c.source
            FROM changes c WHERE c.run_id = (SELECT max(id) FROM runs)
            ORDER BY c.entity, c.key, c.op, c.field
            """)
    }

    // MARK: Records-file tables

    /// A records-file source's table name: the source name in snake_case
    /// (letters and digits kept, lower-cased; anything else one `_`), never
    /// one of the export's own names or one `taken` already (`_records`, then
    /// a number, is appended).
    static func recordTable(source: String, taken: Set<String>) -> String {
        let base = snakeCase(source, fallback: "records")
        var name = reservedNames.contains(base) ? base + "_records" : base
        var counter = 2
        while taken.contains(name) || reservedNames.contains(name) {
            name = "\(base)_records_\(counter)"
            counter += 1
        }
        return name
    }

    /// `text` as a snake_case identifier: ASCII letters and digits lower-cased,
    /// every other run of characters one `_`, none leading or trailing, and
    /// never starting with a digit.
    static func snakeCase(_ text: String, fallback: String) -> String {
        var out = ""
        var pendingUnderscore = false
        for scalar in text.unicodeScalars {
            if scalar.isASCII, scalar.properties.isAlphabetic || ("0"..."9").contains(scalar) {
                if pendingUnderscore, !out.isEmpty { out.append("_") }
                pendingUnderscore = false
                out.unicodeScalars.append(scalar.properties.isUppercase ? Unicode.Scalar(scalar.value + 32)! : scalar)
            } else {
                pendingUnderscore = true
            }
        }
        if out.isEmpty { return fallback }
        if let first = out.unicodeScalars.first, ("0"..."9").contains(first) { out = "t_" + out }
        return out
    }

    /// An identifier quoted for SQL. Every name the export splices into SQL
    /// goes through it: a records-file source's table may be named `order`,
    /// and its columns are its file's own names, which may hold anything.
    static func quoted(_ identifier: String) -> String {
        "\"" + identifier.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }
}

/// The `extra` cell of an entity row: the stored record's members that no
/// column holds, so nothing the store kept is lost from a consumer file.
enum ExtraMembers {
    /// The members of `payload` (a JSON object) other than `columns`' fields,
    /// as canonical JSON, or nil when there are none. `values` are the columns'
    /// projected values, which make the common case (every member has a
    /// column) a byte count instead of a parse.
    static func json(payload: String, columns: [ExportColumn], values: [StoredValue]) -> String? {
        let present = values.reduce(0) { $0 + ($1 == .null ? 0 : 1) }
        var payload = payload
        if payload.withUTF8({ JSONParser.members(ofObjectIn: $0) { _, _, _, _ in } }) == present { return nil }
        guard case .object(var members)? = try? JSONParser.parse(payload) else { return nil }
        for column in columns { members[column.field] = nil }
        return members.isEmpty ? nil : String(decoding: CanonicalJSON.encodeObject(members), as: UTF8.self)
    }
}
