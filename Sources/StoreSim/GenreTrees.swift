/// The iTunes genres service (`MZStoreServices.woa/ws/genres?id=`): four
/// trees keyed by id strings (26 Podcasts, 34 Music, 33 Movies, 36 App Store).
///
/// The taxonomy changes at most twice in a world's life, on seeded nights:
/// the podcast tree gains the 2019 top-level genres Fiction (1483) and True
/// Crime (1488) on ``additionNight`` (when the churn adds records), and the
/// App Store's Games › Family (7009) is renamed "Family & Kids" on
/// ``renameNight`` (when the churn changes records). No catalog row uses
/// either genre, so their rows never change with the taxonomy.
///
/// A `"genre"` record is one node without its `subgenres` member (so a
/// parent's record does not change when a child is added), keyed by its id.
struct GenreTrees: Sendable {
    /// The fixed origin of the feed and chart URLs inside genre bodies: a
    /// client maps `*.storesim.test` to the simulator's address.
    static var origin: String { World.itunesBaseURL }

    struct Node: Sendable {
        var id: String
        var name: String
        var parent: String?
        var root: String
        /// Slugs from the root down, for the genre page URL.
        var path: [String]
        var children: [String]
        /// First night the node exists.
        var born: Int = 1
    }

    static let roots: [(id: String, name: String, slug: String, mt: Int)] = [
        ("26", "Podcasts", "podcasts", 2), ("34", "Music", "music", 1), ("33", "Movies", "movies", 6),
        ("36", "App Store", "ios", 8),
    ]

    /// The new podcast genres of the taxonomy change.
    static let addedPodcastGenres = [("1483", "Fiction"), ("1488", "True Crime")]
    static let renamedID = "7009"
    static let renamedName = "Family & Kids"

    let nodes: [String: Node]
    let additionNight: Int?
    let renameNight: Int?

    init(seed: UInt64, churn: Churn) {
        additionNight = churn.added > 0 ? 2 + Int(StableRandom.hash(seed, 0x4745_4E52, 1) % 5) : nil
        renameNight = churn.changed > 0 ? 2 + Int(StableRandom.hash(seed, 0x4745_4E52, 2) % 5) : nil
        var nodes: [String: Node] = [:]
        func add(_ root: (id: String, name: String, slug: String, mt: Int),
                 _ tree: [(String, String, [(String, String)])]) {
            var rootNode = Node(id: root.id, name: root.name, parent: nil, root: root.id, path: [root.slug], children: [])
            for (id, name, children) in tree {
                var node = Node(id: id, name: name, parent: root.id, root: root.id,
                                path: [root.slug, PodcastCatalog.slug(name)], children: [])
                for (childID, childName) in children {
                    nodes[childID] = Node(id: childID, name: childName, parent: id, root: root.id,
                                          path: node.path + [PodcastCatalog.slug(childName)], children: [])
                    node.children.append(childID)
                }
                nodes[id] = node
                rootNode.children.append(id)
            }
            nodes[root.id] = rootNode
        }
        var podcastTree: [(String, String, [(String, String)])] = []
        for genre in Vocabulary.podcastGenres where genre.parent == nil {
            let children = Vocabulary.podcastGenres.filter { $0.parent?.id == genre.id }.map { ($0.id, $0.name) }
            podcastTree.append((genre.id, genre.name, children))
        }
        add(Self.roots[0], podcastTree)
        add(Self.roots[1], MediaVocabulary.musicGenres)
        add(Self.roots[2], MediaVocabulary.movieGenres)
        add(Self.roots[3], MediaVocabulary.appGenres)
        if let night = additionNight {
            for (id, name) in Self.addedPodcastGenres {
                nodes[id] = Node(id: id, name: name, parent: "26", root: "26",
                                 path: ["podcasts", PodcastCatalog.slug(name)], children: [], born: night)
                nodes["26"]?.children.append(id)
            }
        }
        self.nodes = nodes
    }

    func exists(_ id: String, night: Int) -> Bool {
        guard night >= 1, let node = nodes[id] else { return false }
        return node.born <= night
    }

    /// Every node id alive on `night`.
    func ids(night: Int) -> [String] {
        nodes.values.filter { night >= 1 && $0.born <= night }.map(\.id).sorted()
    }

    func name(_ id: String, night: Int) -> String? {
        guard let node = nodes[id] else { return nil }
        if id == Self.renamedID, let renamed = renameNight, night >= renamed { return Self.renamedName }
        return node.name
    }

