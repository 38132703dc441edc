import Foundation

/// Splits `0..<count` into contiguous ranges worked on concurrently.
package enum ParallelChunks {
    /// Below this many rows per chunk, threads cost more than they save.
    package static let minimumChunk = 256

    /// `body` over contiguous ranges covering `0..<count`, on every core when
    /// there is enough work; the results in range order.
    package static func map<T>(_ count: Int, _ body: (Range<Int>) -> T) -> [T] {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        // A few chunks per core even out rows of uneven cost.
        let chunks = min(cores * 4, count / minimumChunk)
        guard cores > 1, chunks > 1 else { return [body(0..<count)] }
        let results = UnsafeMutableBufferPointer<T?>.allocate(capacity: chunks)
        results.initialize(repeating: nil)
        defer {
            results.deinitialize()
            results.deallocate()
        }
        withoutActuallyEscaping(body) { body in
            // The workers only read what `body` captured (the page's bytes and
            // row list, which outlive this call) and each writes only its own
            // slot, a sharing the compiler cannot check, hence the unchecked box.
            let shared = UncheckedSendable((body, results))
            DispatchQueue.concurrentPerform(iterations: chunks) { i in
                let (body, results) = shared.value
                results[i] = body((count * i / chunks)..<(count * (i + 1) / chunks))
            }
        }
        return results.map { $0! }
    }
}

/// See ``ParallelChunks/map(_:_:)``: a value handed to concurrent workers under a
/// sharing discipline the compiler cannot verify.
private struct UncheckedSendable<Value>: @unchecked Sendable {
    let value: Value
    init(_ value: Value) { self.value = value }
}
