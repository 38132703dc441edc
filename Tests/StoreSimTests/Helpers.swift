import Catalog
import Foundation
@testable import StoreSim
import Testing
import TestSupport

/// Small worlds that exercise every mechanism in milliseconds.
enum Worlds {
    /// High churn so a few nights contain many births, removals and repeated changes.
    static func busy(seed: UInt64 = 9, era: PageKeyEra? = nil) -> World {
        World(config: SimulatorConfig(seed: seed, podcastCount: 400, productCount: 300,
                                      churn: Churn(changed: 0.2, added: 0.05, removed: 0.05), pageKeyEra: era))
    }
}

enum JSONTestError: Error { case notAnObject(String), missingField(String) }

/// Parses JSON with Catalog's parser (independent of the simulator's writer).
func parse(_ bytes: [UInt8]) throws -> JSONValue {
    try JSONParser.parse(bytes)
}

func parseObject(_ bytes: [UInt8]) throws -> [String: JSONValue] {
    guard let object = try parse(bytes).objectValue else {
        throw JSONTestError.notAnObject(String(decoding: bytes.prefix(200), as: UTF8.self))
    }
    return object
}

/// Every product row served on `night`, by paging the list endpoint to the end; keyed by id.
func servedProductRows(_ world: World, night: Int, perPage: Int = 100) throws -> [String: JSONValue] {
    var rows: [String: JSONValue] = [:]
    var page = 1
    while true {
        let response = Endpoints.productList(world: world, night: night,
                                             query: QueryParameters([("page_no", "\(page)"), ("items_per_page", "\(perPage)")]),
                                             ifNoneMatch: nil)
        let document = try parseObject(response.body)
        guard let pageRows = document["pages"]?.arrayValue else { throw JSONTestError.missingField("pages") }
        for row in pageRows {
            guard let id = row["id"]?.intValue else { throw JSONTestError.missingField("id") }
            #expect(rows[String(id)] == nil, "product \(id) served twice on night \(night)")
            rows[String(id)] = row
        }
        let hasNext = (document["has_next"] ?? document["hasNext"])?.boolValue ?? false
        if !hasNext { break }
        page += 1
    }
    return rows
}

/// Every podcast row served on `night` (as Search serves them), keyed by trackId.
func servedPodcastRows(_ world: World, night: Int) throws -> [String: JSONValue] {
    var rows: [String: JSONValue] = [:]
    for key in world.aliveKeys(entity: "podcast", night: night) {
        guard let text = world.rowJSON(entity: "podcast", key: key, night: night) else {
            throw JSONTestError.missingField("row for alive podcast \(key)")
        }
        rows[key] = try parse(Array(text.utf8))
    }
    return rows
}

/// The diff computed the slow way: by comparing every served row of two nights.
func observedDiff(before: [String: JSONValue], after: [String: JSONValue]) -> WorldDiff {
    var diff = WorldDiff()
    for (key, row) in after {
        if let old = before[key] {
            if old != row { diff.changed.insert(key) }
        } else {
            diff.added.insert(key)
        }
    }
    for key in before.keys where after[key] == nil { diff.removed.insert(key) }
    return diff
}

/// The Search results of one request, parsed.
func searchResults(_ world: World, night: Int, _ query: [(String, String)],
                   baseURL: String = World.defaultBaseURL) throws -> (count: Int, rows: [JSONValue]) {
    let response = Endpoints.search(world: world, night: night, query: QueryParameters(query), baseURL: baseURL)
    let document = try parseObject(response.body)
    guard let count = document["resultCount"]?.intValue, let rows = document["results"]?.arrayValue else {
        throw JSONTestError.missingField("resultCount/results")
    }
    return (Int(count), rows)
}

// MARK: Shapes against the recorded samples

/// The JSON type of a value, as the shape checks compare them (ints and doubles are both numbers).
func jsonKind(_ value: JSONValue) -> String {
    switch value {
    case .null: "null"
    case .bool: "bool"
    case .int, .double, .number: "number"
    case .string: "string"
    case .array: "array"
    case .object: "object"
    }
}

/// Checks simulated rows against sample rows of the same kind:
/// - every simulated key is one some sample row has (simulated ⊆ union);
/// - every key all sample rows have is in every simulated row, except `optional`
///   (keys the real service also omits on some rows, documented per call);
/// - a key's JSON type is one the sample uses for it; `null` only for keys in
///   `nullable` (the README: old rows hold nulls).
/// Returns the problems found, for `#expect(problems.isEmpty)`.
func shapeProblems(simulated: [[String: JSONValue]], sample: [[String: JSONValue]], optional: Set<String> = [],
                   nullable: Set<String> = [], _ label: String) -> [String] {
    var problems: [String] = []
    guard !simulated.isEmpty else { return ["\(label): no simulated rows"] }
    guard !sample.isEmpty else { return ["\(label): no sample rows"] }
    let union = sample.reduce(Set<String>()) { $0.union($1.keys) }
    let common = sample.dropFirst().reduce(Set(sample[0].keys)) { $0.intersection($1.keys) }
    var kinds: [String: Set<String>] = [:]
    for row in sample { for (key, value) in row { kinds[key, default: []].insert(jsonKind(value)) } }
    for row in simulated {
        let extra = Set(row.keys).subtracting(union)
        if !extra.isEmpty { problems.append("\(label): keys not in the sample: \(extra.sorted())") }
        let missing = common.subtracting(row.keys).subtracting(optional)
        if !missing.isEmpty { problems.append("\(label): a row lacks \(missing.sorted())") }
        for (key, value) in row {
            let kind = jsonKind(value)
            if kind == "null", nullable.contains(key) { continue }
            if let allowed = kinds[key], !allowed.contains(kind) {
                problems.append("\(label).\(key): \(kind), the sample has \(allowed.sorted())")
            }
        }
    }
    return Array(Set(problems)).sorted()
}

