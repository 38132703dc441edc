import Catalog
import Connectors
import Foundation
import Snapshot
import Yams

/// What a job file may hold beyond the built-in rules.
public struct JobFileRules: Sendable {
    /// The source kinds a `kind:` may name.
    public var registry: SourceRegistry
    /// Checks the `simulator.faults` entries, returning a message for the
    /// first one that is not understood; nil leaves them to be checked when
    /// the simulator starts (the loader does not know the simulator).
    public var checkFaults: (@Sendable ([String]) -> String?)?

    public init(registry: SourceRegistry = .standard, checkFaults: (@Sendable ([String]) -> String?)? = nil) {
        self.registry = registry
        self.checkFaults = checkFaults
    }
}

/// Reads `jobs/*.yml` into a ``JobSpec``, reporting every problem at once
/// with its file, line and key path, so one `validate` fixes a whole file.
public enum JobLoader {
    /// Loads and validates the job file at `path`, with `${VAR}` expanded and
    /// the environment's and `inputs.sets`' overrides applied.
    public static func load(path: String, rules: JobFileRules = JobFileRules(),
                            inputs: JobInputs = JobInputs()) throws(StoreSyncError) -> JobSpec {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw .invalidJob(file: path, issues: [JobFileIssue(file: path, line: nil, column: nil, keyPath: "",
                                                                message: "cannot read the file: \(error.localizedDescription)")])
        }
        let directory = (URL(fileURLWithPath: path).standardizedFileURL.deletingLastPathComponent().path)
        return try parse(yaml: text, file: path, baseDirectory: directory, rules: rules, inputs: inputs)
    }

    /// Parses job YAML; relative paths resolve against `baseDirectory`.
    public static func parse(yaml: String, file: String, baseDirectory: String,
                             rules: JobFileRules = JobFileRules(), inputs: JobInputs = JobInputs()) throws(StoreSyncError) -> JobSpec {
        if let refusal = YAMLBudget.refusal(yaml) {
            throw .invalidJob(file: file, issues: [JobFileIssue(file: file, line: refusal.line, column: refusal.column,
                                                                keyPath: "", message: refusal.message)])
        }
        let root: Node?
        do {
            root = try Yams.compose(yaml: yaml)
        } catch let error as YamlError {
            throw .invalidJob(file: file, issues: [yamlIssue(error, file: file)])
        } catch {
            throw .invalidJob(file: file, issues: [JobFileIssue(file: file, line: nil, column: nil, keyPath: "", message: "\(error)")])
        }
        var reader = SettingsReader(file: file, baseDirectory: baseDirectory)
        // File < environment < command line: what is closest to this run wins.
        var tree = root.map(jobNode).map { expand($0, path: "", environment: inputs.environment, reader: &reader) }
        var applied: [AppliedOverride] = []
        if var node = tree, case .mapping = node.value {
            let overrides = environmentOverrides(inputs.environment, readByTheFile: yaml, reader: &reader)
                + setOverrides(inputs.sets, reader: &reader)
            for override in overrides {
                if let named = apply(override.value, at: override.path, origin: override.origin, to: &node,
                                     caseInsensitive: override.origin.hasPrefix(jobEnvironmentPrefix), reader: &reader) {
                    applied.append(AppliedOverride(keyPath: named, value: override.value, origin: override.origin))
                }
            }
            tree = node
        }
        guard let tree, let top = reader.mapping(tree, path: "") else {
            if root == nil { reader.issue(nil, "", "the file is empty: a job needs at least name, store, output and sources") }
            throw .invalidJob(file: file, issues: reader.issues)
        }
        let job = reader.job(top, rules: rules, environment: inputs.environment)
        guard reader.issues.isEmpty, var job else {
            throw .invalidJob(file: file, issues: reader.issues)
        }
        job.overrides = applied
        return job
    }

    static func yamlIssue(_ error: YamlError, file: String) -> JobFileIssue {
        switch error {
        case .scanner(_, let problem, let mark, _), .parser(_, let problem, let mark, _):
            return JobFileIssue(file: file, line: mark.line, column: mark.column, keyPath: "", message: "YAML syntax: \(problem)")
        default:
            return JobFileIssue(file: file, line: nil, column: nil, keyPath: "", message: "YAML: \(error)")
        }
    }

    /// The YAML tree as the format-free nodes every module reads its settings from.
    static func jobNode(_ node: Node) -> JobNode {
        let value: JobNode.Value
        switch node {
        case .scalar:
            value = .scalar(typedScalar(node))
        case .sequence(let sequence):
            value = .sequence(sequence.map(jobNode))
        case .mapping(let mapping):
            value = .mapping(mapping.map { (key: jobNode($0.key), value: jobNode($0.value)) })
        case .alias:
            value = .scalar(JobNode.Scalar(text: "", isNull: true))
        }
        return JobNode(value, line: node.mark?.line, column: node.mark?.column)
    }
}

/// The job's own keys; each source kind reads its settings itself.
extension SettingsReader {
    /// A path inside the output folder: relative, no `..`.
    mutating func relativePath(_ fields: Fields, _ key: String, path: String, default fallback: String?) -> String? {
        guard let text = string(fields, key, path: path) ?? fallback else {
            issue(anchor(fields), join(path, key), "is required")
            return nil
        }
        let parts = text.split(separator: "/")
        if text.hasPrefix("/") || parts.contains("..") || text.contains("\0") {
            issue(value(fields, key), join(path, key), "must be a path inside the output folder (relative, without '..'), got '\(text)'")
            return nil
        }
        return text
    }

