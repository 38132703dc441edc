import Catalog
import Export
import Foundation
import Snapshot

/// What `--json` and `storesync changes` print: machine-readable views of
/// the store, read-only (a read-only store file is enough). The schemas are
/// documented in docs/cli-json.md.
public enum MachineOutput {
    /// The run report of run `runID` as JSON: the very document the
    /// `run-report` export writes to `report.json`. `report` adds what the
    /// store does not keep (the artwork mirror's figures, the feed lint).
    public static func runReportJSON(job: JobSpec, runID: Int64, report: RunReport? = nil,
                                     store backend: any StoreBackend = DefaultBackend()) throws(StoreSyncError) -> String {
        let store = try backend.openReadOnly(job.storePath)
        guard let run = try store.run(runID) else {
            throw .storage(path: job.storePath, reason: "run \(runID) is not in the snapshot",
                           remedy: "`storesync status \(job.file)` lists the runs it holds")
        }
        var context = ExportContext(store: store, runID: run.id, jobName: job.name, runDate: run.startedAt,
                                    outputDirectory: job.outputDirectory)
        context.artworkFigures = report?.artwork
        context.enclosureFigures = report?.enclosures
        context.pushFigures = report?.push
        context.recovered = Dictionary((report?.sources ?? []).map { ($0.name, $0.recovered) }, uniquingKeysWith: +)
        context.lint = (report?.exports ?? []).flatMap { file in file.lint.map { (file.path, $0) } }
        context.withheld = WithheldCounts(report?.exports ?? [])
        do {
            return PrettyJSON.render(try RunReportExport.document(context).0) + "\n"
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: job.storePath, reason: "cannot read run \(runID)'s report: \(error)")
        }
    }

    /// `storesync status --json`: the runs and scopes `status` shows. Run
    /// members are named as in the run report.
    /// `run --json` for a run that never started or stopped before it had a
    /// report (the lock held, an invalid job, a lost store): the report's own
    /// top-level shape, with no run, the outcome as `status` (the error's
    /// code: `locked`, `invalid-job`, `store-lost`…), the process's exit code
    /// and the error, so a script reading stdout is never left with nothing.
    public static func refusedRunJSON(jobName: String?, error: StoreSyncError) -> String {
        let outcome = NightOutcome.refused(error)
        let document: JSONValue = .object([
            "schemaVersion": .int(Int64(RunReportExport.schemaVersion)),
            "job": jobName.map(JSONValue.string) ?? .null, "run": .null, "night": .null,
            "status": .string(outcome.status), "exitCode": outcome.exitCode.map { .int(Int64($0)) } ?? .null,
            "sources": .array([]), "warnings": .array([]), "errors": .array([RunProblem(error).json]),
        ])
        return PrettyJSON.render(document) + "\n"
    }

    public static func statusJSON(_ status: JobStatus) -> String {
        let runs: [JSONValue] = status.runs.map { run in
            let counts = status.counts[run.id] ?? []
            let requests = run.totals.requests
            // The newest run is running only while a process holds the lock; an older one never is.
            let outcome = run.outcome(runningNow: status.lockedBy != nil && run.id == status.runs.first?.id)
            return .object([
                "run": .int(run.id), "night": run.night.map { .int(Int64($0)) } ?? .null,
                // A run whose exports were not written has not ended as a run ends: no
                // status of a finished run, no exit code (the next run writes them).
                "status": .string(outcome.status),
                "exitCode": outcome.exitCode.map { .int(Int64($0)) } ?? .null,
                "exported": .bool(run.status != .running && !run.exportsPending),
                "attempts": .int(Int64(run.attempts)),
                "startedAt": iso(run.startedAt), "finishedAt": iso(run.finishedAt), "seconds": .double(run.totals.seconds),
                "requests": .object([
                    "total": .int(Int64(requests.requests)), "retries": .int(Int64(requests.retries)),
                    "throttled": .int(Int64(requests.throttled)), "notModified": .int(Int64(requests.notModified)),
                    "failures": .int(Int64(requests.failures)),
                ]),
                "added": .int(Int64(counts.reduce(0) { $0 + $1.added })),
                "changed": .int(Int64(counts.reduce(0) { $0 + $1.changed })),
                "removed": .int(Int64(counts.reduce(0) { $0 + $1.removed })),
                "message": run.message.map(JSONValue.string) ?? .null,
            ])
        }
        let scopes: [JSONValue] = status.scopes.map { scope in
            .object([
                "source": .string(scope.source), "scope": .string(scope.scope), "run": .int(scope.runID),
                "state": .string(scope.state.rawValue), "nextPage": .int(Int64(scope.nextPage)),
                "error": scope.error?.json ?? .null, "records": .int(Int64(scope.records)),
            ])
        }
        let document: JSONValue = .object([
            "job": .string(status.job), "store": .string(status.storePath),
            "runningNow": status.lockedBy.map(JSONValue.string) ?? .null,
            "runs": .array(runs), "scopes": .array(scopes),
        ])
        return PrettyJSON.render(document) + "\n"
    }

    /// How `storesync changes` prints a run's changes.
    public enum ChangesFormat: Sendable {
        /// `changes.csv`'s columns (with the job's `changes-csv` options, if it has that export).
        case csv
        /// A JSON object: the run and its changes, members named like the CSV's columns.
        case json
        /// An aligned table for people.
        case text
    }

    /// Writes run `runID`'s changes (nil: the last finished run) to the open
    /// descriptor `fd`, streamed from the store; returns the run and the rows.
    public static func writeChanges(job: JobSpec, runID: Int64?, format: ChangesFormat, to fd: Int32,
                                    store backend: any StoreBackend = DefaultBackend()) throws(StoreSyncError) -> (run: Int64, rows: Int) {
        guard try backend.exists(job.storePath) else {
            throw .storage(path: job.storePath, reason: "no snapshot yet: run `storesync run \(job.file)` first")
        }
        return try writeChanges(job: job, store: try backend.openReadOnly(job.storePath), runID: runID, format: format, to: fd)
    }

    /// ``writeChanges(job:runID:format:to:store:)`` from an open store; `dryRun`:
    /// the changes of a dry run's store copy, which a run would write (the JSON
    /// says `"dryRun": true`, the text says so in its first line).
    static func writeChanges(job: JobSpec, store: any SnapshotStore, runID: Int64?, format: ChangesFormat, to fd: Int32,
                             dryRun: Bool = false) throws(StoreSyncError) -> (run: Int64, rows: Int) {
        let run: RunRow
        if let runID {
            guard let found = try store.run(runID) else {
                throw .storage(path: job.storePath, reason: "run \(runID) is not in the snapshot (pruned by retention, or not run yet)",
                               remedy: "`storesync status \(job.file)` lists the runs it holds")
            }
            run = found
        } else {
            guard let last = try store.runs(limit: 50).first(where: { $0.status != .running }) else {
                throw .storage(path: job.storePath, reason: "no finished run yet: run `storesync run \(job.file)` first")
            }
            run = last
        }
        var sink = OutputSink(fileDescriptor: fd, path: "standard output")
        var rows = 0
        do {
            switch format {
            case .csv:
                let options = job.exports.lazy.compactMap { spec -> CSVExportOptions? in
                    if case .csvChanges(_, let options) = spec { return options }
                    return nil
                }.first ?? CSVExportOptions()
                rows = try CSVExport.writeChanges(runID: run.id, store: store, options: options, into: &sink)
            case .json:
                // Streamed one change at a time: a night's change log can be large.
                try sink.write("{\n  \"job\": \(CanonicalJSON.string(.string(job.name))),\n  \"run\": \(run.id),\n"
                               + (dryRun ? "  \"dryRun\": true,\n" : "") + "  \"changes\": [")
                try store.forEachChange(runID: run.id, order: .record) { change in
                    try sink.write((rows == 0 ? "\n    " : ",\n    ") + CanonicalJSON.string(changeJSON(change)))
                    rows += 1
                }
                try sink.write(rows == 0 ? "]\n}\n" : "\n  ]\n}\n")
            case .text:
                try sink.write(dryRun
                    ? "changes a run would write (dry run of run \(run.id); nothing was written):\n"
                    : "run \(run.id) (\(run.status.rawValue), started \(ISO8601DateFormatter().string(from: run.startedAt)))\n")
                try store.forEachChange(runID: run.id, order: .record) { change in
                    var line = "\(change.op) \(change.source) \(change.entity) \(ExportText.clean(change.key))"
                    if let field = change.field {
                        line += " \(ExportText.clean(field)): \(change.before ?? "null") → \(change.after ?? "null")"
                    }
                    try sink.write(line + "\n")
                    rows += 1
                }
                try sink.write("\(rows) change\(rows == 1 ? "" : "s")\n")
            }
            try sink.flush()
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: job.storePath, reason: "cannot list run \(run.id)'s changes: \(error)")
        }
        return (run.id, rows)
    }

    /// One change: the CSV's columns, `before`/`after` as the JSON values they are,
    /// text cleaned by the exports' character rule (``ExportText``) like the CSV's.
    static func changeJSON(_ change: ChangeRow) -> JSONValue {
        ExportText.clean(rawChangeJSON(change))
    }

    /// A stored canonical-JSON value as the JSON it is (text that is not JSON stays text).
    static func value(_ json: String?) -> JSONValue {
        guard let json else { return .null }
        return (try? JSONParser.parse(json)) ?? .string(json)
    }

    static func rawChangeJSON(_ change: ChangeRow) -> JSONValue {
        .object([
            "run": .int(change.runID), "source": .string(change.source), "op": .string(change.op),
            "entity": .string(change.entity), "key": .string(change.key),
            "field": change.field.map(JSONValue.string) ?? .null, "before": value(change.before), "after": value(change.after),
        ])
    }

    static func iso(_ date: Date?) -> JSONValue {
        guard let date else { return .null }
        return .string(ISO8601DateFormatter().string(from: date))
    }
}
