import Catalog
import Crawl
import Foundation
import Logging
@testable import SyncEngine
import StoreSim
import Testing
import TestSupport

/// `notify:`: the run report POSTed to a webhook when a night goes wrong,
/// against a real loopback receiver.
@Suite struct NotifyTests {
    let directory = TestPaths.temporaryDirectory("notify")
    static let token = "tok-\(UUID().uuidString)"

    func job(_ receiver: WebhookReceiver, on: String = "failure") throws(StoreSyncError) -> JobSpec {
        try JobLoader.parse(yaml: """
            name: hooked
            store: store/snapshot.sqlite
            output: out
            simulator: {seed: 3, podcasts: 10, products: 60, changed: 0.2, added: 0.05, removed: 0.02}
            sources:
              - {name: market, kind: marketplace, itemsPerPage: 100, removal: {afterMisses: 1, maxRatio: 0.5}}
            exports:
              - {kind: changes-csv, path: changes.csv}
            notify:
              url: \(receiver.url.absoluteString)
              on: \(on)
              attempts: 2
              timeoutSeconds: 5
              headers: {Authorization: {env: HOOK_TOKEN, prefix: "Bearer "}}
            """, file: "hooked.yml", baseDirectory: directory.path, rules: .cli,
            inputs: JobInputs(environment: ["HOOK_TOKEN": Self.token]))
    }

    func runner(_ job: JobSpec, logger: Logger = .quiet) -> Runner {
        Runner(job: job, environment: RunEnvironment(services: SimulatedServices(job.simulator!), clock: ManualClock(), logger: logger))
    }

    /// Makes the next run's export fail: a non-empty folder where changes.csv goes.
    func blockExport(_ job: JobSpec) throws {
        let target = URL(fileURLWithPath: job.outputDirectory).appendingPathComponent("changes.csv")
        try? FileManager.default.removeItem(at: target)
        try FileManager.default.createDirectory(at: target.appendingPathComponent("blocker"), withIntermediateDirectories: true)
    }

    @Test func aFailedNightPostsItsReportOnceAndAnOkNightNothing() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let job = try job(receiver)
        let log = CapturedLog()
        let ok = try await runner(job, logger: log.logger).run()
        #expect(ok.outcome == .ok)
        #expect(ok.notify == nil)
        #expect(receiver.requests.isEmpty, "on: failure posts nothing after an ok night")

