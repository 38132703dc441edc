import Synchronization

/// A bounded single-producer, single-consumer queue: the producer (a scope's
/// fetch-and-decode task) suspends when `capacity` items wait, or when the
/// items waiting hold `byteBudget` bytes, so a scope fetched ahead of its
/// turn holds at most that many pages, and that much memory, whatever its
/// rows weigh. An item is always queued into an empty queue: the consumer
/// only ever waits on an empty queue, so a large item never stalls it.
final class PageChannel<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [(element: Element, bytes: Int)] = []
        var queuedBytes = 0
        var finished = false
        /// Set by the consumer when it stops early: the producer's sends fail.
        var cancelled = false
        var waitingConsumer: CheckedContinuation<Element?, Never>?
        var waitingProducer: CheckedContinuation<Bool, Never>?
    }

    private enum SendAction { case delivered(CheckedContinuation<Element?, Never>), queued, full, cancelled }
    private enum TakeAction { case element(Element, CheckedContinuation<Bool, Never>?), end, wait }

    private static func takeFirst(_ state: inout State) -> Element {
        let (element, bytes) = state.buffer.removeFirst()
        state.queuedBytes -= bytes
        return element
    }

    private let capacity: Int
    private let byteBudget: Int
    private let state = Mutex(State())

    init(capacity: Int, byteBudget: Int = .max) {
        self.capacity = max(1, capacity)
        self.byteBudget = byteBudget
    }

    private func hasRoom(_ state: State, for bytes: Int) -> Bool {
        state.buffer.isEmpty || (state.buffer.count < capacity && state.queuedBytes + bytes <= byteBudget)
    }

    /// Whether an element of `bytes` would be queued now without waiting.
    func hasRoom(for bytes: Int) -> Bool {
        state.withLock { hasRoom($0, for: bytes) }
    }

    /// Queues `element` (holding about `bytes` of memory), waiting while the
    /// queue is full. False once the consumer has cancelled: the producer should stop.
    func send(_ element: Element, bytes: Int = 0) async -> Bool {
        let action: SendAction = state.withLock { state in
            if state.cancelled { return .cancelled }
            if let consumer = state.waitingConsumer {
                state.waitingConsumer = nil
                return .delivered(consumer)
            }
            if hasRoom(state, for: bytes) {
                state.buffer.append((element, bytes))
                state.queuedBytes += bytes
                return .queued
            }
            return .full
        }
        switch action {
        case .delivered(let consumer):
            consumer.resume(returning: element)
            return true
        case .queued:
            return true
        case .cancelled:
            return false
        case .full:
            // Wait for room, then try again (the consumer may also have cancelled).
            let go = await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLock { state in
                    if state.cancelled { return false }
                    if hasRoom(state, for: bytes) { return true }
                    state.waitingProducer = continuation
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
            return go ? await send(element, bytes: bytes) : false
        }
    }

    /// No more elements will come.
    func finish() {
        let consumer = state.withLock { state -> CheckedContinuation<Element?, Never>? in
            state.finished = true
            defer { state.waitingConsumer = nil }
            return state.waitingConsumer
        }
        consumer?.resume(returning: nil)
    }

    /// The next element, or nil once the producer finished and the queue is empty.
    func next() async -> Element? {
        let action: TakeAction = state.withLock { state in
            if !state.buffer.isEmpty {
                let element = Self.takeFirst(&state)
                defer { state.waitingProducer = nil }
                return .element(element, state.waitingProducer)
            }
            return state.finished ? .end : .wait
        }
        switch action {
        case .element(let element, let producer):
            producer?.resume(returning: true)
            return element
        case .end:
            return nil
        case .wait:
            return await withCheckedContinuation { (continuation: CheckedContinuation<Element?, Never>) in
                let now: TakeAction = state.withLock { state in
                    if !state.buffer.isEmpty {
                        let element = Self.takeFirst(&state)
                        defer { state.waitingProducer = nil }
                        return .element(element, state.waitingProducer)
                    }
                    if state.finished { return .end }
                    state.waitingConsumer = continuation
                    return .wait
                }
                switch now {
                case .element(let element, let producer):
                    producer?.resume(returning: true)
                    continuation.resume(returning: element)
                case .end:
                    continuation.resume(returning: nil)
                case .wait:
                    break  // parked: `send` or `finish` resumes it
                }
            }
        }
    }

    /// The next element if one is queued now, without waiting; nil when the
    /// queue is empty, whether or not more will come.
    func poll() -> Element? {
        let taken: (Element, CheckedContinuation<Bool, Never>?)? = state.withLock { state in
            guard !state.buffer.isEmpty else { return nil }
            let element = Self.takeFirst(&state)
            defer { state.waitingProducer = nil }
            return (element, state.waitingProducer)
        }
        guard let (element, producer) = taken else { return nil }
        producer?.resume(returning: true)
        return element
    }

    /// The consumer gives up: queued elements are dropped and the producer's
    /// next send returns false.
    func cancel() {
        let producer = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            state.cancelled = true
            state.buffer.removeAll()
            state.queuedBytes = 0
            defer { state.waitingProducer = nil }
            return state.waitingProducer
        }
        producer?.resume(returning: false)
    }
}
