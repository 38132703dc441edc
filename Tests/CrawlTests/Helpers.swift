import Foundation
import Synchronization
import Testing

/// A value shared between test tasks (a `Mutex` itself cannot be captured by an escaping closure).
final class Shared<Value: Sendable>: Sendable {
    private let value: Mutex<Value>
    init(_ value: Value) { self.value = Mutex(value) }
    func withLock<R: Sendable>(_ body: (inout Value) -> R) -> R { value.withLock { body(&$0) } }
    var current: Value { value.withLock { $0 } }
}

/// Hands out 0, 1, … `count - 1` to whichever worker asks next.
final class WorkQueue: Sendable {
    private let next = Mutex(0)
    let count: Int
    init(_ count: Int) { self.count = count }

    func take() -> Int? {
        next.withLock { next in
            guard next < count else { return nil }
            defer { next += 1 }
            return next
        }
    }
}

/// The most requests any window `[t, t + width)` holds (a busiest window
/// always starts at a request, so only those starts are tried).
func busiestWindow(_ times: [Double], width: Double = 60) -> Int {
    let sorted = times.sorted()
    var best = 0
    var end = 0
    for start in sorted.indices {
        while end < sorted.count, sorted[end] < sorted[start] + width { end += 1 }
        best = max(best, end - start)
    }
    return best
}

/// Yields until `condition` holds; for "the other task has got as far as X",
/// which nothing signals. Bounded, so a broken condition fails instead of hanging.
func eventually(_ condition: () -> Bool) async -> Bool {
    for _ in 0..<100_000 {
        if condition() { return true }
        await Task.yield()
    }
    return condition()
}
