import Foundation

/// One Podcasting 2.0 element (`podcast:NAME`, https://podcastindex.org/namespace/1.0):
/// its attributes, its text and its `podcast:` children. The feed writer
/// writes it, the feed lint and the job loader check it by ``PodcastTagRules``.
public struct PodcastTag: Sendable, Equatable {
    /// The local name (`transcript`, `person`…).
    public var name: String
    /// Attributes, written in this order.
    public var attributes: [(name: String, value: String)]
    /// The element's text, if it has any.
    public var text: String?
    public var children: [PodcastTag]

    public init(_ name: String, attributes: [(name: String, value: String)] = [], text: String? = nil, children: [PodcastTag] = []) {
        self.name = name
        self.attributes = attributes
        self.text = text
        self.children = children
    }

    public func attribute(_ name: String) -> String? {
        attributes.first { $0.name == name }?.value
    }

    public static func == (lhs: PodcastTag, rhs: PodcastTag) -> Bool {
        lhs.name == rhs.name && lhs.text == rhs.text && lhs.children == rhs.children
            && lhs.attributes.elementsEqual(rhs.attributes) { $0.name == $1.name && $0.value == $1.value }
    }
}

/// Where a tag stands: the rules differ for the channel and an item.
public enum PodcastTagPlace: Sendable {
    case channel, item
}

/// The Podcasting 2.0 namespace's rules for the tags storesync reads and
/// publishes: required attributes, value forms, the lengths the spec sets.
/// One set of rules serves the lint of a published feed, the job loader's
/// check of a publisher's own channel tags, and the export, which publishes
/// only the tags of a source that keep them (a malformed one is withheld
/// and counted, as a `javascript:` link is).
public enum PodcastTagRules {
    /// `podcast:medium` values (and their list forms ending in `L`, and `mixed`).
    public static let media: Set<String> = {
        let base = ["podcast", "music", "video", "film", "audiobook", "newsletter", "blog", "publisher", "course"]
        return Set(base + base.map { $0 + "L" } + ["mixed"])
    }()

    /// MIME types the spec lists for `podcast:transcript`.
    public static let transcriptTypes: Set<String> = [
        "text/plain", "text/html", "text/vtt", "application/json", "application/x-subrip", "application/srt",
    ]

    /// What is wrong with `tag` where it stands, one line each; empty when it keeps the rules.
    /// Unknown tags have no rules here.
    public static func problems(_ tag: PodcastTag, at place: PodcastTagPlace) -> [String] {
        var problems: [String] = []
        func need(_ ok: Bool, _ message: @autoclosure () -> String) {
            if !ok { problems.append("podcast:\(tag.name) \(message())") }
        }
        func url(_ attribute: String, required: Bool = true) {
            guard let value = tag.attribute(attribute) else {
                need(!required, "has no \(attribute)")
                return
            }
            need(isHTTP(value), "\(attribute) '\(value)' is not an absolute http(s) URL")
        }
        func text(max: Int, required: Bool = true) {
            guard let value = tag.text, !value.isEmpty else {
                need(!required, "has no text")
                return
            }
            need(value.count <= max, "text is longer than \(max) characters")
        }
        switch tag.name {
        case "transcript":
            url("url")
            let type = tag.attribute("type") ?? ""
            need(!type.isEmpty, "has no type")
            need(type.isEmpty || transcriptTypes.contains(type.lowercased()), "type '\(type)' is not a transcript format")
            if let rel = tag.attribute("rel") { need(rel == "captions", "rel '\(rel)' must be captions") }
        case "chapters":
            url("url")
            need(!(tag.attribute("type") ?? "").isEmpty, "has no type (application/json+chapters)")
        case "soundbite":
            let start = tag.attribute("startTime").flatMap(Double.init)
            let duration = tag.attribute("duration").flatMap(Double.init)
            need(start.map { $0 >= 0 && $0.isFinite } ?? false, "startTime must be seconds from the start")
            need(duration.map { $0 > 0 && $0.isFinite } ?? false, "duration must be seconds above 0")
            text(max: 128, required: false)
        case "person":
            text(max: 128)
            url("href", required: false)
            url("img", required: false)
        case "season":
            need(Int(tag.text ?? "").map { $0 > 0 } ?? false, "must be a whole number above 0")
            if let name = tag.attribute("name") { need(name.count <= 128, "name is longer than 128 characters") }
        case "episode":
            need(Double(tag.text ?? "").map { $0.isFinite && $0 >= 0 } ?? false, "must be a number")
            if let display = tag.attribute("display") { need(display.count <= 32, "display is longer than 32 characters") }
        case "alternateEnclosure":
            need(!(tag.attribute("type") ?? "").isEmpty, "has no type")
            if let length = tag.attribute("length") { need(Int64(length).map { $0 >= 0 } ?? false, "length must be bytes") }
            let sources = tag.children.filter { $0.name == "source" }
            need(!sources.isEmpty, "has no podcast:source")
            for source in sources {
                let uri = source.attribute("uri") ?? ""
                need(!uri.isEmpty && URL(string: uri)?.scheme != nil, "source uri '\(uri)' is not a URI")
            }
        case "location":
            text(max: 128)
            if let geo = tag.attribute("geo") { need(geo.lowercased().hasPrefix("geo:"), "geo '\(geo)' is not a geo: URI") }
        case "license":
            text(max: 128)
            url("url", required: false)
        case "txt":
            text(max: 4000)
            if let purpose = tag.attribute("purpose") { need(purpose.count <= 128, "purpose is longer than 128 characters") }
        case "funding":
            url("url")
            text(max: 128)
        case "trailer":
            url("url")
            text(max: 128)
            need(!(tag.attribute("pubdate") ?? "").isEmpty, "has no pubdate")
            if let length = tag.attribute("length") { need(Int64(length).map { $0 >= 0 } ?? false, "length must be bytes") }
            if let season = tag.attribute("season") { need(Int(season).map { $0 > 0 } ?? false, "season must be a whole number above 0") }
        case "medium":
            need(media.contains(tag.text ?? ""), "'\(tag.text ?? "")' is not a medium (\(media.sorted().joined(separator: ", ")))")
        case "locked":
            need(tag.text == "yes" || tag.text == "no", "must be yes or no")
            need(!(tag.attribute("owner") ?? "").isEmpty, "names no owner")
        case "guid":
            need(UUID(uuidString: tag.text ?? "") != nil, "'\(tag.text ?? "")' is not a UUID")
        case "podroll":
            let items = tag.children.filter { $0.name == "remoteItem" }
            need(!items.isEmpty, "has no podcast:remoteItem")
            need(items.allSatisfy { !($0.attribute("feedGuid") ?? "").isEmpty }, "has a remoteItem without a feedGuid")
        default:
            break
        }
        let channelOnly: Set<String> = ["locked", "guid", "medium", "funding", "trailer", "podroll"]
        let itemOnly: Set<String> = ["transcript", "chapters", "soundbite", "season", "episode", "alternateEnclosure"]
        switch place {
        case .channel: need(!itemOnly.contains(tag.name), "belongs in an <item>, not the <channel>")
        case .item: need(!channelOnly.contains(tag.name), "belongs in the <channel>, not an <item>")
        }
        return problems
    }

    /// An absolute http(s) URL with a host.
    public static func isHTTP(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return false }
        return scheme == "http" || scheme == "https"
    }
}
