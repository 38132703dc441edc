import Catalog
import Connectors
import Crawl
import Foundation
import Logging
import Snapshot

/// Progress of a run, for a progress bar or log lines.
public enum RunProgress: Sendable {
    /// A source starts; `scopes` is how many scopes it has (the known total).
    case sourceStarted(source: String, scopes: Int)
    /// A page was stored.
    case page(source: String, scope: String, page: Int, records: Int, unread: Bool)
    /// A scope ended in `state`.
    case scopeFinished(source: String, scope: String, state: ScopeState)
    case sourceFinished(source: String)
    /// Every source is crawled; exports are being written.
    case exporting
}

/// A page as its scope's producer hands it to the applier.
enum FetchedPage: Sendable {
    /// Decoded from a fresh body; `memo` is saved with it. Where the decoder
    /// passed over rows the store held byte for byte, `decodeInFull` decodes
    /// the body again without that shortcut.
    case decoded(DecodedPage<Record>, memo: PageMemo?,
                 decodeInFull: (@Sendable () throws(StoreSyncError) -> DecodedPage<Record>)? = nil)
    /// The server said 304, or sent the very body stored last time: its records
    /// are the memo's keys, unchanged, and nothing was decoded.
    case unchanged(PageMemo)

    var rowCount: Int {
        switch self {
        case .decoded(let page, _, _): page.rowCount
        case .unchanged(let memo): memo.rowCount
        }
    }

    /// About how much memory the page holds while it waits: each record's
    /// payload and the fields decoded from it (``SourceCrawler/prefetchBytes``).
    var heldBytes: Int {
        switch self {
        case .decoded(let page, _, _): page.items.reduce(0) { $0 + 2 * $1.payload.utf8.count }
        case .unchanged: 0
        }
    }

    var hasNext: Bool? {
        switch self {
        case .decoded(let page, _, _): page.hasNext
        case .unchanged(let memo): memo.hasNext
        }
    }

    /// The hash of the body it came from.
    var bodyHash: ContentHash? {
        switch self {
        case .decoded(_, let memo, _): memo?.bodyHash
        case .unchanged(let memo): memo.bodyHash
        }
    }

    /// The server's own last page number, where the page said (an unchanged page was not read).
    var lastPage: Int? {
        if case .decoded(let page, _, _) = self { return page.lastPage }
        return nil
    }
}

/// What a scope's producer sends: pages in order, then how the scope ended.
enum ScopeMessage: Sendable {
    /// `isLast`: the scope ends complete with this page.
    case page(index: Int, FetchedPage, requests: Int, isLast: Bool)
    case end(ScopeOutcome)
}

/// Crawls the scopes of one source. Pages are fetched and decoded by up to
/// `concurrency` scopes at once, but applied to the snapshot by one consumer
/// in scope order and page order, so the snapshot and change log are the same
/// whatever the concurrency and whatever order answers arrive in.
struct SourceCrawler: Sendable {
    let source: SourceSpec
    let run: RunInfo
    let store: any SnapshotStore
    let fetcher: Fetcher
    /// One breaker per host: a dead feed host stops only the scopes on it.
    let breakers: HostCircuitBreakers
    let clock: any CrawlClock
    let logger: Logger
    let concurrency: Int
    let progress: (@Sendable (RunProgress) -> Void)?
    /// When (on `clock`) the run's deadline passes: no page is asked for after it.
    var deadline: Double? = nil
    /// Set when the run is asked to stop (a signal): no new page is fetched
    /// and pages not yet applied are abandoned; the scopes stay unfinished.
    var stop: RunStop? = nil

    /// Pages a scope may fetch ahead of its turn to be applied.
    static let prefetchPages = 8

    /// Rows a scope may hold decoded ahead of its turn: a records file read
    /// 10,000 rows a page held 8 pages of decoded rows (~400 MB at 800 bytes
    /// a row) where a marketplace's 8 pages of 100 hold 800 rows. A decoded
    /// row carries its fields (decode once) as well as its payload, ~2.5 KB.
    static let prefetchRows = 10_000

    /// Bytes a scope may hold decoded ahead of its turn (at least one page):
    /// rows are not all alike. Pages of 200 podcasts, a few of them with a
    /// megabyte-long field, held 8 pages a scope across 8 scopes fetched at
    /// once: ~430 MB within ten seconds of a 200k-podcast night.
    static let prefetchBytes = 16 << 20

