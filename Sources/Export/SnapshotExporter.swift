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
    /// What enclosure checks learnt of published media files, by URL (feeds
    /// with `checkEnclosures` publish by it); and what they did tonight, for
    /// report.json (nil when no feed checks its enclosures).
    package var enclosureFacts: [String: EnclosureFact] = [:]
    /// Per source, the scopes read in recovery mode tonight, each with its first
    /// error (and the bytes passed over), for report.json; the run knows them,
    /// the store keeps no copy (a report rebuilt by `storesync export` lacks them).
    package var recovered: [String: [String]] = [:]
    package var enclosureFigures: EnclosureCheckFigures?
    /// What the pushes of tonight's changed feeds came to, for report.json; nil when no feed pushes.
    package var pushFigures: FeedPushFigures?

    /// The pixel size of an image URL when something knows it better than the
    /// URL does (the artwork mirror reads its files' headers).
    package var imageSize: @Sendable (String) -> (width: Int, height: Int)? = { _ in nil }
    /// The job's `artworkSize`: what store artwork URLs in feeds are rewritten to.
    package var artworkSize = ArtworkURL.defaultSize
    /// Where exports log what needs a look but fails nothing (colliding file names).
    package var logger: Logger?
    /// What the lint found in this run's feeds, for the run report.
    package var lint: [(file: String, finding: FeedLint)] = []
    /// What this run's exports withheld (``ExportedFile/linksWithheld`` and the
    /// rest, summed), for the run report and the metrics.
    package var withheld = WithheldCounts()
    /// `keep: N` of the job's exports, by the export's template (``ExportSpec/target``):
    /// after writing, older files of that template are pruned to the newest N.
    package var keep: [String: Int] = [:]
    /// Files no export may ever remove, whatever a template matches: the
    /// snapshot store and its companions (`-wal`, `-shm`, `.lock`, …) when
    /// the store sits in the output folder.
    package var protectedPaths: Set<String> = []
    /// The output folder is where the job publishes (a night, `storesync
    /// export`), not a copy (`--as-of`): its feed files are kept as this
    /// run's (``PublishedFeeds``).
    package var keepsPublishedFeeds = false
    /// Called once the feeds are written, before every other export: the
    /// feed lint's verdict is part of the night's (a broken requirement makes
    /// it partial), and the consumer database's `runs` table, written next,
    /// must tell the night the exit code tells.
    package var afterFeeds: (@Sendable ([ExportedFile]) throws -> Void)?

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
        ["date": PathTemplate.dateValue(runDate), "job": jobName]
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
    /// A feed with `checkEnclosures`: items withheld because their file is gone,
    /// and lengths and types it publishes because a check learnt them.
    public var enclosuresWithheld = 0
    public var enclosureLengthsLearned = 0
    public var enclosureTypesLearned = 0
    /// Items (a feed) or outlines (OPML) left out because their link is not an
    /// http(s) URL (a `javascript:` enclosure, a `file:` feed URL); and a
    /// feed's items' `podcast:` tags left out for breaking the namespace's rules.
    /// Counted on the first file of a feed written for them (not again on its Atom twin).
    public var linksWithheld = 0
    public var podcastTagsWithheld = 0
    /// The export's file-name template, for exports that write one file per group.
    public var template: String?
    /// A feed document whose content was what it already published: the
    /// published file was left as it was (build date included).
    public var unchanged = false
    /// A current feed document (not an archive page): the URL it is served at
    /// (its `selfURL`), and who is told when it changes.
    public var topicURL: String?
    public var push: FeedPushSpec?

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
            throw .exportFailed(path: context.outputDirectory, reason: "\(error)", cause: error)
        }
    }

    private static func exportConfined(_ specs: [ExportSpec], context: ExportContext, logger: Logger) throws(StoreSyncError) -> [ExportedFile] {
        // Feeds first (``ExportContext/afterFeeds``); the files are returned in the job's order all the same.
        var written = Array(repeating: [ExportedFile](), count: specs.count)
        for index in specs.indices where specs[index].isFeed {
            written[index] = try exportOne(specs[index], among: specs, context: context)
        }
        do {
            try context.afterFeeds?(written.flatMap { $0 })
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .exportFailed(path: context.outputDirectory, reason: "\(error)", cause: error)
        }
        for index in specs.indices where !specs[index].isFeed {
            written[index] = try exportOne(specs[index], among: specs, context: context)
        }
        let files = written.flatMap { $0 }
        for file in files { logger.debug("exported \(file.path) (\(file.rows) rows, \(file.bytes) bytes)") }
        // `keep: N` prunes only after every export succeeded, like the sweep: a failed night removes nothing.
        let root = URL(fileURLWithPath: context.outputDirectory)
        let protected = ProtectedFiles(context.protectedPaths)
        var dated = DatedManifest.load(root)
        for spec in specs {
            guard let keep = context.keep[spec.target] else { continue }
            let written = files.filter { $0.template == spec.target }.map(\.path)
            let outcome = KeptFiles.prune(template: spec.target, keep: keep, written: written, outputDirectory: context.outputDirectory,
                                          manifest: &dated, jobName: context.jobName, protected: protected)
            for path in outcome.removed {
                logger.info("removed \(path): older than the newest \(keep) the export keeps (keep: \(keep))")
            }
            if !outcome.unlisted.isEmpty {
                let shown = outcome.unlisted.prefix(5).joined(separator: ", ")
                let more = outcome.unlisted.count > 5 ? " (and \(outcome.unlisted.count - 5) more)" : ""
                logger.warning("keep: \(keep) of \(spec.target) left \(shown)\(more): storesync has no record of writing them, so it does not remove them; delete them by hand if they are old exports")
            }
            for (path, reason) in outcome.refused { logger.warning("keep: not removed \(path): \(reason)") }
        }
        dated.save(root)
        for case .changeset(let changeset) in specs {
            for path in ChangesetExport.prune(changeset, context: context) {
                logger.info("removed \(path): older than the newest \(changeset.keep) changesets the export keeps (keep: \(changeset.keep))")
            }
        }
        let swept = StaleFiles.sweep(specs, written: files, outputDirectory: context.outputDirectory, kept: Set(context.keep.keys), protected: protected)
        for path in swept.removed { logger.info("removed \(path): its group (a genre or country) is no longer in the feed") }
        for (path, reason) in swept.refused { logger.warning("not removed \(path): \(reason)") }
        if context.keepsPublishedFeeds { try keepPublishedFeeds(specs, files: files, context: context, logger: logger) }
        return files
    }

    /// Writes one export (a `sqlite` one with its changeset and metadata);
    /// `specs` are the job's, for the changeset that goes with a database.
    private static func exportOne(_ spec: ExportSpec, among specs: [ExportSpec], context: ExportContext) throws(StoreSyncError) -> [ExportedFile] {
        var files: [ExportedFile] = []
        do {
            switch spec {
            case .sqlite(let path, let historyDays, let history, let metadata):
                let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                let changeset = specs.lazy.compactMap { spec -> ChangesetExportSpec? in
                    if case .changeset(let changeset) = spec, changeset.database == path { changeset } else { nil }
                }.first
                let written = try SQLiteExport.write(to: url, historyDays: historyDays, history: history, changeset: changeset,
                                                     context: context)
                var file = written.database
                file.template = path
                files.append(file)
                if var changesetFile = written.changeset, let changeset {
                    changesetFile.template = changeset.directory
                    files.append(changesetFile)
                }
                if let metadata {
                    let described = try PathTemplate.resolve(metadata, values: context.templateValues, inside: context.outputDirectory)
                    var file = try DatasetteMetadata.write(to: described, database: url, history: history, context: context)
                    file.template = metadata
                    files.append(file)
                }
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
            case .changeset:
                // Written with its database (above), the one moment both versions exist.
                break
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
        return files
    }

    /// Keeps tonight's feed files as this run's, for `export --as-of` (the
    /// run lets go of older nights with its retention).
    private static func keepPublishedFeeds(_ specs: [ExportSpec], files: [ExportedFile], context: ExportContext,
                                           logger: Logger) throws(StoreSyncError) {
        let feeds = Set(specs.filter(\.isFeed).map(\.target))
        guard !feeds.isEmpty else { return }
        let published = PublishedFeeds(outputDirectory: context.outputDirectory)
        do {
            let recorded = try published.record(run: context.runID, files: files.filter { $0.template.map(feeds.contains) ?? false },
                                                outputDirectory: context.outputDirectory)
            logger.debug("kept run \(context.runID)'s \(recorded.files) feed files for --as-of: \(recorded.newBlobs) new contents, \(recorded.newBlobBytes) bytes gzip")
        } catch let error as StoreSyncError {
            throw error
        } catch {
            throw .exportFailed(path: published.root.path, reason: "cannot keep tonight's feed files for --as-of: \(error)",
                                remedy: "The feeds themselves were published; check the disk, then `storesync export` keeps them", cause: error)
        }
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

    /// The files of `template` the last sweep recorded as written (paths relative to the output folder).
    static func listed(template: String, outputDirectory: String) -> Set<String> {
        let manifestURL = URL(fileURLWithPath: outputDirectory).standardizedFileURL.appendingPathComponent(manifestName)
        guard let data = try? Data(contentsOf: manifestURL), let object = (try? JSONParser.parse(Array(data)))?.objectValue else { return [] }
        return Set(object[template]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// Removes the stale files and records the new lists; returns the removed paths.
    @discardableResult
    static func sweep(_ specs: [ExportSpec], written: [ExportedFile], outputDirectory: String, kept: Set<String> = [],
                      protected: ProtectedFiles = ProtectedFiles([])) -> (removed: [String], refused: [(String, String)]) {
        let root = URL(fileURLWithPath: outputDirectory).standardizedFileURL
        let manifestURL = root.appendingPathComponent(manifestName)
        var manifest: [String: JSONValue] = [:]
        if let data = try? Data(contentsOf: manifestURL), let value = try? JSONParser.parse(Array(data)), let object = value.objectValue {
            manifest = object
        }
        var removed: [String] = []
        var refused: [(String, String)] = []
        var changed = false
        for spec in specs {
            let template = spec.target
            let variables = PathTemplate.variables(in: template)
            // Dated files are a history, and `keep: N` decides how much of it stays: never stale.
            guard !variables.isDisjoint(with: ["genre", "country"]), !variables.contains("date"), !kept.contains(template) else { continue }
            let now = Set(written.filter { $0.template == template }.map { SnapshotExporter.relativePath($0.path, in: root.path) })
            let before = Set(manifest[template]?.arrayValue?.compactMap(\.stringValue) ?? [])
            var listed = now
            for path in before.subtracting(now).sorted() {
                let url = root.appendingPathComponent(path).standardizedFileURL
                // Only what the list names, and only inside the output folder.
                guard url.path.hasPrefix(root.path + "/"), !path.contains("..") else { continue }
                switch OwnedFile.remove(url, root: root, protected: protected) {
                case .removed:
                    removed.append(url.path)
                    let index = url.deletingLastPathComponent().appendingPathComponent(".\(url.lastPathComponent).archive.json")
                    _ = OwnedFile.remove(index, root: root, protected: protected)
                case .absent:
                    break
                case .refused(let reason):
                    // Kept on the list: once the link is fixed, the next night removes it.
                    refused.append((url.path, reason))
                    listed.insert(path)
                }
            }
            if before != listed {
                manifest[template] = .array(listed.sorted().map(JSONValue.string))
                changed = true
            }
        }
        if changed { try? AtomicFile.write(CanonicalJSON.encode(.object(manifest)), to: manifestURL) }
        return (removed, refused)
    }
}

/// `keep: N`: the dated files of one export beyond the newest N.
///
/// Only files the manifest (``DatedManifest``) says this very template wrote
/// are ever removed: a user's `budget.csv`, the store, or an old dated file
/// from before the manifest existed stay, whatever the template matches (the
/// last are named in a warning). Newest is by the `{date}` in the name, per
/// group of the template's other variables; tonight's files always stay, so
/// `storesync export` of an older run does not delete what it just wrote.
enum KeptFiles {
    struct Outcome {
        var removed: [String] = []
        /// Files the template's strict pattern matches that the manifest does not list.
        var unlisted: [String] = []
        var refused: [(String, String)] = []
    }

    static func prune(template: String, keep: Int, written: [String], outputDirectory: String,
                      manifest: inout DatedManifest, jobName: String, protected: ProtectedFiles) -> Outcome {
        let root = URL(fileURLWithPath: outputDirectory).standardizedFileURL
        let pattern = DatedName(template: String(template.split(separator: "/", omittingEmptySubsequences: false).last ?? ""), jobName: jobName)
        let tonight = Set(written.map { SnapshotExporter.relativePath($0, in: root.path) })
        var listed = Set(manifest.files[template] ?? []).union(tonight)
        var outcome = Outcome()
        func parent(_ path: String) -> String { (path as NSString).deletingLastPathComponent }
        func exists(_ relative: String) -> Bool {
            var info = stat()
            return lstat(root.appendingPathComponent(relative).path, &info) == 0
        }
        listed = listed.filter { !$0.hasPrefix("/") && !$0.split(separator: "/").contains("..") && exists($0) }
        // Groups: one folder and one value of every variable but {date}.
        var groups: [String: [(relative: String, date: String)]] = [:]
        for relative in listed {
            guard let parts = pattern.parts((relative as NSString).lastPathComponent) else { continue }
            groups[parent(relative) + "\u{0}" + parts.group, default: []].append((relative, parts.date))
        }
        for (_, members) in groups.sorted(by: { $0.key < $1.key }) {
            let room = max(0, keep - members.filter { tonight.contains($0.relative) }.count)
            let older = members.filter { !tonight.contains($0.relative) }
                .sorted { ($0.date, $0.relative) > ($1.date, $1.relative) }
            for file in older.dropFirst(room) {
                let url = root.appendingPathComponent(file.relative).standardizedFileURL
                switch OwnedFile.remove(url, root: root, protected: protected) {
                case .removed: listed.remove(file.relative); outcome.removed.append(url.path)
                case .absent: listed.remove(file.relative)
                case .refused(let reason): outcome.refused.append((url.path, reason))
                }
            }
        }
        manifest.files[template] = listed.sorted()
        // Dated files the template could have written, that nothing vouches for.
        for folder in Set(tonight.map(parent)).sorted() {
            let names = (try? FileManager.default.contentsOfDirectory(atPath: root.appendingPathComponent(folder).path)) ?? []
            for name in names.sorted() where pattern.parts(name) != nil {
                let relative = folder.isEmpty ? name : folder + "/" + name
                if !listed.contains(relative) { outcome.unlisted.append(relative) }
            }
        }
        return outcome
    }
}

/// What `keep: N` knows it wrote: template → the files (relative to the output
/// folder) it wrote from that template, in `.storesync-dated.json`.
struct DatedManifest {
    static let fileName = ".storesync-dated.json"
    var files: [String: [String]] = [:]
    private var loaded: [String: [String]] = [:]

    static func load(_ root: URL) -> DatedManifest {
        var manifest = DatedManifest()
        if let data = try? Data(contentsOf: root.appendingPathComponent(fileName)),
           let object = (try? JSONParser.parse(Array(data)))?.objectValue {
            for (template, list) in object {
                manifest.files[template] = list.arrayValue?.compactMap(\.stringValue) ?? []
            }
        }
        manifest.loaded = manifest.files
        return manifest
    }

    func save(_ root: URL) {
        guard files != loaded else { return }
        let object = files.mapValues { JSONValue.array($0.map(JSONValue.string)) }
        try? AtomicFile.write(CanonicalJSON.encode(.object(object)), to: root.appendingPathComponent(Self.fileName))
    }
}

/// A dated template's file name taken apart: `{date}` must be a `yyyy-MM-dd`
/// date, `{job}` the job's own (sanitised) name, every other variable one or
/// more characters; so `budget.csv` or `snapshot.sqlite` is never a
/// `{date}.csv` or `{date}.sqlite`.
struct DatedName {
    private let regex: NSRegularExpression?
    private let dateGroup: Int?

    init(template: String, jobName: String) {
        var pattern = "^"
        var rest = Substring(template)
        var group = 0
        var dateGroup: Int?
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            pattern += NSRegularExpression.escapedPattern(for: String(rest[..<open]))
            let name = rest[rest.index(after: open)..<close]
            switch name {
            case "date":
                group += 1
                dateGroup = group
                pattern += "([0-9]{4}-[0-9]{2}-[0-9]{2})"
            case "job":
                pattern += NSRegularExpression.escapedPattern(for: PathTemplate.sanitize(jobName))
            default:
                group += 1
                pattern += "([^/.][^/]*?)"
            }
            rest = rest[rest.index(after: close)...]
        }
        pattern += NSRegularExpression.escapedPattern(for: String(rest)) + "$"
        regex = try? NSRegularExpression(pattern: pattern)
        self.dateGroup = dateGroup
    }

    /// The file's date and the values of its other variables; nil when the template could not have written it.
    func parts(_ name: String) -> (date: String, group: String)? {
        guard let regex, let match = regex.firstMatch(in: name, range: NSRange(name.startIndex..., in: name)) else { return nil }
        var date = ""
        var others: [String] = []
        for index in 1..<max(1, match.numberOfRanges) {
            guard let range = Range(match.range(at: index), in: name) else { continue }
            if index == dateGroup { date = String(name[range]) } else { others.append(String(name[range])) }
        }
        return (date, others.joined(separator: "\u{0}"))
    }
}

/// The paths no export removes, compared with links resolved.
package struct ProtectedFiles: Sendable {
    let paths: Set<String>
    init(_ paths: Set<String>) {
        self.paths = Set(paths.flatMap { path in [URL(fileURLWithPath: path).standardizedFileURL.path] + [AtomicFile.realPath(path)].compactMap { $0 } })
    }
    func contains(_ url: URL) -> Bool {
        let path = url.standardizedFileURL.path
        if paths.contains(path) { return true }
        // The folder resolved, the name as it is: a link to the store is itself removable, the store is not.
        let folder = AtomicFile.realPath(url.deletingLastPathComponent().path) ?? url.deletingLastPathComponent().path
        return paths.contains(folder + "/" + url.lastPathComponent) || (AtomicFile.realPath(path).map(paths.contains) ?? false)
    }
}

/// Removing a file an export wrote, with the same care as writing one.
enum OwnedFile {
    enum Removal { case removed, absent, refused(String) }

    /// Removes the file at `url` (a link is removed as a link, never followed;
    /// a folder never), only when its folder is inside `root` with links
    /// resolved and it is not a protected file.
    static func remove(_ url: URL, root: URL, protected: ProtectedFiles) -> Removal {
        var info = stat()
        guard lstat(url.path, &info) == 0 else { return .absent }
        if protected.contains(url) {
            return .refused("it is the snapshot store or one of its files, which no export removes")
        }
        if let escape = AtomicFile.escape(of: url.deletingLastPathComponent(), root: root) {
            return .refused(escape)
        }
        guard (info.st_mode & S_IFMT) != S_IFDIR else { return .refused("it is a folder, not a file an export wrote") }
        return unlink(url.path) == 0 ? .removed : .refused(String(cString: strerror(errno)))
    }
}

/// What a run's exports left out of what they publish, and why: the run
/// report's `withheld` and the metrics' `storesync_withheld{kind}`.
package struct WithheldCounts: Sendable, Equatable {
    /// Items and outlines whose link is not an http(s) URL.
    package var links = 0
    /// Items' `podcast:` tags that break the namespace's rules.
    package var podcastTags = 0
    /// Items whose media file is gone (404/410 to an enclosure check).
    package var goneEnclosures = 0

    package init() {}

    /// The sums over a run's exported files.
    package init(_ files: [ExportedFile]) {
        links = files.reduce(0) { $0 + $1.linksWithheld }
        podcastTags = files.reduce(0) { $0 + $1.podcastTagsWithheld }
        goneEnclosures = files.reduce(0) { $0 + $1.enclosuresWithheld }
    }
}
