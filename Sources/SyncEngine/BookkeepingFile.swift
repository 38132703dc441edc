import Catalog
import Export
import Foundation
import Logging

/// A JSON file storesync keeps beside what it writes to remember what it
/// did (the artwork mirror's manifest, the enclosure checks' memory).
///
/// Written atomically, so one that does not decode is a hand edit or another
/// program's: reading starts over from an empty value, which costs requests,
/// never correctness, and says so.
enum BookkeepingFile {
    /// The file's value; `empty` when it is absent or unreadable (`consequence`
    /// ends the warning: what starting over costs).
    static func load<Value: Decodable>(_ url: URL, empty: Value, what: String, consequence: String, logger: Logger) -> Value {
        guard let data = FileManager.default.contents(atPath: url.path) else { return empty }
        do {
            return try JSONDecoder().decode(Value.self, from: data)
        } catch {
            logger.warning("\(what): \(url.path) is not readable (\(error)); \(consequence)")
            return empty
        }
    }

    /// Writes `value` as sorted JSON with a final newline, atomically.
    static func save<Value: Encodable>(_ value: Value, to url: URL, what: String,
                                       formatting: JSONEncoder.OutputFormatting = [.sortedKeys]) throws(StoreSyncError) {
        let encoder = JSONEncoder()
        encoder.outputFormatting = formatting
        do {
            try AtomicFile.write(Array(try encoder.encode(value)) + [0x0A], to: url)
        } catch {
            throw .exportFailed(path: url.path, reason: "\(what) could not be written: \(error)")
        }
    }
}
