import Foundation

/// What makes two requests "the same" for sharing and caching: the URL and
/// the caller's headers (names compared case-insensitively). The headers the
/// fetcher adds itself are the same for every request, so they are left out.
struct RequestKey: Hashable, Sendable {
    let url: String
    let headers: [String]

    init(url: URL, headers: [String: String]) {
        self.url = url.absoluteString
        self.headers = headers.map { "\($0.key.lowercased()): \($0.value)" }.sorted()
    }
}

/// Successful responses of this run by request, for `HTTPSettings.cacheTTLSeconds`.
///
/// Bounded by entry count and body bytes because a run may fetch 100k pages;
/// the oldest entries go first. Insertion order is also expiry order (one
/// TTL, a clock that never goes back), so the queue front is always the
/// first thing worth dropping. Not thread-safe: the fetcher keeps it under its lock.
struct ResponseCache {
    private struct Entry {
        var response: HTTPResponse
        var storedAt: Double
        var bytes: Int
        /// Tells a live entry from a stale queue slot left by a replaced one.
        var generation: Int
    }

    let ttl: Double
    let maxEntries: Int
    let maxBytes: Int
    private var entries: [RequestKey: Entry] = [:]
    /// Insertion order; slots whose generation no longer matches are skipped.
    private var queue: [(key: RequestKey, generation: Int)] = []
    private var head = 0
    private var nextGeneration = 0
    private(set) var bytes = 0

    init(ttl: Double, maxEntries: Int, maxBytes: Int) {
        self.ttl = ttl
        self.maxEntries = max(0, maxEntries)
        self.maxBytes = max(0, maxBytes)
    }

    var isEnabled: Bool { ttl > 0 && maxEntries > 0 && maxBytes > 0 }
    var count: Int { entries.count }

    /// A response stored less than `ttl` seconds before `now`.
    mutating func lookup(_ key: RequestKey, now: Double) -> HTTPResponse? {
        guard let entry = entries[key] else { return nil }
        guard now - entry.storedAt < ttl else {
            remove(key)
            return nil
        }
        return entry.response
    }

    mutating func store(_ response: HTTPResponse, for key: RequestKey, now: Double) {
        guard isEnabled else { return }
        remove(key)
        // Headers are small next to bodies; the body is what fills memory.
        let size = response.body.count + key.url.utf8.count
        guard size <= maxBytes else { return }
        entries[key] = Entry(response: response, storedAt: now, bytes: size, generation: nextGeneration)
        queue.append((key, nextGeneration))
        nextGeneration += 1
        bytes += size
        evict(now: now)
    }

    mutating func remove(_ key: RequestKey) {
        guard let entry = entries.removeValue(forKey: key) else { return }
        bytes -= entry.bytes
    }

    /// Drops expired entries and, oldest first, whatever is over the limits.
    private mutating func evict(now: Double) {
        while head < queue.count {
            let slot = queue[head]
            if let entry = entries[slot.key], entry.generation == slot.generation {
                let overLimit = entries.count > maxEntries || bytes > maxBytes
                guard overLimit || now - entry.storedAt >= ttl else { break }
                remove(slot.key)
            }
            head += 1
        }
        // Reclaim consumed and stale slots now and then, not on every pop: a
        // URL stored again and again leaves one stale slot per store.
        if queue.count - head > 2 * entries.count + 64 {
            queue = queue[head...].filter { entries[$0.key]?.generation == $0.generation }
            head = 0
        } else if head > 1024, head * 2 > queue.count {
            queue.removeFirst(head)
            head = 0
        }
    }
}
