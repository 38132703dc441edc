import Catalog
@testable import Connectors
import Crawl
import Foundation
import Testing
import TestSupport

/// A records file in a fresh temporary folder, removed by `cleanup`.
private struct TempFile {
    let directory = TestPaths.temporaryDirectory("records-file")
    let path: String

    init(_ name: String, _ bytes: [UInt8]) throws {
        path = directory.appendingPathComponent(name).path
        try Data(bytes).write(to: URL(fileURLWithPath: path))
    }

    init(_ name: String, _ text: String) throws { try self.init(name, Array(text.utf8)) }

    func cleanup() { try? FileManager.default.removeItem(at: directory) }
}

private func makeScope(_ settings: RecordsFileSettings) throws -> CrawlScope {
    let scopes = SourceSpec(name: "file", settings: (settings)).scopes(baseURL: nil)
    #expect(scopes.count == 1)
    return try #require(scopes.first)
}

/// Reads page `index` of a local scope and decodes it.
private func readPage(_ scope: CrawlScope, _ index: Int) throws -> (HTTPResponse, DecodedPage<Record>) {
    guard case .local(let read) = scope.origin else { throw StoreSyncError.fetchFailed(url: scope.id, reason: "not local") }
    let response = try read(index)
    return (response, try scope.decode(response))
}

/// Every page from `start` on, the way the runner walks them.
private func walk(_ scope: CrawlScope, from start: Int = 0) async throws -> (outcome: ScopeOutcome, pages: [DecodedPage<Record>]) {
    guard case .local(let read) = scope.origin else { throw StoreSyncError.fetchFailed(url: scope.id, reason: "not local") }
    var pages: [DecodedPage<Record>] = []
    let outcome = await PageWalker.walk(
        pagination: scope.pagination, startPage: start,
        fetch: { index throws(StoreSyncError) in try read(index) },
        decode: scope.decode, onPage: { _, _, page throws(StoreSyncError) in pages.append(page) })
    return (outcome, pages)
}

private func jsonl(_ count: Int, blankEvery: Int = 0) -> String {
    var out = ""
    for i in 0..<count {
        out += #"{"id":\#(3_000_000_000 + i),"name":"row \#(i)","price":\#(Double(i) / 4),"note":"a, \"b\"\n<c>"}"# + "\n"
        if blankEvery > 0, i % blankEvery == 0 { out += "  \r\n\n" }
    }
    return out
}

private func expectError(_ body: () throws -> Void, _ check: (StoreSyncError) -> Bool,
                         sourceLocation: SourceLocation = #_sourceLocation) {
    do {
        try body()
        Issue.record("no error", sourceLocation: sourceLocation)
    } catch let error as StoreSyncError {
        #expect(check(error), "\(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("unexpected \(error)", sourceLocation: sourceLocation)
    }
}

/// A store's memory of rows, as a fixed table.
private struct FixedRowMemory: RowMemory {
    var rows: [RecordIdentity: ContentHash]
    func holds(_ identity: RecordIdentity, rawHash: ContentHash) -> Bool { rows[identity] == rawHash }
}

/// A store that holds nothing of the source and is in its first load of it.
private struct FirstLoadMemory: RowMemory {
    func holds(_ identity: RecordIdentity, rawHash: ContentHash) -> Bool { false }
    var isFirstLoad: Bool { true }
}

