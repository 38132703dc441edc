import Catalog
import Foundation

/// The feed files each night published, kept so that `storesync export
/// --as-of` gives them back byte for byte.
///
/// The consumer database and the CSVs are functions of the snapshot, so
/// `--as-of` rebuilds them from the change log. A feed is not: it names the
/// artwork the mirror held that night, publishes what that night's enclosure
/// checks learnt, keeps an unchanged document's earlier build date, keeps a
/// genre's emptied file alive, pages its archive by what earlier nights
/// archived, and a `strict` feed that failed the lint leaves the night
/// before's file in place. None of that is in the snapshot, and replaying
/// every night's exports would need all of it; so the files are kept as
/// published instead.
///
/// Under `<output>/.storesync-published/`:
/// - `blobs/<xxh64>-<size>.gz`: one gzip file per distinct content. A feed
///   whose content did not change keeps its published file, so it costs
///   nothing more; archive pages, written once, are kept once.
/// - `runs/<run>.json`: the night's feed files, `{"run": N, "files": {path: {"blob": name, "items": n}}}`.
///
/// Blobs are written before the manifest that names them and removed only
/// when no manifest names them, so a night killed at any moment leaves every
/// kept night whole (at worst a blob no manifest names yet, removed later).
/// Nights leave with the runs retention prunes from the store.
package struct PublishedFeeds {
    package static let folderName = ".storesync-published"

    package let root: URL

    package init(outputDirectory: String) {
        root = URL(fileURLWithPath: outputDirectory).appendingPathComponent(Self.folderName)
    }

    private var blobs: URL { root.appendingPathComponent("blobs") }
    private var runs: URL { root.appendingPathComponent("runs") }

    package func manifestURL(_ run: Int64) -> URL { runs.appendingPathComponent("\(run).json") }

    /// What recording a night came to.
    package struct Recorded: Sendable, Equatable {
        package var files = 0
        /// Distinct contents not kept before tonight, and their gzip size.
        package var newBlobs = 0
        package var newBlobBytes: Int64 = 0
    }

    /// Keeps `published` (files under the output folder; absent ones are
    /// skipped: a feed never published) as what run `run` published.
    package func record(run: Int64, files published: [ExportedFile], outputDirectory: String) throws -> Recorded {
        var recorded = Recorded()
        var files: [String: JSONValue] = [:]
        // A withheld feed's entry is the file a night before published, which is what stands tonight.
        for (path, items) in Dictionary(published.map { ($0.path, $0.rows) }, uniquingKeysWith: { first, _ in first }) {
            guard let data = FileManager.default.contents(atPath: path) else { continue }
            let bytes = [UInt8](data)
            let name = Self.blobName(of: bytes)
            let blob = blobs.appendingPathComponent(name)
            if !FileManager.default.fileExists(atPath: blob.path) {
                let compressed = try Gzip.compress(bytes)
                try AtomicFile.write(compressed, to: blob)
                recorded.newBlobs += 1
                recorded.newBlobBytes += Int64(compressed.count)
            }
            files[SnapshotExporter.relativePath(path, in: outputDirectory)] = .object(["blob": .string(name), "items": .int(Int64(items))])
            recorded.files += 1
        }
        try AtomicFile.write(CanonicalJSON.encode(.object(["run": .int(run), "files": .object(files)])),
                             to: manifestURL(run))
        return recorded
    }

    /// The nights kept, oldest first.
    package func keptRuns() -> [Int64] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: runs.path)) ?? []
        return names.compactMap { $0.hasSuffix(".json") ? Int64($0.dropLast(5)) : nil }.sorted()
    }

    /// Removes the nights not in `kept` (the runs the store still keeps), then
    /// the blobs no kept night names. Returns the nights removed.
    @discardableResult
    package func prune(keeping kept: Set<Int64>) throws -> [Int64] {
        let removed = keptRuns().filter { !kept.contains($0) }
        for run in removed { try FileManager.default.removeItem(at: manifestURL(run)) }
        var named = Set<String>()
        for run in keptRuns() {
            // A manifest that cannot be read names nothing we can trust: keep every blob.
            guard let manifest = try? manifest(run) else { return removed }
            named.formUnion(manifest.values.map(\.blob))
        }
        let present = (try? FileManager.default.contentsOfDirectory(atPath: blobs.path)) ?? []
        // Our own temporaries (a blob being written) are AtomicFile's to clean up.
        for name in present where name.hasSuffix(".gz") && !name.hasPrefix(".") && !named.contains(name) {
            try? FileManager.default.removeItem(at: blobs.appendingPathComponent(name))
        }
        return removed
    }

    /// A kept file: its content's blob, and the items it held.
    package struct Entry: Sendable, Equatable {
        package var blob: String
        package var items: Int
    }

    /// Path (relative to the output folder) → what it held, for night `run`;
    /// nil when that night's feeds were not kept.
    package func manifest(_ run: Int64) throws -> [String: Entry]? {
        guard let data = FileManager.default.contents(atPath: manifestURL(run).path) else { return nil }
        guard let value = try? JSONParser.parse(Array(data)), case .object(let files)? = value["files"] else {
            throw Failure(description: "\(manifestURL(run).path) is not a manifest storesync wrote")
        }
        return try files.mapValues { value in
            guard case .string(let name)? = value["blob"], name == (name as NSString).lastPathComponent else {
                throw Failure(description: "\(manifestURL(run).path) names a blob that is not a file name")
            }
            return Entry(blob: name, items: value["items"]?.intValue.map(Int.init) ?? 0)
        }
    }

    /// Writes the feed files night `run` published into `folder` (paths as
    /// they were under the output folder); nil when they were not kept.
    /// A blob whose bytes no longer hash to its name is an error, never a file.
    package func restore(run: Int64, into folder: String) throws -> [ExportedFile]? {
        guard let manifest = try manifest(run) else { return nil }
        var files: [ExportedFile] = []
        for (path, entry) in manifest.sorted(by: { $0.key < $1.key }) {
            let name = entry.blob
            let blob = blobs.appendingPathComponent(name)
            guard let compressed = FileManager.default.contents(atPath: blob.path) else {
                throw Failure(description: "\(blob.path), which night \(run)'s \(path) was, is missing")
            }
            let bytes = try Gzip.decompress([UInt8](compressed))
            guard Self.blobName(of: bytes) == name else {
                throw Failure(description: "\(blob.path) does not hold what night \(run)'s \(path) was: its bytes changed")
            }
            // Ours, but a path that climbs out of the folder is written nowhere.
            guard !path.hasPrefix("/"), !path.split(separator: "/").contains("..") else {
                throw Failure(description: "\(manifestURL(run).path) names \(path), which is not inside the output folder")
            }
            let url = URL(fileURLWithPath: folder).appendingPathComponent(path)
            try AtomicFile.write(bytes, to: url)
            files.append(ExportedFile(path: url.path, bytes: Int64(bytes.count), rows: entry.items))
        }
        return files
    }

    static func blobName(of bytes: [UInt8]) -> String {
        "\(ContentHash(bytes: bytes))-\(bytes.count).gz"
    }

    struct Failure: Error, CustomStringConvertible {
        var description: String
    }
}
