import Foundation
import SyncEngine
import Testing

/// The terminal progress line: redrawn in place with `\r`, so a line wider
/// than the terminal wraps and leaves half-drawn rows behind at every redraw.
@Suite struct ProgressLineTests {
    let start = Date(timeIntervalSince1970: 1_000_000)

    func state(_ name: String = "podcasts", done: Int = 3, total: Int = 8) -> SourceProgress {
        var s = SourceProgress(name: name, scopesTotal: total, started: start)
        s.scopesDone = done
        s.pages = 12_345
        s.unchangedPages = 4_000
        s.records = 2_400_000
        return s
    }

    @Test(arguments: [20, 40, 60, 80, 100, 132, 200, 1000])
    func fitsEveryWidthWithTheLastColumnLeftFree(columns: Int) {
        for name in ["podcasts", "a-very-long-source-name-that-goes-on-and-on", "ポッドキャスト", "🎧 charts"] {
            for (done, total) in [(0, 8), (3, 8), (8, 8), (0, 0)] {
                let line = ProgressLine.render(state(name, done: done, total: total), now: start + 65, columns: columns)
                #expect(ProgressLine.displayWidth(line) <= columns - 1, "\(columns) columns: \(line)")
                #expect(!line.contains("\n"))
            }
        }
    }

    @Test func wideTerminalsGetTheWholeLineAndABar() {
        let line = ProgressLine.render(state(), now: start + 65, columns: 200)
        #expect(line.hasPrefix("podcasts [#########···············] 3/8 scopes"))
        #expect(line.contains("12345 pages (4000 unchanged)"))
        #expect(line.contains("ETA 1:48"))
        #expect(line.contains("pages/s"))
    }

    @Test func narrowTerminalsGiveUpTheLeastUsefulPartsFirst() {
        let line = ProgressLine.render(state(), now: start + 65, columns: 80)
        #expect(!line.contains("pages/s"), "the rate goes first")
        #expect(line.contains("3/8 scopes"))
        #expect(line.contains("12345 pages"))
        let tiny = ProgressLine.render(state("a-very-long-source-name-that-goes-on-and-on"), now: start + 65, columns: 20)
        #expect(tiny.hasSuffix("…"))
        #expect(ProgressLine.displayWidth(tiny) == 19)
    }

    @Test func widthCountsTerminalCellsNotCharacters() {
        #expect(ProgressLine.displayWidth("abc") == 3)
        #expect(ProgressLine.displayWidth("ポッド") == 6)
        #expect(ProgressLine.displayWidth("e\u{301}") == 1)
        #expect(ProgressLine.displayWidth("🎧") == 2)
    }

    @Test func thePlainLineForLogsIsWhole() {
        let line = ProgressLine.render(state(), now: start + 65, columns: nil)
        #expect(line == "podcasts 3/8 scopes · 12345 pages (4000 unchanged) · 2400000 records · 189.9 pages/s · ETA 1:48")
    }
}
