import Catalog
import Export
import Foundation
import Snapshot

extension MachineOutput {
    /// Writes one entity's story, every version the change log keeps with
    /// what changed, to the open descriptor `fd` (`storesync history`):
    /// text for people, or JSON (docs/cli-json.md). Returns how many versions.
    public static func writeHistory(job: JobSpec, entity name: String, key: String, json: Bool, to fd: Int32,
                                    store backend: any StoreBackend = DefaultBackend()) throws(StoreSyncError) -> Int {
        guard let entity = EntityKind(rawValue: name), entity != .record else {
            let names = EntityKind.allCases.filter { $0 != .record }.map(\.rawValue).joined(separator: ", ")
            throw StoreSyncError(.invalidArguments, "'\(name)' is not an entity", place: .store(job.storePath),
                                 remedy: "Name one of: \(names)")
        }
        guard try backend.exists(job.storePath) else {
            throw .storage(path: job.storePath, reason: "no snapshot yet: run `storesync run \(job.file)` first")
        }
        let store = try backend.openReadOnly(job.storePath)
        guard let history = try store.entityHistory(of: entity, key: key) else {
            throw .storage(path: job.storePath, reason: "no \(entity.rawValue) with key '\(ExportText.clean(key))' in the snapshot or its change log",
                           remedy: "`storesync changes \(job.file)` lists what a run changed; a key removed longer ago than the store's retention is gone")
        }
        var times: [Int64: Date] = [:]
        for run in Set(history.versions.flatMap { [$0.validFromRun, $0.validToRun] }.compactMap { $0 } + [history.firstSeenRun, history.lastChangedRun].compactMap { $0 }) {
            times[run] = try store.run(run)?.startedAt
        }
        var sink = OutputSink(fileDescriptor: fd, path: "standard output")
        do {
            try sink.write(json ? PrettyJSON.render(historyJSON(history, job: job, times: times)) + "\n"
                                : historyText(history, times: times))
            try sink.flush()
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .storage(path: job.storePath, reason: "cannot write the history of \(entity.rawValue) \(key): \(error)")
        }
        return history.versions.count
    }

    static func historyJSON(_ history: EntityHistory, job: JobSpec, times: [Int64: Date]) -> JSONValue {
        func at(_ run: Int64?) -> JSONValue {
            guard let run else { return .null }
            return .object(["run": .int(run), "at": iso(times[run])])
        }
        let versions: [JSONValue] = history.versions.map { version in
            .object([
                "version": .int(Int64(version.number)), "event": .string(version.event.rawValue),
                "validFrom": at(version.validFromRun), "validTo": at(version.validToRun),
                "deleted": .bool(version.deleted), "sources": .array(version.sources.map(JSONValue.string)),
                "changes": .array(version.changes.map { change in
                    .object(["field": .string(change.field), "before": value(change.before), "after": value(change.after)])
                }),
                "fields": value(version.payload),
            ])
        }
        return ExportText.clean(.object([
            "job": .string(job.name), "entity": .string(history.entity.rawValue), "key": .string(history.key),
            "firstSeen": at(history.firstSeenRun), "lastChanged": at(history.lastChangedRun),
            "versions": .array(versions),
        ]))
    }

    static func historyText(_ history: EntityHistory, times: [Int64: Date]) -> String {
        let formatter = ISO8601DateFormatter()
        func at(_ run: Int64?) -> String {
            guard let run else { return "before the log" }
            return "run \(run)" + (times[run].map { " (\(formatter.string(from: $0)))" } ?? "")
        }
        let name = history.versions.last.flatMap { version -> String? in
            guard case .object(let fields)? = try? JSONParser.parse(version.payload), case .string(let name)? = fields["name"] else { return nil }
            return name
        }
        var lines = ["\(history.entity.rawValue) \(history.key)" + (name.map { ": \($0)" } ?? "")]
        var held = history.firstSeenRun.map { "first seen \(at($0))" } ?? "removed"
        if let changed = history.lastChangedRun { held += ", last changed \(at(changed))" }
        lines.append("  \(held); \(history.versions.count) version\(history.versions.count == 1 ? "" : "s")")
        for version in history.versions {
            let until = version.validToRun.map { "until \(at($0))" } ?? (version.deleted ? "still removed" : "current")
            var line = "v\(version.number)  \(version.event.rawValue)  from \(at(version.validFromRun)), \(until)"
            if !version.sources.isEmpty { line += "  [\(version.sources.joined(separator: ", "))]" }
            lines.append(line)
            for change in version.changes {
                lines.append("      \(change.field): \(change.before ?? "null") → \(change.after ?? "null")")
            }
        }
        return lines.map(ExportText.clean).joined(separator: "\n") + "\n"
    }
}
