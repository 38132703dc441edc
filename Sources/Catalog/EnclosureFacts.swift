/// What an enclosure check learnt of one published media file: whether it is
/// there, its size and type, whether its server honours byte ranges (Apple
/// Podcasts requires HEAD and range requests). Kept across nights in the
/// output folder's `.storesync-enclosures.json`, so a file is asked about
/// once, not every night.
public struct EnclosureFact: Sendable, Equatable, Codable {
    public enum State: String, Sendable, Codable {
        /// The server answered for the file.
        case ok
        /// 404 or 410: the file is gone; its item is withheld.
        case gone
        /// No answer tonight (unreachable, throttled, refused): asked again next night.
        case unknown
    }

    public var state: State
    /// Bytes, from `Content-Length` or a `Content-Range` total.
    public var length: Int64?
    /// MIME type without parameters.
    public var type: String?
    /// True: a range request was answered 206 (or HEAD said `Accept-Ranges: bytes`);
    /// false: the server sent the whole file to a range request; nil: not known.
    public var ranges: Bool?
    /// The run that asked.
    public var checkedRun: Int64
    /// The server's validators, so the next check is conditional (a 304 keeps the fact).
    public var etag: String?
    public var lastModified: String?

    public init(state: State, length: Int64? = nil, type: String? = nil, ranges: Bool? = nil, checkedRun: Int64) {
        self.state = state
        self.length = length
        self.type = type
        self.ranges = ranges
        self.checkedRun = checkedRun
    }

    /// Whether the fact still stands in run `runID`: a file found is asked
    /// about again after 30 runs, a gone one after 7, an unknown one at once.
    public func isCurrent(inRun runID: Int64) -> Bool {
        switch state {
        case .ok: runID - checkedRun < 30
        case .gone: runID - checkedRun < 7
        case .unknown: false
        }
    }
}

/// What the enclosure checks did in one run (report.json's `enclosures`, the summary's line).
public struct EnclosureCheckFigures: Sendable, Equatable {
    /// Distinct enclosure URLs tonight's checked feeds publish.
    public var wanted = 0
    /// Of those, answered from the facts of earlier nights.
    public var remembered = 0
    /// Asked tonight (each one HEAD, or a one-byte range GET where HEAD is refused).
    public var checked = 0
    /// HTTP requests sent (retries included), and how many a conditional check's 304 answered.
    public var requests = 0
    public var notModified = 0
    /// Files found gone (404/410), and the items withheld for it.
    public var gone = 0
    public var withheld = 0
    /// Files whose server sent the whole file to a range request.
    public var rangesRefused = 0
    /// Files no answer came for tonight.
    public var unknown = 0
    /// Lengths and types the feeds publish because a check learnt them (the source gave none).
    public var lengthsLearned = 0
    public var typesLearned = 0

    public init() {}

    /// One line for the run summary.
    public var summary: String {
        "enclosures: \(wanted) published media files, \(checked) checked tonight (\(remembered) remembered), requests \(requests) (\(notModified) answered 304); "
            + "\(gone) gone (\(withheld) item\(withheld == 1 ? "" : "s") withheld), \(rangesRefused) without byte ranges, "
            + "\(unknown) unanswered; \(lengthsLearned) lengths and \(typesLearned) types learnt"
    }
}
