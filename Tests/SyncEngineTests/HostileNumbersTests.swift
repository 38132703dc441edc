import Catalog
import Crawl
import Foundation
import SyncEngine
import Testing
import TestSupport

/// Numbers from outside (a job file, an override, a URL) are read totally:
/// a value can be refused, never crash the process.
@Suite struct HostileNumbersTests {
    func load(_ yaml: String, environment: [String: String] = [:]) -> Result<JobSpec, StoreSyncError> {
        do {
            return .success(try JobLoader.parse(yaml: yaml, file: "job.yml", baseDirectory: "/jobs", rules: .cli,
                                                inputs: JobInputs(environment: environment)))
        } catch {
            return .failure(error)
        }
    }

    /// YAML 1.1 reads `1:30` as base 60; Yams' reading overflows on long ones.
    @Test(arguments: ["1:1:1:1:1:1:1:1:1:1:1", "153722867280912931:0", "99999999999:59:59:59:59:59", "-1:1:1:1:1:1:1:1:1:1:1:1"])
    func sexagesimalScalarsAreTextNotATrap(_ value: String) {
        let yaml = """
            name: "n"
            store: s.sqlite
            output: out
            http: {timeoutSeconds: \(value)}
            sources:
              - {name: f, kind: records-file, path: "\(value).csv", keyField: id}
            """
        guard case .failure(let error) = load(yaml) else {
            Issue.record("a base-60 timeout was accepted")
            return
        }
        #expect(error.issues.contains { $0.keyPath == "http.timeoutSeconds" }, "\(error.issues)")
        // The same value through `${VAR}`.
        let viaVariable = load(yaml.replacingOccurrences(of: "{timeoutSeconds: \(value)}", with: "{timeoutSeconds: ${T}}"),
                               environment: ["T": value])
        if case .success = viaVariable { Issue.record("a base-60 timeout from the environment was accepted") }
        // And as an override of the setting.
        let viaOverride = load(yaml, environment: ["STORESYNC_HTTP_TIMEOUTSECONDS": value])
        if case .success = viaOverride { Issue.record("a base-60 timeout from an override was accepted") }
    }

    /// A port no socket has: refused by the transport (SwiftNIO would trap converting it).
    @Test(arguments: ["http://127.0.0.1:65536/", "http://127.0.0.1:99999999/x", "https://[::1]:70000/"])
    func aPortOutsideTheRangeIsAnInvalidURL(_ text: String) async throws {
        guard let url = URL(string: text) else { return }  // Foundation refused it already: nothing reaches the client
        let transport = AsyncHTTPTransport()
        let outcome: Result<HTTPResponse, TransportError>
        do {
            outcome = .success(try await transport.get(HTTPRequest(url: url), timeoutSeconds: 1))
        } catch {
            outcome = .failure(error)
        }
        await transport.shutdown()
        guard case .failure(.invalidURL(let message)) = outcome else {
            Issue.record("expected invalidURL, got \(outcome)")
            return
        }
        #expect(message.contains("outside 1…65535"), "\(message)")
    }

    /// A redirect to such a port fails the page, like any unusable Location.
    @Test func aRedirectToAnImpossiblePortFailsThePage() async {
        let transport = ScriptedTransport { request, _ in
            if request.url.path == "/a" {
                return .success(HTTPResponse(url: request.url, status: 302, headers: ["Location": "http://127.0.0.1:65536/b"]))
            }
            return .failure(TransportError.refusal(of: request.url) ?? .connectionFailed("unexpected"))
        }
        let fetcher = Fetcher(transport: transport, settings: HTTPSettings(maxAttempts: 2, requestsPerMinute: [:]),
                              clock: ManualClock(), random: { 0.5 })
        do {
            _ = try await fetcher.get(URL(string: "http://127.0.0.1:8080/a")!)
            Issue.record("expected the page to fail")
        } catch {
            #expect(error.description.contains("65536"), "\(error)")
        }
    }

    @Test func clampedIntIsTotal() {
        #expect(Double.nan.clampedInt == nil)
        #expect(Double.infinity.clampedInt == .max)
        #expect((-Double.infinity).clampedInt == .min)
        #expect(9_223_372_036_854_775_808.0.clampedInt == .max)
        #expect((-9_223_372_036_854_775_808.0).clampedInt == .min)
        #expect(1e20.clampedInt == .max)
        #expect(42.9.clampedInt == 42)
        #expect((-42.9).clampedInt == -42)
        #expect(Double.nan.wholeSecondsText == "an unreadable number of")
    }
}
