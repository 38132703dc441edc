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
    /// The number of the server's last page, where it says (the marketplace's
    /// `last_page`): a "has next" past it is a server that never stops.
    public var lastPage: Int?
    /// Rows skipped with the reason, to be logged.
    public var skipped: [String]
    /// Rows recognised from their raw bytes as the stored record (see
    /// ``RowMemory``), not decoded; each with the hash of its bytes, so the
    /// applier can check the store still holds exactly that.
    public var unread: [(identity: RecordIdentity, rawHash: ContentHash)] = []
    /// The document was not well-formed and was read in recovery mode: what
    /// the parser passed over, each with line and column. The items are what
    /// could be recovered, so the page may lack some and must not drive removals.
    public var recoveredErrors: [String] = []
    /// The page may not list everything its scope holds (a recovered
    /// document, a feed announcing that it moved): the scope ends settled but
    /// removes nothing.
    public var mayLackItems = false

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
    /// The scope's resource answered 404/410 where that is a normal answer (a
    /// feed taken down): what it stored before is kept, nothing is removed.
    case gone(url: String, status: Int)

    public var isComplete: Bool {
        if case .complete = self { return true }
        return false
    }

    /// The state a scope is left in by this outcome.
    public var state: ScopeState {
        switch self {
        case .complete: .complete
        case .capped: .capped
        case .failed: .failed
        case .gone: .gone
        }
    }
}

/// The life of one scope's crawl as a pure state machine: it says what to do
/// next (fetch page n, or finish with an outcome) and is told what happened,
/// doing no I/O itself, so every transition is tested without a network and
/// production and tests walk scopes through the very same rules.
public struct ScopeWalk: Sendable {
    /// What the walker should do next.
    public enum Action: Sendable {
        /// Fetch (and decode) the zero-based page `index`.
        case fetch(index: Int)
        /// The scope is over.
        case finish(ScopeOutcome)
    }

    /// Where the walk stands.
    public enum State: Sendable {
        /// Ready to ask for page `next`; `pages` were stored in this walk.
        case ready(next: Int, pages: Int)
        /// Page `index` was asked for and has not been answered.
        case awaitingPage(index: Int, pages: Int)
        /// Page `index` arrived and is being stored; `after` is what follows once it is.
        case storing(index: Int, pages: Int, after: AfterStore)
        case finished(ScopeOutcome)
    }

    /// What a stored page leads to.
    public enum AfterStore: Sendable {
        case nextPage
        case finish(ScopeOutcome)
    }

    public let pagination: Pagination
    /// A 404/410 ends the scope `gone` instead of failing it.
    public let toleratesGone: Bool
    public private(set) var state: State
    /// The body hash of the page before, to catch a server repeating a page.
    private var lastBodyHash: ContentHash?

    public init(pagination: Pagination, startPage: Int = 0, toleratesGone: Bool = false) {
        self.pagination = pagination
        self.toleratesGone = toleratesGone
        self.state = .ready(next: startPage, pages: 0)
    }

    /// The next step. Call it to start, and after ``pageStored()``.
    public mutating func next() -> Action {
        switch state {
        case .ready(let index, let pages):
            if pagination.isCapped(atPage: index) {
                return finish(.capped(pages: pages))
            }
            state = .awaitingPage(index: index, pages: pages)
            return .fetch(index: index)
        case .finished(let outcome):
            return .finish(outcome)
        case .awaitingPage(let index, _), .storing(let index, _, _):
            preconditionFailure("ScopeWalk.next() while page \(index) is still in progress")
        }
    }

    /// What the walker needs to know of a page to decide what follows it.
    public struct PageShape: Sendable {
        /// Rows the page held before any was skipped.
        public var rowCount: Int
        /// The server's "has next" flag, where it sends one.
        public var hasNext: Bool?
        /// The hash of the page's body, where known: a server that sends the
        /// same page again and again would otherwise be paged to the cap.
        public var bodyHash: ContentHash?
        /// The server's own last page number, where it says.
        public var lastPage: Int?
        /// Where the page came from, for messages.
        public var url: String

        public init(rowCount: Int, hasNext: Bool?, bodyHash: ContentHash? = nil, lastPage: Int? = nil, url: String) {
            self.rowCount = rowCount
            self.hasNext = hasNext
            self.bodyHash = bodyHash
            self.lastPage = lastPage
            self.url = url
        }
    }

    /// What to do with a page that arrived.
    public enum Arrival: Sendable, Equatable {
        /// Store it; `isLast` when it completes the scope, so it is stored
        /// together with the scope's completion and a kill right after it
        /// never fetches past the end.
        case store(isLast: Bool)
        /// Do not store it: the server is paging without end. The scope fails.
        case reject

        public var isLast: Bool { self == .store(isLast: true) }
    }

