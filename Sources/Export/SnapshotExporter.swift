import Catalog
import Foundation
import Logging
import Snapshot

/// What an export is made from: one run's view of the snapshot.
package struct ExportContext: Sendable {
    package var store: any SnapshotStore
    package var runID: Int64
    package var jobName: String
    /// Every time written into a file comes from here, never from "now", so
    /// the same snapshot always gives byte-identical files (Invariant 4).
    package var runDate: Date
    package var outputDirectory: String
    /// Image URL → its copy in the artwork mirror (`artworkBaseURL/<file>`),
    /// for the images the mirror holds tonight; feeds publish the copy. Empty
    /// without a mirror, so feeds keep the original URLs.
    package var mirroredArtwork: [String: String] = [:]
    /// What the artwork mirror did in this run, for report.json; nil without one.
    package var artworkFigures: ArtworkMirrorFigures?

    /// The pixel size of an image URL when something knows it better than the
    /// URL does (the artwork mirror reads its files' headers).
    package var imageSize: @Sendable (String) -> (width: Int, height: Int)? = { _ in nil }
    /// The job's `artworkSize`: what store artwork URLs in feeds are rewritten to.
    package var artworkSize = ArtworkURL.defaultSize
    /// Where exports log what needs a look but fails nothing (colliding file names).
    package var logger: Logger?
    /// What the lint found in this run's feeds, for the run report.
    package var lint: [(file: String, finding: FeedLint)] = []
    /// `keep: N` of the job's exports, by the export's template (``ExportSpec/target``):
    /// after writing, older files of that template are pruned to the newest N.
    package var keep: [String: Int] = [:]

    package init(store: any SnapshotStore, runID: Int64, jobName: String, runDate: Date, outputDirectory: String) {
        self.store = store
        self.runID = runID
        self.jobName = jobName
        self.runDate = runDate
        self.outputDirectory = outputDirectory
    }

    func url(_ relative: String) -> URL {
        URL(fileURLWithPath: outputDirectory).appendingPathComponent(relative)
    }

    /// `url`'s copy in the artwork mirror when the mirror holds it, else `url`
    /// itself: a failed download leaves the original link, never a broken one.
    package func mirroredArtwork(_ url: String?) -> String? {
        url.map { mirroredArtwork[$0] ?? $0 }
    }

    /// Values for `{date}` and `{job}` in file-name templates.
    var templateValues: [String: String] {
        ["date": FeedExport.dateStamp(runDate), "job": jobName]
    }
}

/// A file an export wrote.
public struct ExportedFile: Sendable, Equatable {
    public var path: String
    public var bytes: Int64
    /// Rows or items written.
    public var rows: Int
    /// What the podcast feed lint found in it (feeds podcast apps subscribe to).
    public var lint: [FeedLint] = []
    /// A `strict` feed that broke a requirement: the previous file was kept.
    public var withheld = false
    /// The export's file-name template, for exports that write one file per group.
    public var template: String?

    public init(path: String, bytes: Int64, rows: Int) {
        self.path = path
        self.bytes = bytes
        self.rows = rows
    }
}

/// One finding of the podcast feed lint, as reports show it.
public struct FeedLint: Sendable, Equatable, CustomStringConvertible {
    /// `requirement` (Apple Podcasts refuses it) or `recommendation`.
    public var severity: String
    /// A stable rule name, e.g. `channel-image-size`.
    public var rule: String
    /// `channel` or `item N (guid …)`.
    public var place: String
    public var message: String

    public var isRequirement: Bool { severity == "requirement" }
    public var description: String { "\(place): \(message) [\(rule)]" }
}

