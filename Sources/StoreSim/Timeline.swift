/// The life of every record of one entity: when it is born, when it is
/// removed, on which nights it changes and which of its field groups change.
///
/// Nothing is stored: each answer is computed from `(seed, entity, index)`.
/// Births are by index (night 1 holds `0..<initialCount`, each later night
/// appends `addedPerNight` indices), removal is a geometric draw per record
/// (the same distribution as "removed with probability p each night", at O(1)),
/// and change nights form a renewal sequence whose gaps are geometric draws
/// keyed by the previous change night (O(number of changes) to replay).
struct Timeline: Sendable {
    let seed: UInt64
    /// Separates the entities' random streams.
    let tag: UInt64
    let initialCount: Int
    let addedPerNight: Int
    let changeRate: Double
    let removeRate: Double
    /// Relative weights of the mutable field groups (how often each changes).
    let groupWeights: [Double]

    enum Purpose: UInt64 {
        case death = 1, changeGap, changeGroups
    }

    init(seed: UInt64, tag: UInt64, initialCount: Int, churn: Churn, groupWeights: [Double]) {
        precondition(!groupWeights.isEmpty && groupWeights.count <= 8)
        self.seed = seed
        self.tag = tag
        self.initialCount = initialCount
        self.addedPerNight = Int((Double(initialCount) * churn.added).rounded())
        self.changeRate = churn.changed
        self.removeRate = churn.removed
        let total = groupWeights.reduce(0, +)
        self.groupWeights = groupWeights.map { $0 / total }
    }

    var groupCount: Int { groupWeights.count }

    /// Births and changes stop after this night (about 2 700 years of nightly
    /// runs), so no night asked for, however large, can overflow the index
    /// arithmetic or make a history replay run for long.
    static let lastActiveNight = 1_000_000

    /// Number of indices ever born up to and including `night`.
    func indexCount(through night: Int) -> Int {
        guard night >= 1 else { return 0 }
        return initialCount + (min(night, Self.lastActiveNight) - 1) * addedPerNight
    }

    /// The night index `i` first appears.
    func birthNight(_ i: Int) -> Int {
        if i < initialCount { return 1 }
        guard addedPerNight > 0, i < indexCount(through: Self.lastActiveNight) else { return StableRandom.never }
        return 2 + (i - initialCount) / addedPerNight
    }

    /// The first night index `i` is gone (removed records never come back).
    func deathNight(_ i: Int) -> Int {
        let born = birthNight(i)
        guard born < StableRandom.never else { return StableRandom.never }
        let gap = StableRandom.geometric(removeRate, StableRandom.hash(seed, tag, UInt64(i), Purpose.death.rawValue))
        return gap >= StableRandom.never ? StableRandom.never : born + gap
    }

    func isAlive(_ i: Int, night: Int) -> Bool {
        guard night >= 1 else { return false }
        return birthNight(i) <= night && night < deathNight(i)
    }

    /// Calls `body` with each night after birth on which the record changes,
    /// up to and including `night`, stopping before its removal night.
    func forEachChangeNight(_ i: Int, through night: Int, _ body: (Int) -> Void) {
        let born = birthNight(i)
        let death = deathNight(i)
        let last = min(night, death - 1, Self.lastActiveNight)
        guard changeRate > 0, born < last else { return }
        var current = born
        while true {
            let gap = StableRandom.geometric(changeRate,
                                             StableRandom.hash(seed, tag, UInt64(i), Purpose.changeGap.rawValue, UInt64(current)))
            if gap >= StableRandom.never { return }
            current += gap
            if current > last { return }
            body(current)
        }
    }

    /// True when the record is alive on `night − 1` and `night` and changes on `night`.
    func changes(_ i: Int, on night: Int) -> Bool {
        guard isAlive(i, night: night - 1), isAlive(i, night: night) else { return false }
        var found = false
        forEachChangeNight(i, through: night) { if $0 == night { found = true } }
        return found
    }

    /// The field groups a change on `night` touches, as a bit mask (never empty):
    /// one group by weight, and with probability 1/4 a second one.
    func groups(_ i: Int, changingOn night: Int) -> UInt8 {
        var dice = Dice(StableRandom.hash(seed, tag, UInt64(i), Purpose.changeGroups.rawValue, UInt64(night)))
        let first = pickGroup(&dice)
        var mask = UInt8(1) << UInt8(first)
        if groupCount > 1, dice.chance(0.25) {
            let second = (first + 1 + dice.below(groupCount - 1)) % groupCount
            mask |= UInt8(1) << UInt8(second)
        }
        return mask
    }

    private func pickGroup(_ dice: inout Dice) -> Int {
        let u = StableRandom.unitInterval(dice.next())
        var cumulative = 0.0
        for (group, weight) in groupWeights.enumerated() {
            cumulative += weight
            if u <= cumulative { return group }
        }
        return groupCount - 1
    }

    /// What a record looks like on `night`, as far as its mutable fields go.
    struct History {
        /// Per group: how many times it has changed (0 = as born).
        var versions: [Int]
        /// Per group: the last night it changed, or nil.
        var lastChange: [Int?]
        /// The last night any group changed, or nil.
        var lastAnyChange: Int?
    }

    func history(_ i: Int, night: Int) -> History {
        var history = History(versions: Array(repeating: 0, count: groupCount),
                              lastChange: Array(repeating: nil, count: groupCount), lastAnyChange: nil)
        forEachChangeNight(i, through: night) { changeNight in
            let mask = groups(i, changingOn: changeNight)
            for group in 0..<groupCount where mask & (UInt8(1) << UInt8(group)) != 0 {
                history.versions[group] += 1
                history.lastChange[group] = changeNight
            }
            history.lastAnyChange = changeNight
        }
        return history
    }

    /// Indices alive on `night`, ascending.
    func aliveIndices(night: Int) -> [Int] {
        let count = indexCount(through: night)
        var out: [Int] = []
        out.reserveCapacity(count)
        for i in 0..<count where isAlive(i, night: night) { out.append(i) }
        return out
    }
}

/// A value that takes a new form each time its field group changes, and is
/// guaranteed to differ from the form before it: version `k` is drawn from
/// `make(k, attempt)` with increasing attempts until it differs from version
/// `k − 1`. Replaying the chain costs O(versions), which stay small.
func versioned<T: Equatable>(_ version: Int, _ make: (_ version: Int, _ attempt: Int) -> T) -> T {
    var current = make(0, 0)
    guard version > 0 else { return current }
    for v in 1...version {
        var attempt = 0
        var candidate = make(v, attempt)
        while candidate == current {
            attempt += 1
            // Every generator has many possible values; a long streak of
            // repeats means it has only one, which is a programming error.
            precondition(attempt < 1_000, "versioned value generator never produces a new value")
            candidate = make(v, attempt)
        }
        current = candidate
    }
    return current
}
