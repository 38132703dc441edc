import Catalog
import Crawl
import Foundation

// PLACEHOLDER: to be replaced in this session (issue 4).
public enum ITunesCharts {
    static func scopes(settings: ITunesChartsSettings, baseURL: URL, genres: [Record]) -> [CrawlScope] { [] }
}
