import Catalog
import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An exclusive lock on a store for the length of a run (Invariant 5).
///
/// A lock on a file beside the database, which the kernel drops when the
/// process dies, even by SIGKILL, so a killed run never leaves a stale lock.
/// On Linux it is an open-file-description lock (`F_OFD_SETLK`): unlike
/// `flock`, another process can ask whether it is held (`F_OFD_GETLK`)
/// without taking it, so `status` never makes a starting run exit "locked";
/// unlike classic POSIX locks, closing some other descriptor of the file
/// does not drop it.
package final class RunLock: Sendable {
    private let fd: Int32
    package let path: String

    /// Takes the lock or throws ``StoreSyncError/locked(store:holder:)`` at once.
    package init(storePath: String) throws(StoreSyncError) {
        path = Self.lockPath(storePath)
        try? FileManager.default.createDirectory(
            atPath: (storePath as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o644)
        guard fd >= 0 else {
            throw .storage(path: path, reason: "cannot open the lock file: \(String(cString: strerror(errno)))")
        }
        if !Self.tryLock(fd) {
            let holder = Self.note(path)
            close(fd)
            throw .locked(store: storePath, holder: holder)
        }
        let note = "pid \(getpid()) since \(ISO8601DateFormatter().string(from: Date()))\n"
        _ = ftruncate(fd, 0)
        _ = note.withCString { pwrite(fd, $0, strlen($0), 0) }
        self.fd = fd
    }

    deinit {
        _ = ftruncate(fd, 0)
        Self.unlock(fd)
        close(fd)
    }

    /// Who holds the lock of the store at `storePath` (the holder's note), or
    /// nil when no one does. Reads only: it neither takes the lock nor creates the file.
    package static func holder(storePath: String) -> String? {
        let path = lockPath(storePath)
        #if os(Linux)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var lock = wholeFile(Int16(F_WRLCK))
        // A query on a descriptor of our own: any lock another open of the file holds conflicts and is described.
        guard fcntl(fd, ofdGetLock, &lock) == 0, lock.l_type != Int16(F_UNLCK) else { return nil }
        return note(path)
        #else
        // No open-file-description locks here: the probe takes the flock for
        // an instant and gives it back, which a run starting at that very
        // moment would see as held.
        let fd = open(path, O_RDWR | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        guard flock(fd, LOCK_EX | LOCK_NB) != 0 else {
            flock(fd, LOCK_UN)
            return nil
        }
        return note(path)
        #endif
    }

    static func lockPath(_ storePath: String) -> String { storePath + ".lock" }

    /// The holder's note (`pid … since …`), or a generic name when it has not written one yet.
    static func note(_ path: String) -> String {
        let note = (try? String(contentsOfFile: path, encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
        return note.isEmpty ? "another process" : note
    }

    #if os(Linux)
    // <fcntl.h> defines these only under _GNU_SOURCE, which Swift's Glibc module does not import.
    private static let ofdGetLock: Int32 = 36
    private static let ofdSetLock: Int32 = 37

    private static func wholeFile(_ type: Int16) -> flock {
        var lock = flock()
        lock.l_type = type
        lock.l_whence = Int16(SEEK_SET)
        lock.l_start = 0
        lock.l_len = 0
        // Must be 0 for open-file-description locks (the kernel rejects anything else).
        lock.l_pid = 0
        return lock
    }

    private static func tryLock(_ fd: Int32) -> Bool {
        var lock = wholeFile(Int16(F_WRLCK))
        return fcntl(fd, ofdSetLock, &lock) == 0
    }

    private static func unlock(_ fd: Int32) {
        var lock = wholeFile(Int16(F_UNLCK))
        _ = fcntl(fd, ofdSetLock, &lock)
    }
    #else
    private static func tryLock(_ fd: Int32) -> Bool {
        flock(fd, LOCK_EX | LOCK_NB) == 0
    }

    private static func unlock(_ fd: Int32) {
        flock(fd, LOCK_UN)
    }
    #endif
}