/// Runs a job's exports against the snapshot.
package enum SnapshotExporter {
    /// Writes every export, each to a temporary file renamed into place; the
    /// first failure stops the exports and leaves that file's previous version intact.
    package static func export(_ specs: [ExportSpec], context: ExportContext, logger: Logger) throws(StoreSyncError) -> [ExportedFile] {
        // Every file stays inside the output folder, symbolic links resolved (AtomicFile refuses the rest).
        do {
            var context = context
            context.logger = context.logger ?? logger
            return try AtomicFile.$confinedTo.withValue(URL(fileURLWithPath: context.outputDirectory)) {
                try exportConfined(specs, context: context, logger: logger)
            }
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .exportFailed(path: context.outputDirectory, reason: "\(error)")
        }
    }

    private static func exportConfined(_ specs: [ExportSpec], context: ExportContext, logger: Logger) throws(StoreSyncError) -> [ExportedFile] {
        var files: [ExportedFile] = []
        for spec in specs {
            do {
                switch spec {
                case .sqlite(let path, let historyDays):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    var file = try SQLiteExport.write(to: url, historyDays: historyDays, context: context)
                    file.template = path
                    files.append(file)
                case .csvTables(let directory, let options):
                    let url = try PathTemplate.resolve(directory, values: context.templateValues, inside: context.outputDirectory)
                    files += try CSVExport.writeTables(directory: url, options: options, context: context)
                case .csvChanges(let path, let options):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    var file = try CSVExport.writeChanges(to: url, options: options, context: context)
                    file.template = path
                    files.append(file)
                case .feed(let feed):
                    files += try FeedExport.write(feed, context: context).map { file in
                        var file = file
                        file.template = spec.target
                        return file
                    }
                case .opml(let opml):
                    files += try FeedExport.writeOPML(opml, context: context).map { file in
                        var file = file
                        file.template = spec.target
                        return file
                    }
                case .runReport(let path):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    var file = try RunReportExport.writeJSON(to: url, context: context)
                    file.template = path
                    files.append(file)
                case .metrics(let path):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    files.append(try RunReportExport.writeMetrics(to: url, context: context))
                case .artwork:
                    // Downloading needs the crawler's Fetcher, which Export does not see: the
                    // run fills the mirror before these exports (ArtworkMirrorSync in SyncEngine)
                    // and hands the feeds `context.mirroredArtwork`.
                    break
                }
            } catch let error as StoreSyncError {
                throw error
            } catch {
                throw .exportFailed(path: context.url(PathTemplate.expand(spec.target, context.templateValues)).path, reason: "\(error)",
                                    remedy: "The previous file was left intact; the next run (or `storesync export`) writes it again",
                                    cause: error)
            }
        }
        for file in files { logger.debug("exported \(file.path) (\(file.rows) rows, \(file.bytes) bytes)") }
        // `keep: N` prunes only after every export succeeded, like the sweep: a failed night removes nothing.
        for spec in specs {
            guard let keep = context.keep[spec.target] else { continue }
            let written = files.filter { $0.template == spec.target }.map(\.path)
            for path in KeptFiles.prune(template: spec.target, keep: keep, written: written, outputDirectory: context.outputDirectory) {
                logger.info("removed \(path): older than the newest \(keep) the export keeps (keep: \(keep))")
            }
        }
        let removed = StaleFiles.sweep(specs, written: files, outputDirectory: context.outputDirectory, kept: Set(context.keep.keys))
        for path in removed { logger.info("removed \(path): its group (a genre or country) is no longer in the feed") }
        return files
    }

    /// `path` relative to the output folder, as reports and logs name files
    /// (unchanged when it is outside it).
    package static func relativePath(_ path: String, in outputDirectory: String) -> String {
        let base = URL(fileURLWithPath: outputDirectory).standardizedFileURL.path + "/"
        let standardized = URL(fileURLWithPath: path).standardizedFileURL.path
        return standardized.hasPrefix(base) ? String(standardized.dropFirst(base.count)) : standardized
    }

    static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? 0
    }
}

