import Catalog
import Foundation
import Logging
import Synchronization
@testable import SyncEngine
import Testing
import TestSupport

/// `--log-format json`: JSON Lines a log shipper reads, with no secret in them.
@Suite struct JSONLogTests {
    static let secret = "json-l0g-S3CRET-9f2e"

    @Test func aLineIsOneObjectWithTheFixedMembersAndTheMetadata() throws {
        let line = JSONLogHandler.line(date: Date(timeIntervalSince1970: 1_795_308_886.5), level: .warning,
                                       message: "a \"quoted\"\nmessage", label: "storesync", module: "Crawl",
                                       metadata: ["source": "podcasts", "attempt": "2", "message": "not this one"])
        #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"))
        let object = try #require(try JSONParser.parse(Array(line.utf8)).objectValue)
        #expect(object["ts"]?.stringValue == "2026-11-22T00:54:46.500Z")
        #expect(object["level"]?.stringValue == "warning")
        #expect(object["message"]?.stringValue == "a \"quoted\"\nmessage")
        #expect(object["module"]?.stringValue == "Crawl")
        #expect(object["source"]?.stringValue == "podcasts")
        #expect(object["attempt"]?.stringValue == "2")
    }

    @Test func aRunWithASecretHeaderLogsJSONWithoutTheSecret() async throws {
        let directory = TestPaths.temporaryDirectory("json-log")
        defer { try? FileManager.default.removeItem(at: directory) }
        let job = try JobLoader.parse(yaml: """
            name: jsonlog
            store: state/snapshot.sqlite
            output: out
            simulator: { seed: 3, podcasts: 20, products: 40, faults: [http-500:0.2] }
            http:
              maxAttempts: 2
              backoffBaseSeconds: 0
              headers:
                127.0.0.1: { Authorization: {env: SYNC_TOKEN, prefix: "Bearer "} }
            sources:
              - {name: market, kind: marketplace, itemsPerPage: 20}
            exports:
              - {kind: changes-csv, path: changes.csv}
            """, file: "jsonlog.yml", baseDirectory: directory.path, rules: .cli,
            inputs: JobInputs(environment: ["SYNC_TOKEN": Self.secret]))
        let lines = Mutex<[String]>([])
        var logger = Logger(label: "storesync") { label in
            var handler = JSONLogHandler(label: label) { line in lines.withLock { $0.append(line) } }
            handler.logLevel = .trace
            return handler
        }
        logger.logLevel = .trace
        _ = try await Runner(job: job, logger: logger).run()
        let all = lines.withLock { $0 }
        #expect(all.count > 5, "the run logs at debug level")
        #expect(all.contains { $0.contains("127.0.0.1") }, "the capture sees the crawl's own lines")
        for line in all {
            #expect(line.hasSuffix("\n") && !line.dropLast().contains("\n"), "one line per entry: \(line)")
            let object = (try? JSONParser.parse(Array(line.utf8)))?.objectValue
            #expect(object?["ts"] != nil && object?["level"] != nil && object?["message"] != nil, "\(line)")
            #expect(!line.contains(Self.secret), "\(line)")
        }
    }
}