@Suite struct RecordsFileJSONLinesTests {
    /// On a first load the rows are written straight to canonical bytes (no
    /// fields built, only their shape kept); the records are those the parse
    /// gives, and a row that cannot be written so (a key twice) or is
    /// malformed goes through the parse, which words its error.
    @Test func aFirstLoadDecodesRowsStraightToTheRecordsTheParseGives() throws {
        let rows = jsonl(40) + #"{"id": 7, "a": 1, "a": 2}"# + "\n" + #"{"id": "x\u00e9", "é": [1.0, {"b": 2e1}]}"# + "\n"
        let file = try TempFile("bulk.jsonl", rows)
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path))
        let decodeRemembering = try #require(scope.decodeRemembering)
        let (response, full) = try readPage(scope, 0)
        let page = try decodeRemembering(response, FirstLoadMemory())
        #expect(page.items == full.items)
        #expect(page.items.prefix(40).allSatisfy { $0.shape != nil && !$0.carriesDecodedFields })
        #expect(page.items.suffix(2).allSatisfy { $0.shape == nil && $0.carriesDecodedFields })
        #expect(page.items[0].shape?.names == (try page.items[0].fields()).keys.sorted())
    }

    /// Keys rendered as text, rows skipped for want of a key, and the error of
    /// a malformed row: the same on a first load as through the parse.
    @Test(arguments: [
        "{\"id\":12}\n{\"id\":12.0}\n{\"id\":1e3}\n{\"id\":-7}\n{\"id\":2.5}\n{\"id\":\"x y\"}\n{\"sku\":\"no id\"}\n{\"id\":null}\n{\"id\":\"\"}\n{\"id\":[1]}\n",
        "{\"id\": 1}\n{\"id\": 2, \"x\": tru}\n",
        "{\"id\": 1}\n[1, 2]\n",
        "\u{FEFF}{\"id\": 1, \"w\": \"2024-05-01\"}\r\n\r\n{\"id\": 123456789012345678901234}",
    ])
    func aFirstLoadKeysSkipsAndFailsAsTheParseDoes(rows: String) throws {
        let file = try TempFile("bulk-keys.jsonl", rows)
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, entity: .listing))
        guard case .local(let read) = scope.origin else { throw StoreSyncError.fetchFailed(url: scope.id, reason: "not local") }
        let response = try read(0)
        let decodeRemembering = try #require(scope.decodeRemembering)
        func outcome(_ decode: () throws -> DecodedPage<Record>) -> String {
            do {
                let page = try decode()
                return "\(page.items.map { "\($0.entity.rawValue) \($0.key) \($0.payload) \($0.hash) \(String(describing: $0.rawHash))" }) "
                    + "\(page.skipped) \(page.rowCount)"
            } catch {
                return "error: \(error)"
            }
        }
        #expect(outcome { try decodeRemembering(response, FirstLoadMemory()) } == outcome { try scope.decode(response) })
    }

    @Test func rowsHeldByteForByteAreNotDecodedAndTheRestCarryTheirRawHash() throws {
        let file = try TempFile("n.jsonl", jsonl(6))
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path))
        let decodeRemembering = try #require(scope.decodeRemembering)
        let (response, full) = try readPage(scope, 0)
        #expect(full.items.count == 6)
        #expect(full.items.allSatisfy { $0.rawHash != nil })
        // The store holds rows 0 and 3 from these very bytes, row 4 from other bytes.
        func identity(_ i: Int) -> RecordIdentity { RecordIdentity(entity: .record, key: String(3_000_000_000 + i)) }
        let memory = FixedRowMemory(rows: [identity(0): full.items[0].rawHash!, identity(3): full.items[3].rawHash!,
                                           identity(4): ContentHash(rawValue: 42)])
        let page = try decodeRemembering(response, memory)
        #expect(page.unread.map(\.identity) == [identity(0), identity(3)])
        #expect(page.items.map(\.key) == [1, 2, 4, 5].map { String(3_000_000_000 + $0) })
        #expect(page.rowCount == 6)
        // What is decoded is exactly what the full decoder gives.
        #expect(page.items == full.items.filter { page.items.map(\.key).contains($0.key) })
    }

    /// Issue item 13: with a key on two rows of the page, the row whose bytes
    /// are stored is not passed over, whichever of the two it is: the page is
    /// what the full decoder gives, so its last row of the key is the record.
    @Test(arguments: [0, 2])
    func aKeyOnTwoRowsOfThePageIsNeverTakenFromMemory(stored row: Int) throws {
        let file = try TempFile("twice.jsonl", #"{"id":1,"qty":5}"# + "\n" + #"{"id":2,"qty":1}"# + "\n" + #"{"id":1,"qty":7}"# + "\n")
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path))
        let decodeRemembering = try #require(scope.decodeRemembering)
        let (response, full) = try readPage(scope, 0)
        let memory = FixedRowMemory(rows: [RecordIdentity(entity: .record, key: "1"): full.items[row].rawHash!,
                                           RecordIdentity(entity: .record, key: "2"): full.items[1].rawHash!])
        let page = try decodeRemembering(response, memory)
        #expect(page.unread.isEmpty)
        #expect(page.items == full.items)
    }

    @Test func scopeIsNamedAfterTheFileAndReadsLocally() throws {
        let file = try TempFile("catalog.jsonl", jsonl(3))
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path))
        #expect(scope.id == "file:catalog.jsonl")
        #expect(scope.pageURL(0) == nil)
        #expect(scope.sweeps)
        let (response, page) = try readPage(scope, 0)
        #expect(response.status == 200)
        #expect(response.url.isFileURL && response.url.path == file.path)
        #expect(response.url.query == "decoding=\(RecordsFile.decodingFingerprint(RecordsFileSettings(path: file.path)))")
        #expect(page.items.count == 3)
        #expect(page.hasNext == false)
        let first = try #require(page.items.first)
        #expect(first.entity == .record)
        // A 10-digit id (above 2^31) keyed exactly, without ".0".
        #expect(first.key == "3000000000")
        #expect(try first.fields()["note"] == .string("a, \"b\"\n<c>"))
    }

    @Test(arguments: [1, 2, 3, 7, 10, 11, 1000])
    func pagesConcatenateToTheWholeFile(pageSize: Int) async throws {
        let file = try TempFile("rows.jsonl", jsonl(10, blankEvery: 3))
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: pageSize))
        let (outcome, pages) = try await walk(scope)
        let expectedPages = max(1, (10 + pageSize - 1) / pageSize)
        guard case .complete(let n) = outcome else {
            Issue.record("outcome \(outcome)")
            return
        }
        #expect(n == expectedPages)
        #expect(pages.flatMap(\.items).map(\.key) == (0..<10).map { String(3_000_000_000 + $0) })
        // Every page but the last is full, and only the last says so.
        #expect(pages.dropLast().allSatisfy { $0.rowCount == pageSize && $0.hasNext == true })
        #expect(pages.last?.hasNext == false)
    }

    @Test func resumeAtPageKGivesTheSameRows() async throws {
        let file = try TempFile("rows.jsonl", jsonl(25, blankEvery: 4))
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, pageSize: 4)
        let whole = try await walk(try makeScope(settings)).pages
        for k in 0..<whole.count {
            // A new scope, as a resumed run builds it: it must scan forward to page k.
            let resumed = try await walk(try makeScope(settings), from: k)
            #expect(resumed.outcome.isComplete)
            #expect(resumed.pages.flatMap(\.items) == whole[k...].flatMap(\.items), "resume at \(k)")
        }
        // The same reader asked for pages out of order (a retried or repeated page).
        let reader = try makeScope(settings)
        let order = [2, 0, 5, 5, 1, 6, 3]
        for k in order {
            #expect(try readPage(reader, k).1.items == whole[k].items, "page \(k)")
        }
        // Past the end: an empty last page.
        let beyond = try readPage(reader, 40).1
        #expect(beyond.rowCount == 0 && beyond.hasNext == false)
    }

    @Test func aFileOfExactlyNPagesEndsOnItsLastPage() async throws {
        let file = try TempFile("rows.jsonl", jsonl(8) + "\n\n")
        defer { file.cleanup() }
        let (outcome, pages) = try await walk(try makeScope(RecordsFileSettings(path: file.path, pageSize: 4)))
        #expect(pages.count == 2)
        #expect(pages.last?.hasNext == false)
        #expect(outcome.isComplete)
    }

    @Test func blankLinesBOMCRLFAndAMissingFinalNewline() throws {
        var bytes: [UInt8] = [0xEF, 0xBB, 0xBF]
        bytes += Array("\r\n{\"id\":\"a\"}\r\n   \r\n\t\n{\"id\":\"b\"}\r\n\r\n{\"id\":\"c\"}".utf8)
        let file = try TempFile("rows.jsonl", bytes)
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: 2))
        let first = try readPage(scope, 0)
        #expect(first.1.items.map(\.key) == ["a", "b"])
        #expect(first.1.hasNext == true)
        #expect(first.0.header(RecordsFile.firstLineHeader) == "2")
        let second = try readPage(scope, 1)
        #expect(second.1.items.map(\.key) == ["c"])
        #expect(second.1.hasNext == false)
        #expect(second.0.header(RecordsFile.firstLineHeader) == "7")
    }

    @Test func keysAreRenderedAsText() throws {
        let file = try TempFile("keys.jsonl", """
            {"id":12}
            {"id":12.0}
            {"id":1e3}
            {"id":-7}
            {"id":2.5}
            {"id":"x y"}
            {"sku":"no id"}
            {"id":null}
            {"id":""}
            {"id":[1]}
            """)
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path, entity: .listing)), 0).1
        #expect(page.items.map(\.key) == ["12", "12", "1000", "-7", "2.5", "x y"])
        #expect(page.items.allSatisfy { $0.entity == .listing })
        #expect(page.rowCount == 10)
        #expect(page.skipped.count == 4)
        #expect(page.skipped[0].contains("\(file.path) line 7") && page.skipped[0].contains("no 'id'"))
        #expect(page.skipped[1].contains("line 8"))
    }

    @Test func customKeyField() throws {
        let file = try TempFile("keys.jsonl", #"{"sku":"A-1","id":1}"# + "\n")
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path, keyField: "sku")), 0).1
        #expect(page.items.map(\.key) == ["A-1"])
    }

    @Test func malformedLineNamesFileLineAndColumn() throws {
        let file = try TempFile("bad.jsonl", jsonl(5) + "\n{\"id\":1,,}\n" + jsonl(2))
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: 100))
        expectError({ _ = try readPage(scope, 0) }) { error in
            guard error.code == .malformedPage, case let (path, reason) = (error.location, error.message) else { return false }
            return path == file.path && reason.contains("line 7, column 9")
        }
        // A line that is JSON but not an object fails too.
        let array = try TempFile("array.jsonl", "{\"id\":1}\n[1,2]\n")
        defer { array.cleanup() }
        expectError({ _ = try readPage(try makeScope(RecordsFileSettings(path: array.path)), 0) }) { error in
            guard error.code == .malformedPage, case let reason = error.message else { return false }
            return reason.contains("line 2") && reason.contains("an array")
        }
    }

    @Test func malformedLineOnALaterPageKeepsItsFileLineNumber() throws {
        let file = try TempFile("bad.jsonl", jsonl(6) + "{\"id\":\n")
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: 3))
        _ = try readPage(scope, 0)
        _ = try readPage(scope, 1)
        expectError({ _ = try readPage(scope, 2) }) { error in
            guard error.code == .malformedPage, case let reason = error.message else { return false }
            return reason.contains("line 7")
        }
    }

    @Test func missingFileAndDirectoryFailTheFirstPage() throws {
        let scope = try makeScope(RecordsFileSettings(path: "/nonexistent/storesync/rows.jsonl"))
        expectError({ _ = try readPage(scope, 0) }) { error in
            guard error.code == .inputUnreadable, case let (path, reason) = (error.location, error.message) else { return false }
            return path == "/nonexistent/storesync/rows.jsonl" && reason.contains("No such file")
        }
        let directory = TestPaths.temporaryDirectory("records-dir")
        defer { try? FileManager.default.removeItem(at: directory) }
        expectError({ _ = try readPage(try makeScope(RecordsFileSettings(path: directory.path, format: .jsonLines)), 0) }) { error in
            guard error.code == .inputUnreadable, case let reason = error.message else { return false }
            return reason.contains("not a regular file")
        }
    }

    @Test func emptyFileIsOneEmptyCompletePage() async throws {
        let file = try TempFile("empty.jsonl", "")
        defer { file.cleanup() }
        let (outcome, pages) = try await walk(try makeScope(RecordsFileSettings(path: file.path)))
        #expect(outcome.isComplete)
        #expect(pages.count == 1 && pages[0].rowCount == 0)
    }

    @Test func aReplacedFileIsReadAfresh() throws {
        let file = try TempFile("rows.jsonl", jsonl(4))
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: 2))
        #expect(try readPage(scope, 1).1.items.count == 2)
        // Night 2: a different file under the same name (rename into place, new inode).
        let next = file.directory.appendingPathComponent("next.jsonl")
        try Data(#"{"id":"new"}"#.utf8).write(to: next)
        #expect(rename(next.path, file.path) == 0)
        #expect(try readPage(scope, 0).1.items.map(\.key) == ["new"])
    }

    /// The shape the benchmark feeds (`../shared/bench/gen_catalog.py`): 16
    /// fields, scattered ids above 2^31, non-ASCII, escaped newlines and quotes.
    @Test func benchmarkShapedLines() throws {
        let line = #"{"id":3106141041,"kind":"podcast-episode","name":"Rosé Signal 17","artist":"The \"Band\"","artistId":4123456,"collectionName":"Café Hour","genre":"R&B/Soul","price":0.99,"currency":"ISK","country":"ISL","releaseDate":"2003-04-05T07:00:00Z","trackTimeMillis":123456,"contentAdvisoryRating":"Clean","artworkUrl":"https://is1-ssl.mzstatic.com/image/thumb/Music1/v4/0123456789abcdef/source/600x600bb.jpg","trackViewUrl":"https://music.example.com/isl/podcast-episode/3106141041?uo=4","description":"Lorem\nipsum <live> naïve, \"special\" & co."}"#
        let file = try TempFile("n1.jsonl", line + "\n")
        defer { file.cleanup() }
        let record = try #require(try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0).1.items.first)
        #expect(record.key == "3106141041")
        let fields = try record.fields()
        #expect(fields.count == 16)
        #expect(fields["description"] == .string("Lorem\nipsum <live> naïve, \"special\" & co."))
        // The user's own data: not stripped like API tracking parameters.
        #expect(fields["trackViewUrl"]?.stringValue?.hasSuffix("?uo=4") == true)
    }

    @Test func pagesSpanningReadBlocksStayExact() async throws {
        // Rows of ~5 KB so pages and rows cross the reader's 1 MiB blocks.
        let filler = String(repeating: "x", count: 5_000)
        var text = ""
        for i in 0..<700 { text += #"{"id":\#(i),"pad":"\#(filler)"}"# + (i % 50 == 0 ? "\r\n\n" : "\n") }
        let file = try TempFile("big.jsonl", text)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, pageSize: 97)
        let (outcome, pages) = try await walk(try makeScope(settings))
        #expect(outcome.isComplete)
        #expect(pages.flatMap(\.items).map(\.key) == (0..<700).map(String.init))
        let resumed = try await walk(try makeScope(settings), from: 5)
        #expect(resumed.pages.flatMap(\.items) == pages[5...].flatMap(\.items))
    }
}

