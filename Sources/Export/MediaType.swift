/// MIME types for podcast enclosures.
enum MediaType {
    /// The type an enclosure is published with: the source's own when it gave
    /// a MIME type; otherwise the one the file's extension names; otherwise
    /// `video/mp4` for a source that only said "video" (iTunes Lookup's
    /// `episodeContentType`), else `audio/mpeg`, what podcast apps assume.
    static func enclosureType(given: String?, url: String) -> String {
        if let given, given.contains("/") { return given }
        if let guessed = byExtension(url) { return guessed }
        return given?.lowercased() == "video" ? "video/mp4" : "audio/mpeg"
    }

    /// The type of the file `url` names by its extension (query and fragment
    /// ignored), for the media formats podcast apps play.
    static func byExtension(_ url: String) -> String? {
        var path = Substring(url)
        if let end = path.firstIndex(where: { $0 == "?" || $0 == "#" }) { path = path[..<end] }
        guard let slash = path.lastIndex(of: "/"), let dot = path[slash...].lastIndex(of: ".") else { return nil }
        return types[path[path.index(after: dot)...].lowercased()]
    }

    /// Apple's and the IANA types (Apple lists `audio/x-m4a`, `video/x-m4v`).
    static let types: [String: String] = [
        "mp3": "audio/mpeg", "m4a": "audio/x-m4a", "aac": "audio/aac", "ogg": "audio/ogg", "oga": "audio/ogg",
        "opus": "audio/opus", "flac": "audio/flac", "wav": "audio/wav",
        "mp4": "video/mp4", "m4v": "video/x-m4v", "mov": "video/quicktime", "webm": "video/webm",
        "pdf": "application/pdf", "epub": "document/x-epub",
    ]
}
