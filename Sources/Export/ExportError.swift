#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Why writing an export file failed.
///
/// Every case names the file (or the document) it is about, so a message in a
/// run report is actionable without a stack trace.
package enum ExportError: Error, CustomStringConvertible, Equatable, Sendable {
    /// A system call failed on `path`. `operation` is what was attempted
    /// ("open", "write", "fsync", "rename", …) and `errno` the C error code;
    /// `description` renders it with the system's text ("No space left on device").
    case io(operation: String, path: String, errno: Int32)

    /// The bytes produced for `name` are not well-formed XML 1.0 with namespaces.
    /// `line`/`column` are 1-based positions reported by libxml2 (0 when unknown);
    /// `message` is libxml2's first error message.
    case invalidXML(name: String, line: Int, column: Int, message: String)

    /// libxml2's xmlTextWriter refused an operation while writing `name`
    /// (`operation` is the writer call, e.g. "xmlTextWriterStartElement").
    case xmlWriter(name: String, operation: String)

    /// A CSV row had a different number of fields than the header.
    /// `row` is the 1-based data row (the header is row 0).
    case csvFieldCount(path: String, row: Int, expected: Int, actual: Int)

    /// The input cannot be written at all (e.g. an export path that is not a file URL,
    /// a document larger than libxml2 can parse).
    case invalidInput(path: String, reason: String)

    package var description: String {
        switch self {
        case let .io(operation, path, code):
            return "\(operation) failed for \(path): \(ExportError.errnoText(code)) (errno \(code))"
        case let .invalidXML(name, line, column, message):
            let trimmed = message.trimmingTrailingNewlines()
            return "\(name):\(line):\(column): invalid XML: \(trimmed)"
        case let .xmlWriter(name, operation):
            return "writing \(name): libxml2 \(operation) failed"
        case let .csvFieldCount(path, row, expected, actual):
            return "\(path): CSV row \(row) has \(actual) fields, the header has \(expected)"
        case let .invalidInput(path, reason):
            return "\(path): \(reason)"
        }
    }

    /// The C library's text for an errno value.
    static func errnoText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }
}

extension String {
    fileprivate func trimmingTrailingNewlines() -> String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == "\r" || last == " " { s.removeLast() }
        return String(s)
    }
}
