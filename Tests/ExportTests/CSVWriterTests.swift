import CSV
import Foundation
import Testing
@testable import Export

// `CSV` has its own `CSVWriter`; ours is always spelled `Export.CSVWriter` here.

/// Writes a CSV file through the real path (AtomicFile + CSVWriter) and returns its bytes.
private func csvBytes(header: [String], rows: [[CSVCell]], options: CSVOptions = CSVOptions()) throws -> [UInt8] {
    try withTemporaryDirectory { dir throws in
        let url = dir.appendingPathComponent("table.csv")
        let count = try Export.CSVWriter.write(to: url, header: header, options: options) { emit in
            for row in rows { try emit(row) }
        }
        #expect(count == rows.count)
        return Array(try Data(contentsOf: url))
    }
}

/// Parses CSV text with yaslab/CSV.swift (an independent RFC 4180 reader).
private func readBack(_ bytes: [UInt8], delimiter: UnicodeScalar = ",") throws -> (header: [String], rows: [[String]]) {
    let reader = try CSVReader(string: String(decoding: bytes, as: UTF8.self), hasHeaderRow: true, delimiter: delimiter)
    var rows: [[String]] = []
    while let row = reader.next() { rows.append(row) }
    if let error = reader.error { throw error }
    return (reader.headerRow ?? [], rows)
}

@Suite struct CSVWriterTests {
    static let header = ["id", "name", "price", "note"]
    static let table: [[CSVCell]] = [
        [.number("1"), .text("Plain"), .number("0.99"), .null],
        [.number("2"), .text("Comma, Inc."), .number("-1"), .text("")],
        [.number("3"), .text("=HYPERLINK(\"x\")"), .number("1e3"), .text("two\nlines")],
    ]

    @Test func goldenCRLF() throws {
        let bytes = try csvBytes(header: Self.header, rows: Self.table)
        let expected = "id,name,price,note\r\n"
            + "1,Plain,0.99,\r\n"
            + "2,\"Comma, Inc.\",-1,\"\"\r\n"
            + "3,\"'=HYPERLINK(\"\"x\"\")\",1e3,\"two\nlines\"\r\n"
        #expect(bytes == Array(expected.utf8))
    }

    @Test func goldenLFWithBOM() throws {
        let bytes = try csvBytes(header: Self.header, rows: Self.table,
                                 options: CSVOptions(lineEnding: .lf, byteOrderMark: true))
        let expected = "id,name,price,note\n"
            + "1,Plain,0.99,\n"
            + "2,\"Comma, Inc.\",-1,\"\"\n"
            + "3,\"'=HYPERLINK(\"\"x\"\")\",1e3,\"two\nlines\"\n"
        #expect(bytes == [0xEF, 0xBB, 0xBF] + Array(expected.utf8))
    }

    @Test func goldenSemicolonDelimiter() throws {
        let bytes = try csvBytes(header: ["a", "b"], rows: [[.text("x;y"), .text("x,y")], [.number("1.5"), .null]],
                                 options: CSVOptions(delimiter: UInt8(ascii: ";"), lineEnding: .lf))
        #expect(bytes == Array("a;b\n\"x;y\";x,y\n1.5;\n".utf8))
    }

    static let tricky: [String] = [
        "plain", "comma, inside", "quote \" inside", "\"quoted\"", "cr\rinside", "lf\ninside", "crlf\r\ninside",
        "trailing newline\n", "  spaces around  ", "naïve café", "日本語のタイトル", "emoji 🎧🇯🇵👩‍👩‍👧", "",
        "=1+2", "+33 1 23", "-5", "@SUM(A1)", "\tlead tab", "\rlead cr", "'already quoted", "a\u{0}nul",
    ]

    /// What a spreadsheet-safe export turns each tricky text into.
    static func neutralized(_ s: String) -> String {
        guard let first = s.unicodeScalars.first, "=+-@\t\r".unicodeScalars.contains(first) else { return s }
        return "'" + s
    }

    @Test(arguments: [CSVOptions.LineEnding.crlf, .lf])
    func trickyCellsRoundTripWithNeutralisation(lineEnding: CSVOptions.LineEnding) throws {
        let rows = Self.tricky.enumerated().map { [CSVCell.number(String($0.offset)), .text($0.element), .null] }
        let bytes = try csvBytes(header: ["n", "text", "nothing"], rows: rows, options: CSVOptions(lineEnding: lineEnding))
        let parsed = try readBack(bytes)
        #expect(parsed.header == ["n", "text", "nothing"])
        #expect(parsed.rows.count == Self.tricky.count)
        for (index, row) in parsed.rows.enumerated() {
            #expect(row == [String(index), Self.neutralized(ExportText.clean(Self.tricky[index])), ""])
        }
    }

