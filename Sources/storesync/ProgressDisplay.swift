import Foundation
import Logging
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
    private struct State {
        var current = SourceProgress(name: "", scopesTotal: 0, started: Date())
        var lastDraw = Date.distantPast
        var drawn = false
    }

    private let terminal: Bool
    private let state = Mutex(State())
    private let plainInterval: TimeInterval = 10

    /// Where plain lines go: standard error, or (with `--log-format json`)
    /// the log, so a log shipper reading standard error gets only JSON.
    private let writeLine: @Sendable (String) -> Void

    init(terminal: Bool = isatty(STDERR_FILENO) == 1) {
        self.terminal = terminal
        writeLine = { FileHandle.standardError.write(Data($0.utf8)) }
    }

    /// Plain progress lines as log entries (`event: progress`), never a bar.
    init(logger: Logger) {
        terminal = false
        writeLine = { line in
            logger.info("\(line.trimmingCharacters(in: .whitespacesAndNewlines))", metadata: ["event": "progress"])
        }
    }

    /// The display on screen, if any: log lines clear its line first.
    static let active = Mutex<ProgressDisplay?>(nil)

    /// Runs `write` (a log line to standard error) with the bar taken off
    /// the screen first, so the line does not start after a half-drawn bar;
    /// the next crawl event draws the bar again under it.
    func interrupt(_ write: () -> Void) {
        state.withLock { state in
            if terminal && state.drawn {
                FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8))
                state.drawn = false
                state.lastDraw = .distantPast
            }
            write()
        }
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
                state.current = SourceProgress(name: source, scopesTotal: scopes, started: now)
                state.lastDraw = now
                return terminal ? nil : "\(source): crawling \(scopes) scope(s)\n"
            case .page(_, _, _, let records, let unread):
                state.current.pages += 1
                state.current.records += records
                if unread { state.current.unchangedPages += 1 }
            case .scopeFinished:
                state.current.scopesDone += 1
            case .sourceFinished:
                // A finished line stays on screen, so it may wrap: it is never redrawn.
                let line = ProgressLine.render(state.current, now: now, columns: nil)
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
                // Asked at every draw: a resized window (SIGWINCH) is followed at the next redraw.
                return "\r\u{1B}[2K" + ProgressLine.render(state.current, now: now, columns: Self.terminalColumns())
            }
            return ProgressLine.render(state.current, now: now, columns: nil) + "\n"
        }
        if let output { writeLine(output) }
    }

    /// The width of the terminal standard error is drawn on; `COLUMNS`, then
    /// 80, when the terminal does not say.
    static func terminalColumns() -> Int {
        var size = winsize()
        if ioctl(STDERR_FILENO, UInt(TIOCGWINSZ), &size) == 0, size.ws_col > 0 { return Int(size.ws_col) }
        if let text = ProcessInfo.processInfo.environment["COLUMNS"], let columns = Int(text), columns > 0 { return columns }
        return 80
    }
}

/// Forwards to another handler, taking the progress bar off the screen
/// around each line (see `ProgressDisplay.interrupt`).
struct ProgressAwareLogHandler<Wrapped: LogHandler>: LogHandler {
    var wrapped: Wrapped

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadata: Logger.Metadata {
        get { wrapped.metadata }
        set { wrapped.metadata = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { wrapped[metadataKey: key] }
        set { wrapped[metadataKey: key] = newValue }
    }

    func log(event: LogEvent) {
        guard let display = ProgressDisplay.active.withLock({ $0 }) else { return wrapped.log(event: event) }
        display.interrupt { wrapped.log(event: event) }
    }
}