    /// How many pages a scope may fetch ahead: ``prefetchPages``, fewer when
    /// its pages are large (at least 1: the next page is decoded, on every
    /// core, while this one is written, and a second one waiting bought no
    /// speed at 10,000 rows a page, only ~30 MB).
    static func prefetch(_ pagination: Pagination) -> Int {
        let pageSize = switch pagination {
        case .offset(let pageSize, _), .pageNumber(_, let pageSize, _): pageSize
        }
        return max(1, min(prefetchPages, prefetchRows / max(1, pageSize)))
    }

    /// Pages applied in one transaction at most (those already waiting when
    /// the writer is free): a kill loses at most that many, fetched again on resume.
    static let pagesPerTransaction = 8

    /// What a crawl of scopes found. A fleet keeps each scope's with its
    /// claim (as JSON, ``Codable``) for the source's closing step, which reads
    /// the whole fleet's: so every member is encoded, and an outcome an older
    /// worker stored (without `total` or `deadlineLeft`) still decodes.
    struct Result: Sendable, Codable {
        var scopesTotal = 0
        /// Scopes that ended as intended: complete, or stopped at a cap they asked for.
        var scopesComplete = 0
        var errors: [RunProblem] = []
        var warnings: [RunProblem] = []
        /// Rows seen twice within one scope of this run (rows shifting between pages).
        var drift = 0
        /// Pages answered 304 or with an unchanged body.
        var unchangedPages = 0
        /// Scopes stopped by a cap the job set (not one the scope intends).
        var cappedScopes: [String] = []
        /// Scopes whose resource no longer exists (a feed taken down), with the answer.
        var goneScopes: [String] = []
        /// Scopes that ended as intended in this run (complete, capped on purpose, or gone).
        var settled: Set<String> = []
        /// Scopes whose document was read in recovery mode, each with its
        /// first error: stored, but removing nothing.
        var recoveredScopes: [String] = []
        /// Scopes the run's deadline stopped (unfinished, left resumable), each with where it stopped.
        var deadlineLeft: [String] = []

        mutating func add(_ other: Result) {
            scopesTotal += other.scopesTotal
            scopesComplete += other.scopesComplete
            errors += other.errors
            warnings += other.warnings
            drift += other.drift
            unchangedPages += other.unchangedPages
            cappedScopes += other.cappedScopes
            goneScopes += other.goneScopes
            settled.formUnion(other.settled)
            recoveredScopes += other.recoveredScopes
            deadlineLeft += other.deadlineLeft
        }

        // The stored names: "complete" and the rest are what fleet workers wrote before this was Codable.
        private enum CodingKeys: String, CodingKey {
            case scopesTotal = "total", scopesComplete = "complete", errors, warnings, drift, unchangedPages
            case cappedScopes = "capped", goneScopes = "gone", settled, recoveredScopes = "recovered", deadlineLeft
        }

        init() {}

        init(from decoder: any Decoder) throws {
            let fields = try decoder.container(keyedBy: CodingKeys.self)
            scopesTotal = try fields.decodeIfPresent(Int.self, forKey: .scopesTotal) ?? 0
            scopesComplete = try fields.decodeIfPresent(Int.self, forKey: .scopesComplete) ?? 0
            errors = try fields.decodeIfPresent([RunProblem].self, forKey: .errors) ?? []
            warnings = try fields.decodeIfPresent([RunProblem].self, forKey: .warnings) ?? []
            drift = try fields.decodeIfPresent(Int.self, forKey: .drift) ?? 0
            unchangedPages = try fields.decodeIfPresent(Int.self, forKey: .unchangedPages) ?? 0
            cappedScopes = try fields.decodeIfPresent([String].self, forKey: .cappedScopes) ?? []
            goneScopes = try fields.decodeIfPresent([String].self, forKey: .goneScopes) ?? []
            settled = try fields.decodeIfPresent(Set<String>.self, forKey: .settled) ?? []
            recoveredScopes = try fields.decodeIfPresent([String].self, forKey: .recoveredScopes) ?? []
            deadlineLeft = try fields.decodeIfPresent([String].self, forKey: .deadlineLeft) ?? []
        }
    }

