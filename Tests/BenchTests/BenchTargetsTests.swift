import Bench
import Testing

/// The benchmark's verdicts are what a release is judged by: a target must be
/// called missed when the figures miss it, and never called met on figures
/// that were not measured.
@Suite struct BenchTargetsTests {
    func row(_ task: String, _ tool: String, _ median: Double, peakMB: Int = 50) -> Benchmark.Row {
        Benchmark.Row(task: task, tool: tool, median: median, records: 1_000_000, peakRSS: peakMB << 20, runs: 3, note: "")
    }

    func verdict(_ rows: [Benchmark.Row], _ prefix: String) -> Bool? {
        Benchmark.targets(rows).first { $0.what.hasPrefix(prefix) }?.met
    }

    @Test func ratiosAgainstThePeerDecideEachTarget() {
        let c = "C hash-diff (libsqlite3)"
        #expect(verdict([row("night-1 load", "storesync", 10.0), row("night-1 load", c, 20.0)], "night-1 load") == true)
        #expect(verdict([row("night-1 load", "storesync", 10.1), row("night-1 load", c, 20.0)], "night-1 load") == false)
        #expect(verdict([row("night-2 apply", "storesync", 2.4), row("night-2 apply", c, 4.0)], "night-2 apply ≤") == true)
        #expect(verdict([row("night-2 apply", "storesync", 2.5), row("night-2 apply", c, 4.0)], "night-2 apply ≤") == false)
        #expect(verdict([row("CSV export", "storesync", 1.0), row("CSV export", "sqlite3 -csv", 1.9)], "CSV") == false)
        #expect(verdict([row("RSS feed", "storesync", 0.7), row("RSS feed", "Python lxml", 4.9)], "RSS") == true)
        #expect(verdict([row("RSS feed", "storesync", 0.71), row("RSS feed", "Python lxml", 4.9)], "RSS") == false)
        #expect(verdict([row("HTTP end to end", "storesync", 14.3), row("HTTP end to end", "curl (fetch only)", 7.1)], "HTTP") == false)
        #expect(verdict([row("night-2 apply", "storesync", 1.0), row("night-2 apply, 0.1% churn", "storesync", 0.25)], "0.1%") == true)
        #expect(verdict([row("night-2 apply", "storesync", 1.0), row("night-2 apply, 0.1% churn", "storesync", 0.26)], "0.1%") == false)
    }

    @Test func aTargetWithoutItsFiguresIsLeftOut() {
        // storesync measured, the peer not installed: no verdict either way.
        let rows = [row("night-1 load", "storesync", 1.0), row("CSV export", "storesync", 0.1)]
        #expect(verdict(rows, "night-1 load") == nil)
        #expect(verdict(rows, "CSV") == nil)
        #expect(!Benchmark.targetVerdicts(rows).contains("C hash-diff"))
    }

    @Test func peakMemoryNamesTheHungriestTask() throws {
        let rows = [row("night-1 load", "storesync", 1, peakMB: 260), row("CSV export", "storesync", 1, peakMB: 40),
                    row("night-1 load", "Python sqlite3", 1, peakMB: 900)]
        let peak = try #require(Benchmark.targets(rows).first { $0.what.hasPrefix("peak memory") })
        #expect(peak.met == false)
        #expect(peak.detail.contains("night-1 load"))
        #expect(peak.detail.contains("260 MB"))
    }

    @Test func scalesReadAsPeopleWriteThem() {
        #expect(Benchmark.records(scale: "100k") == 100_000)
        #expect(Benchmark.records(scale: "1M") == 1_000_000)
        #expect(Benchmark.records(scale: "10m") == 10_000_000)
        #expect(Benchmark.records(scale: "2.5M") == 2_500_000)
        #expect(Benchmark.records(scale: "250000") == 250_000)
        #expect(Benchmark.records(scale: "ten") == nil)
        #expect(Benchmark.records(scale: "-1k") == nil)
        #expect(Benchmark.label(records: 10_000_000) == "10M")
        #expect(Benchmark.label(records: 2_500_000) == "2.5M")
        #expect(Benchmark.label(records: 100_000) == "100k")
    }

    @Test func growthComparesEachTaskWithTheSmallestSize() {
        let small = [row("night-2 apply", "storesync", 0.5, peakMB: 100), row("night-2 apply", "C hash-diff (libsqlite3)", 0.4)]
        let large = [row("night-2 apply", "storesync", 2.0, peakMB: 150)]
        let text = Benchmark.growth([(1_000_000, large), (100_000, small)])
        #expect(text.contains("100k s / MB"))
        #expect(text.contains("4.0×, 1.5×"))
        #expect(!text.contains("C hash-diff"))
        #expect(Benchmark.growth([(100_000, small)]).isEmpty)
    }
}