@Suite struct RecordsFileCSVTests {
    @Test func quotingEmbeddedNewlinesEscapesCRLFAndBOM() throws {
        var bytes: [UInt8] = [0xEF, 0xBB, 0xBF]
        let text: String = "id,name,note\r\n"
            + "1,plain,\"with, comma\"\r\n"
            + "2,\"multi\r\nline\",\"say \"\"hi\"\"\"\r\n"
            + "\r\n"
            + "3,12\" vinyl,\r\n"
            + "4,\"\",\"\"\r\n"
            + "5,last,no newline"
        bytes += Array(text.utf8)
        let file = try TempFile("rows.csv", bytes)
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0).1
        #expect(page.items.map(\.key) == ["1", "2", "3", "4", "5"])
        let rows = try page.items.map { try $0.fields() }
        #expect(rows[0] == ["id": .int(1), "name": .string("plain"), "note": .string("with, comma")])
        #expect(rows[1]["name"] == .string("multi\r\nline"))
        #expect(rows[1]["note"] == .string("say \"hi\""))
        #expect(rows[2]["name"] == .string("12\" vinyl"))
        // An empty cell, quoted or not, is an absent field.
        #expect(rows[2]["note"] == nil)
        #expect(rows[3] == ["id": .int(4)])
        #expect(rows[4]["note"] == .string("no newline"))
        #expect(page.items.allSatisfy { $0.fieldOrder == ["id", "name", "note"] })
    }

    @Test(arguments: [1, 2, 3, 4, 100])
    func pagesCutOnRecordsNotLines(pageSize: Int) async throws {
        var text = "id,body\n"
        for i in 0..<9 { text += "\(i),\"line one\nline \"\"two\"\"\n\nthree, four\"\n" }
        let file = try TempFile("rows.csv", text)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, pageSize: pageSize)
        let (outcome, pages) = try await walk(try makeScope(settings))
        #expect(outcome.isComplete)
        #expect(pages.flatMap(\.items).map(\.key) == (0..<9).map(String.init))
        #expect(try pages.flatMap(\.items).allSatisfy { try $0.fields()["body"] == .string("line one\nline \"two\"\n\nthree, four") })
        for k in 0..<pages.count {
            let resumed = try await walk(try makeScope(settings), from: k)
            #expect(resumed.pages.flatMap(\.items) == pages[k...].flatMap(\.items))
        }
    }

    @Test func laterPagesReportFileLineNumbers() throws {
        // Each record spans two lines, so record r starts on line 2 + 2r.
        var text = "id,v\n"
        for i in 0..<6 { text += "\(i),\"a\nb\"\n" }
        text += "6,\"never closed\n"
        let file = try TempFile("rows.csv", text)
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: 3))
        let second = try readPage(scope, 1)
        #expect(second.0.header(RecordsFile.firstLineHeader) == "8")
        expectError({ _ = try readPage(scope, 2) }) { error in
            guard error.code == .malformedPage, case let (path, reason) = (error.location, error.message) else { return false }
            return path == file.path && reason.contains("line 14") && reason.contains("not closed")
        }
    }

    @Test func headerProblemsFailClearly() throws {
        let cases: [(String, String)] = [
            ("sku,name\n1,a\n", "no 'id' column"),
            ("id,name,name\n1,a,b\n", "names 'name' twice"),
            ("id,,x\n1,a,b\n", "column 2 has no name"),
        ]
        for (text, expected) in cases {
            let file = try TempFile("rows.csv", text)
            defer { file.cleanup() }
            expectError({ _ = try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0) }) { error in
                guard error.code == .malformedPage, case let reason = error.message else { return false }
                return reason.contains("line 1") && reason.contains(expected)
            }
        }
    }

    @Test func rowsWithTheWrongFieldCountOrStrayQuotesFail() throws {
        let cases: [(String, String)] = [
            ("id,name\n1,a\n2,b,c\n", "line 3: 3 fields, the header has 2"),
            ("id,name\n1\n", "line 2: 1 field, the header has 2"),
            ("id,name\n1,\"a\"b\n", "line 2: unexpected 'b' after a closing quote"),
        ]
        for (text, expected) in cases {
            let file = try TempFile("rows.csv", text)
            defer { file.cleanup() }
            expectError({ _ = try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0) }) { error in
                guard error.code == .malformedPage, case let reason = error.message else { return false }
                return reason.contains(expected)
            }
        }
    }

    @Test func rowWithoutKeyIsSkippedWithItsLine() throws {
        let file = try TempFile("rows.csv", "name,id\na,1\nb,\nc,3\n")
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0).1
        #expect(page.items.map(\.key) == ["1", "3"])
        #expect(page.rowCount == 3)
        #expect(page.skipped.count == 1 && page.skipped[0].contains("line 3"))
    }

    @Test func formatComesFromTheSettingBeforeTheExtension() throws {
        let file = try TempFile("rows.txt", "id,v\n1,a\n")
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path, format: .csv)), 0).1
        #expect(page.items.map(\.key) == ["1"])
        #expect(RecordsFile.format(of: RecordsFileSettings(path: "/x/Y.CSV")) == .csv)
        #expect(RecordsFile.format(of: RecordsFileSettings(path: "/x/y.ndjson")) == .jsonLines)
    }

    @Test func headerOnlyFileIsEmptyAndComplete() async throws {
        let file = try TempFile("rows.csv", "id,name")
        defer { file.cleanup() }
        let (outcome, pages) = try await walk(try makeScope(RecordsFileSettings(path: file.path)))
        #expect(outcome.isComplete)
        #expect(pages.count == 1 && pages[0].rowCount == 0)
    }
}

