import MIDI

/// A YAML file read with located mistakes: route files, style files, kit files. The readers of each kind of file
/// are a type conforming to this, which records every mistake it finds (`fail`) with its file, line and column.
protocol YAMLDocument {
    /// The file's path as given.
    var file: String { get }
    /// Every mistake found in this file, in the order found.
    var errors: [RouteFileError] { get set }
    /// False for a file read on someone else's word (a style named while jambridge runs), which may be any file the
    /// daemon can read: its mistakes then say where and what is wrong, never what the file says.
    var quotesText: Bool { get }
}

extension YAMLDocument {
    /// Files named on the command line or in route files are the user's own: their mistakes quote them.
    var quotesText: Bool { true }

    /// What `node` is, for a message: its text in quotes, or, in a file that is not quoted, its kind.
    func shown(_ node: Node) -> String {
        quotesText || node.scalar == nil ? Self.describe(node) : "text"
    }

    /// What was read, `value`, if the document holds no mistake; else its mistakes (or, if none was recorded,
    /// `whenEmpty` at 1:1).
    func checked<Value>(_ value: Value?, whenEmpty: String) throws(RouteFileErrors) -> Value {
        guard errors.isEmpty, let value else {
            throw RouteFileErrors(errors: errors.isEmpty
                ? [RouteFileError(location: SourceLocation(file: file, line: 1, column: 1), message: whenEmpty)] : errors)
        }
        return value
    }

    /// The YAML's root node (an empty document is an empty plain scalar, as `isEmpty` sees it), or nil with its
    /// syntax mistakes recorded.
    mutating func compose(_ yaml: String) -> Node? {
        let foundTabs = reportTabIndentation(in: yaml)
        do {
            return try Node.compose(yaml)
                ?? Node(content: .scalar(Node.Scalar(string: "", isPlain: true)), mark: Mark(line: 1, column: 1))
        } catch {
            // A tab in the indentation is what libyaml stumbles over; its own message would only repeat it.
            if !foundTabs { reportSyntaxError(error, in: yaml) }
            return nil
        }
    }

    /// Reports every tab in a line's indentation; returns true if there was one.
    private mutating func reportTabIndentation(in yaml: String) -> Bool {
        var found = false
        var line = 1
        var column = 1
        var inIndentation = true
        for scalar in yaml.unicodeScalars {
            if scalar == "\n" {
                line += 1
                column = 1
                inIndentation = true
                continue
            }
            if inIndentation && scalar == "\t" {
                fail(at: SourceLocation(file: file, line: line, column: column),
                     "tab in the indentation; YAML indents with spaces only")
                found = true
                inIndentation = false
            } else if scalar != " " && scalar != "-" {
                inIndentation = false
            }
            column += 1
        }
        return found
    }

    /// Turns the composer's error into a located message.
    private mutating func reportSyntaxError(_ error: YAMLError, in yaml: String) {
        switch error {
        case .syntax("found undefined alias", let mark, _):
            fail(at: location(mark), "not valid YAML: found undefined alias: a value starting with '*' is read as a YAML "
                 + "alias; quote it, such as alsa: \"*USB*\"")
        case .syntax(let problem, let mark, let context):
            let whileParsing = context.map { " (\($0.text) at line \($0.mark.line))" } ?? ""
            let hint = Self.likelyMistake(problem: problem, context: context?.text, at: context?.mark)
            // An alias is reported where it starts: where the quote goes.
            let at = hint != nil && context?.text.hasPrefix("while scanning an a") == true ? context!.mark : mark
            fail(at: location(at), "not valid YAML: \(problem)\(whileParsing)\(hint.map { ": \($0)" } ?? "")")
        case .duplicateKey(let key, let first, let again):
            fail(at: location(again), "key \(quotesText ? "'\(key)' " : "")is already written at \(location(first)) in the "
                 + "same mapping; keep one")
        case .reader(let problem, let offset):
            fail(at: Self.location(ofByte: offset, in: yaml, file: file), "not readable as YAML text: \(problem)")
        }
    }

