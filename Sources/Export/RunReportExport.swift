import Catalog
import Foundation
import Snapshot

/// The per-run report (JSON) and the Prometheus textfile, both built from what
/// the store recorded about the run, so `storesync export` rewrites them alike.
package enum RunReportExport {

    struct EntityCounts {
        var added = 0, changed = 0, removed = 0, records = 0
    }

    struct Facts {
        var run: RunRow
        var sources: [SourceCounts]
        /// source → entity → counts (changes of this run, records now).
        var entities: [String: [String: EntityCounts]]
    }

    static func facts(_ context: ExportContext) throws -> Facts {
        guard let run = try context.store.run(context.runID) else {
            throw StoreSyncError.exportFailed(path: "run report", reason: "run \(context.runID) is not in the snapshot")
        }
        let sources = try context.store.sourceCounts(runID: context.runID)
        var entities: [String: [String: EntityCounts]] = [:]
        for tally in try context.store.entityTallies(runID: context.runID) {
            entities[tally.source, default: [:]][tally.entity] = EntityCounts(
                added: tally.added, changed: tally.changed, removed: tally.removed, records: tally.records)
        }
        return Facts(run: run, sources: sources, entities: entities)
    }

    /// The artwork mirror's night: only in runs that mirrored (the store keeps no copy of it).
    static func artworkJSON(_ a: ArtworkMirrorFigures) -> JSONValue {
        .object([
            "files": .int(Int64(a.files)), "bytes": .int(a.bytes), "budgetBytes": .int(a.budgetBytes),
            "wanted": .int(Int64(a.wanted)), "published": .int(Int64(a.published)), "requests": .int(Int64(a.requests)),
            "notModified": .int(Int64(a.notModified)), "downloaded": .int(Int64(a.downloaded)),
            "downloadedBytes": .int(a.downloadedBytes), "evicted": .int(Int64(a.evicted)),
            "rejected": .int(Int64(a.rejected)), "failed": .int(Int64(a.failed)),
        ])
    }

    static func iso(_ date: Date?) -> JSONValue {
        guard let date else { return .null }
        return .string(ISO8601DateFormatter().string(from: date))
    }

    /// The night a report describes, as every surface tells it. A report is
    /// written at the end of a run (its exports, reports last) or when it
    /// stopped early (a signal, the deadline): never while it is still running.
    static func account(_ run: RunRow) -> NightOutcome {
        NightOutcome.of(status: run.status, stopped: run.stopped, exportsPending: false, runningNow: false)
    }

    /// Statuses the metrics give a sample each, so an alert can name any of them.
    static let metricStatuses = ["ok", "partial", "failed", "interrupted", "deadline", "running"]

    /// The JSON summary: counts per source and entity, requests, 304s,
    /// retries, throttles, durations, warnings, errors and the exit status.
    static func writeJSON(to url: URL, context: ExportContext) throws -> ExportedFile {
        let (document, rows) = try document(context)
        let text = PrettyJSON.render(document) + "\n"
        try AtomicFile.write(Array(text.utf8), to: url)
        return ExportedFile(path: url.path, bytes: Int64(text.utf8.count), rows: rows)
    }

    /// The version of the `report.json` schema (docs/cli-json.md). 2: warnings
    /// and errors are objects (code, source, scope, url, message), not strings.
    package static let schemaVersion = 2

    /// The run report of `context.runID` as `report.json` holds it, and its
    /// number of sources. `storesync run --json` prints the same document, so
    /// there is one schema (docs/cli-json.md).
    package static func document(_ context: ExportContext) throws -> (JSONValue, rows: Int) {
        let facts = try facts(context)
        let run = facts.run
        let sources: [JSONValue] = facts.sources.map { c in
            let entities = (facts.entities[c.source] ?? [:]).mapValues { e -> JSONValue in
                .object(["added": .int(Int64(e.added)), "changed": .int(Int64(e.changed)),
                         "removed": .int(Int64(e.removed)), "records": .int(Int64(e.records))])
            }
            var source: [String: JSONValue] = [
                "name": .string(c.source), "pages": .int(Int64(c.pages)), "requests": .int(Int64(c.requests)),
                "added": .int(Int64(c.added)), "changed": .int(Int64(c.changed)), "unchanged": .int(Int64(c.unchanged)),
                "removed": .int(Int64(c.removed)), "skippedRows": .int(Int64(c.skipped)),
                "recordRowsWritten": .int(Int64(c.recordRowsWritten)), "seconds": .double(c.seconds),
                "unchangedPages": .int(Int64(c.unchangedPages)), "driftRows": .int(Int64(c.drift)),
                "entities": .object(entities),
            ]
            // Feeds read past what XML cannot hold: where, and what was skipped.
            if let recovered = context.recovered[c.source], !recovered.isEmpty {
                source["recovered"] = .array(recovered.map(JSONValue.string))
            }
            return .object(source)
        }
        let outcome = account(run)
        var document: JSONValue = .object([
            "schemaVersion": .int(Int64(schemaVersion)),
            "job": .string(run.job), "run": .int(run.id), "night": run.night.map { .int(Int64($0)) } ?? .null,
            "status": .string(outcome.status), "exitCode": outcome.exitCode.map { .int(Int64($0)) } ?? .null,
            "attempts": .int(Int64(run.attempts)),
            "startedAt": iso(run.startedAt), "finishedAt": iso(run.finishedAt), "seconds": .double(run.totals.seconds),
            "requests": .object([
                "total": .int(Int64(run.totals.requests.requests)), "retries": .int(Int64(run.totals.requests.retries)),
                "throttled": .int(Int64(run.totals.requests.throttled)), "notModified": .int(Int64(run.totals.requests.notModified)),
                "failures": .int(Int64(run.totals.requests.failures)),
            ]),
            "sources": .array(sources),
            // Objects since schema 2: a code to branch on, where (source, scope, URL), the text.
            "warnings": .array(run.totals.warnings.map(\.json)),
            "errors": .array(run.totals.errors.map(\.json)),
            // Fields a source sent for the first time tonight, or whose type changed (kept in the raw payload).
            "schemaChanges": .array(try context.store.schemaChanges(runID: run.id).map { change in
                .object(["source": .string(change.source), "entity": .string(change.entity.rawValue), "field": .string(change.field),
                         "kind": .string(change.kind), "previousKind": change.previousKind.map(JSONValue.string) ?? .null])
            }),
            // What the podcast feed lint found in this run's feeds (Apple's requirements and recommendations).
            "feedLint": .array(context.lint.map { entry in
                .object(["file": .string(SnapshotExporter.relativePath(entry.file, in: context.outputDirectory)), "severity": .string(entry.finding.severity),
                         "rule": .string(entry.finding.rule), "place": .string(entry.finding.place),
                         "message": .string(entry.finding.message)])
            }),
        ])
        if case .object(var fields) = document {
            // What the exports left out of what they publish, and why (the log names each).
            fields["withheld"] = .object([
                "links": .int(Int64(context.withheld.links)), "podcastTags": .int(Int64(context.withheld.podcastTags)),
                "goneEnclosures": .int(Int64(context.withheld.goneEnclosures)),
            ])
            document = .object(fields)
        }
        if case .object(var fields) = document, let enclosures = context.enclosureFigures {
            fields["enclosures"] = .object([
                "wanted": .int(Int64(enclosures.wanted)), "remembered": .int(Int64(enclosures.remembered)),
                "checked": .int(Int64(enclosures.checked)), "requests": .int(Int64(enclosures.requests)),
                "notModified": .int(Int64(enclosures.notModified)),
                "gone": .int(Int64(enclosures.gone)), "withheld": .int(Int64(enclosures.withheld)),
                "rangesRefused": .int(Int64(enclosures.rangesRefused)), "unknown": .int(Int64(enclosures.unknown)),
                "lengthsLearned": .int(Int64(enclosures.lengthsLearned)), "typesLearned": .int(Int64(enclosures.typesLearned)),
            ])
            document = .object(fields)
        }
        if case .object(var fields) = document, let push = context.pushFigures {
            fields["push"] = .object([
                "feeds": .int(Int64(push.feeds)), "changed": .int(Int64(push.changed)), "unchanged": .int(Int64(push.unchanged)),
                "hubPings": .int(Int64(push.hubPings)), "hubFailures": .int(Int64(push.hubFailures)),
                "podpings": .int(Int64(push.podpings)), "podpingFailures": .int(Int64(push.podpingFailures)),
            ])
            document = .object(fields)
        }
        if case .object(var fields) = document, let artwork = context.artworkFigures {
            fields["artwork"] = artworkJSON(artwork)
            document = .object(fields)
        }
        return (document, facts.sources.count)
    }

    /// Prometheus text format for node_exporter's textfile collector (which
    /// needs the atomic rename AtomicFile gives, or it may read half a file).
    static func writeMetrics(to url: URL, context: ExportContext) throws -> ExportedFile {
        let facts = try facts(context)
        let run = facts.run
        // Not `job`: Prometheus sets its own `job` target label on every scraped
        // series, and a clash renames ours to `exported_job`.
        let job = "storesync_job=\"\(label(run.job))\""
        var lines: [String] = []
        func metric(_ name: String, _ help: String, type: String = "gauge", samples: [(String, String)]) {
            lines.append("# HELP \(name) \(help)")
            lines.append("# TYPE \(name) \(type)")
            for (labels, value) in samples { lines.append("\(name){\(labels)} \(value)") }
        }
        let outcome = account(run)
        metric("storesync_run_success", "1 if the last run ended ok, else 0.", samples: [(job, outcome.isOK ? "1" : "0")])
        metric("storesync_run_status", "The last run's status (1 for the status it ended with).",
               samples: metricStatuses.map { ("\(job),status=\"\($0)\"", outcome.status == $0 ? "1" : "0") })
        // Absent when no exit code is known (a run killed without a word).
        metric("storesync_run_exit_code", "The exit code of the last run.", samples: outcome.exitCode.map { [(job, String($0))] } ?? [])
        metric("storesync_run_timestamp_seconds", "When the last run started (Unix time).",
               samples: [(job, number(run.startedAt.timeIntervalSince1970))])
        // Alerting wants "no success for N hours", which must survive failed
        // nights: the newest ok run in the store's history, this one included.
        // A run is stamped when its crawl finished (the store's time, never "now",
        // so the same snapshot writes the same file).
        func stamp(_ row: RunRow) -> String { number((row.finishedAt ?? row.startedAt).timeIntervalSince1970) }
        metric("storesync_last_run_timestamp_seconds", "When the last run finished its crawl (Unix time).",
               samples: [(job, stamp(run))])
        // The runs table has one row per night (bounded by retention), so reading it whole is cheap.
        let lastSuccess = run.status == .ok ? run
            : try context.store.runs(limit: Int(Int32.max)).first { $0.id <= run.id && $0.status == .ok }
        metric("storesync_last_success_timestamp_seconds",
               "When the last run that ended ok finished its crawl (Unix time); absent until one has.",
               samples: lastSuccess.map { [(job, stamp($0))] } ?? [])
        metric("storesync_run_duration_seconds", "How long the last run took.", samples: [(job, number(run.totals.seconds))])
        metric("storesync_run_id", "The id of the last run in the snapshot.", samples: [(job, String(run.id))])
        metric("storesync_requests", "HTTP requests of the last run, by kind.", samples: [
            ("\(job),kind=\"all\"", String(run.totals.requests.requests)), ("\(job),kind=\"retry\"", String(run.totals.requests.retries)),
            ("\(job),kind=\"throttled\"", String(run.totals.requests.throttled)),
            ("\(job),kind=\"not_modified\"", String(run.totals.requests.notModified)),
            ("\(job),kind=\"failed\"", String(run.totals.requests.failures)),
        ])
        metric("storesync_warnings", "Warnings of the last run.", samples: [(job, String(run.totals.warnings.count))])
        metric("storesync_withheld", "What the last run's exports left out of what they publish, by why.", samples: [
            ("\(job),kind=\"link\"", String(context.withheld.links)),
            ("\(job),kind=\"podcast_tag\"", String(context.withheld.podcastTags)),
            ("\(job),kind=\"gone_enclosure\"", String(context.withheld.goneEnclosures)),
        ])
        if let push = context.pushFigures {
            metric("storesync_feed_push_feeds", "Feed documents that tell subscribers of changes, by whether tonight changed them.", samples: [
                ("\(job),state=\"changed\"", String(push.changed)), ("\(job),state=\"unchanged\"", String(push.unchanged)),
            ])
            metric("storesync_feed_push_pings", "Pings the last run sent for its changed feeds, by service and result.", samples: [
                ("\(job),service=\"websub\",result=\"ok\"", String(push.hubPings)),
                ("\(job),service=\"websub\",result=\"failed\"", String(push.hubFailures)),
                ("\(job),service=\"podping\",result=\"ok\"", String(push.podpings)),
                ("\(job),service=\"podping\",result=\"failed\"", String(push.podpingFailures)),
            ])
        }
        var records: [(String, String)] = []
        var pages: [(String, String)] = []
        var seconds: [(String, String)] = []
        for c in facts.sources {
            let source = "\(job),source=\"\(label(c.source))\""
            for (op, n) in [("added", c.added), ("changed", c.changed), ("unchanged", c.unchanged), ("removed", c.removed)] {
                records.append(("\(source),op=\"\(op)\"", String(n)))
            }
            pages.append((source, String(c.pages)))
            seconds.append((source, number(c.seconds)))
        }
        metric("storesync_source_records", "Records the last run saw per source, by outcome.", samples: records)
        metric("storesync_source_pages", "Pages the last run stored per source.", samples: pages)
        metric("storesync_source_seconds", "Seconds the last run spent per source.", samples: seconds)
        var current: [(String, String)] = []
        for (source, entities) in facts.entities.sorted(by: { $0.key < $1.key }) {
            for (entity, counts) in entities.sorted(by: { $0.key < $1.key }) {
                current.append(("\(job),source=\"\(label(source))\",entity=\"\(label(entity))\"", String(counts.records)))
            }
        }
        metric("storesync_snapshot_records", "Records in the snapshot after the last run.", samples: current)
        let text = lines.joined(separator: "\n") + "\n"
        try AtomicFile.write(Array(text.utf8), to: url)
        return ExportedFile(path: url.path, bytes: Int64(text.utf8.count), rows: lines.filter { !$0.hasPrefix("#") }.count)
    }

    /// Label values escape backslash, quote and newline (exposition format).
    static func label(_ value: String) -> String {
        value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }

    static func number(_ value: Double) -> String {
        value.rounded() == value && abs(value) < 1e15 ? String(Int64(value)) : String(format: "%.6f", value)
    }
}

