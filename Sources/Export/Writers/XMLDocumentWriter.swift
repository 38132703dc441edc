import CLibXML2
import Foundation

/// A safe, streaming XML writer, the base of the RSS (and other XML) exports.
///
/// What it guarantees, so callers cannot get it wrong (DESIGN Invariant 7):
/// - element and attribute names are `StaticString`s: no markup is ever built from data;
/// - every text and attribute value passes through ``XMLText/xmlSafe(_:)`` and then
///   the escaping of libxml2's xmlTextWriter (`&`, `<`, `>`, quotes; CR in text, and
///   CR/LF/tab in attributes, as character references);
/// - the bytes are streamed through ``XMLStreamValidator`` (libxml2's strict parser) as
///   they are produced, and the document is rejected
///   (``ExportError/invalidXML(name:line:column:message:)``) before
///   ``write(to:indent:_:)`` renames it into place — an invalid document is never published;
/// - memory does not grow with the document: the bytes go out in chunks to the
///   file (``OutputSink``) and the validator.
///
/// Two engines write the same bytes: ``Engine/bytes`` (the default) serializes
/// directly; ``Engine/libxml2`` drives libxml2's xmlTextWriter, as every export
/// did before and as the tests still do, to prove byte for byte that the two agree.
/// The direct one exists for speed: xmlTextWriter's per-call allocations and
/// escaping copies were most of a 100k-item feed's writing time.
///
/// The instance passed to the body is only valid inside it.
package final class XMLDocumentWriter {
    /// What produces the bytes (see the type's documentation).
    package enum Engine: Sendable {
        /// Bytes written directly, exactly as xmlTextWriter writes them.
        case bytes
        /// libxml2's xmlTextWriter.
        case libxml2
    }

    private var writer: xmlTextWriterPtr?
    private let output: XMLOutputContext
    /// The document's name in errors.
    package let name: String
    /// The direct engine's state; nil with libxml2 or once the document is finished.
    private var direct: DirectXMLSerializer?

    fileprivate init(writer: xmlTextWriterPtr?, direct: DirectXMLSerializer?, output: XMLOutputContext, name: String) {
        self.writer = writer
        self.direct = direct
        self.output = output
        self.name = name
    }

    // MARK: Producing whole documents

    /// Atomically writes an XML document to `url` (via ``AtomicFile``): the XML
    /// declaration (`<?xml version="1.0" encoding="UTF-8"?>`), what `body` writes, then
    /// a strict re-parse of every byte. The file is renamed into place only if all of
    /// that succeeded.
    /// - Returns: the size of the document in bytes.
    @discardableResult
    package static func write(to url: URL, indent: Bool = true, engine: Engine = .bytes,
                              _ body: (XMLDocumentWriter) throws -> Void) throws -> Int64 {
        try AtomicFile.write(to: url) { sink in
            let start = sink.bytesWritten
            try produce(name: url.lastPathComponent, indent: indent, engine: engine, emit: { try sink.write($0) }, body: body)
            return sink.bytesWritten - start
        }
    }

    /// Produces a document in memory (validated the same way).
    package static func render(name: String, indent: Bool = true, engine: Engine = .bytes,
                               _ body: (XMLDocumentWriter) throws -> Void) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try produce(name: name, indent: indent, engine: engine, emit: { bytes.append(contentsOf: $0) }, body: body)
        return bytes
    }

    /// Produces a document, handing each chunk of bytes to `emit` as it is ready.
    /// Validation happens on the same chunks; the call throws after the last chunk when
    /// the document is not well-formed, so whatever `emit` stored must then be discarded.
    package static func produce(
        name: String, indent: Bool = true, engine: Engine = .bytes,
        emit: (UnsafeRawBufferPointer) throws -> Void,
        body: (XMLDocumentWriter) throws -> Void
    ) throws {
        XMLValidator.ensureInitialized()
        let validator = try XMLStreamValidator(name: name)
        try withoutActuallyEscaping(emit) { emit in
            let output = XMLOutputContext(emit: emit, validator: validator)
            try withExtendedLifetime(output) {
                if engine == .bytes {
                    let document = XMLDocumentWriter(writer: nil, direct: DirectXMLSerializer(indent: indent), output: output, name: name)
                    defer {
                        document.direct = nil
                        output.emit = nil
                    }
                    try document.directWrite { $0.startDocument() }
                    try body(document)
                    try document.directWrite { $0.endDocument() }
                    try document.flushDirect()
                    document.direct = nil
                    try output.validator.finish()
                    return
                }
                let context = Unmanaged.passUnretained(output).toOpaque()
                guard let buffer = xmlOutputBufferCreateIO(xmlDocumentWriterOutput, nil, context, nil) else {
                    throw ExportError.xmlWriter(name: name, operation: "xmlOutputBufferCreateIO")
                }
                guard let textWriter = xmlNewTextWriter(buffer) else {
                    xmlOutputBufferClose(buffer)
                    throw ExportError.xmlWriter(name: name, operation: "xmlNewTextWriter")
                }
                let document = XMLDocumentWriter(writer: textWriter, direct: nil, output: output, name: name)
                // Frees the writer and its output buffer while `emit` is still valid, then
                // drops `emit`, which must not outlive this call (the document object might).
                defer {
                    document.close()
                    output.emit = nil
                }
                if indent {
                    try document.check(xmlTextWriterSetIndent(textWriter, 1), "xmlTextWriterSetIndent")
                    try document.check(xmlTextWriterSetIndentString(textWriter, XMLDocumentWriter.indentString.utf8Start),
                                       "xmlTextWriterSetIndentString")
                }
                try document.check(xmlTextWriterStartDocument(textWriter, "1.0", "UTF-8", nil), "xmlTextWriterStartDocument")
                try body(document)
                try document.check(xmlTextWriterEndDocument(textWriter), "xmlTextWriterEndDocument")
                try document.check(xmlTextWriterFlush(textWriter), "xmlTextWriterFlush")
                document.close()
                if let error = output.error { throw error }
                try output.validator.finish()
            }
        }
    }

    /// Runs `operation` on the direct serializer and sends its bytes on once a chunk is full.
    @inline(__always)
    private func directWrite(_ operation: (inout DirectXMLSerializer) -> Bool) throws {
        guard direct != nil else {
            throw ExportError.xmlWriter(name: name, operation: "use after the document was finished")
        }
        guard operation(&direct!) else { throw ExportError.xmlWriter(name: name, operation: "xmlTextWriterEndElement") }
        if direct!.bytes.count >= DirectXMLSerializer.chunkSize { try flushDirect() }
    }

    private func flushDirect() throws {
        guard direct != nil, !direct!.bytes.isEmpty else { return }
        try direct!.bytes.withUnsafeBytes { chunk in
            output.validator.feed(chunk)
            guard let emit = output.emit else {
                throw ExportError.xmlWriter(name: name, operation: "use after the document was finished")
            }
            try emit(chunk)
        }
        direct!.bytes.removeAll(keepingCapacity: true)
    }

    private static let indentString: StaticString = "  "

    // MARK: Writing

    /// Opens `<name`. Attributes may follow until content or a child is written.
    package func startElement(_ name: StaticString) throws {
        if writer == nil { return try directWrite { $0.startElement(name); return true } }
        try check(xmlTextWriterStartElement(try handle(), name.utf8Start), "xmlTextWriterStartElement")
    }

    /// Closes the innermost open element (`/>` when it is empty).
    package func endElement() throws {
        if writer == nil { return try directWrite { $0.endElement() } }
        try check(xmlTextWriterEndElement(try handle()), "xmlTextWriterEndElement")
    }

    /// Writes `name="value"` on the element just opened.
    package func attribute(_ name: StaticString, _ value: String) throws {
        if writer == nil {
            var safe = XMLText.xmlSafe(value)
            return try safe.withUTF8 { bytes in try directWrite { $0.attribute(name, bytes); return true } }
        }
        let w = try handle()
        try XMLText.xmlSafe(value).withXMLChars { v in
            try check(xmlTextWriterWriteAttribute(w, name.utf8Start, v), "xmlTextWriterWriteAttribute")
        }
    }

    /// Writes `<name>text</name>`.
    package func element(_ name: StaticString, _ text: String) throws {
        if writer == nil {
            var safe = XMLText.xmlSafe(text)
            return try safe.withUTF8 { bytes in
                try directWrite {
                    $0.startElement(name)
                    $0.text(bytes)
                    return $0.endElement()
                }
            }
        }
        let w = try handle()
        try XMLText.xmlSafe(text).withXMLChars { t in
            try check(xmlTextWriterWriteElement(w, name.utf8Start, t), "xmlTextWriterWriteElement")
        }
    }

    /// Writes `<name a1="v1" …/>` (an empty element with attributes).
    package func emptyElement(_ name: StaticString, attributes: KeyValuePairs<StaticString, String>) throws {
        try startElement(name)
        for (key, value) in attributes { try attribute(key, value) }
        try endElement()
    }

    /// Writes text content inside the open element.
    package func text(_ text: String) throws {
        if writer == nil {
            var safe = XMLText.xmlSafe(text)
            return try safe.withUTF8 { bytes in try directWrite { $0.text(bytes); return true } }
        }
        let w = try handle()
        try XMLText.xmlSafe(text).withXMLChars { t in
            try check(xmlTextWriterWriteString(w, t), "xmlTextWriterWriteString")
        }
    }

    // MARK: Plumbing

    private func handle() throws -> xmlTextWriterPtr {
        guard let writer else {
            throw ExportError.xmlWriter(name: name, operation: "use after the document was finished")
        }
        return writer
    }

    fileprivate func check(_ result: Int32, _ operation: String) throws {
        if let error = output.error { throw error }
        if result < 0 { throw ExportError.xmlWriter(name: name, operation: operation) }
    }

    fileprivate func close() {
        direct = nil
        if let writer {
            self.writer = nil
            xmlFreeTextWriter(writer) // also flushes and closes the output buffer
        }
    }

    deinit { close() }
}

