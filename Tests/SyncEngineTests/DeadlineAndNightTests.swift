import Catalog
import Crawl
import Foundation
import Logging
import Snapshot
import SyncEngine
import Synchronization
import Testing
import TestSupport

/// Passes requests to the network and has each one take `seconds` of the
/// run's clock, so a deadline passes after a known amount of work, not of
/// wall-clock time.
final class ClockAdvancingTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    let clock: ManualClock
    let seconds: Double

    init(clock: ManualClock, seconds: Double) {
        self.clock = clock
        self.seconds = seconds
    }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        let response = try await inner.get(request, timeoutSeconds: timeoutSeconds)
        clock.advance(by: seconds)
        return response
    }
}

@Suite struct RunDeadlineTests {
    func makeJob(_ directory: URL, deadline: String = "") throws -> JobSpec {
        try JobLoader.parse(yaml: """
            name: deadline
            store: snapshot.sqlite
            output: out
            simulator: { seed: 7, podcasts: 400, products: 150 }
            http: { concurrency: 1\(deadline) }
            sources:
              - name: podcasts
                kind: itunes-search
                terms: [news, music, comedy]
                pageSize: 20
              - name: market
                kind: marketplace
                itemsPerPage: 50
            exports:
              - {kind: run-report, path: report.json}
            """, file: "deadline.yml", baseDirectory: directory.path)
    }

    /// The deadline stops the crawl at a page boundary: partial, what is left
    /// named, nothing failed, no export; the next run resumes and ends as an
    /// uninterrupted twin does.
    @Test func aDeadlineStopsAtAPageBoundaryAndTheNextRunResumes() async throws {
        let directory = TestPaths.temporaryDirectory("deadline")
        defer { try? FileManager.default.removeItem(at: directory) }
        // Each request takes 20 s of the run's clock; 1 minute lets a few pages in.
        let job = try makeJob(directory, deadline: ", deadlineMinutes: 1")
        #expect(job.http.deadlineMinutes == 1)
        let clock = ManualClock()
        let transport = ClockAdvancingTransport(clock: clock, seconds: 20)
        let stopped = try await Runner(job: job, logger: .quiet, transport: transport, clock: clock).run()
        await transport.inner.shutdown()
        #expect(stopped.outcome == .partial)
        #expect(stopped.outcome.exitCode == 2)
        #expect(stopped.errors.isEmpty, "nothing failed: \(stopped.errors)")
        #expect(!stopped.deadlineLeft.isEmpty)
        #expect(stopped.deadlineLeft.contains("market (not started)"), "\(stopped.deadlineLeft)")
        let warning = try #require(stopped.warnings.first { $0.message.hasPrefix("deadline reached") }?.message)
        #expect(warning.contains("resumes run \(stopped.runID)"), "\(warning)")
        // Only the reports are written, and they tell the night as the exit code does (issue 29, finding 1).
        #expect(stopped.exports.map { ($0.path as NSString).lastPathComponent } == ["report.json"])
        let report = try JSONParser.parse(Array(try Data(contentsOf: directory.appendingPathComponent("out/report.json"))))
        #expect(report["status"] == .string("deadline") && report["exitCode"] == .int(2), "\(report)")
        #expect(report["requests"]?["total"] == .int(Int64(stopped.fetch.requests)))
        #expect(stopped.nightOutcome == .deadline && stopped.nightOutcome.exitCode == 2)
        #expect(stopped.fetch.requests >= 3 && stopped.fetch.requests <= 5, "stopped at the deadline: \(stopped.fetch.requests) requests")
        do {
            let store = try SQLSnapshotStore(path: job.storePath)
            #expect(try store.runs(limit: 1).first?.status == .running, "left resumable")
            // No scope was marked failed as if the server broke.
            #expect(try store.scopeStates().allSatisfy { $0.state != .failed })
        }

        // The next run (no deadline) resumes it and finishes.
        let resumed = try await Runner(job: try makeJob(directory), logger: .quiet).run()
        #expect(resumed.resumed)
        #expect(resumed.runID == stopped.runID)
        #expect(resumed.outcome == .ok, "\(resumed.errors) \(resumed.warnings)")
        #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("out/report.json").path))

        // The same night uninterrupted stores the same records.
        let twinDirectory = TestPaths.temporaryDirectory("deadline-twin")
        defer { try? FileManager.default.removeItem(at: twinDirectory) }
        let twin = try await Runner(job: try makeJob(twinDirectory), logger: .quiet).run()
        #expect(twin.outcome == .ok)
        let resumedStore = try SQLSnapshotStore(path: try makeJob(directory).storePath)
        let twinStore = try SQLSnapshotStore(path: try makeJob(twinDirectory).storePath)
        for source in ["podcasts", "market"] {
            let mine = try resumedStore.records(source: source).map(\.identity).sorted { "\($0)" < "\($1)" }
            let theirs = try twinStore.records(source: source).map(\.identity).sorted { "\($0)" < "\($1)" }
            #expect(mine == theirs, "\(source): \(mine.count) vs \(theirs.count)")
            #expect(!mine.isEmpty)
        }
        // The resumed run did not fetch again what the stopped one stored, and its
        // account counts both attempts (issue 29, finding 4): the night's requests, once.
        #expect(resumed.fetch.requests == twin.fetch.requests, "\(resumed.fetch.requests) vs \(twin.fetch.requests)")
        #expect(try SQLSnapshotStore(path: job.storePath).run(resumed.runID)?.totals.requests.requests == twin.fetch.requests)
    }

