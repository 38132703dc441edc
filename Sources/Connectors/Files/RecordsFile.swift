import Catalog
import Crawl
import Foundation

// PLACEHOLDER: to be replaced in this session (issue 4).
public enum RecordsFile {
    static func scopes(settings: RecordsFileSettings) -> [CrawlScope] { [] }
}
