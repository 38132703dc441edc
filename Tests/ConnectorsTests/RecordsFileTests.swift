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

@Suite struct RecordsFileJSONLinesTests {
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

    @Test func scopeIsNamedAfterTheFileAndReadsLocally() throws {
        let file = try TempFile("catalog.jsonl", jsonl(3))
        defer { file.cleanup() }
        let scope = try makeScope(RecordsFileSettings(path: file.path))
        #expect(scope.id == "file:catalog.jsonl")
        #expect(scope.pageURL(0) == nil)
        #expect(scope.sweeps)
        let (response, page) = try readPage(scope, 0)
        #expect(response.status == 200)
        #expect(response.url == URL(fileURLWithPath: file.path))
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
        #expect(rows[0] == ["id": .string("1"), "name": .string("plain"), "note": .string("with, comma")])
        #expect(rows[1]["name"] == .string("multi\r\nline"))
        #expect(rows[1]["note"] == .string("say \"hi\""))
        #expect(rows[2]["name"] == .string("12\" vinyl"))
        #expect(rows[2]["note"] == .string(""))
        #expect(rows[3] == ["id": .string("4"), "name": .string(""), "note": .string("")])
        #expect(rows[4]["note"] == .string("no newline"))
        // CSV has no types: numbers stay text.
        #expect(rows[0]["id"] == .string("1"))
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