    /// Crawls `scopes`, storing each page as it is applied, and returns what happened.
    func crawl(_ scopes: [CrawlScope]) async -> Result {
        var result = Result()
        result.scopesTotal = scopes.count
        var starts: [Int?] = []
        for scope in scopes {
            do {
                let checkpoint = try store.checkpoint(runID: run.id, source: source.name, scope: scope.id)
                if checkpoint?.state == .complete {
                    result.scopesComplete += 1
                    result.settled.insert(scope.id)
                    starts.append(nil)
                    continue
                }
                if let next = checkpoint?.nextPage, next > 0 {
                    logger.info("\(source.name) \(scope.id): resuming at page \(next)")
                }
                starts.append(checkpoint?.nextPage ?? 0)
            } catch {
                result.errors.append(RunProblem(error, source: source.name, scope: scope.id))
                starts.append(nil)
            }
        }
        let pending = scopes.indices.filter { starts[$0] != nil }
        let channels = pending.map {
            PageChannel<ScopeMessage>(capacity: Self.prefetch(scopes[$0].pagination), byteBudget: Self.prefetchBytes)
        }

        await withTaskGroup(of: Void.self) { group in
            // Producers start in scope order, at most `concurrency` at a time;
            // the one the applier waits on is always among them, so this never stalls.
            var next = 0
            func startProducer() {
                guard next < pending.count else { return }
                let slot = next
                next += 1
                let scope = scopes[pending[slot]]
                let start = starts[pending[slot]] ?? 0
                group.addTask { await produce(scope: scope, startPage: start, into: channels[slot]) }
            }
            for _ in 0..<max(1, concurrency) { startProducer() }
            for (slot, index) in pending.enumerated() {
                if stop?.isRequested == true {
                    // Producers already started (or blocked on a full channel) end at their next send.
                    channels.forEach { $0.cancel() }
                    break
                }
                if await consume(scope: scopes[index], channel: channels[slot], into: &result) {
                    result.scopesComplete += 1
                    result.settled.insert(scopes[index].id)
                }
                // That scope's producer is done (or stopping): its slot goes to the next scope.
                startProducer()
            }
            await group.waitForAll()
        }
        return result
    }

    /// Fetches and decodes a scope's pages in order into `channel`, ending
    /// with the scope's outcome. The walk itself is ``PageWalker``'s: the same
    /// loop the connector tests drive.
    func produce(scope: CrawlScope, startPage: Int, into channel: PageChannel<ScopeMessage>) async {
        defer { channel.finish() }
        let outcome = await PageWalker.walk(
            pagination: scope.pagination, startPage: startPage, toleratesGone: scope.toleratesGone,
            fetch: { index throws(StoreSyncError) -> (page: (FetchedPage, requests: Int), url: String) in
                if let deadline, clock.now() >= deadline {
                    // A page boundary: what is stored stays, and the scope's checkpoint
                    // says where the next run (resuming this one) goes on.
                    throw StoreSyncError(.deadlineReached, "the run's deadline passed before page \(index) was asked for",
                                         place: .scope(source: source.name, scope: scope.id),
                                         remedy: "The scope is left unfinished, not failed; the next run resumes it at this page")
                }
                if let reason = stop?.requested {
                    // Not a failure of the scope: its consumer abandons it without recording an end.
                    throw StoreSyncError(.interrupted, "stopped before this page (\(reason))",
                                         place: .scope(source: source.name, scope: scope.id))
                }
                let host = scope.pageURL(index)?.host?.lowercased() ?? ""
                let breaker = breakers.breaker(for: host)
                if breaker.isOpen {
                    throw StoreSyncError(
                        .circuitOpen,
                        "circuit breaker open: not fetched, as source '\(source.name)' stopped asking \(host.isEmpty ? "its pages" : host) \(breaker.openedBecause)",
                        place: scope.pageURL(index).map { .url($0.absoluteString) } ?? .scope(source: source.name, scope: scope.id),
                        remedy: "The scope is marked incomplete, so nothing is removed; the next run tries the source again "
                            + "(the first errors of this source say why it failed)")
                }
                let tally = RequestTally()
                let attempt: Swift.Result<(FetchedPage, String), StoreSyncError> = await RequestTally.$current.withValue(tally) {
                    do throws(StoreSyncError) {
                        return .success(try await fetchPage(scope: scope, index: index))
                    } catch {
                        return .failure(error)
                    }
                }
                switch attempt {
                case .success(let (fetched, url)):
                    breaker.recordSuccess()
                    return ((fetched, tally.requests), url)
                case .failure(let error):
                    if error.code == .gone, scope.toleratesGone {
                        // A tolerated 404/410 is the server answering clearly, not a failing service.
                        breaker.recordSuccess()
                    } else if error.code == .malformedPage {
                        // A content error: the host answered, with a body that does not
                        // decode. That is one page's problem, not an outage, so it neither
                        // counts toward the breaker nor proves the host healthy.
                    } else if error.code == .hostUnreachable {
                        // No streak needed: the host does not resolve or refuses connections.
                        if breaker.trip() {
                            logger.error("\(source.name): circuit breaker open for host \(host) at once, as it is unreachable; its remaining scopes are not fetched this run")
                        }
                    } else if !breaker.isOpen, breaker.recordFailure() {
                        logger.error("\(source.name): circuit breaker open for \(host.isEmpty ? "the source" : "host \(host)") \(breaker.openedBecause); its remaining scopes are not fetched this run")
                    }
                    throw error
                }
            },
            shape: { page, url in
                ScopeWalk.PageShape(rowCount: page.0.rowCount, hasNext: page.0.hasNext, bodyHash: page.0.bodyHash,
                                    lastPage: page.0.lastPage, url: url)
            },
            onPage: { index, page, isLast throws(StoreSyncError) in
                guard await channel.send(.page(index: index, page.0, requests: page.requests, isLast: isLast),
                                         bytes: page.0.heldBytes) else {
                    // The applier stopped this scope (a store error); its error is the one reported.
                    throw StoreSyncError(.storage, "scope abandoned after a failed page", place: .scope(source: source.name, scope: scope.id))
                }
            })
        _ = await channel.send(.end(outcome))
    }

