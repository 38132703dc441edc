import Foundation
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One whole-process measurement: wall time, peak resident memory, exit status.
package struct Measurement: Sendable {
    package var seconds: Double
    /// Peak resident set size of the process, in bytes (`ru_maxrss` from `wait4`).
    package var peakRSS: Int
    package var exitCode: Int32
}

/// Runs a command as its own process and measures it the way `/usr/bin/time`
/// does: wall clock around spawn and `wait4`, and the child's own peak RSS,
/// so every tool (Swift, C, Python) is measured alike and in isolation.
enum ProcessMeasure {
    struct Failed: Error, CustomStringConvertible {
        var command: [String]
        var reason: String
        var description: String { "\(command.joined(separator: " ")): \(reason)" }
    }

    /// Runs `argv` (argv[0] looked up in PATH) with stdout sent to `stdoutPath`
    /// (default /dev/null) and stderr to `stderrPath`.
    static func run(_ argv: [String], stdoutPath: String = "/dev/null", stderrPath: String,
                    directory: String? = nil) throws -> Measurement {
        let started = DispatchTime.now().uptimeNanoseconds
        let pid = try spawn(argv, stdoutPath: stdoutPath, stderrPath: stderrPath, directory: directory)
        return try wait(pid, argv, startedAt: started)
    }

    /// Starts every command at once and waits for all of them: the wall time
    /// from the first start to the last exit, and each one's own measurement
    /// (its seconds from that common start to its own exit).
    static func runTogether(_ commands: [(argv: [String], stdoutPath: String)], stderrPath: String)
        throws -> (seconds: Double, each: [Measurement]) {
        let started = DispatchTime.now().uptimeNanoseconds
        var pids: [pid_t] = []
        do {
            for command in commands {
                pids.append(try spawn(command.argv, stdoutPath: command.stdoutPath, stderrPath: stderrPath))
            }
        } catch {
            // None of the started ones may outlive a failed start.
            for pid in pids { kill(pid, SIGTERM) }
            for (pid, command) in zip(pids, commands) { _ = try? wait(pid, command.argv, startedAt: started) }
            throw error
        }
        let each = try zip(pids, commands).map { try wait($0, $1.argv, startedAt: started) }
        return (each.map(\.seconds).max() ?? 0, each)
    }

    static func spawn(_ argv: [String], stdoutPath: String, stderrPath: String, directory: String? = nil) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 1, stdoutPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_addopen(&actions, 2, stderrPath, O_WRONLY | O_CREAT | O_APPEND, 0o644)
        let command = directory.map { ["/bin/sh", "-c", "cd \"$0\" && exec \"$@\"", $0] + argv } ?? argv
        var cArgs = command.map { strdup($0) } + [nil]
        defer { for arg in cArgs { free(arg) } }
        var pid: pid_t = 0
        let status = posix_spawnp(&pid, command[0], &actions, nil, &cArgs, environ)
        guard status == 0 else { throw Failed(command: argv, reason: String(cString: strerror(status))) }
        return pid
    }

    /// Waits for `pid` and measures it: wall time since `startedAt` (uptime nanoseconds), peak RSS, exit code.
    static func wait(_ pid: pid_t, _ argv: [String], startedAt started: UInt64) throws -> Measurement {
        var waitStatus: Int32 = 0
        var usage = rusage()
        var result: pid_t
        repeat { result = wait4(pid, &waitStatus, 0, &usage) } while result == -1 && errno == EINTR
        let seconds = Double(DispatchTime.now().uptimeNanoseconds - started) / 1e9
        guard result == pid else { throw Failed(command: argv, reason: "wait4: \(String(cString: strerror(errno)))") }
        let exited = waitStatus & 0x7f == 0
        let code: Int32 = exited ? (waitStatus >> 8) & 0xff : 128 + (waitStatus & 0x7f)
        #if canImport(Darwin)
        let peak = Int(usage.ru_maxrss)  // bytes on Darwin
        #else
        let peak = Int(usage.ru_maxrss) * 1024  // kilobytes on Linux
        #endif
        return Measurement(seconds: seconds, peakRSS: peak, exitCode: code)
    }

    /// The full path of an executable found in PATH, if any.
    static func which(_ name: String) -> String? {
        if name.contains("/") { return FileManager.default.isExecutableFile(atPath: name) ? name : nil }
        for dir in (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin").split(separator: ":") {
            let path = "\(dir)/\(name)"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        return nil
    }
}
