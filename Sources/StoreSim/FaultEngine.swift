import Synchronization

/// Decides, request by request, which transient fault a request meets.
///
/// Every decision is a function of the seed, the fault and the request's
/// sequence number on this server (0, 1, 2, … in arrival order), plus two
/// bits of history: which URLs just got a fault (they are answered cleanly
/// next time, so one retry always suffices, bursts excepted) and how many
/// list requests the current marketplace crawl has made (for `drift`). Same
/// seed, same faults, same request sequence: same responses.
final class FaultEngine: Sendable {
    let plan: FaultPlan
    let seed: UInt64

    private struct State {
        var sequence = 0
        /// URLs (path and query) whose last request got a transient fault, oldest first.
        var faulted: [String] = []
        /// List requests since the last `page_no=1` request.
        var listRequests = 0
    }

    private let state = Mutex(State())
    /// Remembered faulted URLs; beyond this the oldest are forgotten.
    private static let memory = 1_024

    init(plan: FaultPlan, seed: UInt64) {
        self.plan = plan
        self.seed = seed
    }

    /// How one request is to be misanswered.
    struct Decision: Sendable, Equatable {
        var sequence = 0
        /// Wait this long before answering (`latency`).
        var delayMilliseconds = 0.0
        /// Hold the answer ``FaultPlan/timeoutHoldSeconds`` (`timeout`).
        var hold = false
        /// Close the connection without answering (`reset`).
        var reset = false
        /// Answer this instead (403, 429, 5xx, html-200).
        var replacement: SimResponse?
        /// Damage the real body (`truncate`, `malformed-json`).
        var damage: FaultPlan.Kind?
        /// Per-request page changes (`drift`, `duplicate`, `empty-page`).
        var effects = PageEffects.none
        /// The fault that hit, for logs and tests.
        var fault: FaultPlan.Kind?
    }

    /// The transient faults drawn per request, in the order they are tried.
    private static let drawn: [FaultPlan.Kind] = [
        .reset, .timeout, .rateLimit403, .rateLimit429, .http500, .http502, .http503, .html200, .truncate,
        .malformedJSON, .emptyPage, .duplicate,
    ]

    func decide(path: String, query rawQuery: String?) -> Decision {
        let url = rawQuery.map { "\(path)?\($0)" } ?? path
        let kind = Endpoints.pageKind(path: path)
        let query = QueryParameters(rawQuery)
        return state.withLock { state in
            var decision = Decision()
            let n = state.sequence
            state.sequence += 1
            decision.sequence = n
            if plan.isEmpty { return decision }

            if let ms = plan.value(.latency) {
                decision.delayMilliseconds = ms * (0.5 + 0.5 * StableRandom.unitInterval(hash(.latency, n)))
            }
            if kind == .productList, let step = plan.value(.drift) {
                let page = Int(query["page_no"] ?? "1") ?? 1
                state.listRequests = page <= 1 ? 0 : state.listRequests + 1
                decision.effects.shift = Int(step) * min(state.listRequests, FaultPlan.maxDriftSteps)
            }
            for burst in [FaultPlan.Kind.burst500, .burst502, .burst503] {
                guard let length = plan.value(burst).map(Int.init), inBurst(burst, length: length, n) else { continue }
                let status = Int(burst.rawValue.suffix(3)) ?? 503
                decision.replacement = Self.errorPage(status)
                decision.fault = burst
                return decision
            }
            if let at = state.faulted.firstIndex(of: url) {
                // The URL just got a fault: this time it gets the real answer.
                state.faulted.remove(at: at)
                return decision
            }
            for fault in Self.drawn {
                guard let p = plan.value(fault), applies(fault, kind: kind, query: query),
                      StableRandom.chance(p, hash(fault, n)) else { continue }
                decision.fault = fault
                switch fault {
                case .reset: decision.reset = true
                case .timeout: decision.hold = true
                case .rateLimit403: decision.replacement = SimResponse(status: 403, body: [])
                case .rateLimit429:
                    decision.replacement = SimResponse(status: 429, contentType: "text/plain; charset=utf-8",
                                                       headers: [("Retry-After", "1")], body: Array("Too Many Requests".utf8))
                case .http500, .http502, .http503: decision.replacement = Self.errorPage(Int(fault.rawValue.suffix(3)) ?? 500)
                case .html200: decision.replacement = Self.maintenancePage
                case .truncate, .malformedJSON: decision.damage = fault
                case .emptyPage: decision.effects.empty = true
                case .duplicate: decision.effects.duplicatePrevious = true
                default: break
                }
                state.faulted.append(url)
                if state.faulted.count > Self.memory { state.faulted.removeFirst(state.faulted.count - Self.memory) }
                break
            }
            return decision
        }
    }