    /// One page: a conditional request when the store remembers the page, the
    /// memo when nothing changed, otherwise the decoded body. A body that does
    /// not decode is fetched once more, bypassing the cache: truncated and
    /// error pages are mostly one-off.
    func fetchPage(scope: CrawlScope, index: Int) async throws(StoreSyncError) -> (FetchedPage, String) {
        switch scope.origin {
        case .local(let read):
            let response = try read(index)
            let url = response.url.absoluteString + "#page=\(index)"
            let memo = try store.pageMemo(source: source.name, scope: scope.id, page: index).flatMap { $0.url == url ? $0 : nil }
            return (try interpret(response, memoURL: url, memo: memo, scope: scope), url)
        case .http(let makeURL):
            let url = makeURL(index)
            let identity = Self.memoIdentity(url)
            let memo = try store.pageMemo(source: source.name, scope: scope.id, page: index)
                .flatMap { $0.url == identity ? $0 : nil }
            var headers: [String: String] = [:]
            if let etag = memo?.etag { headers["If-None-Match"] = etag }
            if let lastModified = memo?.lastModified { headers["If-Modified-Since"] = lastModified }
            let response = try await fetcher.get(url, headers: headers, keepsResponse: scope.sharesResponses)
            // A decoder quotes the body it could not read (an error page that echoes the token):
            // the job's secrets come out before the error is logged, stored or sent.
            do {
                return (try interpret(response, memoURL: identity, memo: memo, scope: scope), url.absoluteString)
            } catch let error {
                let error = error.redacted(fetcher.redactor)
                guard error.code == .malformedPage else { throw error }
                logger.info("\(source.name) \(scope.id) page \(index): \(error.description); fetching it once more")
                let again = try await fetcher.get(url, headers: headers, bypassCache: true, keepsResponse: scope.sharesResponses)
                do {
                    return (try interpret(again, memoURL: identity, memo: memo, scope: scope), url.absoluteString)
                } catch let error {
                    throw error.redacted(fetcher.redactor)
                }
            }
        }
    }

    /// What identifies a page's definition for its memo: path and query. Not
    /// the host, which for the simulator is an ephemeral port; a memo used
    /// against another server costs at most a 200 instead of a 304.
    static func memoIdentity(_ url: URL) -> String {
        var identity = url.path
        if let query = url.query { identity += "?" + query }
        return identity
    }

