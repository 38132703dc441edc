/// A podcast's RSS 2.0 feed with the `itunes:` namespace
/// (`/feeds/{trackId}.xml`), shaped like the recorded real feed: channel
/// metadata, then the served episodes newest first, each with an enclosure
/// (URL, length, type), a GUID, an RFC 822 pubDate and an `itunes:duration`.
/// Titles, GUIDs, URLs, dates and durations are the ones Lookup serves.
enum SimulatedFeed {
    static let contentType = "application/rss+xml; charset=UTF-8"
    /// What a host serving Latin-1 without saying so sends.
    static let contentTypeWithoutCharset = "application/rss+xml"

    /// Where a moved feed (`feed-variants`) lives now.
    static func newAddress(_ podcasts: PodcastCatalog, _ i: Int) -> String {
        "\(World.defaultBaseURL)/feeds/moved/\(podcasts.trackID(i)).xml"
    }

    /// `1:28:20` or `42:07`.
    static func duration(_ millis: Int) -> String {
        let total = millis / 1000
        let h = total / 3600, m = total / 60 % 60, s = total % 60
        func two(_ n: Int) -> String { n < 10 ? "0\(n)" : String(n) }
        return h > 0 ? "\(h):\(two(m)):\(two(s))" : "\(m):\(two(s))"
    }

