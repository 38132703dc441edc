import Foundation
import Synchronization
import SyncEngine
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Shows a run's progress on standard error: a bar per source redrawn in
/// place on a terminal; plain lines (a source's start and end, and a line at
/// most every `plainInterval` seconds) when cron or a pipe reads it.
final class ProgressDisplay: Sendable {
    struct SourceState {
        var name = ""
        var scopesTotal = 0
        var scopesDone = 0
        var pages = 0
        var unchangedPages = 0
        var records = 0
        var started = Date()
    }

    private struct State {
        var current = SourceState()
        var lastDraw = Date.distantPast
        var drawn = false
    }

    private let terminal: Bool
    private let state = Mutex(State())
    private let plainInterval: TimeInterval = 10

    init(terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.terminal = terminal
    }

    func handle(_ event: RunProgress) {
        let output: String? = state.withLock { state in
            let now = Date()
            switch event {
            case .sourceStarted(let source, let scopes):
                if state.current.name == source {
                    state.current.scopesTotal += scopes  // follow-up scopes (details) join the source's total
                    return nil
                }
                state.current = SourceState(name: source, scopesTotal: scopes, started: now)
                state.lastDraw = now
                return terminal ? nil : "\(source): crawling \(scopes) scope(s)\n"
            case .page(_, _, _, let records, let unread):
                state.current.pages += 1
                state.current.records += records
                if unread { state.current.unchangedPages += 1 }
            case .scopeFinished:
                state.current.scopesDone += 1
            case .sourceFinished:
                let line = Self.line(state.current, now: now, width: nil)
                state.drawn = false
                return terminal ? "\r\u{1B}[2K" + line + "\n" : line + "\n"
            case .exporting:
                return terminal && state.drawn ? "\r\u{1B}[2K" : nil
            }
            let interval = terminal ? 0.1 : plainInterval
            guard now.timeIntervalSince(state.lastDraw) >= interval else { return nil }
            state.lastDraw = now
            if terminal {
                state.drawn = true
                return "\r\u{1B}[2K" + Self.line(state.current, now: now, width: 24)
            }
            return Self.line(state.current, now: now, width: nil) + "\n"
        }
        if let output { FileHandle.standardError.write(Data(output.utf8)) }
    }

    /// `podcasts [#####·····] 3/8 scopes · 12 pages (4 unchanged) · 2,400 records · 6.1 pages/s · ETA 0:04`
    static func line(_ s: SourceState, now: Date, width: Int?) -> String {
        let elapsed = max(now.timeIntervalSince(s.started), 0.001)
        var parts: [String] = []
        var head = s.name
        if let width, s.scopesTotal > 0 {
            let filled = min(width, width * s.scopesDone / s.scopesTotal)
            head += " [" + String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled) + "]"
        }
        parts.append(head + " \(s.scopesDone)/\(s.scopesTotal) scopes")
        parts.append("\(s.pages) pages" + (s.unchangedPages > 0 ? " (\(s.unchangedPages) unchanged)" : ""))
        parts.append("\(s.records) records")
        parts.append(String(format: "%.1f pages/s", Double(s.pages) / elapsed))
        if s.scopesDone > 0, s.scopesDone < s.scopesTotal {
            let remaining = elapsed / Double(s.scopesDone) * Double(s.scopesTotal - s.scopesDone)
            parts.append("ETA " + clock(remaining))
        } else if s.scopesDone == s.scopesTotal {
            parts.append("done in " + clock(elapsed))
        }
        return parts.joined(separator: " · ")
    }

    static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }
}
