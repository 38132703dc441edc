import Catalog
import Foundation
import Logging
import PostgresNIO
@testable import Snapshot
import Testing
import TestSupport

/// `store: postgres://…`: the URL forms, where the password may come from, and TLS settings.
@Suite struct PostgresLocationParseTests {
    func parse(_ url: String, _ environment: [String: String] = [:]) throws(StoreSyncError) -> PostgresLocation {
        try PostgresLocation.parse(url, environment: environment)
    }

    /// The registered engines decide what a job's `store:` names: both schemes
    /// are PostgreSQL's (in any case), anything else is a SQLite file's path.
    @Test func recognisesBothSchemes() {
        for url in ["postgres://u@h/db", "postgresql://u@h/db", "PostgreSQL://u@h/db"] {
            #expect(PostgresLocation.isPostgres(url))
            #expect(StoreLocation.isServer(url))
        }
        for path in ["state/demo.sqlite", "postgres.sqlite", "postgres:/not-a-url"] {
            #expect(!PostgresLocation.isPostgres(path))
            #expect(!StoreLocation.isServer(path))
        }
        // The form is the server engine's to check; a path has none.
        #expect(throws: StoreSyncError.self) { try StoreLocation.checkForm("postgres://u:secret@h/db") }
        #expect(throws: Never.self) { try StoreLocation.checkForm("state/demo.sqlite") }
    }

    @Test func tcpWithPortAndDefaults() throws {
        let location = try parse("postgres://sync@db.example.net:6543/storesync")
        #expect(location.endpoint == .tcp(host: "db.example.net", port: 6543))
        #expect(location.username == "sync")
        #expect(location.database == "storesync")
        #expect(location.usesTLS)
        #expect(location.passwordSource == .none)
        #expect(location.connectTimeoutSeconds == 10)
        let configuration = location.configuration
        #expect(configuration.host == "db.example.net")
        #expect(configuration.port == 6543)
        #expect(configuration.tls.isEnforced)
        #expect(configuration.password == nil)

        let unencrypted = try parse("postgresql://sync@10.0.0.5/storesync?sslmode=disable&connect_timeout=3")
        #expect(unencrypted.endpoint == .tcp(host: "10.0.0.5", port: 5432))
        #expect(!unencrypted.usesTLS)
        #expect(!unencrypted.configuration.tls.isAllowed)
        #expect(unencrypted.connectTimeoutSeconds == 3)

        let v6 = try parse("postgres://sync@[::1]:5433/db")
        #expect(v6.endpoint == .tcp(host: "::1", port: 5433))
        #expect(v6.redacted == "postgres://sync@[::1]:5433/db")
    }

    /// Every sslmode but disable is TLS with verification, libpq's `require` included.
    @Test(arguments: ["prefer", "require", "verify-ca", "verify-full", "allow"])
    func everyModeButDisableEnforcesTLS(mode: String) throws {
        let location = try parse("postgres://sync@db/storesync?sslmode=\(mode)")
        #expect(location.configuration.tls.isEnforced)
    }

    @Test func unixSocketForms() throws {
        let query = try parse("postgres://sync@/storesync?host=/run/pg")
        #expect(query.endpoint == .unixSocket(directory: "/run/pg", port: 5432))
        #expect(query.endpoint.socketPath == "/run/pg/.s.PGSQL.5432")
        #expect(query.configuration.unixSocketPath == "/run/pg/.s.PGSQL.5432")
        #expect(!query.usesTLS)

        let withPort = try parse("postgres://sync@/storesync?host=/tmp/x/&port=6000")
        #expect(withPort.endpoint.socketPath == "/tmp/x/.s.PGSQL.6000")
        #expect(withPort.redacted == "postgres://sync@/storesync?host=/tmp/x/&port=6000")

        let encoded = try parse("postgres://sync@%2Fvar%2Frun%2Fpostgresql/storesync")
        #expect(encoded.endpoint == .unixSocket(directory: "/var/run/postgresql", port: 5432))

        // No database: libpq's default, the user's name.
        #expect(try parse("postgres://sync@/?host=/run/pg").database == "sync")
    }

    @Test func userFromPGUSERWhenTheURLHasNone() throws {
        #expect(try parse("postgres:///db?host=/run/pg", ["PGUSER": "night"]).username == "night")
        let error = #expect(throws: StoreSyncError.self) { try parse("postgres:///db?host=/run/pg") }
        #expect(error?.message.contains("no user name") == true)
    }

