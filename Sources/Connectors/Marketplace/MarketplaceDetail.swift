import Catalog
import Crawl
import Foundation

/// Marketplace product details (`GET /api/products/{id}`), fetched after the
/// list for the products it added or changed in this run: one single-page
/// scope `detail:<id>` per product, each a `listing-detail` record keyed by
/// the product id, holding every field of the detail (images and vendor
/// included) with dates in the list's canonical form.
///
/// Detail scopes never sweep: they fetch a chosen subset, so a product
/// missing from them says nothing about whether it still exists. Removals
/// come from the list scope.
package enum MarketplaceDetail {
    private static let onePage = Pagination.pageNumber(firstPage: 1, pageSize: 1, maxPages: 1)

    /// One scope per listing in `listings` (duplicates and non-numeric keys
    /// dropped: the key becomes a URL path segment).
    static func scopes(baseURL: URL, listings: [Record]) -> [CrawlScope] {
        var seen = Set<String>()
        var scopes: [CrawlScope] = []
        for listing in listings where listing.entity == .listing {
            let id = listing.key
            guard !id.isEmpty, id.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), seen.insert(id).inserted else { continue }
            let url = detailURL(baseURL, id: id)
            var scope = CrawlScope(
                id: "detail:\(id)", pagination: onePage, pageURL: { _ in url }, sweeps: false, toleratesGone: true,
                decode: { response throws(StoreSyncError) in try decodeDetail(response, id: id) }
            )
            scope.inputs = [listing.identity]
            scopes.append(scope)
        }
        return scopes
    }

    /// `{base}/api/products/{id}`, without the empty `?` that ``URL/make(_:path:query:)`` adds for no query.
    static func detailURL(_ base: URL, id: String) -> URL {
        var components = URLComponents(url: base, resolvingAgainstBaseURL: false) ?? URLComponents()
        let basePath = components.path.hasSuffix("/") ? String(components.path.dropLast()) : components.path
        components.path = basePath + "/api/products/" + id
        components.query = nil
        return components.url ?? base.appendingPathComponent("api/products/\(id)")
    }

    /// Decodes a detail response for product `id` (either era).
    ///
    /// A 404 means the product was deleted between the list and the detail
    /// request, which on a marketplace is normal, not a fault: the page is
    /// empty and complete, with the reason among the skipped rows, and the
    /// listing itself goes away through the list scope's removal rules. (The
    /// runner ends a detail scope "gone" on a 404 before decoding; this keeps
    /// the decoder right on its own.)
    ///
    /// - Throws: ``StoreSyncError/malformedPage(url:reason:)`` for a body that
    ///   is not a JSON object with this product's id.
    package static func decodeDetail(_ response: HTTPResponse, id: String) throws(StoreSyncError) -> DecodedPage<Record> {
        let url = response.url.absoluteString
        if response.status == 404 || response.status == 410 {
            return DecodedPage(items: [], rowCount: 0, hasNext: false,
                               skipped: ["\(url): product \(id) no longer exists (HTTP \(response.status))"])
        }
        let document = try PageJSON.parse(response)
        guard case .object(let fields) = document else {
            throw .malformedPage(url: url, reason: "expected a product object")
        }
        guard let served = fields["id"]?.integerText else {
            throw .malformedPage(url: url, reason: "the product has no numeric 'id'")
        }
        // A detail under someone else's id would overwrite the wrong record.
        guard served == id else {
            throw .malformedPage(url: url, reason: "asked for product \(id), got product \(served)")
        }
        let record = Record(entity: .listingDetail, key: id, fields: normalize(fields))
        return DecodedPage(items: [record], rowCount: 1, hasNext: false)
    }

    /// The list's date canonicalisation, applied to the detail's nested
    /// objects too (images and vendor carry their own `created_at`/`issued_at`
    /// in the era's format), so an era switch is not a change.
    static func normalize(_ fields: [String: JSONValue]) -> [String: JSONValue] {
        var out = MarketplaceList.normalize(fields)
        for (key, value) in out {
            switch value {
            case .object(let members): out[key] = .object(normalize(members))
            case .array(let elements):
                out[key] = .array(elements.map { element in
                    if case .object(let members) = element { return .object(normalize(members)) }
                    return element
                })
            default: break
            }
        }
        return out
    }
}
