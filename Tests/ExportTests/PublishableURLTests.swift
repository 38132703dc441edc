import Export
import Testing

/// The link and character rules every writer shares.
@Suite struct PublishableURLTests {
    @Test(arguments: [
        "https://example.com/feed.xml", "http://example.com", "HTTPS://Example.com/a?b=c#d", "http://user@host:8080/p",
        "https://[::1]/x", "https://例え.jp/パス",
    ])
    func httpLinksArePublished(url: String) {
        #expect(PublishableURL.http(url) == url)
    }

    @Test(arguments: [
        "javascript:alert(1)", " javascript:alert(1)", "JavaScript:alert(1)", "data:text/html,<b>x</b>", "file:///etc/passwd",
        "vbscript:msgbox", "/relative/junk.jpg", "example.com/feed.xml", "//example.com/x", "http://", "https:///path",
        "http://exa mple.com/x", "https://example.com/a b", "https://example.com/\u{0}", "https://example.com/\t",
        "https://example.com/\u{202E}gpj.exe", "http://@:80/", "", "ftp://example.com/x", "http:example.com",
    ])
    func everythingElseIsNot(url: String) {
        #expect(PublishableURL.http(url) == nil)
    }

    @Test func exportTextRemovesWhatNoExportWrites() {
        #expect(ExportText.clean("A\u{0}B\u{1}C\u{1B}D\u{FFFE}E\u{FFFF}F\tG\nH\rI\u{7F}J\u{85}K") == "ABCDEF\tG\nH\rI\u{7F}J\u{85}K")
        #expect(ExportText.clean("plain") == "plain")
        #expect(ExportText.clean(.object(["k\u{0}": .array([.string("a\u{1}b"), .int(1)])])) == .object(["k": .array([.string("ab"), .int(1)])]))
    }
}
