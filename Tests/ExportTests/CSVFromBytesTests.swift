import Catalog
@testable import Export
import Foundation
import Snapshot
import Testing
import TestSupport

/// CSV tables are written from the store's bytes (``CSVTableFile``,
/// ``Export/CSVWriter/writeJSONField(_:escaped:scratch:into:)``): every
/// shortcut must write exactly what the cell the value projects to writes.
@Suite struct CSVFromBytesTests {
    static let optionSets: [CSVOptions] = [
        CSVOptions(),
        CSVOptions(delimiter: UInt8(ascii: ";"), lineEnding: .lf, neutralizeFormulas: false),
        CSVOptions(delimiter: 0x09, lineEnding: .lf),
    ]

    /// One field written the long way: the value projected as an export reads it, then its cell.
    static func reference(_ json: [UInt8], escaped: Bool, options: CSVOptions) throws -> [UInt8] {
        var sink = OutputSink(memoryFor: "reference", capacity: 1024)
        var writer = Export.CSVWriter(options: options, continuing: nil)
        let value = json.withUnsafeBufferPointer { PayloadProjection.value($0, escaped: escaped) }
        try writer.writeField(CSVExport.cell(value), into: &sink)
        return sink.collectedBytes()
    }

    static func fromBytes(_ json: [UInt8], escaped: Bool, options: CSVOptions) throws -> [UInt8] {
        var sink = OutputSink(memoryFor: "bytes", capacity: 1024)
        var writer = Export.CSVWriter(options: options, continuing: nil)
        var scratch: [UInt8] = []
        try json.withUnsafeBufferPointer { try writer.writeJSONField($0, escaped: escaped, scratch: &scratch, into: &sink) }
        return sink.collectedBytes()
    }

    /// Pieces of string contents: plain text, every escape JSON has, bytes
    /// that need quotes, cleaning or a repair, formula starts.
    static let stringPieces: [[UInt8]] = [
        Array("plain".utf8), Array("naïve".utf8), Array("😀".utf8), Array("日本".utf8), Array(" ".utf8),
        Array(",".utf8), Array(";".utf8), [0x09], Array("\\\"".utf8), Array("\\\\".utf8), Array("\\/".utf8),
        Array("\\n".utf8), Array("\\r".utf8), Array("\\t".utf8), Array("\\b".utf8), Array("\\f".utf8),
        Array("\\u00e9".utf8), Array("\\u0000".utf8), Array("\\ud83d\\ude00".utf8), Array("\\ud800".utf8),
        Array("\\x".utf8), [0x0A], [0x01], [0x7F], [0xEF, 0xBF, 0xBE], [0xEF, 0xBF, 0xBF], [0xEF, 0xBB, 0xBF],
        [0xFF], [0xC0, 0x80], [0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82],
        Array("=".utf8), Array("-".utf8), Array("+".utf8), Array("@".utf8), Array("'".utf8),
        Array("0123456789abcdef".utf8),
    ]

    static let numberTokens: [String] = [
        "0", "-0", "7", "-7", "007", "123456789012345678", "1234567890123456789", "9223372036854775807",
        "-9223372036854775808", "9223372036854775808", "0.0", "-0.0", "1.0", "10.0", "1.50", "0.5", "0.05", "0.1",
        "0.0001", "9.99", "-9.99", "123456789012345.0", "1234567890123456.0", "12345678901234.5", "1234567890123.45",
        "0.123456789012345", "0.1234567890123456", "1e3", "1E-3", "-1.5e10", "1.", ".5", "-", "1.2.3", "00.5",
        "true", "false", "null", "{\"a\": [1, 2]}", "[ \"x\" , {\"y\" : null} ]", "[]", "{}",
    ]

