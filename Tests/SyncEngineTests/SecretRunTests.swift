import Catalog
import Foundation
import Logging
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// Keeps every log line a run writes, at every level.
final class CapturedLog: Sendable {
    let lines = Mutex<[String]>([])
    var text: String { lines.withLock { $0.joined(separator: "\n") } }

    var logger: Logger {
        var logger = Logger(label: "storesync-test") { _ in Handler(log: self) }
        logger.logLevel = .trace
        return logger
    }

    struct Handler: LogHandler {
        let log: CapturedLog
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let all = metadata.merging(event.metadata ?? [:]) { $1 }
            log.lines.withLock { $0.append("\(event.level) \(event.message) \(all)") }
        }
    }
}

/// Whole runs against the simulator over loopback with a secret header and
/// the removal guard's suggested `--set`.
@Suite struct SecretRunTests {
    static let secret = "s3cr3t-T0KEN-4c1d"

    /// Every file under `directory`, as bytes.
    func files(_ directory: URL) -> [(path: String, data: Data)] {
        guard let walker = FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil) else { return [] }
        return walker.compactMap { $0 as? URL }.compactMap { url in
            (try? Data(contentsOf: url)).map { (url.path, $0) }
        }
    }

    @Test func aSecretHeaderAppearsInNoLogOutputOrFile() async throws {
        let directory = TestPaths.temporaryDirectory("secret-run")
        let yaml = """
            name: secret
            store: ${STATE}/snapshot.sqlite
            output: ${STATE}/out
            simulator: { seed: 3, podcasts: 60, products: 40, faults: [http-500:0.2] }
            http:
              maxAttempts: 2
              backoffBaseSeconds: 0
              headers:
                127.0.0.1: { Authorization: {env: SYNC_TOKEN, prefix: "Bearer "}, X-Api-Key: {env: SYNC_TOKEN} }
            sources:
              - name: market
                kind: marketplace
                itemsPerPage: 20
              - name: podcasts
                kind: itunes-search
                terms: [news]
            exports:
              - {kind: sqlite, path: all.sqlite}
              - {kind: csv, directory: csv}
              - {kind: changes-csv, path: changes.csv}
              - {kind: run-report, path: report.json}
              - {kind: metrics, path: storesync.prom}
            """
        let file = directory.appendingPathComponent("job.yml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        let job = try JobLoader.load(path: file.path, rules: .cli, inputs: JobInputs(
            environment: ["STATE": directory.path, "SYNC_TOKEN": Self.secret]))
        #expect(job.http.headers.count == 2)
        let log = CapturedLog()
        let runner = Runner(job: job, logger: log.logger)
        var outputs: [String] = [String(describing: job), String(reflecting: job)]
        for _ in 0..<2 {
            let report = try await runner.run()
            outputs.append(report.summaryText)
            outputs.append(String(describing: report))
        }
        let status = try JobStatus.load(job: job, runs: 5)
        outputs.append(status.text)
        outputs.append(log.text)
        #expect(log.text.contains("127.0.0.1"), "the capture must see the crawl's own log lines")
        for text in outputs {
            #expect(!text.contains(Self.secret), "\(text.prefix(400))")
        }
        let written = files(directory)
        #expect(written.contains { $0.path.hasSuffix("report.json") })
        #expect(written.contains { $0.path.hasSuffix("snapshot.sqlite") })
        for (path, data) in written {
            #expect(data.range(of: Data(Self.secret.utf8)) == nil, "the secret was written to \(path)")
        }
    }

    @Test func theGuardNamesTheCommandThatLetsTheRemovalsThrough() async throws {
        let directory = TestPaths.temporaryDirectory("guard-set")
        let yaml = """
            name: guarded
            store: snapshot.sqlite
            output: out
            simulator: { seed: 5, podcasts: 20, products: 200, removed: 0.3, added: 0, changed: 0 }
            sources:
              - name: market
                kind: marketplace
                itemsPerPage: 50
                removal: { afterMisses: 1, maxRatio: 0.05 }
            """
        let file = directory.appendingPathComponent("job.yml")
        try yaml.write(to: file, atomically: true, encoding: .utf8)
        let job = try JobLoader.load(path: file.path, rules: .cli, inputs: JobInputs(environment: [:]))
        _ = try await Runner(job: job, logger: .quiet).run()
        let refused = try await Runner(job: job, logger: .quiet).run()
        let warning = try #require(refused.warnings.first { $0.message.contains("would be removed") }?.message)
        let command = "storesync run \(file.path) --set "
        #expect(warning.contains(command), "\(warning)")
        // The suggested setting, taken as the operator would copy it, lets the same night through.
        let set = try #require(warning.components(separatedBy: command).last?.split(separator: " ").first.map(String.init))
        #expect(set.hasPrefix("sources.market.removal.maxRatio="))
        let allowed = try JobLoader.load(path: file.path, rules: .cli, inputs: JobInputs(environment: [:], sets: [set]))
        let rerun = try await Runner(job: allowed, logger: .quiet).run(RunOptions(night: refused.night))
        #expect(!rerun.warnings.contains { $0.message.contains("would be removed") }, "\(rerun.warnings)")
        #expect(rerun.sources.first { $0.name == "market" }.map { $0.counts.removed > 0 } == true)
    }
}

/// The same through the real command line, as cron runs it: `validate`,
/// `run -v`, `status` and `export`, every stream and every file searched.
@Suite struct SecretCommandLineTests {
    struct Finished {
        var status: Int32
        var output: String
    }

    /// Runs the binary to its end, waited for off the cooperative pool (``awaitOffPool(_:)``).
    func storesync(_ arguments: [String], environment: [String: String], in directory: URL) async throws -> Finished {
        try await awaitOffPool { try Self.storesyncWaitingHere(arguments, environment: environment, in: directory) }
    }

