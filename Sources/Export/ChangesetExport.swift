import Catalog
import Foundation
import Logging
import Snapshot

/// `kind: changeset`: what turns the consumer database published last into
/// tonight's, written while tonight's still sits under its temporary name
/// (``SQLiteExport/write(to:historyDays:history:changeset:context:)``), so
/// both versions are at hand and neither is copied.
///
/// Every row keeps its id from night to night (an entity's is its store id, a
/// change's its log id), so the changeset is the night's churn, not the
/// catalogue; the full-text indexes are not in it, as the triggers beside them
/// keep them in step where it is applied.
enum ChangesetExport {
    /// A changeset file's name: `{from}-{to}.changeset`.
    static func fileName(from: Int64, to: Int64) -> String { "\(from)-\(to).changeset" }

    /// The runs a changeset file's name spans, or nil for any other file.
    static func runs(inFileName name: String) -> (from: Int64, to: Int64)? {
        guard name.hasSuffix(".changeset") else { return nil }
        let parts = name.dropLast(".changeset".count).split(separator: "-", omittingEmptySubsequences: false)
        guard parts.count == 2, let from = Int64(parts[0]), let to = Int64(parts[1]),
              parts.allSatisfy({ $0.allSatisfy(\.isASCII) && $0.allSatisfy(\.isNumber) }) else { return nil }
        return (from, to)
    }

    /// Writes the changeset from the file published at `published` to the one
    /// built at `built`, in `spec.directory`. Returns the file written, or nil
    /// when there is none to write, with the reason logged: no earlier file
    /// (the first night), a schema that changed (a replica copies the
    /// database whole), or the same rows (a second export of the same run).
    static func write(from published: URL, to built: URL, spec: ChangesetExportSpec, context: ExportContext) throws -> ExportedFile? {
        let logger = context.logger ?? Logger(label: "storesync.export")
        let database = published.lastPathComponent
        guard FileManager.default.fileExists(atPath: published.path) else {
            logger.info("changeset: none tonight: no earlier \(database) to start from (replicas begin with a copy of this one)")
            return nil
        }
        let from: Int64
        switch try? SQLiteFile.value("SELECT max(id) FROM runs", at: published.path) {
        case .integer(let run)?: from = run
        default:
            logger.warning("changeset: none tonight: the earlier \(published.path) holds no runs table, so it is no storesync database a replica could hold; replicas copy \(database) whole")
            return nil
        }
        let diff: SQLiteChangeset.Diff
        do {
            diff = try SQLiteChangeset.diff(from: published.path, to: built.path)
        } catch SQLiteChangeset.ChangesetError.schemaChanged(let what) {
            logger.warning("changeset: none from run \(from): \(database)'s tables changed tonight (\(what)), which a changeset cannot carry; replicas copy \(database) whole")
            return nil
        }
        guard !diff.bytes.isEmpty else {
            logger.info("changeset: none: \(database) holds the same rows as the file it replaces (run \(from))")
            return nil
        }
        let directory = try PathTemplate.resolve(spec.directory, values: context.templateValues, inside: context.outputDirectory)
        let url = directory.appendingPathComponent(fileName(from: from, to: context.runID))
        try AtomicFile.write(diff.bytes, to: url)
        return ExportedFile(path: url.path, bytes: Int64(diff.bytes.count), rows: diff.changes)
    }

    /// Removes the changesets of `spec.directory` beyond the newest
    /// `spec.keep` (by the run they lead to); returns the paths removed. Only
    /// files named as this export names them are touched.
    static func prune(_ spec: ChangesetExportSpec, context: ExportContext) -> [String] {
        guard let directory = try? PathTemplate.resolve(spec.directory, values: context.templateValues, inside: context.outputDirectory),
              let names = try? FileManager.default.contentsOfDirectory(atPath: directory.path) else { return [] }
        let changesets = names.compactMap { name in runs(inFileName: name).map { (name, $0) } }
            .sorted { ($0.1.to, $0.1.from) > ($1.1.to, $1.1.from) }
        var removed: [String] = []
        for (name, _) in changesets.dropFirst(spec.keep) {
            let url = directory.appendingPathComponent(name)
            if (try? FileManager.default.removeItem(at: url)) != nil { removed.append(url.path) }
        }
        return removed
    }
}
