import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on a store for the length of a run (Invariant 5).
///
/// `flock` on a file beside the database: the kernel drops it when the
/// process dies, even by SIGKILL, so a killed run never leaves a stale lock.
public final class RunLock: Sendable {
    private let fd: Int32
    public let path: String

    /// Takes the lock or throws ``StoreSyncError/locked(store:holder:)`` at once.
    public init(storePath: String) throws(StoreSyncError) {
        path = storePath + ".lock"
        try? FileManager.default.createDirectory(
            atPath: (storePath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw .storage(path: path, reason: "cannot open the lock file: \(String(cString: strerror(errno)))")
        }
        if flock(fd, LOCK_EX | LOCK_NB) != 0 {
            let holder = (try? String(contentsOfFile: path, encoding: .utf8))?
                .trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
            close(fd)
            throw .locked(store: storePath, holder: holder.isEmpty ? "another process" : holder)
        }
        let note = "pid \(getpid()) since \(ISO8601DateFormatter().string(from: Date()))\n"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd = fd
    }

    deinit {
        _ = ftruncate(fd, 0)
        flock(fd, LOCK_UN)
        close(fd)
    }
}
