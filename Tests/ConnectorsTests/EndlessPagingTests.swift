import Catalog
import Connectors
import Crawl
import Foundation
import Testing
import TestSupport

/// A server that never stops paging is stopped by its own words.
@Suite struct EndlessPagingTests {
    func page(_ url: URL, lastPage: Int, hasNext: Bool, firstID: Int) -> HTTPResponse {
        let rows = (firstID..<firstID + 2).map { #"{"id": \#($0), "name": "p\#($0)"}"# }.joined(separator: ",")
        return ScriptedTransport.json(#"{"page_no": 1, "last_page": \#(lastPage), "has_next": \#(hasNext), "pages": [\#(rows)]}"#,
                                      url: url)
    }

    func walk(_ answer: @escaping @Sendable (URL, Int) -> HTTPResponse) async -> (ScopeOutcome, Int) {
        let transport = ScriptedTransport { request, n in .success(answer(request.url, n)) }
        let fetcher = Fetcher(transport: transport, settings: HTTPSettings(maxAttempts: 1, requestsPerMinute: [:]), clock: ManualClock())
        let scope = SourceSpec(name: "m", settings: MarketplaceSettings(itemsPerPage: 2))
            .scopes(baseURL: URL(string: "https://market.example")!)[0]
        let outcome = await PageWalker.walk(
            pagination: scope.pagination,
            fetch: { index throws(StoreSyncError) in try await fetcher.get(scope.pageURL(index)!) },
            decode: scope.decode, onPage: { _, _, _ throws(StoreSyncError) in })
        return (outcome, transport.requests.count)
    }

    @Test func theSamePageAgainAndAgainStopsAtTheFirstRepeat() async {
        let (outcome, requests) = await walk { url, _ in page(url, lastPage: 10_000, hasNext: true, firstID: 1) }
        #expect(requests == 2)
        guard case .failed(let pages, let error) = outcome else { Issue.record("\(outcome)"); return }
        #expect(pages == 1)
        #expect(error.description.contains("repeating itself"), "\(error)")
    }

    @Test func hasNextForeverStopsAtTheServersOwnLastPage() async {
        let (outcome, requests) = await walk { url, n in page(url, lastPage: 3, hasNext: true, firstID: 1 + 2 * n) }
        #expect(requests == 3)
        guard case .failed(let pages, let error) = outcome else { Issue.record("\(outcome)"); return }
        #expect(pages == 2)
        #expect(error.description.contains("own last page is 3"), "\(error)")
    }
}
