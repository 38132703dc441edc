import Catalog
import Crawl
import Foundation

// PLACEHOLDER: to be replaced in this session (issue 4).
public enum MarketplaceDetail {
    static func scopes(baseURL: URL, listings: [Record]) -> [CrawlScope] { [] }
}
