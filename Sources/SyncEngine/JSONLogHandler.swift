import Catalog
import Foundation
import Logging

/// Logs as JSON Lines (`--log-format json`): one object per line, for log
/// shippers that would otherwise have to parse free text.
///
/// `{"ts": "2026-11-24T03:15:00.123Z", "level": "info", "message": "…",
/// "label": "storesync", "module": "SyncEngine", …metadata}`; metadata keys
/// (such as `source`, `scope`, `url`) become members as strings, nested
/// metadata as JSON. It prints what the message and metadata hold and
/// nothing else, so it adds no way for a secret to reach the log.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    let label: String
    let write: @Sendable (String) -> Void

    /// A handler writing to `write` (one line, newline included, per call).
    public init(label: String, write: @escaping @Sendable (String) -> Void) {
        self.label = label
        self.write = write
    }

    /// A handler writing to standard error.
    public static func standardError(label: String) -> JSONLogHandler {
        JSONLogHandler(label: label) { line in FileHandle.standardError.write(Data(line.utf8)) }
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        write(Self.line(date: Date(), level: event.level, message: "\(event.message)", label: label, module: event.source,
                        metadata: self.metadata.merging(event.metadata ?? [:]) { $1 }))
    }

    /// One entry as its JSON line, ending in a newline (the CLI writes its own
    /// lines for people this way too): fixed members win over metadata of the same name.
    public static func line(date: Date, level: Logger.Level, message: String, label: String, module: String,
                     metadata: Logger.Metadata) -> String {
        var members: [String: JSONValue] = metadata.mapValues(json)
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        members["ts"] = .string(formatter.string(from: date))
        members["level"] = .string(level.rawValue)
        members["message"] = .string(message)
        members["label"] = .string(label)
        members["module"] = .string(module)
        return CanonicalJSON.string(.object(members)) + "\n"
    }

    static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let item): .string(item.description)
        case .array(let items): .array(items.map(json))
        case .dictionary(let members): .object(members.mapValues(json))
        }
    }
}
