import Catalog
import Crawl
import Export
import Foundation
import Logging

/// The enclosure checks' memory, `.storesync-enclosures.json` in the output
/// folder: what each published media file's server said, and when.
struct EnclosureMemo: Codable, Equatable {
    var version = 1
    /// By URL.
    var facts: [String: EnclosureFact] = [:]
}

/// Asks about the media files tonight's feeds with `checkEnclosures` publish,
/// politely: each file once (the answer is remembered across nights, see
/// ``EnclosureFact/isCurrent(inRun:)``), through the job's per-host pacing,
/// retries and timeouts; HEAD first, and a one-byte range GET where HEAD is
/// refused or says no size, which also shows whether ranges are honoured.
struct EnclosureCheckSync: Sendable {
    static let memoName = ".storesync-enclosures.json"
    /// Facts of files no feed has published for this many runs are forgotten.
    static let forgetAfterRuns: Int64 = 90

    let outputDirectory: String
    let fetcher: Fetcher
    let concurrency: Int
    let logger: Logger

    var memoURL: URL { Self.memoURL(outputDirectory) }

    static func memoURL(_ outputDirectory: String) -> URL {
        URL(fileURLWithPath: outputDirectory).appendingPathComponent(memoName)
    }

    /// The facts for `urls` in run `runID` (checked tonight or remembered), and what it took.
    func run(urls: [String], runID: Int64) async throws(StoreSyncError) -> (facts: [String: EnclosureFact], figures: EnclosureCheckFigures) {
        var memo = Self.loadMemo(outputDirectory: outputDirectory, logger: logger)
        var figures = EnclosureCheckFigures()
        figures.wanted = urls.count
        let due = urls.filter { !(memo.facts[$0]?.isCurrent(inRun: runID) ?? false) }
        figures.remembered = urls.count - due.count
        let before = fetcher.stats
        await withTaskGroup(of: (String, EnclosureFact).self) { group in
            var next = 0
            func launch() {
                guard next < due.count else { return }
                let url = due[next]
                next += 1
                let known = memo.facts[url]
                group.addTask { (url, await check(url, runID: runID, known: known)) }
            }
            for _ in 0..<max(1, concurrency) { launch() }
            while let (url, fact) = await group.next() {
                memo.facts[url] = fact
                launch()
            }
        }
        figures.checked = due.count
        figures.requests = fetcher.stats.requests - before.requests
        figures.notModified = fetcher.stats.notModified - before.notModified
        var facts: [String: EnclosureFact] = [:]
        for url in urls {
            guard let fact = memo.facts[url] else { continue }
            facts[url] = fact
            switch fact.state {
            case .gone: figures.gone += 1
            case .unknown: figures.unknown += 1
            case .ok: if fact.ranges == false { figures.rangesRefused += 1 }
            }
        }
        memo.facts = memo.facts.filter { runID - $0.value.checkedRun < Self.forgetAfterRuns || facts[$0.key] != nil }
        try save(memo)
        return (facts, figures)
    }

    /// One file: HEAD (conditional when an earlier night's answer had
    /// validators: a 304 keeps it), then a one-byte range GET where HEAD gave
    /// no size or said nothing of ranges.
    func check(_ url: String, runID: Int64, known: EnclosureFact? = nil) async -> EnclosureFact {
        guard let address = URL(string: url) else { return EnclosureFact(state: .unknown, checkedRun: runID) }
        var fact = EnclosureFact(state: .unknown, checkedRun: runID)
        var conditions: [String: String] = [:]
        if let known, known.state == .ok {
            if let etag = known.etag { conditions["If-None-Match"] = etag }
            if let lastModified = known.lastModified { conditions["If-Modified-Since"] = lastModified }
        }
        do {
            let response = try await fetcher.head(address, headers: conditions)
            if response.status == 304, var unchanged = known {
                unchanged.checkedRun = runID
                return unchanged
            }
            fact = Self.fact(fromHead: response, runID: runID)
            // Apple asks for byte ranges too: a HEAD that names its size and ranges says all.
            if fact.length != nil, fact.ranges == true { return fact }
        } catch {
            if error.code == .gone { return EnclosureFact(state: .gone, checkedRun: runID) }
            // HEAD refused (405, 501) or failed: the range request is the other way to ask.
            logger.debug("enclosure check: HEAD \(url) failed (\(error.message)); trying a range request")
        }
        do {
            let response = try await fetcher.get(address, headers: ["Range": "bytes=0-0"], bypassCache: true)
            let ranged = Self.fact(fromRange: response, runID: runID)
            // What HEAD told (a type, Accept-Ranges, validators) stands where the range answer is silent.
            var merged = EnclosureFact(state: ranged.state, length: ranged.length ?? fact.length, type: ranged.type ?? fact.type,
                                       ranges: ranged.ranges ?? fact.ranges, checkedRun: runID)
            merged.etag = response.header("etag") ?? fact.etag
            merged.lastModified = response.header("last-modified") ?? fact.lastModified
            return merged
        } catch {
            if error.code == .gone { return EnclosureFact(state: .gone, checkedRun: runID) }
            logger.info("enclosure check: \(url) did not answer (\(error.message)); asked again next night")
            return EnclosureFact(state: .unknown, checkedRun: runID)
        }
    }

    static func fact(fromHead response: HTTPResponse, runID: Int64) -> EnclosureFact {
        let length = response.header("content-length").flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }.flatMap { $0 > 0 ? $0 : nil }
        let ranges = response.header("accept-ranges").map { $0.lowercased().contains("bytes") }
        var fact = EnclosureFact(state: .ok, length: length, type: mediaType(response), ranges: ranges == true ? true : nil,
                                 checkedRun: runID)
        fact.etag = response.header("etag")
        fact.lastModified = response.header("last-modified")
        return fact
    }

    /// A 206 says ranges work and gives the total in `Content-Range: bytes 0-0/TOTAL`;
    /// a 200 is the whole file, whose length is what came.
    static func fact(fromRange response: HTTPResponse, runID: Int64) -> EnclosureFact {
        if response.status == 206 {
            let total = response.header("content-range")?.split(separator: "/").last.flatMap { Int64($0.trimmingCharacters(in: .whitespaces)) }
            return EnclosureFact(state: .ok, length: total.flatMap { $0 > 0 ? $0 : nil }, type: mediaType(response), ranges: true,
                                 checkedRun: runID)
        }
        let length = Int64(response.body.count)
        return EnclosureFact(state: .ok, length: length > 0 ? length : nil, type: mediaType(response), ranges: false, checkedRun: runID)
    }

    /// `Content-Type` without its parameters, lower case.
    static func mediaType(_ response: HTTPResponse) -> String? {
        guard let value = response.header("content-type")?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces),
              !value.isEmpty else { return nil }
        return value.lowercased()
    }

    static func loadMemo(outputDirectory: String, logger: Logger) -> EnclosureMemo {
        BookkeepingFile.load(memoURL(outputDirectory), empty: EnclosureMemo(), what: "enclosure checks",
                             consequence: "every file is asked about again", logger: logger)
    }

    func save(_ memo: EnclosureMemo) throws(StoreSyncError) {
        try BookkeepingFile.save(memo, to: memoURL, what: "the enclosure checks' memory")
    }
}
