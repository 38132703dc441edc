import Catalog
import Crawl
import Foundation

// PLACEHOLDER: to be replaced in this session (issue 4).
public enum ITunesGenres {
    static func scopes(settings: ITunesGenresSettings, baseURL: URL) -> [CrawlScope] { [] }
}