    @Test func neutralisationOffKeepsTextAsIs() throws {
        let rows = Self.tricky.map { [CSVCell.text($0)] }
        let bytes = try csvBytes(header: ["text"], rows: rows, options: CSVOptions(neutralizeFormulas: false))
        let parsed = try readBack(bytes)
        #expect(parsed.rows.map { $0.first ?? "<missing>" } == Self.tricky.map(ExportText.clean))  // NUL is removed: the exports' character rule
    }

    @Test func numbersAreNeverNeutralised() throws {
        let numbers = ["-1", "+5", "-0.5", "1e-3", "-2.5E+10", ".5", "0"]
        let bytes = try csvBytes(header: ["price"], rows: numbers.map { [.number($0)] })
        #expect(bytes == Array(("price\r\n" + numbers.map { $0 + "\r\n" }.joined()).utf8))
    }

    @Test func nonNumericNumberCellsAreTreatedAsText() throws {
        // `.number` cannot smuggle a formula or break the row.
        let bytes = try csvBytes(header: ["a", "b", "c", "d"],
                                 rows: [[.number("=1+2"), .number("1,5"), .number("-"), .number("")]])
        #expect(bytes == Array("a,b,c,d\r\n'=1+2,\"1,5\",'-,\"\"\r\n".utf8))
    }

    @Test func helpersForNumbers() throws {
        let bytes = try csvBytes(header: ["i", "d", "nan"], rows: [[.integer(-42), .real(0.25), .real(.nan)]])
        #expect(bytes == Array("i,d,nan\r\n-42,0.25,\r\n".utf8))
    }

    @Test func nullVersusEmptyText() throws {
        // Unquoted nothing is null; "" is the empty string (PostgreSQL's CSV convention).
        // A row of a single null would be an empty line, which readers skip: it is written as "".
        let bytes = try csvBytes(header: ["x", "y"], rows: [[.null, .text("")], [.text(""), .null]])
        #expect(bytes == Array("x,y\r\n,\"\"\r\n\"\",\r\n".utf8))
        let single = try csvBytes(header: ["only"], rows: [[.null], [.text("")], [.text("v")]])
        #expect(single == Array("only\r\n\"\"\r\n\"\"\r\nv\r\n".utf8))
        #expect(try readBack(single).rows == [[""], [""], ["v"]])
    }

    @Test func fieldByFieldRowsAndCounts() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("f.csv")
            let count = try AtomicFile.write(to: url) { sink -> Int in
                var writer = Export.CSVWriter()
                try writer.writeHeader(["a", "b"], into: &sink)
                for i in 0..<3 {
                    try writer.writeField(.integer(i), into: &sink)
                    try writer.writeField(.text("r\(i)"), into: &sink)
                    try writer.endRow(into: &sink)
                }
                return writer.rowCount
            }
            #expect(count == 3)
            #expect(try String(contentsOf: url, encoding: .utf8) == "a,b\r\n0,r0\r\n1,r1\r\n2,r2\r\n")
        }
    }

    @Test func rowWithWrongFieldCountThrowsAndPublishesNothing() throws {
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("bad.csv")
            do {
                try Export.CSVWriter.write(to: url, header: ["a", "b"]) { emit in
                    try emit([.text("1"), .text("2")])
                    try emit([.text("only one")])
                }
                Issue.record("expected an error")
            } catch let error as ExportError {
                guard case let .csvFieldCount(_, row, expected, actual) = error else {
                    Issue.record("unexpected \(error)")
                    return
                }
                #expect(row == 2 && expected == 2 && actual == 1)
            }
            #expect(try directoryListing(dir).isEmpty)
        }
    }

    @Test func headerIsTreatedAsText() throws {
        let bytes = try csvBytes(header: ["name, full", "-score"], rows: [])
        #expect(bytes == Array("\"name, full\",'-score\r\n".utf8))
    }

    @Test func manyRowsStream() throws {
        // A quick sanity run of the streaming path (timings are measured in release, not here).
        let rows = 20_000
        try withTemporaryDirectory { dir throws in
            let url = dir.appendingPathComponent("many.csv")
            let header = (0..<16).map { "c\($0)" }
            let count = try Export.CSVWriter.write(to: url, header: header) { emit in
                var cells: [CSVCell] = []
                cells.reserveCapacity(16)
                for i in 0..<rows {
                    cells.removeAll(keepingCapacity: true)
                    for c in 0..<16 { cells.append(c % 2 == 0 ? .text("t\(i),\(c)") : .integer(i * c)) }
                    try emit(cells)
                }
            }
            #expect(count == rows)
            let parsed = try readBack(Array(try Data(contentsOf: url)))
            #expect(parsed.rows.count == rows)
            #expect(parsed.rows.last?.first == "t\(rows - 1),0")
        }
    }
}
