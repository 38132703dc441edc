import Catalog
import Crawl
import Export
import Foundation
import Logging
import Snapshot

/// Tells the world of tonight's changed feeds (`push:` of a feed export):
/// a WebSub publish ping to the feed's hub and a Podping-style notification,
/// for each current feed document whose content changed and was published.
/// A document left as published (``ExportedFile/unchanged``), withheld by
/// the lint, or an archive page sends nothing.
///
/// Like the webhook, a ping that does not get through is logged and counted
/// (report.json `push`, the metrics, the summary) and never changes the
/// night's exit code: the feed is published, and subscribers still poll it.
enum FeedPushSync {
    /// Tries per ping (``Delivery``), waiting 1 s then 2 s between them; each bounded by the job's HTTP timeout.
    static let attempts = 3

    struct Ping: Sendable {
        enum Service: String, Sendable { case websub, podping }
        var service: Service
        var endpoint: URL
        var topic: String
        var headers: [SecretHeader]
    }

    /// The pings tonight's exports call for, in the order the files were written.
    static func pings(for exported: [ExportedFile]) -> [Ping] {
        var pings: [Ping] = []
        for file in exported where !file.unchanged && !file.withheld {
            guard let push = file.push, let topic = file.topicURL else { continue }
            if let hub = push.hub.flatMap(URL.init(string:)) {
                pings.append(Ping(service: .websub, endpoint: hub, topic: topic, headers: []))
            }
            if let podping = push.podping.flatMap(URL.init(string:)) {
                pings.append(Ping(service: .podping, endpoint: podping, topic: topic, headers: push.podpingHeaders))
            }
        }
        return pings
    }

    /// The figures before anything is sent; nil when no feed pushes.
    static func figures(for exported: [ExportedFile]) -> FeedPushFigures? {
        let feeds = exported.filter { $0.push != nil && $0.topicURL != nil }
        guard !feeds.isEmpty else { return nil }
        var figures = FeedPushFigures()
        figures.feeds = feeds.count
        figures.changed = feeds.filter { !$0.unchanged && !$0.withheld }.count
        figures.unchanged = feeds.filter(\.unchanged).count
        return figures
    }

    /// Sends one ping (``Delivery``: retried unless refused); returns the last try's error, nil when it got through.
    static func send(_ ping: Ping, transport: any HTTPTransport, poster: any HTTPPoster, timeoutSeconds: Double,
                     clock: any CrawlClock) async -> String? {
        let request: () async throws -> Int
        switch ping.service {
        case .websub:
            request = {
                try await poster.post(ping.endpoint, headers: [
                    ("Content-Type", "application/x-www-form-urlencoded"),
                    ("User-Agent", "storesync/\(StoreSyncVersion.current)"),
                ], body: Array(form(["hub.mode": "publish", "hub.url": ping.topic]).utf8), timeoutSeconds: timeoutSeconds)
            }
        case .podping:
            var components = URLComponents(url: ping.endpoint, resolvingAgainstBaseURL: false)
            let given = components?.percentEncodedQueryItems ?? []
            components?.percentEncodedQueryItems = given
                + [URLQueryItem(name: "url", value: formEncoded(ping.topic)), URLQueryItem(name: "reason", value: "update"),
                   URLQueryItem(name: "medium", value: "podcast")]
            guard let url = components?.url else { return "cannot add the feed's URL to \(ping.endpoint)" }
            var headers = ["User-Agent": "storesync/\(StoreSyncVersion.current)"]
            for header in ping.headers { headers[header.name] = header.value }
            request = { try await transport.get(HTTPRequest(url: url, headers: headers), timeoutSeconds: timeoutSeconds).status }
        }
        let tried = await Delivery.attempt(attempts, backoffSeconds: 1, clock: clock, refusal: { "HTTP \($0)" }, request)
        // A server echoing a header into its error must not put the token in the log.
        return tried.error.map { Redactor(secrets: ping.headers.flatMap { [$0.value, $0.secret] })($0) }
    }

    /// `application/x-www-form-urlencoded` of `fields`, in key order.
    static func form(_ fields: [String: String]) -> String {
        fields.sorted { $0.key < $1.key }.map { "\(formEncoded($0.key))=\(formEncoded($0.value))" }.joined(separator: "&")
    }

    /// Everything but the unreserved characters percent-encoded (a feed URL's own `&` and `=` included).
    static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

extension Runner {
    /// Sends the pings tonight's changed feeds call for (``FeedPushSync``);
    /// returns the figures for the report, nil when no feed pushes.
    func pushChangedFeeds(_ exported: [ExportedFile], run: RunInfo) async -> FeedPushFigures? {
        guard var figures = FeedPushSync.figures(for: exported) else { return nil }
        let pings = FeedPushSync.pings(for: exported)
        guard !pings.isEmpty else {
            logger.info("push: no feed changed tonight (\(figures.unchanged) left as published): nothing sent")
            return figures
        }
        let session = await exportSession(run: run, needed: true, purpose: "push (the feeds are published; subscribers will poll them)")
        for ping in pings {
            let failure = await FeedPushSync.send(ping, transport: session.transport, poster: session.poster,
                                                  timeoutSeconds: job.http.timeoutSeconds, clock: clock)
            let name = ping.service == .websub ? "WebSub hub" : "podping"
            // The endpoint is shown without its query: a notifier's token may ride in it.
            let endpoint = "\(ping.endpoint.scheme ?? "http")://\(ping.endpoint.host ?? "")\(ping.endpoint.path)"
            switch (ping.service, failure) {
            case (.websub, nil): figures.hubPings += 1
            case (.websub, _?): figures.hubFailures += 1
            case (.podping, nil): figures.podpings += 1
            case (.podping, _?): figures.podpingFailures += 1
            }
            if let failure {
                logger.error("push: \(name) \(endpoint) was not told that \(ping.topic) changed: \(failure); the feed is published and subscribers will see it when they next poll")
            } else {
                logger.debug("push: told \(name) \(endpoint) that \(ping.topic) changed")
            }
        }
        await session.close()
        logger.info("\(figures.summary)")
        return figures
    }
}
