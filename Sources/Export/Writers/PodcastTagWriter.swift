import Catalog

/// Writes ``PodcastTag``s as `podcast:` elements.
///
/// The writer takes element and attribute names as `StaticString`s only
/// (no markup is ever built from data, DESIGN Invariant 7), so each name the
/// namespace defines is spelled out here; a tag or attribute not listed is
/// not written.
enum PodcastTagWriter {
    static func write(_ tags: [PodcastTag], into doc: XMLDocumentWriter) throws {
        for tag in tags { try write(tag, into: doc) }
    }

    static func write(_ tag: PodcastTag, into doc: XMLDocumentWriter) throws {
        guard let name = elementName(tag.name) else { return }
        try doc.startElement(name)
        for (attribute, value) in tag.attributes {
            if let attribute = attributeName(attribute) { try doc.attribute(attribute, value) }
        }
        if let text = tag.text { try doc.text(text) }
        for child in tag.children { try write(child, into: doc) }
        try doc.endElement()
    }

    static func elementName(_ name: String) -> StaticString? {
        switch name {
        case "transcript": "podcast:transcript"
        case "chapters": "podcast:chapters"
        case "soundbite": "podcast:soundbite"
        case "person": "podcast:person"
        case "season": "podcast:season"
        case "episode": "podcast:episode"
        case "alternateEnclosure": "podcast:alternateEnclosure"
        case "source": "podcast:source"
        case "integrity": "podcast:integrity"
        case "location": "podcast:location"
        case "license": "podcast:license"
        case "txt": "podcast:txt"
        case "funding": "podcast:funding"
        case "trailer": "podcast:trailer"
        case "medium": "podcast:medium"
        case "locked": "podcast:locked"
        case "guid": "podcast:guid"
        case "podroll": "podcast:podroll"
        case "remoteItem": "podcast:remoteItem"
        default: nil
        }
    }

    static func attributeName(_ name: String) -> StaticString? {
        switch name {
        case "url": "url"
        case "type": "type"
        case "language": "language"
        case "rel": "rel"
        case "startTime": "startTime"
        case "duration": "duration"
        case "role": "role"
        case "group": "group"
        case "img": "img"
        case "href": "href"
        case "name": "name"
        case "display": "display"
        case "length": "length"
        case "bitrate": "bitrate"
        case "height": "height"
        case "lang": "lang"
        case "title": "title"
        case "codecs": "codecs"
        case "default": "default"
        case "uri": "uri"
        case "contentType": "contentType"
        case "value": "value"
        case "geo": "geo"
        case "osm": "osm"
        case "country": "country"
        case "purpose": "purpose"
        case "owner": "owner"
        case "pubdate": "pubdate"
        case "season": "season"
        case "feedGuid": "feedGuid"
        case "feedUrl": "feedUrl"
        case "itemGuid": "itemGuid"
        case "medium": "medium"
        default: nil
        }
    }
}
