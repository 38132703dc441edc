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
        var c = CanonicalFields(wire)
        // The detail nests its seller as `vendors` (an object; a list of one is read the same).
        let vendor: [String: JSONValue] = switch wire["vendors"] {
        case .object(let members)?: members
        case .array(let list)?: list.first?.objectValue ?? [:]
        default: [:]
        }
        c.text("name", from: "name")
        c.set("vendor_id", c.first(["vendor_id"]).flatMap(CanonicalValue.integer)
            ?? vendor["id"].flatMap(CanonicalValue.integer))
        // Ints in some eras, floats in others: doubles always, so an era switch is no change.
        c.price("price", from: "price")
        c.price("bargain_price", from: "bargain_price")
        c.price("discounted_price", from: "discounted_price")
        c.text("currency", from: "currency")
        c.integer("stock", from: "stock")
        // The server states no zone: its local time is kept as such, in one form for every era.
        c.set("created_at", c.first(["created_at"])?.stringValue.map { .string(MarketplaceList.canonicalTimestamp($0)) })
        c.set("issued_at", c.first(["issued_at"])?.stringValue.map { .string(MarketplaceList.canonicalTimestamp($0)) })
        c.text("thumbnail", from: "thumbnail")
        c.text("description", from: "description")
        c.set("vendor_name", c.first(["vendorName"])?.stringValue.map(JSONValue.string)
            ?? vendor["name"]?.stringValue.map(JSONValue.string))
        if let images = wire["images"]?.arrayValue {
            let urls = images.compactMap { ($0["url"] ?? $0).stringValue }.map(JSONValue.string)
            c.set("images", CanonicalValue.jsonArrayText(urls))
        }
        return c.fields
    }
}