    // MARK: The job

    mutating func job(_ top: Fields, rules: JobFileRules, environment: [String: String] = [:]) -> JobSpec? {
        checkKeys(top, path: "", allowed: ["name", "store", "output", "simulator", "http", "sources", "exports",
                                                  "retention", "artworkSize", "notify"])
        let name = string(top, "name", path: "", required: true)
        if let name, name.contains("/") { issue(value(top, "name"), "name", "must not contain '/'") }
        let store = string(top, "store", path: "", required: true)
        if let store, StoreLocation.isServer(store), let node = value(top, "store") {
            // The URL's form, here rather than at the first connection: a password written in the job fails validate.
            do throws(StoreSyncError) {
                try StoreLocation.checkForm(store)
            } catch {
                issue(node, "store", error.message + (error.remedy.map { ". " + $0 } ?? ""))
            }
        }
        let output = string(top, "output", path: "", required: true)
        let simulator = value(top, "simulator").flatMap { simulatorSpec($0, checkFaults: rules.checkFaults) }
        let http = value(top, "http").flatMap { httpSettings($0, environment: environment) } ?? HTTPSettings()
        let retention = value(top, "retention").flatMap { retentionPolicy($0) }
        let artworkSize = int(top, "artworkSize", path: "", range: ArtworkURL.appleSizes)
        var sources: [SourceSpec] = []
        if let node = value(top, "sources") {
            if let sequence = node.sequence, !sequence.isEmpty {
                // Each valid source with its place in the file: a source that did not
                // read (a misspelt kind) must not shift the places of those after it.
                var parsed: [(index: Int, source: SourceSpec)] = []
                var declared: [String] = []
                for (n, element) in sequence.enumerated() {
                    if let source = sourceSpec(element, path: "sources[\(n)]", registry: rules.registry) { parsed.append((n, source)) }
                    if case .mapping(let pairs) = element.value,
                       let name = pairs.first(where: { $0.key.scalar?.text == "name" })?.value.scalar?.text {
                        declared.append(name)
                    } else {
                        declared.append("")
                    }
                }
                var names = Set<String>()
                for (n, source) in parsed {
                    if !names.insert(source.name).inserted {
                        issue(sequence[n], "sources[\(n)].name", "duplicate source name '\(source.name)': names must be unique")
                    }
                    // Sources run in the file's order, so what a source starts from must come first.
                    if let upstream = source.settings.upstream, !names.contains(upstream) || upstream == source.name {
                        // An earlier source of that name that did not read has its own problem above.
                        if upstream != source.name, declared[..<n].contains(upstream) { continue }
                        let earlier = parsed.filter { $0.index < n }.map(\.source.name)
                        issue(sequence[n], "sources[\(n)]",
                              "'\(upstream)' must name an earlier source of this job"
                              + (earlier.isEmpty ? " (there is none)" : "; earlier sources: \(earlier.joined(separator: ", "))"))
                    }
                }
                sources = parsed.map(\.source)
            } else {
                issue(node, "sources", "expected a non-empty list of sources")
            }
        } else {
            issue(anchor(top), "sources", "is required")
        }
        var exports: [ExportSpec] = []
        var exportKeep: [String: Int] = [:]
        if let node = value(top, "exports") {
            if let sequence = node.sequence {
                for (n, element) in sequence.enumerated() {
                    if let export = exportSpec(element, path: "exports[\(n)]", environment: environment) {
                        // Two mirrors would each claim the feeds' images: one per job.
                        if case .artwork = export, exports.contains(where: { if case .artwork = $0 { true } else { false } }) {
                            issue(element, "exports[\(n)]", "a job has at most one artwork export")
                        }
                        exports.append(export)
                        // A changeset export's `keep` counts changesets, not dated files (read with it).
                        if case .changeset = export {
                        } else if let keep = keep(element, path: "exports[\(n)]", export: export) {
                            exportKeep[export.target] = keep
                        }
                    }
                }
            } else {
                issue(node, "exports", "expected a list of exports")
            }
        }
        if let nodes = value(top, "exports")?.sequence, nodes.count == exports.count { linkChangesets(&exports, nodes: nodes) }
        let notify = value(top, "notify").flatMap { notifySpec($0, environment: environment) }
        if let name, let store, let output, !StoreLocation.isServer(store), let node = value(top, "exports")?.sequence {
            refuseExportsOverTheStore(exports, nodes: node, store: resolve(store), output: resolve(output), jobName: name)
        }
        guard let name, let store, let output else { return nil }
        var spec = JobSpec(
            name: name, file: file, storePath: StoreLocation.isServer(store) ? store : resolve(store), outputDirectory: resolve(output), simulator: simulator, http: http,
            sources: sources, exports: exports, retention: retention)
        if let artworkSize { spec.artworkSize = artworkSize }
        spec.exportKeep = exportKeep
        spec.notify = notify
        return spec
    }

