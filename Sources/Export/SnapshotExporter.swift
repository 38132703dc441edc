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
}

/// Runs a job's exports against the snapshot.
package enum SnapshotExporter {
    /// Writes every export, each to a temporary file renamed into place; the
    /// first failure stops the exports and leaves that file's previous version intact.
    package static func export(_ specs: [ExportSpec], context: ExportContext, logger: Logger) throws(StoreSyncError) -> [ExportedFile] {
        var files: [ExportedFile] = []
        for spec in specs {
            do {
                switch spec {
                case .sqlite(let path, let historyDays):
                    files.append(try SQLiteExport.write(to: context.url(path), historyDays: historyDays, context: context))
                case .csvTables(let directory, let options):
                    files += try CSVExport.writeTables(directory: context.url(directory), options: options, context: context)
                case .csvChanges(let path, let options):
                    files.append(try CSVExport.writeChanges(to: context.url(path), options: options, context: context))
                case .feed(let feed):
                    files += try FeedExport.write(feed, context: context)
                case .opml(let opml):
                    files += try FeedExport.writeOPML(opml, context: context)
                case .runReport(let path):
                    let url = try PathTemplate.resolve(path, values: context.templateValues, inside: context.outputDirectory)
                    files.append(try RunReportExport.writeJSON(to: url, context: context))
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
                throw .exportFailed(path: context.url(spec.target).path, reason: "\(error)",
                                    remedy: "The previous file was left intact; the next run (or `storesync export`) writes it again",
                                    cause: error as? any Error & Sendable)
            }
        }
        for file in files { logger.debug("exported \(file.path) (\(file.rows) rows, \(file.bytes) bytes)") }
        return files
    }

    static func fileSize(_ url: URL) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: url.path)[.size]) as? NSNumber)?.int64Value ?? 0
    }
}
