import Catalog
import Testing

/// Every error names where it happened and what to do, and says nothing
/// that is untrue for the case that raised it.
@Suite struct ErrorMessageTests {
    struct Case: Sendable, CustomStringConvertible {
        var error: StoreSyncError
        var code: StoreSyncError.Code
        var place: String
        var remedy: String
        var description: String { error.code.name }
    }

    static let cases: [Case] = [
        Case(error: .invalidJob(file: "jobs/x.yml", issues: [JobFileIssue(file: "jobs/x.yml", line: 3, column: 5, keyPath: "sources[0].kind", message: "unknown")]),
             code: .invalidJob, place: "jobs/x.yml", remedy: "storesync validate jobs/x.yml"),
        Case(error: .fetchFailed(url: "https://itunes.apple.com/search?term=a", reason: "HTTP 503"),
             code: .fetchFailed, place: "https://itunes.apple.com/search?term=a", remedy: "next run fetches it again"),
        Case(error: .gone(url: "https://f.example/feed.xml", status: 410),
             code: .gone, place: "https://f.example/feed.xml", remedy: "Check the address"),
        Case(error: .malformedPage(url: "https://m.example/api/products?page_no=2", reason: "not valid JSON"),
             code: .malformedPage, place: "https://m.example/api/products?page_no=2", remedy: "changed nothing stored"),
        Case(error: .malformedFile(path: "/data/rows.csv", line: 7, column: 9, reason: "unexpected quote"),
             code: .malformedPage, place: "/data/rows.csv:7:9", remedy: "Fix the file at that line"),
        Case(error: .inputUnreadable(path: "/data/rows.csv", reason: "No such file"),
             code: .inputUnreadable, place: "/data/rows.csv", remedy: "Check that the file exists"),
        Case(error: .throttled(url: "https://itunes.apple.com/search", host: "itunes.apple.com", retryAfterSeconds: 120),
             code: .throttled, place: "https://itunes.apple.com/search", remedy: "Lower http.requestsPerMinute for itunes.apple.com"),
        Case(error: .storage(path: "/var/lib/s.sqlite", reason: "disk I/O error", remedy: "Free some space"),
             code: .storage, place: "/var/lib/s.sqlite", remedy: "Free some space"),
        Case(error: .locked(store: "/var/lib/s.sqlite", holder: "pid 7"),
             code: .locked, place: "/var/lib/s.sqlite", remedy: "Try again when it has finished"),
        Case(error: .exportFailed(path: "/srv/out/feeds/a.xml", reason: "disk full"),
             code: .exportFailed, place: "/srv/out/feeds/a.xml", remedy: "previous file was left intact"),
    ]

    @Test(arguments: cases)
    func namesItsPlaceAndItsRemedy(_ example: Case) {
        let text = example.error.description
        #expect(example.error.code == example.code)
        #expect(text.contains(example.place), "\(text)")
        #expect(text.contains(example.remedy), "\(text)")
        // One remedy, stated once.
        #expect(text.components(separatedBy: example.remedy).count == 2, "\(text)")
    }

    @Test func theThrottledRemedyNamesTheHostLimitThatExists() {
        let text = StoreSyncError.throttled(url: "https://a.example/x", host: "a.example", retryAfterSeconds: nil).description
        #expect(!text.contains("source's rate limit"))
        #expect(text.contains("requestsPerMinute for a.example"))
    }

    @Test func theCauseIsKeptAndShown() {
        struct DiskFull: Error, Sendable, CustomStringConvertible { var description: String { "ENOSPC" } }
        let error = StoreSyncError.exportFailed(path: "/o/a.csv", reason: "cannot write", cause: DiskFull())
        #expect(error.cause is DiskFull)
        #expect(error.description.contains("ENOSPC"))
    }

    /// A wrapper whose message already quotes its cause (a store or export
    /// error made from the error underneath) says it once, and still carries it.
    @Test func aCauseTheMessageQuotesIsSaidOnce() {
        struct Locked: Error, Sendable, CustomStringConvertible { var description: String { "SQLite error 5: database is locked" } }
        let error = StoreSyncError.storage(path: "/s.sqlite", reason: "\(Locked())", cause: Locked())
        #expect(error.cause is Locked)
        #expect(error.description.components(separatedBy: "database is locked").count == 2, "\(error.description)")
    }

    @Test func anInvalidJobListsEveryProblemWithItsLine() {
        let error = StoreSyncError.invalidJob(file: "j.yml", issues: [
            JobFileIssue(file: "j.yml", line: 2, column: 1, keyPath: "store", message: "is required"),
            JobFileIssue(file: "j.yml", line: 9, column: 3, keyPath: "sources[1].kind", message: "unknown source kind"),
        ])
        #expect(error.description.contains("j.yml:2:1: store: is required"))
        #expect(error.description.contains("j.yml:9:3: sources[1].kind: unknown source kind"))
    }
}