    private func hash(_ fault: FaultPlan.Kind, _ n: Int) -> UInt64 {
        StableRandom.hash(seed, fault.tag, UInt64(n))
    }

    /// Bursts of `length` requests: the first starts at a seeded request among
    /// the first ten, the next after every 20 clean requests.
    func inBurst(_ fault: FaultPlan.Kind, length: Int, _ n: Int) -> Bool {
        let start = Int(StableRandom.hash(seed, fault.tag, 0xB0_0057) % 10)
        guard n >= start else { return false }
        return (n - start) % (length + 20) < length
    }

    private func applies(_ fault: FaultPlan.Kind, kind: Endpoints.PageKind, query: QueryParameters) -> Bool {
        switch fault {
        case .emptyPage: return kind == .productList
        case .duplicate:
            switch kind {
            case .productList: return (Int(query["page_no"] ?? "1") ?? 1) > 1
            case .search: return (Int(query["offset"] ?? "0") ?? 0) > 0
            case .other: return false
            }
        default: return true
        }
    }

    static func errorPage(_ status: Int) -> SimResponse {
        let reason = [500: "Internal Server Error", 502: "Bad Gateway", 503: "Service Unavailable"][status] ?? "Error"
        let html = "<html><head><title>\(status) \(reason)</title></head><body><h1>\(reason)</h1></body></html>\n"
        return SimResponse(status: status, contentType: "text/html; charset=utf-8",
                           headers: status == 503 ? [("Retry-After", "1")] : [], body: Array(html.utf8))
    }

    /// A proxy's maintenance page, sent with status 200.
    static let maintenancePage = SimResponse(
        status: 200, contentType: "text/html; charset=utf-8",
        body: Array("""
            <!DOCTYPE html>
            <html><head><title>We'll be right back</title></head>
            <body><h1>Scheduled maintenance</h1><p>The store is being updated. Please try again in a few minutes.</p></body></html>

            """.utf8))

    /// `response` with its body damaged by `fault` (seeded by the request's
    /// sequence number). Validators are dropped: a damaged body is a one-off.
    /// Bodies too short to damage are served as they are.
    func damage(_ response: SimResponse, with fault: FaultPlan.Kind, sequence n: Int) -> SimResponse {
        guard response.body.count >= 2 else { return response }
        var damaged = response
        damaged.etag = nil
        damaged.lastModified = nil
        let bits = StableRandom.hash(seed, fault.tag, UInt64(n), 0xDA_4A6E)
        switch fault {
        case .truncate:
            // Cut before the last significant byte, so trailing newlines
            // (Search ends with four) cannot leave a complete document.
            let significant = (response.body.lastIndex { ![0x20, 0x0A, 0x0D, 0x09].contains($0) } ?? 0) + 1
            let keep = significant > 1 ? 1 + Int(bits % UInt64(significant - 1)) : 0
            damaged.body = Array(response.body.prefix(keep))
        default:
            let positions = Self.structuralPositions(response.body, xml: response.contentType?.contains("xml") == true)
            if positions.isEmpty {
                damaged.body.append(UInt8(ascii: "}"))
            } else {
                damaged.body.remove(at: positions[Int(bits % UInt64(positions.count))])
            }
        }
        return damaged
    }

    /// Offsets of the commas outside JSON strings (or of every `>` in XML,
    /// which the simulator's writer never leaves in text): removing one
    /// makes the document invalid.
    static func structuralPositions(_ body: [UInt8], xml: Bool) -> [Int] {
        if xml { return body.indices.filter { body[$0] == UInt8(ascii: ">") } }
        var positions: [Int] = []
        var inString = false
        var escaped = false
        for (offset, byte) in body.enumerated() {
            if inString {
                if escaped {
                    escaped = false
                } else if byte == UInt8(ascii: "\\") {
                    escaped = true
                } else if byte == UInt8(ascii: "\"") {
                    inString = false
                }
            } else if byte == UInt8(ascii: "\"") {
                inString = true
            } else if byte == UInt8(ascii: ",") {
                positions.append(offset)
            }
        }
        return positions
    }
}
