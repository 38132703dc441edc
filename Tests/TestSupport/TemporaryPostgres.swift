import Catalog
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A throwaway PostgreSQL server for tests: `initdb` into a fresh temporary
/// folder, started on first use, stopped when the test process exits.
///
/// The shared server listens on a Unix socket only (`listen_addresses=''`), so
/// it binds no port on the machine; `port` merely names its socket file. Each
/// test takes its own database (``createDatabase()``), so suites run in parallel.
/// Durability is off (`fsync`, `synchronous_commit`, `full_page_writes`): the
/// data dies with the process anyway.
///
/// Never left running: at exit an `atexit` handler sends the postmaster
/// SIGQUIT (immediate shutdown), and a watchdog shell reading a pipe that only
/// this process holds open gets end-of-file however the process ends (even
/// `kill -9`), then stops the server and removes its folder.
///
/// As root, `initdb` and `postgres` refuse to run, so they run as the
/// `postgres` user (`runuser`) in a folder it owns.
public final class TemporaryPostgres: Sendable {
    /// The folder that holds the data folder, the socket, the log and any certificates.
    public let directory: String
    /// The folder the Unix socket is in (the libpq `host=` of a socket URL).
    public var socketDirectory: String { directory }
    /// The TCP port when the server listens on 127.0.0.1 (the TLS variant); nil for a socket-only server.
    public let tcpPort: Int?
    /// The socket's port number: it names the socket file, `.s.PGSQL.<port>`
    /// (5432 for the socket-only server, which binds no port; the TCP port for the TLS server).
    public let socketPort: Int
    private let binDirectory: String
    private var dataDirectory: String { directory + "/data" }

    /// An error of the test server, with what it printed.
    public struct Failure: Error, Sendable, CustomStringConvertible {
        public var description: String
    }

    // MARK: - Availability

    /// Whether the environment asks for the PostgreSQL tests to fail rather
    /// than be skipped when PostgreSQL is missing (CI sets it).
    public static var isRequired: Bool { ProcessInfo.processInfo.environment["STORESYNC_REQUIRE_POSTGRES"] == "1" }

    /// Whether PostgreSQL's server programs are installed (and, as root, the `postgres` user exists).
    public static var isAvailable: Bool {
        guard binDirectory != nil else { return false }
        return getuid() != 0 || getpwnam("postgres") != nil
    }

    /// Whether tests that need PostgreSQL should run: when it is installed, or
    /// when it is required (they then fail, saying how to install it).
    public static var testsEnabled: Bool { isAvailable || isRequired }

    /// Why PostgreSQL tests were skipped, and how to run them.
    public static let skipReason = "PostgreSQL is not installed (Debian: apt-get install -y postgresql); "
        + "set STORESYNC_REQUIRE_POSTGRES=1 to make these tests fail instead of being skipped"

