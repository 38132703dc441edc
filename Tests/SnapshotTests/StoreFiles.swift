import Foundation
import GRDB
import TestSupport

/// A test's store files, by name, in a temporary folder of their own, and a
/// read-only look into one of them.
struct StoreFiles {
    let directory: URL

    init(_ label: String) {
        directory = TestPaths.temporaryDirectory(label)
    }

    func path(_ name: String) -> String { directory.appendingPathComponent("\(name).sqlite").path }

    func read<T>(_ name: String, _ body: (Database) throws -> T) throws -> T {
        var configuration = Configuration()
        configuration.readonly = true
        return try DatabaseQueue(path: path(name), configuration: configuration).read(body)
    }
}