/// JSON for people and scripts alike: two-space indent, keys sorted, text
/// cleaned by the exports' character rule (``ExportText``).
package enum PrettyJSON {
    package static func render(_ value: JSONValue, indent: String = "") -> String {
        renderClean(ExportText.clean(value), indent: indent)
    }

    /// Publishes `document` rendered at `url` (a description beside other
    /// exports: no rows of its own); a failure names that file.
    static func write(_ document: JSONValue, to url: URL) throws -> ExportedFile {
        let text = render(document) + "\n"
        do {
            try AtomicFile.write(Array(text.utf8), to: url)
        } catch {
            throw StoreSyncError.exportFailed(path: url.path, reason: "\(error)", cause: error)
        }
        return ExportedFile(path: url.path, bytes: Int64(text.utf8.count), rows: 0)
    }

    private static func renderClean(_ value: JSONValue, indent: String) -> String {
        let inner = indent + "  "
        switch value {
        case .array(let elements):
            if elements.isEmpty { return "[]" }
            return "[\n" + elements.map { inner + renderClean($0, indent: inner) }.joined(separator: ",\n") + "\n\(indent)]"
        case .object(let members):
            if members.isEmpty { return "{}" }
            let keys = members.keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            return "{\n" + keys.map { key in
                inner + CanonicalJSON.string(.string(key)) + ": " + renderClean(members[key]!, indent: inner)
            }.joined(separator: ",\n") + "\n\(indent)}"
        case .double(let d):
            // Durations: milliseconds are enough, and keep the file stable to read.
            if !d.isFinite { return "null" }
            return d.rounded() == d && abs(d) < 1e15 ? String(Int64(d)) : String(format: "%.3f", d)
        default:
            return CanonicalJSON.string(value)
        }
    }

}
