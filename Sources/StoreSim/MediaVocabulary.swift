/// Word lists and genre trees for music, movies, apps and books.
///
/// As with the podcast words, they hold what breaks naive code (non-ASCII,
/// `&`, quotes, markup-like text), and a few search-friendly words ("love",
/// "night", "star", "news", "music", "history", "daily") recur across kinds
/// so one term matches a useful share of every catalog.
enum MediaVocabulary {
    // MARK: Music

    static let songWords = [
        "Love", "Night", "Star", "Love", "Night", "Star", "Fire", "Summer", "Heart", "Dream", "City", "Rain", "Gold",
        "Café", "Niño", "坂本", "Ocean", "Daily", "Music", "Ghost", "Neon", "Paper", "River", "Echo",
    ]
    static let songForms = ["", "", "", " (Remix)", " (Live)", " - Acoustic", " [Radio Edit]", " (feat. Zoë)", " <Demo>"]
    static let albumForms = ["", "", " (Deluxe Edition)", " - EP", " (Remastered)", " - Single", " & Friends"]
    static let bandWords = [
        "The Midnight", "Neon Trees", "Café Tacvba", "Sigur Rós", "Björk", "坂本 Ryuichi", "Los Niños", "AWOLNATION",
        "Zoë & The Notes", "Echo Park", "Paper Kites", "\"Quiet\" Riot Girls", "Red Hot", "Blue Door",
    ]
    static let labels = ["Roc-A-Fella Records, LLC", "Sub Pop", "坂本 Music", "Niño Discos", "XL Recordings",
                         "Island Records & Co.", "Atlantic Recording Corporation"]

    /// The music genre tree (id 34): (id, name, subgenres).
    static let musicGenres: [(String, String, [(String, String)])] = [
        ("2", "Blues", []), ("3", "Comedy", []), ("4", "Children's Music", []), ("5", "Classical", []),
        ("6", "Country", []), ("7", "Electronic", []), ("8", "Holiday", []), ("10", "Singer/Songwriter", []),
        ("11", "Jazz", []), ("12", "Latin", []), ("14", "Pop", []), ("15", "R&B/Soul", []), ("16", "Soundtrack", []),
        ("17", "Dance", []),
        ("18", "Hip-Hop/Rap", [("1068", "Alternative Rap"), ("1073", "Underground Rap")]),
        ("19", "World", []),
        ("20", "Alternative", [("1001", "College Rock"), ("1002", "Goth Rock"), ("1003", "Grunge"), ("1004", "Indie Rock"),
                               ("1005", "New Wave"), ("1006", "Punk")]),
        ("21", "Rock", [("1144", "Adult Alternative"), ("1147", "Arena Rock"), ("1152", "Hard Rock"), ("1153", "Metal")]),
        ("22", "Christian & Gospel", []), ("24", "Reggae", []), ("27", "J-Pop", []), ("51", "K-Pop", []),
        ("1122", "Brazilian", []),
    ]

    // MARK: Movies

    static let movieWords = [
        "Star", "Night", "Love", "History", "Star", "Night", "Empire", "Return", "Shadow", "Café", "Niño", "坂本",
        "Galaxy", "Secret", "Winter", "Daily", "News", "Last", "Ghost", "River",
    ]
    static let movieForms = ["The %@", "%@ Rising", "Return of the %@", "%@: Part II", "A %@ Story", "%@ & Me",
                             "\"%@\"", "%@ <Director's Cut>"]
    static let directors = ["J.J. Abrams", "Agnès Varda", "Bong Joon-ho", "Céline Sciamma", "坂本 Hiro", "Guillermo del Toro",
                            "Greta Gerwig", "Iñárritu", "Zoë Kravitz", "Denis Villeneuve"]
    static let studios = ["Buena Vista Home Entertainment, Inc.", "Universal Studios", "Warner Bros. Entertainment Inc.",
                          "坂本 Pictures", "Niño Films", "A24 & Friends"]
    static let ratings = ["G", "PG", "PG", "PG-13", "PG-13", "R", "NR", "Unrated"]

    /// The movie genre tree (id 33).
    static let movieGenres: [(String, String, [(String, String)])] = [
        ("4401", "Action & Adventure", []), ("4402", "Anime", []), ("4403", "Classics", []), ("4404", "Comedy", []),
        ("4405", "Documentary", []), ("4406", "Drama", []), ("4407", "Foreign", []), ("4408", "Horror", []),
        ("4409", "Independent", []), ("4410", "Kids & Family", []), ("4411", "Musicals", []), ("4412", "Romance", []),
        ("4413", "Sci-Fi & Fantasy", []), ("4414", "Short Films", []), ("4416", "Thriller", []), ("4418", "Western", []),
    ]

