import Foundation

/// One source's progress as the terminal display draws it.
public struct SourceProgress: Sendable, Equatable {
    public var name: String
    public var scopesTotal: Int
    public var scopesDone = 0
    public var pages = 0
    public var unchangedPages = 0
    public var records = 0
    public var started: Date

    public init(name: String, scopesTotal: Int, started: Date) {
        self.name = name
        self.scopesTotal = scopesTotal
        self.started = started
    }
}

/// Renders a progress line that fits a given number of terminal columns.
///
/// A line longer than the terminal wraps, and `\r` then returns only to the
/// start of the last wrapped row: every redraw leaves the rows above behind,
/// which is how an 80-column terminal filled with half-drawn lines. So the
/// line is fitted before it is drawn: the least useful parts go first (rate,
/// then ETA, records, pages), the bar shrinks, and the name is cut last.
/// ConsoleKit's `ActivityBar` was weighed and not taken: its bar is a fixed
/// 25 columns after an uncut title, so it wraps the same way on a narrow
/// terminal, and it redraws on its own timer where this display redraws on
/// crawl events (no thread, nothing drawn while nothing happens).
public enum ProgressLine {
    /// The widest bar drawn; narrower terminals get a narrower one.
    public static let maxBarWidth = 24
    /// Below this many cells a bar tells nothing and is left out.
    static let minBarWidth = 5

    /// The line for `state`, at most `columns - 1` cells wide when `columns` is
    /// given (the last column is left empty: writing into it makes some
    /// terminals wrap at once); with `columns` nil, the plain line cron logs get.
    public static func render(_ state: SourceProgress, now: Date, columns: Int?) -> String {
        let elapsed = max(now.timeIntervalSince(state.started), 0.001)
        let scopes = "\(state.scopesDone)/\(state.scopesTotal) scopes"
        let pages = "\(state.pages) pages" + (state.unchangedPages > 0 ? " (\(state.unchangedPages) unchanged)" : "")
        let records = "\(state.records) records"
        let rate = String(format: "%.1f pages/s", Double(state.pages) / elapsed)
        var timing: String?
        if state.scopesDone > 0, state.scopesDone < state.scopesTotal {
            let remaining = elapsed / Double(state.scopesDone) * Double(state.scopesTotal - state.scopesDone)
            timing = "ETA " + clock(remaining)
        } else if state.scopesTotal > 0, state.scopesDone == state.scopesTotal {
            timing = "done in " + clock(elapsed)
        }
        guard let columns else {
            return ([state.name + " " + scopes, pages, records, rate] + [timing].compactMap { $0 }).joined(separator: " · ")
        }
        // In the order they are given up when space runs out (last first).
        let optional = [pages, records] + [timing].compactMap { $0 } + [rate]
        let budget = max(columns - 1, 1)
        func bar(_ width: Int) -> String {
            guard width > 0, state.scopesTotal > 0 else { return "" }
            let filled = min(width, width * state.scopesDone / state.scopesTotal)
            return " [" + String(repeating: "#", count: filled) + String(repeating: "·", count: width - filled) + "]"
        }
        func tail(_ parts: ArraySlice<String>) -> String {
            ([" " + scopes] + parts.map { " · " + $0 }).joined()
        }
        let nameWidth = displayWidth(state.name)
        // With a bar while one of at least `minBarWidth` cells fits, giving up
        // the optional parts one by one; then without the bar; then cut.
        if state.scopesTotal > 0 {
            for count in stride(from: optional.count, through: 0, by: -1) {
                let text = tail(optional.prefix(count))
                let barWidth = min(maxBarWidth, budget - nameWidth - displayWidth(text) - 3)
                if barWidth >= minBarWidth { return state.name + bar(barWidth) + text }
            }
        }
        for count in stride(from: optional.count, through: 0, by: -1) {
            let text = tail(optional.prefix(count))
            if nameWidth + displayWidth(text) <= budget { return state.name + text }
        }
        return truncate(state.name + tail([]), to: budget)
    }

    /// `m:ss`, or `h:mm:ss` past an hour.
    public static func clock(_ seconds: Double) -> String {
        let total = Int(seconds.rounded())
        return total >= 3600
            ? String(format: "%d:%02d:%02d", total / 3600, total / 60 % 60, total % 60)
            : String(format: "%d:%02d", total / 60, total % 60)
    }

    /// Terminal cells `text` takes: wide (East Asian) characters and most
    /// emoji take two, combining marks and zero-width characters none.
    public static func displayWidth(_ text: String) -> Int {
        text.reduce(0) { $0 + cells($1) }
    }

    static func cells(_ character: Character) -> Int {
        guard let first = character.unicodeScalars.first else { return 0 }
        let properties = first.properties
        if properties.generalCategory == .nonspacingMark || properties.generalCategory == .enclosingMark
            || properties.generalCategory == .format || properties.generalCategory == .control {
            return 0
        }
        if properties.isEmojiPresentation || character.unicodeScalars.contains(where: { $0.value == 0xFE0F }) { return 2 }
        switch first.value {
        case 0x1100...0x115F, 0x2E80...0x303E, 0x3041...0x33FF, 0x3400...0x4DBF, 0x4E00...0x9FFF,
             0xA000...0xA4CF, 0xAC00...0xD7A3, 0xF900...0xFAFF, 0xFE30...0xFE4F, 0xFF00...0xFF60,
             0xFFE0...0xFFE6, 0x20000...0x2FFFD, 0x30000...0x3FFFD:
            return 2
        default:
            return 1
        }
    }

    /// `text` cut to `width` cells, with an ellipsis when anything was cut.
    static func truncate(_ text: String, to width: Int) -> String {
        guard displayWidth(text) > width else { return text }
        var result = ""
        var used = 0
        for character in text {
            let w = cells(character)
            if used + w > width - 1 { break }
            result.append(character)
            used += w
        }
        return result + "…"
    }
}
