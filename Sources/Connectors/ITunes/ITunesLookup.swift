import Catalog
import Crawl
import Foundation

// PLACEHOLDER: to be replaced in this session (issue 4).
public enum ITunesLookup {
    static func scopes(settings: ITunesLookupSettings, baseURL: URL, items: [Record]) -> [CrawlScope] { [] }
}
