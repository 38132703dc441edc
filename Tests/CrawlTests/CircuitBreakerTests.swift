import Catalog
import Crawl
import Testing

@Suite struct CircuitBreakerTests {
    @Test func opensAfterThresholdConsecutiveFailures() {
        let breaker = CircuitBreaker(threshold: 3)
        breaker.recordFailure()
        breaker.recordFailure()
        breaker.recordSuccess()
        #expect(breaker.consecutiveFailures == 0)
        breaker.recordFailure()
        #expect(!breaker.recordFailure())
        #expect(!breaker.isOpen)
        #expect(breaker.recordFailure())
        #expect(breaker.isOpen)
    }

    /// A page that was already in flight succeeding does not restart a source that was stopped.
    @Test func staysOpenOnceOpen() {
        let breaker = CircuitBreaker(threshold: 1)
        breaker.recordFailure()
        breaker.recordSuccess()
        #expect(breaker.isOpen)
    }

    @Test func thresholdZeroNeverOpens() {
        let breaker = CircuitBreaker(threshold: 0)
        for _ in 0..<1000 { breaker.recordFailure() }
        #expect(!breaker.isOpen)
    }

    @Test func takesTheThresholdFromTheSettings() {
        #expect(CircuitBreaker(settings: HTTPSettings(circuitBreakerThreshold: 7)).threshold == 7)
    }

    @Test func concurrentFailuresAreAllCounted() async {
        let breaker = CircuitBreaker(threshold: 400)
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<4 { group.addTask { for _ in 0..<100 { breaker.recordFailure() } } }
        }
        #expect(breaker.consecutiveFailures == 400)
        #expect(breaker.isOpen)
    }
}
