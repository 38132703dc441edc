import Foundation
import Snapshot

/// The "exports" task of `storesync bench`: every export of the demo job
/// over a store far larger than its feeds, so the row shows whether export
/// memory follows the work (feeds of 25–500 items) or the store.
extension Benchmark {
    /// The demo job (`jobs/demo.yml`) pointed at a store and output under the
    /// work folder, its simulator sized to `size` products and `size` podcasts.
    func exportsJob(size: Int) throws -> (job: String, store: String) {
        guard let demo = try? String(contentsOfFile: options.demoJob, encoding: .utf8) else {
            throw Failure(description: "\(options.demoJob) not found: the exports task runs the demo job (pass --demo-job FILE)")
        }
        let folder = "\(work)/exports-\(size)"
        let store = "\(folder)/snapshot.sqlite"
        var replaced = Set<String>()
        let lines = demo.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            // Only the four settings the task changes; everything else is the demo as users see it.
            for (prefix, value) in [("store:", "store: \(store)"), ("output:", "output: \(folder)"),
                                    ("  podcasts:", "  podcasts: \(size)"), ("  products:", "  products: \(size)")]
            where line.hasPrefix(prefix) && !replaced.contains(prefix) {
                replaced.insert(prefix)
                return value
            }
            return String(line)
        }
        guard replaced.count == 4 else {
            throw Failure(description: "\(options.demoJob): expected store, output, simulator podcasts and products lines")
        }
        let job = "\(work)/exports-\(size).yml"
        try lines.joined(separator: "\n").write(toFile: job, atomically: true, encoding: .utf8)
        return (job, store)
    }

    /// Peak RSS and wall time of `storesync export` over a store of `size`
    /// products and podcasts (two simulated nights, so the "new" and
    /// "changes" feeds have items). The store is crawled once and kept.
    func exports() throws -> [Row] {
        let size = options.exportStoreSize
        let (job, store) = try exportsJob(size: size)
        let label = size % 1000 == 0 ? "\(size / 1000)k" : "\(size)"
        if !FileManager.default.fileExists(atPath: store) {
            log("crawling the demo job's simulator with \(label) products and \(label) podcasts (two nights, once) …")
            for night in 1...2 {
                let m = try ProcessMeasure.run([options.executable, "run", job, "-q", "--no-progress"], stderrPath: stderrLog)
                guard m.exitCode == 0 || m.exitCode == 2 else {
                    remove(store)
                    throw Failure(description: "storesync run (night \(night)) of \(job) failed (see \(stderrLog))")
                }
            }
        }
        log("exports of the demo job over a \(label) store")
        let records = (try? SQLSnapshotStore(path: store, readOnly: true)).map { snapshot in
            (try? snapshot.entities().reduce(0) { $0 + ((try? snapshot.recordCount(of: $1)) ?? 0) }) ?? 0
        } ?? 0
        guard let row = try measure(task: "exports, \(label) store", tool: "storesync", records: records,
                                    note: "every export of jobs/demo.yml; \(records) records stored",
                                    [options.executable, "export", job, "-q"]) else { return [] }
        return [row]
    }
}