    /// What a musician most likely did to get libyaml's `problem` (while `context`, which started at `mark`), and how
    /// to put it right; nil where there is no likely answer.
    static func likelyMistake(problem: String, context: String?, at mark: Mark?) -> String? {
        let start = mark.map { "line \($0.line), column \($0.column)" } ?? "above"
        switch problem {
        case "did not find expected '-' indicator":
            return "this line is not lined up with the list that starts at \(start): indent every '- ' of a list the same, "
                + "with spaces"
        case "did not find expected key":
            return "this line is not lined up with the keys of the mapping that starts at \(start): indent every key of a "
                + "mapping the same, with spaces (a line indented less ends the mapping)"
        case "mapping values are not allowed in this context":
            return "a ':' where no key can start: a line indented more than the key above it, or a second 'key:' on one "
                + "line; write a nested mapping in braces ('song: { file: song.mid }') or on lines of its own, indented, "
                + "and quote a value that holds ': '"
        case "did not find expected alphabetic or numeric character":
            guard let context, context.hasPrefix("while scanning an a") else { return nil }
            return "a value starting with '*' or '&' is read as a YAML alias or anchor; quote it, such as alsa: \"*USB*\""
        case "found character that cannot start any token":
            return "a value starting with '@', '`', '%' or a tab must be quoted, such as \"@home\""
        default:
            return nil
        }
    }

    /// The line and column of the byte at `offset` in `text` (columns in Unicode scalars, as libyaml counts).
    private static func location(ofByte offset: Int, in text: String, file: String) -> SourceLocation {
        var line = 1
        var column = 1
        for byte in text.utf8.prefix(offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        return SourceLocation(file: file, line: line, column: column)
    }

    /// An integer written in `node`, reported as "not a number" naming `what` and its `range` otherwise.
    mutating func readInteger(_ node: Node, what: String, range: String) -> Int? {
        guard let text = node.scalar?.string, let number = Int(text) else {
            fail(node, quotesText ? "\(Self.describe(node)) is not a number; \(what) is \(range)" : "not a number; \(what) is \(range)")
            return nil
        }
        return number
    }

    /// A number followed by a word, as in `100 bpm` or `5004/udp`: the number and the rest; nil for anything else.
    static func numberAndUnit(_ text: String) -> (number: String, unit: String)? {
        let number = text.prefix { $0.isNumber || $0 == "." }
        let unit = text.dropFirst(number.count).drop { $0 == " " }
        guard !number.isEmpty, Double(number) != nil, !unit.isEmpty, unit.first?.isLetter == true || unit.first == "/" else { return nil }
        return (String(number), String(unit))
    }

    /// A yes/no value: true, false, yes, no, on or off.
    mutating func readBool(_ node: Node, key: String) -> Bool? {
        switch node.scalar?.string.lowercased() {
        case "true", "yes", "on": return true
        case "false", "no", "off": return false
        default:
            fail(node, "'\(key)' is true or false, not \(shown(node))")
            return nil
        }
    }

    /// The text of a mapping key, or nil (reported) if the key is a list or mapping.
    mutating func scalarKey(_ node: Node) -> String? {
        guard let scalar = node.scalar else {
            fail(node, "a key must be a plain word, not \(Self.describe(node))")
            return nil
        }
        return scalar.string
    }

    /// Reports an unknown key, suggesting the closest known one or listing them all.
    mutating func failUnknownKey(_ node: Node, _ key: String, known: [String], in context: String) {
        if quotesText, let suggestion = RouteFileVocabulary.closest(to: key, in: known) {
            fail(node, "unknown key '\(key)'; did you mean '\(suggestion)'?")
        } else {
            fail(node, "unknown key \(quotesText ? "'\(key)' " : "")in \(context); the keys are \(known.joined(separator: ", "))")
        }
    }

    /// True for a missing value: `key:` with nothing after it, `~` or `null` (not a quoted "").
    static func isEmpty(_ node: Node) -> Bool {
        guard let scalar = node.scalar, scalar.isPlain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// What kind of YAML node `node` is, for messages.
    static func describe(_ node: Node) -> String {
        switch node.content {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .scalar(let scalar): "'\(scalar.string)'"
        }
    }

    /// A sortable position of `node`.
    static func position(of node: Node) -> (Int, Int) {
        (node.mark.line, node.mark.column)
    }

    /// The location of `mark` in this file.
    func location(_ mark: Mark) -> SourceLocation {
        SourceLocation(file: file, line: mark.line, column: mark.column)
    }

    /// The location where `node` starts.
    func location(_ node: Node) -> SourceLocation {
        location(node.mark)
    }

    /// Records a mistake at `node`.
    mutating func fail(_ node: Node, _ message: String) {
        fail(at: location(node), message)
    }

    /// Records a mistake at `location`.
    mutating func fail(at location: SourceLocation, _ message: String) {
        errors.append(RouteFileError(location: location, message: message))
    }
}
