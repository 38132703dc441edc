import Foundation

/// A node of a job file as its parser read it, with where it stands, so that
/// every module can read its own part of the file (a source kind its
/// settings) without knowing the file format.
public struct JobNode: Sendable {
    public enum Value: Sendable {
        /// A scalar, with the typed readings the file format gives it (YAML's
        /// core schema: `yes` is not a boolean, `0x10` is a number…).
        case scalar(Scalar)
        case sequence([JobNode])
        /// Keys in file order.
        case mapping([(key: JobNode, value: JobNode)])
    }

    public struct Scalar: Sendable {
        public var text: String
        public var isNull: Bool
        public var int: Int?
        public var double: Double?
        public var bool: Bool?

        public init(text: String, isNull: Bool = false, int: Int? = nil, double: Double? = nil, bool: Bool? = nil) {
            self.text = text
            self.isNull = isNull
            self.int = int
            self.double = double
            self.bool = bool
        }
    }

    public var value: Value
    /// One-based, where the parser knows it.
    public var line: Int?
    public var column: Int?
    /// Where a value that is not in the file came from (an environment
    /// override or `--set`), named in every problem found with it.
    public var origin: String?

    public init(_ value: Value, line: Int? = nil, column: Int? = nil, origin: String? = nil) {
        self.value = value
        self.line = line
        self.column = column
        self.origin = origin
    }

    public var scalar: Scalar? {
        if case .scalar(let scalar) = value { return scalar }
        return nil
    }

    public var sequence: [JobNode]? {
        if case .sequence(let nodes) = value { return nodes }
        return nil
    }
}

/// Reads typed values out of job-file mappings and collects every problem
/// with its file, line and key path, so one `validate` reports a whole file.
public struct SettingsReader: Sendable {
    public let file: String
    /// The job file's folder: relative paths in the file resolve against it.
    public let baseDirectory: String
    public private(set) var issues: [JobFileIssue] = []
    /// Key paths whose value could not be read at all (an unset `${VAR}`):
    /// the problem is reported once, not again as a bad number or path.
    public private(set) var silenced: Set<String> = []

    /// A mapping as (key, key node, value node) triples, in file order.
    public typealias Fields = [(key: String, keyNode: JobNode, value: JobNode)]

    public init(file: String, baseDirectory: String) {
        self.file = file
        self.baseDirectory = baseDirectory
    }

    public mutating func issue(_ node: JobNode?, _ path: String, _ message: String) {
        guard !silenced.contains(path) else { return }
        let message = node?.origin.map { "\(message) (set by \($0))" } ?? message
        issues.append(JobFileIssue(file: file, line: node?.line, column: node?.column, keyPath: path, message: message))
    }

    public mutating func mapping(_ node: JobNode, path: String) -> Fields? {
        guard case .mapping(let pairs) = node.value else {
            issue(node, path, "expected a mapping of keys to values")
            return nil
        }
        return pairs.map { (key: $0.key.scalar?.text ?? "", keyNode: $0.key, value: $0.value) }
    }

    /// Reports `message` for `path` and no later problem with the same key path.
    public mutating func issueOnce(_ node: JobNode?, _ path: String, _ message: String) {
        issue(node, path, message)
        silenced.insert(path)
    }

    /// Flags duplicate keys and keys not in `allowed` (a typo would otherwise be silently ignored).
    public mutating func checkKeys(_ fields: Fields, path: String, allowed: [String]) {
        var seen = Set<String>()
        for field in fields {
            if !seen.insert(field.key).inserted {
                issue(field.keyNode, join(path, field.key), "duplicate key")
            }
            if !allowed.contains(field.key) {
                let hint = Self.suggestion(for: field.key, among: allowed).map { " (did you mean '\($0)'?)" } ?? ""
                issue(field.keyNode, join(path, field.key), "unknown key\(hint); allowed here: \(allowed.joined(separator: ", "))")
            }
        }
    }

    /// "unknown media 'podcasst' (did you mean 'podcast'?); one of …": the
    /// message for a word outside a fixed set, with the nearest as a hint.
    public static func unknown(_ what: String, _ word: String, among candidates: [String], listedAs list: String = "one of") -> String {
        let hint = suggestion(for: word, among: candidates).map { " (did you mean '\($0)'?)" } ?? ""
        return "unknown \(what) '\(word)'\(hint); \(list) \(candidates.joined(separator: ", "))"
    }

    /// The closest of `candidates` to a mistyped `word`, if one is close enough to be what was meant.
    public static func suggestion(for word: String, among candidates: [String]) -> String? {
        candidates.min { distance($0, word) < distance($1, word) }.flatMap { distance($0, word) <= 3 ? $0 : nil }
    }

