import Catalog
@testable import Export
import Foundation
import Logging
import Snapshot
import Testing
import TestSupport

/// Runs `python3 Tests/scripts/check_metrics.py` (Prometheus's own parser).
enum PrometheusCheck {
    static let script: URL = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("scripts/check_metrics.py")
    static let available: Bool = (try? Python.runWaitingHere(["-c", "import prometheus_client.parser"]).status) == 0
    static let skipMessage: Comment = "python3 with prometheus_client is not installed (python3 -m pip install prometheus_client)"
}

/// The Prometheus text format, checked strictly without Python: every sample
/// line is `name{label="value",…} number` of a family declared by `# TYPE`
/// before it, label names are valid, and no series appears twice.
enum StrictPrometheusText {
    static func problems(_ text: String) -> [String] {
        var problems: [String] = []
        var typed = Set<String>()
        var series = Set<String>()
        let name = #/[a-zA-Z_:][a-zA-Z0-9_:]*/#
        let sample = #/^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\\n]|\\["\\n])*",?)*)\} (-?[0-9]+(?:\.[0-9]+)?(?:e[+-]?[0-9]+)?)$/#
        guard text.hasSuffix("\n") else { return ["the file does not end with a line break"] }
        for line in text.split(separator: "\n", omittingEmptySubsequences: false).dropLast() {
            if line.hasPrefix("# TYPE ") {
                let parts = line.split(separator: " ")
                guard parts.count == 4, (try? name.wholeMatch(in: parts[2])) != nil,
                      ["gauge", "counter", "untyped", "summary", "histogram"].contains(parts[3]) else {
                    problems.append("bad TYPE line: \(line)"); continue
                }
                if !typed.insert(String(parts[2])).inserted { problems.append("family declared twice: \(parts[2])") }
            } else if line.hasPrefix("# HELP ") {
                continue
            } else if let match = try? sample.wholeMatch(in: line) {
                if !typed.contains(String(match.1)) { problems.append("sample before its TYPE: \(line)") }
                if !series.insert(String(match.1) + "{" + match.2 + "}").inserted { problems.append("duplicate series: \(line)") }
                if match.2.hasPrefix("job=") || match.2.contains(",job=") { problems.append("label 'job' clashes with Prometheus's target label: \(line)") }
            } else {
                problems.append("not a sample, HELP or TYPE line: \(line)")
            }
        }
        return problems
    }
}

/// The metrics file as monitoring reads it: a last-success time that
/// survives failed nights, and a job label Prometheus does not rename.
@Suite struct MetricsTests {
    let directory = TestPaths.temporaryDirectory("metrics")
    static let night1 = Date(timeIntervalSince1970: 1_795_308_886)

