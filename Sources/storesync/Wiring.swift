import ArgumentParser
import Catalog
import Crawl
import Logging
import StoreSim
import SyncEngine

/// The one place the CLI decides what a job's runs talk to: a job with a
/// `simulator:` section gets the embedded simulator, every other job the
/// real services. The engine itself never links the simulator.
enum Wiring {
    /// Job-file rules: the standard source kinds, and the simulator's faults checked at load.
    static let rules = JobFileRules(checkFaults: SimulatedServices.checkFaults)

    /// Loads a job with the process's environment and the command's `--set` overrides.
    static func load(_ path: String, sets: [String] = []) throws(StoreSyncError) -> JobSpec {
        try JobLoader.load(path: path, rules: rules, inputs: JobInputs(sets: sets))
    }

    static func environment(for job: JobSpec, logger: Logger) -> RunEnvironment {
        RunEnvironment(services: job.simulator.map(SimulatedServices.init) ?? LiveServices(), logger: logger)
    }
}

/// `--set KEY=VALUE`: one job setting changed for this run only.
struct JobOverrideOptions: ParsableArguments {
    @Option(name: .customLong("set"), help: ArgumentHelp(
        "Override one job setting for this run, e.g. --set http.timeoutSeconds=5 or "
            + "--set sources.podcasts.removal.maxRatio=0.5 (repeatable; validated like the job file).",
        valueName: "KEY=VALUE"))
    var sets: [String] = []
}
