import CLibXML2
import Catalog
import Foundation

/// One thing a feed gets wrong for a podcast directory.
package struct FeedLintFinding: Sendable, Equatable, CustomStringConvertible {
    package enum Severity: String, Sendable {
        /// Apple Podcasts refuses the feed, or the item, without it.
        case requirement
        /// Apple recommends it; apps work without it.
        case recommendation
    }

    package var severity: Severity
    /// A short stable name of the rule (`channel-image-size`), for scripts.
    package var rule: String
    /// Where: `channel`, or `item 3 (guid …)`.
    package var place: String
    package var message: String

    package var description: String { "\(place): \(message) [\(rule)]" }
}

/// Checks a podcast RSS feed — the bytes about to be published, not the
/// values they were made from — against what Apple Podcasts requires and
/// recommends, and the basics of the `podcast:` namespace.
///
/// Apple's rules, as Podcasts Connect states them:
/// - channel: `title`, `description`, `language`, `itunes:image` (JPEG or
///   PNG, 1400×1400 to 3000×3000 px), at least one `itunes:category` from
///   the current list (a subcategory only inside its parent), `itunes:explicit`
///   `true`/`false`; recommended `itunes:author`, `link`, `itunes:owner` with
///   an e-mail, `itunes:type`, `copyright`;
/// - item: `title` and an `enclosure` with an http(s) `url`, a `length` in
///   bytes above 0 and a supported `type`; recommended a `guid` (unique in
///   the feed), `pubDate`, `itunes:duration`;
/// - every `podcast:` tag keeps the Podcasting 2.0 namespace's rules
///   (``PodcastTagRules``: required attributes, URL forms, lengths, where it
///   may stand); `podcast:guid` is a UUID, `podcast:locked` is `yes`/`no` and
///   names its owner.
///
/// Image sizes are read from the URL when it states them (iTunes artwork
/// URLs do) or from `imageSize` (the artwork mirror reads the file's header);
/// an image whose size cannot be known is not reported.
package enum PodcastFeedLint {
    package static let enclosureTypes: Set<String> = [
        "audio/mpeg", "audio/x-m4a", "audio/mp4", "audio/aac", "video/mp4", "video/quicktime", "video/x-m4v", "application/pdf",
    ]

    /// The findings for `bytes`; a document that does not parse is one requirement finding.
    package static func check(_ bytes: [UInt8], imageSize: (String) -> (width: Int, height: Int)? = { _ in nil }) -> [FeedLintFinding] {
        XMLValidator.ensureInitialized()
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOCDATA.rawValue | XML_PARSE_NOERROR.rawValue
                            | XML_PARSE_NOWARNING.rawValue | XML_PARSE_HUGE.rawValue)
        let doc = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                xmlReadMemory($0, Int32(buffer.count), "feed.xml", nil, options)
            }
        }
        guard let doc else {
            return [FeedLintFinding(severity: .requirement, rule: "xml", place: "document", message: "not well-formed XML")]
        }
        defer { xmlFreeDoc(doc) }
        guard let root = xmlDocGetRootElement(doc).map(LintNode.init), root.is(nil, "rss"),
              let channel = root.first(nil, "channel") else {
            return [FeedLintFinding(severity: .requirement, rule: "rss", place: "document", message: "not an RSS 2.0 document with a <channel>")]
        }
        var findings: [FeedLintFinding] = []
        func require(_ ok: Bool, _ rule: String, _ place: String, _ message: @autoclosure () -> String) {
            if !ok { findings.append(FeedLintFinding(severity: .requirement, rule: rule, place: place, message: message())) }
        }
        func recommend(_ ok: Bool, _ rule: String, _ place: String, _ message: @autoclosure () -> String) {
            if !ok { findings.append(FeedLintFinding(severity: .recommendation, rule: rule, place: place, message: message())) }
        }

        // Channel.
        let c = "channel"
        require(channel.text(nil, "title") != nil, "channel-title", c, "no <title>")
        require(channel.text(nil, "description") != nil || channel.text(itunes, "summary") != nil,
                "channel-description", c, "no <description>")
        let language = channel.text(nil, "language")
        require(language.map(isLanguageTag) ?? false, "channel-language", c,
                language.map { "<language> '\($0)' is not an ISO 639 language tag" } ?? "no <language>")
        if let image = channel.first(itunes, "image")?.attribute("href"), !image.isEmpty {
            checkImage(image, rule: "channel-image", place: c, required: true, imageSize: imageSize, require: require)
        } else {
            require(false, "channel-image", c, "no itunes:image (1400×1400 to 3000×3000 px, JPEG or PNG)")
        }
        let categories = channel.all(itunes, "category")
        require(!categories.isEmpty, "channel-category", c, "no itunes:category")
        for category in categories {
            let top = category.attribute("text") ?? ""
            let subs = category.all(itunes, "category").map { $0.attribute("text") ?? "" }
            let paths = subs.isEmpty ? [[top]] : subs.map { [top, $0] }
            for path in paths {
                require(AppleCategories.isListed(path), "channel-category", c,
                        "itunes:category '\(path.joined(separator: " › "))' is not on Apple's category list")
            }
        }
        let explicit = channel.text(itunes, "explicit")
        require(explicit == "true" || explicit == "false", "channel-explicit", c,
                explicit.map { "itunes:explicit '\($0)' must be true or false" } ?? "no itunes:explicit")
        recommend(channel.text(itunes, "author") != nil, "channel-author", c, "no itunes:author")
        recommend(channel.text(nil, "link") != nil, "channel-link", c, "no <link> to the show's website")
        let ownerEmail = channel.first(itunes, "owner")?.text(itunes, "email")
        recommend(ownerEmail.map { $0.contains("@") } ?? false, "channel-owner", c, "no itunes:owner with an itunes:email")
        if let type = channel.text(itunes, "type") {
            require(type == "episodic" || type == "serial", "channel-type", c, "itunes:type '\(type)' must be episodic or serial")
        } else {
            recommend(false, "channel-type", c, "no itunes:type")
        }
        recommend(channel.text(nil, "copyright") != nil, "channel-copyright", c, "no <copyright>")
        checkPodcastNamespace(channel, at: .channel, place: c, require: require)

        // Items.
        var guids: [String: Int] = [:]
        for (index, item) in channel.all(nil, "item").enumerated() {
            let guid = item.text(nil, "guid")
            let place = "item \(index + 1)" + (guid.map { " (guid \($0))" } ?? "")
            require(item.text(nil, "title") != nil || item.text(itunes, "title") != nil, "item-title", place, "no <title>")
            if let enclosure = item.first(nil, "enclosure") {
                let url = enclosure.attribute("url") ?? ""
                require(isHTTP(url), "item-enclosure-url", place, "enclosure url '\(url)' is not an absolute http(s) URL")
                let length = Int64(enclosure.attribute("length") ?? "") ?? 0
                require(length > 0, "item-enclosure-length", place, "enclosure length must be the file's size in bytes (> 0)")
                let type = enclosure.attribute("type") ?? ""
                require(enclosureTypes.contains(type.lowercased()), "item-enclosure-type", place,
                        "enclosure type '\(type)' is not one Apple Podcasts plays")
            } else {
                require(false, "item-enclosure", place, "no <enclosure>")
            }
            if let guid {
                if let first = guids[guid] {
                    require(false, "item-guid-unique", place, "the same guid as item \(first + 1)")
                } else {
                    guids[guid] = index
                }
            } else {
                recommend(false, "item-guid", place, "no <guid>")
            }
            recommend(item.text(nil, "pubDate") != nil, "item-pubdate", place, "no <pubDate>")
            recommend(item.text(itunes, "duration") != nil, "item-duration", place, "no itunes:duration")
            if let explicit = item.text(itunes, "explicit") {
                require(explicit == "true" || explicit == "false", "item-explicit", place, "itunes:explicit must be true or false")
            }
            if let type = item.text(itunes, "episodeType") {
                require(["full", "trailer", "bonus"].contains(type), "item-episode-type", place,
                        "itunes:episodeType '\(type)' must be full, trailer or bonus")
            }
            for name in ["episode", "season"] {
                if let number = item.text(itunes, name) {
                    require((Int(number) ?? 0) > 0, "item-\(name)", place, "itunes:\(name) must be a whole number above 0")
                }
            }
            if let image = item.first(itunes, "image")?.attribute("href") {
                checkImage(image, rule: "item-image", place: place, required: false, imageSize: imageSize, require: require)
            }
            checkPodcastNamespace(item, at: .item, place: place, require: require)
        }
        return findings
    }

    /// The Podcasting 2.0 tags of a channel or item, by the namespace's rules
    /// (``PodcastTagRules``), each finding named `podcast-<tag>`.
    private static func checkPodcastNamespace(_ node: LintNode, at where: PodcastTagPlace, place: String,
                                              require: (Bool, String, String, @autoclosure () -> String) -> Void) {
        for child in node.children where child.namespace == podcast {
            for problem in PodcastTagRules.problems(child.podcastTag, at: `where`) {
                require(false, "podcast-\(child.name)", place, problem)
            }
        }
    }

    private static func checkImage(_ url: String, rule: String, place: String, required: Bool,
                                   imageSize: (String) -> (width: Int, height: Int)?,
                                   require: (Bool, String, String, @autoclosure () -> String) -> Void) {
        require(isHTTP(url), rule, place, "itunes:image '\(url)' is not an absolute http(s) URL")
        let path = (URL(string: url)?.path ?? url).lowercased()
        require([".jpg", ".jpeg", ".png"].contains { path.hasSuffix($0) }, rule, place,
                "itunes:image '\(url)' must be a .jpg or .png file")
        guard let size = imageSize(url) ?? ArtworkURL.requestedSize(url) else { return }
        require(size.width == size.height && ArtworkURL.appleSizes.contains(size.width), rule + "-size", place,
                "itunes:image is \(size.width)×\(size.height) px; Apple wants a square of 1400 to 3000 px")
    }

    private static func isHTTP(_ text: String) -> Bool {
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), let host = url.host, !host.isEmpty else { return false }
        return scheme == "http" || scheme == "https"
    }

    /// `en`, `en-us`, `pt-BR`: a 2–3 letter primary tag and optional subtags.
    private static func isLanguageTag(_ text: String) -> Bool {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        guard let first = parts.first, (2...3).contains(first.count), first.allSatisfy({ $0.isASCII && $0.isLetter }) else { return false }
        return parts.dropFirst().allSatisfy { (1...8).contains($0.count) && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber) } }
    }

    static let itunes = PodcastFeedWriter.itunesNamespace
    static let podcast = PodcastFeedWriter.podcastNamespace
}