/// Files of per-group exports (`feeds/genres/{genre}.xml`) whose group is gone.
///
/// Each such export's files are listed in `.storesync-exports.json` in the
/// output folder. After every export of a run has succeeded, a file the list
/// had and this run did not write (a genre that no longer exists) is
/// removed, with its archive pages, so the folder holds what the snapshot
/// says; a failed export removes nothing. Templates with `{date}` keep their
/// history and are left alone, as is anything storesync did not list.
enum StaleFiles {
    static let manifestName = ".storesync-exports.json"

    /// Removes the stale files and records the new lists; returns the removed paths.
    @discardableResult
    static func sweep(_ specs: [ExportSpec], written: [ExportedFile], outputDirectory: String, kept: Set<String> = []) -> [String] {
        let root = URL(fileURLWithPath: outputDirectory).standardizedFileURL
        let manifestURL = root.appendingPathComponent(manifestName)
        var manifest: [String: JSONValue] = [:]
        if let data = try? Data(contentsOf: manifestURL), let value = try? JSONParser.parse(Array(data)), let object = value.objectValue {
            manifest = object
        }
        var removed: [String] = []
        var changed = false
        for spec in specs {
            let template = spec.target
            let variables = PathTemplate.variables(in: template)
            // Dated files are a history, and `keep: N` decides how much of it stays: never stale.
            guard !variables.isDisjoint(with: ["genre", "country"]), !variables.contains("date"), !kept.contains(template) else { continue }
            let now = Set(written.filter { $0.template == template }.map { SnapshotExporter.relativePath($0.path, in: root.path) })
            let before = Set(manifest[template]?.arrayValue?.compactMap(\.stringValue) ?? [])
            for path in before.subtracting(now).sorted() {
                let url = root.appendingPathComponent(path).standardizedFileURL
                // Only what the list names, and only inside the output folder.
                guard url.path.hasPrefix(root.path + "/"), !path.contains("..") else { continue }
                if (try? FileManager.default.removeItem(at: url)) != nil { removed.append(url.path) }
                let index = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).archive.json")
                try? FileManager.default.removeItem(at: index)
            }
            if before != now {
                manifest[template] = .array(now.sorted().map(JSONValue.string))
                changed = true
            }
        }
        if changed { try? AtomicFile.write(CanonicalJSON.encode(.object(manifest)), to: manifestURL) }
        return removed
    }
}

/// `keep: N`: the dated files of one export beyond the newest N.
///
/// The files are those in the folder of tonight's file whose name the
/// export's template could have produced (``PathTemplate/matches(_:template:)``),
/// so nothing else in the folder is touched. Newest is by name, which for
/// `{date}` (`yyyy-MM-dd`) is by date; tonight's file always stays, so
/// `storesync export` of an older run does not delete what it just wrote.
enum KeptFiles {
    /// Removes the older files; returns the removed paths.
    @discardableResult
    static func prune(template: String, keep: Int, written: [String], outputDirectory: String) -> [String] {
        let root = URL(fileURLWithPath: outputDirectory).standardizedFileURL.path + "/"
        let pattern = String(template.split(separator: "/", omittingEmptySubsequences: false).last ?? "")
        let tonight = Set(written.map { URL(fileURLWithPath: $0).standardizedFileURL.path })
        var removed: [String] = []
        func parent(of path: String) -> String { URL(fileURLWithPath: path).deletingLastPathComponent().path }
        for folder in Set(tonight.map(parent(of:))).sorted() {
            // Only inside the output folder (Invariant 7).
            guard (folder + "/").hasPrefix(root) else { continue }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
            let older = names.filter { PathTemplate.matches($0, template: pattern) }
                .map { folder + "/" + $0 }
                .filter { !tonight.contains($0) }
                .sorted(by: >)
            let room = max(0, keep - tonight.filter { parent(of: $0) == folder }.count)
            for path in older.dropFirst(room) where (try? FileManager.default.removeItem(atPath: path)) != nil {
                removed.append(path)
            }
        }
        return removed
    }
}