    /// A store may sit in the output folder (the demo's does), but no export
    /// may write one of its files: `{kind: sqlite, path: "{date}.sqlite"}`
    /// could be renamed over `snapshot.sqlite` on no night, yet
    /// `path: snapshot.sqlite` would replace the store. `run` loads the job
    /// through here too, so `validate` and `run` refuse the same jobs.
    mutating func refuseExportsOverTheStore(_ exports: [ExportSpec], nodes: [JobNode], store: String, output: String, jobName: String) {
        let base = URL(fileURLWithPath: output).standardizedFileURL.path + "/"
        let storePath = URL(fileURLWithPath: store).standardizedFileURL.path
        guard storePath.hasPrefix(base) else { return }
        let storeRelative = String(storePath.dropFirst(base.count))
        let storeFiles = ["", "-wal", "-shm", "-journal", ".lock", ".history"].map { storeRelative + $0 }
        for (n, export) in exports.enumerated() where n < nodes.count {
            var targets: [String] = []
            switch export {
            case .sqlite(let path, _, _, let metadata): targets = [path] + [metadata].compactMap { $0 }
            case .csvChanges(let path, _), .runReport(let path), .metrics(let path): targets = [path]
            case .feed(let feed): targets = [feed.rssPath, feed.atomPath].compactMap { $0 }
            case .opml(let opml): targets = [opml.path]
            case .csvTables, .artwork, .changeset: targets = []
            }
            for target in targets {
                let expanded = PathTemplate.expand(target, ["job": jobName])
                // Each other variable stands for any name it could take, `{date}` for any day's.
                if let hit = storeFiles.first(where: { expanded == $0 || PathTemplate.matches($0, template: expanded, datesAreDates: true) }) {
                    issue(nodes[n], "exports[\(n)].path",
                          "'\(target)' could overwrite the snapshot store's file \(hit) in the output folder; "
                          + "name the export's file differently, or keep the store outside \(output)")
                }
            }
        }
    }

    /// `keep: N` of an export: only for exports whose file name has `{date}`
    /// in its last part (a new file each day), since only they pile up.
    mutating func keep(_ node: JobNode, path: String, export: ExportSpec) -> Int? {
        guard let fields = mapping(node, path: path), value(fields, "keep") != nil else { return nil }
        guard let keep = int(fields, "keep", path: path, range: 1...100_000) else { return nil }
        let parts = export.target.split(separator: "/", omittingEmptySubsequences: false)
        let name = String(parts.last ?? "")
        let folder = parts.dropLast().joined(separator: "/")
        guard PathTemplate.variables(in: name).contains("date"), PathTemplate.variables(in: folder).isEmpty else {
            issue(value(fields, "keep"), join(path, "keep"),
                  "needs a file name with {date} (in the file's name, not its folder), e.g. path: changes-{date}.csv; got '\(export.target)'")
            return nil
        }
        return keep
    }

    static let retentionDays = 1...36_500

    /// `retention: {days: 90}`, or the shorthand `retention: 90`.
    mutating func retentionPolicy(_ node: JobNode) -> RetentionPolicy? {
        let hint = "e.g. retention: {days: 90} keeps 90 days of change log and runs (leave retention out to keep them all)"
        if let scalar = node.scalar {
            guard let days = scalar.int, !scalar.isNull else {
                issue(node, "retention", "expected a number of days or {days: N}; \(hint)")
                return nil
            }
            guard Self.retentionDays.contains(days) else {
                issue(node, "retention", "must be between \(Self.retentionDays.lowerBound) and \(Self.retentionDays.upperBound) days, got \(days); \(hint)")
                return nil
            }
            return RetentionPolicy(days: days)
        }
        guard let fields = mapping(node, path: "retention") else { return nil }
        checkKeys(fields, path: "retention", allowed: ["days"])
        guard value(fields, "days") != nil else {
            issue(anchor(fields) ?? node, "retention.days", "is required; \(hint)")
            return nil
        }
        return int(fields, "days", path: "retention", range: Self.retentionDays).map(RetentionPolicy.init(days:))
    }

    mutating func simulatorSpec(_ node: JobNode, checkFaults: (@Sendable ([String]) -> String?)?) -> SimulatorSpec? {
        guard let fields = mapping(node, path: "simulator") else { return nil }
        checkKeys(fields, path: "simulator", allowed: ["seed", "podcasts", "products", "changed", "added", "removed", "faults"])
        var spec = SimulatorSpec()
        if let seed = int(fields, "seed", path: "simulator", range: 0...Int.max) { spec.seed = UInt64(seed) }
        if let n = int(fields, "podcasts", path: "simulator", range: 0...10_000_000) { spec.podcasts = n }
        if let n = int(fields, "products", path: "simulator", range: 0...10_000_000) { spec.products = n }
        if let f = double(fields, "changed", path: "simulator", range: 0...1) { spec.changed = f }
        if let f = double(fields, "added", path: "simulator", range: 0...1) { spec.added = f }
        if let f = double(fields, "removed", path: "simulator", range: 0...1) { spec.removed = f }
        if let faults = strings(fields, "faults", path: "simulator") {
            if let problem = checkFaults?(faults) {
                issue(value(fields, "faults"), "simulator.faults", problem)
            } else {
                spec.faults = faults
            }
        }
        return spec
    }