/// Read-only access to an element of the parsed feed, by namespace URI.
private struct LintNode {
    let node: xmlNodePtr

    func `is`(_ namespace: String?, _ name: String) -> Bool {
        guard String(cString: node.pointee.name) == name else { return false }
        let href = node.pointee.ns?.pointee.href.map { String(cString: $0) }
        return href == namespace
    }

    func all(_ namespace: String?, _ name: String) -> [LintNode] {
        children.filter { $0.is(namespace, name) }
    }

    func first(_ namespace: String?, _ name: String) -> LintNode? { all(namespace, name).first }

    var name: String { String(cString: node.pointee.name) }

    var namespace: String? { node.pointee.ns?.pointee.href.map { String(cString: $0) } }

    /// Element children in document order.
    var children: [LintNode] {
        var out: [LintNode] = []
        var child = node.pointee.children
        while let c = child {
            if c.pointee.type == XML_ELEMENT_NODE { out.append(LintNode(node: c)) }
            child = c.pointee.next
        }
        return out
    }

    /// The element as a `podcast:` tag: attributes without a namespace, text, `podcast:` children.
    var podcastTag: PodcastTag {
        var attributes: [(name: String, value: String)] = []
        var property = node.pointee.properties
        while let p = property {
            if p.pointee.ns == nil {
                let key = String(cString: p.pointee.name)
                attributes.append((key, attribute(key) ?? ""))
            }
            property = p.pointee.next
        }
        let nested = children.filter { $0.namespace == PodcastFeedLint.podcast }
        return PodcastTag(name, attributes: attributes, text: nested.isEmpty ? trimmedText : nil, children: nested.map(\.podcastTag))
    }

    func text(_ namespace: String?, _ name: String) -> String? { first(namespace, name)?.trimmedText }

    var trimmedText: String? {
        guard let content = xmlNodeGetContent(node) else { return nil }
        defer { storesync_xmlFree(content) }
        let text = String(cString: content).trimmingCharacters(in: .whitespacesAndNewlines)
        return text.isEmpty ? nil : text
    }

    func attribute(_ name: String) -> String? {
        guard let value = xmlGetProp(node, name) else { return nil }
        defer { storesync_xmlFree(value) }
        return String(cString: value)
    }
}
