import Foundation
#if canImport(FoundationXML)
import FoundationXML
#endif

/// An element of a drumkit.xml as FoundationXML's parser (libxml2) read it: its name, text, children and where
/// its start tag is, for located mistakes.
final class DrumkitXMLElement {
    let name: String
    let line: Int
    let column: Int
    var text = ""
    var children: [DrumkitXMLElement] = []

    init(name: String, line: Int, column: Int) {
        self.name = name
        self.line = line
        self.column = column
    }

    /// The first child called `name`.
    func child(_ name: String) -> DrumkitXMLElement? {
        children.first { $0.name == name }
    }

    /// The children called `name`, in document order.
    func children(_ name: String) -> [DrumkitXMLElement] {
        children.filter { $0.name == name }
    }

    /// The text of the first child called `name`, without the white space around it.
    func value(_ name: String) -> String? {
        child(name).map { $0.text.trimmingCharacters(in: .whitespacesAndNewlines) }
    }
}

/// Builds the element tree of one document (an XMLParser delegate).
final class DrumkitXMLTreeBuilder: NSObject, XMLParserDelegate {
    /// The most elements read (Debian's largest kit has about 3,000): past it the file is not a kit.
    static let elementLimit = 100_000

    private(set) var root: DrumkitXMLElement?
    /// What stopped the parse, with its line and column.
    private(set) var failure: (line: Int, column: Int, message: String)?
    private var open: [DrumkitXMLElement] = []
    private var count = 0

    /// The root element of `data`; refused where the parse stopped.
    static func tree(of data: Data) throws(DrumkitXMLSyntaxError) -> DrumkitXMLElement {
        let parser = XMLParser(data: data)
        let builder = DrumkitXMLTreeBuilder()
        parser.delegate = builder
        parser.shouldResolveExternalEntities = false
        let parsed = parser.parse()
        if let failure = builder.failure {
            throw DrumkitXMLSyntaxError(line: failure.line, column: failure.column, message: failure.message)
        }
        guard parsed, let root = builder.root else {
            throw DrumkitXMLSyntaxError(line: max(parser.lineNumber, 1), column: max(parser.columnNumber, 1),
                                        message: "no XML element in it: it is empty or not XML")
        }
        return root
    }

    func parser(_ parser: XMLParser, didStartElement elementName: String, namespaceURI: String?,
                qualifiedName: String?, attributes: [String: String] = [:]) {
        count += 1
        guard count <= Self.elementLimit else {
            failure = (parser.lineNumber, parser.columnNumber, "more than \(Self.elementLimit) elements: not a drum kit")
            parser.abortParsing()
            return
        }
        let element = DrumkitXMLElement(name: elementName, line: parser.lineNumber, column: parser.columnNumber)
        if let parent = open.last { parent.children.append(element) } else { root = element }
        open.append(element)
    }

    func parser(_ parser: XMLParser, foundCharacters string: String) {
        open.last?.text += string
    }

    func parser(_ parser: XMLParser, foundCDATA block: Data) {
        open.last?.text += String(decoding: block, as: UTF8.self)
    }

    func parser(_ parser: XMLParser, didEndElement elementName: String, namespaceURI: String?, qualifiedName: String?) {
        _ = open.popLast()
    }

    func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {
        guard failure == nil else { return }
        let code = (parseError as NSError).code
        failure = (max(parser.lineNumber, 1), max(parser.columnNumber, 1),
                   "not valid XML: \(Self.problems[code] ?? "libxml2 error \(code)")")
    }

    /// What libxml2's commonest error codes (xmlParserErrors) mean.
    private static let problems: [Int: String] = [
        4: "no element where the document should start (empty, or not XML)",
        5: "the document ends too early, or something follows its end",
        9: "a character XML does not allow",
        23: "an entity reference without its ';'",
        26: "an entity that is not declared",
        39: "an attribute value without quotes",
        41: "an attribute without a value",
        68: "a name is missing",
        73: "'>' is missing",
        76: "an end tag does not match its start tag",
        77: "an element is not closed",
    ]
}

/// A drumkit.xml that is not well-formed XML: where and what.
struct DrumkitXMLSyntaxError: Error {
    var line: Int
    var column: Int
    var message: String
}
