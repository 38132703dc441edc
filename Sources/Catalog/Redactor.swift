import Foundation

/// Takes the job's secrets out of text that came from outside.
///
/// A server may echo what it was sent: a 401 whose body repeats the token, an
/// error page that prints the request's headers. Such text ends up in errors,
/// and from there in the log, the store, `report.json`, `status` and the
/// webhook. Every configured secret is replaced by `<redacted>` wherever it
/// appears, raw or in the forms a body would carry it (percent-encoded, JSON-escaped).
public struct Redactor: Sendable {
    /// Shorter values would blank out ordinary words; no real token is this short.
    public static let shortestSecret = 4
    public static let placeholder = "<redacted>"
    private let needles: [String]

    public init(secrets: [String]) {
        var forms = Set<String>()
        for secret in secrets where secret.count >= Self.shortestSecret {
            forms.insert(secret)
            if let encoded = secret.addingPercentEncoding(withAllowedCharacters: .alphanumerics) { forms.insert(encoded) }
            forms.insert(String(decoding: CanonicalJSON.encode(.string(secret)).dropFirst().dropLast(), as: UTF8.self))
            forms.insert(secret.replacingOccurrences(of: "/", with: "\\/"))
        }
        // Longest first, so "Bearer abc…" goes whole before "abc…" is found inside it.
        needles = forms.filter { $0.count >= Self.shortestSecret }.sorted { ($0.count, $0) > ($1.count, $1) }
    }

    /// No secrets: text passes unchanged.
    public static let none = Redactor(secrets: [])

    public var isEmpty: Bool { needles.isEmpty }

    public func callAsFunction(_ text: String) -> String {
        guard !needles.isEmpty else { return text }
        var out = text
        for needle in needles where out.contains(needle) {
            out = out.replacingOccurrences(of: needle, with: Self.placeholder)
        }
        return out
    }
}

extension StoreSyncError {
    /// This error with every secret `redactor` knows taken out of its text.
    public func redacted(_ redactor: Redactor) -> StoreSyncError {
        guard !redactor.isEmpty else { return self }
        var error = self
        error.message = redactor(message)
        error.remedy = remedy.map { redactor($0) }
        if case .url(let url)? = place { error.place = .url(redactor(url)) }
        error.issues = issues.map { issue in
            var issue = issue
            issue.message = redactor(issue.message)
            return issue
        }
        if let cause {
            let text = "\(cause)"
            let clean = redactor(text)
            if clean != text { error.cause = RedactedCause(description: clean) }
        }
        return error
    }
}

/// An underlying error whose text held a secret, kept as its redacted text.
struct RedactedCause: Error, Sendable, CustomStringConvertible {
    var description: String
}
