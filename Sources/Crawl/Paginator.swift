import Catalog
import Foundation

/// How a scope's pages follow each other.
public enum Pagination: Sendable, Equatable {
    /// `offset`/`limit` (iTunes Search): page n starts at n·pageSize; a page
    /// with fewer than `pageSize` rows is the last.
    case offset(pageSize: Int, maxItems: Int)
    /// `page_no` (marketplace): pages `firstPage`, `firstPage+1`, … until the
    /// server says there is no next page (or, if it does not say, a short page).
    case pageNumber(firstPage: Int, pageSize: Int, maxPages: Int)

    /// Whether the configured cap forbids fetching the zero-based page `index`.
    public func isCapped(atPage index: Int) -> Bool {
        switch self {
        case .offset(let pageSize, let maxItems): index * pageSize >= maxItems
        case .pageNumber(_, _, let maxPages): index >= maxPages
        }
    }

    /// Whether another page follows one that held `rowCount` rows and said
    /// `hasNext` (where the API says anything).
    public func continues(afterRows rowCount: Int, hasNext: Bool?) -> Bool {
        guard rowCount > 0 else { return false }
        switch self {
        case .offset(let pageSize, _): return rowCount >= pageSize
        case .pageNumber(_, let pageSize, _): return hasNext ?? (rowCount >= pageSize)
        }
    }

    /// The offset or page number of the zero-based page `index`.
    public func position(ofPage index: Int) -> Int {
        switch self {
        case .offset(let pageSize, _): index * pageSize
        case .pageNumber(let firstPage, _, _): firstPage + index
        }
    }
}

/// A decoded page: the items it held and what it says about the next page.
public struct DecodedPage<Item: Sendable>: Sendable {
    public var items: [Item]
    /// Rows the page held before any was skipped (drives short-page detection).
    public var rowCount: Int
    /// The server's own "has next" flag, where it sends one.
    public var hasNext: Bool?
    /// Rows skipped with the reason, to be logged.
    public var skipped: [String]
    /// Rows recognised from their raw bytes as the stored record (see
    /// ``RowMemory``), not decoded; each with the hash of its bytes, so the
    /// applier can check the store still holds exactly that.
    public var unread: [(identity: RecordIdentity, rawHash: ContentHash)] = []

    public init(items: [Item], rowCount: Int, hasNext: Bool? = nil, skipped: [String] = []) {
        self.items = items
        self.rowCount = rowCount
        self.hasNext = hasNext
        self.skipped = skipped
    }
}

/// How a scope's crawl ended.
public enum ScopeOutcome: Sendable {
    /// Every page was fetched and decoded: the scope may drive removals.
    case complete(pages: Int)
    /// The configured cap stopped the crawl while the server had more: records
    /// past the cap were not seen, so nothing may be removed.
    case capped(pages: Int)
    /// A page failed: pages before it are stored, nothing may be removed.
    case failed(pages: Int, error: StoreSyncError)

    public var isComplete: Bool {
        if case .complete = self { return true }
        return false
    }
}

/// Walks a scope page by page, handing each decoded page to `onPage` before
/// fetching the next, so a page is stored (with its checkpoint) before the
/// crawl goes on and a killed run resumes after it.
public enum PageWalker {
    public static func walk<Item: Sendable>(
        pagination: Pagination,
        startPage: Int = 0,
        fetch: (Int) async throws(StoreSyncError) -> HTTPResponse,
        decode: (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Item>,
        onPage: (Int, HTTPResponse, DecodedPage<Item>) async throws(StoreSyncError) -> Void
    ) async -> ScopeOutcome {
        var index = startPage
        var pages = 0
        while true {
            if pagination.isCapped(atPage: index) { return .capped(pages: pages) }
            let page: DecodedPage<Item>
            let response: HTTPResponse
            do {
                response = try await fetch(index)
                page = try decode(response)
                try await onPage(index, response, page)
            } catch {
                return .failed(pages: pages, error: error)
            }
            pages += 1
            if page.rowCount == 0, page.hasNext == true {
                // Claiming more after an empty page is a server fault; ending
                // here as "complete" would turn every later record into a removal.
                return .failed(pages: pages, error: .malformedPage(
                    url: response.url.absoluteString, reason: "empty page that says it has a next page"))
            }
            if !pagination.continues(afterRows: page.rowCount, hasNext: page.hasNext) { return .complete(pages: pages) }
            index += 1
        }
    }
}
