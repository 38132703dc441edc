import Catalog
import Foundation

extension SettingsReader {
    /// `notify:` — `{url, on, headers, timeoutSeconds, attempts}`. Header values
    /// come from the environment as in `http.headers`; no message here quotes a
    /// header value or the URL's path (a webhook URL often is its own token).
    mutating func notifySpec(_ node: JobNode, environment: [String: String]) -> NotifySpec? {
        guard let fields = mapping(node, path: "notify") else { return nil }
        checkKeys(fields, path: "notify", allowed: ["url", "on", "headers", "timeoutSeconds", "attempts"])
        var url: URL?
        if let text = string(fields, "url", path: "notify", required: true) {
            if let parsed = URL(string: text), let scheme = parsed.scheme?.lowercased(), ["http", "https"].contains(scheme), parsed.host != nil {
                url = parsed
            } else {
                issue(value(fields, "url"), "notify.url", "expected an http(s) URL such as https://hooks.example.com/storesync")
            }
        }
        let on: NotifySpec.When = choice(fields, "on", path: "notify", what: "when to call the webhook") ?? .failure
        let timeout = double(fields, "timeoutSeconds", path: "notify", range: 0.1...300) ?? NotifySpec.defaultTimeoutSeconds
        let attempts = int(fields, "attempts", path: "notify", range: 1...10) ?? NotifySpec.defaultAttempts
        var headers: [SecretHeader] = []
        if let headersNode = value(fields, "headers"), let list = mapping(headersNode, path: "notify.headers") {
            headers = secretHeaders(list, path: "notify.headers", host: url?.host ?? "", environment: environment,
                                    unset: { "the webhook would get no \($0)" })
        }
        guard let url else { return nil }
        return NotifySpec(url: url, on: on, headers: headers, timeoutSeconds: timeout, attempts: attempts)
    }
}