    /// Page `index` arrived. Endless paging is caught here, before the page is
    /// stored: a body equal to the previous page's, or a "has next" past the
    /// server's own last page.
    public mutating func pageArrived(_ page: PageShape) -> Arrival {
        guard case .awaitingPage(let index, let pages) = state else {
            preconditionFailure("ScopeWalk.pageArrived without a page asked for")
        }
        let previousHash = lastBodyHash
        lastBodyHash = page.bodyHash
        if page.rowCount > 0, let hash = page.bodyHash, hash == previousHash {
            state = .finished(.failed(pages: pages, error: .malformedPage(
                url: page.url, reason: "page \(pagination.position(ofPage: index)) has the very body of the page before it: "
                    + "the server is repeating itself, so paging stopped here",
                remedy: "The scope is marked incomplete, so nothing is removed; the next run pages it again")))
            return .reject
        }
        if page.hasNext == true, let lastPage = page.lastPage, pagination.position(ofPage: index) >= lastPage {
            state = .finished(.failed(pages: pages, error: .malformedPage(
                url: page.url, reason: "page \(pagination.position(ofPage: index)) says a page follows, "
                    + "but the server's own last page is \(lastPage): paging stopped here",
                remedy: "The scope is marked incomplete, so nothing is removed; the next run pages it again")))
            return .reject
        }
        let after: AfterStore
        if page.rowCount == 0 && page.hasNext == true {
            // Claiming more after an empty page is a server fault; ending here
            // as "complete" would turn every later record into a removal.
            after = .finish(.failed(pages: pages + 1, error: .malformedPage(
                url: page.url, reason: "empty page that says it has a next page")))
        } else if pagination.continues(afterRows: page.rowCount, hasNext: page.hasNext) {
            after = .nextPage
        } else {
            after = .finish(.complete(pages: pages + 1))
        }
        state = .storing(index: index, pages: pages, after: after)
        if case .finish(.complete) = after { return .store(isLast: true) }
        return .store(isLast: false)
    }

    /// The outcome of a scope whose page was rejected.
    public var outcome: ScopeOutcome? {
        if case .finished(let outcome) = state { return outcome }
        return nil
    }

    /// The page that arrived is stored; returns the next step.
    public mutating func pageStored() -> Action {
        guard case .storing(let index, let pages, let after) = state else {
            preconditionFailure("ScopeWalk.pageStored without a page arrived")
        }
        switch after {
        case .nextPage:
            state = .ready(next: index + 1, pages: pages + 1)
            return next()
        case .finish(let outcome):
            return finish(outcome)
        }
    }

    /// Fetching, decoding or storing the current page failed.
    public mutating func pageFailed(_ error: StoreSyncError) -> ScopeOutcome {
        let pages: Int
        switch state {
        case .awaitingPage(_, let done), .storing(_, let done, _), .ready(_, let done): pages = done
        case .finished(let outcome): return outcome
        }
        if error.code == .gone, toleratesGone, let status = error.httpStatus {
            return finishOutcome(.gone(url: error.location, status: status))
        }
        return finishOutcome(.failed(pages: pages, error: error))
    }

    private mutating func finish(_ outcome: ScopeOutcome) -> Action {
        .finish(finishOutcome(outcome))
    }

    private mutating func finishOutcome(_ outcome: ScopeOutcome) -> ScopeOutcome {
        state = .finished(outcome)
        return outcome
    }
}

/// Walks a scope page by page through ``ScopeWalk``, handing each page to
/// `onPage` before fetching the next, so a page is stored (with its
/// checkpoint) before the crawl goes on and a killed run resumes after it.
/// The runner crawls every scope through here.
package enum PageWalker {
    /// Walks pages of any shape: `fetch` returns a page (decoded, or known
    /// unchanged), `shape` reads its row count and "has next" flag, and
    /// `onPage` stores it, told whether it is the scope's last page.
    package static func walk<Page: Sendable>(
        pagination: Pagination,
        startPage: Int = 0,
        toleratesGone: Bool = false,
        fetch: (Int) async throws(StoreSyncError) -> (page: Page, url: String),
        shape: (Page, _ url: String) -> ScopeWalk.PageShape,
        onPage: (_ index: Int, _ page: Page, _ isLast: Bool) async throws(StoreSyncError) -> Void
    ) async -> ScopeOutcome {
        var walk = ScopeWalk(pagination: pagination, startPage: startPage, toleratesGone: toleratesGone)
        var action = walk.next()
        while true {
            switch action {
            case .finish(let outcome):
                return outcome
            case .fetch(let index):
                do {
                    let (page, url) = try await fetch(index)
                    let arrival = walk.pageArrived(shape(page, url))
                    if arrival == .reject, let outcome = walk.outcome { return outcome }
                    try await onPage(index, page, arrival.isLast)
                    action = walk.pageStored()
                } catch {
                    return walk.pageFailed(error)
                }
            }
        }
    }

    /// Walks raw responses through `decode`.
    package static func walk<Item: Sendable>(
        pagination: Pagination,
        startPage: Int = 0,
        toleratesGone: Bool = false,
        fetch: (Int) async throws(StoreSyncError) -> HTTPResponse,
        decode: (HTTPResponse) throws(StoreSyncError) -> DecodedPage<Item>,
        onPage: (Int, HTTPResponse, DecodedPage<Item>) async throws(StoreSyncError) -> Void
    ) async -> ScopeOutcome {
        await walk(
            pagination: pagination, startPage: startPage, toleratesGone: toleratesGone,
            fetch: { index throws(StoreSyncError) in
                let response = try await fetch(index)
                return ((response, try decode(response)), response.url.absoluteString)
            },
            shape: { page, url in
                // An empty body is no evidence of repetition (pages made up in memory have none).
                ScopeWalk.PageShape(rowCount: page.1.rowCount, hasNext: page.1.hasNext,
                                    bodyHash: page.0.body.isEmpty ? nil : ContentHash(bytes: page.0.body),
                                    lastPage: page.1.lastPage, url: url)
            },
            onPage: { index, page, _ throws(StoreSyncError) in try await onPage(index, page.0, page.1) })
    }
}
