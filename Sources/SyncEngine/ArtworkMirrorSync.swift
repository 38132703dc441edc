import Catalog
import Crawl
import Export
import Foundation
import Logging

/// The artwork mirror's bookkeeping, `.manifest.json` in the mirror folder:
/// per file, the validators for the next conditional request, what the
/// header said, and when feeds last published it (what eviction orders by).
///
/// Invariant: an accepted entry's file exists. Files are renamed into place
/// before the manifest naming them is written, and the manifest forgetting
/// an entry is written before its file is deleted; a kill in between leaves
/// at worst a file no manifest names, which the next night deletes.
struct ArtworkManifest: Codable, Equatable {
    struct Entry: Codable, Equatable {
        var url: String
        var etag: String?
        var lastModified: String?
        var contentType: String?
        /// Size of the file; 0 for a rejected image (it keeps no file).
        var bytes: Int64
        var width: Int?
        var height: Int?
        /// Why feeds must not use it (not an image, wrong size or colour model); nil = accepted.
        /// A rejected entry keeps its validators, so the next night asks with them instead of downloading again.
        var rejected: String?
        /// The run whose feeds last published it, and that run's date (for people reading the file).
        var lastPublishedRun: Int64
        var lastPublishedAt: String
        /// Its place among that run's published images (0 = first): among images last published
        /// by the same run, the later ones in the feeds go first when the budget is short.
        var rank: Int
    }

    var version = 1
    /// By file name (``ArtworkMirror/fileName(for:)``).
    var entries: [String: Entry] = [:]
}

