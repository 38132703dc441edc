import Catalog
import Foundation
import Snapshot
import Yams

/// What a job file is read with besides its own text: the environment
/// (`${VAR}` expansion, `STORESYNC_` overrides, header secrets) and the
/// command line's `--set KEY=VALUE` overrides.
public struct JobInputs: Sendable {
    /// The environment variables; the process's own unless a test gives others.
    public var environment: [String: String]
    /// `KEY=VALUE` overrides for this run, applied after the environment's.
    public var sets: [String]

    public init(environment: [String: String] = ProcessInfo.processInfo.environment, sets: [String] = []) {
        self.environment = environment
        self.sets = sets
    }
}

/// A setting that did not come from the job file, as `validate` shows it.
public struct AppliedOverride: Sendable, Equatable, CustomStringConvertible {
    /// Dotted key path, e.g. `http.timeoutSeconds` or `sources.podcasts.removal.maxRatio`.
    public var keyPath: String
    public var value: String
    /// `STORESYNC_HTTP_TIMEOUTSECONDS` or `--set`.
    public var origin: String

    public var description: String { "\(keyPath) = \(value) (from \(origin))" }
}

/// The environment prefix of job overrides: `STORESYNC_STORE`, `STORESYNC_HTTP_TIMEOUTSECONDS`.
public let jobEnvironmentPrefix = "STORESYNC_"

extension JobLoader {
    /// The top-level keys an environment variable may set, and the sections
    /// whose scalar keys it may set (`STORESYNC_<SECTION>_<KEY>`).
    static let environmentTopKeys = ["name", "store", "output", "artworkSize"]
    static let environmentSections: [String: [String]] = [
        "http": httpScalarKeys,
        "retention": ["days"],
        "simulator": ["seed", "podcasts", "products", "changed", "added", "removed"],
        "notify": ["url", "on", "attempts", "timeoutSeconds", "backoffSeconds"],
    ]

    /// Every `STORESYNC_` name that sets something, for "did you mean".
    static var environmentNames: [String] {
        environmentTopKeys.map { jobEnvironmentPrefix + $0.uppercased() }
            + environmentSections.sorted { $0.key < $1.key }.flatMap { section, keys in
                keys.map { "\(jobEnvironmentPrefix)\(section.uppercased())_\($0.uppercased())" }
            }
    }

    /// `STORESYNC_` names storesync reads that are not job settings (`run --worker`'s).
    static let environmentOtherNames: Set<String> = ["STORESYNC_FLEET", "STORESYNC_FLEET_SIZE"]
    static let httpScalarKeys = ["timeoutSeconds", "userAgent", "maxAttempts", "defaultRequestsPerMinute",
                                 "backoffBaseSeconds", "backoffMaxSeconds", "burst", "concurrency",
                                 "circuitBreakerThreshold", "cacheTTLSeconds", "deadlineMinutes"]

    // MARK: ${VAR} expansion

    /// Replaces `${VAR}` (or `${VAR:-default}`) in every scalar value with
    /// the environment's value; `$$` is a literal `$`. A variable that is not
    /// set, or set but empty, is a problem naming the line, key and variable
    /// (`${VAR:-}` says an empty value is meant).
    static func expand(_ node: JobNode, path: String, environment: [String: String], reader: inout SettingsReader) -> JobNode {
        var node = node
        switch node.value {
        case .scalar(let scalar):
            guard scalar.text.contains("$") else { return node }
            // A server URL's `${VAR}` (its password) is read when the store is
            // opened, so the secret never enters the job as loaded, nor any message.
            if path == "store", StoreLocation.isServer(scalar.text) { return node }
            switch expand(scalar.text, environment: environment) {
            case .success(let text):
                if text != scalar.text { node.value = .scalar(typedScalar(text)) }
            case .failure(let problem):
                reader.issueOnce(node, path, problem.message)
            }
        case .sequence(let elements):
            node.value = .sequence(elements.enumerated().map { n, element in
                expand(element, path: "\(path)[\(n)]", environment: environment, reader: &reader)
            })
        case .mapping(let pairs):
            node.value = .mapping(pairs.map { pair in
                let key = pair.key.scalar?.text ?? ""
                return (key: pair.key, value: expand(pair.value, path: reader.join(path, key), environment: environment, reader: &reader))
            })
        }
        return node
    }

    struct ExpansionProblem: Error { var message: String }

