import CLibXML2
import Foundation

/// A safe, streaming XML writer over libxml2's `xmlTextWriter`, the base of the
/// RSS (and other XML) exports.
///
/// What it guarantees, so callers cannot get it wrong (DESIGN Invariant 7):
/// - element and attribute names are `StaticString`s: no markup is ever built from data;
/// - every text and attribute value passes through ``XMLText/xmlSafe(_:)`` and then
///   libxml2's escaping (`&`, `<`, `>`, quotes; CR/LF/tab in attributes as character
///   references);
/// - the bytes are streamed through ``XMLStreamValidator`` as they are produced, and the
///   document is rejected (``ExportError/invalidXML(name:line:column:message:)``) before
///   ``write(to:indent:_:)`` renames it into place — an invalid document is never published;
/// - memory does not grow with the document: libxml2 hands over 4 KB chunks that go
///   straight to the file (``OutputSink``) and the validator.
///
/// The instance passed to the body is only valid inside it.
package final class XMLDocumentWriter {
    private var writer: xmlTextWriterPtr?
    private let output: XMLOutputContext
    /// The document's name in errors.
    package let name: String

    fileprivate init(writer: xmlTextWriterPtr, output: XMLOutputContext, name: String) {
        self.writer = writer
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
    package static func write(to url: URL, indent: Bool = true, _ body: (XMLDocumentWriter) throws -> Void) throws -> Int64 {
        try AtomicFile.write(to: url) { sink in
            let start = sink.bytesWritten
            try produce(name: url.lastPathComponent, indent: indent, emit: { try sink.write($0) }, body: body)
            return sink.bytesWritten - start
        }
    }

    /// Produces a document in memory (validated the same way).
    package static func render(name: String, indent: Bool = true, _ body: (XMLDocumentWriter) throws -> Void) throws -> [UInt8] {
        var bytes: [UInt8] = []
        try produce(name: name, indent: indent, emit: { bytes.append(contentsOf: $0) }, body: body)
        return bytes
    }

    /// Produces a document, handing each chunk of bytes to `emit` as it is ready.
    /// Validation happens on the same chunks; the call throws after the last chunk when
    /// the document is not well-formed, so whatever `emit` stored must then be discarded.
    package static func produce(
        name: String, indent: Bool = true,
        emit: (UnsafeRawBufferPointer) throws -> Void,
        body: (XMLDocumentWriter) throws -> Void
    ) throws {
        XMLValidator.ensureInitialized()
        let validator = try XMLStreamValidator(name: name)
        try withoutActuallyEscaping(emit) { emit in
            let output = XMLOutputContext(emit: emit, validator: validator)
            try withExtendedLifetime(output) {
                let context = Unmanaged.passUnretained(output).toOpaque()
                guard let buffer = xmlOutputBufferCreateIO(xmlDocumentWriterOutput, nil, context, nil) else {
                    throw ExportError.xmlWriter(name: name, operation: "xmlOutputBufferCreateIO")
                }
                guard let textWriter = xmlNewTextWriter(buffer) else {
                    xmlOutputBufferClose(buffer)
                    throw ExportError.xmlWriter(name: name, operation: "xmlNewTextWriter")
                }
                let document = XMLDocumentWriter(writer: textWriter, output: output, name: name)
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

    private static let indentString: StaticString = "  "

    // MARK: Writing

    /// Opens `<name`. Attributes may follow until content or a child is written.
    package func startElement(_ name: StaticString) throws {
        try check(xmlTextWriterStartElement(try handle(), name.utf8Start), "xmlTextWriterStartElement")
    }

    /// Closes the innermost open element (`/>` when it is empty).
    package func endElement() throws {
        try check(xmlTextWriterEndElement(try handle()), "xmlTextWriterEndElement")
    }

    /// Writes `name="value"` on the element just opened.
    package func attribute(_ name: StaticString, _ value: String) throws {
        let w = try handle()
        try XMLText.xmlSafe(value).withXMLChars { v in
            try check(xmlTextWriterWriteAttribute(w, name.utf8Start, v), "xmlTextWriterWriteAttribute")
        }
    }

    /// Writes `<name>text</name>`.
    package func element(_ name: StaticString, _ text: String) throws {
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
