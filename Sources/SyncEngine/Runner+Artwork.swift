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

extension Runner {
    /// Fills the artwork mirror with the images tonight's feeds publish,
    /// before those feeds are written. The crawl's services are closed by
    /// now (and an export-only resume never opened them), so the mirror
    /// opens its own session for the run's night; its own Fetcher gives it
    /// the job's pacing and retries and its own request counts.
    func mirrorArtwork(_ spec: ArtworkExportSpec, run: RunInfo, context: ExportContext) async throws(StoreSyncError)
        -> ArtworkMirrorSync.Outcome
    {
        let urls = try SnapshotExporter.publishedArtworkURLs(job.exports, context: context)
        var ownTransport: AsyncHTTPTransport?
        var session: UpstreamSession?
        var transport: any HTTPTransport = UnreachableTransport(reason: "no artwork to fetch")
        if !urls.isEmpty {
            if environment.transport == nil { ownTransport = AsyncHTTPTransport() }
            do {
                session = try await environment.services.open(night: run.night, transport: environment.transport ?? ownTransport!,
                                                              logger: logger)
                transport = session!.transport
            } catch {
                logger.warning("artwork: \(error.description); images already mirrored stay published, none are fetched")
                transport = UnreachableTransport(reason: error.message)
            }
        }
        // Images are fetched once a night at most: the TTL cache would only hold them in memory.
        var settings = job.http
        settings.cacheTTLSeconds = 0
        let fetcher = Fetcher(transport: transport, settings: settings, clock: clock, logger: logger)
        let mirror = ArtworkMirrorSync(spec: spec, outputDirectory: job.outputDirectory, fetcher: fetcher,
                                       concurrency: job.http.concurrency, logger: logger)
        let result: Result<ArtworkMirrorSync.Outcome, StoreSyncError>
        do {
            result = .success(try await mirror.run(urls: urls, runID: run.id, runDate: run.startedAt))
        } catch {
            result = .failure(error)
        }
        await session?.close()
        await ownTransport?.shutdown()
        return try result.get()
    }
}