    @Test func literalPasswordRefusedWithoutEchoingIt() throws {
        let error = #expect(throws: StoreSyncError.self) {
            try parse("postgres://sync:hunter2secret@db/storesync", ["PGPASSWORD": "other"])
        }
        let text = error.map { "\($0)" } ?? ""
        #expect(error?.code == .storage)
        #expect(text.contains("PGPASSWORD"))
        #expect(text.contains("${"))
        #expect(!text.contains("hunter2secret"))
        #expect(text.contains("sync:***@db"))
    }

    @Test func passwordFromNamedVariable() throws {
        let location = try parse("postgres://sync:${STORESYNC_PG_PASSWORD}@db/storesync",
                                 ["STORESYNC_PG_PASSWORD": "s3cret-value", "PGPASSWORD": "not-this-one"])
        #expect(location.passwordSource == .variable("STORESYNC_PG_PASSWORD"))
        #expect(location.configuration.password == "s3cret-value")
        #expect(location.redacted == "postgres://sync:${STORESYNC_PG_PASSWORD}@db:5432/storesync")
    }

    @Test func unsetVariableIsAnErrorNamingIt() {
        let error = #expect(throws: StoreSyncError.self) {
            try parse("postgres://sync:${STORESYNC_PG_PASSWORD}@db/storesync", ["PGPASSWORD": "x"])
        }
        #expect(error?.message.contains("STORESYNC_PG_PASSWORD is not set") == true)
        #expect(error?.remedy?.contains("STORESYNC_PG_PASSWORD") == true)
    }

    @Test func passwordFromPGPASSWORD() throws {
        let location = try parse("postgres://sync@db/storesync?sslmode=disable", ["PGPASSWORD": "from-env-9"])
        #expect(location.passwordSource == .pgpassword)
        #expect(location.configuration.password == "from-env-9")
    }

    @Test func redactedNeverShowsThePassword() throws {
        for (url, environment) in [
            ("postgres://sync@db:5433/storesync?sslmode=verify-full", ["PGPASSWORD": "pw-AAA"]),
            ("postgres://sync:${PW}@db/storesync?sslmode=disable", ["PW": "pw-AAA"]),
            ("postgres://sync@/storesync?host=/run/pg", ["PGPASSWORD": "pw-AAA"]),
        ] {
            let location = try parse(url, environment)
            #expect(location.configuration.password == "pw-AAA")
            #expect(!location.redacted.contains("pw-AAA"))
            #expect(location.redacted.hasPrefix("postgres://sync"))
        }
    }

    @Test(arguments: [
        ("postgres://sync@db/storesync?sslmode=verify", "unknown sslmode"),
        ("postgres://sync@db/storesync?ssl_mode=require", "unknown query item"),
        ("postgres://sync@db:99999/storesync", "port"),
        ("postgres://sync@db/storesync?connect_timeout=0", "connect_timeout"),
        ("postgres://sync@db/storesync?sslrootcert=/nonexistent/ca.pem", "cannot read sslrootcert /nonexistent/ca.pem"),
        ("mysql://sync@db/storesync", "postgres://"),
    ])
    func invalidLocations(url: String, expected: String) {
        let error = #expect(throws: StoreSyncError.self) { try parse(url) }
        #expect(error?.message.contains(expected) == true, "\(String(describing: error))")
    }
}

/// Connecting to real servers: TemporaryPostgres's socket server, a TLS server, password authentication.
@Suite(.enabled(if: TemporaryPostgres.testsEnabled, Comment(rawValue: TemporaryPostgres.skipReason)))
struct PostgresConnectTests {
    let logger = Logger(label: "test")

    func selectOne(_ connection: PostgresConnection) throws -> Int {
        let rows = try connection.query("SELECT 1 AS one", logger: logger).wait()
        return try rows.first!.decode(Int.self)
    }

    /// Closes `connection` and waits for it (PostgresNIO traps on one released while open).
    func closeWaiting(_ connection: PostgresConnection) {
        try? connection.close().wait()
    }

    func sslInUse(_ connection: PostgresConnection) throws -> Bool {
        let rows = try connection.query("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", logger: logger).wait()
        return try rows.first!.decode(Bool.self)
    }

    /// The error connecting to `location` gives; a connection made instead is closed (PostgresNIO
    /// traps on one dropped open) and recorded as the failure it is.
    func refusal(_ location: PostgresLocation) -> StoreSyncError? {
        do {
            let connection = try location.connect(logger: logger)
            try? connection.close().wait()
            Issue.record("connected to \(location.redacted), where a refusal was expected")
            return nil
        } catch {
            return error
        }
    }

    @Test func connectsOverTheUnixSocket() async throws {
        let server = try await TemporaryPostgres.shared()
        let url = try await server.createDatabase()
        let location = try PostgresLocation.parse(url, environment: [:])
        #expect(location.endpoint.socketPath == server.socketDirectory + "/.s.PGSQL.\(server.socketPort)")
        let connection = try location.connect(logger: logger)
        defer { closeWaiting(connection) }
        #expect(try selectOne(connection) == 1)
        let name = try await connection.query("SELECT current_database()", logger: logger).get().first!.decode(String.self)
        #expect(name == location.database)
    }

