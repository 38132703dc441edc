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
        let tags = PodcastingTags(podcast: i)
        xml.raw("""
            <rss version="2.0"
            \txmlns:content="http://purl.org/rss/1.0/modules/content/"
            \txmlns:atom="http://www.w3.org/2005/Atom"
            \txmlns:itunes="http://www.itunes.com/dtds/podcast-1.0.dtd"\(tags.declaration)
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
        tags.writeChannel(&xml, id: id, link: link, owner: "podcast\(id)@feeds.storesim.test")
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
            tags.writeItem(&xml, episodeLink: "\(link)/episodes/\(n)", number: n, host: show.artistName)
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

/// The Podcasting 2.0 (`podcast:`) tags of a simulated feed, in the shapes
/// real hosts write them (Castopod, Buzzsprout, hand-made feeds): which
/// podcast carries which is fixed by its index, as is the namespace URI
/// (the current one, or the older GitHub one podcastparser 0.6 knows). One
/// podcast in seven writes some of them malformed: a transcript without its
/// type, a soundbite without a duration, a person without a name, an
/// alternate enclosure without a source, chapters without their type.
struct PodcastingTags {
    let items: Bool
    let channel: Bool
    let malformed: Bool
    let oldNamespace: Bool

    init(podcast i: Int) {
        items = i % 3 == 0
        channel = i % 4 == 0
        malformed = i % 7 == 3
        oldNamespace = i % 2 == 1
    }

    var any: Bool { items || channel || malformed }

    var declaration: String {
        guard any else { return "" }
        let uri = oldNamespace
            ? "https://github.com/Podcastindex-org/podcast-namespace/blob/main/docs/1.0.md" : "https://podcastindex.org/namespace/1.0"
        return "\n\txmlns:podcast=\"\(uri)\""
    }

    func writeChannel(_ xml: inout XMLOut, id: Int, link: String, owner: String) {
        guard channel else { return }
        xml.raw("\n\t")
        xml.element("podcast:locked", [("owner", owner)], text: id % 2 == 0 ? "yes" : "no")
        xml.raw("\n\t")
        xml.element("podcast:funding", [("url", "\(link)/support")], text: "Support the show")
        xml.raw("\n\t")
        xml.element("podcast:medium", text: "podcast")
        xml.raw("\n\t")
        xml.element("podcast:person", [("role", "host"), ("href", "\(link)/host")], text: "Host of \(id)")
        xml.raw("\n\t")
        xml.element("podcast:license", [("url", "https://creativecommons.org/licenses/by/4.0/")], text: "cc-by-4.0")
        xml.raw("\n\t")
        xml.element("podcast:guid", text: Self.uuid(id))
        xml.raw("\n\t")
        xml.element("podcast:txt", [("purpose", "verify")], text: "storesim-\(id)")
        xml.raw("\n\t")
        xml.element("podcast:location", [("geo", "geo:52.52,13.405"), ("osm", "R62422")], text: "Berlin")
        xml.raw("\n\t")
        xml.element("podcast:trailer", [("pubdate", "Mon, 01 Jan 2024 08:00:00 GMT"), ("url", "\(link)/trailer.mp3"),
                                         ("length", "1234567"), ("type", "audio/mpeg")], text: "Meet the show")
        xml.raw("\n\t<podcast:podroll>\n\t\t")
        xml.element("podcast:remoteItem", [("feedGuid", Self.uuid(id + 1)), ("feedUrl", "http://feeds.storesim.test/feeds/\(id + 1).xml")])
        xml.raw("\n\t</podcast:podroll>")
    }

    /// A UUID shaped like the namespace's `podcast:guid`, fixed by `seed`.
    static func uuid(_ seed: Int) -> String {
        let bits = StableRandom.mix(UInt64(truncatingIfNeeded: seed))
        let hex = String(bits, radix: 16).leftPadded(to: 16) + String(StableRandom.mix(bits), radix: 16).leftPadded(to: 16)
        let h = Array(hex)
        return "\(String(h[0..<8]))-\(String(h[8..<12]))-5\(String(h[13..<16]))-a\(String(h[17..<20]))-\(String(h[20..<32]))"
    }

    func writeItem(_ xml: inout XMLOut, episodeLink: String, number: Int, host: String) {
        if items {
            xml.raw("\n\t\t")
            xml.element("podcast:transcript", [("url", "\(episodeLink)/transcript.vtt"), ("type", "text/vtt"), ("language", "en"),
                                               ("rel", "captions")])
            xml.raw("\n\t\t")
            xml.element("podcast:transcript", [("url", "\(episodeLink)/transcript.srt"), ("type", "application/x-subrip")])
            xml.raw("\n\t\t")
            xml.element("podcast:chapters", [("url", "\(episodeLink)/chapters.json"), ("type", "application/json+chapters")])
            xml.raw("\n\t\t")
            xml.element("podcast:person", [("role", "host")], text: host)
            xml.raw("\n\t\t")
            xml.element("podcast:soundbite", [("startTime", "\(60 + number)"), ("duration", "30.0")], text: "Highlight \(number)")
            xml.raw("\n\t\t")
            xml.element("podcast:season", [("name", "Year \(1 + number / 50)")], text: String(1 + number / 50))
            xml.raw("\n\t\t")
            xml.element("podcast:episode", [("display", "No. \(number)")], text: String(number))
            xml.raw("\n\t\t")
            xml.open("podcast:alternateEnclosure", [("type", "audio/opus"), ("length", String(1_000_000 + number)), ("bitrate", "64000"),
                                                    ("title", "Opus")])
            xml.raw("\n\t\t\t")
            xml.element("podcast:source", [("uri", "\(episodeLink)/audio.opus")])
            xml.raw("\n\t\t")
            xml.close("podcast:alternateEnclosure")
            xml.raw("\n\t\t")
            xml.element("podcast:location", [("geo", "geo:48.85,2.35")], text: "Paris")
            xml.raw("\n\t\t")
            xml.element("podcast:txt", [("purpose", "note")], text: "Recorded live")
        }
        if malformed {
            xml.raw("\n\t\t")
            xml.element("podcast:transcript", [("url", "\(episodeLink)/transcript.txt")])
            xml.raw("\n\t\t")
            xml.element("podcast:soundbite", [("startTime", "12")], text: "no duration")
            xml.raw("\n\t\t")
            xml.element("podcast:person", [("role", "guest")], text: " ")
            xml.raw("\n\t\t")
            xml.element("podcast:alternateEnclosure", [("type", "audio/flac"), ("title", "Lossless")])
            xml.raw("\n\t\t")
            xml.element("podcast:chapters", [("url", "\(episodeLink)/chapters.json")])
        }
    }
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? String(suffix(width)) : String(repeating: "0", count: width - count) + self
    }
}