    /// Three nights: ok, failed, failed. Returns the store and the runs' ids.
    func store() throws -> (SQLSnapshotStore, [Int64]) {
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("snapshot.sqlite").path)
        var ids: [Int64] = []
        for (n, status) in [RunStatus.ok, .failed, .failed].enumerated() {
            let start = Self.night1.addingTimeInterval(Double(n) * 86_400)
            let run = try store.beginRun(job: "night \"job\"", at: start, simulated: false)
            try store.finishRun(run.id, status: status, message: nil, at: start.addingTimeInterval(60))
            ids.append(run.id)
        }
        return (store, ids)
    }

    func metrics(_ store: SQLSnapshotStore, run: Int64) throws -> String {
        let context = ExportContext(store: store, runID: run, jobName: "m", runDate: Self.night1,
                                    outputDirectory: directory.appendingPathComponent("out").path)
        let files = try SnapshotExporter.export([.metrics(path: "storesync.prom")], context: context, logger: Logger(label: "t"))
        return try String(contentsOfFile: files[0].path, encoding: .utf8)
    }

    func value(_ text: String, _ name: String) -> String? {
        text.split(separator: "\n").first { $0.hasPrefix(name + "{") }.map { String($0.split(separator: " ").last!) }
    }

    @Test func lastSuccessIsKeptAcrossFailedNights() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, ids) = try store()
        let firstFinished = String(Int64(Self.night1.timeIntervalSince1970) + 60)
        let lastFinished = String(Int64(Self.night1.timeIntervalSince1970) + 2 * 86_400 + 60)

        let afterOK = try metrics(store, run: ids[0])
        #expect(value(afterOK, "storesync_last_success_timestamp_seconds") == firstFinished)
        #expect(value(afterOK, "storesync_last_run_timestamp_seconds") == firstFinished)

        let afterFailures = try metrics(store, run: ids[2])
        #expect(value(afterFailures, "storesync_run_success") == "0")
        #expect(value(afterFailures, "storesync_last_success_timestamp_seconds") == firstFinished)
        #expect(value(afterFailures, "storesync_last_run_timestamp_seconds") == lastFinished)
        #expect(afterFailures.contains(#"storesync_run_success{storesync_job="night \"job\""} 0"#), "\(afterFailures)")
        #expect(StrictPrometheusText.problems(afterFailures) == [])
    }

    @Test func noOkRunYetLeavesTheLastSuccessOut() throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, ids) = try store()
        _ = try store.pruneHistory(olderThan: 1, before: ids[2])
        let text = try metrics(store, run: ids[2])
        // Declared, without a sample: "never succeeded" is absence, which `absent()` alerts on.
        #expect(text.contains("# TYPE storesync_last_success_timestamp_seconds gauge"))
        #expect(value(text, "storesync_last_success_timestamp_seconds") == nil)
        #expect(StrictPrometheusText.problems(text) == [])
    }

    @Test func theStrictCheckCatchesWhatPrometheusRefuses() {
        #expect(StrictPrometheusText.problems("# TYPE a gauge\na{job=\"x\"} 1\n").count == 1)
        #expect(StrictPrometheusText.problems("a{x=\"1\"} 1\n").count == 1)
        #expect(StrictPrometheusText.problems("# TYPE a gauge\na{x=\"1\"} one\n").count == 1)
        #expect(StrictPrometheusText.problems("# TYPE a gauge\na{x=\"1\"} 1\na{x=\"1\"} 2\n").count == 1)
    }

    @Test(.enabled(if: PrometheusCheck.available, PrometheusCheck.skipMessage))
    func prometheusOwnParserReadsTheFile() async throws {
        defer { try? FileManager.default.removeItem(at: directory) }
        let (store, ids) = try store()
        let text = try metrics(store, run: ids[2])
        let file = directory.appendingPathComponent("out/storesync.prom")
        #expect(text.isEmpty == false)
        let result = try await Python.run([PrometheusCheck.script.path, file.path])
        #expect(result.status == 0, "check_metrics.py failed:\n\(result.output)")
        #expect(result.output.contains("storesync_last_success_timestamp_seconds {storesync_job=night \"job\"} \(Int64(Self.night1.timeIntervalSince1970) + 60)"),
                "\(result.output)")
    }
}

/// `keep: N` and templates in every export path.
@Suite struct KeepTests {
    let root = TestPaths.temporaryDirectory("keep")