    mutating func httpSettings(_ node: JobNode, environment: [String: String] = [:]) -> HTTPSettings? {
        guard let fields = mapping(node, path: "http") else { return nil }
        checkKeys(fields, path: "http", allowed: JobLoader.httpScalarKeys + ["requestsPerMinute", "headers"])
        var settings = HTTPSettings()
        if let headersNode = value(fields, "headers") {
            settings.headers = secretHeaders(headersNode, environment: environment)
        }
        if let t = double(fields, "timeoutSeconds", path: "http", range: 0.1...3600) { settings.timeoutSeconds = t }
        if let ua = string(fields, "userAgent", path: "http") { settings.userAgent = ua }
        if let n = int(fields, "maxAttempts", path: "http", range: 1...20) { settings.maxAttempts = n }
        if let r = double(fields, "defaultRequestsPerMinute", path: "http", range: 0.01...1_000_000) { settings.defaultRequestsPerMinute = r }
        if let b = double(fields, "backoffBaseSeconds", path: "http", range: 0...3600) { settings.backoffBaseSeconds = b }
        if let b = double(fields, "backoffMaxSeconds", path: "http", range: 0...86400) { settings.backoffMaxSeconds = b }
        if let n = int(fields, "burst", path: "http", range: 1...1000) { settings.burst = n }
        if let n = int(fields, "concurrency", path: "http", range: 1...64) { settings.concurrency = n }
        if let n = int(fields, "circuitBreakerThreshold", path: "http", range: 0...10_000) { settings.circuitBreakerThreshold = n }
        if let t = double(fields, "cacheTTLSeconds", path: "http", range: 0...86400) { settings.cacheTTLSeconds = t }
        if let m = double(fields, "deadlineMinutes", path: "http", range: RunOptions.deadlineRange) { settings.deadlineMinutes = m }
        if let limitsNode = value(fields, "requestsPerMinute") {
            if let limits = mapping(limitsNode, path: "http.requestsPerMinute") {
                for limit in limits {
                    if let r = double(limits, limit.key, path: "http.requestsPerMinute", range: 0.01...1_000_000) {
                        settings.requestsPerMinute[limit.key.lowercased()] = r
                    }
                }
            }
        }
        return settings
    }

    /// `http.headers`: host → header name → `{env: VARIABLE}`. A value
    /// written in the file is refused, and no message here ever quotes a
    /// value: a token must not reach a log through a typo.
    mutating func secretHeaders(_ node: JobNode, environment: [String: String]) -> [SecretHeader] {
        guard let hosts = mapping(node, path: "http.headers") else { return [] }
        checkKeys(hosts, path: "http.headers", allowed: hosts.map(\.key))
        var out: [SecretHeader] = []
        for host in hosts {
            let hostPath = "http.headers.\(host.key)"
            if host.key.isEmpty || host.key.contains("/") || host.key.contains(":") || host.key.contains(where: \.isWhitespace) {
                issue(host.keyNode, hostPath, "expected a host name such as api.example.com (no scheme, port or path)")
                continue
            }
            guard case .mapping = host.value.value else {
                issue(host.value, hostPath, "expected a mapping of header names to {env: VARIABLE}")
                continue
            }
            guard let headers = mapping(host.value, path: hostPath) else { continue }
            out += secretHeaders(headers, path: hostPath, host: host.key, environment: environment,
                                 unset: { "the run would send no \($0) to \(host.key)" })
        }
        return out
    }