    /// Expands one text; see ``expand(_:path:environment:reader:)``.
    static func expand(_ text: String, environment: [String: String]) -> Result<String, ExpansionProblem> {
        var out = ""
        var rest = Substring(text)
        while let dollar = rest.firstIndex(of: "$") {
            out += rest[..<dollar]
            let after = rest[rest.index(after: dollar)...]
            if after.first == "$" {
                out += "$"
                rest = after.dropFirst()
            } else if after.first == "{" {
                guard let close = after.firstIndex(of: "}") else {
                    return .failure(ExpansionProblem(message: "'${' without a closing '}'; write $$ for a literal $"))
                }
                let inner = after[after.index(after: after.startIndex)..<close]
                let name: Substring, fallback: Substring?
                if let range = inner.range(of: ":-") {
                    name = inner[..<range.lowerBound]
                    fallback = inner[range.upperBound...]
                } else {
                    name = inner
                    fallback = nil
                }
                guard let first = name.first, first == "_" || (first.isASCII && first.isLetter),
                      name.allSatisfy({ $0 == "_" || ($0.isASCII && ($0.isLetter || $0.isNumber)) }) else {
                    return .failure(ExpansionProblem(message: "'${\(inner)}' is not a variable name (letters, digits and _); write $$ for a literal $"))
                }
                if let value = environment[String(name)], !value.isEmpty {
                    out += value
                } else if let fallback {
                    out += fallback
                } else if environment[String(name)] != nil {
                    // `STATE_DIR= storesync run` would put the store at `/snapshot.sqlite`.
                    return .failure(ExpansionProblem(message: "environment variable \(name) is set but empty (used as ${\(name)}); "
                                                     + "give it a value, or write ${\(name):-default} (${\(name):-} for an empty one)"))
                } else {
                    return .failure(ExpansionProblem(message: "environment variable \(name) is not set (used as ${\(name)}); "
                                                     + "set it, or write ${\(name):-default}"))
                }
                rest = after[after.index(after: close)...]
            } else {
                // A lone `$` (e.g. a URL's `$filter=`) stays as written.
                out += "$"
                rest = after
            }
        }
        out += rest
        return .success(out)
    }

    /// A scalar as a plain YAML value reads: `5` a number, `true` a boolean.
    static func typedScalar(_ text: String) -> JobNode.Scalar { typedScalar(Node(text)) }

    /// A scalar node as the settings read it. YAML 1.1's base-60 numbers
    /// (`1:30`) are not read as numbers: no setting takes one, and Yams'
    /// reading of them traps on overflow (`1:1:1:1:1:1:1:1:1:1:1`).
    static func typedScalar(_ node: Node) -> JobNode.Scalar {
        let text = node.scalar?.string ?? ""
        let sexagesimal = text.contains(":")
        return JobNode.Scalar(text: text, isNull: node.null != nil, int: sexagesimal ? nil : node.int,
                              double: sexagesimal ? nil : node.float, bool: node.bool)
    }

    // MARK: Overrides

    /// The `STORESYNC_` variables of `environment` as key paths and values, in name order.
    /// A name that is no setting but one or two letters from one is an error
    /// (a misspelt setting), unless the job file reads it through `${…}`
    /// (`readByTheFile`: the file's text).
    static func environmentOverrides(_ environment: [String: String], readByTheFile text: String = "",
                                     reader: inout SettingsReader) -> [(path: [String], value: String, origin: String)] {
        var out: [(path: [String], value: String, origin: String)] = []
        for (name, value) in environment.sorted(by: { $0.key < $1.key }) where name.hasPrefix(jobEnvironmentPrefix) {
            let rest = name.dropFirst(jobEnvironmentPrefix.count).lowercased()
            if let key = environmentTopKeys.first(where: { $0.lowercased() == rest }) {
                out.append(([key], value, name))
                continue
            }
            let parts = rest.split(separator: "_", maxSplits: 1).map(String.init)
            guard parts.count == 2, let keys = environmentSections[parts[0]] else {
                // A name one or two letters from a setting is that setting misspelt (STORESYNC_OUTPT):
                // ignored, the night would run with the file's value, and nobody would know. Other
                // STORESYNC_ names are left alone: a wrapper's or a test suite's own, not job settings.
                let upper = name.uppercased()
                if !environmentOtherNames.contains(upper), !text.contains("${\(name)}"), !text.contains("${\(name):-"),
                   let near = environmentNames.min(by: { SettingsReader.distance($0, upper) < SettingsReader.distance($1, upper) }),
                   SettingsReader.distance(near, upper) <= 2 {
                    reader.issue(nil, "", "environment variable \(name) names no setting (did you mean \(near)?); "
                                 + "unset it, or name a setting: \(environmentNames.joined(separator: ", "))")
                }
                continue
            }
            guard let key = keys.first(where: { $0.lowercased() == parts[1] }) else {
                let names = keys.map { "\(jobEnvironmentPrefix)\(parts[0].uppercased())_\($0.uppercased())" }
                let hint = SettingsReader.suggestion(for: name.uppercased(), among: names).map { " (did you mean \($0)?)" } ?? ""
                reader.issue(nil, parts[0], "environment variable \(name) names no setting of \(parts[0])\(hint); "
                             + "settable: \(names.joined(separator: ", "))")
                continue
            }
            out.append(([parts[0], key], value, name))
        }
        return out
    }