    static func storesyncWaitingHere(_ arguments: [String], environment: [String: String], in directory: URL) throws -> Finished {
        let process = Process()
        process.executableURL = try StoresyncExecutable.locate()
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = directory.appendingPathComponent("cli-\(arguments[0]).log")
        FileManager.default.createFile(atPath: out.path, contents: nil)
        let handle = try FileHandle(forWritingTo: out)
        defer { try? handle.close() }
        process.standardOutput = handle
        process.standardError = handle
        process.standardInput = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        return Finished(status: process.terminationStatus, output: try String(contentsOf: out, encoding: .utf8))
    }

    @Test func noCommandPrintsOrWritesTheSecret() async throws {
        let directory = TestPaths.temporaryDirectory("secret-cli")
        let secret = "cli-S3CRET-9f2e"
        try """
            name: cli
            store: ${STATE}/snapshot.sqlite
            output: ${STATE}/out
            simulator: { seed: 4, podcasts: 40, products: 30 }
            http:
              headers:
                127.0.0.1: { Authorization: {env: SYNC_TOKEN, prefix: "Bearer "} }
            sources:
              - { name: market, kind: marketplace, itemsPerPage: 10 }
            exports:
              - {kind: sqlite, path: all.sqlite}
              - {kind: run-report, path: report.json}
            """.write(to: directory.appendingPathComponent("job.yml"), atomically: true, encoding: .utf8)
        let job = directory.appendingPathComponent("job.yml").path
        let env = ["STATE": directory.appendingPathComponent("state").path, "SYNC_TOKEN": secret]
        let validate = try await storesync(["validate", job], environment: env, in: directory)
        #expect(validate.status == 0, "\(validate.output)")
        #expect(validate.output.contains("Authorization from $SYNC_TOKEN"))
        let run = try await storesync(["run", job, "-v", "--no-progress", "--set", "http.timeoutSeconds=20"], environment: env, in: directory)
        #expect(run.status == 0, "\(run.output)")
        #expect(run.output.contains("127.0.0.1"), "-v logs every page, so the log would show a leaked header")
        let status = try await storesync(["status", job], environment: env, in: directory)
        let export = try await storesync(["export", job], environment: env, in: directory)
        #expect(export.status == 0, "\(export.output)")
        // Without the variable the run is refused before anything is sent.
        let unset = try await storesync(["run", job], environment: ["STATE": env["STATE"]!, "SYNC_TOKEN": ""], in: directory)
        #expect(unset.status == 64)
        #expect(unset.output.contains("SYNC_TOKEN is not set"))
        for finished in [validate, run, status, export, unset] {
            #expect(!finished.output.contains(secret))
        }
        let walker = try #require(FileManager.default.enumerator(at: directory, includingPropertiesForKeys: nil))
        var searched = 0
        for case let url as URL in walker {
            guard let data = try? Data(contentsOf: url) else { continue }
            searched += 1
            #expect(data.range(of: Data(secret.utf8)) == nil, "the secret was written to \(url.path)")
        }
        #expect(searched >= 5)
    }
}

/// A server that echoes the job's token in its error page: the token reaches
/// no log line, no file, not the store, `status` or the webhook.
@Suite struct EchoedSecretTests {
    static let secret = "echo-T0KEN-\(UUID().uuidString.prefix(8))"

    @Test func anEchoedTokenIsRedactedFromEverySurface() async throws {
        let directory = TestPaths.temporaryDirectory("echoed-secret")
        defer { try? FileManager.default.removeItem(at: directory) }
        let receiver = try WebhookReceiver()
        defer { receiver.stop() }
        let job = try JobLoader.parse(yaml: """
            name: echoed
            store: store/snapshot.sqlite
            output: out
            http:
              maxAttempts: 1
              headers:
                market.test: { Authorization: {env: SYNC_TOKEN, prefix: "Bearer "} }
            sources:
              - {name: market, kind: marketplace, baseURL: "http://market.test", itemsPerPage: 100}
            exports:
              - {kind: run-report, path: report.json}
              - {kind: metrics, path: storesync.prom}
            notify:
              url: \(receiver.url.absoluteString)
              on: failure
              attempts: 1
              timeoutSeconds: 5
            """, file: "echoed.yml", baseDirectory: directory.path, rules: .cli,
            inputs: JobInputs(environment: ["SYNC_TOKEN": Self.secret]))
        let transport = ScriptedTransport { request, _ in
            let echoed = #"{"error": "invalid credentials", "received": "\#(request.headers["Authorization"] ?? "")", "token": "\#(Self.secret)"}"#
            return .success(ScriptedTransport.json(echoed, status: 401, url: request.url))
        }
        let log = CapturedLog()
        let report = try await Runner(job: job, logger: log.logger, transport: transport, clock: ManualClock()).run()
        #expect(report.outcome == .failed, "\(report.summaryText)")
        #expect(report.summaryText.contains("HTTP 401"), "the failure is still told: \(report.summaryText)")
        let status = try JobStatus.load(job: job)
        var texts = [report.summaryText, String(describing: report), log.text, status.text, MachineOutput.statusJSON(status)]
        texts += receiver.requests.map { String(decoding: $0.body, as: UTF8.self) }
        #expect(!receiver.requests.isEmpty, "the failed night was posted")
        for text in texts {
            #expect(!text.contains(Self.secret), "\(text.prefix(600))")
        }
        #expect(texts.contains { $0.contains("<redacted>") })
        for (path, data) in SecretRunTests().files(directory) {
            #expect(data.range(of: Data(Self.secret.utf8)) == nil, "the secret was written to \(path)")
        }
    }
}
