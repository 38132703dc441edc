/// Where a scope stands, as the store keeps it between pages and runs.
public enum ScopeState: String, Sendable, CaseIterable {
    /// Pages are being stored; the checkpoint says which page comes next.
    case running
    /// Every page was fetched and decoded: the scope may drive removals.
    case complete
    /// Stopped at a cap: what lies past it was not seen, nothing is removed.
    case capped
    /// A page failed: what was stored stays, nothing is removed.
    case failed
    /// The resource answered 404/410 where that is normal (a feed taken down).
    case gone

    /// Ended without an error: complete, capped or gone.
    public var isSettled: Bool { self != .running && self != .failed }
}
