import Catalog

extension World {
    /// The first night of the run of nights, ending at `night`, on which
    /// `body` gives the same bytes (nil: the resource does not exist that
    /// night). This is what `Last-Modified` reports, so a body that did not
    /// change between nights keeps its ETag and its Last-Modified, and the
    /// answer depends on the world alone (any process, any request order).
    func versionNight(resource: String, night: Int, body: (Int) -> [UInt8]?) -> Int {
        guard night > 1, let current = body(night) else { return max(night, 1) }
        let hash = ContentHash(bytes: current).description
        var since = night
        while since > 1 {
            if let memo = cache.version(resource, night: since - 1) {
                if memo.hash == hash { since = memo.since }
                break
            }
            guard let earlier = body(since - 1), ContentHash(bytes: earlier).description == hash else { break }
            since -= 1
        }
        cache.storeVersion(resource, night: night, (hash, since))
        return since
    }
}

/// The conditional-request headers the simulator honours.
struct Conditions: Sendable, Equatable {
    var ifNoneMatch: String?
    var ifModifiedSince: String?

    init(ifNoneMatch: String? = nil, ifModifiedSince: String? = nil) {
        self.ifNoneMatch = ifNoneMatch
        self.ifModifiedSince = ifModifiedSince
    }

    static let none = Conditions()
}

extension Endpoints {
    /// A 200 with a strong ETag and Last-Modified, or a 304 when the request's
    /// validators match: `If-None-Match` first (RFC 9110 §13.2.2), and only
    /// without it `If-Modified-Since`.
    static func validated(_ body: [UInt8], contentType: String, lastModified: SimDate,
                          conditions: Conditions) -> SimResponse {
        let etag = "\"\(ContentHash(bytes: body).description)\""
        let modified = lastModified.httpDate
        var notModified = false
        if let header = conditions.ifNoneMatch {
            notModified = etagMatches(etag, header)
        } else if let header = conditions.ifModifiedSince, let since = SimDate.parseHTTPDate(header) {
            notModified = lastModified.epochSeconds <= since
        }
        if notModified {
            return SimResponse(status: 304, etag: etag, lastModified: modified, body: [])
        }
        return SimResponse(status: 200, contentType: contentType, etag: etag, lastModified: modified, body: body)
    }
}
