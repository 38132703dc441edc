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
            checkKeys(list, path: "notify.headers", allowed: list.map(\.key))
            for header in list {
                let headerPath = join("notify.headers", header.key)
                let validName = !header.key.isEmpty && header.key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }
                guard validName else {
                    issue(header.keyNode, headerPath, "is not a header name (letters, digits, '-')")
                    continue
                }
                guard case .mapping = header.value.value, let source = mapping(header.value, path: headerPath) else {
                    issue(header.value, headerPath, "a header's value is never written in the job file: write {env: VARIABLE} "
                          + "and set VARIABLE in the environment of the run (the value is never printed or logged)")
                    continue
                }
                checkKeys(source, path: headerPath, allowed: ["env", "prefix"])
                guard let variable = string(source, "env", path: headerPath, required: true) else { continue }
                let prefix = string(source, "prefix", path: headerPath) ?? ""
                guard let secret = environment[variable], !secret.isEmpty else {
                    issue(value(source, "env"), join(headerPath, "env"),
                          "environment variable \(variable) is not set (or empty): the webhook would get no \(header.key)")
                    continue
                }
                if (prefix + secret).contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                    issue(value(source, "env"), join(headerPath, "env"),
                          "environment variable \(variable) holds a line break or NUL, which a header cannot carry")
                    continue
                }
                headers.append(SecretHeader(host: url?.host ?? "", name: header.key, variable: variable, value: prefix + secret))
            }
        }
        guard let url else { return nil }
        return NotifySpec(url: url, on: on, headers: headers, timeoutSeconds: timeout, attempts: attempts)
    }
}