/// Where libxml2's output buffer sends its bytes.
fileprivate final class XMLOutputContext {
    var emit: ((UnsafeRawBufferPointer) throws -> Void)?
    let validator: BackgroundValidator
    var error: (any Error)?

    init(emit: @escaping (UnsafeRawBufferPointer) throws -> Void, validator: XMLStreamValidator) {
        self.emit = emit
        self.validator = BackgroundValidator(validator)
    }
}

/// Feeds the strict re-parse on another core while the writer goes on: the
/// parse costs about as much as the writing, so a feed of 100k items is
/// written in roughly the time of the slower of the two instead of their sum.
///
/// Bytes are copied into chunks of ``chunkSize`` handed to a serial queue;
/// at most ``chunksInFlight`` wait there, so memory stays bounded whatever
/// the relative speeds. The validator is touched only on that queue until
/// ``finish()`` has drained it.
fileprivate final class BackgroundValidator: @unchecked Sendable {
    static let chunkSize = 256 * 1024
    static let chunksInFlight = 8

    private let validator: XMLStreamValidator
    private let queue = DispatchQueue(label: "storesync.xml-validator")
    private let slots = DispatchSemaphore(value: BackgroundValidator.chunksInFlight)
    private var pending: [UInt8] = []

    init(_ validator: XMLStreamValidator) {
        self.validator = validator
        pending.reserveCapacity(Self.chunkSize)
    }

    func feed(_ bytes: UnsafeRawBufferPointer) {
        pending.append(contentsOf: bytes)
        if pending.count >= Self.chunkSize { flush() }
    }

    private func flush() {
        guard !pending.isEmpty else { return }
        let chunk = pending
        pending.removeAll(keepingCapacity: true)
        slots.wait()
        queue.async { [self] in
            chunk.withUnsafeBytes { validator.feed($0) }
            slots.signal()
        }
    }

    /// Parses what is left and throws the document's first error, if any.
    func finish() throws {
        flush()
        try queue.sync { try validator.finish() }
    }
}

