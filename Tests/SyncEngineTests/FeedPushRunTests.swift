import Catalog
import Crawl
import Foundation
import Logging
@testable import SyncEngine
import StoreSim
import Testing
import TestSupport

/// Issue 30, item 7: a night that changes a feed tells its WebSub hub and
/// its Podping-style notifier, once per changed document; a night that
/// changes nothing sends nothing; a hub that fails never fails the night.
@Suite struct FeedPushRunTests {
    let directory = TestPaths.temporaryDirectory("feed-push")
    static let token = "podping-\(UUID().uuidString)"

    func job(hub: WebhookReceiver, podping: WebhookReceiver) throws(StoreSyncError) -> JobSpec {
        try JobLoader.parse(yaml: """
            name: pushed
            store: store/snapshot.sqlite
            output: out
            simulator: {seed: 5, podcasts: 10, products: 80, changed: 0.1, added: 0.05, removed: 0.02}
            sources:
              - {name: market, kind: marketplace, itemsPerPage: 100, removal: {afterMisses: 1, maxRatio: 0.5}}
            exports:
              - kind: feed
                feed: listings-new
                rss: feeds/new.xml
                atom: feeds/new.atom
                title: New listings
                selfURL: https://example.com/feeds/new.xml?from=storesync
                atomURL: https://example.com/feeds/new.atom
                push:
                  hub: http://127.0.0.1:\(hub.port)/hub
                  podping: http://127.0.0.1:\(podping.port)/
                  podpingHeaders: {Authorization: {env: PODPING_TOKEN}}
              - {kind: run-report, path: report.json}
              - {kind: metrics, path: storesync.prom}
            """, file: "pushed.yml", baseDirectory: directory.path, rules: .cli,
            inputs: JobInputs(environment: ["PODPING_TOKEN": Self.token]))
    }

    func runner(_ job: JobSpec, logger: Logger = .quiet) -> Runner {
        Runner(job: job, environment: RunEnvironment(services: SimulatedServices(job.simulator!), clock: ManualClock(), logger: logger))
    }

    @Test func aChangedFeedIsPushedOnceAndAnUnchangedOneNever() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let hub = try WebhookReceiver(), podping = try WebhookReceiver()
        defer { hub.stop(); podping.stop() }
        let job = try job(hub: hub, podping: podping)
        let log = CapturedLog()

        let first = try await runner(job, logger: log.logger).run(RunOptions(night: 1))
        #expect(first.outcome == .ok, "\(first.summaryText)")
        let bodies = hub.requests.map { String(decoding: $0.body, as: UTF8.self) }.sorted()
        #expect(bodies == ["hub.mode=publish&hub.url=https%3A%2F%2Fexample.com%2Ffeeds%2Fnew.atom",
                           "hub.mode=publish&hub.url=https%3A%2F%2Fexample.com%2Ffeeds%2Fnew.xml%3Ffrom%3Dstoresync"])
        #expect(hub.requests.allSatisfy { $0.requestLine == "POST /hub HTTP/1.1"
                    && $0.headers["content-type"] == "application/x-www-form-urlencoded" })
        #expect(podping.requests.map(\.requestLine).sorted() == [
            "GET /?url=https%3A%2F%2Fexample.com%2Ffeeds%2Fnew.atom&reason=update&medium=podcast HTTP/1.1",
            "GET /?url=https%3A%2F%2Fexample.com%2Ffeeds%2Fnew.xml%3Ffrom%3Dstoresync&reason=update&medium=podcast HTTP/1.1",
        ])
        #expect(podping.requests.allSatisfy { $0.headers["authorization"] == Self.token })
        #expect(first.push?.changed == 2 && first.push?.hubPings == 2 && first.push?.podpings == 2 && first.push?.failures == 0)
        #expect(first.summaryText.contains("push: 2 of 2 feed files changed, 2 WebSub pings, 2 podpings"), "\(first.summaryText)")
        #expect(!log.text.contains(Self.token) && !first.summaryText.contains(Self.token))

        // The same night again: the same feeds, left as published, nothing sent.
        let again = try await runner(job, logger: log.logger).run(RunOptions(night: 1))
        #expect(hub.requests.count == 2 && podping.requests.count == 2, "an unchanged feed was pushed")
        #expect(again.push?.unchanged == 2 && again.push?.changed == 0)
        let report = try String(contentsOf: URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("report.json"), encoding: .utf8)
        #expect(report.contains("\"unchanged\": 2"), "\(report)")
        let metrics = try String(contentsOf: URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("storesync.prom"), encoding: .utf8)
        #expect(metrics.contains("storesync_feed_push_feeds{storesync_job=\"pushed\",state=\"unchanged\"} 2"), "\(metrics)")

        // Night 2 adds listings: the feeds change and are pushed again.
        let second = try await runner(job, logger: log.logger).run(RunOptions(night: 2))
        #expect(second.push?.changed == 2 && hub.requests.count == 4 && podping.requests.count == 4)
    }

    @Test func aHubThatFailsIsCountedAndTheNightStandsOk() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let hub = try WebhookReceiver(statuses: Array(repeating: 503, count: 6)), podping = try WebhookReceiver(statuses: [401, 401])
        defer { hub.stop(); podping.stop() }
        let job = try job(hub: hub, podping: podping)
        let log = CapturedLog()
        let night = try await runner(job, logger: log.logger).run(RunOptions(night: 1))
        #expect(night.outcome == .ok && night.outcome.exitCode == 0, "\(night.summaryText)")
        // 503 is asked again (3 tries each); a refused token is not.
        #expect(hub.requests.count == 6 && podping.requests.count == 2)
        #expect(night.push?.hubFailures == 2 && night.push?.podpingFailures == 2 && night.push?.hubPings == 0)
        #expect(log.text.contains("was not told that https://example.com/feeds/new.xml?from=storesync changed: HTTP 503"), "\(log.text)")
        #expect(!log.text.contains(Self.token))
    }
}