    /// Ground truth for genre records.
    func diff(night: Int) -> WorldDiff {
        guard night >= 1 else { return WorldDiff() }
        var diff = WorldDiff()
        for node in nodes.values where node.born == night { diff.added.insert(node.id) }
        if night > 1, night == renameNight, exists(Self.renamedID, night: night) { diff.changed.insert(Self.renamedID) }
        return diff
    }

    private static let rssNames: [String: [(key: String, path: String)]] = [
        "26": [("topVideoPodcastEpisodes", "topvideopodcastepisodes"), ("topAudioPodcasts", "topaudiopodcasts"),
               ("topVideoPodcasts", "topvideopodcasts"), ("topPodcasts", "toppodcasts"),
               ("topAudioPodcastEpisodes", "topaudiopodcastepisodes"), ("topPodcastEpisodes", "toppodcastepisodes")],
        "34": [("topAlbums", "topalbums"), ("topSongs", "topsongs"), ("topMusicVideos", "topmusicvideos")],
        "33": [("topMovies", "topmovies"), ("topVideoRentals", "topvideorentals")],
        "36": [("topFreeApplications", "topfreeapplications"), ("topPaidApplications", "toppaidapplications"),
               ("topGrossingApplications", "topgrossingapplications"),
               ("topFreeIpadApplications", "topfreeipadapplications"),
               ("topPaidIpadApplications", "toppaidipadapplications"),
               ("topGrossingIpadApplications", "topgrossingipadapplications")],
    ]

    private static let chartNames: [String: [(key: String, name: String)]] = [
        "26": [("videoPodcastEpisodes", "VideoPodcastEpisodes"), ("podcasts", "Podcasts"),
               ("audioPodcastEpisodes", "AudioPodcastEpisodes"), ("audioPodcasts", "AudioPodcasts"),
               ("podcastEpisodes", "PodcastEpisodes"), ("videoPodcasts", "VideoPodcasts")],
        "34": [("albums", "Albums"), ("songs", "Songs"), ("musicVideos", "MusicVideos")],
        "33": [("movies", "Movies"), ("videoRentals", "VideoRentals")],
        "36": [("freeApplications", "FreeApplications"), ("paidApplications", "PaidApplications"),
               ("grossingApplications", "GrossingApplications")],
    ]

    /// Node `id` on `night` without its subgenres (the record), or nil.
    func record(_ id: String, night: Int) -> JSONObject? {
        guard exists(id, night: night), let node = nodes[id], let name = name(id, night: night),
              let root = Self.roots.first(where: { $0.id == node.root }) else { return nil }
        var path = node.path
        if path.count > 1 { path[path.count - 1] = PodcastCatalog.slug(name) }
        var object = JSONObject()
        object.add("name", name)
        object.add("id", id)
        object.add("url", "https://itunes.apple.com/us/genre/\(path.joined(separator: "-"))/id\(id)?mt=\(root.mt)")
        var rss = JSONObject()
        for entry in Self.rssNames[node.root] ?? [] {
            rss.add(entry.key, "\(Self.origin)/us/rss/\(entry.path)/genre=\(id)/json")
        }
        object.add("rssUrls", .object(rss))
        var charts = JSONObject()
        for entry in Self.chartNames[node.root] ?? [] {
            charts.add(entry.key, "\(Self.origin)/WebObjects/MZStoreServices.woa/ws/charts?cc=us&g=\(id)&name=\(entry.name)")
        }
        object.add("chartUrls", .object(charts))
        return object
    }

    /// Node `id` with its subtree, as the service serves it.
    func tree(_ id: String, night: Int) -> JSONObject? {
        guard var object = record(id, night: night), let node = nodes[id] else { return nil }
        let children = node.children.filter { exists($0, night: night) }
        if !children.isEmpty {
            var subgenres = JSONObject()
            for child in children {
                if let subtree = tree(child, night: night) { subgenres.add(child, .object(subtree)) }
            }
            object.add("subgenres", .object(subgenres))
        }
        return object
    }

    /// The ids of `id` and every node below it on `night`.
    func subtreeIDs(_ id: String, night: Int) -> Set<String> {
        guard exists(id, night: night), let node = nodes[id] else { return [] }
        var out: Set<String> = [id]
        for child in node.children { out.formUnion(subtreeIDs(child, night: night)) }
        return out
    }
}
