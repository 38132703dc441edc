import Catalog
import Testing

@Suite struct PathTemplateTests {
    @Test(arguments: [
        ("Kids & Family", "Kids-Family"),
        ("../../etc/passwd", "etc-passwd"),
        ("..", "unknown"),
        ("", "unknown"),
        (".hidden", "hidden"),
        ("Café 坂本", "Café-坂本"),
        ("a/b\\c:d", "a-b-c-d"),
    ])
    func valuesBecomeSafeFileNameFragments(value: String, expected: String) {
        #expect(PathTemplate.sanitize(value) == expected)
    }

    @Test func templatesExpandInsideTheFolder() throws {
        let url = try PathTemplate.resolve("feeds/{genre}-{date}.xml", values: ["genre": "../../../etc/cron.d/x", "date": "2026-11-22"],
                                           inside: "/srv/out")
        #expect(url.path == "/srv/out/feeds/etc-cron.d-x-2026-11-22.xml")
    }

    @Test func aTemplateThatLeavesTheFolderIsRefused() {
        #expect(throws: StoreSyncError.self) { try PathTemplate.resolve("../outside.xml", values: [:], inside: "/srv/out") }
        #expect(throws: StoreSyncError.self) { try PathTemplate.resolve("a/../../outside.xml", values: [:], inside: "/srv/out") }
    }

    @Test func variablesAreFound() {
        #expect(PathTemplate.variables(in: "feeds/{genre}/{country}-{date}.xml") == ["genre", "country", "date"])
        #expect(PathTemplate.variables(in: "plain.xml").isEmpty)
    }
}
