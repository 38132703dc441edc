import Catalog
import Export
import Foundation
import Snapshot

extension RunReport {
    /// The human summary printed after a run: one line per source.
    public var summaryText: String {
        var lines: [String] = []
        var head = "storesync: job \(job), run \(runID)"
        if let night { head += ", simulated night \(night)" }
        if resumed { head += " (resumed)" }
        let unfinished = dryRun ? "" : "; unfinished, the next run resumes it (no removal pass ran, no data export was written)"
        if let interrupted {
            head += ": interrupted by \(interrupted) after \(String(format: "%.2f", seconds)) s" + unfinished
        } else if !deadlineLeft.isEmpty {
            head += ": stopped at its deadline after \(String(format: "%.2f", seconds)) s, \(outcome.rawValue)" + unfinished
        } else {
            head += ": \(outcome.rawValue) in \(String(format: "%.2f", seconds)) s"
        }
        if dryRun { head += " (dry run: nothing was written; these are the changes a run would make)" }
        lines.append(head)
        let header = ["source", "kind", "pages", "requests", "added", "changed", "unchanged", "removed", "seconds"]
        var rows = [header]
        for source in sources {
            let c = source.counts
            rows.append([source.name, source.kind, "\(c.pages)", "\(c.requests)", "\(c.added)", "\(c.changed)",
                         "\(c.unchanged)", "\(c.removed)", String(format: "%.2f", c.seconds)])
        }
        lines += Self.table(rows)
        let added = sources.reduce(0) { $0 + $1.counts.added }
        let changed = sources.reduce(0) { $0 + $1.counts.changed }
        let removed = sources.reduce(0) { $0 + $1.counts.removed }
        lines.append("record rows \(dryRun ? "a run would write" : "written"): \(recordRowsWritten) (added \(added) + changed \(changed) + removed \(removed)); "
                     + "requests \(fetch.requests), retries \(fetch.retries), throttled \(fetch.throttled), "
                     + "304 not modified \(fetch.notModified), unchanged pages not decoded \(sources.reduce(0) { $0 + $1.unchangedPages })")
        for source in sources where !source.gone.isEmpty {
            lines.append("gone: \(source.name) \(source.gone.count) scope\(source.gone.count == 1 ? "" : "s") answered 404/410 "
                         + "(\(source.gone.prefix(3).joined(separator: ", "))\(source.gone.count > 3 ? ", …" : "")); what they stored before is kept")
        }
        for source in sources where !source.recovered.isEmpty {
            lines.append("recovered: \(source.name) \(source.recovered.count) scope\(source.recovered.count == 1 ? "" : "s") not well-formed, "
                         + "read in recovery mode (\(source.recovered.prefix(3).joined(separator: ", "))\(source.recovered.count > 3 ? ", …" : "")); "
                         + "what they recovered is stored and nothing is removed on their account")
        }
        let drift = sources.filter { $0.drift > 0 }
        if !drift.isEmpty {
            lines.append("drift: " + drift.map { "\($0.name) \($0.drift) rows seen twice within a scope" }.joined(separator: ", ")
                         + " (the listing shifted while it was paged; each row was stored once)")
        }
        lines += Self.exportLines(exports)
        if let artwork { lines.append(artwork.summary) }
        if let enclosures { lines.append(enclosures.summary) }
        if let push { lines.append(push.summary) }
        if let pruned { lines.append(Self.retentionLine(pruned)) }
        for warning in warnings { lines.append("warning: \(warning)") }
        for notice in notices { lines.append("note: \(notice)") }
        for error in errors { lines.append("error: \(error)") }
        if let notify { lines.append(notify.description) }
        return lines.joined(separator: "\n")
    }

    /// What retention pruned: shown only when it pruned something.
    static func retentionLine(_ pruned: PruneResult) -> String {
        let cutoff: String
        switch pruned.cutoff {
        case .night(let night)?: cutoff = " (night \(night) and earlier)"
        case .date(let date)?: cutoff = " (started by \(ISO8601DateFormatter().string(from: date)))"
        case nil: cutoff = ""
        }
        var line = "retention: pruned \(pruned.runs) run\(pruned.runs == 1 ? "" : "s")\(cutoff) and "
            + "\(pruned.changes) change-log row\(pruned.changes == 1 ? "" : "s")"
        let megabytes = { (bytes: Int64) in String(format: "%.1f MB", Double(bytes) / 1_048_576) }
        switch pruned.reclaim {
        case .none: line += "; the space freed is reused by later runs"
        case .incremental, .full:
            line += "; store \(megabytes(pruned.bytesBefore)) → \(megabytes(pruned.bytesAfter))"
                + (pruned.reclaim == .full ? " (vacuumed; incremental from now on)" : " (incremental vacuum)")
        }
        return line
    }

    /// One line per file, except folders of many files (one feed per genre),
    /// which get one line each so the summary stays readable.
    static func exportLines(_ files: [ExportedFile]) -> [String] {
        var order: [String] = []
        var byFolder: [String: [ExportedFile]] = [:]
        for file in files {
            let folder = (file.path as NSString).deletingLastPathComponent
            if byFolder[folder] == nil { order.append(folder) }
            byFolder[folder, default: []].append(file)
        }
        return order.flatMap { folder -> [String] in
            let group = byFolder[folder] ?? []
            if group.count <= 5 {
                return group.map { "wrote \($0.path) (\($0.rows) rows, \($0.bytes) bytes)" }
            }
            let rows = group.reduce(0) { $0 + $1.rows }, bytes = group.reduce(0) { $0 + $1.bytes }
            return ["wrote \(group.count) files in \(folder)/ (\(rows) rows, \(bytes) bytes)"]
        }
    }

    static func table(_ rows: [[String]]) -> [String] {
        guard let first = rows.first else { return [] }
        var widths = Array(repeating: 0, count: first.count)
        for row in rows { for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) } }
        return rows.map { row in
            row.enumerated().map { i, cell in
                // Names left-aligned, numbers right-aligned.
                let pad = String(repeating: " ", count: widths[i] - cell.count)
                return i < 2 ? cell + pad : pad + cell
            }.joined(separator: "  ")
        }
    }
}
