import Catalog
import Crawl
import Testing

/// The scope life cycle as a pure state machine: every transition, no network.
@Suite struct ScopeWalkTests {
    let offsetPages = Pagination.offset(pageSize: 10, maxItems: 30)

    @Test func fullPagesContinueAndAShortPageCompletesTheScopeInTheSameStep() {
        var walk = ScopeWalk(pagination: offsetPages)
        guard case .fetch(0) = walk.next() else { Issue.record("expected page 0"); return }
        #expect(walk.pageArrived(.init(rowCount: 10, hasNext: nil, url: "u0")) == .store(isLast: false))
        guard case .fetch(1) = walk.pageStored() else { Issue.record("expected page 1"); return }
        // The last page is known before it is stored, so its commit can mark the scope complete.
        #expect(walk.pageArrived(.init(rowCount: 3, hasNext: nil, url: "u1")) == .store(isLast: true))
        guard case .finish(.complete(let pages)) = walk.pageStored() else { Issue.record("expected complete"); return }
        #expect(pages == 2)
        #expect(walk.pageFailed(.malformedPage(url: "late", reason: "x")).state == .complete)
    }

    @Test func theCapEndsTheScopeCappedBeforeFetchingPastIt() {
        var walk = ScopeWalk(pagination: offsetPages, startPage: 2)
        guard case .fetch(2) = walk.next() else { Issue.record("expected page 2"); return }
        #expect(walk.pageArrived(.init(rowCount: 10, hasNext: nil, url: "u2")) == .store(isLast: false))
        guard case .finish(.capped(let pages)) = walk.pageStored() else { Issue.record("expected capped"); return }
        #expect(pages == 1)
    }

    @Test func anEmptyPageThatClaimsMoreIsStoredThenFailsTheScope() {
        var walk = ScopeWalk(pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 100))
        _ = walk.next()
        #expect(walk.pageArrived(.init(rowCount: 0, hasNext: true, url: "http://x/p1")) == .store(isLast: false))
        guard case .finish(.failed(let pages, let error)) = walk.pageStored() else { Issue.record("expected failed"); return }
        #expect(pages == 1)
        #expect(error.code == .malformedPage)
        #expect(error.url == "http://x/p1")
    }

    @Test func aGoneAnswerEndsTheScopeGoneOnlyWhereThatIsNormal() {
        var tolerant = ScopeWalk(pagination: offsetPages, toleratesGone: true)
        _ = tolerant.next()
        let outcome = tolerant.pageFailed(.gone(url: "http://feeds/x.xml", status: 410))
        guard case .gone(let url, let status) = outcome else { Issue.record("expected gone, got \(outcome)"); return }
        #expect(url == "http://feeds/x.xml" && status == 410)
        #expect(outcome.state == .gone)

        var strict = ScopeWalk(pagination: offsetPages)
        _ = strict.next()
        #expect(strict.pageFailed(.gone(url: "http://x", status: 404)).state == .failed)
    }

    @Test func aFailureKeepsTheCountOfPagesStoredBeforeIt() {
        var walk = ScopeWalk(pagination: offsetPages)
        _ = walk.next()
        _ = walk.pageArrived(.init(rowCount: 10, hasNext: nil, url: "u0"))
        _ = walk.pageStored()
        guard case .failed(let pages, let error) = walk.pageFailed(.fetchFailed(url: "u1", reason: "HTTP 503")) else {
            Issue.record("expected failed"); return
        }
        #expect(pages == 1)
        #expect(error.code == .fetchFailed)
    }

    @Test func aServerRepeatingAPageIsStoppedBeforeTheRepeatIsStored() {
        var walk = ScopeWalk(pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 10_000))
        let body = ContentHash(bytes: Array("same page".utf8))
        _ = walk.next()
        #expect(walk.pageArrived(.init(rowCount: 10, hasNext: true, bodyHash: body, url: "p1")) == .store(isLast: false))
        guard case .fetch(1) = walk.pageStored() else { Issue.record("expected page 2"); return }
        #expect(walk.pageArrived(.init(rowCount: 10, hasNext: true, bodyHash: body, url: "p2")) == .reject)
        guard case .failed(let pages, let error)? = walk.outcome else { Issue.record("expected failed"); return }
        #expect(pages == 1)
        #expect(error.description.contains("the very body of the page before it"), "\(error)")
    }

    @Test func aHasNextPastTheServersOwnLastPageIsStopped() {
        var walk = ScopeWalk(pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 10_000), startPage: 2)
        _ = walk.next()
        // Page 3 of 3 that still says "more": the server's totals say otherwise.
        #expect(walk.pageArrived(.init(rowCount: 10, hasNext: true, lastPage: 3, url: "p3")) == .reject)
        guard case .failed(_, let error)? = walk.outcome else { Issue.record("expected failed"); return }
        #expect(error.description.contains("own last page is 3"), "\(error)")

        // Before the last page, "more" is believed.
        var early = ScopeWalk(pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 10_000), startPage: 1)
        _ = early.next()
        #expect(early.pageArrived(.init(rowCount: 10, hasNext: true, lastPage: 3, url: "p2")) == .store(isLast: false))
    }
}
