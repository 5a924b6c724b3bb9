import MIDI
import Yams

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
            return try Yams.compose(yaml: yaml) ?? Node.scalar(Node.Scalar("", Tag(.null), .plain))
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

    /// Turns a Yams error into a located message.
    private mutating func reportSyntaxError(_ error: any Error, in yaml: String) {
        let start = SourceLocation(file: file, line: 1, column: 1)
        guard let yamlError = error as? YamlError else {
            fail(at: start, quotesText ? "not valid YAML: \(error)" : "not valid YAML")
            return
        }
        // libyaml's problems and contexts are fixed phrases ("found character that cannot start any token"), never
        // the file's text; the other cases may hold it.
        switch yamlError {
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let whileParsing = context.map { " (\($0.text) at line \($0.mark.line))" } ?? ""
            fail(at: location(mark), "not valid YAML: \(problem)\(whileParsing)")
        case .duplicatedKeysInMapping(let duplicates, let context):
            fail(at: location(context.mark), "key \(quotesText ? RouteFileVocabulary.quoted(duplicates) + " " : "")"
                 + "is written more than once in the same mapping; keep one")
        case .reader(let problem, let offset, _, _):
            fail(at: offset.map { Self.location(ofCharacter: $0, in: yaml, file: file) } ?? start,
                 "not readable as YAML text: \(problem)")
        default:
            fail(at: start, quotesText ? "not valid YAML: \(yamlError)" : "not valid YAML")
        }
    }

    /// The line and column of the character at `offset` in `text`.
    private static func location(ofCharacter offset: Int, in text: String, file: String) -> SourceLocation {
        var line = 1
        var column = 1
        for character in text.prefix(offset) {
            if character == "\n" { line += 1; column = 1 } else { column += 1 }
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
        guard let scalar = node.scalar, scalar.style == .plain else { return false }
        return ["", "~", "null", "Null", "NULL"].contains(scalar.string)
    }

    /// What kind of YAML node `node` is, for messages.
    static func describe(_ node: Node) -> String {
        switch node {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .scalar(let scalar): "'\(scalar.string)'"
        case .alias: "an alias"
        }
    }

    /// A sortable position of `node`.
    static func position(of node: Node) -> (Int, Int) {
        (node.mark?.line ?? 0, node.mark?.column ?? 0)
    }

    /// The location of `mark` in this file.
    func location(_ mark: Mark) -> SourceLocation {
        SourceLocation(file: file, line: mark.line, column: mark.column)
    }

    /// The location where `node` starts.
    func location(_ node: Node) -> SourceLocation {
        SourceLocation(file: file, line: node.mark?.line ?? 1, column: node.mark?.column ?? 1)
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
