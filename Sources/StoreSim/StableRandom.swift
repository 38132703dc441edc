/// Deterministic randomness for the simulated world.
///
/// Everything the simulator serves is a pure function of the seed and a few
/// integers (entity, index, night, purpose). Swift's `Hasher`, `hashValue`,
/// `random()` and `SystemRandomNumberGenerator` are seeded per process, so
/// none of them may be used here: two processes (or two machines) must serve
/// byte-identical worlds for the same seed. Only integer arithmetic and the
/// IEEE basic operations (+ − × ÷, which are correctly rounded everywhere)
/// are used; even `log` from libm is avoided (see ``StableRandom/log(_:)``).
enum StableRandom {
    /// SplitMix64's output function: a bijective 64-bit finaliser with full avalanche.
    @inline(__always)
    static func mix(_ value: UInt64) -> UInt64 {
        var z = value &+ 0x9E37_79B9_7F4A_7C15
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// Absorbs one more value into a running hash. The multiply by an odd
    /// constant before mixing keeps `(a, b)` and `(b, a)` apart.
    @inline(__always)
    static func absorb(_ state: UInt64, _ value: UInt64) -> UInt64 {
        mix(state ^ (value &* 0xD6E8_FEB8_6659_FD93))
    }

    static func hash(_ a: UInt64, _ b: UInt64) -> UInt64 {
        absorb(mix(a), b)
    }

    static func hash(_ a: UInt64, _ b: UInt64, _ c: UInt64) -> UInt64 {
        absorb(absorb(mix(a), b), c)
    }

    static func hash(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64) -> UInt64 {
        absorb(absorb(absorb(mix(a), b), c), d)
    }

    static func hash(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64, _ e: UInt64) -> UInt64 {
        absorb(absorb(absorb(absorb(mix(a), b), c), d), e)
    }

    static func hash(_ a: UInt64, _ b: UInt64, _ c: UInt64, _ d: UInt64, _ e: UInt64, _ f: UInt64) -> UInt64 {
        absorb(absorb(absorb(absorb(absorb(mix(a), b), c), d), e), f)
    }

    /// A uniform double in (0, 1] from the top 53 bits (never 0, so `log` is finite).
    @inline(__always)
    static func unitInterval(_ bits: UInt64) -> Double {
        Double((bits >> 11) + 1) * 0x1.0p-53
    }

    /// True with probability `p`, decided by `bits`.
    @inline(__always)
    static func chance(_ p: Double, _ bits: UInt64) -> Bool {
        if p <= 0 { return false }
        if p >= 1 { return true }
        return Double(bits >> 11) * 0x1.0p-53 < p
    }

    /// Number of trials up to and including the first success of a Bernoulli(`p`)
    /// process (≥ 1), drawn by inversion from `bits`.
    ///
    /// This replaces "flip a coin every night": the first success after night
    /// `b` is `b + geometric(p)`, which has exactly that distribution but costs
    /// O(1) instead of O(nights), so a record's whole history is cheap.
    static func geometric(_ p: Double, _ bits: UInt64) -> Int {
        if p <= 0 { return never }
        if p >= 1 { return 1 }
        // For p below 2^-53, 1 - p rounds to 1 and the draw is "never".
        let denominator = log(1 - p)
        guard denominator < 0 else { return never }
        let trials = log(unitInterval(bits)) / denominator
        // A tiny p and an unlucky draw can exceed any night we would serve.
        if !(trials < Double(never - 1)) { return never }
        return 1 + Int(trials)
    }

    /// "Never happens": far beyond any night, small enough that adding a few
    /// nights to it cannot overflow.
    static let never = 1 << 40

    /// Natural logarithm of a positive finite `x`, using only IEEE basic
    /// operations so the result is bit-identical on every platform (libm's
    /// `log` may differ in the last bit between glibc and Darwin, which could
    /// move a geometric draw across an integer boundary).
    static func log(_ x: Double) -> Double {
        precondition(x > 0 && x.isFinite, "log of a non-positive number")
        // x = m · 2^e with m in [1, 2): both parts are read from the bits exactly.
        var m = x.significand
        var e = Double(x.exponent)
        // Keep m in [√½, √2) so the series below converges in a few terms.
        if m > 1.414_213_562_373_095_1 {
            m /= 2
            e += 1
        }
        // ln m = 2·atanh(s) = 2(s + s³/3 + s⁵/5 + …) with s = (m−1)/(m+1), |s| < 0.172.
        let s = (m - 1) / (m + 1)
        let s2 = s * s
        var term = s
        var sum = 0.0
        var k = 1.0
        for _ in 0..<14 {
            sum += term / k
            term *= s2
            k += 2
        }
        return e * 0.693_147_180_559_945_3 + 2 * sum
    }
}

/// A small deterministic generator for building one row: a SplitMix64 stream
/// started from a stable hash, so the draws for a record never depend on the
/// draws made for any other record.
struct Dice {
    private var state: UInt64

    init(_ seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        return StableRandom.mix(state)
    }

    /// Uniform in `0..<bound` (bound > 0), by multiply-high: no division, no
    /// rejection loop; the bias (< bound / 2^64) does not matter here.
    mutating func below(_ bound: Int) -> Int {
        precondition(bound > 0)
        return Int(next().multipliedFullWidth(by: UInt64(bound)).high)
    }

    /// Uniform in `range`.
    mutating func int(in range: ClosedRange<Int>) -> Int {
        range.lowerBound + below(range.upperBound - range.lowerBound + 1)
    }

    mutating func chance(_ p: Double) -> Bool {
        StableRandom.chance(p, next())
    }

    mutating func pick<T>(_ items: [T]) -> T {
        items[below(items.count)]
    }

    /// Lower-case hex digits of fresh draws.
    mutating func hex(_ count: Int) -> String {
        let digits = Array("0123456789abcdef")
        var out = ""
        out.reserveCapacity(count)
        var bits: UInt64 = 0
        for n in 0..<count {
            if n % 16 == 0 { bits = next() }
            out.append(digits[Int(bits & 0xF)])
            bits >>= 4
        }
        return out
    }
}

/// A bijection between record indices and public ids that look like real ones
/// (scattered, not consecutive), and that can be inverted without a table:
/// `id = offset + (index · multiplier + shift) mod 2^bits` with an odd multiplier.
struct IDScrambler: Sendable {
    let offset: Int
    let bits: Int
    let multiplier: UInt64
    let inverse: UInt64
    let shift: UInt64

    init(offset: Int, bits: Int, key: UInt64) {
        self.offset = offset
        self.bits = bits
        let mask = (UInt64(1) << UInt64(bits)) - 1
        let multiplier = (StableRandom.mix(key) | 1) & mask
        self.multiplier = multiplier
        // Newton's iteration doubles the correct low bits each step: 5 steps give 64+ bits.
        var inverse = multiplier
        for _ in 0..<5 { inverse = inverse &* (2 &- multiplier &* inverse) }
        self.inverse = inverse & mask
        self.shift = StableRandom.mix(key ^ 0x5EED) & mask
    }

    var capacity: Int { 1 << bits }
    private var mask: UInt64 { (UInt64(1) << UInt64(bits)) - 1 }

    func id(for index: Int) -> Int {
        offset + Int((UInt64(index) &* multiplier &+ shift) & mask)
    }

    /// The index for `id`, or nil when `id` is outside the id range.
    func index(for id: Int) -> Int? {
        guard id >= offset, id - offset < capacity else { return nil }
        return Int(((UInt64(id - offset) &- shift) & mask) &* inverse & mask)
    }
}
