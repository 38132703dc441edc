import Catalog
import Crawl
import Foundation

/// The chart feeds' wire formats, mapped to ``ITunesCharts/ChartedItem``.
extension ITunesCharts {
    // MARK: Legacy JSON

    /// Decodes a legacy JSON chart (`{"feed": {"entry": [...]}}`, every value
    /// wrapped as `{label, attributes}`). A chart with one entry sends `entry`
    /// as an object and an empty chart sends no `entry`: both are accepted.
    ///
    /// Ranks are positions in the feed, counted over every entry, so an entry
    /// skipped for lack of an id does not shift the ranks after it.
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` naming the URL and JSON path.
    package static func decodeLegacyJSON(_ response: HTTPResponse, context: ChartContext) throws(StoreSyncError)
        -> DecodedPage<Record> {
        let url = response.url.absoluteString
        let document = try PageJSON.parse(response)
        guard case .object(let feed)? = document["feed"] else {
            if case .object = document {
                throw .malformedPage(url: url, reason: "at $.feed: expected the chart's feed object")
            }
            throw .malformedPage(url: url, reason: "at $: expected an object, got \(jsonTypeName(document))")
        }
        let entries: [JSONValue]
        switch feed["entry"] {
        case nil, .null?: entries = []
        case .object(let single)?: entries = [.object(single)]
        case .array(let list)?: entries = list
        case let other?:
            throw .malformedPage(url: url, reason: "at $.feed.entry: expected an object or an array, got \(jsonTypeName(other))")
        }
        return legacyPage(entries, url: url, path: { "$.feed.entry[\($0)]" }, context: context)
    }

    /// Decodes a legacy Atom chart (`…/xml`, the `im:` namespace) by reading
    /// each `<entry>` into the JSON feed's `{label, attributes}` shape, so both
    /// formats share one mapping and give the same records.
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` with the XML
    ///   parser's line and column, or when the root is not an Atom `<feed>`.
    package static func decodeLegacyXML(_ response: HTTPResponse, context: ChartContext) throws(StoreSyncError)
        -> DecodedPage<Record> {
        let entries = try LegacyChartXML.entries(response)
        return legacyPage(entries, url: response.url.absoluteString, path: { "/feed/entry[\($0 + 1)]" }, context: context)
    }

    static func legacyPage(_ entries: [JSONValue], url: String, path: (Int) -> String, context: ChartContext)
        -> DecodedPage<Record> {
        var items: [(position: Int, item: ChartedItem)] = []
        var skipped: [String] = []
        for (position, entry) in entries.enumerated() {
            switch legacyItem(entry, context: context) {
            case .success(let item): items.append((position, item))
            case .failure(let reason): skipped.append("\(url) at \(path(position)): \(reason)")
            }
        }
        let records = rankedRecords(items, context: context, skipped: &skipped, where: { "\(url) at \(path($0))" })
        return DecodedPage(items: records, rowCount: entries.count, hasNext: false, skipped: skipped)
    }

    struct EntryError: Error, CustomStringConvertible {
        var description: String
    }

    static func legacyItem(_ value: JSONValue, context: ChartContext) -> Result<ChartedItem, EntryError> {
        guard case .object(let entry) = value else { return .failure(EntryError(description: "entry is not an object")) }
        let links = list(entry["link"])
        // The page link is the `alternate` one; songs add a preview `enclosure`.
        let link = (links.first { attributes($0)["rel"]?.stringValue == "alternate" } ?? links.first)
            .flatMap { attributes($0)["href"]?.stringValue }
        let stated = attributes(entry["id"])["im:id"]?.stringValue?.trimmingCharacters(in: .whitespaces)
        guard let id = stated.flatMap({ isDigits($0) ? $0 : nil })
            ?? itemID(fromURL: label(entry["id"])) ?? itemID(fromURL: link) else {
            return .failure(EntryError(description: "entry without an item id (id.attributes.im:id)"))
        }
        let contentType = entry["im:contentType"]
        let entity = entity(named: attributes(contentType?["im:contentType"])["term"]?.stringValue)
            ?? entity(named: attributes(contentType)["term"]?.stringValue)
            ?? context.defaultEntity ?? .record
        var item = ChartedItem(id: id, entity: entity, raw: .object(entry))
        item.name = label(entry["im:name"])
        item.artistName = label(entry["im:artist"])
        item.artistURL = attributes(entry["im:artist"])["href"]?.stringValue
        item.artistID = itemID(fromURL: item.artistURL, allowTrackParameter: false).flatMap { Int64($0) }
        let category = attributes(entry["category"])
        item.genreID = category["im:id"]?.stringValue
        item.genreName = (category["label"] ?? category["term"])?.stringValue
        item.releaseDate = label(entry["im:releaseDate"]).map(utcTimestamp)
        for image in list(entry["im:image"]) {
            guard let url = label(image) else { continue }
            let size = attributes(image)["height"]?.intValue.map(Int.init) ?? 0
            item.artwork.append(("artworkUrl\(size)", url, size))
        }
        item.link = link
        let price = attributes(entry["im:price"])
        // A finite number only: `inf` or `nan` (which Double(String) reads) has no JSON form to store.
        item.price = price["amount"]?.doubleValue.flatMap { $0.isFinite ? $0 : nil }
        item.currency = price["currency"]?.stringValue
        item.summary = label(entry["summary"])
        item.rights = label(entry["rights"])
        item.itemCount = label(entry["im:itemCount"]).flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
        return .success(item)
    }