/// `xmlOutputWriteCallback`: a top-level function, as Swift 6 requires for C callbacks.
private func xmlDocumentWriterOutput(_ context: UnsafeMutableRawPointer?, _ buffer: UnsafePointer<CChar>?,
                                     _ length: Int32) -> Int32 {
    guard let context else { return -1 }
    let output = Unmanaged<XMLOutputContext>.fromOpaque(context).takeUnretainedValue()
    if output.error != nil { return -1 }
    guard length > 0, let buffer else { return 0 }
    let bytes = UnsafeRawBufferPointer(start: buffer, count: Int(length))
    output.validator.feed(bytes)
    do {
        guard let emit = output.emit else { return -1 }
        try emit(bytes)
    } catch {
        output.error = error
        return -1
    }
    return length
}

extension String {
    /// Calls `body` with the string as a NUL-terminated `xmlChar` pointer (no copy for
    /// native strings). Callers pass ``XMLText/xmlSafe(_:)`` output, which has no NUL.
    func withXMLChars<R>(_ body: (UnsafePointer<xmlChar>) throws -> R) rethrows -> R {
        try withCString { try $0.withMemoryRebound(to: xmlChar.self, capacity: utf8.count + 1, body) }
    }
}

/// The direct engine of ``XMLDocumentWriter``: the bytes libxml2's xmlTextWriter
/// (2.9) writes for the same calls, appended to ``bytes``.
///
/// Its rules, as xmlTextWriter has them: text escapes `< > & "` and CR (as
/// `&#13;`); attribute values escape `< > & "` and tab, LF, CR (`&#9;`, `&#10;`,
/// `&#13;`); other bytes, UTF-8 included, go out as they are. An element with no
/// content closes as `/>`. Indenting puts each element on its own line at two
/// spaces a level, except inside an element that already has text.
struct DirectXMLSerializer {
    /// How many bytes gather before they are handed on.
    static let chunkSize = 64 * 1024

