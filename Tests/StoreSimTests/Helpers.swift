import Catalog
import Foundation
@testable import StoreSim
import Testing

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
