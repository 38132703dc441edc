import Catalog
import Connectors
import Foundation

/// A nightly job, as read from a `jobs/*.yml` file. Relative paths in the file
/// are resolved against the job file's folder, so cron can run it from anywhere.
public struct JobSpec: Sendable, Equatable {
    public var name: String
    /// Where the job file was read from (for messages).
    public var file: String
    /// The internal snapshot database.
    public var storePath: String
    /// The folder exports are written to.
    public var outputDirectory: String
    /// When set, the run starts the embedded simulator and points every source
    /// that has no explicit `baseURL` at it.
    public var simulator: SimulatorSpec?
    public var http: HTTPSettings
    public var sources: [SourceSpec]
    public var exports: [ExportSpec]
    /// How long the change log and runs are kept; nil keeps them all.
    public var retention: RetentionPolicy?

    public init(
        name: String, file: String, storePath: String, outputDirectory: String,
        simulator: SimulatorSpec? = nil, http: HTTPSettings = .init(),
        sources: [SourceSpec], exports: [ExportSpec], retention: RetentionPolicy? = nil
    ) {
        self.name = name
        self.file = file
        self.storePath = storePath
        self.outputDirectory = outputDirectory
        self.simulator = simulator
        self.http = http
        self.sources = sources
        self.exports = exports
        self.retention = retention
    }
}


extension JobSpec {
    /// How each source maps into the canonical model, for the store.
    public var sourceMappings: [String: SourceMapping] {
        Dictionary(uniqueKeysWithValues: sources.map { source in
            let kind = source.settings
            return (source.name, SourceMapping(canonical: { kind.canonical($0, $1) }, role: { kind.role(of: $0) }))
        })
    }
}
