import Foundation

/// File names built from templates such as `feeds/{genre}-{date}.xml`.
///
/// Values come from crawled data (a genre name is whatever the API sent), so
/// each value is reduced to a safe file-name fragment and the final path is
/// checked to stay inside the export folder (Invariant 7).
package enum PathTemplate {
    /// The variables a template may use.
    package static let variables = ["genre", "country", "date", "job"]

    /// `{date}`'s value for a run that began at `date`: its UTC day, `YYYY-MM-DD`.
    package static func dateValue(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyy-MM-dd"
        return formatter.string(from: date)
    }

    /// Variables in `template`, e.g. `["genre"]`.
    package static func variables(in template: String) -> Set<String> {
        var found = Set<String>()
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            found.insert(String(rest[rest.index(after: open)..<close]))
            rest = rest[rest.index(after: close)...]
        }
        return found
    }

    /// A value as a file-name fragment: letters, digits, `.`, `_` and `-`
    /// only (others become `-`), no leading or trailing dots or dashes, at
    /// most 80 bytes; an empty result becomes `unknown`.
    package static func sanitize(_ value: String) -> String {
        var out = ""
        var lastWasDash = false
        for scalar in value.unicodeScalars {
            let allowed = (scalar.properties.isAlphabetic || scalar.properties.numericType != nil) && scalar.value > 0x7F
                || ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
                || scalar == "." || scalar == "_"
            if allowed {
                out.unicodeScalars.append(scalar)
                lastWasDash = false
            } else if !lastWasDash {
                out.append("-")
                lastWasDash = true
            }
        }
        while let first = out.first, first == "." || first == "-" { out.removeFirst() }
        while let last = out.last, last == "." || last == "-" { out.removeLast() }
        while out.utf8.count > 80 { out.removeLast() }
        return out.isEmpty ? "unknown" : out
    }

    /// Expands `template` with sanitised `values`; unknown variables are left as written.
    package static func expand(_ template: String, _ values: [String: String]) -> String {
        var out = template
        for (name, value) in values {
            out = out.replacingOccurrences(of: "{\(name)}", with: sanitize(value))
        }
        return out
    }

    /// Expands `template` into a path inside `directory`, or throws if the result would leave it.
    package static func resolve(_ template: String, values: [String: String], inside directory: String) throws(StoreSyncError) -> URL {
        let relative = expand(template, values)
        let base = URL(fileURLWithPath: directory).standardizedFileURL
        let url = base.appendingPathComponent(relative).standardizedFileURL
        let basePath = base.path.hasSuffix("/") ? base.path : base.path + "/"
        guard url.path.hasPrefix(basePath), !relative.hasPrefix("/") else {
            throw .exportFailed(path: relative, reason: "the file name leaves the export folder \(directory); refused")
        }
        return url
    }

    /// Whether `name` (one file name, no folder) could have been produced by
    /// `template` (the template's last path component): each `{variable}`
    /// matches one or more characters without `/` that do not start with a
    /// dot (``sanitize`` never writes one), the rest literally. The job
    /// loader asks it whether an export could write one of the store's files.
    ///
    /// With `datesAreDates`, `{date}` matches only a `yyyy-MM-dd` date, as
    /// the exports write it: `{date}.sqlite` then cannot be `snapshot.sqlite`.
    package static func matches(_ name: String, template: String, datesAreDates: Bool = false) -> Bool {
        // Literal pieces between the variables: "changes-{date}.csv" → ["changes-", ".csv"], variables ["date"].
        var pieces: [Substring] = []
        var variables: [Substring] = []
        var rest = Substring(template)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            pieces.append(rest[..<open])
            variables.append(rest[rest.index(after: open)..<close])
            rest = rest[rest.index(after: close)...]
        }
        pieces.append(rest)
        let text = Array(name.unicodeScalars)
        func isDate(_ from: Int, _ to: Int) -> Bool {
            guard to - from == 10 else { return false }
            return (0..<10).allSatisfy { offset in
                let scalar = text[from + offset]
                return offset == 4 || offset == 7 ? scalar == "-" : ("0"..."9").contains(scalar)
            }
        }
        func match(_ piece: Int, _ at: Int) -> Bool {
            let literal = Array(pieces[piece].unicodeScalars)
            guard at + literal.count <= text.count, Array(text[at..<(at + literal.count)]) == literal else { return false }
            let after = at + literal.count
            if piece == pieces.count - 1 { return after == text.count }
            // A variable: at least one character, no '/', not starting with '.'.
            guard after < text.count, text[after] != "." else { return false }
            let strictDate = datesAreDates && variables[piece] == "date"
            var end = after + 1
            while end <= text.count {
                if text[end - 1] == "/" { return false }
                if (!strictDate || isDate(after, end)), match(piece + 1, end) { return true }
                end += 1
            }
            return false
        }
        return match(0, 0)
    }
}
