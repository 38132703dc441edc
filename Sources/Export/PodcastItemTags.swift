import Catalog

/// An episode's Podcasting 2.0 tags, rebuilt from its canonical fields
/// (docs/entities.md) to be published as the source gave them.
///
/// A tag that breaks the namespace's rules (``PodcastTagRules``: a transcript
/// without a type, a chapters URL that is not http(s)…) is withheld, not
/// published: podcast apps would fetch or show something broken. The
/// stored record keeps it as written.
enum PodcastItemTags {
    /// The tags of an episode with canonical fields `f`, and a line for each one withheld.
    static func tags(of f: JSONValue) -> (tags: [PodcastTag], withheld: [String]) {
        var tags: [PodcastTag] = []
        tags += list(f["transcripts"], "transcript")
        if let url = text(f["chapters_url"]) {
            tags.append(PodcastTag("chapters", attributes: [("url", url)] + (text(f["chapters_type"]).map { [("type", $0)] } ?? [])))
        }
        tags += list(f["soundbites"], "soundbite", textKey: "title")
        tags += list(f["persons"], "person", textKey: "name")
        if let name = text(f["season_name"]), let season = f["season"]?.intValue {
            tags.append(PodcastTag("season", attributes: [("name", name)], text: String(season)))
        }
        if let display = text(f["episode_display"]), let number = f["episode_number"]?.intValue {
            tags.append(PodcastTag("episode", attributes: [("display", display)], text: String(number)))
        }
        for case .object(let object) in array(f["alternate_enclosures"]) {
            var children: [PodcastTag] = []
            for case .object(let source) in object["sources"]?.arrayValue ?? [] { children.append(tag("source", source)) }
            if case .object(let integrity)? = object["integrity"] { children.append(tag("integrity", integrity)) }
            var own = object
            own["sources"] = nil
            own["integrity"] = nil
            var alternate = tag("alternateEnclosure", own)
            alternate.children = children
            tags.append(alternate)
        }
        if case .object(let location)? = parsed(f["location"]) { tags.append(tag("location", location, textKey: "name")) }
        if let license = text(f["license"]) {
            tags.append(PodcastTag("license", attributes: text(f["license_url"]).map { [("url", $0)] } ?? [], text: license))
        }
        tags += list(f["txt"], "txt", textKey: "text")
        var kept: [PodcastTag] = []
        var withheld: [String] = []
        for tag in tags {
            let problems = PodcastTagRules.problems(tag, at: .item)
            if problems.isEmpty { kept.append(tag) } else { withheld += problems }
        }
        return (kept, withheld)
    }

    private static func text(_ value: JSONValue?) -> String? {
        guard let text = value?.stringValue, !text.isEmpty else { return nil }
        return text
    }

    /// A JSON text column's value.
    private static func parsed(_ value: JSONValue?) -> JSONValue? {
        guard let text = value?.stringValue else { return nil }
        return try? JSONParser.parse(Array(text.utf8))
    }

    private static func array(_ value: JSONValue?) -> [JSONValue] {
        parsed(value)?.arrayValue ?? []
    }

    private static func list(_ value: JSONValue?, _ name: String, textKey: String? = nil) -> [PodcastTag] {
        array(value).compactMap { element in
            guard case .object(let object) = element else { return nil }
            return tag(name, object, textKey: textKey)
        }
    }

    /// An object's string members as attributes (in key order), `textKey`'s as the text.
    private static func tag(_ name: String, _ object: [String: JSONValue], textKey: String? = nil) -> PodcastTag {
        var attributes: [(name: String, value: String)] = []
        for (key, value) in object.sorted(by: { $0.key < $1.key }) where key != textKey {
            if let text = value.stringValue { attributes.append((key, text)) }
        }
        return PodcastTag(name, attributes: attributes, text: textKey.flatMap { object[$0]?.stringValue })
    }
}
