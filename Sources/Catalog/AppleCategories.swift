import Foundation

/// Apple Podcasts' category list (the one in force since August 2019), and
/// the way any genre, current or not, is filed under it.
///
/// A feed's `itunes:category` must name a category on this list, a
/// subcategory only inside its own parent. The iTunes genre tree and older
/// feeds still use the names from before 2019 ("Games & Hobbies", "Tech
/// News" under Technology), and charts file shows under subgenres; Apple
/// rejects or ignores those. ``path(for:)`` maps them: a name on the list
/// keeps its place, a renamed top level takes its new name, and anything
/// else goes to its nearest listed ancestor.
public enum AppleCategories {
    /// A top-level category, its iTunes genre id, and its subcategories (name, id).
    public struct Category: Sendable {
        public let name: String
        public let id: String
        public let subcategories: [(name: String, id: String)]
    }

    /// The list, in Apple's order.
    public static let all: [Category] = [
        .init(name: "Arts", id: "1301", subcategories: [
            ("Books", "1482"), ("Design", "1402"), ("Fashion & Beauty", "1459"), ("Food", "1306"),
            ("Performing Arts", "1405"), ("Visual Arts", "1406")]),
        .init(name: "Business", id: "1321", subcategories: [
            ("Careers", "1410"), ("Entrepreneurship", "1493"), ("Investing", "1412"), ("Management", "1491"),
            ("Marketing", "1492"), ("Non-Profit", "1494")]),
        .init(name: "Comedy", id: "1303", subcategories: [
            ("Comedy Interviews", "1496"), ("Improv", "1495"), ("Stand-Up", "1497")]),
        .init(name: "Education", id: "1304", subcategories: [
            ("Courses", "1501"), ("How To", "1499"), ("Language Learning", "1498"), ("Self-Improvement", "1500")]),
        .init(name: "Fiction", id: "1483", subcategories: [
            ("Comedy Fiction", "1486"), ("Drama", "1484"), ("Science Fiction", "1485")]),
        .init(name: "Government", id: "1511", subcategories: []),
        .init(name: "History", id: "1487", subcategories: []),
        .init(name: "Health & Fitness", id: "1512", subcategories: [
            ("Alternative Health", "1513"), ("Fitness", "1514"), ("Medicine", "1518"), ("Mental Health", "1517"),
            ("Nutrition", "1515"), ("Sexuality", "1516")]),
        .init(name: "Kids & Family", id: "1305", subcategories: [
            ("Education for Kids", "1519"), ("Parenting", "1521"), ("Pets & Animals", "1522"), ("Stories for Kids", "1520")]),
        .init(name: "Leisure", id: "1502", subcategories: [
            ("Animation & Manga", "1510"), ("Automotive", "1503"), ("Aviation", "1504"), ("Crafts", "1505"),
            ("Games", "1506"), ("Hobbies", "1507"), ("Home & Garden", "1508"), ("Video Games", "1509")]),
        .init(name: "Music", id: "1310", subcategories: [
            ("Music Commentary", "1523"), ("Music History", "1524"), ("Music Interviews", "1525")]),
        .init(name: "News", id: "1489", subcategories: [
            ("Business News", "1490"), ("Daily News", "1526"), ("Entertainment News", "1531"),
            ("News Commentary", "1530"), ("Politics", "1527"), ("Sports News", "1529"), ("Tech News", "1528")]),
        .init(name: "Religion & Spirituality", id: "1314", subcategories: [
            ("Buddhism", "1438"), ("Christianity", "1439"), ("Hinduism", "1463"), ("Islam", "1440"),
            ("Judaism", "1441"), ("Religion", "1532"), ("Spirituality", "1444")]),
        .init(name: "Science", id: "1533", subcategories: [
            ("Astronomy", "1538"), ("Chemistry", "1539"), ("Earth Sciences", "1540"), ("Life Sciences", "1541"),
            ("Mathematics", "1536"), ("Natural Sciences", "1534"), ("Nature", "1535"), ("Physics", "1542"),
            ("Social Sciences", "1537")]),
        .init(name: "Society & Culture", id: "1324", subcategories: [
            ("Documentary", "1543"), ("Personal Journals", "1302"), ("Philosophy", "1443"),
            ("Places & Travel", "1320"), ("Relationships", "1544")]),
        .init(name: "Sports", id: "1545", subcategories: [
            ("Baseball", "1546"), ("Basketball", "1547"), ("Cricket", "1548"), ("Fantasy Sports", "1549"),
            ("Football", "1550"), ("Golf", "1551"), ("Hockey", "1552"), ("Rugby", "1553"), ("Running", "1554"),
            ("Soccer", "1555"), ("Swimming", "1556"), ("Tennis", "1557"), ("Volleyball", "1558"),
            ("Wilderness", "1559"), ("Wrestling", "1560")]),
        .init(name: "Technology", id: "1318", subcategories: []),
        .init(name: "True Crime", id: "1488", subcategories: []),
        .init(name: "TV & Film", id: "1309", subcategories: [
            ("After Shows", "1562"), ("Film History", "1564"), ("Film Interviews", "1565"), ("Film Reviews", "1563"),
            ("TV Reviews", "1561")]),
    ]

