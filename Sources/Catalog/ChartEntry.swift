/// The shape of a `chart-entry` record: one item's place in one chart on one night.
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

    /// The record key: chart, country, genre and the charted item identify an
    /// entry; its rank is a field. So an item moving from rank 3 to 1 is a
    /// change of its `rank`, an item entering the chart an added entry and one
    /// leaving it a removed entry, whatever happens to the items around it.
    package static func key(chart: String, country: String, genreID: String, itemEntity: String, itemKey: String) -> String {
        "\(chart)|\(country)|\(genreID)|\(itemEntity)|\(itemKey)"
    }
}
