import Catalog
import Dispatch
import Foundation
import Snapshot

/// One table's CSV file written from the store's bytes: the key, one column
/// per field of the payload, and optionally `extra` (the members no column
/// holds, as JSON).
///
/// The rows are read on the calling thread (one read, in the store's order)
/// and copied into batches of about a megabyte; the batches are formatted on
/// the other cores and written in the order they were read. A value that
/// needs nothing done to it is copied from the payload to the file without
/// becoming a String (``CSVWriter/writeJSONField(_:escaped:scratch:into:)``). Memory
/// holds a few batches, or one record when a record is larger than a batch.
struct CSVTableFile: Sendable {
    /// The header, as the file starts.
    var header: [String]
    /// The columns after the key, each read from its `field`.
    var columns: [ExportColumn]
    /// Whether the last column is `extra`.
    var extra: Bool
    /// Only this source's records (records-file tables), each key without its `source:` prefix.
    var source: String?
    var options: CSVOptions

    /// A batch is handed to a formatter once it holds this many bytes of payloads.
    static let batchBytes = 1 << 20
    /// Batches read but not yet written: enough to keep every core busy.
    static var batchesInFlight: Int { 2 * ProcessInfo.processInfo.activeProcessorCount }

    /// Writes `entity`'s records to `url`; returns the rows written.
    func write(to url: URL, entity: EntityKind, store: any SnapshotStore) throws -> Int {
        let sourcePrefix = source.map { Array(($0 + ":").utf8) } ?? []
        let sourceBytes = source.map { Array($0.utf8) }
        let path = url.path
        let parallel = ProcessInfo.processInfo.activeProcessorCount > 1
        return try AtomicFile.write(to: url) { sink in
            var writer = CSVWriter(options: options)
            try writer.writeHeader(header, into: &sink)
            var rows = 0
            var inFlight: [Batch] = []
            var batch = Batch()
            func writeOldest(_ sink: inout OutputSink) throws {
                let oldest = inFlight.removeFirst()
                oldest.done.wait()
                try oldest.write(into: &sink)
                rows += oldest.rowCount
            }
            func dispatch(_ sink: inout OutputSink) throws {
                let full = batch
                batch = Batch()
                let table = self
                if parallel {
                    DispatchQueue.global().async { full.format(table, path: path) }
                } else {
                    full.format(table, path: path)
                }
                inFlight.append(full)
                while inFlight.count >= Self.batchesInFlight { try writeOldest(&sink) }
            }
            try store.forEachRecordBytes(of: entity, order: .insertion) { record in
                var key = record.key
                if let sourceBytes {
                    guard record.source.elementsEqual(sourceBytes) else { return }
                    if key.starts(with: sourcePrefix) { key = UnsafeBufferPointer(rebasing: key[sourcePrefix.count...]) }
                }
                batch.append(key: key, payload: record.payload)
                if batch.bytes >= Self.batchBytes { try dispatch(&sink) }
            }
            if !batch.isEmpty { try dispatch(&sink) }
            while !inFlight.isEmpty { try writeOldest(&sink) }
            return rows
        }
    }

    /// Rows copied out of the store, then their CSV text. Shared by the
    /// reading thread and one formatter: the reader fills it and hands it
    /// over, the formatter sets `result` and signals `done`, and only then
    /// does the reader read `result` (the semaphore orders the two).
    private final class Batch: @unchecked Sendable {
        private var arena: [UInt8] = []
        private var rows: [(key: Range<Int>, payload: Range<Int>)] = []
        private(set) var rowCount = 0
        /// The rows' CSV text, or why there is none.
        private var output: OutputSink?
        private var failure: (any Error)?
        let done = DispatchSemaphore(value: 0)

        init() {
            // Room for a batch's payloads up front: growing by doubling copied each batch twice over.
            arena.reserveCapacity(CSVTableFile.batchBytes + CSVTableFile.batchBytes / 8)
        }

        /// Appends the formatted rows to `sink`; call after `done`.
        func write(into sink: inout OutputSink) throws {
            if let failure { throw failure }
            guard let output = output.take() else { return }
            try sink.write(contentsOf: output)
        }

        var bytes: Int { arena.count }
        var isEmpty: Bool { rows.isEmpty }

        func append(key: UnsafeBufferPointer<UInt8>, payload: UnsafeBufferPointer<UInt8>) {
            let keyStart = arena.count
            arena.append(contentsOf: key)
            let payloadStart = arena.count
            arena.append(contentsOf: payload)
            rows.append((keyStart..<payloadStart, payloadStart..<arena.count))
        }

        func format(_ table: CSVTableFile, path: String) {
            defer { done.signal() }
            var sink = OutputSink(memoryFor: path, capacity: max(arena.count + arena.count / 4, 4096))
            do {
                try formatRows(table, into: &sink)
                output = consume sink
            } catch {
                failure = error
            }
            arena = []
        }

        private func formatRows(_ table: CSVTableFile, into sink: inout OutputSink) throws {
            var writer = CSVWriter(options: table.options, continuing: table.header.count)
            var projection = PayloadProjection(table.columns)
            var found = [(value: Range<Int>, escaped: Bool)?](repeating: nil, count: table.columns.count)
            var scratch: [UInt8] = []
            try arena.withUnsafeBufferPointer { arena in
                for row in rows {
                    let payload = UnsafeBufferPointer(rebasing: arena[row.payload])
                    for index in found.indices { found[index] = nil }
                    let members = projection.members(of: payload) { column, value, escaped in found[column] = (value, escaped) }
                    try writer.writeTextField(UnsafeBufferPointer(rebasing: arena[row.key]), into: &sink)
                    var present = 0
                    for member in found {
                        guard let member else {
                            try writer.writeField(.null, into: &sink)
                            continue
                        }
                        let json = UnsafeBufferPointer(rebasing: payload[member.value])
                        if json.first != UInt8(ascii: "n") { present += 1 }
                        try writer.writeJSONField(json, escaped: member.escaped, scratch: &scratch, into: &sink)
                    }
                    if table.extra {
                        // Every member has a column (nearly every row): no extra, and no parse.
                        if members == present {
                            try writer.writeField(.null, into: &sink)
                        } else {
                            let values = found.map { $0.map { PayloadProjection.value(UnsafeBufferPointer(rebasing: payload[$0.value]), escaped: $0.escaped) } ?? .null }
                            let json = ExtraMembers.json(payload: String(decoding: payload, as: UTF8.self), columns: table.columns, values: values)
                            try writer.writeField(json.map(CSVCell.text) ?? .null, into: &sink)
                        }
                    }
                    try writer.endRow(into: &sink)
                }
            }
            rowCount = writer.rowCount
        }
    }
}
