import Catalog
import Crawl
import Foundation
import GRDB
import Logging
import Snapshot
import SyncEngine
import Testing
import TestSupport

/// Passes requests to the real network stack, except those `timingOut` picks,
/// which time out as a server that never answers would.
final class TimingOutTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    let timingOut: @Sendable (URL) -> Bool

    init(timingOut: @escaping @Sendable (URL) -> Bool) { self.timingOut = timingOut }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        if timingOut(request.url) { throw .timedOut(seconds: timeoutSeconds) }
        return try await inner.get(request, timeoutSeconds: timeoutSeconds)
    }
}

/// report.json's errors and warnings are objects a monitoring script can
/// branch on (issue 15): a code, the source, scope and URL, and the text.
@Suite struct StructuredProblemsTests {
    let directory = TestPaths.temporaryDirectory("structured-problems")

    func job() throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: structured
            store: snapshot.sqlite
            output: out
            simulator: { seed: 11, podcasts: 600, products: 200, removed: 0.3, added: 0, changed: 0 }
            http: { maxAttempts: 1 }
            sources:
              - name: podcasts
                kind: itunes-search
                terms: [news]
                pageSize: 20
              - name: market
                kind: marketplace
                itemsPerPage: 50
                removal: { afterMisses: 1, maxRatio: 0.05 }
            exports:
              - { kind: run-report, path: report.json }
            """, file: "structured.yml", baseDirectory: directory.path)
    }

    /// The scope id the itunes-search source gives the term `news`.
    static let newsScope = "search:media=podcast&country=us&term=news"

    func reportJSON() throws -> JSONValue {
        try JSONParser.parse(String(contentsOf: directory.appendingPathComponent("out/report.json"), encoding: .utf8))
    }

    static func problems(_ report: JSONValue, _ key: String) -> [RunProblem] {
        (report[key]?.arrayValue ?? []).compactMap { value -> RunProblem? in
            // Objects only: a bare string would be the old schema.
            guard case .object = value else { return nil }
            return RunProblem(json: value)
        }
    }

    @Test func aFailedScopeAndARefusedRemovalCarryCodeSourceScopeAndURL() async throws {
        let job = try job()
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.outcome == .ok, "\(first.errors)")

        let transport = FaultInjectingTransport { $0.path == "/search" && $0.query?.contains("offset=40") == true }
        let second = try await Runner(job: job, logger: .quiet, transport: transport, clock: ManualClock()).run()
        await transport.inner.shutdown()
        #expect(second.outcome == .partial)

        let report = try reportJSON()
        #expect(report["schemaVersion"] == .int(2))
        let errors = Self.problems(report, "errors")
        #expect(errors.count == report["errors"]?.arrayValue?.count, "every error is an object")
        let failed = try #require(errors.first { $0.source == "podcasts" }, "\(errors)")
        #expect(failed.code == "fetch-failed", "\(failed)")
        #expect(failed.scope == Self.newsScope, "\(failed)")
        #expect(failed.url?.contains("offset=40") == true, "\(failed)")
        #expect(failed.message.contains("offset=40") && failed.message.contains("503"), "\(failed.message)")
        // The same object as the run's own report (`run --json` prints the document).
        #expect(second.errors.contains(failed))

        let warnings = Self.problems(report, "warnings")
        let refused = try #require(warnings.first { $0.code == RunProblem.guardRefused }, "\(warnings)")
        #expect(refused.source == "market")
        #expect(refused.scope != nil)
        #expect(refused.url == nil)
        #expect(refused.message.contains("would be removed"), "\(refused.message)")

        // `status` reads the scope's error with the same structure.
        let store = try SQLSnapshotStore(path: job.storePath, readOnly: true)
        let scope = try #require(try store.scopeStates().first { $0.source == "podcasts" && $0.scope == Self.newsScope })
        #expect(scope.error == failed)
        let status = try JSONParser.parse(MachineOutput.statusJSON(try JobStatus.load(job: job)))
        let shown = status["scopes"]?.arrayValue?.first { $0["scope"]?.stringValue == Self.newsScope }
        #expect(shown?["error"].flatMap(RunProblem.init(json:)) == failed, "\(String(describing: shown))")
        #expect(shown?["error"]?["code"] == .string("fetch-failed"))

        // An export-only resume (killed after the crawl, before its exports were
        // marked written) rebuilds the report from the store: the same problems.
        let writer = try DatabaseQueue(path: job.storePath)
        try await writer.write { db in try db.execute(sql: "UPDATE runs SET exported = 0 WHERE id = ?", arguments: [second.runID]) }
        try FileManager.default.removeItem(at: directory.appendingPathComponent("out/report.json"))
        let resumed = try await Runner(job: job, logger: .quiet).run(RunOptions(night: second.night))
        #expect(resumed.resumed && resumed.runID == second.runID)
        let again = try reportJSON()
        #expect(again["errors"] == report["errors"])
        #expect(again["warnings"] == report["warnings"])
    }

    @Test func aTimeoutNamesItsURL() async throws {
        let job = try job()
        let transport = TimingOutTransport { $0.path == "/search" && $0.query?.contains("offset=20") == true }
        let run = try await Runner(job: job, logger: .quiet, transport: transport, clock: ManualClock()).run()
        await transport.inner.shutdown()
        #expect(run.outcome == .partial)
        let errors = Self.problems(try reportJSON(), "errors")
        let timeout = try #require(errors.first, "\(errors)")
        #expect(errors.count == 1)
        // Its own code (issue 29): a stalled server is not one that answered badly.
        #expect(timeout.code == "timeout")
        #expect(timeout.source == "podcasts" && timeout.scope == Self.newsScope)
        #expect(timeout.url?.contains("offset=20") == true, "\(timeout)")
        #expect(timeout.message.contains("no answer within"), "\(timeout.message)")
    }

    /// A store written before problems were structured kept text only: it
    /// still exports, each text as code "unknown".
    @Test func anOldStoresTextReadsBackAsUnknown() async throws {
        let job = try job()
        let first = try await Runner(job: job, logger: .quiet).run()
        let writer = try DatabaseQueue(path: job.storePath)
        try await writer.write { db in
            try db.execute(sql: #"UPDATE runs SET errors = '["an old error"]', warnings = '["an old warning"]' WHERE id = ?"#,
                           arguments: [first.runID])
            try db.execute(sql: "UPDATE scopes SET error = 'an old scope error', error_code = NULL, error_url = NULL WHERE source = 'podcasts'")
        }
        _ = try Reexport.run(job: job, logger: Logger(label: "test"))
        let report = try reportJSON()
        #expect(Self.problems(report, "errors") == [RunProblem(code: "unknown", message: "an old error")])
        #expect(Self.problems(report, "warnings") == [RunProblem(code: "unknown", message: "an old warning")])
        let store = try SQLSnapshotStore(path: job.storePath, readOnly: true)
        let scope = try #require(try store.scopeStates().first { $0.source == "podcasts" })
        #expect(scope.error == RunProblem(code: "unknown", source: "podcasts", scope: scope.scope, message: "an old scope error"))
    }
}