    /// The folder of `initdb`, `pg_ctl`, `postgres` and `psql`: Debian's
    /// /usr/lib/postgresql/<newest>/bin, else `pg_config --bindir`, else the PATH.
    public static let binDirectory: String? = {
        let programs = ["initdb", "pg_ctl", "postgres", "psql"]
        func complete(_ dir: String) -> Bool {
            programs.allSatisfy { FileManager.default.isExecutableFile(atPath: dir + "/" + $0) }
        }
        let root = "/usr/lib/postgresql"
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [])
            .compactMap(Int.init).sorted(by: >)
        for version in versions where complete("\(root)/\(version)/bin") { return "\(root)/\(version)/bin" }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/usr/local/bin"
        for dir in path.split(separator: ":").map(String.init) where FileManager.default.isExecutableFile(atPath: dir + "/pg_config") {
            if let out = try? run([dir + "/pg_config", "--bindir"]).trimmingCharacters(in: .whitespacesAndNewlines), complete(out) {
                return out
            }
        }
        for dir in path.split(separator: ":").map(String.init) where complete(dir) { return dir }
        return nil
    }()

    // MARK: - Servers

    private static let sharedServer = Mutex<Result<TemporaryPostgres, Failure>?>(nil)

    /// The process's socket-only server, started on first use. A failed start
    /// is remembered: every later caller gets the same error at once.
    ///
    /// Started, and waited for, off Swift's cooperative pool (``awaitOffPool(_:)``):
    /// the first start takes seconds, and dozens of tests ask at once.
    public static func shared() async throws -> TemporaryPostgres {
        try await awaitOffPool { try sharedWaitingHere() }
    }

    /// ``shared()`` for synchronous code, waiting on the calling thread: only
    /// where the server runs already (a helper reading a database a test made).
    public static func sharedWaitingHere() throws -> TemporaryPostgres {
        let result = sharedServer.withLock { slot in
            if let slot { return slot }
            let started: Result<TemporaryPostgres, Failure>
            do { started = .success(try TemporaryPostgres(tls: nil)) } catch let error as Failure {
                started = .failure(error)
            } catch {
                started = .failure(Failure(description: "\(error)"))
            }
            slot = started
            return started
        }
        return try result.get()
    }

    /// The files of a test certificate authority and a server certificate it signed.
    public struct Certificates: Sendable {
        /// The CA's certificate (PEM): what `sslrootcert=` points at.
        public var caCertificate: String
        /// The server's certificate (PEM), for the name `localhost` only (not 127.0.0.1: the host name check is tested).
        public var serverCertificate: String
        public var serverKey: String
    }

    /// A server of its own with `ssl=on` on 127.0.0.1 at a free TCP port,
    /// its certificate (for the name `localhost` only) signed by a fresh test CA.
    ///
    /// The port is found by binding port 0 and closing the socket before
    /// PostgreSQL binds it: another process could take it in between. That race
    /// is tiny, and it fails the start loudly (the log says the address is in
    /// use) rather than connecting anywhere else. The caller stops it.
    public static func startTLS() async throws -> (server: TemporaryPostgres, certificates: Certificates) {
        let server = try await awaitOffPool { try TemporaryPostgres(tls: ()) }
        let dir = server.directory
        return (server, Certificates(caCertificate: dir + "/ca.crt", serverCertificate: dir + "/server.crt",
                                     serverKey: dir + "/server.key"))
    }

    private init(tls: Void?) throws {
        guard let bin = Self.binDirectory else { throw Failure(description: Self.skipReason) }
        binDirectory = bin
        tcpPort = tls == nil ? nil : try Self.freePort()
        socketPort = tcpPort ?? 5432
        let asRoot = getuid() == 0
        var owner: (uid: uid_t, gid: gid_t)?
        if asRoot {
            guard let entry = getpwnam("postgres") else {
                throw Failure(description: "running as root, PostgreSQL must run as the user postgres, and there is none "
                                  + "(Debian's postgresql package creates it)")
            }
            owner = (entry.pointee.pw_uid, entry.pointee.pw_gid)
        }
        directory = try Self.makeDirectory()
        let prefix = asRoot ? [Self.runuser, "-u", "postgres", "--"] : []
        if let owner { chown(directory, owner.uid, owner.gid) }
        // Started before anything that can fail, so even a half-made server's folder is removed.
        try Self.startWatchdog(prefix: prefix, bin: bin, directory: directory)

        try Self.run(prefix + [bin + "/initdb", "-D", directory + "/data", "-U", "postgres", "-A", "trust",
                                "-E", "UTF8", "--locale=C", "--no-sync", "--no-instructions"])

        var settings = [
            "unix_socket_directories = '\(directory)'",
            "port = \(socketPort)",
            "fsync = off",
            "synchronous_commit = off",
            "full_page_writes = off",
            "max_connections = 200",
        ]
        if tcpPort != nil {
            try Self.makeCertificates(in: directory)
            settings += [
                "listen_addresses = '127.0.0.1'",
                "ssl = on",
                "ssl_cert_file = '\(directory)/server.crt'",
                "ssl_key_file = '\(directory)/server.key'",
            ]
        } else {
            settings.append("listen_addresses = ''")
        }
        let conf = directory + "/data/postgresql.conf"
        let existing = (try? String(contentsOfFile: conf, encoding: .utf8)) ?? ""
        try (existing + "\n# TemporaryPostgres\n" + settings.joined(separator: "\n") + "\n")
            .write(toFile: conf, atomically: false, encoding: .utf8)
        // The superuser enters without a password; every other user proves theirs (the password tests).
        try """
            local all postgres trust
            local all all scram-sha-256
            host all postgres 127.0.0.1/32 trust
            host all all 127.0.0.1/32 scram-sha-256

            """.write(toFile: directory + "/data/pg_hba.conf", atomically: false, encoding: .utf8)
        if let owner {
            for file in ["server.crt", "server.key", "ca.crt"] where FileManager.default.fileExists(atPath: directory + "/" + file) {
                chown(directory + "/" + file, owner.uid, owner.gid)
            }
        }

        // -w: pg_ctl returns once the server accepts connections, waiting at most -t seconds.
        do {
            try Self.run(Self.closingInheritedDescriptors + prefix
                             + [bin + "/pg_ctl", "start", "-D", directory + "/data", "-l", directory + "/server.log",
                                "-w", "-t", "120", "-s"])
        } catch {
            let log = (try? String(contentsOfFile: directory + "/server.log", encoding: .utf8)) ?? ""
            throw Failure(description: "PostgreSQL did not start: \(error)\n\(log)")
        }
        if let pid = postmasterPID { Self.registerForExit(pid) }
    }

    private var postmasterPID: pid_t? {
        guard let text = try? String(contentsOfFile: dataDirectory + "/postmaster.pid", encoding: .utf8),
              let first = text.split(separator: "\n").first else { return nil }
        return pid_t(first)
    }

    /// Stops the server now (immediate shutdown); its folder goes when the process exits.
    public func stop() {
        if let pid = postmasterPID { kill(pid, SIGQUIT) }
    }

    // MARK: - Databases and users

    /// A fresh, empty database, as a socket URL: `postgres://postgres@/NAME?host=DIR`.
    public func createDatabase() async throws -> String {
        let name = "t_" + Self.randomHex(12)
        _ = try await awaitOffPool { try self.psql("CREATE DATABASE :\"name\";", variables: ["name": name]) }
        return socketURL(user: "postgres", database: name)
    }

    /// A new login role that must give `password` (scram-sha-256), returning its name.
    public func createUser(password: String) async throws -> String {
        let name = "u_" + Self.randomHex(12)
        _ = try await awaitOffPool { try self.psql("SET password_encryption = 'scram-sha-256'; CREATE ROLE :\"name\" LOGIN PASSWORD :'password';",
                                               variables: ["name": name, "password": password]) }
        return name
    }

    /// The URL of `database` for `user` over the Unix socket.
    public func socketURL(user: String, database: String) -> String {
        var url = "postgres://\(user)@/\(database)?host=\(socketDirectory)"
        if socketPort != 5432 { url += "&port=\(socketPort)" }
        return url
    }

    /// Runs SQL through `psql` as the superuser; `:"name"` and `:'name'` in
    /// `sql` are `variables`, quoted by psql (nothing is pasted into the SQL).
    @discardableResult
    public func psql(_ sql: String, database: String = "postgres", variables: [String: String] = [:]) throws -> String {
        var arguments = [binDirectory + "/psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1",
                         "-h", socketDirectory, "-p", String(socketPort), "-U", "postgres", "-d", database]
        for (name, value) in variables.sorted(by: { $0.key < $1.key }) { arguments += ["-v", "\(name)=\(value)"] }
        // Through standard input, where psql interpolates variables (it does not in -c).
        return try Self.run(arguments, input: sql)
    }

    // MARK: - Processes

    private static var runuser: String {
        ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"].first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? "runuser"
    }

    /// Runs a program to its end; its output, or a `Failure` with it.
    @discardableResult
    static func run(_ arguments: [String], input: String? = nil) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: arguments[0].hasPrefix("/") ? arguments[0] : "/usr/bin/env")
        process.arguments = arguments[0].hasPrefix("/") ? Array(arguments.dropFirst()) : arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = output
        let stdin = Pipe()
        process.standardInput = input == nil ? FileHandle.nullDevice : stdin
        do { try process.run() } catch {
            throw Failure(description: "could not start \(arguments[0]): \(error)")
        }
        if let input {
            stdin.fileHandleForWriting.write(Data(input.utf8))
            try? stdin.fileHandleForWriting.close()
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let text = String(decoding: data, as: UTF8.self)
        guard process.terminationStatus == 0 else {
            throw Failure(description: "\(arguments.joined(separator: " ")) exited \(process.terminationStatus): \(text)")
        }
        return text
    }

    /// A new folder with a short path: a Unix socket's path must fit in 107 bytes.
    private static func makeDirectory() throws -> String {
        var base = FileManager.default.temporaryDirectory.path
        if base.utf8.count > 60 { base = "/tmp" }
        var template = Array((base + "/sspg-XXXXXX").utf8CString)
        guard let made = mkdtemp(&template) else {
            throw Failure(description: "could not make a folder in \(base): \(String(cString: strerror(errno)))")
        }
        return String(cString: made)
    }

    /// A shell that waits for end-of-file on a pipe whose writing end only this
    /// process holds (close-on-exec, so no child inherits it), then stops the
    /// server and removes its folder: the kernel closes the pipe however this
    /// process ends, `kill -9` included, so no server outlives its tests.
    private static func startWatchdog(prefix: [String], bin: String, directory: String) throws {
        var fds: [Int32] = [0, 0]
        #if canImport(Glibc)
        // A socket pair rather than pipe(2): it is made close-on-exec atomically, so a process
        // another thread spawns at the same instant cannot inherit the writing end.
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue | SOCK_CLOEXEC.rawValue), 0, &fds) == 0 else {
            throw Failure(description: "socketpair failed: \(String(cString: strerror(errno)))")
        }
        #else
        guard pipe(&fds) == 0 else { throw Failure(description: "pipe failed") }
        _ = fcntl(fds[0], F_SETFD, FD_CLOEXEC)
        _ = fcntl(fds[1], F_SETFD, FD_CLOEXEC)
        #endif
        let quoted = (prefix + [bin + "/pg_ctl", "stop", "-D", directory + "/data", "-m", "immediate", "-w", "-t", "60"])
            .map(shellQuoted).joined(separator: " ")
        let script = closeInherited + "; read _; if [ -f \(shellQuoted(directory + "/data/postmaster.pid")) ]; then \(quoted) >/dev/null 2>&1; fi; "
            + "rm -rf \(shellQuoted(directory))"
        // posix_spawn, not Foundation's Process: Process's monitor thread, told of any child's exit,
        // blocks in waitpid on each child it started, and this one lives until the tests end.
        #if canImport(Glibc)
        var actions = posix_spawn_file_actions_t()
        #else
        var actions: posix_spawn_file_actions_t?
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, fds[0], 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0)
        let words: [String] = [shell, "-c", script]
        let argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) }
        defer { argv.forEach { free($0) } }
        var pid = pid_t()
        let status = posix_spawn(&pid, shell, &actions, nil, argv + [nil], environ)
        close(fds[0])
        guard status == 0 else {
            close(fds[1])
            throw Failure(description: "could not start the watchdog shell: \(String(cString: strerror(status)))")
        }
        // fds[1] stays open, on purpose, until the process ends.
        watchdogPipes.withLock { $0.append(fds[1]) }
    }

    /// bash, for ``closeInherited``: dash's redirections take descriptors 0 to 9 only.
    private static let shell = FileManager.default.isExecutableFile(atPath: "/bin/bash") ? "/bin/bash" : "/bin/sh"

    /// Shell words that close every descriptor above 2 (Linux's /proc lists them; elsewhere nothing is closed).
    /// Foundation's `Process` passes on every descriptor not marked close-on-exec, other threads'
    /// pipes included; a server that kept one open would hold back that pipe's end-of-file until it stops.
    private static let closeInherited = #"for fd in /proc/self/fd/*; do n=${fd##*/}; [ "$n" -gt 2 ] 2>/dev/null && eval "exec $n>&-"; done"#

    /// A prefix that runs the command after ``closeInherited``: for what outlives the call (the server).
    private static let closingInheritedDescriptors = [shell, "-c", closeInherited + #"; exec "$@""#, "sh"]

    private static let watchdogPipes = Mutex<[Int32]>([])
    private static let postmasters = Mutex<[pid_t]>([])

    private static func registerForExit(_ pid: pid_t) {
        let first = postmasters.withLock { list in
            list.append(pid)
            return list.count == 1
        }
        if first {
            atexit {
                // Immediate shutdown now; the watchdogs remove the folders once the pipes close.
                for pid in TemporaryPostgres.postmasters.withLock({ $0 }) { kill(pid, SIGQUIT) }
            }
        }
    }

    private static func shellQuoted(_ text: String) -> String {
        "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }

    private static func randomHex(_ count: Int) -> String {
        String((0..<count).map { _ in "0123456789abcdef".randomElement()! })
    }

    private static func freePort() throws -> Int {
        let (socket, port) = try LoopbackListener.open()
        close(socket)
        return port
    }

    /// A test CA and a server certificate it signs for localhost, made with `openssl`.
    private static func makeCertificates(in dir: String) throws {
        let openssl = ["/usr/bin/openssl", "/usr/local/bin/openssl"].first { FileManager.default.isExecutableFile(atPath: $0) }
            ?? "openssl"
        let curve = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try run([openssl, "req", "-x509"] + curve + ["-keyout", dir + "/ca.key", "-out", dir + "/ca.crt", "-days", "3",
                 "-subj", "/CN=storesync test CA",
                 "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try run([openssl, "req"] + curve + ["-keyout", dir + "/server.key", "-out", dir + "/server.csr",
                 "-subj", "/CN=localhost"])
        try """
            basicConstraints = CA:FALSE
            keyUsage = critical, digitalSignature, keyEncipherment
            extendedKeyUsage = serverAuth
            subjectAltName = DNS:localhost

            """.write(toFile: dir + "/server.ext", atomically: false, encoding: .utf8)
        try run([openssl, "x509", "-req", "-in", dir + "/server.csr", "-CA", dir + "/ca.crt", "-CAkey", dir + "/ca.key",
                 "-CAcreateserial", "-out", dir + "/server.crt", "-days", "3", "-extfile", dir + "/server.ext"])
        // PostgreSQL refuses a key others can read.
        chmod(dir + "/server.key", 0o600)
    }
}