/// Recursive shape check of one JSON document against sample documents: at
/// every path, simulated object keys ⊆ the samples' keys and JSON types among
/// the samples' types. Arrays are compared element by element against every
/// sample element at that path.
func treeProblems(_ simulated: JSONValue, _ samples: [JSONValue], path: String = "$") -> [String] {
    let kinds = Set(samples.map(jsonKind))
    guard !samples.isEmpty else { return [] }
    guard kinds.contains(jsonKind(simulated)) else {
        return ["\(path): \(jsonKind(simulated)), the sample has \(kinds.sorted())"]
    }
    var problems: [String] = []
    switch simulated {
    case .object(let members):
        let sampleObjects = samples.compactMap(\.objectValue)
        let keys = sampleObjects.reduce(Set<String>()) { $0.union($1.keys) }
        for (key, value) in members {
            guard keys.contains(key) else {
                problems.append("\(path).\(key): not in the sample")
                continue
            }
            problems += treeProblems(value, sampleObjects.compactMap { $0[key] }, path: "\(path).\(key)")
        }
    case .array(let items):
        let elements = samples.compactMap(\.arrayValue).flatMap { $0 }
        for item in items.prefix(5) { problems += treeProblems(item, elements, path: "\(path)[]") }
    default: break
    }
    return Array(Set(problems)).sorted()
}

/// Rows of a sample's `results`, optionally of one wrapperType/kind.
func sampleResults(_ name: String, wrapperType: String? = nil, kind: String?? = nil) throws -> [[String: JSONValue]] {
    let rows = (try parse(TestPaths.sample(name))["results"]?.arrayValue ?? []).compactMap(\.objectValue)
    return rows.filter { row in
        (wrapperType == nil || row["wrapperType"]?.stringValue == wrapperType)
            && (kind == nil || row["kind"]?.stringValue == kind!)
    }
}

/// A Search or Lookup response's rows.
func resultRows(_ response: SimResponse) throws -> [[String: JSONValue]] {
    (try parseObject(response.body)["results"]?.arrayValue ?? []).compactMap(\.objectValue)
}

/// A request through the simulator's router, as the server would route it.
func request(_ world: World, night: Int, _ pathAndQuery: String, conditions: Conditions = .none) -> SimResponse {
    let parts = pathAndQuery.split(separator: "?", maxSplits: 1).map(String.init)
    return Endpoints.respond(world: world, night: night, path: parts[0], query: parts.count > 1 ? parts[1] : nil,
                             conditions: conditions)
}

/// Worlds with every catalog small and busy.
extension Worlds {
    static func media(seed: UInt64 = 9, faults: FaultPlan = .none) -> World {
        World(config: SimulatorConfig(seed: seed, podcastCount: 300, productCount: 120,
                                      churn: Churn(changed: 0.2, added: 0.05, removed: 0.05), songCount: 600,
                                      movieCount: 120, appCount: 150, audiobookCount: 80, ebookCount: 80, faults: faults))
    }
}

#if canImport(FoundationXML)
import FoundationXML
#endif

/// Element names (qualified, as written) of an XML document, or nil when a
/// strict parser rejects it. A document whose root element never closes is
/// rejected too (Foundation's parser on Linux lets a truncated tail pass).
func xmlElementNames(_ bytes: [UInt8]) -> [String]? {
    final class Collector: NSObject, XMLParserDelegate {
        var names: [String] = []
        var depth = 0
        var closedRoot = false
        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            names.append(elementName)
            depth += 1
        }
        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?) {
            depth -= 1
            if depth == 0 { closedRoot = true }
        }
    }
    let parser = XMLParser(data: Data(bytes))
    let collector = Collector()
    parser.delegate = collector
    parser.shouldProcessNamespaces = false
    return parser.parse() && collector.closedRoot && collector.depth == 0 ? collector.names : nil
}

/// Elements of an XML document with their attributes and text, in document order.
func xmlElements(_ bytes: [UInt8]) -> [(name: String, attributes: [String: String], text: String)]? {
    final class Collector: NSObject, XMLParserDelegate {
        var elements: [(name: String, attributes: [String: String], text: String)] = []
        var open: [Int] = []
        func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?, attributes attributeDict: [String: String] = [:]) {
            open.append(elements.count)
            elements.append((elementName, attributeDict, ""))
        }
        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if let last = open.last { elements[last].text += string }
        }
        func parser(_ parser: XMLParser, foundCDATA CDATABlock: Data) {
            if let last = open.last { elements[last].text += String(decoding: CDATABlock, as: UTF8.self) }
        }
        func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?,
                    qualifiedName qName: String?) {
            open.removeLast()
        }
    }
    let parser = XMLParser(data: Data(bytes))
    let collector = Collector()
    parser.delegate = collector
    return parser.parse() ? collector.elements : nil
}
