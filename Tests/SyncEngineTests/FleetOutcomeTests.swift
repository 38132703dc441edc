import Catalog
import Foundation
import Snapshot
@testable import SyncEngine
import Testing

/// What a fleet's worker keeps with each claim it completes is what the
/// source's closing step reads back: every member of a crawl's result.
@Suite struct FleetOutcomeTests {
    @Test func aScopesOutcomeReadsBackWhole() {
        var result = SourceCrawler.Result()
        result.scopesTotal = 3
        result.scopesComplete = 2
        result.errors = [RunProblem(code: "fetch-failed", source: "market", scope: "page", url: "http://x/p?page_no=2",
                                    message: "could not fetch: HTTP 500")]
        result.warnings = [RunProblem(code: RunProblem.capped, source: "market", message: "capped")]
        result.drift = 4
        result.unchangedPages = 5
        result.cappedScopes = ["b"]
        result.goneScopes = ["c (HTTP 410)"]
        result.settled = ["a", "b", "c"]
        result.recoveredScopes = ["d: not well-formed"]
        // Dropped by the hand-written encoding this replaced.
        result.deadlineLeft = ["e (page 7)"]

        let read = FleetDealer.decode(FleetDealer.encode(result))
        #expect(read.scopesTotal == 3)
        #expect(read.scopesComplete == 2)
        #expect(read.errors == result.errors)
        #expect(read.warnings == result.warnings)
        #expect(read.drift == 4)
        #expect(read.unchangedPages == 5)
        #expect(read.cappedScopes == ["b"])
        #expect(read.goneScopes == ["c (HTTP 410)"])
        #expect(read.settled == ["a", "b", "c"])
        #expect(read.recoveredScopes == ["d: not well-formed"])
        #expect(read.deadlineLeft == ["e (page 7)"])
    }

    /// A worker of the previous release may have completed claims of a night
    /// that a worker of this one closes.
    @Test func anOutcomeThePreviousReleaseStoredStillReads() {
        let stored = #"{"capped":[],"complete":1,"drift":0,"errors":[{"code":"timeout","message":"no answer","scope":null,"source":"s","url":null},"bare text of an older store"],"gone":[],"recovered":[],"settled":["s1"],"unchangedPages":2,"warnings":[]}"#
        let read = FleetDealer.decode(stored)
        #expect(read.scopesComplete == 1)
        #expect(read.unchangedPages == 2)
        #expect(read.settled == ["s1"])
        #expect(read.errors == [RunProblem(code: "timeout", source: "s", message: "no answer"),
                                RunProblem(code: RunProblem.unknown, message: "bare text of an older store")])
    }

    /// A closing step that recorded nothing (the run's verdict) reads as an empty result.
    @Test func anEmptyOutcomeIsAnEmptyResult() {
        let read = FleetDealer.decode("")
        #expect(read.scopesTotal == 0 && read.errors.isEmpty && read.settled.isEmpty)
    }

    /// The phases are the store's names: a claim taken by a worker of one
    /// release is the same claim for a worker of the next.
    @Test func phasesKeepTheirStoredNames() {
        #expect(FleetPhase.allCases.map(\.rawValue) == ["scopes", "follow-ups", "applied", "finish", "run"])
        #expect(FleetDealer.closingScope(.finish) == "#finish")
        #expect(FleetPhase.allCases.filter(\.crawlsAScope) == [.scopes, .followUps])
    }
}
