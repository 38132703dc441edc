/// The shape of a `chart-entry` record: one rank of one chart on one night.
///
/// Exports (chart views, "top" feeds) read these fields, and chart
/// connectors produce them, so both sides name them from here.
public enum ChartEntry {
    /// Which chart, e.g. `toppodcasts`, `topsongs`, `most-played`.
    public static let chart = "chart"
    /// ISO 3166 country code, lower case.
    public static let country = "country"
    /// The genre id the chart is for (`""` for all genres) and its name.
    public static let genreID = "genreId"
    public static let genreName = "genreName"
    /// 1-based position.
    public static let rank = "rank"
    /// The charted item's entity (e.g. `podcast`) and key (its iTunes id).
    public static let itemEntity = "itemEntity"
    public static let itemKey = "itemKey"
    /// What the chart itself says about the item, so a feed needs no join.
    public static let name = "name"
    public static let artistName = "artistName"
    public static let artworkURL = "artworkUrl"
    public static let link = "link"
    public static let releaseDate = "releaseDate"

    /// The record key: chart, country, genre and rank identify a slot; the
    /// item in the slot is content, so a chart move is a change of that slot.
    public static func key(chart: String, country: String, genreID: String, rank: Int) -> String {
        "\(chart)|\(country)|\(genreID)|\(rank)"
    }
}