    @Test func everyValueIsWrittenAsItsCell() throws {
        var generator = SeededGenerator(seed: 26)
        var cases: [(json: [UInt8], escaped: Bool)] = Self.numberTokens.map { (Array($0.utf8), false) }
        for piece in Self.stringPieces { cases.append(([0x22] + piece + [0x22], piece.contains(0x5C))) }
        for _ in 0..<4_000 {
            var contents: [UInt8] = []
            for _ in 0..<Int.random(in: 0...6, using: &generator) {
                contents += Self.stringPieces.randomElement(using: &generator)!
            }
            cases.append(([0x22] + contents + [0x22], contents.contains(0x5C)))
        }
        for _ in 0..<4_000 {
            let integer = String(Int64.random(in: -99_999_999 ... 99_999_999, using: &generator))
            let digits = String((0..<Int.random(in: 1...9, using: &generator)).map { _ in "0123456789".randomElement(using: &generator)! })
            cases.append((Array("\(integer).\(digits)".utf8), false))
            cases.append((Array("0.\(digits)".utf8), false))
            cases.append((Array(integer.utf8), false))
        }
        var shortcuts = 0
        for options in Self.optionSets {
            for (json, escaped) in cases {
                let expected = try Self.reference(json, escaped: escaped, options: options)
                let written = try Self.fromBytes(json, escaped: escaped, options: options)
                #expect(written == expected, "\(String(decoding: json, as: UTF8.self)) with delimiter \(options.delimiter)")
                if json.withUnsafeBufferPointer({ Export.CSVWriter.printsAsItself($0) }) { shortcuts += 1 }
            }
        }
        // The shortcut was taken, not only the long way.
        #expect(shortcuts > 10_000)
    }

    /// A text field as the writer's documentation specifies it, written
    /// independently of the writer: cleaned, `'` before a formula, quoted
    /// when it holds a quote, the delimiter, CR or LF; empty text is `""`.
    static func specifiedTextField(_ text: String, options: CSVOptions) -> [UInt8] {
        var cleaned = Array(ExportText.clean(text).utf8)
        guard let first = cleaned.first else { return [0x22, 0x22] }
        let quoting: Set<UInt8> = [0x22, options.delimiter, 0x0A, 0x0D]
        let needsQuotes = cleaned.contains { quoting.contains($0) }
        let formulaStarts = Array("=+-@\t\r".utf8)
        if options.neutralizeFormulas, formulaStarts.contains(first) { cleaned.insert(UInt8(ascii: "'"), at: 0) }
        guard needsQuotes else { return cleaned }
        var quoted: [UInt8] = [0x22]
        for byte in cleaned {
            quoted.append(byte)
            if byte == 0x22 { quoted.append(0x22) }
        }
        quoted.append(0x22)
        return quoted
    }

    @Test func textBytesAreWrittenAsTheirString() throws {
        var generator = SeededGenerator(seed: 7)
        for options in Self.optionSets {
            for _ in 0..<3_000 {
                var text: [UInt8] = []
                for _ in 0..<Int.random(in: 0...5, using: &generator) { text += Self.stringPieces.randomElement(using: &generator)! }
                var expectedSink = OutputSink(memoryFor: "string", capacity: 1024)
                var expectedWriter = Export.CSVWriter(options: options, continuing: nil)
                try expectedWriter.writeField(.text(String(decoding: text, as: UTF8.self)), into: &expectedSink)
                var sink = OutputSink(memoryFor: "bytes", capacity: 1024)
                var writer = Export.CSVWriter(options: options, continuing: nil)
                try text.withUnsafeBufferPointer { try writer.writeTextField($0, into: &sink) }
                let written = sink.collectedBytes()
                let expected = expectedSink.collectedBytes()
                #expect(written == expected, "\(text)")
                #expect(written == Self.specifiedTextField(String(decoding: text, as: UTF8.self), options: options), "\(text)")
            }
        }
    }

