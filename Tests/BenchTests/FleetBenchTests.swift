import Bench
import Testing

/// The fleet task's verdicts (issue 17) and the figures it reads from each
/// process's run report: no timing is measured here, only what is made of it.
@Suite struct FleetBenchTests {
    static let limited = Benchmark.fleetTask(limited: true, requestsPerMinute: 600)
    static let open = Benchmark.fleetTask(limited: false, requestsPerMinute: 600)

    func row(_ task: String, _ tool: String, _ median: Double, pages: Int = 480) -> Benchmark.Row {
        Benchmark.Row(task: task, tool: tool, median: median, records: pages, peakRSS: 40 << 20, runs: 3, note: "")
    }

    func targets(_ rows: [Benchmark.Row]) -> [String: Bool] {
        var out: [String: Bool] = [:]
        for target in Benchmark.targets(rows) where target.what.hasPrefix("fleet") { out[target.what] = target.met }
        return out
    }

    @Test func workersMeetTheirShareOfOneWorkersTimeOrNot() {
        let rows = [
            row(Self.limited, "storesync", 50),
            row(Self.limited, Benchmark.fleetTool(workers: 1), 50),
            // 1.25/2 of 50 s is 31.25 s; 0.30 of it 15 s; 0.16 of it 8 s.
            row(Self.limited, Benchmark.fleetTool(workers: 2), 31.25),
            row(Self.limited, Benchmark.fleetTool(workers: 4), 15.1),
            row(Self.limited, Benchmark.fleetTool(workers: 8), 8),
        ]
        let verdicts = targets(rows)
        #expect(verdicts["\(Self.limited): 2 workers ≤ 0.62× 1 worker's time"] == true)
        #expect(verdicts["\(Self.limited): 4 workers ≤ 0.30× 1 worker's time"] == false)
        #expect(verdicts["\(Self.limited): 8 workers ≤ 0.16× 1 worker's time"] == true)
        // The SQLite process is beside the workers, not one of them.
        #expect(verdicts.count == 3)
        #expect(Benchmark.targetVerdicts(rows).contains("missed \(Self.limited): 4 workers"))
    }

    @Test func postgresCostPerPageIsAgainstSQLitesWithNoLimit() {
        // Per page: 6.4 s / 500 = 12.8 ms against 5 s / 500 = 10 ms: 1.28×, met.
        let met = [row(Self.open, "storesync", 5, pages: 500), row(Self.open, Benchmark.fleetTool(workers: 1), 6.4, pages: 500)]
        #expect(targets(met) == ["fleet, no limit: PostgreSQL's time per page ≤ 1.3× SQLite's": true])
        // The same time over fewer pages is a higher cost per page: missed.
        let missed = [row(Self.open, "storesync", 5, pages: 500), row(Self.open, Benchmark.fleetTool(workers: 1), 6.6, pages: 400)]
        #expect(targets(missed) == ["fleet, no limit: PostgreSQL's time per page ≤ 1.3× SQLite's": false])
        #expect(Benchmark.targets(missed).first { $0.what.hasPrefix("fleet") }?.detail == "16.5 ms vs 10.0 ms a page = 1.65×")
    }

    @Test func noVerdictWithoutOneWorkersRun() {
        // The 1-worker run failed: nothing to compare the others with.
        let rows = [row(Self.limited, "storesync", 50), row(Self.limited, Benchmark.fleetTool(workers: 2), 20),
                    row(Self.open, "storesync", 5)]
        #expect(targets(rows).isEmpty)
    }

    @Test func figuresAreReadFromTheRunReport() throws {
        let report = """
            {"run": 3, "requests": {"total": 530, "retries": 50, "throttled": 48, "notModified": 0, "failures": 0},
             "sources": [{"name": "podcasts", "pages": 300}, {"name": "market", "pages": 180}]}
            """
        let figures = try #require(Benchmark.RunFigures(report: Array(report.utf8)))
        #expect(figures == Benchmark.RunFigures(pages: 480, throttled: 48))
        #expect(Benchmark.RunFigures(report: Array("storesync: the store is locked".utf8)) == nil)
        #expect(Benchmark.RunFigures(report: []) == nil)
    }

    @Test func noteGivesPagesPerSecondAndRefusals() {
        #expect(Benchmark.fleetNote("2 processes, one PostgreSQL", pages: 480, seconds: 24, throttled: 12)
                    == "2 processes, one PostgreSQL; 480 pages, 20.0 pages/s; 12 throttled (429)")
    }
}