    /// The feed of podcast `i` on `night`; `lastBuild` stamps `lastBuildDate`
    /// (nil leaves it out, for the body the validators are computed from).
    /// `atNewAddress`: served at ``newAddress(_:_:)``, the plain feed whatever its variant.
    static func body(_ podcasts: PodcastCatalog, _ i: Int, night: Int, lastBuild: SimDate?,
                     atNewAddress: Bool = false) -> [UInt8]? {
        guard let numbers = podcasts.episodeNumbers(i, night: night) else { return nil }
        let variant = atNewAddress ? nil : podcasts.faults.feedVariant(podcast: i)
        let show = podcasts.show(i, night: night)
        let id = podcasts.trackID(i)
        let link = "https://podcasts.storesim.test/\(show.titleSlug)"
        let marks = podcasts.faults.marks(tag: PodcastCatalog.tag, index: i)
        var xml = XMLOut()
        xml.raw(variant == .latin1 ? "<?xml version=\"1.0\"?>\n" : "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        xml.raw("""
            <rss version="2.0"
            \txmlns:content="http://purl.org/rss/1.0/modules/content/"
            \txmlns:atom="http://www.w3.org/2005/Atom"
            \txmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"
            >
            <channel>

            """)
        xml.raw("\t")
        xml.element("title", faulty: show.shownTitle)
        xml.raw("\n\t")
        xml.element("link", text: link)
        xml.raw("\n\t")
        xml.element("description", text: podcasts.faults.huge(
            "\(show.title): \(show.genre.name) & more from \(show.artistName). <b>New episodes</b> every week.", marks: marks))
        if let lastBuild {
            xml.raw("\n\t")
            xml.element("lastBuildDate", text: lastBuild.rfc2822)
        }
        xml.raw("\n\t")
        xml.element("language", text: "en-US")
        switch variant {
        case .invalidCharacter:
            // A NUL raw, before every item: XML 1.0 cannot hold it, and a reader
            // that stops there loses the episodes; the element is one the crawler does not read.
            xml.raw("\n\t<itunes:keywords>news,\u{0}weekly</itunes:keywords>")
        case .newFeedURL:
            xml.raw("\n\t")
            xml.element("itunes:new-feed-url", text: newAddress(podcasts, i))
        default:
            break
        }
        xml.raw("\n\t")
        xml.element("atom:link", [("href", "\(World.defaultBaseURL)/feeds/\(id).xml"), ("rel", "self"),
                                  ("type", "application/rss+xml")])
        xml.raw("\n\t")
        xml.element("itunes:summary", text: "\(show.title), hosted by \(show.artistName).")
        xml.raw("\n\t")
        xml.element("itunes:author", text: show.artistName)
        xml.raw("\n\t")
        xml.element("itunes:explicit", text: show.fixed.explicitness == "explicit" ? "yes" : "no")
        xml.raw("\n\t")
        xml.element("itunes:image", [("href", show.artwork.url(size: 600))])
        xml.raw("\n\t<itunes:owner>\n\t\t")
        xml.element("itunes:name", text: show.artistName)
        xml.raw("\n\t\t")
        xml.element("itunes:email", text: "podcast\(id)@feeds.storesim.test")
        xml.raw("\n\t</itunes:owner>\n\t")
        xml.element("copyright", text: show.artistName)
        xml.raw("\n\t<image>\n\t\t")
        xml.element("title", faulty: show.shownTitle)
        xml.raw("\n\t\t")
        xml.element("url", text: show.artwork.url(size: 600))
        xml.raw("\n\t\t")
        xml.element("link", text: link)
        xml.raw("\n\t</image>\n\t")
        if let parent = show.genre.parent {
            xml.open("itunes:category", [("text", parent.name)])
            xml.raw("\n\t\t")
            xml.element("itunes:category", [("text", show.genre.name)])
            xml.raw("\n\t")
            xml.close("itunes:category")
        } else {
            xml.element("itunes:category", [("text", show.genre.name)])
        }
        for n in numbers.reversed() {
            let e = podcasts.episode(i, number: n, fixed: show.fixed, nights: show.nights)
            let index = podcasts.episodeIndex(podcast: i, number: n)
            let episodeMarks = podcasts.faults.marks(tag: PodcastCatalog.episodeTag, index: index)
            let title = podcasts.faults.title(e.title, marks: episodeMarks, tag: PodcastCatalog.episodeTag, index: index)
            xml.raw("\n\t<item>\n\t\t")
            xml.element("title", faulty: title)
            xml.raw("\n\t\t")
            xml.element("link", text: "\(link)/episodes/\(n)")
            xml.raw("\n\t\t")
            xml.element("pubDate", text: e.release.rfc2822)
            xml.raw("\n\t\t")
            xml.element("guid", [("isPermaLink", "false")], text: e.guid)
            xml.raw("\n\t\t")
            xml.element("description", text: podcasts.faults.huge(e.description, marks: episodeMarks))
            xml.raw("\n\t\t<content:encoded>")
            xml.cdata("<p>\(e.description)</p>")
            xml.raw("</content:encoded>\n\t\t")
            let type = e.fileExtension == "mp3" ? "audio/mpeg" : "audio/x-m4a"
            let url = podcasts.episodeURL(i, e)
            if variant == .relativeEnclosure, let slash = url.range(of: "/", options: .backwards) {
                // The item's xml:base is the file's folder; the enclosure names the file alone.
                xml.element("enclosure", [("xml:base", String(url[..<slash.upperBound])),
                                          ("url", String(url[slash.upperBound...])), ("length", String(e.bytes)), ("type", type)])
            } else {
                xml.element("enclosure", [("url", url), ("length", String(e.bytes)), ("type", type)])
            }
            if variant == .twoEnclosures {
                xml.raw("\n\t\t")
                xml.element("enclosure", [("url", url + "&format=aac"), ("length", String(e.bytes / 2)), ("type", "audio/aac")])
            }
            xml.raw("\n\t\t")
            xml.element("itunes:author", text: show.artistName)
            xml.raw("\n\t\t")
            xml.element("itunes:episode", text: String(n))
            xml.raw("\n\t\t")
            xml.element("itunes:title", faulty: title)
            xml.raw("\n\t\t")
            xml.element("itunes:duration", text: duration(e.millis))
            xml.raw("\n\t\t</item>")
        }
        xml.raw("\n</channel>\n")
        if variant == .newLocation {
            xml.raw("<redirect><newLocation>\(newAddress(podcasts, i))</newLocation></redirect>\n")
        }
        xml.raw("</rss>\n")
        return variant == .latin1 ? latin1(xml.bytes) : xml.bytes
    }

    /// A UTF-8 document as Latin-1: characters past U+00FF become character
    /// references (in CDATA, where references mean nothing, `?`).
    static func latin1(_ utf8: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(utf8.count)
        var inCDATA = false
        let text = String(decoding: utf8, as: UTF8.self)
        var recent: [UInt8] = []
        for scalar in text.unicodeScalars {
            if scalar.value < 0x100 {
                out.append(UInt8(scalar.value))
            } else if inCDATA {
                out.append(UInt8(ascii: "?"))
            } else {
                out += Array("&#x\(String(scalar.value, radix: 16));".utf8)
            }
            recent.append(out.last!)
            if recent.count > 9 { recent.removeFirst() }
            if recent.suffix(9) == Array("<![CDATA[".utf8) { inCDATA = true }
            if recent.suffix(3) == Array("]]>".utf8) { inCDATA = false }
        }
        return out
    }
}
