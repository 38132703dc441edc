import Catalog
import Foundation
import Snapshot

/// What `storesync status` shows: the last runs and where every scope stands.
public struct JobStatus: Sendable {
    public var job: String
    public var storePath: String
    public var runs: [RunRow]
    public var counts: [Int64: [SourceCounts]]
    public var scopes: [ScopeRow]
    /// Another process is running this job now.
    public var lockedBy: String?

    /// Reads the job's store without writing to it, and asks whether a run
    /// holds its lock without taking the lock, so a run starting meanwhile is
    /// never turned away. A job that never ran has no store: empty status.
    /// A store that is missing or empty where history was (its marker, or
    /// the output folder's, says so) is lost, and `status` says so as `run`
    /// does (`history-missing`, exit 1), never "no runs yet".
    public static func load(job: JobSpec, runs limit: Int = 10,
                            store backend: any StoreBackend = DefaultBackend()) throws(StoreSyncError) -> JobStatus {
        var status = JobStatus(job: job.name, storePath: job.storePath, runs: [], counts: [:], scopes: [], lockedBy: nil)
        status.lockedBy = backend.lockHolder(job.storePath)
        let evidence = backend.historyEvidence(job.storePath) ?? OutputMarker(job: job).evidence()
        let command = "storesync run \(job.file)"
        // A server that cannot be reached says nothing about whether the store exists:
        // `exists` throws it (`storeUnreachable`), so `status` says so, as `run` does, never "no runs yet".
        guard try backend.exists(job.storePath) else {
            if let evidence { throw .historyMissing(store: job.storePath, state: "missing", evidence: evidence, command: command) }
            return status
        }
        // SQLite reads a zero-length file as an empty database of no schema: a failed copy, not an old store.
        let size = (try? FileManager.default.attributesOfItem(atPath: job.storePath)[.size] as? Int) ?? nil
        if let evidence, size == 0 {
            throw .historyMissing(store: job.storePath, state: "empty (a zero-length file)", evidence: evidence, command: command)
        }
        let store = try backend.openReadOnly(job.storePath)
        status.runs = try store.runs(limit: limit)
        if let evidence, status.runs.isEmpty {
            throw .historyMissing(store: job.storePath, state: "empty (no run in it)", evidence: evidence, command: command)
        }
        for run in status.runs { status.counts[run.id] = try store.sourceCounts(runID: run.id) }
        status.scopes = try store.scopeStates()
        return status
    }

    /// A run whose exports were not written: still exporting while the lock is held, else not written.
    private func exportsCell(_ run: RunRow) -> String {
        if run.status == .failed { return "failed" }
        return lockedBy != nil && run.id == runs.first?.id ? "exporting" : "exports not written"
    }

    public var text: String {
        var lines = ["job \(job) · store \(storePath)"]
        if let lockedBy { lines.append("running now (\(lockedBy))") }
        guard !runs.isEmpty else {
            lines.append("no runs yet: `storesync run` the job first")
            return lines.joined(separator: "\n")
        }
        lines.append("")
        lines.append("last runs, newest first:")
        var table = [["run", "night", "status", "started (UTC)", "seconds", "requests", "304", "added", "changed", "removed"]]
        let formatter = ISO8601DateFormatter()
        for run in runs {
            let counts = self.counts[run.id] ?? []
            table.append([
                "\(run.id)" + (run.attempts > 1 ? " (×\(run.attempts))" : ""), run.night.map(String.init) ?? "-",
                // Unfinished and nobody running it: killed, stopped by a signal or at its deadline; the next run resumes it.
                run.exportsPending ? exportsCell(run) : run.outcome(runningNow: lockedBy != nil && run.id == runs.first?.id).status,
                formatter.string(from: run.startedAt), String(format: "%.1f", run.totals.seconds),
                "\(run.totals.requests.requests)", "\(run.totals.requests.notModified)",
                "\(counts.reduce(0) { $0 + $1.added })", "\(counts.reduce(0) { $0 + $1.changed })",
                "\(counts.reduce(0) { $0 + $1.removed })",
            ])
        }
        lines += RunReport.table(table)
        for run in runs {
            if let message = run.message { lines.append("run \(run.id): \(message.prefix(300))") }
            if run.exportsPending, run.id == runs.first?.id {
                lines.append("run \(run.id): crawled and stored (\(run.status.rawValue)), but its exports were not written"
                             + (lockedBy == nil ? " (stopped while exporting, or an export failed)" : " yet")
                             + ": the next `storesync run` of the same night writes them, or `storesync export` now")
            }
        }
        lines.append("")
        lines.append("scopes (state in the run that touched them last):")
        var bySource: [String: [ScopeRow]] = [:]
        for scope in scopes { bySource[scope.source, default: []].append(scope) }
        for source in bySource.keys.sorted() {
            let rows = bySource[source] ?? []
            let states = Dictionary(grouping: rows, by: \.state.rawValue).mapValues(\.count)
            lines.append("  \(source): \(rows.count) scopes · "
                         + states.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
                         + " · \(rows.reduce(0) { $0 + $1.records }) records")
            // Complete scopes are the normal case; list the others, they need attention.
            for row in rows where row.state != .complete {
                var line = "    \(row.scope): \(row.state) in run \(row.runID), next page \(row.nextPage)"
                if let error = row.error { line += " · \(error.message.prefix(300))" }
                lines.append(line)
            }
        }
        return lines.joined(separator: "\n")
    }
}
