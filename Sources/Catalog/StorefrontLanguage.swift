import Foundation

/// The language a storefront's catalogue is written in, for a feed's
/// `<language>` when the job does not set one.
///
/// iTunes gives the storefront as ISO 3166 alpha-3 (`USA`) in records and
/// takes alpha-2 (`us`) in requests: both are accepted. The language is the
/// storefront's own default (Apple serves Canada in English, Switzerland in
/// German), as an RFC 5646 tag in the lower case feeds conventionally use.
public enum StorefrontLanguage {
    /// `en-us` for `us`/`USA`, `de-ch` for `ch`/`CHE`…; nil for a code it does not know.
    public static func tag(forCountry country: String) -> String? {
        let code = country.trimmingCharacters(in: .whitespaces).lowercased()
        let alpha2 = code.count == 3 ? alpha3To2[code] : code
        guard let alpha2, let language = languages[alpha2] else { return nil }
        return "\(language)-\(alpha2)"
    }

    private static let languages: [String: String] = [
        "us": "en", "gb": "en", "ca": "en", "au": "en", "nz": "en", "ie": "en", "in": "en", "za": "en", "sg": "en",
        "ph": "en", "ng": "en", "ke": "en", "gh": "en", "my": "en", "pk": "en",
        "de": "de", "at": "de", "ch": "de", "fr": "fr", "be": "fr", "lu": "fr", "es": "es", "mx": "es", "ar": "es",
        "co": "es", "cl": "es", "pe": "es", "ve": "es", "ec": "es", "uy": "es", "it": "it", "pt": "pt", "br": "pt",
        "nl": "nl", "se": "sv", "no": "nb", "dk": "da", "fi": "fi", "pl": "pl", "cz": "cs", "sk": "sk", "hu": "hu",
        "ro": "ro", "bg": "bg", "gr": "el", "tr": "tr", "ru": "ru", "ua": "uk", "il": "he", "sa": "ar", "ae": "ar",
        "eg": "ar", "jp": "ja", "kr": "ko", "cn": "zh", "tw": "zh", "hk": "zh", "th": "th", "vn": "vi", "id": "id",
        "hr": "hr", "si": "sl", "lt": "lt", "lv": "lv", "ee": "et",
    ]

    private static let alpha3To2: [String: String] = [
        "usa": "us", "gbr": "gb", "can": "ca", "aus": "au", "nzl": "nz", "irl": "ie", "ind": "in", "zaf": "za",
        "sgp": "sg", "phl": "ph", "nga": "ng", "ken": "ke", "gha": "gh", "mys": "my", "pak": "pk",
        "deu": "de", "aut": "at", "che": "ch", "fra": "fr", "bel": "be", "lux": "lu", "esp": "es", "mex": "mx",
        "arg": "ar", "col": "co", "chl": "cl", "per": "pe", "ven": "ve", "ecu": "ec", "ury": "uy", "ita": "it",
        "prt": "pt", "bra": "br", "nld": "nl", "swe": "se", "nor": "no", "dnk": "dk", "fin": "fi", "pol": "pl",
        "cze": "cz", "svk": "sk", "hun": "hu", "rou": "ro", "bgr": "bg", "grc": "gr", "tur": "tr", "rus": "ru",
        "ukr": "ua", "isr": "il", "sau": "sa", "are": "ae", "egy": "eg", "jpn": "jp", "kor": "kr", "chn": "cn",
        "twn": "tw", "hkg": "hk", "tha": "th", "vnm": "vn", "idn": "id", "hrv": "hr", "svn": "si", "ltu": "lt",
        "lva": "lv", "est": "ee",
    ]
}