    // MARK: Apps

    static let appWords = [
        "News", "Music", "Daily", "Star", "Love", "Photo", "Budget", "Weather", "Café", "Niño", "坂本", "Night",
        "Fit", "Notes", "Travel", "Chat", "Scan", "Maps", "Recipes", "History",
    ]
    static let appForms = ["%@", "%@ Pro", "%@+", "My %@", "%@ & More", "%@: Tracker", "%@ Lite", "\"%@\" HD"]
    static let developers = ["Yelp, Inc.", "Niño Labs", "坂本 Software", "Café Apps LLC", "Zoë & Co", "Blue Door GmbH",
                             "Northwind Apps", "Gamma Ray Studios"]
    static let devices = ["iPhone5s-iPhone5s", "iPadAir-iPadAir", "iPhone6-iPhone6", "iPhone6Plus-iPhone6Plus",
                          "iPadAir2-iPadAir2", "iPhoneX-iPhoneX", "iPhone11-iPhone11", "Watch4-Watch4", "iPadPro-iPadPro"]
    static let advisories = ["Infrequent/Mild Cartoon or Fantasy Violence", "Infrequent/Mild Profanity or Crude Humor",
                             "Unrestricted Web Access", "Infrequent/Mild Mature/Suggestive Themes",
                             "Frequent/Intense Alcohol, Tobacco, or Drug Use or References"]
    static let languages = ["EN", "FR", "DE", "JA", "KO", "ES", "PT", "ZH", "IT", "NL", "SV"]
    static let releaseNotes = [
        "Bug fixes and performance improvements.",
        "• New: dark mode\n• Fixed: crash on launch\n\nThanks for using the app!",
        "We got rid of some bugs — and added a café finder ☕️.",
        "<b>Big update!</b> Redesigned home screen & faster sync.",
        "坂本's team fixed the calendar. Zoë approved.",
    ]

    /// The App Store genre tree (id 36); rows use the top-level genres, the
    /// Games subgenres exist for the tree and its charts only.
    static let appGenres: [(String, String, [(String, String)])] = [
        ("6000", "Business", []), ("6001", "Weather", []), ("6002", "Utilities", []), ("6003", "Travel", []),
        ("6004", "Sports", []), ("6005", "Social Networking", []), ("6006", "Reference", []), ("6007", "Productivity", []),
        ("6008", "Photo & Video", []), ("6009", "News", []), ("6011", "Music", []), ("6012", "Lifestyle", []),
        ("6013", "Health & Fitness", []),
        ("6014", "Games", [("7001", "Action"), ("7002", "Adventure"), ("7003", "Arcade"), ("7009", "Family"),
                           ("7012", "Puzzle"), ("7017", "Strategy")]),
        ("6015", "Finance", []), ("6016", "Entertainment", []), ("6017", "Education", []), ("6023", "Food & Drink", []),
        ("6024", "Shopping", []),
    ]

    // MARK: Books

    static let bookWords = [
        "Love", "Night", "Star", "History", "Love", "Night", "Star", "Light", "Jedi", "Garden", "Café", "Niño", "坂本",
        "Empire", "Secret", "Daily", "Music", "Ocean", "Winter", "War",
    ]
    static let bookForms = ["The %@", "%@ (Unabridged)", "A History of %@", "%@: A Novel", "The %@ & the Sea",
                            "\"%@\"", "%@ <Book 2>"]
    static let authors = ["Charles Soule", "Zoë Heller", "Gabriel García Márquez", "坂本 Haruki", "Chloé Delaume",
                          "Toni Morrison", "Iñigo Ruiz", "Ursula K. Le Guin", "Olu Okafor"]
    static let audiobookGenres = ["Sci-Fi & Fantasy", "Mysteries & Thrillers", "Biographies & Memoirs", "History",
                                  "Fiction", "Self-Development"]
    /// E-book genres: (id, name) under Books (38).
    static let ebookGenres = [("9031", "Fiction & Literature"), ("9032", "Mysteries & Thrillers"), ("9015", "History"),
                              ("9020", "Romance"), ("9007", "Arts & Entertainment"), ("9019", "Sci-Fi & Fantasy")]
    static let descriptionParts = [
        "<b>#1 <i>NEW YORK TIMES</i> BESTSELLER</b><br />", "It is a golden age.<br /><br />",
        "A story of love &amp; loss, told over one long night.\n", "Zoë and 坂本 meet in a café in São Paulo. ",
        "&#xa0;Long before the Empire… ", "“Unputdownable.” — The Daily Review\n", "<p>Part one of a trilogy.</p>",
    ]
}
