/// Word lists the simulated names are built from.
///
/// They deliberately contain what breaks naive code: non-ASCII letters
/// ("Café", "Niño", "坂本"), `&`, double quotes, apostrophes and markup-like
/// text (`<Live>`). A few search-friendly words ("news", "music", "history",
/// "tech", "comedy", "science", "daily", "show") recur so that a search term
/// matches a useful subset (roughly 5–40%) of the catalog; the search
/// endpoint tests check those proportions.
enum Vocabulary {
    // MARK: Podcasts

    /// Topics; the search words appear twice so each matches more often.
    static let topics = [
        "News", "Music", "History", "Tech", "Comedy", "Science",
        "News", "Music", "History", "Tech", "Comedy", "Science",
        "Sports", "Business", "Film", "Health", "Faith", "Travel", "Food", "Design",
        "Politics", "Culture", "Money", "Gaming", "Parenting", "Books", "Nature", "Crime",
    ]

    static let showForms = [
        "Show", "Show", "Podcast", "Hour", "Radio", "Daily", "Weekly", "Briefing",
        "Sessions", "Talk", "Report", "Hour",
    ]

    static let adjectives = [
        "Daily", "Late Night", "Morning", "Weekend", "Modern", "Little", "Big", "Curious", "Everyday", "Quiet",
    ]

    static let hosts = [
        "Niño García", "Zoë Adams", "Ana Núñez", "Björn Ekström", "Chloé Martin", "坂本 Ken", "Dave O'Brien",
        "Priya Shah", "Marcus Webb", "Léa Dubois", "Tomás Ruiz", "Hana Kim",
    ]

    static let quotes = ["Unfiltered", "Off the Record", "Real Talk", "No Filter", "Between Us", "Say It Loud"]

    static let collectiveNouns = ["Tales", "Stories", "Secrets", "Voices", "Notes", "Echoes", "Letters"]

    static let places = ["Café", "Zürich", "Niño", "坂本", "Brooklyn", "Kyoto", "São Paulo", "Reykjavík", "Austin", "Lagos"]

    static let subtitles = [
        "Conversations with Friends", "A Weekly Journey", "Straight Talk & Good Company", "Stories from 坂本",
        "Notes from the Café",
    ]

    static let firstNames = ["Ana", "Björn", "Chloé", "Dave", "Émile", "Farah", "George", "Hana", "Iñigo", "Jun",
                             "Kate", "Lars", "Maya", "Noah", "Olu", "Pia"]
    static let lastNames = ["García", "Ekström", "Martin", "O'Brien", "Dubois", "Shah", "Webb", "Kim", "坂本",
                            "Núñez", "Smith", "Rossi", "Okafor", "Nakamura"]
    static let organizations = [
        "Café Audio", "Niño Studios", "坂本 Productions", "Blue Door", "Northwind Radio", "Smith & Co",
        "Lighthouse Podcasts", "Quiet Hours Network", "Gamma Ray", "\"The Collective\"", "Parcel Audio",
        "Open Window", "Red Kite", "Harbor Sound",
    ]
    static let organizationSuffixes = ["", " Media", " Network", " Audio"]