    func names(_ folder: String = "") throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path).filter { !$0.hasPrefix(".") }.sorted()
    }

    func prune(_ template: String, keep: Int, tonight: [String], manifest: inout DatedManifest,
               protected: Set<String> = []) -> KeptFiles.Outcome {
        KeptFiles.prune(template: template, keep: keep, written: tonight.map { root.appendingPathComponent($0).path },
                        outputDirectory: root.path, manifest: &manifest, jobName: "night job", protected: ProtectedFiles(protected))
    }

    func write(_ names: [String], in folder: String = "") throws {
        let url = root.appendingPathComponent(folder)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        for name in names { try Data("x".utf8).write(to: url.appendingPathComponent(name)) }
    }

    @Test func onlyFilesTheManifestSaysTheTemplateWroteArePruned() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        // Dated files from before the manifest, and files that merely look like the template's.
        try write(["changes-2026-10-01.csv", "changes-2026-10-02.csv", "changes.csv", "changes-budget.csv", "notes.txt",
                   "changes-2026-11-01.csv.bak", ".changes-2026-11-09.csv.tmp"], in: "daily")
        var manifest = DatedManifest()
        for day in ["2026-11-01", "2026-11-02", "2026-11-03", "2026-11-04"] {
            try write(["changes-\(day).csv"], in: "daily")
            let outcome = prune("daily/changes-{date}.csv", keep: 2, tonight: ["daily/changes-\(day).csv"], manifest: &manifest)
            // What storesync cannot prove it wrote is named, never removed.
            #expect(outcome.unlisted == ["daily/changes-2026-10-01.csv", "daily/changes-2026-10-02.csv"], "\(outcome.unlisted)")
        }
        #expect(try names("daily") == ["changes-2026-10-01.csv", "changes-2026-10-02.csv", "changes-2026-11-01.csv.bak",
                                       "changes-2026-11-03.csv", "changes-2026-11-04.csv", "changes-budget.csv", "changes.csv", "notes.txt"])
        #expect(manifest.files["daily/changes-{date}.csv"] == ["daily/changes-2026-11-03.csv", "daily/changes-2026-11-04.csv"])

        // Tonight wrote an older date (`storesync export` of an old run): it stays, with the newest other one.
        try write(["changes-2026-11-02.csv"], in: "daily")
        let outcome = prune("daily/changes-{date}.csv", keep: 2, tonight: ["daily/changes-2026-11-02.csv"], manifest: &manifest)
        #expect(outcome.removed.map { URL(fileURLWithPath: $0).lastPathComponent } == ["changes-2026-11-03.csv"])
        #expect(try names("daily").filter { $0.hasPrefix("changes-2026-11") && $0.hasSuffix(".csv") }
                == ["changes-2026-11-02.csv", "changes-2026-11-04.csv"])
    }

    /// `{date}.sqlite` beside the store, `{date}.csv` beside a user's `budget.csv`: the
    /// template matches neither, and even a manifest that names the store cannot remove it.
    @Test func neitherTheStoreNorAUsersFileIsEverPruned() throws {
        defer { try? FileManager.default.removeItem(at: root) }
        try write(["snapshot.sqlite", "snapshot.sqlite-wal", "budget.csv", "changes.csv"])
        var manifest = DatedManifest()
        manifest.files["{date}.sqlite"] = ["snapshot.sqlite", "snapshot.sqlite-wal"]
        let store = root.appendingPathComponent("snapshot.sqlite").path
        for day in ["2026-11-01", "2026-11-02", "2026-11-03"] {
            try write(["\(day).sqlite", "\(day).csv"])
            let sqlite = prune("{date}.sqlite", keep: 1, tonight: ["\(day).sqlite"], manifest: &manifest, protected: [store, store + "-wal"])
            #expect(sqlite.unlisted.isEmpty, "\(sqlite.unlisted)")
            _ = prune("{date}.csv", keep: 2, tonight: ["\(day).csv"], manifest: &manifest)
        }
        #expect(try names() == ["2026-11-02.csv", "2026-11-03.csv", "2026-11-03.sqlite", "budget.csv", "changes.csv",
                                "snapshot.sqlite", "snapshot.sqlite-wal"])
    }

    /// `{job}` is the job's own name and the date a date, in the strict pattern.
    @Test func theDatedPatternReadsOnlyNamesTheTemplateWrites() {
        let name = DatedName(template: "{job}-{genre}-{date}.xml", jobName: "night job")
        #expect(name.parts("night-job-Arts-2026-11-01.xml")?.date == "2026-11-01")
        #expect(name.parts("night-job-Arts-2026-11-01.xml")?.group == "Arts")
        #expect(name.parts("other-Arts-2026-11-01.xml") == nil)
        #expect(name.parts("night-job-Arts-latest.xml") == nil)
        #expect(DatedName(template: "{date}.csv", jobName: "j").parts("budget.csv") == nil)
    }

    @Test func sqliteCSVAndChangesPathsExpandTheirTemplates() async throws {
        defer { try? FileManager.default.removeItem(at: root) }
        let store = try SQLSnapshotStore(path: root.appendingPathComponent("snapshot.sqlite").path)
        let run = try store.beginRun(job: "t", at: MetricsTests.night1, simulated: false)
        try store.finishRun(run.id, status: .ok, message: nil, at: MetricsTests.night1)
        let context = ExportContext(store: store, runID: run.id, jobName: "tpl", runDate: MetricsTests.night1,
                                    outputDirectory: root.appendingPathComponent("out").path)
        let files = try SnapshotExporter.export([
            .sqlite(path: "{job}-{date}.sqlite"), .csvTables(directory: "tables-{date}", options: .init()),
            .csvChanges(path: "changes-{date}.csv", options: .init()),
        ], context: context, logger: Logger(label: "t"))
        let written = Set(files.map { SnapshotExporter.relativePath($0.path, in: context.outputDirectory) })
        #expect(written.contains("tpl-2026-11-22.sqlite"), "\(written)")
        #expect(written.contains("changes-2026-11-22.csv"), "\(written)")
        #expect(written.contains { $0.hasPrefix("tables-2026-11-22/") }, "\(written)")
        #expect(!written.contains { $0.contains("{") }, "\(written)")
    }
}
