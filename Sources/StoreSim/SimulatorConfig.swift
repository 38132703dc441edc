/// How a simulated world is built. Two worlds with equal configs serve
/// byte-identical responses, in any process on any machine.
public struct SimulatorConfig: Sendable, Equatable {
    /// Seeds every draw in the world.
    public var seed: UInt64
    /// Number of podcasts alive on night 1.
    public var podcastCount: Int
    /// Number of marketplace products alive on night 1.
    public var productCount: Int
    /// How much of the world changes each night after the first.
    public var churn: Churn
    /// Which key style the marketplace list uses for its page keys; nil lets
    /// the seed choose, so a crawler meets both eras across seeds.
    public var pageKeyEra: PageKeyEra?
    /// About how many songs are alive on night 1. Songs come in albums of
    /// 4–16 tracks (one album per ten songs), so the exact number depends on the seed.
    public var songCount: Int
    /// Feature movies alive on night 1.
    public var movieCount: Int
    /// Apps (software) alive on night 1.
    public var appCount: Int
    /// Audiobooks alive on night 1.
    public var audiobookCount: Int
    /// E-books alive on night 1.
    public var ebookCount: Int
    /// Misbehaviour on demand. Content faults (huge fields, invalid UTF-8,
    /// XML-invalid characters, formula strings) become part of the world;
    /// the others hit single requests of a server serving this world.
    public var faults: FaultPlan

    public init(seed: UInt64 = 42, podcastCount: Int = 2_000, productCount: Int = 1_000, churn: Churn = .init(),
                pageKeyEra: PageKeyEra? = nil, songCount: Int = 2_000, movieCount: Int = 300, appCount: Int = 500,
                audiobookCount: Int = 200, ebookCount: Int = 200, faults: FaultPlan = .none) {
        self.seed = seed
        self.podcastCount = podcastCount
        self.productCount = productCount
        self.churn = churn
        self.pageKeyEra = pageKeyEra
        self.songCount = songCount
        self.movieCount = movieCount
        self.appCount = appCount
        self.audiobookCount = audiobookCount
        self.ebookCount = ebookCount
        self.faults = faults
    }
}

/// Per-night churn rates. Each is a probability (or fraction) in 0...1.
public struct Churn: Sendable, Equatable {
    /// Probability that a record alive the night before (and not removed
    /// tonight) changes tonight.
    public var changed: Double
    /// New records per night, as a fraction of the night-1 size (rounded).
    public var added: Double
    /// Probability that a record alive the night before is removed tonight.
    public var removed: Double

    public init(changed: Double = 0.02, added: Double = 0.01, removed: Double = 0.01) {
        self.changed = changed
        self.added = added
        self.removed = removed
    }
}

/// The marketplace server renamed its page keys in late 2022 (`page_no` →
/// `pageNo`, `has_next` → `hasNext`, …) while product keys stayed snake_case.
public enum PageKeyEra: String, Sendable {
    case snake, camel
}

/// Ground truth: exactly which record keys differ between night N−1 and night N.
public struct WorldDiff: Sendable, Equatable {
    /// Alive on night N, not on night N−1.
    public var added: Set<String>
    /// Alive on both nights with a different served row.
    public var changed: Set<String>
    /// Alive on night N−1, not on night N.
    public var removed: Set<String>

    public init(added: Set<String> = [], changed: Set<String> = [], removed: Set<String> = []) {
        self.added = added
        self.changed = changed
        self.removed = removed
    }

    /// True when nothing differs.
    public var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }
}