    /// The podcast genre tree of the iTunes genres service (id 26, 2018 taxonomy),
    /// as (id, name, parent id, parent name); top-level genres have no parent.
    static let podcastGenres: [PodcastGenre] = {
        let tree: [(String, String, [(String, String)])] = [
            ("1301", "Arts", [("1402", "Design"), ("1459", "Fashion & Beauty"), ("1306", "Food"), ("1401", "Literature"),
                              ("1405", "Performing Arts"), ("1406", "Visual Arts")]),
            ("1321", "Business", [("1471", "Business News"), ("1410", "Careers"), ("1412", "Investing"),
                                  ("1413", "Management & Marketing"), ("1472", "Shopping")]),
            ("1303", "Comedy", []),
            ("1304", "Education", [("1468", "Educational Technology"), ("1416", "Higher Education"), ("1415", "K-12"),
                                   ("1469", "Language Courses"), ("1470", "Training")]),
            ("1323", "Games & Hobbies", [("1454", "Automotive"), ("1455", "Aviation"), ("1460", "Hobbies"),
                                         ("1461", "Other Games"), ("1404", "Video Games")]),
            ("1325", "Government & Organizations", [("1475", "Local"), ("1473", "National"), ("1476", "Non-Profit"),
                                                    ("1474", "Regional")]),
            ("1307", "Health", [("1481", "Alternative Health"), ("1417", "Fitness & Nutrition"), ("1420", "Self-Help"),
                                ("1421", "Sexuality")]),
            ("1305", "Kids & Family", []),
            ("1310", "Music", []),
            ("1311", "News & Politics", []),
            ("1314", "Religion & Spirituality", [("1438", "Buddhism"), ("1439", "Christianity"), ("1463", "Hinduism"),
                                                 ("1440", "Islam"), ("1441", "Judaism"), ("1464", "Other"),
                                                 ("1444", "Spirituality")]),
            ("1315", "Science & Medicine", [("1478", "Medicine"), ("1477", "Natural Sciences"), ("1479", "Social Sciences")]),
            ("1324", "Society & Culture", [("1462", "History"), ("1302", "Personal Journals"), ("1443", "Philosophy"),
                                           ("1320", "Places & Travel")]),
            ("1316", "Sports & Recreation", [("1467", "Amateur"), ("1466", "College & High School"), ("1456", "Outdoor"),
                                             ("1465", "Professional")]),
            ("1309", "TV & Film", []),
            ("1318", "Technology", [("1446", "Gadgets"), ("1450", "Podcasting"), ("1480", "Software How-To"),
                                    ("1448", "Tech News")]),
        ]
        var genres: [PodcastGenre] = []
        for (id, name, children) in tree {
            genres.append(PodcastGenre(id: id, name: name, parent: nil))
            for (childID, childName) in children {
                genres.append(PodcastGenre(id: childID, name: childName, parent: (id, name)))
            }
        }
        return genres
    }()

    // MARK: Marketplace

    static let productItems = [
        "텀블러", "에어팟", "팥빙수", "우유병 텀블러", "키보드", "머그컵", "Mug", "Keyboard", "Backpack", "Café Latte Beans",
        "Niño Toy Car", "坂本 Tea Set", "Notebook", "Desk Lamp", "Sneakers", "Headphones", "Phone Case", "Candle",
    ]
    static let productAdjectives = [
        "", "", "New ", "Classic ", "Mini ", "Pro ", "빈티지 ", "Limited ", "\"Deluxe\" ", "Tom & Jerry ", "<Live> Edition ",
        "한정판 ",
    ]
    static let descriptionSentences = [
        "수량이 얼마 안 남았어요!", "구매를 서두르세요😗", "Ships in 2–3 days.", "Handmade in 坂本's workshop.",
        "Perfect for the café & home.", "Contains <small> parts; not for children under 3.",
        "\"Best seller\" three years running.", "세척이 쉬워요.", "Niño-approved.", "Limited stock.",
    ]
    static let vendorStems = ["red", "safari", "neph", "soobak", "dacodaco", "OmarketTeam", "mint", "yagom", "coda", "ho"]
}

/// One node of the podcast genre tree.
struct PodcastGenre: Sendable {
    let id: String
    let name: String
    let parent: (id: String, name: String)?

    /// `genreIds` as iTunes sends them: the genre, "26" (Podcasts), then its parent.
    var genreIds: [String] {
        [id, "26"] + (parent.map { [$0.id] } ?? [])
    }

    /// `genres`: the names in the same order.
    var genreNames: [String] {
        [name, "Podcasts"] + (parent.map { [$0.name] } ?? [])
    }
}