/// The first page's records' fields, for small files read whole.
private func fields(_ settings: RecordsFileSettings) throws -> [[String: JSONValue]] {
    try readPage(try makeScope(settings), 0).1.items.map { try $0.fields() }
}

/// The error reading page 0 of `settings`' file throws, if it throws a StoreSyncError.
private func firstPageError(_ settings: RecordsFileSettings) throws -> StoreSyncError? {
    do {
        _ = try readPage(try makeScope(settings), 0)
        return nil
    } catch let error as StoreSyncError {
        return error
    }
}

@Suite struct RecordsFileDialectTests {
    @Test(arguments: [(";", ";"), ("\t", "\t"), ("|", "|")])
    func otherDelimiters(delimiter: Character, separator: String) async throws {
        let d = separator
        var text = "id\(d)name\(d)price\n"
        text += "1\(d)a, b\(d)1.5\n"
        text += "2\(d)\"x\(d)y\"\(d)2\n"
        text += "3\(d)\"two\nlines\"\(d)\n"
        let file = try TempFile("rows.csv", text)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, delimiter: delimiter)
        let rows = try fields(settings)
        #expect(rows == [
            ["id": .int(1), "name": .string("a, b"), "price": .double(1.5)],
            ["id": .int(2), "name": .string("x\(d)y"), "price": .int(2)],
            ["id": .int(3), "name": .string("two\nlines")],
        ])
        // Pages are cut on the same delimiter (a quoted one does not end a field, a quoted newline not a row).
        var paged = settings
        paged.pageSize = 1
        let (outcome, pages) = try await walk(try makeScope(paged))
        #expect(outcome.isComplete)
        #expect(try pages.flatMap(\.items).map { try $0.fields() } == rows)
    }

    @Test func aCommaIsDataInASemicolonFile() throws {
        let file = try TempFile("rows.csv", "id;amount;note\n1;1,5;a,b,c\n")
        defer { file.cleanup() }
        let rows = try fields(RecordsFileSettings(path: file.path, delimiter: ";"))
        // A decimal comma is not guessed at: it stays text (declare nothing, lose nothing).
        #expect(rows == [["id": .int(1), "amount": .string("1,5"), "note": .string("a,b,c")]])
    }

    @Test func aSemicolonFileReadWithTheDefaultSaysWhichDelimiterItLooksLike() throws {
        let file = try TempFile("rows.csv", "id;name\n1;a\n")
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path)))
        #expect(error.message.contains("no 'id' column") && error.message.contains("set delimiter: \";\""), "\(error)")
    }

    @Test func anotherQuoteCharacter() async throws {
        let text = "id,name,note\n1,'a, b','it''s'\n2,say \"hi\",'multi\nline'\n"
        let file = try TempFile("rows.csv", text)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, pageSize: 1, quote: "'")
        let (outcome, pages) = try await walk(try makeScope(settings))
        #expect(outcome.isComplete)
        let rows = try pages.flatMap(\.items).map { try $0.fields() }
        #expect(rows == [
            ["id": .int(1), "name": .string("a, b"), "note": .string("it's")],
            ["id": .int(2), "name": .string("say \"hi\""), "note": .string("multi\nline")],
        ])
        // A stray character after a closing quote names the file's quote.
        let bad = try TempFile("bad.csv", "id,name\n1,'a'b\n")
        defer { bad.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: bad.path, quote: "'")))
        #expect(error.message.contains("line 2: unexpected 'b'") && error.message.contains("written ''"), "\(error)")
    }

    @Test func noQuoteCharacterTakesQuotesLiterally() async throws {
        // With quoting off, a lone quote opens nothing: the next line is the next row.
        let text = "id,name\n1,\"half\n2,12\" vinyl\n3,\"a\"\"b\"\n"
        let file = try TempFile("rows.csv", text)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, pageSize: 1, quote: nil)
        let (outcome, pages) = try await walk(try makeScope(settings))
        #expect(outcome.isComplete)
        #expect(try pages.flatMap(\.items).map { try $0.fields()["name"] } == [
            .string("\"half"), .string("12\" vinyl"), .string("\"a\"\"b\""),
        ])
    }

    @Test func headerOrderReachesTheRecordAndJSONLinesHasNone() throws {
        let file = try TempFile("rows.csv", "zeta,id,alpha,mid\nz,1,a,m\nz,2,,\n")
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0).1
        #expect(page.items.map(\.fieldOrder) == [["zeta", "id", "alpha", "mid"], ["zeta", "id", "alpha", "mid"]])
        // The order is not content: the payload and its hash do not depend on it.
        let swapped = try TempFile("rows.csv", "id,alpha,mid,zeta\n1,a,m,z\n")
        defer { swapped.cleanup() }
        let other = try #require(try readPage(try makeScope(RecordsFileSettings(path: swapped.path)), 0).1.items.first)
        #expect(other.hash == page.items[0].hash && other.fieldOrder == ["id", "alpha", "mid", "zeta"])
        let lines = try TempFile("rows.jsonl", #"{"b":1,"id":2}"# + "\n")
        defer { lines.cleanup() }
        #expect(try readPage(try makeScope(RecordsFileSettings(path: lines.path)), 0).1.items.first?.fieldOrder == nil)
    }

    @Test func inferredTypesInAFile() throws {
        let file = try TempFile("rows.csv", """
            id,zip,qty,price,big,when,at,note,empty,neg
            1,007,12,1.50,1e5,2024-05-01,2024-05-01T12:00:00Z,hello,,-3
            """)
        defer { file.cleanup() }
        let row = try #require(try fields(RecordsFileSettings(path: file.path)).first)
        // 1e5 is the real 100000.0, which canonical JSON writes as 100000 (see CSVValueTests for the value itself).
        #expect(row == [
            "id": .int(1), "zip": .string("007"), "qty": .int(12), "price": .double(1.5), "big": .int(100_000),
            "when": .string("2024-05-01"), "at": .string("2024-05-01T12:00:00Z"), "note": .string("hello"), "neg": .int(-3),
        ])
        #expect(row["when"].flatMap(FieldType.of) == .date && row["at"].flatMap(FieldType.of) == .date)
        #expect(row["note"].flatMap(FieldType.of) == .text && row["zip"].flatMap(FieldType.of) == .text)
    }

    @Test func aKeyIsItsCellAsWritten() throws {
        let file = try TempFile("rows.csv", "id,v\n1.50,a\n007,b\n7,c\n")
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path)), 0).1
        // Typing never changes which row is which: 1.50 is not 1.5, 007 not 7.
        #expect(page.items.map(\.key) == ["1.50", "007", "7"])
        #expect(try page.items[0].fields()["id"] == .double(1.5))
    }

    @Test func declaredColumnTypes() throws {
        let file = try TempFile("rows.csv", """
            id,sku,qty,price,opened,zip,note
            1,00123, 007 ,12,2024-02-29,01234,
            2,A-9,+5,-1.25e2,2024-05-01 08:30:00+02:00,99999,x
            """)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, columns: [
            "sku": .text, "qty": .integer, "price": .real, "opened": .date, "zip": .text, "note": .text,
        ])
        let rows = try fields(settings)
        // The reals 12.0 and -125.0 read back as whole numbers from canonical JSON.
        #expect(rows == [
            ["id": .int(1), "sku": .string("00123"), "qty": .int(7), "price": .int(12), "opened": .string("2024-02-29"),
             "zip": .string("01234")],
            ["id": .int(2), "sku": .string("A-9"), "qty": .int(5), "price": .int(-125), "opened": .string("2024-05-01 08:30:00+02:00"),
             "zip": .string("99999"), "note": .string("x")],
        ])
    }

    @Test(arguments: [
        ("qty", FieldType.integer, "1.5", "not a whole number"),
        ("qty", .integer, "N/A", "not a whole number"),
        ("qty", .integer, "99999999999999999999", "not a whole number"),
        ("price", .real, "1,5", "not a number"),
        ("price", .real, "NaN", "not a number"),
        ("opened", .date, "01/05/2024", "not an ISO 8601 date"),
        ("opened", .date, "2023-02-29", "not an ISO 8601 date"),
    ])
    func aCellNotOfItsDeclaredTypeFailsThePageWithItsLine(column: String, type: FieldType, value: String, expected: String) throws {
        let file = try TempFile("rows.csv", "id,\(column)\n1,\n2,\"\(value)\"\n")
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path, columns: [column: type])))
        #expect(error.code == .malformedPage)
        #expect(error.location == file.path)
        #expect(error.message.contains("line 3, column '\(column)': '\(value)' is \(expected)"), "\(error)")
        #expect(error.message.contains("\(column): \(type.rawValue)"))
    }

    @Test func aDeclaredColumnTheHeaderLacksFailsWithASuggestion() throws {
        let file = try TempFile("rows.csv", "id,price\n1,2\n")
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path, columns: ["prcie": .real])))
        #expect(error.message.contains("'prcie'") && error.message.contains("did you mean 'price'?"), "\(error)")
    }

    @Test func thePageURLChangesWithEverySettingThatChangesTheRecords() {
        let base = RecordsFileSettings(path: "/data/rows.csv")
        var variants: [RecordsFileSettings] = []
        for change: (inout RecordsFileSettings) -> Void in [
            { $0.keyField = "sku" }, { $0.entity = .listing }, { $0.delimiter = ";" }, { $0.quote = nil }, { $0.quote = "'" },
            { $0.encoding = .windows1252 }, { $0.columns = ["zip": .text] }, { $0.columns = ["zip": .integer] }, { $0.format = .jsonLines },
        ] {
            var variant = base
            change(&variant)
            variants.append(variant)
        }
        let urls = ([base] + variants).map(RecordsFile.pageURL)
        #expect(Set(urls).count == urls.count)
        // Page size and identical settings do not.
        var paged = base
        paged.pageSize = 7
        #expect(RecordsFile.pageURL(paged) == RecordsFile.pageURL(base))
        #expect(RecordsFile.pageURL(RecordsFileSettings(path: "/data/rows.csv", columns: ["a": .text, "b": .real]))
                == RecordsFile.pageURL(RecordsFileSettings(path: "/data/rows.csv", columns: ["b": .real, "a": .text])))
        #expect(RecordsFile.pageURL(base).path == "/data/rows.csv")
    }

    @Test func canonicalFieldsAreTheTypedColumnsAndTypeOldAllTextPayloads() throws {
        let settings = RecordsFileSettings(path: "/data/rows.csv", entity: .record, columns: ["zip": .text, "qty": .integer])
        #expect(settings.role(of: .record) == .lists)
        let typed: [String: JSONValue] = ["id": .int(1), "zip": .string("123"), "qty": .int(7), "price": .double(1.5), "note": .string("007")]
        // What this decoder writes maps to itself.
        #expect(settings.canonical(.record, typed) == CanonicalRecord(entity: .record, fields: typed))
        // A payload stored by a version that kept every cell as text maps to the same fields.
        let oldText: [String: JSONValue] = ["id": .string("1"), "zip": .string("123"), "qty": .string("007"), "price": .string("1.50"),
                                            "note": .string("007"), "empty": .string("")]
        #expect(settings.canonical(.record, oldText).fields == typed)
        // JSON Lines values are kept as they are, strings included.
        let jsonl = RecordsFileSettings(path: "/data/rows.jsonl", entity: .listing)
        let wire: [String: JSONValue] = ["id": .string("1"), "n": .string("")]
        #expect(jsonl.canonical(.listing, wire) == CanonicalRecord(entity: .listing, fields: wire))
    }
}