    /// `{label}` → the label; a bare string is taken as is.
    static func label(_ value: JSONValue?) -> String? {
        switch value {
        case .object(let members)?: members["label"]?.stringValue
        case .string(let s)?: s
        default: nil
        }
    }

    static func attributes(_ value: JSONValue?) -> [String: JSONValue] {
        value?["attributes"]?.objectValue ?? [:]
    }

    /// A member that is a list when repeated and an object when single.
    static func list(_ value: JSONValue?) -> [JSONValue] {
        switch value {
        case .array(let elements)?: elements
        case nil, .null?: []
        case let single?: [single]
        }
    }

    // MARK: Marketing-tools RSS v2

    /// Decodes a v2 chart: `{"feed": {"results": [...]}}` with flat rows,
    /// ids as strings and a plural `kind`.
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` naming the URL and
    ///   JSON path, also for the service's `{"errors": [...]}` answers.
    package static func decodeV2(_ response: HTTPResponse, context: ChartContext) throws(StoreSyncError)
        -> DecodedPage<Record> {
        let url = response.url.absoluteString
        let document = try PageJSON.parse(response)
        if let errors = document["errors"]?.arrayValue, let first = errors.first {
            let detail = (first["detail"] ?? first["title"])?.stringValue ?? "unspecified"
            throw .malformedPage(url: url, reason: "the service answered an error: \(detail)")
        }
        guard case .object(let feed)? = document["feed"] else {
            throw .malformedPage(url: url, reason: "at $.feed: expected the chart's feed object")
        }
        // Unlike the legacy feeds, v2 always sends `results` (empty when the chart
        // is): without it the answer says nothing about the chart's entries.
        guard let results = feed["results"]?.arrayValue else {
            throw .malformedPage(url: url, reason: "at $.feed.results: expected an array")
        }
        var items: [(position: Int, item: ChartedItem)] = []
        var skipped: [String] = []
        for (position, row) in results.enumerated() {
            switch v2Item(row, context: context) {
            case .success(let item): items.append((position, item))
            case .failure(let reason): skipped.append("\(url) at $.feed.results[\(position)]: \(reason)")
            }
        }
        let records = rankedRecords(items, context: context, skipped: &skipped,
                                    where: { "\(url) at $.feed.results[\($0)]" })
        return DecodedPage(items: records, rowCount: results.count, hasNext: false, skipped: skipped)
    }

    static func v2Item(_ value: JSONValue, context: ChartContext) -> Result<ChartedItem, EntryError> {
        guard case .object(let row) = value else { return .failure(EntryError(description: "result is not an object")) }
        let link = row["url"]?.stringValue
        let stated = row["id"]?.stringValue?.trimmingCharacters(in: .whitespaces)
        guard let id = stated.flatMap({ isDigits($0) ? $0 : nil }) ?? itemID(fromURL: link) else {
            return .failure(EntryError(description: "result without an item id"))
        }
        let entity = entity(named: row["kind"]?.stringValue) ?? context.defaultEntity ?? .record
        var item = ChartedItem(id: id, entity: entity, raw: .object(row))
        item.name = row["name"]?.stringValue
        item.artistName = row["artistName"]?.stringValue
        item.artistID = row["artistId"]?.intValue
        item.artistURL = row["artistUrl"]?.stringValue
        for genre in list(row["genres"]) {
            guard let genreID = genre["genreId"]?.stringValue else { continue }
            item.genreIDs.append(genreID)
            item.genreNames.append(genre["name"]?.stringValue ?? "")
        }
        item.genreID = item.genreIDs.first
        item.genreName = item.genreNames.first
        item.releaseDate = row["releaseDate"]?.stringValue.map(utcTimestamp)
        if let artwork = row["artworkUrl100"]?.stringValue { item.artwork = [("artworkUrl100", artwork, 100)] }
        item.link = link
        // The feed spells it "Explict"; Search spells it right, and one spelling
        // keeps the field comparable across sources.
        item.contentAdvisory = row["contentAdvisoryRating"]?.stringValue.map { $0 == "Explict" ? "Explicit" : $0 }
        return .success(item)
    }
}