    @Test func aMissingDatabaseSaysHowToCreateIt() async throws {
        let server = try await TemporaryPostgres.shared()
        let location = try PostgresLocation.parse(server.socketURL(user: "postgres", database: "no_such_db"), environment: [:])
        let error = refusal(location)
        #expect(error?.code == .storeUnreachable)
        #expect(error?.message.contains("no_such_db") == true, "\(String(describing: error))")
        #expect(error?.remedy?.contains("createdb") == true)
    }

    @Test func nothingListeningSaysToCheckTheServer() throws {
        let directory = TestPaths.temporaryDirectory("pg-none")
        defer { try? FileManager.default.removeItem(at: directory) }
        let location = try PostgresLocation.parse("postgres://sync@/db?host=\(directory.path)", environment: [:])
        let error = refusal(location)
        #expect(error?.remedy?.contains("Is PostgreSQL running") == true, "\(String(describing: error))")
        #expect(error?.code == .storeUnreachable, "one code for a store that cannot be reached: \(String(describing: error))")
    }

    /// A server that accepts and never answers holds the connection no longer than connect_timeout
    /// (the bound covers the whole startup, not only the TCP connect).
    @Test func aSilentServerIsBoundedByConnectTimeout() throws {
        let (listener, port) = try LoopbackListener.open()
        defer { close(listener) }
        let location = try PostgresLocation.parse("postgres://sync@127.0.0.1:\(port)/db?sslmode=disable&connect_timeout=1",
                                                  environment: [:])
        let error = refusal(location)
        #expect(error?.message.contains("no answer within 1 s") == true, "\(String(describing: error))")
        #expect(error?.remedy?.contains("connect_timeout") == true)
    }

    /// PGPASSWORD reaches the server: a scram-sha-256 user gets in with it, and not without it or with another.
    @Test func passwordFromTheEnvironmentAuthenticates() async throws {
        let server = try await TemporaryPostgres.shared()
        let url = try await server.createDatabase()
        let password = "pw-" + UUID().uuidString
        let user = try await server.createUser(password: password)
        let database = try PostgresLocation.parse(url, environment: [:]).database
        let userURL = server.socketURL(user: user, database: database)

        let good = try PostgresLocation.parse(userURL, environment: ["PGPASSWORD": password]).connect(logger: logger)
        defer { closeWaiting(good) }
        #expect(try selectOne(good) == 1)

        let variable = try PostgresLocation.parse(userURL.replacingOccurrences(of: "://\(user)@", with: "://\(user):${MY_PW}@"),
                                                  environment: ["MY_PW": password])
        let viaVariable = try variable.connect(logger: logger)
        defer { closeWaiting(viaVariable) }
        #expect(try selectOne(viaVariable) == 1)

        let wrong = refusal(try PostgresLocation.parse(userURL, environment: ["PGPASSWORD": "wrong"]))
        #expect(wrong?.message.contains("password authentication failed") == true, "\(String(describing: wrong))")
        #expect(wrong?.remedy?.contains("PGPASSWORD") == true)
        #expect(!"\(String(describing: wrong))".contains(password))

        let none = refusal(try PostgresLocation.parse(userURL, environment: [:]))
        #expect(none?.remedy?.contains("set PGPASSWORD") == true, "\(String(describing: none))")
    }

    /// One TLS server for every TLS case (starting one costs an initdb).
    @Test func tlsVerifiedWithTheTestCARefusedWithoutItPlainWhenDisabled() async throws {
        let (server, certificates) = try await TemporaryPostgres.startTLS()
        defer { server.stop() }
        let port = try #require(server.tcpPort)

        let verified = try PostgresLocation.parse(
            "postgres://postgres@localhost:\(port)/postgres?sslmode=verify-full&sslrootcert=\(certificates.caCertificate)",
            environment: [:])
        let connection = try verified.connect(logger: logger)
        defer { closeWaiting(connection) }
        #expect(try sslInUse(connection))

        // The system's roots do not know the test CA: the certificate does not verify.
        let untrusted = try PostgresLocation.parse("postgres://postgres@localhost:\(port)/postgres?sslmode=require",
                                                   environment: [:])
        let refused = refusal(untrusted)
        #expect(refused?.message.contains("TLS failed: the server's certificate was not accepted") == true,
                "\(String(describing: refused))")
        #expect(refused?.remedy?.contains("sslrootcert") == true)

        // The certificate names localhost only: the same server by its address fails the host name
        // check, though the CA is trusted and libpq's sslmode=require would not look.
        let byAddress = try PostgresLocation.parse(
            "postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=require&sslrootcert=\(certificates.caCertificate)",
            environment: [:])
        let misnamed = refusal(byAddress)
        #expect(misnamed?.message.contains("TLS failed: the server's certificate does not name 127.0.0.1") == true,
                "\(String(describing: misnamed))")

        let unencrypted = try PostgresLocation.parse("postgres://postgres@127.0.0.1:\(port)/postgres?sslmode=disable",
                                                     environment: [:])
        let plainConnection = try unencrypted.connect(logger: logger)
        defer { closeWaiting(plainConnection) }
        #expect(try !sslInUse(plainConnection))
    }
}
