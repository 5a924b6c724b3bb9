import Drums
#if canImport(Glibc)
import Glibc
#endif
import MIDI

/// Style files: a drummer's groove at every intensity level, its fill, swing and looseness (jambridge-drums(5)).
public enum StyleFile {
    /// The keys of a style file.
    static let keys = ["name", "time", "steps", "levels", "swing", "humanize", "phrase", "groove", "fill"]

    /// Reads the style file at `path`; its mistakes are located errors.
    public static func load(path: String) throws(RouteFileErrors) -> Style {
        try parse(yaml: try RegularFile.text(atPath: path, what: "style file"), file: path)
    }

    /// True if `name` names a style file rather than a built-in style: it has a `/` or ends in `.yaml` or `.yml`.
    public static func isPath(_ name: String) -> Bool {
        name.contains("/") || name.hasSuffix(".yaml") || name.hasSuffix(".yml")
    }

    /// The folders of `routeFiles`, symlinks and `..` resolved: where a style named while jambridge runs may be.
    public static func folders(ofRouteFiles routeFiles: [String]) -> [String] {
        var folders: [String] = []
        for file in routeFiles {
            if let folder = realPath(FilePaths.folder(of: file)), !folders.contains(folder) {
                folders.append(folder)
            }
        }
        return folders
    }

    /// Reads the style file `path` named while jambridge runs (`drums style` from the control socket or OSC, so on
    /// anyone's word): relative to the folder of `routeFile`, and only if it is inside one of `folders` once symlinks
    /// and `..` are resolved (nothing outside is opened). Its mistakes say where and what is wrong, never what it says.
    public static func load(command path: String, besideRouteFile routeFile: String,
                            inside folders: [String]) throws(StyleCommandError) -> Style {
        let absolute = FilePaths.absolute(path, in: FilePaths.folder(of: routeFile))
        let parent = FilePaths.folder(of: absolute)
        let inside = { (resolved: String) in folders.contains { resolved.hasPrefix($0 == "/" ? "/" : $0 + "/") } }
        guard let resolved = realPath(absolute) else {
            // Nothing there (or a symlink to nothing): said only of a place inside the folders.
            guard let folder = realPath(parent), inside(folder + "/") else { throw .outside(path: path, folders: folders) }
            throw .missing(path: path)
        }
        guard inside(resolved) else { throw .outside(path: path, folders: folders) }
        do {
            return try parse(yaml: try RegularFile.text(atPath: resolved, what: "style file"), file: resolved, quotingText: false)
        } catch {
            throw .notAStyle(path: resolved, mistakes: error.errors)
        }
    }

    /// `path` with every symlink, `.` and `..` resolved, or nil if it leads nowhere.
    private static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// Reads `yaml` as the style file called `file`; the name defaults to the file's, less its extension. With
    /// `quotingText` false, no mistake quotes the file (`quotesText`).
    public static func parse(yaml: String, file: String, quotingText: Bool = true) throws(RouteFileErrors) -> Style {
        var document = StyleDocument(file: file, quotesText: quotingText)
        let style = document.read(yaml)
        return try document.checked(style, whenEmpty: "the style file is empty")
    }
}

/// The reader of one style file.
struct StyleDocument: YAMLDocument {
    let file: String
    var errors: [RouteFileError] = []
    let quotesText: Bool

    init(file: String, quotesText: Bool = true) {
        self.file = file
        self.quotesText = quotesText
    }

