import Catalog
import Export
import Foundation
import Logging
import StoreSim
import SyncEngine
import Testing
import TestSupport

/// What a user sees does not change when the engine underneath does: the
/// demo job (its sources and exports, the soak's smaller world) run for a few
/// nights writes, file for file and byte for byte, what the previous release
/// wrote for the same nights. The release's files are kept as their sizes and
/// 64-bit content hashes in `Fixtures/demo-golden.json`; a difference names
/// the files and keeps the output folder to compare.
///
/// The runs are stamped with a fixed time per night (``RunEnvironment/now``),
/// so the only figures left that vary are durations and the store's random
/// identity, which are blanked (``normalized(_:path:)``) before hashing.
///
/// The consumer database is compared byte for byte too, so the manifest
/// also pins the SQLite library that wrote it (its version is in the file's
/// header): a machine with another libsqlite3 records it again.
///
/// A change that is meant to change an output records the manifest again:
/// `STORESYNC_RECORD_GOLDEN=1 swift test --filter DemoGoldenTests`, and says
/// why in its commit.
@Suite(.serialized) struct DemoGoldenTests {
    static let nights = 3
    static let manifestURL = TestPaths.repoRoot.appendingPathComponent("Tests/SyncEngineTests/Fixtures/demo-golden.json")
    static let recording = ProcessInfo.processInfo.environment["STORESYNC_RECORD_GOLDEN"] == "1"

    /// Midnight UTC of 2026-11-01 plus `night` days: a run's start and end.
    static func stamp(night: Int) -> Date {
        Date(timeIntervalSince1970: 1_793_491_200 + Double(night) * 86_400)
    }

    @Test func theDemoWritesWhatThePreviousReleaseWrote() async throws {
        let soak = SoakTests()
        let job = try soak.demoJob(podcasts: 300, products: 120, maxFeeds: 6)
        let output = URL(fileURLWithPath: job.outputDirectory)
        var written: [String: [String: String]] = [:]
        for night in 1...Self.nights {
            let stamp = Self.stamp(night: night)
            let runner = Runner(job: job, environment: RunEnvironment(
                services: SimulatedServices(job.simulator!), now: { stamp }, logger: .quiet))
            let report = try await runner.run(RunOptions(night: night))
            #expect(report.outcome == .ok, "night \(night):\n\(report.summaryText)")
            written["night-\(night)"] = try Self.fingerprints(of: output)
        }

        if Self.recording {
            let data = try JSONSerialization.data(withJSONObject: written, options: [.prettyPrinted, .sortedKeys])
            try data.write(to: Self.manifestURL)
            try? FileManager.default.removeItem(at: soak.directory)
            return
        }
        let data = try Data(contentsOf: Self.manifestURL)
        let expected = try #require(try JSONSerialization.jsonObject(with: data) as? [String: [String: String]])
        var differences: [String] = []
        for night in 1...Self.nights {
            let name = "night-\(night)", now = written[name] ?? [:], then = expected[name] ?? [:]
            for file in Set(now.keys).union(then.keys).sorted() where now[file] != then[file] {
                differences.append("\(name) \(file): release \(then[file] ?? "absent"), now \(now[file] ?? "absent")")
            }
        }
        #expect(differences.isEmpty, """
            the demo's outputs differ from the previous release's (\(differences.count) files; kept in \(output.path)):
            \(differences.prefix(40).joined(separator: "\n"))
            """)
        if differences.isEmpty { try? FileManager.default.removeItem(at: soak.directory) }
    }

    /// Every file under `folder` (its relative path) with its size and content hash.
    static func fingerprints(of folder: URL) throws -> [String: String] {
        var result: [String: String] = [:]
        let root = folder.standardizedFileURL.path
        guard let walk = FileManager.default.enumerator(atPath: root) else { return result }
        while let relative = walk.nextObject() as? String {
            let path = root + "/" + relative
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
            let bytes = normalized(try Data(contentsOf: URL(fileURLWithPath: path)), path: relative)
            result[relative] = "\(bytes.count) bytes, \(String(ContentHash(bytes: Array(bytes)).rawValue, radix: 16))"
        }
        return result
    }

    /// `bytes` with what a fixed clock does not fix blanked: the figures
    /// that measure the run's duration, and the store's random identity.
    static func normalized(_ bytes: Data, path: String) -> Data {
        let text = String(decoding: bytes, as: UTF8.self)
        if path.hasSuffix(".json") {
            return Data(text.replacing(/"seconds": [0-9.]+/, with: "\"seconds\": 0").utf8)
        }
        if path.hasSuffix(".storesync-history") {
            // Names the store by its identity, drawn at random when the store is made.
            return Data(text.replacing(/store: [0-9a-f]+/, with: "store: -").utf8)
        }
        if path.contains("\(PublishedFeeds.folderName)/blobs/") {
            // The feed a night published, whatever bytes this machine's zlib compressed it to.
            return (try? Data(Gzip.decompress(Array(bytes)))) ?? bytes
        }
        if path.hasSuffix(".prom") {
            return Data(text.split(separator: "\n", omittingEmptySubsequences: false)
                .filter { !$0.contains("_seconds{") || $0.contains("timestamp_seconds") }
                .joined(separator: "\n").utf8)
        }
        return bytes
    }
}