    public func join(_ path: String, _ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    public func value(_ fields: Fields, _ key: String) -> JobNode? { fields.first { $0.key == key }?.value }

    /// Where a missing key belongs: the first key of its mapping.
    public func anchor(_ fields: Fields) -> JobNode? { fields.first?.keyNode }

    public mutating func string(_ fields: Fields, _ key: String, path: String, required: Bool = false) -> String? {
        guard let node = value(fields, key) else {
            if required { issue(anchor(fields), join(path, key), "is required") }
            return nil
        }
        guard let scalar = node.scalar, !scalar.isNull else {
            issue(node, join(path, key), "expected a text value")
            return nil
        }
        if required && scalar.text.trimmingCharacters(in: .whitespaces).isEmpty {
            issue(node, join(path, key), "must not be empty")
            return nil
        }
        return scalar.text
    }

    public mutating func int(_ fields: Fields, _ key: String, path: String, range: ClosedRange<Int>) -> Int? {
        guard let node = value(fields, key) else { return nil }
        guard let number = node.scalar?.int else {
            issue(node, join(path, key), "expected a whole number")
            return nil
        }
        guard range.contains(number) else {
            issue(node, join(path, key), "must be between \(range.lowerBound) and \(range.upperBound), got \(number)")
            return nil
        }
        return number
    }

    public mutating func double(_ fields: Fields, _ key: String, path: String, range: ClosedRange<Double>) -> Double? {
        guard let node = value(fields, key) else { return nil }
        guard let number = node.scalar?.double ?? node.scalar?.int.map(Double.init) else {
            issue(node, join(path, key), "expected a number")
            return nil
        }
        guard range.contains(number) else {
            issue(node, join(path, key), "must be between \(range.lowerBound) and \(range.upperBound), got \(number)")
            return nil
        }
        return number
    }

    public mutating func bool(_ fields: Fields, _ key: String, path: String) -> Bool? {
        guard let node = value(fields, key) else { return nil }
        guard let flag = node.scalar?.bool else {
            issue(node, join(path, key), "expected true or false")
            return nil
        }
        return flag
    }

    /// A list of text values; a single value counts as a list of one.
    public mutating func strings(_ fields: Fields, _ key: String, path: String) -> [String]? {
        guard let node = value(fields, key) else { return nil }
        if let scalar = node.scalar { return [scalar.text] }
        guard let sequence = node.sequence else {
            issue(node, join(path, key), "expected a list of text values")
            return nil
        }
        var out: [String] = []
        for (n, element) in sequence.enumerated() {
            guard let s = element.scalar?.text, !s.isEmpty else {
                issue(element, "\(join(path, key))[\(n)]", "expected a non-empty text value")
                continue
            }
            out.append(s)
        }
        return out
    }

    public mutating func ints(_ fields: Fields, _ key: String, path: String, range: ClosedRange<Int>) -> [Int]? {
        guard let texts = strings(fields, key, path: path) else { return nil }
        var out: [Int] = []
        for (n, text) in texts.enumerated() {
            guard let number = Int(text), range.contains(number) else {
                issue(value(fields, key), "\(join(path, key))[\(n)]",
                      "expected a whole number in \(range.lowerBound)...\(range.upperBound), got '\(text)'")
                continue
            }
            out.append(number)
        }
        return out
    }

    public mutating func url(_ fields: Fields, _ key: String, path: String) -> URL? {
        guard let text = string(fields, key, path: path) else { return nil }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme), url.host != nil else {
            issue(value(fields, key), join(path, key), "expected an http(s) URL such as https://itunes.apple.com, got '\(text)'")
            return nil
        }
        return url
    }

    /// One of a fixed set of words, e.g. an enum's raw values.
    public mutating func choice<T: RawRepresentable & CaseIterable>(_ fields: Fields, _ key: String, path: String,
                                                                   what: String) -> T? where T.RawValue == String {
        guard let text = string(fields, key, path: path) else { return nil }
        guard let value = T(rawValue: text) else {
            issue(value(fields, key), join(path, key), Self.unknown(what, text, among: T.allCases.map(\.rawValue)))
            return nil
        }
        return value
    }

    /// ISO 3166 country codes under `countries` (or a single `country`), lower-cased.
    public mutating func countries(_ fields: Fields, path: String) -> [String]? {
        guard let countries = strings(fields, "countries", path: path) ?? strings(fields, "country", path: path) else { return nil }
        for country in countries where country.count != 2 || !country.allSatisfy(\.isLetter) {
            issue(value(fields, "countries") ?? value(fields, "country"), join(path, "countries"),
                  "'\(country)' is not an ISO 3166 two-letter country code")
        }
        return countries.map { $0.lowercased() }
    }

    public mutating func entityKinds(_ fields: Fields, _ key: String, path: String) -> [EntityKind]? {
        guard let texts = strings(fields, key, path: path) else { return nil }
        var out: [EntityKind] = []
        for text in texts {
            if let kind = EntityKind(rawValue: text) { out.append(kind) } else {
                issue(value(fields, key), join(path, key), Self.unknown("entity", text, among: EntityKind.allCases.map(\.rawValue)))
            }
        }
        return out
    }

    public mutating func selection(_ fields: Fields, path: String) -> InputSelection? {
        guard let text = string(fields, "select", path: path) else { return nil }
        guard let selection = InputSelection(rawValue: text) else {
            issue(value(fields, "select"), join(path, "select"),
                  "expected \(InputSelection.allCases.map(\.rawValue).joined(separator: " or ")), got '\(text)'")
            return nil
        }
        return selection
    }

    /// A path of the machine running the job: `~` expanded, relative paths
    /// resolved against the job file's folder, so cron can run it from anywhere.
    public func resolve(_ path: String) -> String {
        let expanded = (path as NSString).expandingTildeInPath
        if expanded.hasPrefix("/") { return URL(fileURLWithPath: expanded).standardizedFileURL.path }
        return URL(fileURLWithPath: baseDirectory).appendingPathComponent(expanded).standardizedFileURL.path
    }

    public static func distance(_ a: String, _ b: String) -> Int {
        let a = Array(a.lowercased()), b = Array(b.lowercased())
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
