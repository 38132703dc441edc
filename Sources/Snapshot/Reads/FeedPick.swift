import Catalog
import Foundation

/// An error thrown by the caller of a streaming read, carried out of the
/// engine's transaction unchanged (``SQLSnapshotStore/handOver(_:)``).
struct CallerError: Error {
    let error: any Error
}

/// The records a feed keeps, in its order (``SQLSnapshotStore/forEachFeedRecord(_:limit:_:)``):
/// its sort values compared as SQLite's `ORDER BY` compares them, ties broken
/// by entity then key, bytewise, so the order is total and the same on every
/// engine. With a limit it holds at most twice that many candidates, sorting
/// and cutting as they come, so a feed of ten over a million records holds
/// tens, not a million.
struct FeedPick {
    struct Candidate {
        let id: Int64
        /// Empty where the feed lists one kind.
        let entity: [UInt8]
        let key: [UInt8]
        let sortValues: [StoredValue]
    }

    /// Per sort value, whether it orders newest (largest) first.
    private let descending: [Bool]
    private let limit: Int?
    private var kept: [Candidate] = []

    init(order: FeedQuery, limit: Int?) {
        switch order {
        case .newestFirst: descending = [true]
        case .newestAdded: descending = [true, true]
        case .chart: descending = [false, false, false]
        }
        self.limit = limit
    }

    mutating func add(_ candidate: Candidate) {
        kept.append(candidate)
        if let limit, kept.count >= max(2 * limit, 1024) { cut(to: limit) }
    }

    /// The candidates kept, in the feed's order.
    mutating func ordered() -> [Candidate] {
        cut(to: limit ?? kept.count)
        return kept
    }

    private mutating func cut(to count: Int) {
        kept.sort(by: precedes)
        if kept.count > count { kept.removeLast(kept.count - count) }
    }

    private func precedes(_ a: Candidate, _ b: Candidate) -> Bool {
        for index in descending.indices {
            let order = a.sortValues[index].sqliteOrder(b.sortValues[index])
            if order != 0 { return descending[index] ? order > 0 : order < 0 }
        }
        if !a.entity.elementsEqual(b.entity) { return a.entity.lexicographicallyPrecedes(b.entity) }
        return a.key.lexicographicallyPrecedes(b.key)
    }
}

extension StoredValue {
    /// How SQLite's `ORDER BY` orders two values (BINARY collation): NULL
    /// first, then numbers by value (an integer and a real compared exactly),
    /// then text byte by byte. Negative, zero or positive, as `memcmp`.
    func sqliteOrder(_ other: StoredValue) -> Int {
        switch (self, other) {
        case (.null, .null): return 0
        case (.null, _): return -1
        case (_, .null): return 1
        case (.integer(let a), .integer(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.real(let a), .real(let b)): return a < b ? -1 : (a > b ? 1 : 0)
        case (.integer(let a), .real(let b)): return Self.compare(a, b)
        case (.real(let a), .integer(let b)): return -Self.compare(b, a)
        case (.text, .integer), (.text, .real): return 1
        case (.integer, .text), (.real, .text): return -1
        case (.text(let a), .text(let b)):
            if a.utf8.elementsEqual(b.utf8) { return 0 }
            return a.utf8.lexicographicallyPrecedes(b.utf8) ? -1 : 1
        }
    }

    /// An integer against a real, exactly (SQLite's `sqlite3IntFloatCompare`):
    /// converting the integer to a double would call 2^53 + 1 equal to 2^53.
    private static func compare(_ integer: Int64, _ real: Double) -> Int {
        if real.isNaN { return 1 }
        if real < -9_223_372_036_854_775_808.0 { return 1 }
        if real >= 9_223_372_036_854_775_808.0 { return -1 }
        let truncated = Int64(real)
        if integer < truncated { return -1 }
        if integer > truncated { return 1 }
        let asReal = Double(integer)
        return asReal < real ? -1 : (asReal > real ? 1 : 0)
    }

    /// The value as SQLite's `CAST(… AS TEXT)` gives it (nil for NULL): a
    /// real as SQLite prints one (`%!.15g`: 1.0, 1.0e+20).
    package var sqliteText: String? {
        switch self {
        case .null: return nil
        case .integer(let value): return String(value)
        case .text(let text): return text
        case .real(let value):
            var text = String(format: "%.15g", value)
            guard value.isFinite, !text.contains(".") else { return text }
            if let exponent = text.firstIndex(of: "e") {
                text.insert(contentsOf: ".0", at: exponent)
            } else {
                text += ".0"
            }
            return text
        }
    }

    /// Text read as SQLite's `CAST(… AS REAL)` reads it: the longest number
    /// at its start (after spaces), 0 when there is none ("n/a", "").
    package static func sqliteReal(_ text: String) -> Double {
        let bytes = Array(text.utf8)
        var i = 0
        while i < bytes.count, bytes[i] == 0x20 || (0x09...0x0D).contains(bytes[i]) { i += 1 }
        let start = i
        func digits() -> Int {
            let from = i
            while i < bytes.count, (0x30...0x39).contains(bytes[i]) { i += 1 }
            return i - from
        }
        if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
        var mantissa = digits()
        if i < bytes.count, bytes[i] == UInt8(ascii: ".") {
            i += 1
            mantissa += digits()
        }
        guard mantissa > 0 else { return 0 }
        var end = i
        if i < bytes.count, bytes[i] == UInt8(ascii: "e") || bytes[i] == UInt8(ascii: "E") {
            i += 1
            if i < bytes.count, bytes[i] == UInt8(ascii: "-") || bytes[i] == UInt8(ascii: "+") { i += 1 }
            if digits() > 0 { end = i }
        }
        return Double(String(decoding: bytes[start..<end], as: UTF8.self)) ?? 0
    }
}
