import Catalog
import Foundation
import Logging
import Synchronization
import SyncEngine
import Testing
import TestSupport

/// Job files read by operators: `${VAR}`, `STORESYNC_` overrides, secret
/// headers from the environment, and `--set` for one run.
@Suite struct JobEnvironmentTests {
    static let base = """
        name: env
        store: ${STATE_DIR}/snapshot.sqlite
        output: ${STATE_DIR:-/srv/default}/out
        sources:
          - name: podcasts
            kind: itunes-search
            terms: [news]
          - name: market
            kind: marketplace
        """

    func load(_ yaml: String = base, env: [String: String], sets: [String] = []) throws(StoreSyncError) -> JobSpec {
        try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs", rules: .cli,
                            inputs: JobInputs(environment: env, sets: sets))
    }

    func issues(_ yaml: String = base, env: [String: String], sets: [String] = []) -> [JobFileIssue] {
        do {
            _ = try load(yaml, env: env, sets: sets)
            return []
        } catch {
            return error.issues
        }
    }

    // MARK: ${VAR}

    @Test func variablesAreExpandedInValues() throws {
        let job = try load(env: ["STATE_DIR": "/var/lib/storesync"])
        #expect(job.storePath == "/var/lib/storesync/snapshot.sqlite")
        #expect(job.outputDirectory == "/var/lib/storesync/out")
        let fallback = try load(env: ["STATE_DIR": "/x"], sets: [])
        #expect(fallback.outputDirectory == "/x/out", "a set variable wins over its default")
    }

    @Test func anUnsetVariableIsAProblemNamingLineKeyAndVariable() {
        let found = issues(env: [:])
        #expect(found.count == 1, "\(found)")
        let issue = found.first
        #expect(issue?.file == "job.yml")
        #expect(issue?.line == 2)
        #expect(issue?.keyPath == "store")
        #expect(issue?.message.contains("STATE_DIR is not set") == true)
    }

    /// `STATE_DIR= storesync validate env.yml` (issue 29): an empty variable
    /// would put the store at `/snapshot.sqlite`; it is a problem, unless
    /// `${VAR:-}` says an empty value is meant (or a default stands in).
    @Test func anEmptyVariableIsAProblemUnlessTheJobSaysEmptyIsMeant() throws {
        let found = issues(env: ["STATE_DIR": ""])
        #expect(found.map(\.keyPath) == ["store"], "\(found)")
        #expect(found.first?.line == 2)
        #expect(found.first?.message.contains("STATE_DIR is set but empty (used as ${STATE_DIR})") == true, "\(found)")
        let meant = try load("""
            name: n
            store: /data${SUFFIX:-}/s.sqlite
            output: ${OUT:-/srv/out}
            sources: [{name: m, kind: marketplace}]
            """, env: ["SUFFIX": "", "OUT": ""])
        #expect(meant.storePath == "/data/s.sqlite")
        #expect(meant.outputDirectory == "/srv/out", "an empty variable takes its default")
    }

    @Test func dollarDollarIsALiteralDollarAndNumbersStayNumbers() throws {
        let job = try load("""
            name: cost$$x
            store: s.sqlite
            output: o
            http: { timeoutSeconds: "${T}", userAgent: "a $b" }
            sources: [{name: m, kind: marketplace}]
            """, env: ["T": "7.5"])
        #expect(job.name == "cost$x")
        #expect(job.http.timeoutSeconds == 7.5)
        #expect(job.http.userAgent == "a $b", "a lone $ stays as written")
    }

    @Test func anUnsetVariableInANumberIsOneProblemNotTwo() {
        let found = issues("name: n\nstore: s\noutput: o\nhttp: {timeoutSeconds: \"${T}\"}\nsources: [{name: m, kind: marketplace}]", env: [:])
        #expect(found.map(\.keyPath) == ["http.timeoutSeconds"], "\(found)")
    }

    @Test func aMalformedReferenceIsAProblem() {
        #expect(issues("name: ${oops\nstore: s\noutput: o\nsources: [{name: m, kind: marketplace}]", env: [:])
            .contains { $0.message.contains("without a closing") })
        #expect(issues("name: ${1X}\nstore: s\noutput: o\nsources: [{name: m, kind: marketplace}]", env: [:])
            .contains { $0.message.contains("is not a variable name") })
    }

    // MARK: STORESYNC_ overrides

    @Test func environmentOverridesTopLevelSettingsAndSaysSo() throws {
        let job = try load(env: ["STATE_DIR": "/a", "STORESYNC_STORE": "/b/s.sqlite", "STORESYNC_OUTPUT": "/b/out",
                                 "STORESYNC_HTTP_TIMEOUTSECONDS": "5", "STORESYNC_LOG_FORMAT": "json"])
        #expect(job.storePath == "/b/s.sqlite")
        #expect(job.outputDirectory == "/b/out")
        #expect(job.http.timeoutSeconds == 5)
        #expect(job.overrides.map(\.description) == [
            "http.timeoutSeconds = 5 (from STORESYNC_HTTP_TIMEOUTSECONDS)",
            "output = /b/out (from STORESYNC_OUTPUT)",
            "store = /b/s.sqlite (from STORESYNC_STORE)",
        ])
    }

    @Test func aBadEnvironmentValueIsReportedWithItsVariable() {
        let found = issues(env: ["STATE_DIR": "/a", "STORESYNC_HTTP_TIMEOUTSECONDS": "soon", "STORESYNC_HTTP_TIMEOUT": "5"])
        #expect(found.contains { $0.keyPath == "http.timeoutSeconds" && $0.message.contains("STORESYNC_HTTP_TIMEOUTSECONDS") })
        #expect(found.contains { $0.message.contains("STORESYNC_HTTP_TIMEOUT names no setting") })
    }

    /// Issue 29, finding 6: a setting's name misspelt is not ignored in silence (the night
    /// would run with the file's value); a name far from every setting (a wrapper's, a test
    /// suite's), one storesync reads itself, and one the file reads through `${…}` are left alone.
    @Test func aMisspeltOverrideIsAnErrorWithDidYouMean() throws {
        for (name, meant) in [("STORESYNC_OUTPT", "STORESYNC_OUTPUT"), ("STORESYNC_STROE", "STORESYNC_STORE"),
                              ("STORESYNC_ARTWORK_SIZE", "STORESYNC_ARTWORKSIZE"), ("STORESYNC_NOTIFYURL", "STORESYNC_NOTIFY_URL"),
                              ("STORESYNC_HTTP_TIMEOUTSECOND", "STORESYNC_HTTP_TIMEOUTSECONDS")] {
            let found = issues(env: ["STATE_DIR": "/a", name: "/x"])
            #expect(found.contains { $0.message.contains("\(name) names no setting") && $0.message.contains("did you mean \(meant)?") },
                    "\(name): \(found.map(\.message))")
        }
        let leftAlone = ["STORESYNC_REQUIRE_POSTGRES": "1", "STORESYNC_SOAK_NIGHTS": "30", "STORESYNC_FLEET": "n1",
                         "STORESYNC_FLEET_SIZE": "4", "STORESYNC_LOG_FORMAT": "json", "STORESYNC_EXECUTABLE": "/x"]
        #expect(issues(env: leftAlone.merging(["STATE_DIR": "/a"]) { $1 }).isEmpty)
        // Read by the file itself: its own variable, not a setting.
        let reads = Self.base.replacingOccurrences(of: "${STATE_DIR}/snapshot.sqlite", with: "${STORESYNC_STOR}/snapshot.sqlite")
        #expect(try load(reads, env: ["STORESYNC_STOR": "/mine", "STATE_DIR": "/a"]).storePath == "/mine/snapshot.sqlite")
    }

    /// `notify` is set like every other key: by the environment and by `--set`.
    @Test func notifyIsSettableByAnOverride() throws {
        let fromEnvironment = try load(env: ["STATE_DIR": "/a", "STORESYNC_NOTIFY_URL": "https://hooks.example.com/t/1",
                                             "STORESYNC_NOTIFY_ON": "always", "STORESYNC_NOTIFY_ATTEMPTS": "2"])
        #expect(fromEnvironment.notify?.url.absoluteString == "https://hooks.example.com/t/1")
        #expect(fromEnvironment.notify?.on == .always && fromEnvironment.notify?.attempts == 2)
        let fromSet = try load(env: ["STATE_DIR": "/a"], sets: ["notify.url=https://hooks.example.com/t/2", "notify.timeoutSeconds=3"])
        #expect(fromSet.notify?.url.absoluteString == "https://hooks.example.com/t/2" && fromSet.notify?.timeoutSeconds == 3)
        #expect(issues(env: ["STATE_DIR": "/a", "STORESYNC_NOTIFY_ON": "sometimes", "STORESYNC_NOTIFY_URL": "https://h.example.com/"])
            .contains { $0.keyPath.hasPrefix("notify") })
    }

    // MARK: --set

    @Test func setOverridesAFileValueAndTheEnvironment() throws {
        let job = try load(env: ["STATE_DIR": "/a", "STORESYNC_HTTP_TIMEOUTSECONDS": "5"],
                           sets: ["http.timeoutSeconds=9", "sources.market.removal.maxRatio=0.5", "sources[0].pageSize=20"])
        #expect(job.http.timeoutSeconds == 9, "the command line wins over the environment")
        #expect(job.sources.first { $0.name == "market" }?.removal.maxRatio == 0.5)
        #expect(job.sources.first { $0.name == "podcasts" }?.removal.maxRatio == RemovalPolicy().maxRatio)
        #expect(job.overrides.last?.keyPath == "sources[0].pageSize")
    }

    @Test func setTakesAFlowListOrMapping() throws {
        let job = try load(env: ["STATE_DIR": "/a"], sets: ["sources.podcasts.terms=[history, science]",
                                                           "sources.market.removal={afterMisses: 3, maxRatio: 0.2}"])
        #expect(job.sources.first { $0.name == "market" }?.removal == RemovalPolicy(afterMisses: 3, maxRatio: 0.2))
        #expect(job.sources.first { $0.name == "podcasts" }?.scopes(baseURL: URL(string: "https://x.test")!)
            .map(\.id).joined().contains("science") == true)
        let bad = issues(env: ["STATE_DIR": "/a"], sets: ["sources.market.removal={afterMises: 3}"])
        #expect(bad.first?.message.contains("did you mean 'afterMisses'") == true)
        #expect(bad.first?.message.contains("set by --set sources.market.removal") == true)
        #expect(bad.first?.line == nil)
    }

    @Test func setIsValidatedLikeTheFile() {
        let env = ["STATE_DIR": "/a"]
        let range = issues(env: env, sets: ["sources.market.removal.maxRatio=5"])
        #expect(range.count == 1)
        #expect(range.first?.keyPath == "sources[1].removal.maxRatio")
        #expect(range.first?.message.contains("between 0.0 and 1.0") == true)
        #expect(range.first?.message.contains("--set sources.market.removal.maxRatio") == true)
        #expect(issues(env: env, sets: ["sources.nosuch.removal.maxRatio=0.5"]).first?.message.contains("names here: podcasts, market") == true)
        #expect(issues(env: env, sets: ["http.timeoutSecs=5"]).first?.message.contains("did you mean 'timeoutSeconds'") == true)
        #expect(issues(env: env, sets: ["novalue"]).first?.message.contains("expected KEY=VALUE") == true)
    }

    // MARK: Secret headers

    static let headerJob = """
        name: h
        store: s.sqlite
        output: o
        http:
          headers:
            api.example.com:
              Authorization: {env: API_TOKEN, prefix: "Bearer "}
        sources: [{name: m, kind: marketplace}]
        """

    @Test func aHeaderIsReadFromTheEnvironment() throws {
        let job = try load(Self.headerJob, env: ["API_TOKEN": "t0k"])
        #expect(job.http.headers == [SecretHeader(host: "api.example.com", name: "Authorization", variable: "API_TOKEN", value: "Bearer t0k", secret: "t0k")])
    }

    @Test func aMissingVariableOrALiteralValueIsRefusedWithoutQuotingIt() {
        let missing = issues(Self.headerJob, env: [:])
        #expect(missing.first?.message.contains("API_TOKEN is not set") == true)
        #expect(missing.first?.line == 7)
        let literal = issues(Self.headerJob.replacingOccurrences(of: "{env: API_TOKEN, prefix: \"Bearer \"}", with: "\"Bearer hunter2\""),
                             env: [:])
        #expect(literal.count == 1)
        #expect(literal.first?.message.contains("{env: VARIABLE}") == true)
        #expect(!literal.description.contains("hunter2"))
        // Written through ${VAR} it is still a literal in the file's place.
        let expanded = issues(Self.headerJob.replacingOccurrences(of: "{env: API_TOKEN, prefix: \"Bearer \"}", with: "\"${API_TOKEN}\""),
                              env: ["API_TOKEN": "hunter2"])
        #expect(expanded.count == 1)
        #expect(!expanded.description.contains("hunter2"))
    }
}
