// swift-tools-version: 6.1
import PackageDescription

// Data flows one way: Connectors/Crawl → Snapshot → Export, orchestrated by
// SyncEngine; the CLI only parses arguments and calls SyncEngine.
let package = Package(
    name: "storesync",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "storesync", targets: ["storesync"]),
        .library(name: "SyncEngine", targets: ["SyncEngine"]),
        .library(name: "StoreSim", targets: ["StoreSim"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client", from: "1.37.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.2.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // The snapshot backend for fleets of workers (DESIGN.md: Stores).
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Come with postgres-nio; named for the event loops and TLS settings of its connections.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // Comes with Hummingbird; named because the simulator stops its server gracefully through it.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        // Test-only: an independent RFC 4180 parser to read our CSV back.
        .package(url: "https://github.com/yaslab/CSV.swift", from: "2.5.2"),
    ],
    targets: [
        .systemLibrary(
            name: "CLibXML2",
            pkgConfig: "libxml-2.0",
            providers: [.apt(["libxml2-dev"])]
        ),
        // gzip, for the feeds each night published (PublishedFeeds): no compression package is in the mirror.
        .systemLibrary(
            name: "CZlib",
            providers: [.apt(["zlib1g-dev"])]
        ),
        // Records, keys, canonical encoding, content hash, job model, errors.
        .target(name: "Catalog"),
        // HTTP transport, rate limiting, retries, paginators.
        .target(
            name: "Crawl",
            dependencies: [
                "Catalog",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // One folder per API: wire types and mapping to Records.
        .target(name: "Connectors", dependencies: ["Catalog", "Crawl", "CLibXML2"]),
        // The snapshot store interface and its SQLite backend: diff/apply, change
        // log, runs, checkpoints, typed reads; the one owner of GRDB and SQLite.
        .target(
            name: "Snapshot",
            dependencies: [
                "Catalog", .product(name: "GRDB", package: "GRDB.swift"),
                // SQLite's C API, for the two hot inserts of a load (RawStatement).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        // CSV, SQLite export, RSS over libxml2's xmlTextWriter.
        .target(
            name: "Export",
            // No GRDB: exports read the snapshot through its typed interface only.
            dependencies: ["Catalog", "Snapshot", "CLibXML2", "CZlib"]
        ),
        // The offline iTunes Store and marketplace.
        .target(
            name: "StoreSim",
            dependencies: [
                "Catalog", "Crawl",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // Job loading and the run pipeline: sources → crawl → diff → store → export.
        .target(
            name: "SyncEngine",
            dependencies: [
                "Catalog", "Crawl", "Connectors", "Snapshot", "Export",
                .product(name: "Yams", package: "Yams"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // `storesync bench`: storesync beside its peers, whole processes measured alike.
        .target(
            name: "Bench",
            dependencies: ["Catalog", "Export", "Snapshot"]
        ),
        .executableTarget(
            name: "storesync",
            dependencies: [
                "Catalog", "Crawl", "SyncEngine", "StoreSim", "Bench",
                // `migrate` only: a store copied whole, no run around it.
                "Snapshot",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(
            name: "TestSupport",
            dependencies: [
                "Catalog", "Crawl", "Snapshot", "StoreSim", "SyncEngine",
                .product(name: "Logging", package: "swift-log"),
                // Reads consumer databases (ChangesetReplica).
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            path: "Tests/TestSupport"
        ),
        .testTarget(name: "CatalogTests", dependencies: ["Catalog", "TestSupport"]),
        .testTarget(name: "CrawlTests", dependencies: ["Crawl", "TestSupport"]),
        .testTarget(name: "ConnectorsTests", dependencies: ["Connectors", "TestSupport"]),
        .testTarget(
            name: "SnapshotTests",
            dependencies: ["Snapshot", "TestSupport", .product(name: "GRDB", package: "GRDB.swift")]
        ),
        .testTarget(
            name: "ExportTests",
            dependencies: [
                "Export", "Snapshot", "CLibXML2", "TestSupport",
                .product(name: "CSV", package: "CSV.swift"),
                // Reads the consumer SQLite file an export writes.
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // Golden files are read through #filePath, not bundled.
            exclude: ["Golden"]
        ),
        .testTarget(name: "StoreSimTests", dependencies: ["StoreSim", "TestSupport"]),
        .testTarget(name: "BenchTests", dependencies: ["Bench"]),
        .testTarget(
            name: "SyncEngineTests",
            dependencies: [
                "SyncEngine", "Connectors", "Crawl", "Snapshot", "TestSupport", "CLibXML2",
                .product(name: "CSV", package: "CSV.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // A store written by an older release, read through #filePath (UpgradeTests).
            exclude: ["Fixtures"]
        ),
    ],
    swiftLanguageModes: [.v6]
)