    /// `KEY=VALUE` arguments as key paths and values. A list's element is
    /// named by its `name` (`sources.podcasts`) or its index (`sources[0]`).
    static func setOverrides(_ sets: [String], reader: inout SettingsReader) -> [(path: [String], value: String, origin: String)] {
        var out: [(path: [String], value: String, origin: String)] = []
        for set in sets {
            guard let equals = set.firstIndex(of: "="), equals != set.startIndex else {
                reader.issue(nil, "", "--set \(set): expected KEY=VALUE, e.g. --set http.timeoutSeconds=5")
                continue
            }
            var path: [String] = []
            for part in set[..<equals].split(separator: ".", omittingEmptySubsequences: false) {
                // `sources[0]` is the same as `sources.0`.
                if let open = part.firstIndex(of: "["), part.hasSuffix("]") {
                    path.append(String(part[..<open]))
                    path.append(String(part[part.index(after: open)..<part.index(before: part.endIndex)]))
                } else {
                    path.append(String(part))
                }
            }
            if path.contains(where: \.isEmpty) {
                reader.issue(nil, "", "--set \(set): the key '\(set[..<equals])' has an empty part")
                continue
            }
            out.append((path, String(set[set.index(after: equals)...]), "--set \(set[..<equals])"))
        }
        return out
    }

    /// An override's value as a node: a flow list or mapping (`[news, history]`,
    /// `{afterMisses: 1}`) as YAML reads it, anything else one scalar.
    static func overrideNode(_ value: String, origin: String) -> JobNode {
        func marked(_ node: JobNode) -> JobNode {
            var node = node
            // No line: the value is not in the file; its origin says where it is.
            node.line = nil
            node.column = nil
            node.origin = origin
            switch node.value {
            case .scalar: break
            case .sequence(let elements): node.value = .sequence(elements.map(marked))
            case .mapping(let pairs): node.value = .mapping(pairs.map { (key: marked($0.key), value: marked($0.value)) })
            }
            return node
        }
        // A value with aliases that expand past the budget is kept as the text it is.
        if value.hasPrefix("[") || value.hasPrefix("{"), YAMLBudget.refusal(value) == nil,
           let parsed = (try? Yams.compose(yaml: value)) ?? nil {
            return marked(jobNode(parsed))
        }
        return JobNode(.scalar(typedScalar(value)), origin: origin)
    }

    /// Puts `value` at `path` in the tree, creating mappings on the way;
    /// returns the key path as the reader names it, or nil after reporting
    /// why it cannot go there.
    static func apply(_ value: String, at path: [String], origin: String, to root: inout JobNode,
                      caseInsensitive: Bool, reader: inout SettingsReader) -> String? {
        var named = ""
        let leaf = overrideNode(value, origin: origin)
        func place(_ node: inout JobNode, _ depth: Int) -> Bool {
            if depth == path.count {
                node = leaf
                return true
            }
            let part = path[depth]
            switch node.value {
            case .mapping(var pairs):
                let index = pairs.firstIndex { key in
                    let text = key.key.scalar?.text ?? ""
                    return caseInsensitive ? text.lowercased() == part.lowercased() : text == part
                }
                named = reader.join(named, index.flatMap { pairs[$0].key.scalar?.text } ?? part)
                if let index {
                    guard place(&pairs[index].value, depth + 1) else { return false }
                } else {
                    var child = JobNode(.mapping([]), origin: origin)
                    guard place(&child, depth + 1) else { return false }
                    pairs.append((key: JobNode(.scalar(JobNode.Scalar(text: part)), origin: origin), value: child))
                }
                node.value = .mapping(pairs)
                return true
            case .sequence(var elements):
                let index = Int(part).flatMap { elements.indices.contains($0) ? $0 : nil } ?? elements.firstIndex { element in
                    guard case .mapping(let pairs) = element.value else { return false }
                    return pairs.contains { $0.key.scalar?.text == "name" && $0.value.scalar?.text == part }
                }
                guard let index else {
                    let names = elements.compactMap { element -> String? in
                        guard case .mapping(let pairs) = element.value else { return nil }
                        return pairs.first { $0.key.scalar?.text == "name" }?.value.scalar?.text
                    }
                    reader.issue(nil, named, "\(origin): no element named '\(part)'"
                                 + (names.isEmpty ? "" : "; names here: \(names.joined(separator: ", "))"))
                    return false
                }
                named += "[\(index)]"
                guard place(&elements[index], depth + 1) else { return false }
                node.value = .sequence(elements)
                return true
            case .scalar:
                reader.issue(node, named, "\(origin): '\(named)' is a single value, so it has no '\(part)'")
                return false
            }
        }
        return place(&root, 0) ? named : nil
    }
}

extension Runner {
    /// `text` as one word a shell reads back unchanged (quoted only when it needs to be).
    static func shellWord(_ text: String) -> String {
        let plain = !text.isEmpty && text.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "/._-+:,@%=".contains($0)) }
        return plain ? text : "'" + text.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
