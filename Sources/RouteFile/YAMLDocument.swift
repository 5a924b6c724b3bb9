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
        case .composer(_, let problem, let mark, _) where problem == "found undefined alias":
            fail(at: location(mark), "not valid YAML: found undefined alias: a value starting with '*' is read as a YAML "
                 + "alias; quote it, such as alsa: \"*USB*\"")
        case .scanner(let context, let problem, let mark, _),
             .parser(let context, let problem, let mark, _),
             .composer(let context, let problem, let mark, _):
            let whileParsing = context.map { " (\($0.text) at line \($0.mark.line))" } ?? ""
            let hint = Self.likelyMistake(problem: problem, context: context?.text, at: context?.mark)
            // An alias is reported where it starts: where the quote goes.
            let at = hint != nil && context?.text.hasPrefix("while scanning an a") == true ? context!.mark : mark
            fail(at: location(at), "not valid YAML: \(problem)\(whileParsing)\(hint.map { ": \($0)" } ?? "")")
        case .duplicatedKeysInMapping(let duplicates, let context):
            // Yams marks the first of the keys; the mistake is the one written again (the one just added).
            let first = location(context.mark)
            guard let key = duplicates.first, let again = Self.repetition(of: key, after: context.mark, in: yaml) else {
                fail(at: first, "key \(quotesText ? RouteFileVocabulary.quoted(duplicates) + " " : "")"
                     + "is written more than once in the same mapping; keep one")
                break
            }
            fail(at: SourceLocation(file: file, line: again.line, column: again.column),
                 "key \(quotesText ? "'\(key)' " : "")is already written at \(first) in the same mapping; keep one")
        case .reader(let problem, let offset, _, _):
            fail(at: offset.map { Self.location(ofCharacter: $0, in: yaml, file: file) } ?? start,
                 "not readable as YAML text: \(problem)")
        default:
            fail(at: start, quotesText ? "not valid YAML: \(yamlError)" : "not valid YAML")
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

    /// Where `key`, first written at `mark`, is written again in the same mapping: later on the same line (a flow
    /// mapping, `{ a: 1, a: 2 }`) or at the same column on a later line, before the mapping ends (a line indented
    /// less); nil if it cannot be found so.
    static func repetition(of key: String, after mark: Mark, in yaml: String) -> (line: Int, column: Int)? {
        let lines = yaml.split(separator: "\n", omittingEmptySubsequences: false).map { Array($0.unicodeScalars) }
        guard mark.line >= 1, mark.line <= lines.count, mark.column >= 1 else { return nil }
        let keyScalars = Array(key.unicodeScalars)
        // `key`, bare or quoted, then spaces and a colon, starting at `start` of `line`.
        func isKey(_ line: [Unicode.Scalar], at start: Int) -> Bool {
            for quote in ["", "\"", "'"] {
                let quoted = Array(quote.unicodeScalars) + keyScalars + Array(quote.unicodeScalars)
                guard start + quoted.count <= line.count, Array(line[start..<start + quoted.count]) == quoted else { continue }
                let rest = line[(start + quoted.count)...].drop { $0 == " " }
                if rest.first == ":" { return true }
            }
            return false
        }
        let firstLine = lines[mark.line - 1]
        var index = mark.column - 1 + keyScalars.count
        while index < firstLine.count {
            if [",", "{"].contains(firstLine[index]) {
                let start = firstLine[(index + 1)...].firstIndex { $0 != " " } ?? firstLine.count
                if isKey(firstLine, at: start) { return (mark.line, start + 1) }
            }
            index += 1
        }
        for number in mark.line..<lines.count {
            let line = lines[number]
            guard let indentation = line.firstIndex(where: { $0 != " " }), line[indentation] != "#" else { continue }
            if indentation < mark.column - 1 { return nil }
            if indentation == mark.column - 1, isKey(line, at: indentation) { return (number + 1, indentation + 1) }
        }
        return nil
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