@Suite struct RecordsFileEncodingTests {
    /// Windows-1252 bytes of `€5, café, “smart” ‘quotes’ – done…`, and the text they stand for.
    static let windows1252Bytes: [UInt8] = [0x80, 0x35, 0x2C, 0x20, 0x63, 0x61, 0x66, 0xE9, 0x2C, 0x20, 0x93, 0x73, 0x6D, 0x61, 0x72,
                                            0x74, 0x94, 0x20, 0x91, 0x71, 0x75, 0x6F, 0x74, 0x65, 0x73, 0x92, 0x20, 0x96, 0x20, 0x64,
                                            0x6F, 0x6E, 0x65, 0x85]
    static let windows1252Text = "€5, café, “smart” ‘quotes’ – done…"

    @Test func windows1252CSVIsDecodedRight() throws {
        // Ærøskøbing in Windows-1252 bytes, not UTF-8.
        let town: [UInt8] = [0xC6, 0x72, 0xF8, 0x73, 0x6B, 0xF8, 0x62, 0x69, 0x6E, 0x67]
        let bytes = Array("id,name\r\n1,\"".utf8) + Self.windows1252Bytes + Array("\"\r\n2,".utf8) + town + Array("\r\n".utf8)
        let file = try TempFile("rows.csv", bytes)
        defer { file.cleanup() }
        let rows = try fields(RecordsFileSettings(path: file.path, encoding: .windows1252))
        #expect(rows == [["id": .int(1), "name": .string(Self.windows1252Text)], ["id": .int(2), "name": .string("Ærøskøbing")]])
    }