        try blockExport(job)
        let failed = try await runner(job, logger: log.logger).run()
        #expect(failed.outcome == .failed)
        #expect(failed.notify?.delivered == true, "\(failed.summaryText)")
        let requests = receiver.requests
        try #require(requests.count == 1)
        #expect(requests[0].requestLine == "POST /hooks/secret-path-token HTTP/1.1")
        #expect(requests[0].headers["authorization"] == "Bearer \(Self.token)")
        #expect(requests[0].headers["content-type"] == "application/json")
        // The body is the run report, the same document `run --json` prints.
        let expected = try MachineOutput.runReportJSON(job: job, runID: failed.runID, report: failed)
        #expect(String(decoding: requests[0].body, as: UTF8.self) == expected)
        #expect(expected.contains("\"status\": \"failed\""))
        // The token and the URL's path never reach the logs or the summary.
        for text in [log.text, failed.summaryText] {
            #expect(!text.contains(Self.token) && !text.contains("secret-path-token"), "\(text)")
        }
        // Nor does printing or dumping the job show them.
        var dumped = ""
        dump(job, to: &dumped)
        for text in [String(describing: job), String(reflecting: job), dumped] {
            #expect(!text.contains(Self.token) && !text.contains("secret-path-token"), "\(text.prefix(300))")
        }
        #expect(failed.summaryText.contains("notify: run report delivered to http://127.0.0.1:\(receiver.port) (1 attempt)"))
    }

    @Test func alwaysPostsAfterAnOkNight() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let report = try await runner(try job(receiver, on: "always")).run()
        #expect(report.outcome == .ok)
        #expect(receiver.requests.count == 1)
        let body = String(decoding: receiver.requests.first?.body ?? [], as: UTF8.self)
        #expect(body.contains("\"status\": \"ok\""))
    }

    @Test func aWebhookThatKeepsFailingLeavesTheExitCodeAlone() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try WebhookReceiver(statuses: [503, 503, 503])
        defer { receiver.stop() }
        let report = try await runner(try job(receiver, on: "always")).run()
        #expect(report.outcome == .ok)
        #expect(report.outcome.exitCode == 0)
        #expect(report.notify?.delivered == false)
        #expect(report.notify?.attempts == 2)
        #expect(receiver.requests.count == 2)
        #expect(report.summaryText.contains("could not be delivered") && report.summaryText.contains("HTTP 503"), "\(report.summaryText)")
    }

    func spec(_ receiver: WebhookReceiver, attempts: Int, timeout: Double = 5) -> NotifySpec {
        NotifySpec(url: receiver.url, headers: [SecretHeader(host: "127.0.0.1", name: "Authorization", variable: "HOOK_TOKEN",
                                                             value: "Bearer \(Self.token)")],
                   timeoutSeconds: timeout, attempts: attempts, backoffSeconds: 1)
    }

    @Test func twoFailuresThenSuccessIsDeliveredWithBackoff() async throws {
        let receiver = try WebhookReceiver(statuses: [500, 500, 200])
        defer { receiver.stop() }
        let clock = ManualClock()
        let outcome = await Notifier.deliver(Array("{}".utf8), to: spec(receiver, attempts: 3), poster: AsyncHTTPPoster(),
                                             clock: clock, logger: .quiet)
        #expect(outcome.delivered)
        #expect(outcome.attempts == 3)
        #expect(outcome.status == 200)
        #expect(receiver.requests.count == 3)
        #expect(clock.sleeps == [1, 2], "backoff doubles between attempts")
    }

    @Test func aRefusalIsNotRetried() async throws {
        let receiver = try WebhookReceiver(statuses: [401])
        defer { receiver.stop() }
        let outcome = await Notifier.deliver(Array("{}".utf8), to: spec(receiver, attempts: 3), poster: AsyncHTTPPoster(),
                                             clock: ManualClock(), logger: .quiet)
        #expect(!outcome.delivered)
        #expect(outcome.attempts == 1)
        #expect(outcome.error == "the receiver answered HTTP 401")
    }

    @Test func aReceiverThatNeverAnswersIsBoundedByTheTimeout() async throws {
        let receiver = try WebhookReceiver(silent: true)
        defer { receiver.stop() }
        let outcome = await Notifier.deliver(Array("{}".utf8), to: spec(receiver, attempts: 2, timeout: 0.5), poster: AsyncHTTPPoster(),
                                             clock: ManualClock(), logger: .quiet)
        #expect(!outcome.delivered)
        #expect(outcome.attempts == 2)
        #expect(outcome.error == "no answer within 0.5 s")
        #expect(receiver.requests.count == 2, "each attempt reached the receiver")
        // Each attempt ended by its own timeout (the error says so), not by the receiver:
        // no wall-clock assertion, which a loaded CI machine would make flaky.
    }

    @Test(arguments: [
        ("notify: {url: ftp://x/y}", "notify.url: expected an http(s) URL"),
        ("notify: {url: https://h/p, on: sometimes}", "notify.on:"),
        ("notify: {url: https://h/p, attempts: 0}", "notify.attempts: must be between 1 and 10"),
        ("notify: {url: https://h/p, headers: {Authorization: Bearer-abc}}", "notify.headers.Authorization: a header's value is never written"),
        ("notify: {url: https://h/p, headers: {Authorization: {env: NOT_SET_HERE}}}", "notify.headers.Authorization.env: environment variable NOT_SET_HERE is not set"),
        ("notify: {url: https://h/p, retries: 2}", "notify.retries: unknown key"),
    ])
    func badNotifySettingsAreRefused(_ yaml: String, _ message: String) {
        let found: [String]
        do {
            _ = try JobLoader.parse(yaml: """
                name: n
                store: s.sqlite
                output: out
                sources: [{name: market, kind: marketplace}]
                \(yaml)
                """, file: "n.yml", baseDirectory: directory.path, rules: .cli, inputs: JobInputs(environment: [:]))
            found = []
        } catch {
            found = error.issues.map { "\($0.keyPath): \($0.message)" }
        }
        #expect(found.contains { $0.hasPrefix(message) }, "\(found)")
        #expect(!found.contains { $0.contains("Bearer-abc") })
    }
}
