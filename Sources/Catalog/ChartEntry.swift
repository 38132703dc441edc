/// The shape of a `chart-entry` record: one rank of one chart on one night.
///
/// Exports (chart views, "top" feeds) read these fields, and chart
/// connectors produce them, so both sides name them from here.
package enum ChartEntry {
    /// Which chart, e.g. `toppodcasts`, `topsongs`, `most-played`.
    package static let chart = "chart"
    /// ISO 3166 country code, lower case.
    package static let country = "country"
    /// The genre id the chart is for (`""` for all genres) and its name.
    package static let genreID = "genreId"
    package static let genreName = "genreName"
    /// 1-based position.
    package static let rank = "rank"
    /// The charted item's entity (e.g. `podcast`) and key (its iTunes id).
    package static let itemEntity = "itemEntity"
    package static let itemKey = "itemKey"
    /// What the chart itself says about the item, so a feed needs no join.
    package static let name = "name"
    package static let artistName = "artistName"
    package static let artworkURL = "artworkUrl"
    package static let link = "link"
    package static let releaseDate = "releaseDate"

    /// The record key: chart, country, genre and rank identify a slot; the
    /// item in the slot is content, so a chart move is a change of that slot.
    package static func key(chart: String, country: String, genreID: String, rank: Int) -> String {
        "\(chart)|\(country)|\(genreID)|\(rank)"
    }
}