    /// A table of more rows than one batch holds (one record alone larger
    /// than a batch among them), records-file rows of two sources in one
    /// table: the file equals the one written cell by cell from the projected records.
    @Test func tablesEqualTheCellByCellFile() async throws {
        let directory = TestPaths.temporaryDirectory("csv-from-bytes")
        let store = try SQLSnapshotStore(path: directory.appendingPathComponent("snapshot.sqlite").path)
        let started = Date(timeIntervalSince1970: 1_795_308_886)
        let run = try store.beginRun(job: "csv", at: started, simulated: true)
        let texts = ["Plain", "Comma, Inc.", "=cmd()", "say \"hi\"", "two\nlines", "naïve 😀", "nul\u{0}byte", "",
                     "\u{FFFE}odd", "tab\tin", "-1"]
        var podcasts: [Catalog.Record] = []
        var records: [Catalog.Record] = []
        for i in 0..<3_000 {
            var fields: [String: JSONValue] = [
                "name": .string(texts[i % texts.count] + " \(i)"), "genre": .string(texts[(i / 3) % texts.count]),
                "track_count": i % 7 == 0 ? .null : .int(Int64(i)), "explicit": .bool(i % 2 == 0),
                "description": .string(String(repeating: "lorem ipsum ", count: 40 + i % 50)),
            ]
            if i % 5 == 0 { fields["unlisted"] = .object(["a": .array([.int(1), .string("x,y")])]) }
            if i == 1_500 { fields["description"] = .string(String(repeating: "big \"field\" ", count: 150_000)) }
            podcasts.append(Catalog.Record(entity: .podcast, key: String(format: "%05d", i), fields: fields))
            let source = i % 3 == 0 ? "inventory" : "prices"
            records.append(Catalog.Record(entity: .record, key: "\(source):\(i)", fields: [
                "id": .int(Int64(i)), "title": .string(texts[i % texts.count]), "price": .double(Double(i) / 8),
                "note": i % 4 == 0 ? .string("=SUM(A1)") : .null,
            ]))
        }
        _ = try await store.apply(PageInput(runID: run.id, source: "pods", scope: "s", page: 1, records: podcasts))
        _ = try await store.apply(PageInput(runID: run.id, source: "inventory", scope: "s", page: 1,
                                            records: records.filter { $0.key.hasPrefix("inventory:") }))
        _ = try await store.apply(PageInput(runID: run.id, source: "prices", scope: "s", page: 1,
                                            records: records.filter { $0.key.hasPrefix("prices:") }))
        try store.finishRun(run.id, status: .ok, message: nil, at: started)

        for options in Self.optionSets {
            // An entity table, `extra` last.
            let columns = EntityColumns.columns(for: .podcast)
            let header = ["key"] + columns.map(\.name) + ["extra"]
            let fast = directory.appendingPathComponent("podcasts.csv")
            let rows = try CSVTableFile(header: header, columns: columns, extra: true, source: nil, options: options)
                .write(to: fast, entity: .podcast, store: store)
            let slow = directory.appendingPathComponent("podcasts-reference.csv")
            try Export.CSVWriter.write(to: slow, header: header, options: options) { emit in
                try store.forEachRecord(of: .podcast, columns: columns, order: .insertion) { record in
                    let extra = ExtraMembers.json(payload: record.payload, columns: columns, values: record.values)
                    try emit([.text(record.key)] + record.values.map(CSVExport.cell) + [extra.map(CSVCell.text) ?? .null])
                }
            }
            #expect(rows == 3_000)
            #expect(try Data(contentsOf: fast) == Data(contentsOf: slow))
            #expect(try Data(contentsOf: fast).count > 3 * CSVTableFile.batchBytes)

            // One source's records-file rows, keys without their source.
            let recordColumns = ["id", "title", "price", "note"].map { ExportColumn($0, $0) }
            let recordHeader = ["key"] + recordColumns.map(\.name)
            let inventory = directory.appendingPathComponent("inventory.csv")
            let inventoryRows = try CSVTableFile(header: recordHeader, columns: recordColumns, extra: false, source: "inventory",
                                                 options: options).write(to: inventory, entity: .record, store: store)
            let inventoryReference = directory.appendingPathComponent("inventory-reference.csv")
            try Export.CSVWriter.write(to: inventoryReference, header: recordHeader, options: options) { emit in
                try store.forEachRecord(of: .record, columns: recordColumns, order: .insertion) { record in
                    guard record.source == "inventory" else { return }
                    try emit([.text(String(record.key.dropFirst("inventory:".count)))] + record.values.map(CSVExport.cell))
                }
            }
            #expect(inventoryRows == 1_000)
            #expect(try Data(contentsOf: inventory) == Data(contentsOf: inventoryReference))
        }
    }
}
