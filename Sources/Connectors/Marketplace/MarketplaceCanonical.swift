import Catalog
import Foundation

extension MarketplaceSettings {
    /// A list row and a detail record both map to the `listing` entity: the
    /// detail is part of its listing (one row per product), adding what the
    /// list leaves out (description in the early era, vendor name, images).
    public func canonical(_ entity: EntityKind, _ wire: [String: JSONValue]) -> CanonicalRecord {
        switch entity {
        case .listing, .listingDetail:
            CanonicalRecord(entity: .listing, fields: MarketplaceCanonical.listing(wire))
        default:
            CanonicalRecord(entity: entity, fields: [:])
        }
    }

    /// The list lists products; a detail page only describes one the list has.
    public func role(of entity: EntityKind) -> RecordRole {
        entity == .listingDetail ? .describes : .lists
    }
}

/// The canonical mapping of marketplace products, either era, list or detail.
enum MarketplaceCanonical {
    static func listing(_ wire: [String: JSONValue]) -> [String: JSONValue] {
        Dictionary(listingFields { wire[$0] }.map { ($0.name, $0.value) }, uniquingKeysWith: { _, last in last })
    }

    /// Every wire member ``listingFields(_:)`` reads.
    static let wireNames = ["bargain_price", "created_at", "currency", "description", "discounted_price", "images",
                            "issued_at", "name", "price", "stock", "thumbnail", "vendor_id", "vendorName", "vendors"]

    /// The listing's canonical fields from its wire members (`member` gives
    /// one by name), in canonical order: one mapping, whether the record was
    /// parsed into values or is read from its bytes.
    static func listingFields(_ member: (String) -> JSONValue?) -> [(name: String, value: JSONValue)] {
        func first(_ name: String) -> JSONValue? {
            guard let value = member(name), value != .null else { return nil }
            return value
        }
        // The detail nests its seller as `vendors` (an object; a list of one is read the same).
        let vendor: [String: JSONValue] = switch member("vendors") {
        case .object(let members)?: members
        case .array(let list)?: list.first?.objectValue ?? [:]
        default: [:]
        }
        var fields: [(name: String, value: JSONValue)] = []
        fields.reserveCapacity(13)
        func set(_ name: String, _ value: JSONValue?) {
            if let value { fields.append((name, value)) }
        }
        func text(_ name: String) -> JSONValue? { first(name)?.stringValue.map(JSONValue.string) }
        // The server states no zone: its local time is kept as such, in one form for every era.
        func timestamp(_ name: String) -> JSONValue? {
            first(name)?.stringValue.map { .string(MarketplaceList.canonicalTimestamp($0)) }
        }
        // Prices are ints in some eras, floats in others: doubles always, so an era switch is no change.
        set("bargain_price", first("bargain_price").flatMap(CanonicalValue.price))
        set("created_at", timestamp("created_at"))
        set("currency", text("currency"))
        set("description", text("description"))
        set("discounted_price", first("discounted_price").flatMap(CanonicalValue.price))
        if let images = member("images")?.arrayValue {
            let urls = images.compactMap { ($0["url"] ?? $0).stringValue }.map(JSONValue.string)
            set("images", CanonicalValue.jsonArrayText(urls))
        }
        set("issued_at", timestamp("issued_at"))
        set("name", text("name"))
        set("price", first("price").flatMap(CanonicalValue.price))
        set("stock", first("stock").flatMap(CanonicalValue.integer))
        set("thumbnail", text("thumbnail"))
        set("vendor_id", first("vendor_id").flatMap(CanonicalValue.integer) ?? vendor["id"].flatMap(CanonicalValue.integer))
        set("vendor_name", text("vendorName") ?? vendor["name"]?.stringValue.map(JSONValue.string))
        return fields
    }
}