    /// One host's headers, each `{env: VARIABLE, prefix: …}`: read from the
    /// environment, refused when written in the file, unset or unfit for a
    /// header. `unset` says what a missing variable costs, by header name.
    mutating func secretHeaders(_ headers: Fields, path: String, host: String, environment: [String: String],
                                unset: (String) -> String) -> [SecretHeader] {
        checkKeys(headers, path: path, allowed: headers.map(\.key))
        var out: [SecretHeader] = []
        for header in headers {
            let headerPath = join(path, header.key)
            let validName = !header.key.isEmpty && header.key.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || "-_".contains($0)) }
            if !validName {
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
                      "environment variable \(variable) is not set (or empty): \(unset(header.key))")
                continue
            }
            if (prefix + secret).contains(where: { $0 == "\r" || $0 == "\n" || $0 == "\0" }) {
                issue(value(source, "env"), join(headerPath, "env"),
                      "environment variable \(variable) holds a line break or NUL, which a header cannot carry")
                continue
            }
            out.append(SecretHeader(host: host, name: header.key, variable: variable, value: prefix + secret, secret: secret))
        }
        return out
    }

    mutating func sourceSpec(_ node: JobNode, path: String, registry: SourceRegistry) -> SourceSpec? {
        guard let fields = mapping(node, path: path) else { return nil }
        let name = string(fields, "name", path: path, required: true)
        let kindName = string(fields, "kind", path: path, required: true)
        guard let kindName, let kind = registry.kind(named: kindName) else {
            // The rest of the source is still checked, so one run of validate
            // lists every problem: as the kind it most likely meant, or else
            // against the keys any kind takes.
            var meant: (any SourceKind.Type)?
            if let kindName, let suggested = Self.suggestion(for: kindName, among: registry.names) {
                meant = registry.kind(named: suggested)
            }
            if let kindName {
                issue(value(fields, "kind"), join(path, "kind"),
                      Self.unknown("source kind", kindName, among: registry.names, listedAs: "known kinds:"))
            }
            if let meant {
                checkKeys(fields, path: path, allowed: ["name", "kind", "baseURL", "removal"] + meant.settingKeys)
                _ = meant.read(fields, path: path, reader: &self)
            } else {
                var anyKind = Set<String>()
                for name in registry.names {
                    if let kind = registry.kind(named: name) { anyKind.formUnion(kind.settingKeys) }
                }
                checkKeys(fields, path: path, allowed: ["name", "kind", "baseURL", "removal"] + anyKind.sorted())
            }
            return nil
        }
        checkKeys(fields, path: path, allowed: ["name", "kind", "baseURL", "removal"] + kind.settingKeys)
        let baseURL = url(fields, "baseURL", path: path)
        var removal = RemovalPolicy()
        if let removalNode = value(fields, "removal"), let r = mapping(removalNode, path: join(path, "removal")) {
            checkKeys(r, path: join(path, "removal"), allowed: ["afterMisses", "maxRatio"])
            if let n = int(r, "afterMisses", path: join(path, "removal"), range: 1...1000) { removal.afterMisses = n }
            if let f = double(r, "maxRatio", path: join(path, "removal"), range: 0...1) { removal.maxRatio = f }
        }
        guard let settings = kind.read(fields, path: path, reader: &self), let name else { return nil }
        return SourceSpec(name: name, baseURL: baseURL, removal: removal, settings: settings)
    }

    static let exportKinds = ["sqlite", "csv", "changes-csv", "feed", "opml", "run-report", "metrics", "artwork", "changeset"]
    static let csvKeys = ["delimiter", "bom", "crlf", "neutralizeFormulas"]

    /// A relative path whose template variables are known (and, when
    /// `allowed` is given, among those that make sense for this export).
    mutating func template(_ fields: Fields, _ key: String, path: String, default fallback: String?,
                           allowed: Set<String> = Set(PathTemplate.variables)) -> String? {
        guard let text = relativePath(fields, key, path: path, default: fallback) else { return nil }
        let unknown = PathTemplate.variables(in: text).subtracting(allowed)
        if !unknown.isEmpty {
            issue(value(fields, key), join(path, key),
                  "unknown template variable(s) \(unknown.sorted().map { "{\($0)}" }.joined(separator: ", ")); "
                  + "allowed here: \(allowed.sorted().map { "{\($0)}" }.joined(separator: ", "))")
            return nil
        }
        return text
    }

    mutating func csvOptions(_ fields: Fields, path: String) -> CSVExportOptions {
        var options = CSVExportOptions()
        if let d = string(fields, "delimiter", path: path) {
            if d == "\\t" || d == "\t" { options.delimiter = "\t" } else if d.utf8.count == 1, d != "\"", d != "\n", d != "\r" {
                options.delimiter = d
            } else {
                issue(value(fields, "delimiter"), join(path, "delimiter"), "must be one ASCII character other than a quote or line break (or \\t)")
            }
        }
        if let b = bool(fields, "bom", path: path) { options.byteOrderMark = b }
        if let b = bool(fields, "crlf", path: path) { options.crlf = b }
        if let b = bool(fields, "neutralizeFormulas", path: path) { options.neutralizeFormulas = b }
        return options
    }

    /// The channel keys a publisher owns (`language`, `owner`, `copyright`,
    /// `explicit`, `type`, `categories`) and the feed's `strict`/`archive` switches.
    mutating func channelFields(_ fields: Fields, path: String, into spec: inout FeedExportSpec) {
        if let language = string(fields, "language", path: path) {
            // RFC 5646 in the shape feeds use: `en`, `en-us`, `pt-BR`, `zh-Hant-TW`.
            let parts = language.split(separator: "-", omittingEmptySubsequences: false)
            if parts.allSatisfy({ (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }),
               let first = parts.first, (2...3).contains(first.count), first.allSatisfy(\.isLetter) {
                spec.language = language.lowercased()
            } else {
                issue(value(fields, "language"), join(path, "language"), "must be a language tag like en-us, fr or pt-br")
            }
        }
        if let ownerNode = value(fields, "owner") {
            if let owner = mapping(ownerNode, path: join(path, "owner")) {
                checkKeys(owner, path: join(path, "owner"), allowed: ["name", "email"])
                spec.ownerName = string(owner, "name", path: join(path, "owner"))
                if let email = string(owner, "email", path: join(path, "owner")) {
                    let at = email.split(separator: "@", omittingEmptySubsequences: false)
                    if at.count == 2, !at[0].isEmpty, at[1].contains("."), !email.contains(where: \.isWhitespace) {
                        spec.ownerEmail = email
                    } else {
                        issue(value(owner, "email"), join(join(path, "owner"), "email"), "must be an e-mail address, e.g. feeds@example.com")
                    }
                }
            }
        }
        spec.copyright = string(fields, "copyright", path: path)
        spec.explicit = bool(fields, "explicit", path: path)
        if let type = string(fields, "type", path: path) {
            if type == "episodic" || type == "serial" { spec.podcastType = type } else {
                issue(value(fields, "type"), join(path, "type"), "must be episodic (newest first) or serial (oldest first)")
            }
        }
        if let names = strings(fields, "categories", path: path) {
            let node = value(fields, "categories")
            for name in names {
                let category = name.split(separator: "/").map { $0.trimmingCharacters(in: .whitespaces) }
                if AppleCategories.isListed(category) {
                    spec.categories.append(category)
                } else {
                    let nearest = AppleCategories.path(for: category).map { " (nearest listed: \($0.joined(separator: "/")))" } ?? ""
                    issue(node, join(path, "categories"),
                          "'\(name)' is not on Apple Podcasts' category list\(nearest); write Category or Category/Subcategory")
                }
            }
            if spec.categories.count > 3 {
                issue(node, join(path, "categories"), "Apple Podcasts reads at most 3 categories; list the most fitting first")
            }
        }
        spec.strict = bool(fields, "strict", path: path) ?? false
        spec.archive = bool(fields, "archive", path: path) ?? false
    }

    /// The tags a list entry under `podcast:` may set: its attributes, and the key holding its text.
    static let podcastListTags: [(key: String, tag: String, attributes: [String], text: String)] = [
        ("funding", "funding", ["url"], "text"),
        ("txt", "txt", ["purpose"], "text"),
        ("trailers", "trailer", ["url", "pubdate", "length", "type", "season"], "title"),
        ("podroll", "remoteItem", ["feedGuid", "feedUrl", "itemGuid", "medium"], ""),
    ]

    /// The `podcast:` mapping of a feed export: the publisher's own Podcasting
    /// 2.0 channel tags, each held to the namespace's rules here, so a feed
    /// never publishes one a podcast app would refuse.
    mutating func podcastChannelTags(_ node: JobNode, path: String, into spec: inout FeedExportSpec) {
        guard let fields = mapping(node, path: path) else { return }
        checkKeys(fields, path: path, allowed: ["locked", "medium", "guid"] + Self.podcastListTags.map(\.key))
        func check(_ tag: PodcastTag, _ node: JobNode?, _ path: String) -> PodcastTag? {
            let problems = PodcastTagRules.problems(tag, at: .channel)
            for problem in problems { issue(node, path, problem) }
            return problems.isEmpty ? tag : nil
        }
        if let locked = bool(fields, "locked", path: path) {
            if let owner = spec.ownerEmail {
                spec.podcastTags.append(PodcastTag("locked", attributes: [("owner", owner)], text: locked ? "yes" : "no"))
            } else {
                issue(value(fields, "locked"), join(path, "locked"), "podcast:locked names its owner: set owner.email too")
            }
        }
        if let medium = string(fields, "medium", path: path),
           let tag = check(PodcastTag("medium", text: medium), value(fields, "medium"), join(path, "medium")) {
            spec.podcastTags.append(tag)
        }
        if let guid = string(fields, "guid", path: path) {
            spec.podcastGUID = check(PodcastTag("guid", text: guid.lowercased()), value(fields, "guid"), join(path, "guid"))?.text
        }
        var podroll: [PodcastTag] = []
        for list in Self.podcastListTags {
            guard let listNode = value(fields, list.key) else { continue }
            let listPath = join(path, list.key)
            guard let entries = listNode.sequence else {
                issue(listNode, listPath, "expected a list of mappings")
                continue
            }
            for (n, entry) in entries.enumerated() {
                let entryPath = "\(listPath)[\(n)]"
                guard let entryFields = mapping(entry, path: entryPath) else { continue }
                checkKeys(entryFields, path: entryPath, allowed: list.attributes + (list.text.isEmpty ? [] : [list.text]))
                var tag = PodcastTag(list.tag)
                for attribute in list.attributes {
                    if let text = string(entryFields, attribute, path: entryPath) { tag.attributes.append((attribute, text)) }
                }
                if !list.text.isEmpty { tag.text = string(entryFields, list.text, path: entryPath) }
                if list.tag == "remoteItem" {
                    if tag.attribute("feedGuid") == nil { issue(entry, entryPath, "a podroll entry needs its feedGuid") } else { podroll.append(tag) }
                } else if let tag = check(tag, entry, entryPath) {
                    spec.podcastTags.append(tag)
                }
            }
        }
        if !podroll.isEmpty { spec.podcastTags.append(PodcastTag("podroll", children: podroll)) }
    }

    mutating func exportSpec(_ node: JobNode, path: String, environment: [String: String] = [:]) -> ExportSpec? {
        guard let fields = mapping(node, path: path) else { return nil }
        guard let kind = string(fields, "kind", path: path, required: true) else { return nil }
        switch kind {
        case "sqlite":
            checkKeys(fields, path: path, allowed: ["kind", "path", "historyDays", "history", "metadata", "keep"])
            var historyDays: Int? = ExportSpec.defaultHistoryDays
            if string(fields, "historyDays", path: path) == "all" {
                historyDays = nil
            } else if value(fields, "historyDays") != nil {
                historyDays = int(fields, "historyDays", path: path, range: 1...36500)
            }
            let metadata = value(fields, "metadata") == nil ? nil
                : template(fields, "metadata", path: path, default: nil, allowed: ["date", "job"])
            return template(fields, "path", path: path, default: nil, allowed: ["date", "job"]).map {
                .sqlite(path: $0, historyDays: historyDays, history: bool(fields, "history", path: path) ?? false, metadata: metadata)
            }
        case "csv":
            checkKeys(fields, path: path, allowed: ["kind", "directory"] + Self.csvKeys)
            let options = csvOptions(fields, path: path)
            return template(fields, "directory", path: path, default: ".", allowed: ["date", "job"]).map { .csvTables(directory: $0, options: options) }
        case "changes-csv":
            checkKeys(fields, path: path, allowed: ["kind", "path", "keep"] + Self.csvKeys)
            let options = csvOptions(fields, path: path)
            return template(fields, "path", path: path, default: "changes.csv", allowed: ["date", "job"]).map { .csvChanges(path: $0, options: options) }
        case "feed":
            checkKeys(fields, path: path, allowed: ["kind", "feed", "chart", "rss", "atom", "title", "selfURL", "atomURL", "link",
                                                    "description", "limit", "image", "author", "language", "owner",
                                                    "copyright", "explicit", "type", "categories", "strict", "archive", "podcast",
                                                    "checkEnclosures", "push"])
            guard let feedName = string(fields, "feed", path: path, required: true) else { return nil }
            guard let feedKind = FeedKind(rawValue: feedName) else {
                issue(value(fields, "feed"), join(path, "feed"), Self.unknown("feed", feedName, among: FeedKind.allCases.map(\.rawValue)))
                return nil
            }
            // Per-genre and per-country files only make sense for catalog feeds.
            let groupable: Set<String> = feedKind.isGroupable ? Set(PathTemplate.variables) : ["date", "job"]
            let chart = string(fields, "chart", path: path)
            if feedKind == .top, chart == nil {
                issue(anchor(fields), join(path, "chart"), "is required for a top feed: the chart's name, e.g. toppodcasts or topsongs")
            }
            let rss = value(fields, "rss") == nil ? nil : template(fields, "rss", path: path, default: nil, allowed: groupable)
            let atom = value(fields, "atom") == nil ? nil : template(fields, "atom", path: path, default: nil, allowed: groupable)
            if value(fields, "rss") == nil && value(fields, "atom") == nil {
                issue(anchor(fields), join(path, "rss"), "a feed needs an rss file, an atom file, or both")
            }
            if let rss, let atom, PathTemplate.variables(in: rss) != PathTemplate.variables(in: atom) {
                issue(value(fields, "atom"), join(path, "atom"), "must use the same template variables as rss")
            }
            let selfURL = string(fields, "selfURL", path: path)
            if selfURL == nil { issue(anchor(fields), join(path, "selfURL"), "is required: the public URL the feed will be served at (may use the same {variables})") }
            let title = string(fields, "title", path: path) ?? feedKind.rawValue
            var spec = FeedExportSpec(
                kind: feedKind, rssPath: rss, atomPath: atom, title: title, selfURL: selfURL ?? "",
                atomURL: string(fields, "atomURL", path: path), link: string(fields, "link", path: path) ?? selfURL ?? "",
                description: string(fields, "description", path: path) ?? title,
                limit: int(fields, "limit", path: path, range: 1...100_000) ?? 100, chart: chart,
                imageURL: url(fields, "image", path: path)?.absoluteString, author: string(fields, "author", path: path))
            channelFields(fields, path: path, into: &spec)
            if let check = bool(fields, "checkEnclosures", path: path) {
                if feedKind.isSubscribable {
                    spec.checkEnclosures = check
                } else {
                    issue(value(fields, "checkEnclosures"), join(path, "checkEnclosures"),
                          "only feeds podcast apps subscribe to (episodes-new, music-new) publish enclosures")
                }
            }
            if let node = value(fields, "push") {
                spec.push = pushSpec(node, path: join(path, "push"), environment: environment)
            }
            if let node = value(fields, "podcast") {
                if feedKind.isSubscribable {
                    podcastChannelTags(node, path: join(path, "podcast"), into: &spec)
                } else {
                    issue(node, join(path, "podcast"), "Podcasting 2.0 channel tags belong to feeds podcast apps subscribe to (episodes-new, music-new)")
                }
            }
            return selfURL == nil || (rss == nil && atom == nil) ? nil : .feed(spec)
        case "opml":
            checkKeys(fields, path: path, allowed: ["kind", "path", "title"])
            let file = template(fields, "path", path: path, default: "podcasts.opml", allowed: ["genre", "date", "job"])
            let title = string(fields, "title", path: path) ?? "Podcasts"
            return file.map { .opml(OPMLExportSpec(path: $0, title: title)) }
        case "run-report":
            checkKeys(fields, path: path, allowed: ["kind", "path", "keep"])
            return template(fields, "path", path: path, default: "report.json", allowed: ["date", "job"]).map { .runReport(path: $0) }
        case "metrics":
            checkKeys(fields, path: path, allowed: ["kind", "path"])
            return template(fields, "path", path: path, default: "storesync.prom", allowed: ["job"]).map { .metrics(path: $0) }
        case "artwork":
            checkKeys(fields, path: path, allowed: ["kind", "directory", "budgetMB", "artworkBaseURL"])
            let directory = ownFolder(fields, path: path, default: "artwork", why: "the mirror deletes images it no longer keeps")
            let budget = value(fields, "budgetMB") == nil
                ? ArtworkExportSpec.defaultBudgetMB : int(fields, "budgetMB", path: path, range: 1...10_000_000)
            var baseURL: String?
            if value(fields, "artworkBaseURL") != nil {
                guard let url = url(fields, "artworkBaseURL", path: path) else { return nil }
                // Feeds append "/<file>": a trailing slash would double it.
                baseURL = url.absoluteString.hasSuffix("/") ? String(url.absoluteString.dropLast()) : url.absoluteString
            }
            guard let directory, let budget else { return nil }
            return .artwork(ArtworkExportSpec(directory: directory, budgetMB: budget, artworkBaseURL: baseURL))
        case "changeset":
            checkKeys(fields, path: path, allowed: ["kind", "directory", "database", "keep"])
            let directory = ownFolder(fields, path: path, default: "changesets", why: "older changesets are removed from it")
            let keep = value(fields, "keep") == nil ? ChangesetExportSpec.defaultKeep : int(fields, "keep", path: path, range: 1...100_000)
            if let reason = SQLiteChangeset.unavailableReason {
                issue(value(fields, "kind"), join(path, "kind"), "\(reason); remove this export or run storesync with such a libsqlite3")
            }
            // The database is matched to its `sqlite` export once every export is read (``linkChangesets``).
            let database = string(fields, "database", path: path) ?? ""
            guard let directory, let keep else { return nil }
            return .changeset(ChangesetExportSpec(directory: directory, database: database, keep: keep))
        default:
            issue(value(fields, "kind"), join(path, "kind"), Self.unknown("export kind", kind, among: Self.exportKinds))
            return nil
        }
    }

    /// `push: {hub, podping, podpingHeaders}` of a feed export; the
    /// notifier's headers are `{env: VARIABLE}` like `http.headers`.
    mutating func pushSpec(_ node: JobNode, path: String, environment: [String: String]) -> FeedPushSpec? {
        guard let fields = mapping(node, path: path) else { return nil }
        checkKeys(fields, path: path, allowed: ["hub", "podping", "podpingHeaders"])
        var push = FeedPushSpec()
        push.hub = value(fields, "hub") == nil ? nil : url(fields, "hub", path: path)?.absoluteString
        let podping = value(fields, "podping") == nil ? nil : url(fields, "podping", path: path)
        push.podping = podping?.absoluteString
        if value(fields, "hub") == nil && value(fields, "podping") == nil {
            issue(node, path, "names no one to tell: give a WebSub hub (hub: URL), a Podping-style notifier (podping: URL), or both")
        }
        if let headers = value(fields, "podpingHeaders") {
            let headersPath = join(path, "podpingHeaders")
            if value(fields, "podping") == nil {
                issue(headers, headersPath, "are sent to the podping notifier, and none is given")
            } else if let headerFields = mapping(headers, path: headersPath) {
                push.podpingHeaders = secretHeaders(headerFields, path: headersPath, host: podping?.host ?? "", environment: environment,
                                                    unset: { "the notifier would get no \($0) and refuse every ping" })
            }
        }
        return push
    }

    /// `directory` of an export that removes files from it: a folder inside
    /// the output folder and not the output folder itself; nil (and an issue) otherwise.
    mutating func ownFolder(_ fields: Fields, path: String, default fallback: String, why: String) -> String? {
        guard let directory = relativePath(fields, "directory", path: path, default: fallback) else { return nil }
        guard !directory.split(separator: "/").filter({ $0 != "." }).isEmpty else {
            issue(value(fields, "directory"), join(path, "directory"),
                  "must be a folder of its own inside the output folder (\(why)), got '\(directory)'")
            return nil
        }
        return directory
    }

    /// Gives each changeset export its database: the `sqlite` export whose
    /// `path` it names, or the job's only one when it names none. A database
    /// with `{date}` in its path is a new file each day, with no previous
    /// version at its path to start a changeset from.
    mutating func linkChangesets(_ exports: inout [ExportSpec], nodes: [JobNode]) {
        let databases = exports.compactMap { export -> String? in
            if case .sqlite(let path, _, _, _) = export { path } else { nil }
        }
        for (n, export) in exports.enumerated() where n < nodes.count {
            guard case .changeset(var changeset) = export else { continue }
            let path = "exports[\(n)]"
            let fields = mapping(nodes[n], path: path) ?? []
            if changeset.database.isEmpty {
                guard databases.count == 1 else {
                    issue(nodes[n], join(path, "database"), databases.isEmpty
                          ? "a changeset export needs a sqlite export in the same job: it records that database's changes"
                          : "the job has \(databases.count) sqlite exports (\(databases.joined(separator: ", "))): name one as database")
                    continue
                }
                changeset.database = databases[0]
            } else if !databases.contains(changeset.database) {
                issue(value(fields, "database"), join(path, "database"),
                      "names no sqlite export of this job: expected one of \(databases.isEmpty ? "(none)" : databases.joined(separator: ", "))")
                continue
            }
            if PathTemplate.variables(in: changeset.database).contains("date") {
                issue(value(fields, "database") ?? nodes[n], join(path, "database"),
                      "'\(changeset.database)' is a new file each day ({date}), so no earlier version sits at its path to start from; "
                      + "give the sqlite export a fixed path")
            }
            exports[n] = .changeset(changeset)
        }
        var seen: Set<String> = []
        for (n, export) in exports.enumerated() where n < nodes.count {
            guard case .changeset(let changeset) = export, !changeset.database.isEmpty else { continue }
            if !seen.insert(changeset.database).inserted {
                issue(nodes[n], "exports[\(n)]", "\(changeset.database) already has a changeset export: one per database")
            }
        }
    }
}
