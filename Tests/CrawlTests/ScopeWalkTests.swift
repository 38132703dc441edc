import Catalog
import Crawl
import Testing

/// The scope life cycle as a pure state machine: every transition, no network.
@Suite struct ScopeWalkTests {
    let offsetPages = Pagination.offset(pageSize: 10, maxItems: 30)

    @Test func fullPagesContinueAndAShortPageCompletesTheScopeInTheSameStep() {
        var walk = ScopeWalk(pagination: offsetPages)
        guard case .fetch(0) = walk.next() else { Issue.record("expected page 0"); return }
        #expect(walk.pageArrived(rowCount: 10, hasNext: nil, url: "u0") == false)
        guard case .fetch(1) = walk.pageStored() else { Issue.record("expected page 1"); return }
        // The last page is known before it is stored, so its commit can mark the scope complete.
        #expect(walk.pageArrived(rowCount: 3, hasNext: nil, url: "u1") == true)
        guard case .finish(.complete(let pages)) = walk.pageStored() else { Issue.record("expected complete"); return }
        #expect(pages == 2)
        #expect(walk.pageFailed(.malformedPage(url: "late", reason: "x")).state == .complete)
    }

    @Test func theCapEndsTheScopeCappedBeforeFetchingPastIt() {
        var walk = ScopeWalk(pagination: offsetPages, startPage: 2)
        guard case .fetch(2) = walk.next() else { Issue.record("expected page 2"); return }
        #expect(walk.pageArrived(rowCount: 10, hasNext: nil, url: "u2") == false)
        guard case .finish(.capped(let pages)) = walk.pageStored() else { Issue.record("expected capped"); return }
        #expect(pages == 1)
    }

    @Test func anEmptyPageThatClaimsMoreIsStoredThenFailsTheScope() {
        var walk = ScopeWalk(pagination: .pageNumber(firstPage: 1, pageSize: 10, maxPages: 100))
        _ = walk.next()
        #expect(walk.pageArrived(rowCount: 0, hasNext: true, url: "http://x/p1") == false)
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
        walk.pageArrived(rowCount: 10, hasNext: nil, url: "u0")
        _ = walk.pageStored()
        guard case .failed(let pages, let error) = walk.pageFailed(.fetchFailed(url: "u1", reason: "HTTP 503")) else {
            Issue.record("expected failed"); return
        }
        #expect(pages == 1)
        #expect(error.code == .fetchFailed)
    }
}
