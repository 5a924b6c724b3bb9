import CYAML

/// Where a YAML node or mistake starts: line and column from 1, columns in Unicode scalars (as libyaml counts).
struct Mark: Equatable {
    let line: Int
    let column: Int
}

extension Mark {
    /// libyaml's mark, which counts from 0.
    fileprivate init(_ mark: yaml_mark_t) {
        self.init(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }
}

/// A node of a YAML document as the route-file readers see it: a scalar's text (and whether it was written plain,
/// unquoted), a list, or a mapping in the order written; and where it starts. Tags are not kept: the readers give
/// every value its meaning themselves. An alias is its anchored node again (the same object: nodes never change).
final class Node {
    enum Content {
        case scalar(Scalar)
        case sequence([Node])
        case mapping(Mapping)
    }

    struct Scalar {
        let string: String
        /// Written without quotes and not as a block (`|`, `>`): only such a value can mean "nothing" (`~`, `null`).
        let isPlain: Bool
    }

    /// A mapping's keys and values, in the order written (no key twice: the composer refuses that).
    struct Mapping: RandomAccessCollection {
        let pairs: [(key: Node, value: Node)]
        var startIndex: Int { pairs.startIndex }
        var endIndex: Int { pairs.endIndex }
        subscript(position: Int) -> (key: Node, value: Node) { pairs[position] }
        var keys: [Node] { pairs.map(\.key) }
        /// The value of the key written `key`.
        subscript(key: String) -> Node? { pairs.first { $0.key.scalar?.string == key }?.value }
    }

    let content: Content
    let mark: Mark

    init(content: Content, mark: Mark) {
        self.content = content
        self.mark = mark
    }

    var scalar: Scalar? { if case .scalar(let scalar) = content { scalar } else { nil } }
    var sequence: [Node]? { if case .sequence(let items) = content { items } else { nil } }
    var mapping: Mapping? { if case .mapping(let mapping) = content { mapping } else { nil } }

    /// The one document of `yaml` composed by libyaml's parser, or nil for a text without any (empty, or comments
    /// only). Throws for a text that is not YAML, holds more than one document, repeats a key in a mapping, nests
    /// deeper than `maximumDepth` or expands (through aliases) to more than `maximumNodes` nodes: the last two keep
    /// a hostile file from exhausting the stack or the memory and time of its readers.
    static func compose(_ yaml: String) throws(YAMLError) -> Node? {
        var text = yaml
        let result: Result<Node?, YAMLError> = text.withUTF8 { bytes in
            let composer = Composer(bytes)
            return Result { () throws(YAMLError) in try composer.document() }
        }
        return try result.get()
    }

    static let maximumDepth = 200
    static let maximumNodes = 200_000
}

/// Why a text is not a YAML document the readers can take. libyaml's problems and contexts are fixed phrases
/// ("found character that cannot start any token"), never the text itself.
enum YAMLError: Error {
    /// Not YAML text at all (a control character, say) at the byte `offset`.
    case reader(problem: String, offset: Int)
    /// Found by libyaml's scanner or parser or by the composer at `mark`, while reading what `context` names.
    case syntax(problem: String, mark: Mark, context: (text: String, mark: Mark)?)
    /// `key` written again at `again` in the mapping where it was first written at `first`.
    case duplicateKey(String, first: Mark, again: Mark)
}

/// Turns libyaml's events into one document's nodes.
private final class Composer {
    /// One event of libyaml's, copied out of its C storage.
    struct Event {
        let type: yaml_event_type_t
        let mark: Mark
        let anchor: String?
        /// A scalar's text, or the anchor an alias names.
        let value: String
        let isPlain: Bool
    }

    /// On the heap: libyaml's parser points at itself once given its input.
    private let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
    private var anchors: [String: (node: Node, count: Int)] = [:]
    /// Nodes composed so far, aliases counted as the nodes they repeat.
    private var nodes = 0

    init(_ bytes: UnsafeBufferPointer<UInt8>) {
        yaml_parser_initialize(parser)
        yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
        yaml_parser_set_input_string(parser, bytes.baseAddress, bytes.count)
    }

    deinit {
        yaml_parser_delete(parser)
        parser.deallocate()
    }

    func document() throws(YAMLError) -> Node? {
        _ = try next()  // the stream's start
        let first = try next()
        guard first.type == YAML_DOCUMENT_START_EVENT else { return nil }
        let root = try node(try next(), depth: 0)
        _ = try next()  // the document's end
        let after = try next()
        guard after.type == YAML_STREAM_END_EVENT else {
            throw .syntax(problem: "but found another document", mark: after.mark,
                          context: ("expected a single document in the stream", Mark(line: 1, column: 1)))
        }
        return root
    }

