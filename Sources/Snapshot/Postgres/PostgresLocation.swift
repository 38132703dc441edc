import Catalog
import Foundation
import NIOCore
import NIOPosix
import NIOSSL
import PostgresNIO
import Synchronization

/// Where a PostgreSQL snapshot lives: a job's `store:` value when it is a
/// `postgres://` or `postgresql://` URL, parsed into what a connection needs.
///
/// Forms (libpq's URL syntax, the subset a job needs):
/// - TCP: `postgres://USER@HOST[:PORT]/DB?sslmode=…&sslrootcert=/path/ca.pem`
/// - Unix socket: `postgres://USER@/DB?host=/path/to/socket/dir[&port=N]`; the
///   socket is the file `.s.PGSQL.<port>` (port 5432 unless given) in that folder.
///   A percent-encoded folder as the host (`postgres://USER@%2Frun%2Fpg/DB`) means the same.
///
/// Other query items: `port`, `connect_timeout` (seconds, default 10: the whole
/// connection, handshakes included, not only the TCP connect) and `application_name`.
/// Unknown items are refused, as libpq does, so a misspelt `sslmode` cannot silently
/// turn into the default.
///
/// The password never comes from the job file (Invariant 7): it is read from
/// `PGPASSWORD`, or from the variable a `${VAR}` in the password's place names
/// (`postgres://sync:${STORESYNC_PG_PASSWORD}@db/storesync`). A literal password
/// is refused.
///
/// TLS: none over a Unix socket (the kernel carries the bytes). Over TCP,
/// `sslmode=disable` connects in plain text and every other mode — the default
/// included — requires TLS and verifies both the server's certificate chain and
/// its host name. libpq's `require` (and `prefer`, `allow`) encrypt without checking
/// who answers, which an active attacker on the path defeats; here an unverified
/// connection is never made by default or by accident, so the only way to skip
/// verification is to turn TLS off in the job, where a reviewer sees it.
/// `verify-ca` verifies the host name too, for the same reason.
package struct PostgresLocation: Sendable {
    /// How the server is reached.
    package enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// `directory` holds the socket file `.s.PGSQL.<port>`.
        case unixSocket(directory: String, port: Int)

        /// The socket file's path, for a Unix socket.
        package var socketPath: String? {
            guard case .unixSocket(let directory, let port) = self else { return nil }
            return (directory.hasSuffix("/") ? directory : directory + "/") + ".s.PGSQL.\(port)"
        }
    }

    /// Where the password came from, in words safe to print.
    package enum PasswordSource: Sendable, Equatable {
        case none
        /// The `PGPASSWORD` environment variable.
        case pgpassword
        /// The variable a `${NAME}` in the URL named.
        case variable(String)
    }

    /// The value of `sslmode`, as written (nil: not written).
    package var sslMode: String?
    package var endpoint: Endpoint
    package var username: String
    package var database: String
    /// The PEM file of trusted roots (`sslrootcert=`), instead of the system's.
    package var rootCertificatePath: String?
    package var passwordSource: PasswordSource
    /// The bound on connecting, handshakes and authentication included (Invariant 8).
    package var connectTimeoutSeconds: Int
    package var applicationName: String?
    private var password: String?
    private var tls: PostgresConnection.Configuration.TLS

    /// Whether TLS is used: over TCP unless `sslmode=disable`.
    package var usesTLS: Bool { tls.isAllowed }

    /// Whether `store` names a PostgreSQL database rather than a SQLite file.
    package static func isPostgres(_ store: String) -> Bool {
        let lower = store.lowercased()
        return lower.hasPrefix("postgres://") || lower.hasPrefix("postgresql://")
    }

    private static let knownQueryItems: Set<String> = ["host", "port", "sslmode", "sslrootcert", "connect_timeout", "application_name"]
    private static let sslModes: Set<String> = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"]

    /// Parses `url`, resolving the password from `environment` and loading
    /// `sslrootcert`'s certificates (so a missing CA file fails here, naming it,
    /// rather than at the first connection).
    package static func parse(_ url: String, environment: [String: String]) throws(StoreSyncError) -> PostgresLocation {
        try parse(url, environment: environment, connecting: true)
    }

    /// Checks what `url` says, as `storesync validate` does, on a machine that
    /// need not be the one that runs the job: a password written in the URL,
    /// an unknown item or sslmode, a bad port fail here; a `${VAR}` that is not
    /// set and an `sslrootcert` that is not there do not (the run checks those).
    package static func checkForm(_ url: String) throws(StoreSyncError) {
        _ = try parse(url, environment: [:], connecting: false)
    }

    private static func parse(_ url: String, environment: [String: String], connecting: Bool) throws(StoreSyncError) -> PostgresLocation {
        let shown = masked(url)
        func invalid(_ reason: String, _ remedy: String) -> StoreSyncError {
            .storage(path: shown, reason: "invalid PostgreSQL location: \(reason)", remedy: remedy)
        }
        let form = "Write it as postgres://USER@HOST[:PORT]/DB?sslmode=verify-full or, for a Unix socket, postgres://USER@/DB?host=/socket/dir"

        guard let schemeEnd = url.range(of: "://"), isPostgres(url) else {
            throw invalid("it does not start with postgres:// or postgresql://", form)
        }
        var rest = Substring(url[schemeEnd.upperBound...])
        if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
        var query: [(String, String)] = []
        if let mark = rest.firstIndex(of: "?") {
            for item in rest[rest.index(after: mark)...].split(separator: "&") where !item.isEmpty {
                let parts = item.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                guard parts.count == 2, let key = parts[0].removingPercentEncoding,
                      let value = parts[1].removingPercentEncoding else {
                    throw invalid("the query item \"\(item)\" is not NAME=VALUE", form)
                }
                guard knownQueryItems.contains(key) else {
                    throw invalid("unknown query item \"\(key)\"",
                                  "Known items: \(knownQueryItems.sorted().joined(separator: ", "))")
                }
                query.append((key, value))
            }
            rest = rest[..<mark]
        }
        func item(_ name: String) -> String? { query.last(where: { $0.0 == name })?.1 }

        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        let path = slash < rest.endIndex ? rest[rest.index(after: slash)...] : ""

        // The last "@" ends the user part: a host never holds one, a ${VAR} never does either.
        var userinfo: Substring = ""
        var hostport = authority
        if let at = authority.lastIndex(of: "@") {
            userinfo = authority[..<at]
            hostport = authority[authority.index(after: at)...]
        }
        var userPart = userinfo
        var passwordPart: Substring?
        if let colon = userinfo.firstIndex(of: ":") {
            userPart = userinfo[..<colon]
            passwordPart = userinfo[userinfo.index(after: colon)...]
        }

        guard let decodedUser = String(userPart).removingPercentEncoding else {
            throw invalid("the user name is not valid percent-encoding", form)
        }
        guard let username = decodedUser.isEmpty ? (connecting ? environment["PGUSER"] : "PGUSER") : decodedUser, !username.isEmpty else {
            throw invalid("no user name", "Write the user before the host (postgres://USER@HOST/DB) or set PGUSER")
        }

        var password: String?
        var source = PasswordSource.none
        if let passwordPart, !passwordPart.isEmpty {
            guard let name = variableName(passwordPart) else {
                throw invalid("the URL holds a password, and secrets must not be written in job files",
                              "Remove it from the URL and set PGPASSWORD in the environment, or write "
                                  + "postgres://\(username):${VARIABLE}@… and set that variable")
            }
            guard let value = environment[name] ?? (connecting ? nil : "") else {
                throw invalid("the password variable \(name) is not set",
                              "Set \(name) in the environment of the run (a Kubernetes Secret, a cron environment line)")
            }
            password = value
            source = .variable(name)
        } else if let value = environment["PGPASSWORD"] {
            password = value
            source = .pgpassword
        }

        var port = 5432
        if let portText = item("port") {
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("port \"\(portText)\" is not a number from 1 to 65535", form)
            }
            port = value
        }
        var host = ""
        if hostport.hasPrefix("[") {
            // An IPv6 literal: [::1] or [::1]:5433.
            guard let close = hostport.firstIndex(of: "]") else { throw invalid("an IPv6 host lacks its \"]\"", form) }
            host = String(hostport[hostport.index(after: hostport.startIndex)..<close])
            let after = hostport[hostport.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":"), let value = Int(after.dropFirst()), (1...65535).contains(value) else {
                    throw invalid("the port after the IPv6 host is not a number from 1 to 65535", form)
                }
                port = value
            }
        } else if let colon = hostport.lastIndex(of: ":") {
            let portText = hostport[hostport.index(after: colon)...]
            guard let value = Int(portText), (1...65535).contains(value) else {
                throw invalid("port \"\(portText)\" is not a number from 1 to 65535", form)
            }
            host = String(hostport[..<colon])
            port = value
        } else {
            host = String(hostport)
        }
        guard let decodedHost = host.removingPercentEncoding else {
            throw invalid("the host is not valid percent-encoding", form)
        }
        host = decodedHost
        if let queryHost = item("host"), !queryHost.isEmpty { host = queryHost }

        guard let database = String(path).removingPercentEncoding else {
            throw invalid("the database name is not valid percent-encoding", form)
        }

        var timeout = 10
        if let text = item("connect_timeout") {
            // libpq treats 0 as "wait forever"; every wait has a bound here (Invariant 8).
            guard let value = Int(text), value > 0 else {
                throw invalid("connect_timeout \"\(text)\" is not a whole number of seconds above 0", form)
            }
            timeout = value
        }

        let sslMode = item("sslmode")
        if let sslMode, !sslModes.contains(sslMode) {
            throw invalid("unknown sslmode \"\(sslMode)\"", "Use verify-full (the default) or disable; "
                              + "\(sslModes.sorted().joined(separator: ", ")) are understood")
        }
        let rootCertificatePath = item("sslrootcert")

        let endpoint: Endpoint
        let tls: PostgresConnection.Configuration.TLS
        if host.isEmpty || host.hasPrefix("/") {
            // libpq's default socket folder is a build setting; Debian's (and this tool's) is /var/run/postgresql.
            endpoint = .unixSocket(directory: host.isEmpty ? "/var/run/postgresql" : host, port: port)
            tls = .disable
        } else {
            endpoint = .tcp(host: host, port: port)
            if sslMode == "disable" || !connecting {
                tls = .disable
            } else {
                tls = try verifiedTLS(rootCertificatePath: rootCertificatePath, shown: shown)
            }
        }

        return PostgresLocation(
            sslMode: sslMode, endpoint: endpoint, username: username,
            database: database.isEmpty ? username : database, rootCertificatePath: rootCertificatePath,
            passwordSource: source, connectTimeoutSeconds: timeout, applicationName: item("application_name"),
            password: password, tls: tls)
    }

    /// `NAME` when `text` is `${NAME}` with NAME a valid environment variable name.
    private static func variableName(_ text: Substring) -> String? {
        guard text.hasPrefix("${"), text.hasSuffix("}"), text.count > 3 else { return nil }
        let name = text.dropFirst(2).dropLast()
        guard let first = name.first, first == "_" || (first.isASCII && first.isLetter),
              name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }) else { return nil }
        return String(name)
    }

    /// TLS that requires the server's certificate chain and host name to check
    /// out, against `rootCertificatePath`'s certificates or the system's roots.
    private static func verifiedTLS(rootCertificatePath: String?, shown: String) throws(StoreSyncError) -> PostgresConnection.Configuration.TLS {
        var configuration = TLSConfiguration.makeClientConfiguration()
        configuration.certificateVerification = .fullVerification
        if let rootCertificatePath {
            do {
                let certificates = try NIOSSLCertificate.fromPEMFile(rootCertificatePath)
                guard !certificates.isEmpty else {
                    throw StoreSyncError.storage(path: shown, reason: "sslrootcert \(rootCertificatePath) holds no PEM certificate",
                                                 remedy: "Point sslrootcert at the PEM file of the CA that signed the server's certificate")
                }
                configuration.trustRoots = .certificates(certificates)
            } catch let error as StoreSyncError {
                throw error
            } catch {
                throw .storage(path: shown, reason: "cannot read sslrootcert \(rootCertificatePath)",
                               remedy: "Point sslrootcert at a readable PEM file of the CA that signed the server's certificate",
                               cause: Described(error))
            }
        }
        do {
            return .require(try NIOSSLContext(configuration: configuration))
        } catch {
            throw .storage(path: shown, reason: "cannot set up TLS", remedy: "Check sslrootcert and the system's CA certificates",
                           cause: Described(error))
        }
    }

    /// `url` with any password replaced by `***` (for errors about a URL that did not parse).
    private static func masked(_ url: String) -> String {
        guard let schemeEnd = url.range(of: "://") else { return url }
        let rest = url[schemeEnd.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" || $0 == "#" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") else { return url }
        let password = authority[authority.index(after: colon)..<at]
        let keep = variableName(password) != nil ? String(password) : "***"
        return String(url[..<authority.index(after: colon)]) + keep + String(url[at...])
    }

    /// The location for messages and logs: user, host or socket, database and
    /// TLS settings, and `${VAR}` where a variable holds the password — never the password.
    package var redacted: String {
        var text = "postgres://" + username
        if case .variable(let name) = passwordSource { text += ":${\(name)}" }
        text += "@"
        var query: [String] = []
        switch endpoint {
        case .tcp(let host, let port):
            text += (host.contains(":") ? "[\(host)]" : host) + ":\(port)"
        case .unixSocket(let directory, let port):
            query.append("host=\(directory)")
            if port != 5432 { query.append("port=\(port)") }
        }
        text += "/" + database
        if let sslMode { query.append("sslmode=\(sslMode)") }
        if let rootCertificatePath { query.append("sslrootcert=\(rootCertificatePath)") }
        return query.isEmpty ? text : text + "?" + query.joined(separator: "&")
    }

    /// The connection settings for PostgresNIO.
    package var configuration: PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint {
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: username, password: password, database: database, tls: tls)
        case .unixSocket:
            configuration = .init(unixSocketPath: endpoint.socketPath!, username: username, password: password, database: database)
        }
        configuration.options.connectTimeout = .seconds(Int64(connectTimeoutSeconds))
        if let applicationName { configuration.options.additionalStartupParameters.append(("application_name", applicationName)) }
        return configuration
    }

    private static let connectionIDs = Atomic<Int>(0)

    /// Opens a connection, blocking the calling thread (which must not be one of
    /// NIO's event loops) for at most ``connectTimeoutSeconds``: PostgresNIO
    /// applies that bound to the whole startup (TCP, TLS, authentication), so a
    /// server that accepts and then says nothing cannot hold a run (Invariant 8;
    /// `aSilentServerIsBoundedByConnectTimeout` checks it).
    package func connect(logger: Logger) throws(StoreSyncError) -> PostgresConnection {
        let id = Self.connectionIDs.wrappingAdd(1, ordering: .relaxed).newValue
        do {
            return try PostgresConnection.connect(on: MultiThreadedEventLoopGroup.singleton.next(), configuration: configuration,
                                                  id: id, logger: logger).wait()
        } catch {
            throw describe(error)
        }
    }

    /// An error underneath, kept as its text: NIO's and BoringSSL's errors are not all `Sendable`.
    private struct Described: Error, Sendable, CustomStringConvertible {
        var description: String
        init(_ error: any Error) { description = String(describing: error) }
        init(_ text: String) { description = text }
    }

    /// What failed, in the reader's terms, and what to check.
    private func describe(_ error: any Error) -> StoreSyncError {
        let place: String
        switch endpoint {
        case .tcp(let host, let port): place = "\(host):\(port)"
        case .unixSocket: place = endpoint.socketPath!
        }
        let running = "Is PostgreSQL running and listening at \(place)? (pg_isready -h \(hostForTools) -p \(port))"
        let passwordHint: String = switch passwordSource {
        case .none: "No password was given: set PGPASSWORD, or write ${VARIABLE} as the URL's password and set that variable"
        case .pgpassword: "Check PGPASSWORD and the user \(username)"
        case .variable(let name): "Check the variable \(name) and the user \(username)"
        }
        if let channelError = ((error as? PSQLError)?.underlying ?? error) as? ChannelError, case .connectTimeout = channelError {
            return .storeUnreachable(path: redacted, reason: "could not connect: no answer within \(connectTimeoutSeconds) s",
                            remedy: running + "; connect_timeout= in the URL sets the wait")
        }
        guard let psql = error as? PSQLError else {
            return .storeUnreachable(path: redacted, reason: "could not connect: \(error)", remedy: running, cause: Described(error))
        }
        if psql.code == .sslUnsupported {
            return .storeUnreachable(path: redacted, reason: "could not connect: the server does not offer TLS",
                            remedy: "Turn on ssl on the server, or write sslmode=disable in the URL if the network "
                                + "to it is trusted (plain text)")
        }
        if psql.code == .authMechanismRequiresPassword {
            return .storeUnreachable(path: redacted, reason: "could not connect: the server asks for a password", remedy: passwordHint)
        }
        if psql.code == .server, let info = psql.serverInfo {
            let message = info[.message] ?? "error"
            let state = info[.sqlState] ?? ""
            // 28P01 invalid_password, 28000 invalid_authorization_specification (pg_hba refuses).
            let remedy = state.hasPrefix("28") ? passwordHint + "; the server's pg_hba.conf decides who may connect from where"
                : state == "3D000" ? "Create the database \(database) (createdb \(database)) or fix its name in the URL"
                : running
            return .storeUnreachable(path: redacted, reason: "could not connect: the server said: \(message)", remedy: remedy)
        }
        if let underlying = psql.underlying {
            if underlying is NIOSSLError || underlying is NIOSSLExtraError || underlying is BoringSSLError {
                let roots = rootCertificatePath.map { "the CA in sslrootcert (\($0))" } ?? "a CA the system trusts"
                let what = (underlying as? NIOSSLExtraError) == .failedToValidateHostname
                    ? "the server's certificate does not name \(hostForTools)"
                    : "the server's certificate was not accepted: is it signed by \(roots)?"
                return .storeUnreachable(path: redacted, reason: "could not connect: TLS failed: \(what)",
                                remedy: "The certificate must be signed by \(roots) and name the host written in the URL; "
                                    + "point sslrootcert= at the PEM file of the CA that signed it",
                                cause: Described(underlying))
            }
            return .storeUnreachable(path: redacted, reason: "could not connect: \(underlying)", remedy: running)
        }
        // PSQLError's description is generic on purpose; its reflection carries the details.
        return .storeUnreachable(path: redacted, reason: "could not connect: \(psql.code)", remedy: running,
                        cause: Described(String(reflecting: psql)))
    }

    private var hostForTools: String {
        switch endpoint {
        case .tcp(let host, _): host
        case .unixSocket(let directory, _): directory
        }
    }

    private var port: Int {
        switch endpoint {
        case .tcp(_, let port), .unixSocket(_, let port): port
        }
    }
}