    @Test func theCommandLineDeadlineOverridesTheJobAndIsBounded() async throws {
        let directory = TestPaths.temporaryDirectory("deadline-option")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try makeJob(directory)
        var options = RunOptions()
        options.deadlineMinutes = 0
        await #expect(throws: StoreSyncError.self) { _ = try await Runner(job: job, logger: .quiet).run(options) }
        #expect(!FileManager.default.fileExists(atPath: job.storePath), "refused before the store is touched")

        options.deadlineMinutes = 0.5
        let clock = ManualClock()
        let transport = ClockAdvancingTransport(clock: clock, seconds: 20)
        let stopped = try await Runner(job: job, logger: .quiet, transport: transport, clock: clock).run(options)
        await transport.inner.shutdown()
        #expect(stopped.outcome == .partial)
        #expect(!stopped.deadlineLeft.isEmpty)
    }

    @Test(arguments: ["deadlineMinutes: 0", "deadlineMinutes: 20000", "deadlineMinutes: soon"])
    func aBadDeadlineIsAJobFileError(_ setting: String) throws {
        let directory = TestPaths.temporaryDirectory("deadline-bad")
        do {
            _ = try makeJob(directory, deadline: ", \(setting)")
            Issue.record("expected \(setting) to be refused")
        } catch let error as StoreSyncError {
            #expect(error.code == .invalidJob)
            #expect(error.description.contains("http.deadlineMinutes"), "\(error)")
        } catch {
            Issue.record("unexpected \(error)")
        }
    }
}

@Suite struct NightOptionTests {
    func refusal(_ job: JobSpec, night: Int) async -> StoreSyncError? {
        do {
            _ = try await Runner(job: job, logger: .quiet).run(RunOptions(night: night))
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [0, -1, 100_001, 999_999_999_999])
    func aNightOutsideTheRangeIsAUsageError(_ night: Int) async throws {
        let directory = TestPaths.temporaryDirectory("night-range")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: """
            name: nights
            store: snapshot.sqlite
            output: out
            simulator: { seed: 1, podcasts: 50, products: 10 }
            sources:
              - {name: market, kind: marketplace}
            """, file: "nights.yml", baseDirectory: directory.path)
        let error = try #require(await refusal(job, night: night))
        #expect(error.code == .invalidArguments)
        #expect(error.description.contains("--night \(night) is outside 1…100000"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: job.storePath), "nothing was opened")
    }

    @Test func nightOnAJobWithoutASimulatorIsAUsageError() async throws {
        let directory = TestPaths.temporaryDirectory("night-live")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: """
            name: live
            store: snapshot.sqlite
            output: out
            sources:
              - {name: market, kind: marketplace, baseURL: "http://127.0.0.1:9"}
            """, file: "live.yml", baseDirectory: directory.path)
        let error = try #require(await refusal(job, night: 3))
        #expect(error.code == .invalidArguments)
        #expect(error.description.contains("has no simulator"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: job.storePath))
    }
}

@Suite struct EveryNetworkSourceFailedTests {
    /// A local file read fine, but every source that fetches over the
    /// network found its host unreachable: failed (exit 1), quickly.
    @Test func aRunWhoseNetworkSourcesAllFailedIsFailed() async throws {
        let directory = TestPaths.temporaryDirectory("network-failed")
        defer { try? FileManager.default.removeItem(at: directory) }
        try Data("id,name\n1,a\n2,b\n".utf8).write(to: directory.appendingPathComponent("local.csv"))
        let job = try JobLoader.parse(yaml: """
            name: offline
            store: snapshot.sqlite
            output: out
            http: { maxAttempts: 5, backoffBaseSeconds: 30, backoffMaxSeconds: 60 }
            sources:
              - {name: local, kind: records-file, path: local.csv}
              - {name: market, kind: marketplace, baseURL: "http://storesync-test.invalid"}
              - {name: search, kind: itunes-search, terms: [a, b, c], baseURL: "http://storesync-test.invalid"}
            """, file: "offline.yml", baseDirectory: directory.path)
        let clock = ManualClock()
        let transport = CountingNetworkTransport()
        let report = try await Runner(job: job, logger: .quiet, transport: transport, clock: clock).run()
        await transport.inner.shutdown()
        #expect(report.outcome == .failed, "\(report.outcome)")
        #expect(report.outcome.exitCode == 1)
        #expect(report.sources.first { $0.name == "local" }?.scopesComplete == 1)
        #expect(report.errors.contains { $0.message.contains("unreachable") }, "\(report.errors)")
        // One request found the host unreachable; nothing after it was sent, nothing slept.
        #expect(transport.requests == 1, "\(transport.requests) requests")
        #expect(clock.sleeps.allSatisfy { $0 == 0 }, "\(clock.sleeps)")
    }
}

final class CountingNetworkTransport: HTTPTransport {
    let inner = AsyncHTTPTransport()
    private let count = Mutex(0)
    var requests: Int { count.withLock { $0 } }

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        count.withLock { $0 += 1 }
        return try await inner.get(request, timeoutSeconds: timeoutSeconds)
    }
}
