/// One error or warning of a run, as `report.json`, `run --json`, the
/// `notify:` webhook and `status --json` show it: a stable machine code to
/// branch on, where it happened (source, scope, URL) when known, and the
/// human text a log shows. The store keeps the same structure, so a report
/// rebuilt from the store (`storesync export`, a resumed export) is identical.
public struct RunProblem: Sendable, Equatable, Hashable, CustomStringConvertible {
    /// A ``StoreSyncError/Code`` name (`fetch-failed`, `throttled`, …) or one of
    /// the warning codes below; ``unknown`` for text stored by an older version.
    public var code: String
    /// The job's source, when the problem belongs to one.
    public var source: String?
    /// The scope within ``source``, when the problem belongs to one.
    public var scope: String?
    /// The URL that was fetched, when the problem happened at one.
    public var url: String?
    /// The human text (the same line the log and the CLI print).
    public var message: String

    /// A store written before problems were structured kept only the text.
    public static let unknown = "unknown"
    /// The removal guard (`removal.maxRatio`) refused to remove a scope's records.
    public static let guardRefused = "guard-refused"
    /// Scopes stopped at the job's cap (`maxResults`/`maxPages`).
    public static let capped = "capped"
    /// The feed lint found a broken requirement, or a strict feed was withheld.
    public static let feedLint = "feed-lint"
    /// Old history could not be pruned (`retention:`).
    public static let retention = "retention"

    public init(code: String, source: String? = nil, scope: String? = nil, url: String? = nil, message: String) {
        self.code = code
        self.source = source
        self.scope = scope
        self.url = url
        self.message = message
    }

    /// The problem `error` describes; the message is its full description.
    public init(_ error: StoreSyncError, source: String? = nil, scope: String? = nil) {
        var source = source, scope = scope
        if case .scope(let s, let sc)? = error.place {
            source = source ?? s
            scope = scope ?? sc
        }
        self.init(code: error.code.name, source: source, scope: scope, url: error.url, message: error.description)
    }

    public var description: String { message }

    /// The JSON object: every key present, `null` where unknown.
    public var json: JSONValue {
        .object([
            "code": .string(code), "source": source.map(JSONValue.string) ?? .null,
            "scope": scope.map(JSONValue.string) ?? .null, "url": url.map(JSONValue.string) ?? .null,
            "message": .string(message),
        ])
    }

    /// Reads what ``json`` wrote, or a bare string (the text an older store
    /// kept), which becomes code ``unknown``; nil for anything else.
    public init?(json: JSONValue) {
        if let text = json.stringValue {
            self.init(code: Self.unknown, message: text)
            return
        }
        guard case .object(let fields) = json, let message = fields["message"]?.stringValue else { return nil }
        self.init(code: fields["code"]?.stringValue ?? Self.unknown, source: fields["source"]?.stringValue,
                  scope: fields["scope"]?.stringValue, url: fields["url"]?.stringValue, message: message)
    }
}

extension RunProblem: Codable {
    private enum CodingKeys: String, CodingKey { case code, source, scope, url, message }

    /// Reads what ``encode(to:)`` (and ``json``) wrote, or a bare string (the
    /// text an older store kept), which becomes code ``unknown``.
    public init(from decoder: any Decoder) throws {
        if let text = try? decoder.singleValueContainer().decode(String.self) {
            self.init(code: Self.unknown, message: text)
            return
        }
        let fields = try decoder.container(keyedBy: CodingKeys.self)
        self.init(code: try fields.decodeIfPresent(String.self, forKey: .code) ?? Self.unknown,
                  source: try fields.decodeIfPresent(String.self, forKey: .source),
                  scope: try fields.decodeIfPresent(String.self, forKey: .scope),
                  url: try fields.decodeIfPresent(String.self, forKey: .url),
                  message: try fields.decode(String.self, forKey: .message))
    }

    /// Every key present, `null` where unknown, as ``json`` has it.
    public func encode(to encoder: any Encoder) throws {
        var fields = encoder.container(keyedBy: CodingKeys.self)
        try fields.encode(code, forKey: .code)
        try fields.encode(source, forKey: .source)
        try fields.encode(scope, forKey: .scope)
        try fields.encode(url, forKey: .url)
        try fields.encode(message, forKey: .message)
    }
}
