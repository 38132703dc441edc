import Catalog
import Foundation
import Testing
import TestSupport

/// docs/entities.md documents the canonical model; this keeps it from drifting.
@Suite struct EntityDocTests {
    /// The doc's `## ` sections: heading line → the lines under it.
    static func sections() throws -> [(heading: String, lines: [Substring])] {
        let text = try String(contentsOf: TestPaths.repoRoot.appendingPathComponent("docs/entities.md"), encoding: .utf8)
        var out: [(String, [Substring])] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("## ") {
                out.append((String(line), []))
            } else if !out.isEmpty {
                out[out.count - 1].1.append(line)
            }
        }
        return out
    }

    /// Every canonical field of every entity is a row of its entity's table,
    /// with the schema's type; and the table has no row the schema lacks.
    @Test(arguments: EntityKind.allCases.filter { !CanonicalSchema.fields(of: $0).isEmpty })
    func everyCanonicalFieldIsDocumented(entity: EntityKind) throws {
        let section = try #require(try Self.sections().first { $0.heading.contains("`\(entity.rawValue)`") },
                                   "docs/entities.md has no section for `\(entity.rawValue)`")
        var documented: [String: String] = [:]
        for line in section.lines where line.hasPrefix("| `") {
            let cells = line.split(separator: "|", omittingEmptySubsequences: false).map { $0.trimmingCharacters(in: .whitespaces) }
            guard cells.count > 3 else { continue }
            documented[cells[1].trimmingCharacters(in: CharacterSet(charactersIn: "`"))] = cells[2]
        }
        let fields = CanonicalSchema.fields(of: entity)
        for field in fields {
            let type = documented[field.name]
            #expect(type != nil, "`\(field.name)` of \(entity.rawValue) is not in docs/entities.md")
            #expect(type == nil || type == field.kind.rawValue.lowercased(),
                    "`\(field.name)` of \(entity.rawValue): documented as \(type ?? ""), the schema says \(field.kind.rawValue)")
        }
        #expect(Set(documented.keys) == Set(fields.map(\.name)), "the documented rows of \(entity.rawValue) differ from the schema's fields")
    }
}
