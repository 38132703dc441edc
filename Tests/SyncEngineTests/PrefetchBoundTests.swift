import Crawl
import Testing
@testable import SyncEngine

/// What a scope fetches ahead of its turn is held decoded in memory: the
/// bound is in rows, so large pages (a records file's) cannot multiply it.
@Suite struct PrefetchBoundTests {
    @Test func largePagesArePrefetchedFewAtATime() {
        #expect(SourceCrawler.prefetch(.pageNumber(firstPage: 0, pageSize: 10_000, maxPages: .max)) == 1)
        #expect(SourceCrawler.prefetch(.pageNumber(firstPage: 0, pageSize: 1_000_000, maxPages: .max)) == 1, "the next page is still decoded while this one is written")
        #expect(SourceCrawler.prefetch(.pageNumber(firstPage: 1, pageSize: 100, maxPages: .max)) == SourceCrawler.prefetchPages)
        #expect(SourceCrawler.prefetch(.offset(pageSize: 200, maxItems: 10_000)) == SourceCrawler.prefetchPages)
        #expect(SourceCrawler.prefetch(.offset(pageSize: 5_000, maxItems: 100_000)) == 2)
        #expect(SourceCrawler.prefetch(.offset(pageSize: 2_500, maxItems: 100_000)) == 4)
    }
}