/// Fills and trims the artwork mirror for one run: conditional GETs through the
/// job's pacing and retries, validation of what arrives, atomic files, the
/// size budget (least recently published evicted first) and the manifest.
///
/// It runs before the feed exports, which then publish `mirrored` in place of
/// the original URLs; an image that failed, was rejected or evicted is not in
/// `mirrored`, so feeds keep its original URL rather than a broken link.
package struct ArtworkMirrorSync: Sendable {
    package struct Outcome: Sendable {
        package var figures: ArtworkMirrorFigures
        /// Original URL → public URL of its copy (empty without `artworkBaseURL`).
        package var mirrored: [String: String]
        /// The folder, for the run's list of exported files.
        package var file: ExportedFile
        /// Each image fetched tonight that failed or was rejected, with why.
        package var problems: [(url: String, reason: String)]
    }

    let spec: ArtworkExportSpec
    let directory: URL
    let fetcher: Fetcher
    let concurrency: Int
    let logger: Logger
    /// Test seam: called after the first half of an image is written to its
    /// temporary file; throwing stands for the process dying mid-download.
    var interruption: (@Sendable (_ fileName: String) throws -> Void)?

    package init(spec: ArtworkExportSpec, outputDirectory: String, fetcher: Fetcher, concurrency: Int, logger: Logger,
                 interruption: (@Sendable (_ fileName: String) throws -> Void)? = nil) {
        self.spec = spec
        self.directory = URL(fileURLWithPath: outputDirectory).appendingPathComponent(spec.directory).standardizedFileURL
        self.fetcher = fetcher
        self.concurrency = max(1, concurrency)
        self.logger = logger
        self.interruption = interruption
    }

    var manifestURL: URL { directory.appendingPathComponent(ArtworkMirror.manifestName) }

    /// What one URL's request came to.
    enum Fetched: Sendable {
        /// 304: the copy (or the rejection) stands.
        case notModified(etag: String?, lastModified: String?)
        /// 200 and stored under its name.
        case stored(ArtworkManifest.Entry)
        /// 200 but not usable as artwork; no file kept.
        case rejected(ArtworkManifest.Entry)
        case failed(String)
    }

    /// Mirrors `urls` (in publication order, no repeats) for run `runID`.
    package func run(urls: [String], runID: Int64, runDate: Date) async throws(StoreSyncError) -> Outcome {
        let before = fetcher.stats
        do {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        } catch {
            throw .exportFailed(path: directory.path, reason: "cannot create the artwork folder: \(error)")
        }
        var manifest = try reconcile(loadManifest())
        let stamp = ISO8601DateFormatter().string(from: runDate)
        var figures = ArtworkMirrorFigures()
        figures.wanted = urls.count
        figures.budgetBytes = spec.budgetBytes
        var problems: [(url: String, reason: String)] = []
        var filesToDelete: [String] = []

        // Requests go out `concurrency` at a time; the Fetcher paces each host.
        let jobs = urls.enumerated().map { (rank: $0.offset, url: $0.element, name: ArtworkMirror.fileName(for: $0.element)) }
        var next = 0
        var sinceCheckpoint = 0
        await withTaskGroup(of: (Int, Fetched).self) { group in
            func launch() {
                guard next < jobs.count else { return }
                let job = jobs[next]
                // A hash collision with another URL is treated as "not mirrored yet".
                let known = manifest.entries[job.name].flatMap { $0.url == job.url ? $0 : nil }
                next += 1
                group.addTask { (job.rank, await fetch(job.url, name: job.name, known: known, runID: runID, stamp: stamp)) }
            }
            for _ in 0..<concurrency { launch() }
            while let (rank, fetched) = await group.next() {
                let job = jobs[rank]
                switch fetched {
                case .notModified(let etag, let lastModified):
                    if let etag { manifest.entries[job.name]?.etag = etag }
                    if let lastModified { manifest.entries[job.name]?.lastModified = lastModified }
                case .stored(let entry):
                    figures.downloaded += 1
                    figures.downloadedBytes += entry.bytes
                    manifest.entries[job.name] = entry
                    sinceCheckpoint += 1
                case .rejected(let entry):
                    figures.downloaded += 1
                    if let old = manifest.entries[job.name], old.rejected == nil { filesToDelete.append(job.name) }
                    manifest.entries[job.name] = entry
                    problems.append((job.url, entry.rejected ?? "rejected"))
                case .failed(let reason):
                    // A copy already held stays published: iTunes never changes the image behind a URL.
                    figures.failed += 1
                    problems.append((job.url, reason))
                }
                // Counted whether it arrived tonight or was answered 304: it is kept out of feeds either way.
                if manifest.entries[job.name]?.rejected != nil { figures.rejected += 1 }
                manifest.entries[job.name]?.lastPublishedRun = runID
                manifest.entries[job.name]?.lastPublishedAt = stamp
                manifest.entries[job.name]?.rank = rank
                // Downloads survive a kill: every so often the manifest catches up with the folder.
                if sinceCheckpoint >= 100 {
                    try? write(manifest)
                    sinceCheckpoint = 0
                }
                launch()
            }
        }

        // Rejections are kept only while published: they hold no file, just validators.
        for (name, entry) in manifest.entries where entry.rejected != nil && entry.lastPublishedRun != runID {
            manifest.entries[name] = nil
        }
        let eviction = evict(&manifest, runID: runID, filesToDelete: &filesToDelete)
        figures.evicted = eviction.evicted
        try write(manifest)
        for name in filesToDelete { try? FileManager.default.removeItem(at: directory.appendingPathComponent(name)) }

        var mirrored: [String: String] = [:]
        for url in urls {
            let name = ArtworkMirror.fileName(for: url)
            guard let entry = manifest.entries[name], entry.url == url, entry.rejected == nil else { continue }
            figures.published += 1
            if let base = spec.artworkBaseURL { mirrored[url] = "\(base)/\(name)" }
        }
        let kept = manifest.entries.values.filter { $0.rejected == nil }
        figures.files = kept.count
        figures.bytes = kept.reduce(0) { $0 + $1.bytes }
        let after = fetcher.stats
        figures.requests = after.requests - before.requests
        figures.notModified = after.notModified - before.notModified
        if eviction.publishedTonight > 0 {
            let count = eviction.publishedTonight
            logger.warning("artwork: the budget of \(spec.budgetMB) MB is smaller than tonight's artwork; \(count) published image(s) were evicted and feeds keep their original URLs")
        }
        // One line per image only when asked for (-v); by default one line per kind of problem.
        for problem in problems { logger.debug("artwork: \(problem.url): \(problem.reason)") }
        let byReason = Dictionary(grouping: problems, by: \.reason)
        for (reason, hits) in byReason.sorted(by: { ($0.value.count, $1.key) > ($1.value.count, $0.key) }) {
            logger.info("artwork: \(hits.count) image(s) not mirrored: \(reason) (e.g. \(hits[0].url))")
        }
        logger.debug("\(figures.summary)") // the run summary prints it once
        return Outcome(figures: figures, mirrored: mirrored,
                       file: .folder(directory.path, bytes: figures.bytes, files: figures.files), problems: problems)
    }

    /// One URL: a conditional GET when the manifest has validators, else a plain one; the body checked and stored.
    func fetch(_ url: String, name: String, known: ArtworkManifest.Entry?, runID: Int64, stamp: String) async -> Fetched {
        guard let target = URL(string: url), let scheme = target.scheme?.lowercased(), ["http", "https"].contains(scheme) else {
            return .failed("not an http(s) URL")
        }
        var headers: [String: String] = [:]
        if let known {
            if let etag = known.etag { headers["If-None-Match"] = etag }
            if let lastModified = known.lastModified { headers["If-Modified-Since"] = lastModified }
        }
        let response: HTTPResponse
        do {
            response = try await fetcher.get(target, headers: headers)
        } catch {
            return .failed(error.message)
        }
        if response.status == 304, known != nil {
            return .notModified(etag: response.header("etag"), lastModified: response.header("last-modified"))
        }
        guard response.status == 200 else { return .failed("HTTP \(response.status)") }
        var entry = ArtworkManifest.Entry(
            url: url, etag: response.header("etag"), lastModified: response.header("last-modified"),
            contentType: response.header("content-type"), bytes: 0, width: nil, height: nil, rejected: nil,
            lastPublishedRun: runID, lastPublishedAt: stamp, rank: 0)
        guard let info = ImageInfo.read(response.body) else {
            entry.rejected = "not a JPEG or PNG (\(response.header("content-type") ?? "no content type"), \(response.body.count) bytes)"
            return .rejected(entry)
        }
        entry.width = info.width
        entry.height = info.height
        let expected = ArtworkMirror.format(forURL: url)
        if info.format != expected {
            entry.rejected = "a \(info.format.rawValue.uppercased()) at a URL that names a \(expected.fileExtension) file"
            return .rejected(entry)
        }
        if let problem = info.artworkProblem {
            entry.rejected = problem
            return .rejected(entry)
        }
        do {
            try store(response.body, as: name)
        } catch {
            return .failed("could not be written: \(error)")
        }
        entry.bytes = Int64(response.body.count)
        return .stored(entry)
    }

    /// Writes through a temporary file in the same folder, fsynced and renamed:
    /// the name only ever holds a whole image.
    func store(_ body: [UInt8], as name: String) throws {
        let half = body.count / 2
        try AtomicFile.write(to: directory.appendingPathComponent(name)) { sink in
            try sink.write(Array(body[..<half]))
            try interruption?(name)
            try sink.write(Array(body[half...]))
        }
    }

    /// Evicts accepted files, least recently published first, until the folder
    /// fits the budget; returns how many went, and how many of those tonight's
    /// feeds publish (a budget too small for one night). Their names are added to `filesToDelete`.
    func evict(_ manifest: inout ArtworkManifest, runID: Int64, filesToDelete: inout [String])
        -> (evicted: Int, publishedTonight: Int)
    {
        var total = manifest.entries.values.reduce(Int64(0)) { $0 + ($1.rejected == nil ? $1.bytes : 0) }
        guard total > spec.budgetBytes else { return (0, 0) }
        let order = manifest.entries.filter { $0.value.rejected == nil }.sorted { a, b in
            if a.value.lastPublishedRun != b.value.lastPublishedRun { return a.value.lastPublishedRun < b.value.lastPublishedRun }
            if a.value.rank != b.value.rank { return a.value.rank > b.value.rank }
            return a.key < b.key
        }
        var evicted = 0, publishedTonight = 0
        for (name, entry) in order where total > spec.budgetBytes {
            manifest.entries[name] = nil
            filesToDelete.append(name)
            total -= entry.bytes
            evicted += 1
            if entry.lastPublishedRun == runID { publishedTonight += 1 }
        }
        return (evicted, publishedTonight)
    }

    /// The copies the mirror holds of `urls`, as feeds name them, read from
    /// the manifest alone: for `storesync export`, which writes feeds again
    /// without network and without changing the mirror.
    package static func heldCopies(of urls: [String], spec: ArtworkExportSpec, outputDirectory: String) -> [String: String] {
        guard let base = spec.artworkBaseURL else { return [:] }
        let directory = URL(fileURLWithPath: outputDirectory).appendingPathComponent(spec.directory)
        guard let data = FileManager.default.contents(atPath: directory.appendingPathComponent(ArtworkMirror.manifestName).path),
              let manifest = try? JSONDecoder().decode(ArtworkManifest.self, from: data) else { return [:] }
        var held: [String: String] = [:]
        for url in urls {
            let name = ArtworkMirror.fileName(for: url)
            guard let entry = manifest.entries[name], entry.url == url, entry.rejected == nil,
                  FileManager.default.fileExists(atPath: directory.appendingPathComponent(name).path) else { continue }
            held[url] = "\(base)/\(name)"
        }
        return held
    }

    /// The pixel size of each mirror URL in `held` (original → mirror URL), as
    /// the manifest recorded it from the file's own header when it was stored:
    /// what the feed lint checks Apple's size rule on.
    package static func headerSizes(of held: [String: String], spec: ArtworkExportSpec,
                                    outputDirectory: String) -> @Sendable (String) -> (width: Int, height: Int)? {
        let directory = URL(fileURLWithPath: outputDirectory).appendingPathComponent(spec.directory)
        guard !held.isEmpty,
              let data = FileManager.default.contents(atPath: directory.appendingPathComponent(ArtworkMirror.manifestName).path),
              let manifest = try? JSONDecoder().decode(ArtworkManifest.self, from: data) else { return { _ in nil } }
        var sizes: [String: (width: Int, height: Int)] = [:]
        for (original, mirrored) in held {
            guard let entry = manifest.entries[ArtworkMirror.fileName(for: original)], entry.url == original,
                  let width = entry.width, let height = entry.height else { continue }
            sizes[mirrored] = (width, height)
        }
        let known = sizes
        return { known[$0] }
    }

    // MARK: The manifest and the folder

    func loadManifest() throws(StoreSyncError) -> ArtworkManifest {
        BookkeepingFile.load(manifestURL, empty: ArtworkManifest(), what: "artwork", consequence: "the mirror starts over",
                             logger: logger)
    }

    /// Makes the manifest and the folder agree after whatever ended the last
    /// run: leftover temporaries and images no manifest names go; entries whose
    /// file is missing or of another size are forgotten (downloaded again).
    func reconcile(_ manifest: ArtworkManifest) throws(StoreSyncError) -> ArtworkManifest {
        AtomicFile.removeStaleTemporaries(under: directory)
        var manifest = manifest
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        var sizes: [String: Int64] = [:]
        for name in names where ArtworkMirror.isMirrorFileName(name) {
            let size = ((try? FileManager.default.attributesOfItem(atPath: directory.appendingPathComponent(name).path)[.size])
                as? NSNumber)?.int64Value
            sizes[name] = size
        }
        var changed = false
        for (name, entry) in manifest.entries where entry.rejected == nil && sizes[name] != entry.bytes {
            manifest.entries[name] = nil
            changed = true
        }
        if changed { try write(manifest) }
        var orphans = 0
        for name in sizes.keys where manifest.entries[name]?.rejected != nil || manifest.entries[name] == nil {
            if (try? FileManager.default.removeItem(at: directory.appendingPathComponent(name))) != nil { orphans += 1 }
        }
        if orphans > 0 { logger.info("artwork: removed \(orphans) image(s) an interrupted run left unrecorded") }
        return manifest
    }

    func write(_ manifest: ArtworkManifest) throws(StoreSyncError) {
        try BookkeepingFile.save(manifest, to: manifestURL, what: "the artwork manifest",
                                 formatting: [.sortedKeys, .prettyPrinted, .withoutEscapingSlashes])
    }
}