    func interpret(_ response: HTTPResponse, memoURL: String, memo: PageMemo?, scope: CrawlScope) throws(StoreSyncError) -> FetchedPage {
        if response.status == 304 {
            guard let memo else {
                throw .malformedPage(url: response.url.absoluteString, reason: "HTTP 304 Not Modified to a request that was not conditional")
            }
            return .unchanged(memo)
        }
        let bodyHash = ContentHash(bytes: response.body)
        // The same bytes are unchanged only if what follows them is too: a
        // file's last full page, with rows appended since, must lead on to them.
        let followedBy = response.header(HTTPResponse.hasNextHeader).map { $0 == "true" }
        if let memo, memo.bodyHash == bodyHash, followedBy == nil || followedBy == memo.hasNext { return .unchanged(memo) }
        let page: DecodedPage<Record>
        var decodeInFull: (@Sendable () throws(StoreSyncError) -> DecodedPage<Record>)?
        if let decodeRemembering = scope.decodeRemembering {
            page = try decodeRemembering(response, try store.rowMemory(source: source.name))
            if !page.unread.isEmpty {
                let decode = scope.decode
                decodeInFull = { () throws(StoreSyncError) in try decode(response) }
            }
        } else {
            page = try scope.decode(response)
        }
        let newMemo = PageMemo(url: memoURL, etag: response.header("etag"), lastModified: response.header("last-modified"),
                               bodyHash: bodyHash, rowCount: page.rowCount, hasNext: page.hasNext)
        return .decoded(page, memo: newMemo, decodeInFull: decodeInFull)
    }

    /// Applies a scope's pages as they come, then records how the scope
    /// ended. True when it ended as intended (complete, at a cap it asked
    /// for, or gone where that is normal).
    func consume(scope: CrawlScope, channel: PageChannel<ScopeMessage>, into result: inout Result) async -> Bool {
        var outcome: ScopeOutcome = .failed(pages: 0, error: StoreSyncError(
            .fetchFailed, "the scope's crawl ended without saying how (an internal error)",
            place: .scope(source: source.name, scope: scope.id), remedy: "The next run crawls it again; please report this"))
        // Drift shows as a key repeated on a later page of the same scope.
        var keysInScope = Set<RecordIdentity>()
        let tracksDrift: Bool = if case .http = scope.origin { true } else { false }
        // A page that may lack items (recovered, or a feed announcing a move)
        // keeps the whole scope from removing anything.
        var lacksItems = false
        var recovered: String?
        // Pages decoded but not yet applied: applied together, in one
        // transaction, once the pages already waiting in the channel are taken.
        var pending: [PageInput] = []
        while let first = await channel.next() {
            // A writer slower than the fetching leaves pages waiting: they go
            // into the same transaction (fewer, larger commits); a writer that
            // keeps up takes them one by one, as they come.
            var messages = [first]
            while messages.count < Self.pagesPerTransaction, let more = channel.poll() { messages.append(more) }
            if stop?.isRequested == true {
                // Abandoned whole: what was applied stays, the scope stays unfinished and resumes next run.
                channel.cancel()
                return false
            }
            for message in messages {
                switch message {
                case .page(let index, let fetched, let requests, let isLast):
                    // Requests are booked with the page, so a resumed run counts each
                    // committed page once; time is booked per source (concurrent pages overlap).
                    var input = PageInput(runID: run.id, source: source.name, scope: scope.id, page: index, records: [],
                                          requests: requests, seconds: 0)
                    input.completesScope = isLast
                    let identities: [RecordIdentity]
                    switch fetched {
                    case .decoded(var page, let memo, let decodeInFull):
                        if !page.unread.isEmpty {
                            // Rows passed over as stored byte for byte: an earlier page of
                            // this run may have rewritten one (its key twice, in two
                            // versions), so the pages before this one are applied first.
                            if let error = await apply(&pending, scope: scope) {
                                channel.cancel()
                                return finish(scope: scope, state: .failed, error: error, into: &result)
                            }
                            if !store.stillHolds(source: source.name, rows: page.unread), let decodeInFull {
                                do {
                                    page = try decodeInFull()
                                } catch {
                                    channel.cancel()
                                    return finish(scope: scope, state: .failed, error: error, into: &result)
                                }
                            }
                        }
                        for skip in page.skipped { logger.warning("skipped a row: \(skip)") }
                        if page.mayLackItems {
                            lacksItems = true
                            input.completesScope = false
                        }
                        if let first = page.recoveredErrors.first {
                            // One line per feed, however many errors: the first few say where.
                            let count = page.recoveredErrors.count
                            let shown = page.recoveredErrors.prefix(3).joined(separator: "; ")
                            logger.warning("\(source.name) \(scope.id) page \(index): not well-formed XML, read in recovery mode: \(page.items.count) records recovered, \(count) error\(count == 1 ? "" : "s") (\(shown)\(count > 3 ? "; …" : "")); nothing is removed on its account")
                            recovered = recovered ?? "\(scope.id) (\(first))"
                        }
                        input.records = page.items
                        input.rawUnchanged = page.unread.map(\.identity)
                        input.skippedRows = page.skipped.count
                        // A page that may lack items keeps no memo: a 304 next night would
                        // replay its keys as a complete page, and the sweep would remove
                        // what the recovery missed. It is fetched and decoded in full again.
                        input.memo = page.mayLackItems ? nil : memo
                        identities = page.items.map(\.identity) + input.rawUnchanged
                    case .unchanged(let memo):
                        input.unchangedKeys = memo.keys
                        identities = input.unchangedKeys
                        result.unchangedPages += 1
                    }
                    if tracksDrift {
                        for identity in identities where !keysInScope.insert(identity).inserted { input.driftRows += 1 }
                        result.drift += input.driftRows
                    }
                    pending.append(input)
                case .end(let ended):
                    outcome = ended
                }
            }
            if let error = await apply(&pending, scope: scope) {
                // The producer stops at its next send; pages already applied stay.
                channel.cancel()
                return finish(scope: scope, state: .failed, error: error, into: &result)
            }
        }
        switch outcome {
        case .complete where lacksItems:
            // Settled, not failed, but capped: what the page may lack was not seen, so nothing is removed.
            if let recovered { result.recoveredScopes.append(recovered) }
            return finish(scope: scope, state: .capped, error: nil, into: &result)
        case .complete:
            return finish(scope: scope, state: .complete, error: nil, into: &result)
        case .gone(let url, let status):
            logger.notice("\(source.name) \(scope.id): \(url) answered HTTP \(status); the records it gave before are kept")
            result.goneScopes.append("\(scope.id) (HTTP \(status))")
            return finish(scope: scope, state: .gone, error: nil, into: &result)
        case .capped:
            if !scope.capIsIntended { result.cappedScopes.append(scope.id) }
            return finish(scope: scope, state: .capped, error: nil, into: &result) && scope.capIsIntended
        case .failed(_, let error) where error.code == .deadlineReached:
            // Not finished, so not failed: the checkpoint of its last stored page stays,
            // and the run that resumes this one goes on from there.
            let next = (try? store.checkpoint(runID: run.id, source: source.name, scope: scope.id))??.nextPage ?? 0
            result.deadlineLeft.append(next > 0 ? "\(scope.id) (from page \(next))" : scope.id)
            return false
        case .failed(_, let error):
            return finish(scope: scope, state: .failed, error: error, into: &result)
        }
    }

