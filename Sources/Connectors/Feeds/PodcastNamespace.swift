import Catalog

/// The Podcasting 2.0 tags (`podcast:`, https://podcastindex.org/namespace/1.0)
/// a feed's channel or item carries, as wire fields of its record.
///
/// Each tag is kept as the publisher wrote it: its attributes (only those
/// present, by their own names) and its text, URLs resolved against the feed
/// like every other URL of the feed. Checking them is the lint's job, not the
/// reader's: a malformed tag is stored as written, so a publisher can see
/// what their feed says. Lists keep document order.
enum PodcastNamespace {
    /// The wire fields of the `podcast:` tags an item carries.
    static func itemFields(_ item: FeedNode) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        put(&fields, "podcastTranscripts", list(item, "transcript", urls: ["url"]))
        put(&fields, "podcastChapters", item.first(.podcastIndex, "chapters").map { tag($0, urls: ["url"]) })
        put(&fields, "podcastSoundbites", list(item, "soundbite", text: "title"))
        put(&fields, "podcastSeason", item.first(.podcastIndex, "season").map { tag($0, text: "number") })
        put(&fields, "podcastEpisode", item.first(.podcastIndex, "episode").map { tag($0, text: "number") })
        put(&fields, "podcastAlternateEnclosures", alternateEnclosures(item))
        shared(item, into: &fields)
        return fields
    }

    /// The wire fields of the `podcast:` tags a channel carries.
    static func channelFields(_ channel: FeedNode) -> [String: JSONValue] {
        var fields: [String: JSONValue] = [:]
        put(&fields, "podcastLocked", channel.first(.podcastIndex, "locked").map { tag($0, text: "value") })
        put(&fields, "podcastGuid", channel.first(.podcastIndex, "guid")?.trimmedText.map(JSONValue.string))
        put(&fields, "podcastMedium", channel.first(.podcastIndex, "medium")?.trimmedText.map(JSONValue.string))
        put(&fields, "podcastFunding", list(channel, "funding", text: "text", urls: ["url"]))
        put(&fields, "podcastTrailers", list(channel, "trailer", text: "title", urls: ["url"]))
        if let podroll = channel.first(.podcastIndex, "podroll") {
            put(&fields, "podcastPodroll", list(podroll, "remoteItem", urls: ["feedUrl"]))
        }
        shared(channel, into: &fields)
        return fields
    }

    /// Tags a channel and an item may both carry.
    private static func shared(_ node: FeedNode, into fields: inout [String: JSONValue]) {
        put(&fields, "podcastPersons", list(node, "person", text: "name", urls: ["href", "img"]))
        put(&fields, "podcastLocation", node.first(.podcastIndex, "location").map { tag($0, text: "name") })
        put(&fields, "podcastLicense", node.first(.podcastIndex, "license").map { tag($0, text: "name", urls: ["url"]) })
        put(&fields, "podcastTxt", list(node, "txt", text: "text"))
    }

    private static func put(_ fields: inout [String: JSONValue], _ name: String, _ value: JSONValue?) {
        switch value {
        case nil, .array([])?, .object([:])?: break
        case let value?: fields[name] = value
        }
    }

    private static func list(_ parent: FeedNode, _ name: String, text: String? = nil, urls: Set<String> = []) -> JSONValue {
        .array(parent.all(.podcastIndex, name).map { tag($0, text: text, urls: urls) }.filter { $0 != .object([:]) })
    }

    /// A tag as an object: every attribute it has, and its text under `text`.
    static func tag(_ node: FeedNode, text textKey: String? = nil, urls: Set<String> = []) -> JSONValue {
        var object: [String: JSONValue] = [:]
        for (name, value) in node.attributes {
            let trimmed = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard !trimmed.isEmpty else { continue }
            object[name] = .string(urls.contains(name) ? node.absoluteURL(trimmed) ?? trimmed : trimmed)
        }
        if let textKey, let text = node.trimmedText { object[textKey] = .string(text) }
        return .object(object)
    }

    /// `podcast:alternateEnclosure` with its `podcast:source` children (and
    /// `podcast:integrity`), each source's `uri` resolved.
    private static func alternateEnclosures(_ item: FeedNode) -> JSONValue {
        .array(item.all(.podcastIndex, "alternateEnclosure").map { node in
            guard case .object(var object) = tag(node) else { return .null }
            let sources = node.all(.podcastIndex, "source").map { tag($0, urls: ["uri"]) }.filter { $0 != .object([:]) }
            if !sources.isEmpty { object["sources"] = .array(sources) }
            if let integrity = node.first(.podcastIndex, "integrity") { object["integrity"] = tag(integrity) }
            return .object(object)
        })
    }
}

extension PodcastNamespace {
    /// Canonical fields of an episode's `podcast:` tags, beside the iTunes ones.
    static func canonicalEpisode(_ c: inout CanonicalFields) {
        c.set("transcripts", jsonText(c.wire["podcastTranscripts"]))
        if case .object(let chapters)? = c.wire["podcastChapters"] {
            c.set("chapters_url", chapters["url"])
            c.set("chapters_type", chapters["type"])
        }
        c.set("soundbites", jsonText(c.wire["podcastSoundbites"]))
        c.set("alternate_enclosures", jsonText(c.wire["podcastAlternateEnclosures"]))
        if case .object(let season)? = c.wire["podcastSeason"] { c.set("season_name", season["name"]) }
        if case .object(let episode)? = c.wire["podcastEpisode"] { c.set("episode_display", episode["display"]) }
        canonicalShared(&c)
    }

    /// Canonical fields of a channel's `podcast:` tags.
    static func canonicalPodcast(_ c: inout CanonicalFields) {
        if case .object(let locked)? = c.wire["podcastLocked"] {
            switch locked["value"]?.stringValue?.lowercased() {
            case "yes"?: c.set("locked", .int(1))
            case "no"?: c.set("locked", .int(0))
            default: break  // as written in the raw payload; the lint says what is wrong
            }
            c.set("locked_owner", locked["owner"])
        }
        c.text("podcast_guid", from: "podcastGuid")
        c.lowercased("medium", from: "podcastMedium")
        c.set("funding", jsonText(c.wire["podcastFunding"]))
        c.set("trailers", jsonText(c.wire["podcastTrailers"]))
        c.set("podroll", jsonText(c.wire["podcastPodroll"]))
        canonicalShared(&c)
    }

    private static func canonicalShared(_ c: inout CanonicalFields) {
        c.set("persons", jsonText(c.wire["podcastPersons"]))
        c.set("location", jsonText(c.wire["podcastLocation"]))
        if case .object(let license)? = c.wire["podcastLicense"] {
            c.set("license", license["name"])
            c.set("license_url", license["url"])
        }
        c.set("txt", jsonText(c.wire["podcastTxt"]))
    }

    /// An array or object stored in a text column as its canonical JSON text.
    private static func jsonText(_ value: JSONValue?) -> JSONValue? {
        switch value {
        case .array(let elements)?: CanonicalValue.jsonArrayText(elements)
        case .object?: .string(CanonicalJSON.string(value!))
        default: nil
        }
    }

    /// `podcast:episode` / `podcast:season` as a whole number, where it is one.
    static func wholeNumber(_ value: JSONValue?) -> JSONValue? {
        guard case .object(let tag)? = value, let text = tag["number"]?.stringValue else { return nil }
        if let n = Int64(text) { return .int(n) }
        if let d = Double(text), d.isFinite, d == d.rounded(), abs(d) < 1e15 { return .int(Int64(d)) }
        return nil
    }
}
