import Catalog
import Foundation
import Export
import Logging

/// The marker an exported run leaves in the output folder
/// (`.storesync-history`): this folder holds the job's exports of that run.
///
/// It outlives a store lost together with its own folder (and the marker
/// beside the store), so a new store there is refused as a loss instead of
/// being taken for a new job (Invariant 10). It counts for the job and the
/// store it names only (a job pointed at another store on purpose starts that
/// one afresh); the store is named by a hash of its location, so no path or
/// database URL is written into the output.
struct OutputMarker {
    static let fileName = ".storesync-history"
    let job: JobSpec

    var url: URL { URL(fileURLWithPath: job.outputDirectory).appendingPathComponent(Self.fileName) }

    /// The store's location, hashed (stable across processes: ``ContentHash``).
    var storeDigest: String { ContentHash(bytes: Array(job.storePath.utf8)).description }

    /// Records that the exports of `runID` are in the folder.
    func note(runID: Int64, logger: Logger) {
        let text = """
            # storesync: this folder holds the exports of run \(runID) of job \(job.name). A run refuses a
            # missing or empty store while this says so (a lost store); `storesync run JOB --new-store`
            # starts over on purpose.
            job: \(job.name)
            run: \(runID)
            store: \(storeDigest)

            """
        do {
            try FileManager.default.createDirectory(atPath: job.outputDirectory, withIntermediateDirectories: true)
            // AtomicFile, not Foundation's atomic write: a run killed mid-write leaves
            // a temporary the next run recognizes and removes, not a stray `.dat.nosync…`.
            try AtomicFile.write(Array(text.utf8), to: url)
        } catch {
            logger.warning("could not write \(url.path): \(error); a lost store is then told only by the marker beside it")
        }
    }

    /// What the marker says, when it names this job; nil otherwise.
    func evidence() -> String? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        var fields: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard fields["job"] == job.name, fields["store"] == storeDigest, let run = fields["run"] else { return nil }
        return "\(url.path) records the exports of run \(run) of job \(job.name)"
    }
}
