import Catalog
import CLibXML2
import Crawl
import Foundation

/// Reads the legacy charts' Atom format into the legacy JSON shape.
///
/// The JSON feed is a mechanical rendering of the Atom one (an element's text
/// becomes `label`, its attributes `attributes`, a repeated element an array),
/// so the same rendering here lets one mapping serve both formats.
enum LegacyChartXML {
    /// libxml2 must be initialised once before parsing on several threads.
    private static let initialized: Void = { xmlInitParser() }()

    /// Children of an entry that describe the feed's build, not the item: the
    /// same entry would otherwise look changed every time the feed is rebuilt.
    static let volatileEntryMembers: Set<String> = ["updated"]

    /// The `<entry>` elements of an Atom chart, each as a JSON object.
    static func entries(_ response: HTTPResponse) throws(StoreSyncError) -> [JSONValue] {
        _ = initialized
        let url = response.url.absoluteString
        guard !response.body.isEmpty else { throw .malformedPage(url: url, reason: "empty body, expected an Atom feed") }
        guard response.body.count < Int(Int32.max) else {
            throw .malformedPage(url: url, reason: "body of \(response.body.count) bytes is too large to parse")
        }
        guard let context = xmlNewParserCtxt() else {
            throw .malformedPage(url: url, reason: "libxml2 could not create a parser")
        }
        defer { xmlFreeParserCtxt(context) }
        // No network, no error output (errors are read from the context), CDATA as text.
        // No XML_PARSE_NOENT: external entities are never loaded or substituted.
        let options = Int32(bitPattern: XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue
            | XML_PARSE_NOWARNING.rawValue | XML_PARSE_NOCDATA.rawValue)
        let document = response.body.withUnsafeBufferPointer { buffer in
            buffer.withMemoryRebound(to: CChar.self) { chars in
                xmlCtxtReadMemory(context, chars.baseAddress, Int32(chars.count), url, nil, options)
            }
        }
        guard let document, context.pointee.wellFormed != 0 else {
            if let document { xmlFreeDoc(document) }
            let error = xmlCtxtGetLastError(UnsafeMutableRawPointer(context))
            let line = error.map { Int($0.pointee.line) } ?? 0
            let column = error.map { Int($0.pointee.int2) } ?? 0
            var message = error.flatMap { $0.pointee.message.map { String(cString: $0) } } ?? "not well-formed"
            while let last = message.last, last.isNewline || last == " " { message.removeLast() }
            throw .malformedPage(url: url, reason: "not well-formed XML at line \(line), column \(column): \(message)")
        }
        defer { xmlFreeDoc(document) }
        guard let root = xmlDocGetRootElement(document), name(root.pointee.name) == "feed" else {
            let found = xmlDocGetRootElement(document).map { "<\(qualifiedName($0))>" } ?? "no element"
            throw .malformedPage(url: url, reason: "at line 1: expected an Atom <feed> root element, found \(found)")
        }
        var entries: [JSONValue] = []
        var child = root.pointee.children
        while let node = child {
            if node.pointee.type == XML_ELEMENT_NODE, name(node.pointee.name) == "entry",
               case .object(var members) = value(of: node) {
                for member in volatileEntryMembers { members.removeValue(forKey: member) }
                entries.append(.object(members))
            }
            child = node.pointee.next
        }
        return entries
    }

    /// An element as the JSON feed writes it: `label` (its text), `attributes`,
    /// and child elements by qualified name (an array when repeated).
    static func value(of node: xmlNodePtr) -> JSONValue {
        var attributes: [String: JSONValue] = [:]
        var attribute = node.pointee.properties
        while let a = attribute {
            let key = prefixed(name(a.pointee.name), a.pointee.ns)
            attributes[key] = .string(text(a.pointee.children))
            attribute = a.pointee.next
        }
        var members: [String: JSONValue] = [:]
        var child = node.pointee.children
        while let c = child {
            if c.pointee.type == XML_ELEMENT_NODE {
                let key = qualifiedName(c)
                let element = value(of: c)
                switch members[key] {
                case nil: members[key] = element
                case .array(let list)?: members[key] = .array(list + [element])
                case let single?: members[key] = .array([single, element])
                }
            }
            child = c.pointee.next
        }
        let label = text(node.pointee.children)
        // Elements that only wrap others (a nested im:contentType) carry no label.
        if members.isEmpty || !label.allSatisfy(\.isWhitespace) { members["label"] = .string(label) }
        if !attributes.isEmpty { members["attributes"] = .object(attributes) }
        return .object(members)
    }

    /// The concatenated text and CDATA children of a node list (not descendants').
    static func text(_ first: xmlNodePtr?) -> String {
        var bytes: [UInt8] = []
        var node = first
        while let n = node {
            if n.pointee.type == XML_TEXT_NODE || n.pointee.type == XML_CDATA_SECTION_NODE, let content = n.pointee.content {
                var p = content
                while p.pointee != 0 {
                    bytes.append(p.pointee)
                    p += 1
                }
            }
            node = n.pointee.next
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func name(_ pointer: UnsafePointer<xmlChar>?) -> String {
        pointer.map { String(cString: $0) } ?? ""
    }

    static func prefixed(_ local: String, _ namespace: xmlNsPtr?) -> String {
        guard let prefix = namespace?.pointee.prefix else { return local }
        return "\(String(cString: prefix)):\(local)"
    }

    static func qualifiedName(_ node: xmlNodePtr) -> String {
        prefixed(name(node.pointee.name), node.pointee.ns)
    }
}
