/// What telling the world of tonight's feeds came to (`push:` of feed
/// exports), for the run report: nil when no feed export pushes.
public struct FeedPushFigures: Sendable, Equatable {
    /// Current feed documents (RSS and Atom files, archive pages aside) of exports with `push:`.
    public var feeds = 0
    /// Of those, the ones whose content changed tonight, and were published and pushed.
    public var changed = 0
    /// The ones whose content was what they published before: left as they were, nothing sent.
    public var unchanged = 0
    /// Publish pings WebSub hubs accepted (2xx), and those they refused or never answered.
    public var hubPings = 0, hubFailures = 0
    /// Notifications Podping-style notifiers accepted, and those that failed.
    public var podpings = 0, podpingFailures = 0

    public init() {}

    /// Pings and notifications that did not get through.
    public var failures: Int { hubFailures + podpingFailures }

    /// The summary's line.
    public var summary: String {
        var sent: [String] = []
        if hubPings + hubFailures > 0 { sent.append("\(hubPings) WebSub ping\(hubPings == 1 ? "" : "s")" + (hubFailures > 0 ? " (\(hubFailures) failed)" : "")) }
        if podpings + podpingFailures > 0 { sent.append("\(podpings) podping\(podpings == 1 ? "" : "s")" + (podpingFailures > 0 ? " (\(podpingFailures) failed)" : "")) }
        return "push: \(changed) of \(feeds) feed files changed" + (sent.isEmpty ? "" : ", \(sent.joined(separator: ", "))")
            + "; \(unchanged) unchanged, left as published, nothing sent"
    }
}