    private enum State { case name, text }

    var bytes: [UInt8] = []
    private let indent: Bool
    private var open: [(name: StaticString, state: State)] = []
    /// xmlTextWriter's `doindent`: whether an end tag goes on its own indented line.
    private var indentNext = true

    init(indent: Bool) {
        self.indent = indent
        bytes.reserveCapacity(Self.chunkSize + 4096)
    }

    private mutating func append(_ text: StaticString) {
        bytes.append(contentsOf: UnsafeBufferPointer(start: text.utf8Start, count: text.utf8CodeUnitCount))
    }

    private mutating func writeIndent() {
        for _ in 0..<max(0, open.count - 1) { bytes.append(0x20); bytes.append(0x20) }
    }

    mutating func startDocument() -> Bool {
        append("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
        return true
    }

    mutating func endDocument() -> Bool {
        while !open.isEmpty { _ = endElement() }
        if !indent { bytes.append(0x0A) }
        return true
    }

    mutating func startElement(_ name: StaticString) {
        if let last = open.indices.last, open[last].state == .name {
            bytes.append(UInt8(ascii: ">"))
            if indent { bytes.append(0x0A) }
            open[last].state = .text
        }
        open.append((name, .name))
        if indent { writeIndent() }
        bytes.append(UInt8(ascii: "<"))
        append(name)
    }

    /// False when no element is open.
    mutating func endElement() -> Bool {
        guard let top = open.last else { return false }
        switch top.state {
        case .name:
            if indent { indentNext = true }
            append("/>")
        case .text:
            if indent && indentNext { writeIndent() }
            indentNext = true
            append("</")
            append(top.name)
            bytes.append(UInt8(ascii: ">"))
        }
        if indent { bytes.append(0x0A) }
        open.removeLast()
        return true
    }

    /// `name="value"` on the open element (whose start tag is still open).
    mutating func attribute(_ name: StaticString, _ value: UnsafeBufferPointer<UInt8>) {
        bytes.append(0x20)
        append(name)
        bytes.append(UInt8(ascii: "="))
        bytes.append(UInt8(ascii: "\""))
        escape(value, attribute: true)
        bytes.append(UInt8(ascii: "\""))
    }

    mutating func text(_ value: UnsafeBufferPointer<UInt8>) {
        if let last = open.indices.last, open[last].state == .name {
            bytes.append(UInt8(ascii: ">"))
            open[last].state = .text
        }
        if indent { indentNext = false }
        escape(value, attribute: false)
    }

    /// Appends `value` escaped; unchanged runs are copied in one append.
    private mutating func escape(_ value: UnsafeBufferPointer<UInt8>, attribute: Bool) {
        var runStart = 0
        for index in 0..<value.count {
            let byte = value[index]
            // Everything at or above `>` but `>` itself, the common case, in one comparison.
            if byte > UInt8(ascii: ">") { continue }
            let replacement: StaticString
            switch byte {
            case UInt8(ascii: "<"): replacement = "&lt;"
            case UInt8(ascii: ">"): replacement = "&gt;"
            case UInt8(ascii: "&"): replacement = "&amp;"
            case UInt8(ascii: "\""): replacement = "&quot;"
            case 0x0D: replacement = "&#13;"
            case 0x0A where attribute: replacement = "&#10;"
            case 0x09 where attribute: replacement = "&#9;"
            default: continue
            }
            if runStart < index { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: value[runStart..<index])) }
            append(replacement)
            runStart = index + 1
        }
        if runStart < value.count { bytes.append(contentsOf: UnsafeBufferPointer(rebasing: value[runStart...])) }
    }
}
