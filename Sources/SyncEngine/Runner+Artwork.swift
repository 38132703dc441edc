import Catalog
import Crawl
import Export
import Foundation
import Logging
import Snapshot

extension JobSpec {
    /// The job's artwork mirror, if it has one (the loader allows at most one).
    var artworkExport: ArtworkExportSpec? {
        exports.lazy.compactMap { spec -> ArtworkExportSpec? in
            if case .artwork(let artwork) = spec { return artwork }
            return nil
        }.first
    }
}

/// Answers every request with a connection failure: the mirror's transport
/// when the services cannot be reached, so copies already held stay published.
struct UnreachableTransport: HTTPTransport {
    var reason: String

    func get(_ request: HTTPRequest, timeoutSeconds: Double) async throws(TransportError) -> HTTPResponse {
        throw .connectionFailed(reason)
    }
}

extension JobSpec {
    /// Whether a feed export asks about its enclosures (`checkEnclosures`).
    var checksEnclosures: Bool {
        exports.contains { spec in
            if case .feed(let feed) = spec { return feed.checkEnclosures }
            return false
        }
    }
}

extension Runner {
    /// A transport to the job's services for work after the crawl (the
    /// crawl's session is closed by now, and an export-only resume never
    /// opened one): the run's night of the simulator, or the network. Nothing
    /// is opened when there is nothing to fetch; a session that cannot be
    /// opened gives a transport that answers every request as unreachable.
    /// `poster` sends the few POSTs after a night (a WebSub ping) the same way.
    func exportSession(run: RunInfo, needed: Bool, purpose: String)
        async -> (transport: any HTTPTransport, poster: any HTTPPoster, close: @Sendable () async -> Void)
    {
        guard needed else { return (UnreachableTransport(reason: "nothing to fetch"), AsyncHTTPPoster(), {}) }
        let ownTransport: AsyncHTTPTransport? = environment.transport == nil ? AsyncHTTPTransport() : nil
        do {
            let session = try await environment.services.open(night: run.night, transport: environment.transport ?? ownTransport!,
                                                              logger: logger)
            return (session.transport, session.poster, {
                await session.close()
                await ownTransport?.shutdown()
            })
        } catch {
            logger.warning("\(purpose): \(error.description)")
            await ownTransport?.shutdown()
            return (UnreachableTransport(reason: error.message), AsyncHTTPPoster(), {})
        }
    }

    /// Fills the artwork mirror with the images tonight's feeds publish,
    /// before those feeds are written. Its own Fetcher gives it the job's
    /// pacing and retries and its own request counts.
    func mirrorArtwork(_ spec: ArtworkExportSpec, run: RunInfo, context: ExportContext) async throws(StoreSyncError)
        -> ArtworkMirrorSync.Outcome
    {
        let urls = try SnapshotExporter.publishedArtworkURLs(job.exports, context: context)
        let session = await exportSession(run: run, needed: !urls.isEmpty,
                                          purpose: "artwork (images already mirrored stay published, none are fetched)")
        // Images are fetched once a night at most: the TTL cache would only hold them in memory.
        var settings = job.http
        settings.cacheTTLSeconds = 0
        let fetcher = Fetcher(transport: session.transport, settings: settings, clock: clock, logger: logger)
        let mirror = ArtworkMirrorSync(spec: spec, outputDirectory: job.outputDirectory, fetcher: fetcher,
                                       concurrency: job.http.concurrency, logger: logger)
        let result: Result<ArtworkMirrorSync.Outcome, StoreSyncError>
        do {
            result = .success(try await mirror.run(urls: urls, runID: run.id, runDate: run.startedAt))
        } catch {
            result = .failure(error)
        }
        await session.close()
        return try result.get()
    }

    /// Asks about the media files tonight's `checkEnclosures` feeds publish
    /// (see ``EnclosureCheckSync``), before those feeds are written. An item
    /// withheld for a gone file makes room for the next one, whose file is
    /// asked about in turn (a few rounds at most).
    func checkEnclosures(run: RunInfo, context: ExportContext) async throws(StoreSyncError)
        -> (facts: [String: EnclosureFact], figures: EnclosureCheckFigures)
    {
        var context = context
        func published() throws(StoreSyncError) -> [String] {
            do {
                return try SnapshotExporter.publishedEnclosureURLs(job.exports, context: context)
            } catch {
                throw .exportFailed(path: job.outputDirectory, reason: "the feeds' enclosures could not be listed: \(error)")
            }
        }
        var urls = try published()
        let remembered = EnclosureCheckSync.loadMemo(outputDirectory: job.outputDirectory, logger: logger)
        let due = urls.contains { !(remembered.facts[$0]?.isCurrent(inRun: run.id) ?? false) }
        let session = await exportSession(run: run, needed: due, purpose: "enclosure checks (remembered answers stand, none are asked)")
        var settings = job.http
        settings.cacheTTLSeconds = 0
        let fetcher = Fetcher(transport: session.transport, settings: settings, clock: clock, logger: logger)
        let checks = EnclosureCheckSync(outputDirectory: job.outputDirectory, fetcher: fetcher, concurrency: job.http.concurrency, logger: logger)
        var result: Result<(facts: [String: EnclosureFact], figures: EnclosureCheckFigures), StoreSyncError> = .success(([:], .init()))
        var checked = 0, requests = 0, notModified = 0
        do {
            for _ in 0..<5 {
                let round = try await checks.run(urls: urls, runID: run.id)
                checked += round.figures.checked
                requests += round.figures.requests
                notModified += round.figures.notModified
                var figures = round.figures
                figures.checked = checked
                figures.requests = requests
                figures.notModified = notModified
                figures.remembered = max(0, figures.wanted - checked)
                result = .success((round.facts, figures))
                guard round.figures.gone > 0 else { break }
                context.enclosureFacts = round.facts
                let next = try published()
                if Set(next).isSubset(of: Set(urls)) { break }
                urls = Array(Set(urls).union(next)).sorted()
            }
        } catch {
            result = .failure(error)
        }
        await session.close()
        return try result.get()
    }
}