    /// Applies `pages` (consecutive pages of `scope`) in one transaction and
    /// empties it; the store's error if that failed.
    func apply(_ pages: inout [PageInput], scope: CrawlScope) async -> StoreSyncError? {
        guard !pages.isEmpty else { return nil }
        defer { pages.removeAll(keepingCapacity: true) }
        do throws(StoreSyncError) {
            let results = try await store.apply(pages)
            for (page, applied) in zip(pages, results) {
                logger.debug("\(source.name) \(scope.id) page \(page.page): +\(applied.added) ~\(applied.changed) =\(applied.unchanged)\(applied.unread > 0 ? " (unchanged page, not decoded)" : "")")
                progress?(.page(source: source.name, scope: scope.id, page: page.page,
                                records: page.records.count + page.rawUnchanged.count + page.unchangedKeys.count,
                                unread: applied.unread > 0))
            }
            return nil
        } catch {
            return error
        }
    }

    /// Records the scope's end state; true unless it failed.
    func finish(scope: CrawlScope, state: ScopeState, error: StoreSyncError?, into result: inout Result) -> Bool {
        let problem = error.map { RunProblem($0, source: source.name, scope: scope.id) }
        if let problem {
            result.errors.append(problem)
            logger.error("\(source.name) \(scope.id): \(problem.message)")
        }
        do {
            try store.finishScope(runID: run.id, source: source.name, scope: scope.id, state: state, error: problem)
        } catch {
            result.errors.append(RunProblem(error, source: source.name, scope: scope.id))
            return false
        }
        progress?(.scopeFinished(source: source.name, scope: scope.id, state: state))
        return error == nil
    }
}
