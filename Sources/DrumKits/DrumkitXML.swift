import CKitLibraries

/// An element of a drumkit.xml as libxml2 read it: its name, text, children and the line it starts on, for located
/// mistakes.
final class DrumkitXMLElement {
    let name: String
    let line: Int
    /// The text directly inside it (not its children's), with the white space around it removed.
    let text: String
    let children: [DrumkitXMLElement]

    init(name: String, line: Int, text: String, children: [DrumkitXMLElement]) {
        self.name = name
        self.line = line
        self.text = text
        self.children = children
    }

    /// The first child called `name`.
    func child(_ name: String) -> DrumkitXMLElement? {
        children.first { $0.name == name }
    }

    /// The children called `name`, in document order.
    func children(_ name: String) -> [DrumkitXMLElement] {
        children.filter { $0.name == name }
    }

    /// The text of the first child called `name`.
    func value(_ name: String) -> String? {
        child(name)?.text
    }

    /// The element tree of the XML document `bytes`; refused where libxml2 stopped. Nothing outside the document is
    /// read (no DTD, no network) and entities are not expanded: a kit is plain elements and text.
    static func tree(of bytes: [UInt8]) throws(DrumkitXMLSyntaxError) -> DrumkitXMLElement {
        let xml = try KitLibraries.libxml2 { DrumkitXMLSyntaxError(line: 1, column: 1, message: $0) }
        jambridge_xml_silence()
        guard let context = xml.xmlNewParserCtxt() else { throw DrumkitXMLSyntaxError(line: 1, column: 1, message: "out of memory") }
        defer { xml.xmlFreeParserCtxt(context) }
        let options = Int32(XML_PARSE_NONET.rawValue | XML_PARSE_NOERROR.rawValue | XML_PARSE_NOWARNING.rawValue)
        let document = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress.flatMap { base in
                base.withMemoryRebound(to: CChar.self, capacity: buffer.count) {
                    xml.xmlCtxtReadMemory(context, $0, Int32(clamping: buffer.count), "drumkit.xml", nil, options)
                }
            }
        }
        guard let document else {
            guard let error = xml.xmlCtxtGetLastError(context)?.pointee, error.code != 0 else {
                throw DrumkitXMLSyntaxError(line: 1, column: 1, message: "no XML element in it: it is empty or not XML")
            }
            let message = error.message.map { String(cString: $0) } ?? "libxml2 error \(error.code)"
            throw DrumkitXMLSyntaxError(line: max(Int(error.line), 1), column: max(Int(error.int2), 1),
                                        message: "not valid XML: " + message.split(whereSeparator: \.isNewline)
                                            .map { String($0).trimmingWhiteSpace() }.joined(separator: " "))
        }
        defer { xml.xmlFreeDoc(document) }
        guard let root = xml.xmlDocGetRootElement(document) else {
            throw DrumkitXMLSyntaxError(line: 1, column: 1, message: "no XML element in it: it is empty or not XML")
        }
        var count = 0
        guard let tree = element(root, count: &count, xml) else {
            throw DrumkitXMLSyntaxError(line: 1, column: 1, message: "more than \(elementLimit) elements: not a drum kit")
        }
        return tree
    }

    /// The most elements read (Debian's largest kit has about 3,000): past it the file is not a kit.
    static let elementLimit = 100_000

    /// The element `node` and its descendants, or nil past `elementLimit` elements.
    private static func element(_ node: UnsafeMutablePointer<xmlNode>, count: inout Int, _ xml: jambridge_libxml2_calls) -> DrumkitXMLElement? {
        count += 1
        guard count <= elementLimit else { return nil }
        var text = ""
        var children: [DrumkitXMLElement] = []
        var child = node.pointee.children
        while let current = child {
            switch current.pointee.type {
            case XML_ELEMENT_NODE:
                guard let element = element(current, count: &count, xml) else { return nil }
                children.append(element)
            case XML_TEXT_NODE, XML_CDATA_SECTION_NODE:
                if let content = current.pointee.content { text += String(cString: content) }
            default:
                break
            }
            child = current.pointee.next
        }
        let name = node.pointee.name.map { String(cString: $0) } ?? ""
        return DrumkitXMLElement(name: name, line: Int(xml.xmlGetLineNo(node)), text: text.trimmingWhiteSpace(), children: children)
    }
}

/// A drumkit.xml that is not well-formed XML: where and what.
struct DrumkitXMLSyntaxError: Error {
    var line: Int
    var column: Int
    var message: String
}

extension String {
    /// The string without the spaces, tabs and line breaks around it.
    func trimmingWhiteSpace() -> String {
        let isWhiteSpace = { (character: Character) in character == " " || character == "\t" || character.isNewline }
        return String(drop(while: isWhiteSpace).reversed().drop(while: isWhiteSpace).reversed())
    }
}