    private func node(_ event: Event, depth: Int) throws(YAMLError) -> Node {
        guard depth < Node.maximumDepth else {
            throw .syntax(problem: "nested more than \(Node.maximumDepth) deep", mark: event.mark, context: nil)
        }
        let before = nodes
        let node: Node
        switch event.type {
        case YAML_ALIAS_EVENT:
            guard let anchored = anchors[event.value] else {
                throw .syntax(problem: "found undefined alias", mark: event.mark, context: nil)
            }
            try count(anchored.count, at: event)
            return anchored.node
        case YAML_SCALAR_EVENT:
            try count(1, at: event)
            node = Node(content: .scalar(Node.Scalar(string: event.value, isPlain: event.isPlain)), mark: event.mark)
        case YAML_SEQUENCE_START_EVENT:
            try count(1, at: event)
            var items: [Node] = []
            while case let item = try next(), item.type != YAML_SEQUENCE_END_EVENT {
                items.append(try self.node(item, depth: depth + 1))
            }
            node = Node(content: .sequence(items), mark: event.mark)
        default:  // a mapping's start: the only other event where a node can start
            try count(1, at: event)
            var pairs: [(key: Node, value: Node)] = []
            var written: [String: Mark] = [:]
            while case let keyEvent = try next(), keyEvent.type != YAML_MAPPING_END_EVENT {
                let key = try self.node(keyEvent, depth: depth + 1)
                if let name = key.scalar?.string {
                    if let first = written[name] { throw .duplicateKey(name, first: first, again: key.mark) }
                    written[name] = key.mark
                }
                pairs.append((key, try self.node(try next(), depth: depth + 1)))
            }
            node = Node(content: .mapping(Node.Mapping(pairs: pairs)), mark: event.mark)
        }
        if let anchor = event.anchor { anchors[anchor] = (node, nodes - before) }
        return node
    }

    private func count(_ added: Int, at event: Event) throws(YAMLError) {
        nodes += added
        guard nodes <= Node.maximumNodes else {
            throw .syntax(problem: "more than \(Node.maximumNodes) values once its aliases are repeated", mark: event.mark,
                          context: nil)
        }
    }

    private func next() throws(YAMLError) -> Event {
        var event = yaml_event_t()
        guard yaml_parser_parse(parser, &event) == 1 else { throw failure() }
        defer { yaml_event_delete(&event) }
        let mark = Mark(event.start_mark)
        func text(_ pointer: UnsafeMutablePointer<yaml_char_t>?) -> String? { pointer.map { String(cString: $0) } }
        switch event.type {
        case YAML_SCALAR_EVENT:
            let scalar = event.data.scalar
            return Event(type: event.type, mark: mark, anchor: text(scalar.anchor),
                         value: String(decoding: UnsafeBufferPointer(start: scalar.value, count: scalar.length), as: UTF8.self),
                         isPlain: scalar.style == YAML_PLAIN_SCALAR_STYLE)
        case YAML_ALIAS_EVENT:
            return Event(type: event.type, mark: mark, anchor: nil, value: text(event.data.alias.anchor) ?? "", isPlain: false)
        case YAML_SEQUENCE_START_EVENT:
            return Event(type: event.type, mark: mark, anchor: text(event.data.sequence_start.anchor), value: "", isPlain: false)
        case YAML_MAPPING_START_EVENT:
            return Event(type: event.type, mark: mark, anchor: text(event.data.mapping_start.anchor), value: "", isPlain: false)
        default:
            return Event(type: event.type, mark: mark, anchor: nil, value: "", isPlain: false)
        }
    }

    /// libyaml's account of why it stopped.
    private func failure() -> YAMLError {
        let state = parser.pointee
        let problem = state.problem.map { String(cString: $0) } ?? "unknown problem"
        switch state.error {
        case YAML_READER_ERROR:
            return .reader(problem: problem, offset: Int(state.problem_offset))
        case YAML_MEMORY_ERROR:
            return .syntax(problem: "out of memory", mark: Mark(line: 1, column: 1), context: nil)
        default:
            let context = state.context.map { (text: String(cString: $0), mark: Mark(state.context_mark)) }
            return .syntax(problem: problem, mark: Mark(state.problem_mark), context: context)
        }
    }
}
