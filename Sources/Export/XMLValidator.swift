import CLibXML2
import Foundation

/// Strict well-formedness checks for XML we are about to publish.
///
/// Every feed is re-parsed before it replaces the previous one (DESIGN: libxml2
/// notes). The parse is libxml2's own parser with:
/// - no `XML_PARSE_RECOVER`: the first well-formedness error fails the document;
/// - namespace checking: an undeclared prefix (`itunes:` without `xmlns:itunes`)
///   fails too — libxml2 would still return a tree for it, so "got a document" is
///   not enough, the collected errors decide;
/// - `XML_PARSE_NONET` and no DTD loading or entity expansion; a `<!DOCTYPE` is
///   rejected outright (exports never carry one, and readers should not have to
///   process it);
/// - errors collected through the parser context's structured error callback
///   (`xmlSAXHandler.serror` with a context pointer), not the thread's global
///   handler, so concurrent validations do not see each other's errors and nothing
///   is printed to stderr.
///
/// It checks what `xmlReadMemory(…, XML_PARSE_NONET)` checks but builds no tree:
/// the SAX callbacks are no-ops, so memory stays constant and a feed can be checked
/// while it is being written (``XMLStreamValidator``).
package enum XMLValidator {
    /// Initialises libxml2 once per process (thread-safe: a `static let` is
    /// initialised exactly once). Call before using libxml2 from several threads.
    package static func ensureInitialized() { _ = initialized }

    private static let initialized: Void = { xmlInitParser() }()

    /// Throws unless `data` is a well-formed, namespace-well-formed XML 1.0 document.
    ///
    /// - Parameters:
    ///   - data: the complete document.
    ///   - name: how the document is named in the error (usually its file name).
    /// - Throws: ``ExportError/invalidXML(name:line:column:message:)`` with libxml2's
    ///   first error and its 1-based line and column.
    package static func validateStrict(_ data: Data, name: String) throws {
        let validator = try XMLStreamValidator(name: name)
        data.withUnsafeBytes { validator.feed($0) }
        try validator.finish()
    }

    /// ``validateStrict(_:name:)`` for bytes already in memory.
    package static func validateStrict(_ bytes: UnsafeRawBufferPointer, name: String) throws {
        let validator = try XMLStreamValidator(name: name)
        validator.feed(bytes)
        try validator.finish()
    }
}

/// An incremental strict XML check: ``feed(_:)`` the document in pieces as it is
/// produced, then ``finish()``. Same rules as ``XMLValidator/validateStrict(_:name:)``.
///
/// Not thread-safe (one document, one thread at a time); separate instances are
/// independent.
package final class XMLStreamValidator {
    /// The name used in errors.
    package let name: String
    private var context: xmlParserCtxtPtr?
    private var finished = false

    fileprivate var firstError: (line: Int, column: Int, message: String)?
    /// Number of errors (not warnings) seen so far.
    package private(set) var errorCount = 0

    /// - Throws: ``ExportError/invalidInput(path:reason:)`` if libxml2 cannot allocate a parser.
    package init(name: String) throws {
        XMLValidator.ensureInitialized()
        self.name = name
        var sax = xmlSAXHandler()
        sax.initialized = UInt32(XML_SAX2_MAGIC)
        // Non-nil namespace callbacks switch the parser to SAX2, where namespaces are
        // checked; they build nothing.
        sax.startElementNs = { _, _, _, _, _, _, _, _, _ in }
        sax.endElementNs = { _, _, _, _ in }
        sax.internalSubset = xmlStreamValidatorDoctype
        sax.serror = xmlStreamValidatorError
        let me = Unmanaged.passUnretained(self).toOpaque()
        let ctxt = name.withCString { xmlCreatePushParserCtxt(&sax, me, nil, 0, $0) }
        guard let ctxt else {
            throw ExportError.invalidInput(path: name, reason: "libxml2 could not create a parser")
        }
        xmlCtxtUseOptions(ctxt, Int32(XML_PARSE_NONET.rawValue))
        context = ctxt
    }

    deinit {
        if let context { xmlFreeParserCtxt(context) }
    }

    /// Whether an error was already found (the rest of the input is then ignored).
    package var hasFailed: Bool { firstError != nil }

    /// Parses the next piece of the document.
    package func feed(_ bytes: UnsafeRawBufferPointer) {
        precondition(!finished, "XMLStreamValidator.feed after finish")
        guard let context, firstError == nil, var base = bytes.baseAddress else { return }
        var remaining = bytes.count
        while remaining > 0, firstError == nil {
            // Small pieces: one huge chunk trips the push parser's 10 MB look-ahead limit.
            let n = min(remaining, 64 * 1024)
            _ = xmlParseChunk(context, base.assumingMemoryBound(to: CChar.self), Int32(n), 0)
            base += n
            remaining -= n
        }
    }

    /// Ends the document and throws its first error, if any.
    /// - Throws: ``ExportError/invalidXML(name:line:column:message:)``.
    package func finish() throws {
        if !finished, let context {
            finished = true
            if firstError == nil { _ = xmlParseChunk(context, nil, 0, 1) }
            if firstError == nil, context.pointee.wellFormed == 0 || context.pointee.nsWellFormed == 0 {
                // Not expected (every error goes through the callback), but never pass a
                // document libxml2 itself calls malformed.
                let line = Int(xmlSAX2GetLineNumber(context))
                let column = Int(xmlSAX2GetColumnNumber(context))
                firstError = (line, column, "document is not well-formed")
            }
        }
        if let firstError {
            throw ExportError.invalidXML(name: name, line: firstError.line, column: firstError.column,
                                         message: firstError.message)
        }
    }

    fileprivate func record(line: Int, column: Int, message: String) {
        errorCount += 1
        if firstError == nil {
            var text = Substring(message)
            while let last = text.last, last == "\n" || last == "\r" || last == " " { text.removeLast() }
            firstError = (line, column, String(text))
        }
    }

    fileprivate func recordDoctype() {
        guard let context else { return }
        record(line: Int(xmlSAX2GetLineNumber(context)), column: Int(xmlSAX2GetColumnNumber(context)),
               message: "a document type declaration (<!DOCTYPE>) is not allowed")
        xmlStopParser(context)
    }
}

/// libxml2's structured error callback for ``XMLStreamValidator`` (a top-level
/// function: Swift 6 needs a C function pointer without captures).
private func xmlStreamValidatorError(_ userData: UnsafeMutableRawPointer?, _ error: xmlErrorPtr?) {
    guard let userData, let error else { return }
    let e = error.pointee
    guard e.level.rawValue >= XML_ERR_ERROR.rawValue else { return } // warnings do not fail a document
    let validator = Unmanaged<XMLStreamValidator>.fromOpaque(userData).takeUnretainedValue()
    let message = e.message.map { String(cString: $0) } ?? "error \(e.code)"
    validator.record(line: Int(e.line), column: Int(e.int2), message: message)
}

private func xmlStreamValidatorDoctype(_ userData: UnsafeMutableRawPointer?, _ name: UnsafePointer<xmlChar>?,
                                       _ externalID: UnsafePointer<xmlChar>?, _ systemID: UnsafePointer<xmlChar>?) {
    guard let userData else { return }
    Unmanaged<XMLStreamValidator>.fromOpaque(userData).takeUnretainedValue().recordDoctype()
}
