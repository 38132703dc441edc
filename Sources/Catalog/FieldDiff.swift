/// One top-level field whose value differs between two versions of a record.
public struct FieldChange: Sendable, Equatable {
    public var field: String
    /// Canonical JSON of the old value, nil when the field was absent.
    public var before: String?
    /// Canonical JSON of the new value, nil when the field is now absent.
    public var after: String?

    public init(field: String, before: String?, after: String?) {
        self.field = field
        self.before = before
        self.after = after
    }

    /// The fields that differ, in a stable (byte-sorted) order.
    package static func between(_ old: [String: JSONValue], _ new: [String: JSONValue]) -> [FieldChange] {
        let keys = Set(old.keys).union(new.keys).sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return keys.compactMap { key in
            let a = old[key], b = new[key]
            if a == b { return nil }
            let before = a.map { CanonicalJSON.string($0) }, after = b.map { CanonicalJSON.string($0) }
            // One value in two spellings is no change: the wire's `3100.0` and the
            // `3100` the store's canonical text reads back as are one number, as
            // the content hash (over the canonical encoding) already says.
            if before == after { return nil }
            return FieldChange(field: key, before: before, after: after)
        }
    }
}