    @Test func windows1252JSONLines() throws {
        let bytes = Array(#"{"id":"caf"#.utf8) + [0xE9] + Array(#"","v":""#.utf8) + Self.windows1252Bytes + Array("\"}\n".utf8)
        let file = try TempFile("rows.jsonl", bytes)
        defer { file.cleanup() }
        let page = try readPage(try makeScope(RecordsFileSettings(path: file.path, encoding: .windows1252)), 0).1
        #expect(page.items.map(\.key) == ["café"])
        #expect(try page.items[0].fields()["v"] == .string(Self.windows1252Text))
    }

    @Test func iso88591IsDecodedRight() throws {
        // é ü ß £ ± ÿ, the upper half of Latin-1 as it is.
        let bytes = Array("id,name\n1,".utf8) + [0xE9, 0xFC, 0xDF, 0xA3, 0xB1, 0xFF] + Array("\n".utf8)
        let file = try TempFile("rows.csv", bytes)
        defer { file.cleanup() }
        #expect(try fields(RecordsFileSettings(path: file.path, encoding: .iso88591)) == [["id": .int(1), "name": .string("éüß£±ÿ")]])
    }

    @Test func theWindows1252TableIsFoundationsAndRefusesItsFiveUndefinedBytes() {
        for byte in UInt8(0x80)...UInt8(0xFF) {
            let foundation = String(data: Data([byte]), encoding: .windowsCP1252)
            let ours = RecordsFileEncoding.windows1252.scalar(ofByte: byte).map { String(Character($0)) }
            #expect(ours == foundation, "byte \(byte)")
        }
        let refused = (UInt8(0x80)...UInt8(0xFF)).filter { RecordsFileEncoding.windows1252.scalar(ofByte: $0) == nil }
        #expect(refused == [0x81, 0x8D, 0x8F, 0x90, 0x9D])
        #expect((UInt8(0x80)...UInt8(0x9F)).allSatisfy { RecordsFileEncoding.iso88591.scalar(ofByte: $0) == nil })
        #expect((UInt8(0xA0)...UInt8(0xFF)).allSatisfy { RecordsFileEncoding.iso88591.scalar(ofByte: $0)?.value == UInt32($0) })
    }

    @Test func invalidUTF8StopsTheFileNamingLineAndColumnInCharacters() throws {
        // Line 3 is `2,Ünï ` then 0xE9: column 7 counts characters, not bytes.
        let bytes = Array("id,name\n1,plain\n2,Ünï ".utf8) + [0xE9] + Array("t\n".utf8)
        let file = try TempFile("rows.csv", bytes)
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path)))
        #expect(error.code == .malformedPage)
        #expect(error.location == file.path)
        #expect(error.message.contains("line 3, column 7: byte 0xE9 is not valid UTF-8"), "\(error)")
        #expect(error.message.contains("in windows-1252 it is 'é'"))
        #expect(error.remedy?.contains("encoding:") == true && error.remedy?.contains("nothing from this file was stored") == true)
    }

    @Test(arguments: [
        // A lone continuation byte, a lead byte cut short, an overlong form, a surrogate, past U+10FFFF, cut at the end.
        [0x80], [0xC3, 0x28], [0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xE2, 0x82],
    ] as [[UInt8]])
    func invalidUTF8Forms(bad: [UInt8]) throws {
        let bytes = Array("id,name\n1,€ ".utf8) + bad
        let file = try TempFile("rows.csv", bytes)
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path)))
        #expect(error.message.contains("line 2, column 5: byte \(EncodingProblem.hex(bad[0])) is not valid UTF-8"), "\(error)")
    }

    @Test func aRefusedByteOnTheLastPageFailsPageZero() throws {
        // Nothing from the file may be stored: the first page already fails.
        var text = "id,name\n"
        for i in 0..<500 { text += "\(i),row \(i)\n" }
        let file = try TempFile("rows.csv", Array(text.utf8) + Array("500,".utf8) + [0x9D] + [0x0A])
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path, pageSize: 10, encoding: .windows1252)))
        #expect(error.message.contains("line 502, column 5: byte 0x9D is not a character in windows-1252"), "\(error)")
        // And every page asked for again fails the same way until the file is fixed.
        let scope = try makeScope(RecordsFileSettings(path: file.path, pageSize: 10, encoding: .windows1252))
        expectError({ _ = try readPage(scope, 3) }) { $0.message.contains("line 502") }
    }

    @Test func aUTF8FileReadAsWindows1252IsRecognised() throws {
        // Á is C3 81 in UTF-8; 0x81 is undefined in Windows-1252.
        let file = try TempFile("rows.csv", "id,name\n1,Álvaro\n")
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path, encoding: .windows1252)))
        #expect(error.message.contains("line 2, column 4: byte 0x81"), "\(error)")
        #expect(error.message.contains("looks like UTF-8: 'Á' is 0xC3 0x81 in UTF-8"))
    }

    @Test func iso88591RefusesWindows1252Punctuation() throws {
        let file = try TempFile("rows.csv", Array("id,price\n1,".utf8) + [0x80, 0x35] + [0x0A])
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path, encoding: .iso88591)))
        #expect(error.message.contains("line 2, column 3: byte 0x80 is a control code in iso-8859-1"), "\(error)")
        #expect(error.message.contains("in windows-1252 it is '€'"))
    }

    @Test func byteOrderMarksThatContradictTheEncoding() throws {
        let utf8 = try TempFile("rows.csv", [0xEF, 0xBB, 0xBF] + Array("id\n1\n".utf8))
        defer { utf8.cleanup() }
        let declared = try #require(try firstPageError(RecordsFileSettings(path: utf8.path, encoding: .windows1252)))
        #expect(declared.message.contains("UTF-8 byte order mark") && declared.remedy?.contains("Remove `encoding: windows-1252`") == true)
        #expect(try fields(RecordsFileSettings(path: utf8.path)) == [["id": .int(1)]])
        let utf16 = try TempFile("rows.csv", [0xFF, 0xFE] + Array("id\n".utf8))
        defer { utf16.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: utf16.path)))
        #expect(error.message.contains("UTF-16 byte order mark") && error.remedy?.contains("Save the file as UTF-8") == true)
    }

    @Test func aBOMIsNotAColumn() throws {
        let file = try TempFile("rows.csv", [0xEF, 0xBB, 0xBF] + Array("ab,id\n".utf8) + [0xFF] + Array(",1\n".utf8))
        defer { file.cleanup() }
        let error = try #require(try firstPageError(RecordsFileSettings(path: file.path)))
        #expect(error.message.contains("line 2, column 1: byte 0xFF"), "\(error)")
    }

    /// Rows of ~3 KB with non-ASCII text, so pages, rows and characters cross
    /// the reader's 1 MiB blocks, transcoded page by page.
    @Test func windows1252PagesSpanningReadBlocksStayExact() async throws {
        var bytes = Array("id,text,n\r\n".utf8)
        var expected: [String] = []
        for i in 0..<1_000 {
            let filler = [UInt8](repeating: 0xE9, count: 3_000 + i % 7)
            bytes += Array("\(i),\"".utf8) + Self.windows1252Bytes + filler + Array("\"\",\nx\",\(i * 3)\r\n".utf8)
            expected.append(Self.windows1252Text + String(repeating: "é", count: 3_000 + i % 7) + "\",\nx")
        }
        let file = try TempFile("big.csv", bytes)
        defer { file.cleanup() }
        let settings = RecordsFileSettings(path: file.path, pageSize: 97, encoding: .windows1252)
        let (outcome, pages) = try await walk(try makeScope(settings))
        #expect(outcome.isComplete)
        let records = pages.flatMap(\.items)
        #expect(records.map(\.key) == (0..<1_000).map(String.init))
        #expect(try records.map { try $0.fields()["text"] } == expected.map(JSONValue.string))
        #expect(try records.map { try $0.fields()["n"] } == (0..<1_000).map { JSONValue.int(Int64($0 * 3)) })
        let resumed = try await walk(try makeScope(settings), from: 4)
        #expect(resumed.pages.flatMap(\.items) == pages[4...].flatMap(\.items))
    }
}
