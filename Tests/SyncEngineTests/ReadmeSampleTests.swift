import Catalog
import Foundation
import SyncEngine
import Testing
import TestSupport

/// README's first steps stay true (issue 29, finding 11): the sample summary
/// under "What the demo shows" is what night 2 of `jobs/demo.yml` prints.
@Suite struct ReadmeSampleTests {
    /// The summary's lines from its head through "record rows written", seconds aside
    /// (the head's "in N s" and the table's last column): what a night counted.
    static func counted(_ text: String) -> [String] {
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard let start = lines.firstIndex(where: { $0.hasPrefix("storesync: job demo, run 2, simulated night 2:") }),
              let end = lines[start...].firstIndex(where: { $0.hasPrefix("record rows written") }) else { return [] }
        return lines[start...end].map { line in
            if let cut = line.range(of: " in ", options: .backwards), line.hasPrefix("storesync:") {
                return String(line[..<cut.lowerBound])
            }
            if line.hasPrefix("record rows") { return line }
            // A table row: every column but the seconds.
            return line.split(separator: " ").dropLast().joined(separator: " ")
        }
    }

    @Test func theSampleSummaryIsARealSecondNight() async throws {
        let directory = TestPaths.temporaryDirectory("readme-sample")
        defer { try? FileManager.default.removeItem(at: directory) }
        let demo = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("jobs/demo.yml"), encoding: .utf8)
        var lines: [String] = []
        for line in demo.split(separator: "\n", omittingEmptySubsequences: false).map(String.init) {
            // The exports change nothing a night crawls and counts; without them the test is quick.
            if line.hasPrefix("exports:") { break }
            lines.append(line.hasPrefix("store:") ? "store: store/snapshot.sqlite" : line.hasPrefix("output:") ? "output: out" : line)
        }
        let job = try JobLoader.parse(yaml: lines.joined(separator: "\n") + "\nexports: []\n", file: "demo.yml",
                                      baseDirectory: directory.path, rules: .cli)
        let first = try await Runner(job: job, logger: .quiet).run()
        #expect(first.outcome == .ok, "\(first.summaryText)")
        let second = try await Runner(job: job, logger: .quiet).run()
        #expect(second.outcome == .ok && second.night == 2, "\(second.summaryText)")

        let readme = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("README.md"), encoding: .utf8)
        let sample = Self.counted(readme)
        #expect(sample.count == 8, "README's sample summary is not where this test looks: \(sample)")
        let real = Self.counted(second.summaryText)
        #expect(sample == real, "README's sample no longer matches a real night 2; paste this one:\n\(second.summaryText)")
    }
}