    mutating func read(_ yaml: String) -> Style? {
        guard let root = compose(yaml) else { return nil }
        guard !Self.isEmpty(root) else {
            fail(root, "the style file is empty; write a mapping with 'groove:' and the style's settings")
            return nil
        }
        guard let mapping = root.mapping else {
            fail(root, "a style file is a mapping with 'groove:' and the style's settings, not \(shown(root))")
            return nil
        }
        let base = FilePaths.baseName(of: file)
        var name = base, time = TimeSignature(beats: 4, unit: 4), steps: Int?, levels: Int?, swing = 0.5
        var humanizeTime = 0.0, humanizeVelocity: Float = 0, phrase = 4
        var grooveNode: Node?, fillNode: Node?
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            switch key {
            case "name":
                if let text = value.scalar?.string, !text.isEmpty { name = text } else { fail(value, "'name' is the style's name, such as 'rock'") }
            case "time":
                if let signature = readTimeSignature(value) { time = signature }
            case "steps":
                steps = readNumber(value, what: "'steps' (steps in a bar)", in: 1...64)
            case "levels":
                levels = readNumber(value, what: "'levels' (intensity levels)", in: 1...9)
            case "swing":
                if let percent = readNumber(value, what: "'swing' (where the second of two steps falls, in percent: 50 straight, 66 a triplet shuffle)", in: 50...75) {
                    swing = Double(percent) / 100
                }
            case "humanize":
                (humanizeTime, humanizeVelocity) = readHumanize(value)
            case "phrase":
                phrase = readNumber(value, what: "'phrase' (bars in a phrase; the fill ends it)", in: 1...64) ?? phrase
            case "groove":
                grooveNode = value
            case "fill":
                fillNode = value
            default:
                failUnknownKey(keyNode, key, known: StyleFile.keys, in: "a style file")
            }
        }
        let stepsPerBar = steps ?? max(1, time.beats * 16 / time.unit)
        guard let grooveNode else {
            fail(root, "a style has a 'groove:' mapping each voice to its steps, such as 'kick: \"1 . . . 1 . . .\"'")
            return nil
        }
        guard let groove = readPattern(grooveNode, what: "groove", stepsPerBar: stepsPerBar) else { return nil }
        let fill = fillNode.flatMap { readPattern($0, what: "fill", stepsPerBar: stepsPerBar) }
        let highest = ([groove] + (fill.map { [$0] } ?? [])).flatMap { $0.lines.values.flatMap { $0.compactMap { $0?.level } } }.max() ?? 1
        if let levels, highest > levels {
            fail(root, quotesText ? "a step plays from level \(highest) but the style has \(levels) levels ('levels: \(levels)')"
                 : "a step plays from a level above the style's 'levels'")
        }
        return Style(name: name, time: time, stepsPerBar: stepsPerBar, levels: levels ?? highest, swing: swing,
                     humanizeTime: humanizeTime, humanizeVelocity: humanizeVelocity, phrase: phrase, groove: groove, fill: fill)
    }

    private mutating func readNumber(_ node: Node, what: String, in range: ClosedRange<Int>) -> Int? {
        guard let number = readInteger(node, what: what, range: "\(range.lowerBound)-\(range.upperBound)") else { return nil }
        guard range.contains(number) else {
            fail(node, "\(what) is \(range.lowerBound)-\(range.upperBound)\(quotesText ? ", not \(number)" : "")")
            return nil
        }
        return number
    }

    private mutating func readTimeSignature(_ node: Node) -> TimeSignature? {
        let parts = node.scalar?.string.split(separator: "/").compactMap { Int($0) } ?? []
        guard parts.count == 2, (1...32).contains(parts[0]), [2, 4, 8, 16].contains(parts[1]) else {
            fail(node, "'time' is a time signature such as 4/4, 6/8 or 7/8 (1-32 beats of 2, 4, 8 or 16)")
            return nil
        }
        return TimeSignature(beats: parts[0], unit: parts[1])
    }

    private mutating func readHumanize(_ node: Node) -> (Double, Float) {
        guard let mapping = node.mapping else {
            fail(node, "'humanize' is a mapping such as '{ time: 4, velocity: 10 }' (milliseconds, MIDI velocity)")
            return (0, 0)
        }
        var time = 0.0, velocity: Float = 0
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            switch key {
            case "time": time = Double(readNumber(value, what: "'time' (the largest shift of a hit, in milliseconds)", in: 0...20) ?? 0)
            case "velocity": velocity = Float(readNumber(value, what: "'velocity' (the largest change of a hit's velocity)", in: 0...40) ?? 0) / 127
            default: failUnknownKey(keyNode, key, known: ["time", "velocity"], in: "'humanize'")
            }
        }
        return (time, velocity)
    }

    /// A mapping of voices to lines of steps: each line is one bar or as many bars as the longest.
    private mutating func readPattern(_ node: Node, what: String, stepsPerBar: Int) -> Pattern? {
        guard let mapping = node.mapping, mapping.count > 0 else {
            fail(node, "'\(what)' maps voices to their steps, such as 'kick: \"1 . . . 1 . . .\"'")
            return nil
        }
        var lines: [(DrumVoice, [Step?], Node)] = []
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            guard let voice = DrumVoice(rawValue: key) else {
                failUnknownKey(keyNode, key, known: DrumVoice.allCases.map(\.rawValue), in: "'\(what)' (its keys are voices)")
                continue
            }
            guard let steps = readLine(value, stepsPerBar: stepsPerBar) else { continue }
            lines.append((voice, steps, value))
        }
        let bars = lines.map { $0.1.count / stepsPerBar }.max() ?? 1
        var result: [DrumVoice: [Step?]] = [:]
        for (voice, steps, node) in lines {
            let lineBars = steps.count / stepsPerBar
            guard lineBars == 1 || lineBars == bars else {
                fail(node, "this line has \(lineBars) bars, the longest \(bars): a line is one bar (repeated) or \(bars)")
                continue
            }
            result[voice] = lineBars == bars ? steps : Array(repeating: steps, count: bars).flatMap { $0 }
        }
        return result.isEmpty ? nil : Pattern(lines: result, bars: bars)
    }

    /// One voice's steps: `.` a rest; a level digit 1-9, then optionally `>` (accent), `g` (ghost), `@VELOCITY`
    /// (1-127), `?` (half the time) or `?PERCENT`; `|` between bars for the eye.
    private mutating func readLine(_ node: Node, stepsPerBar: Int) -> [Step?]? {
        guard let text = node.scalar?.string else {
            fail(node, "a voice's steps are a string such as \"1 . 2 . 1> . 3g .\", not \(shown(node))")
            return nil
        }
        var steps: [Step?] = []
        for token in text.split(whereSeparator: { $0 == " " || $0 == "|" }) {
            if token == "." || token == "-" {
                steps.append(nil)
                continue
            }
            guard let step = Self.step(token) else {
                fail(node, "\(quotesText ? "'\(token)' is not a step" : "not a step"): write '.' for a rest, or a level 1-9 with '>' (accent), 'g' (ghost), "
                     + "'@VELOCITY' (1-127) or '?PERCENT' (probability) after it, such as '2', '1>', '3g', '2@90' or '4?30'")
                return nil
            }
            steps.append(step)
        }
        guard !steps.isEmpty, steps.count % stepsPerBar == 0 else {
            fail(node, "\(steps.count) steps, not whole bars of \(stepsPerBar) steps")
            return nil
        }
        return steps
    }

    /// The step `token` writes, or nil.
    static func step(_ token: Substring) -> Step? {
        guard let first = token.first, let level = first.wholeNumberValue, level >= 1 else { return nil }
        var step = Step(level: level)
        var rest = token.dropFirst()
        while let mark = rest.first {
            rest = rest.dropFirst()
            let digits = rest.prefix { $0.isASCII && $0.isNumber }
            rest = rest.dropFirst(digits.count)
            switch mark {
            case ">" where digits.isEmpty: step.velocity = Step.accent
            case "g" where digits.isEmpty: step.velocity = Step.ghost
            case "@":
                guard let velocity = Int(digits), (1...127).contains(velocity) else { return nil }
                step.velocity = Float(velocity) / 127
            case "?":
                guard let percent = digits.isEmpty ? 50 : Int(digits), (1...100).contains(percent) else { return nil }
                step.probability = Float(percent) / 100
            default: return nil
            }
        }
        return step
    }
}

/// Why a style named while jambridge runs (`drums style PATH`) is not played. No case quotes the file.
public enum StyleCommandError: Error, Equatable, Sendable, CustomStringConvertible {
    /// The path leads outside the route files' folders (`folders`), symlinks and `..` followed: nothing was opened.
    case outside(path: String, folders: [String])
    /// Nothing is at the path, inside the folders.
    case missing(path: String)
    /// The file at `path` (resolved) is not a style jambridge can play: its mistakes, none quoting the file.
    case notAStyle(path: String, mistakes: [RouteFileError])

    public var description: String {
        switch self {
        case .outside(let path, let folders):
            "'\(path)' is not a style file in the route files' folders (\(folders.joined(separator: ", "))): while jambridge runs, "
                + "'drums style' takes a built-in style (\(BuiltinStyles.names.joined(separator: ", "))) or a style file there"
        case .missing(let path):
            "no style file at '\(path)'"
        case .notAStyle(let path, let mistakes):
            "'\(path)' is not a style jambridge can play: "
                + mistakes.prefix(3).map { "\($0.location.line):\($0.location.column): \($0.message)" }.joined(separator: "; ")
                + (mistakes.count > 3 ? "; and \(mistakes.count - 3) more" : "")
        }
    }
}
