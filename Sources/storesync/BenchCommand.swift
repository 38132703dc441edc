import ArgumentParser
import Bench
import Foundation

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measure storesync beside its peers (../shared/bench) on the same generated data.",
        discussion: """
            Generates 1M iTunes-like records (100k with --quick) with gen_catalog.py, then times, as whole \
            processes, storesync and every peer it finds: night-1 load, night-2 apply (checked against the \
            generator's truth), CSV export, an RSS feed of 100k items, and a crawl of the simulator over \
            loopback HTTP (100 records a page, the most the marketplace serves), and every export of the demo job over a store of 200k products \
            and 200k podcasts (20k with --quick; --export-store N), and (task fleet, with PostgreSQL installed) one night of a \
            search job crawled from a simulator that limits each client to 600 requests a minute, by one SQLite process and \
            by 1, 2, 4 and 8 workers on a throwaway PostgreSQL, then again with no limit. Prints medians, records/s, peak RSS \
            and each tool's time relative to storesync, then each performance target as met or missed (most are a ratio \
            to a peer in the same run). --scale 100k 1M 10M runs the whole benchmark at each size and prints how each \
            task's time and memory grew; it refuses at once a size the work folder's disk cannot hold. Build with -c \
            release for meaningful figures.
            """
    )

    @Flag(help: "100k records instead of 1M: the everyday check.")
    var quick = false

    @Option(help: "Night-1 records (overrides --quick).")
    var records: Int?

    @Option(parsing: .upToNextOption,
            help: "Catalogue sizes, e.g. --scale 100k 1M 10M: the whole benchmark at each, then how each task grew.")
    var scale: [String] = []

    @Option(help: "Repetitions per tool (slow peers run once).")
    var repetitions = 3

    @Option(help: "Folder for generated data, databases and outputs (kept between runs).")
    var work = "bench-data"

    @Option(help: "The peers' folder, holding gen_catalog.py.")
    var peers = "../shared/bench"

    @Option(parsing: .upToNextOption, help: "Only these tasks: load, apply, csv, rss, http, exports, fleet, postgres.")
    var task: [String] = []

    @Option(help: "Products and podcasts each in the exports task's store (default 200000; 20000 with --quick).")
    var exportStore: Int?

    @Option(help: "The demo job whose exports the exports task measures.")
    var demoJob = "jobs/demo.yml"

    @Option(parsing: .upToNextOption, help: "The fleet task's numbers of workers, each measured.")
    var fleetWorkers: [Int] = [1, 2, 4, 8]

    @Option(help: "The fleet task simulator's limit per client, requests a minute (the iTunes Store's is about 20).")
    var clientRequestsPerMinute: Double = 600

    func validate() throws {
        for size in scale where Benchmark.records(scale: size) == nil {
            throw ValidationError("--scale \(size): expected a number of records such as 100k, 1M or 10M")
        }
        if !scale.isEmpty, records != nil { throw ValidationError("--scale and --records both set the size: pass one") }
        if fleetWorkers.isEmpty || fleetWorkers.contains(where: { !(1...64).contains($0) }) {
            throw ValidationError("--fleet-workers: numbers of workers from 1 to 64, e.g. --fleet-workers 1 2 4")
        }
        if !(clientRequestsPerMinute > 0 && clientRequestsPerMinute.isFinite) {
            throw ValidationError("--client-requests-per-minute must be a positive number")
        }
    }

    func run() async throws {
        let executable = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? URL(fileURLWithPath: CommandLine.arguments[0]).standardizedFileURL.path
        let sizes = scale.isEmpty ? [records ?? (quick ? 100_000 : 1_000_000)] : scale.compactMap(Benchmark.records(scale:))
        var runs: [(records: Int, rows: [Benchmark.Row])] = []
        for size in sizes {
            let options = Benchmark.Options(
                records: size, repetitions: max(1, repetitions),
                workDirectory: URL(fileURLWithPath: work).standardizedFileURL.path,
                peersDirectory: URL(fileURLWithPath: peers).standardizedFileURL.path, executable: executable,
                tasks: Set(task), exportStoreSize: exportStore ?? (size < 1_000_000 ? 20_000 : 200_000),
                demoJob: URL(fileURLWithPath: demoJob).standardizedFileURL.path,
                fleetWorkers: fleetWorkers.contains(1) ? fleetWorkers : [1] + fleetWorkers,
                clientRequestsPerMinute: clientRequestsPerMinute)
            let bench = Benchmark(options: options) { FileHandle.standardError.write(Data(($0 + "\n").utf8)) }
            do {
                let rows = try bench.run()
                if sizes.count > 1 { print("## \(Benchmark.label(records: size)) records\n") }
                print(Benchmark.table(rows))
                print("")
                print(Benchmark.peerSummary(rows))
                print("")
                // The catalogue's size says nothing about the fleet task (one night of a search job).
                let sized = options.tasks.isEmpty || !options.tasks.subtracting(["fleet"]).isEmpty
                print(sized ? "targets (\(options.records) records; the RSS task writes at most 100k items):" : "targets:")
                print(Benchmark.targetVerdicts(rows))
                print("")
                runs.append((size, rows))
            } catch {
                printError("\(error)")
                throw ExitCode(ExitStatus.failed.rawValue)
            }
        }
        if runs.count > 1 {
            print("growth with the catalogue (storesync; medians):")
            print(Benchmark.growth(runs))
        }
    }
}

/// Work the benchmark times as a process of its own.
struct BenchTask: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench-task", abstract: "One task of `storesync bench` (internal).", shouldDisplay: false)

    @Argument(help: "rss")
    var task: String

    @Argument var arguments: [String] = []

    func run() async throws {
        guard task == "rss", arguments.count == 3, let n = Int(arguments[0]) else {
            throw ValidationError("usage: storesync bench-task rss N IN.jsonl OUT.xml")
        }
        try RSSTask.run(records: n, input: arguments[1], output: arguments[2])
    }
}
