/// A typed column of an entity's export, read from the record's payload.
///
/// In Catalog because two owners share it: the store applies the projection
/// (it reads the member out of the stored payload, however its backend can),
/// and the exports name and type their columns after it.
public struct ExportColumn: Sendable, Equatable {
    public enum Kind: String, Sendable { case text = "TEXT", integer = "INTEGER", real = "REAL" }
    public var name: String
    /// The payload member it comes from.
    public var field: String
    public var kind: Kind

    public init(_ name: String, _ field: String, _ kind: Kind = .text) {
        self.name = name
        self.field = field
        self.kind = kind
    }
}

/// The fixed column order of each entity in CSV and SQLite exports: the
/// entity's canonical fields (``CanonicalSchema/fields(of:)``), each column
/// named after its field. Derived, never listed twice, so an export can only
/// show what the canonical model defines; and since the model only ever
/// appends fields, spreadsheets and scripts built on one night's file read the next.
public enum EntityColumns {
    /// The columns of `entity`, in file order (none for records-file rows,
    /// whose columns are their file's own).
    public static func columns(for entity: EntityKind) -> [ExportColumn] {
        CanonicalSchema.fields(of: entity).map { ExportColumn($0.name, $0.name, $0.kind) }
    }
}
