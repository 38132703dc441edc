import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The embedded default: one SQLite file (WAL mode) and a lock file beside it.
public struct SQLiteBackend: StoreBackend {
    public init() {}

    public func lock(_ location: String) throws(StoreSyncError) -> any Sendable {
        try RunLock(storePath: location)
    }

    public func lockHolder(_ location: String) -> String? {
        RunLock.holder(storePath: location)
    }

    public func exists(_ location: String) -> Bool {
        FileManager.default.fileExists(atPath: location)
    }

    public func open(_ location: String) throws(StoreSyncError) -> any SnapshotStore {
        try SQLSnapshotStore(path: location)
    }

    public func openReadOnly(_ location: String) throws(StoreSyncError) -> any SnapshotStore {
        try SQLSnapshotStore(path: location, readOnly: true)
    }

    /// The marker beside a store that says it held history: a failed copy or
    /// restore takes the store, not (usually) this small file with it.
    public static func historyMarker(_ location: String) -> String { location + ".history" }

    public func historyEvidence(_ location: String) -> String? {
        let marker = Self.historyMarker(location)
        guard let data = FileManager.default.contents(atPath: marker) else { return nil }
        var fields: [String: String] = [:]
        for line in String(decoding: data, as: UTF8.self).split(separator: "\n") where !line.hasPrefix("#") {
            guard let colon = line.firstIndex(of: ":") else { continue }
            fields[String(line[..<colon])] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        guard let run = fields["run"], let job = fields["job"] else { return "\(marker) says so" }
        return "\(marker) records run \(run) of job \(job)" + (fields["stored"].map { ", stored \($0)" } ?? "")
    }

    public func noteHistory(_ location: String, job: String, runID: Int64, at date: Date) throws(StoreSyncError) {
        let marker = Self.historyMarker(location)
        let name = (location as NSString).lastPathComponent
        let text = """
            # storesync: the store \(name) beside this file holds history. A run refuses to
            # start over when that store is missing or empty (a failed copy or restore);
            # `storesync run JOB --new-store` starts over on purpose. Move it with the store.
            job: \(job)
            run: \(runID)
            stored: \(ISO8601DateFormatter().string(from: date))

            """
        do {
            // Written whole or not at all: a torn marker must not hide the evidence.
            try Data(text.utf8).write(to: URL(fileURLWithPath: marker), options: .atomic)
        } catch {
            throw .storage(path: marker, reason: "cannot write the history marker: \(error.localizedDescription)",
                           remedy: "Check that the store's folder is writable")
        }
    }

    /// SQLite's online backup into a temporary folder: consistent even while
    /// a nightly run writes, and it needs no lock, so it never blocks cron.
    public func openCopy(_ location: String) throws(StoreSyncError) -> (store: any SnapshotStore, discard: @Sendable () -> Void) {
        Self.removeStaleDryRunCopies()
        let folder = FileManager.default.temporaryDirectory
            .appendingPathComponent("\(Self.dryRunPrefix)\(getpid())-\(UUID().uuidString)")
        let discard: @Sendable () -> Void = { try? FileManager.default.removeItem(at: folder) }
        let copyPath = folder.appendingPathComponent("snapshot.sqlite").path
        do {
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            if exists(location) { try SQLiteEngine.copy(from: location, to: copyPath) }
            return (try SQLSnapshotStore(path: copyPath), discard)
        } catch {
            discard()
            throw error
        }
    }

    /// Dry-run copies live in the temporary folder as `storesync-dry-run-<pid>-<uuid>`:
    /// the writer's id says whether the copy's owner is still running.
    static let dryRunPrefix = "storesync-dry-run-"

    /// Removes the dry-run copies under the temporary folder whose process is
    /// gone (killed before it could discard its copy), or only this process's
    /// own (`own`: a process exiting at once on a second signal). Returns how many.
    @discardableResult
    public static func removeStaleDryRunCopies(own: Bool = false) -> Int {
        let temporary = FileManager.default.temporaryDirectory
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: temporary.path) else { return 0 }
        var removed = 0
        for name in names where name.hasPrefix(dryRunPrefix) {
            // Copies named before the process id was part of the name are left alone: whose they are is unknown.
            guard let pid = pid_t(name.dropFirst(dryRunPrefix.count).prefix { $0 != "-" }), pid > 0 else { continue }
            let alive = kill(pid, 0) == 0 || errno == EPERM
            let remove = own ? pid == getpid() : (pid != getpid() && !alive)
            if remove, (try? FileManager.default.removeItem(at: temporary.appendingPathComponent(name))) != nil { removed += 1 }
        }
        return removed
    }
}
