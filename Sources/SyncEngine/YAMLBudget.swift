import CYaml

/// How big a YAML document is once its aliases are expanded, measured on
/// libyaml's event stream before any tree is built.
///
/// Yams composes an alias as the anchored node itself, and every reader of
/// the tree (the job's settings, `${VAR}` expansion, overrides, Yams' own
/// duplicate-key check, which hashes keys) walks the expanded document: nine
/// nested aliases of nine ("billion laughs") are 10⁹ nodes. Counting here is
/// linear in the text, so a bomb is refused in milliseconds while an ordinary
/// job with tens of aliases passes untouched. Hand-written over CYaml (the C
/// library Yams bundles) because Yams exposes no event-level API and its
/// `compose` is where the blow-up already happens.
enum YAMLBudget {
    /// Aliases a job file may use: far more than any job needs.
    static let maxAliases = 10_000
    /// Nodes (scalars, sequences, mappings) once every alias is expanded.
    static let maxExpandedNodes = 200_000
    /// Scalar bytes once every alias is expanded.
    static let maxExpandedBytes = 32 << 20

    struct Refusal: Error {
        var message: String
        /// 1-based, as JobFileIssue counts.
        var line: Int
        var column: Int
    }

    /// Nil when the document stays within the budget, or does not parse (the
    /// composer then reports the syntax error with its position).
    static func refusal(_ text: String) -> Refusal? {
        var parser = yaml_parser_t()
        guard yaml_parser_initialize(&parser) == 1 else { return nil }
        defer { yaml_parser_delete(&parser) }
        var bytes = Array(text.utf8)
        return bytes.withUnsafeMutableBufferPointer { buffer -> Refusal? in
            yaml_parser_set_input_string(&parser, buffer.baseAddress, buffer.count)
            var expandedNodes = 0
            var expandedBytes = 0
            var aliases = 0
            // Anchor → the size of what it names; open collections with where they started.
            var sizes: [String: (nodes: Int, bytes: Int)] = [:]
            var open: [(anchor: String?, nodes: Int, bytes: Int)] = []
            var event = yaml_event_t()
            while yaml_parser_parse(&parser, &event) == 1 {
                defer { yaml_event_delete(&event) }
                let mark = event.start_mark
                func refuse(_ what: String) -> Refusal {
                    Refusal(message: "YAML \(what): nested aliases (a \"billion laughs\" document) are refused before the file is read",
                            line: Int(mark.line) + 1, column: Int(mark.column) + 1)
                }
                switch event.type {
                case YAML_STREAM_END_EVENT:
                    return nil
                case YAML_SCALAR_EVENT:
                    expandedNodes += 1
                    expandedBytes += Int(event.data.scalar.length)
                    if let anchor = name(event.data.scalar.anchor) { sizes[anchor] = (1, Int(event.data.scalar.length)) }
                case YAML_SEQUENCE_START_EVENT:
                    open.append((name(event.data.sequence_start.anchor), expandedNodes, expandedBytes))
                    expandedNodes += 1
                case YAML_MAPPING_START_EVENT:
                    open.append((name(event.data.mapping_start.anchor), expandedNodes, expandedBytes))
                    expandedNodes += 1
                case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
                    if let closed = open.popLast(), let anchor = closed.anchor {
                        sizes[anchor] = (expandedNodes - closed.nodes, expandedBytes - closed.bytes)
                    }
                case YAML_ALIAS_EVENT:
                    aliases += 1
                    if aliases > maxAliases { return refuse("uses more than \(maxAliases) aliases") }
                    // An alias to an anchor still open (a recursive document) counts what it holds so far.
                    let anchor = name(event.data.alias.anchor) ?? ""
                    let size = sizes[anchor]
                        ?? open.last(where: { $0.anchor == anchor }).map { (expandedNodes - $0.nodes, expandedBytes - $0.bytes) }
                        ?? (1, 0)
                    expandedNodes += size.nodes
                    expandedBytes += size.bytes
                default:
                    break
                }
                if expandedNodes > maxExpandedNodes {
                    return refuse("expands its aliases to more than \(maxExpandedNodes) values")
                }
                if expandedBytes > maxExpandedBytes {
                    return refuse("expands its aliases to more than \(maxExpandedBytes >> 20) MB of text")
                }
            }
            return nil
        }
    }

    private static func name(_ anchor: UnsafeMutablePointer<yaml_char_t>?) -> String? {
        anchor.map { String(cString: UnsafeRawPointer($0).assumingMemoryBound(to: CChar.self)) }
    }
}
