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
    /// The pixel size store artwork URLs are rewritten to (`artworkSize:`),
    /// within what Apple Podcasts accepts; see ``ArtworkURL``.
    public var artworkSize: Int = ArtworkURL.defaultSize
    /// Settings that came from the environment (`STORESYNC_…`) or `--set`
    /// rather than the file, in the order they were applied.
    public var overrides: [AppliedOverride] = []
    /// `keep: N` of exports with dated file names, by the export's template
    /// (``ExportSpec/target``): older files of the template beyond the newest N are removed.
    public var exportKeep: [String: Int] = [:]
    /// The webhook told about the run (`notify:`); nil for none.
    public var notify: NotifySpec?

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

    /// The snapshot store's own files (the database, its journal and WAL,
    /// the run lock, the history marker): no export may remove or replace
    /// them, even when the store sits in the output folder. Empty for a
    /// PostgreSQL store.
    public var storeFiles: Set<String> {
        let lower = storePath.lowercased()
        guard !lower.hasPrefix("postgres://"), !lower.hasPrefix("postgresql://") else { return [] }
        return Set(["", "-wal", "-shm", "-journal", ".lock", ".history"].map { storePath + $0 })
    }
}


extension JobSpec {
    /// How each source maps into the canonical model, for the store.
    public var sourceMappings: [String: SourceMapping] {
        Dictionary(uniqueKeysWithValues: sources.map { source in
            let kind = source.settings
            let size = artworkSize
            return (source.name, SourceMapping(
                canonical: { entity, wire in
                    var record = kind.canonical(entity, wire)
                    // Every store artwork URL at the size feeds need, whichever source gave it.
                    for field in Self.artworkFields {
                        if let url = record.fields[field]?.stringValue {
                            record.fields[field] = .string(ArtworkURL.hiRes(url, size: size))
                        }
                    }
                    return record
                },
                role: { kind.role(of: $0) }, owns: { kind.ownedFields(of: $0) }, keyRules: kind.keyRules,
                keepsWire: { entity, shape in
                    kind.keepsWireFields(of: entity) && !shape.names.contains(where: Self.artworkFields.contains)
                },
                takesDecoderFields: { fields in !fields.names.contains(where: Self.artworkFields.contains) }))
        })
    }

    /// Canonical fields that hold artwork URLs.
    static let artworkFields = ["artwork_url", "image_url"]

    /// Names what the mappings produce: when it differs from the one a store
    /// was last written with, the store re-derives its entities from the
    /// sightings it holds, so a new release (or a new `artworkSize`) does not
    /// report every record as changed.
    public var mappingFingerprint: String {
        "mapping \(CanonicalSchema.mappingVersion); artwork \(artworkSize)"
    }
}
