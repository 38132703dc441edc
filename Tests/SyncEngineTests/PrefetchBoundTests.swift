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

    /// Rows are not all alike: a scope's queue also stops at a byte budget,
    /// and still takes one page of any size when it is empty.
    @Test func aQueueStopsAtItsByteBudgetButNeverStalls() async {
        let channel = PageChannel<Int>(capacity: 8, byteBudget: 10)
        #expect(channel.hasRoom(for: 100), "an empty queue takes a page of any size")
        #expect(await channel.send(1, bytes: 6))
        #expect(!channel.hasRoom(for: 6) && channel.hasRoom(for: 4))
        #expect(await channel.send(2, bytes: 4))
        #expect(!channel.hasRoom(for: 1), "10 of 10 bytes queued")
        #expect(channel.poll() == 1)
        #expect(channel.hasRoom(for: 6) && !channel.hasRoom(for: 7), "the page taken gave its bytes back")
        #expect(channel.poll() == 2)
        #expect(channel.hasRoom(for: 1_000))

        // A producer far ahead of its consumer, pages heavier than the budget: all arrive, in order.
        let producer = Task {
            for item in 0..<50 { _ = await channel.send(item, bytes: item % 3 == 0 ? 25 : 3) }
            channel.finish()
        }
        var received: [Int] = []
        while let item = await channel.next() { received.append(item) }
        await producer.value
        #expect(received == Array(0..<50))
    }
}