    /// Top-level categories of the list before 2019, by their successor.
    /// Their subgenres are matched by name inside the successor.
    public static let renamedTopLevel: [String: String] = [
        "games & hobbies": "Leisure", "government & organizations": "Government", "health": "Health & Fitness",
        "news & politics": "News", "science & medicine": "Science", "sports & recreation": "Sports",
    ]

    /// Is `path` (top level, then at most one subcategory) exactly on the list?
    public static func isListed(_ path: [String]) -> Bool {
        guard let first = path.first, (1...2).contains(path.count),
              let top = all.first(where: { $0.name == first }) else { return false }
        return path.count == 1 || top.subcategories.contains { $0.name == path[1] }
    }

    /// The listed category path for a genre given as names from its top level
    /// down (`["Technology", "Tech News"]`; a leading store root such as
    /// "Podcasts" is ignored), or nil when nothing on its path is listed.
    ///
    /// Names compare without case and with `and`/`&`, `-`/space told apart
    /// from nothing; a listed subcategory keeps its parent
    /// (`["Arts", "Food"]`), a renamed top level takes its new name and keeps
    /// a subgenre that exists under it (`["Games & Hobbies", "Video Games"]`
    /// → `["Leisure", "Video Games"]`), and a subgenre not listed under its
    /// parent is filed under the parent (`["Technology", "Tech News"]` →
    /// `["Technology"]`: its nearest listed ancestor).
    public static func path(for genrePath: [String]) -> [String]? {
        var names = genrePath.map(normalized).filter { !$0.isEmpty }
        if let first = names.first, storeRoots.contains(first) { names.removeFirst() }
        guard !names.isEmpty else { return nil }
        // Walk down from the top: the deepest listed ancestor wins.
        var result: [String]?
        guard let top = topLevel(named: names[0]) else {
            // An orphan subgenre name, written as if it were a top level.
            return names.count == 1 ? subcategoryAnywhere(named: names[0]) : path(for: Array(names.dropFirst()))
        }
        result = [top.name]
        if names.count >= 2, let sub = top.subcategories.first(where: { normalized($0.name) == names[1] }) {
            result = [top.name, sub.name]
        }
        return result
    }

    /// The listed path for an iTunes genre id, if the id is on the list.
    public static func path(forGenreID id: String) -> [String]? {
        for top in all {
            if top.id == id { return [top.name] }
            if let sub = top.subcategories.first(where: { $0.id == id }) { return [top.name, sub.name] }
        }
        return nil
    }

    private static let storeRoots: Set<String> = ["podcasts", "podcast"]

    private static func topLevel(named name: String) -> Category? {
        if let top = all.first(where: { normalized($0.name) == name }) { return top }
        if let renamed = renamedTopLevel[name] { return all.first { $0.name == renamed } }
        return nil
    }

    /// A name that is a subcategory under exactly one top level.
    private static func subcategoryAnywhere(named name: String) -> [String]? {
        let matches = all.flatMap { top in top.subcategories.filter { normalized($0.name) == name }.map { [top.name, $0.name] } }
        return matches.count == 1 ? matches[0] : nil
    }

    static func normalized(_ name: String) -> String {
        var text = name.lowercased().replacingOccurrences(of: " and ", with: " & ")
        text = text.replacingOccurrences(of: "-", with: " ")
        return text.split(whereSeparator: { $0 == " " || $0 == "\t" }).joined(separator: " ")
    }
}
