import MIDI
import OSC

extension OSCControlTarget {
    /// The velocity of a `note:` control whose `velocity:` is not written.
    public static let defaultNoteVelocity = 100
}

/// The reader of a route's `osc:` block: OSC address templates and what each becomes (a control or a motion stream
/// into the activity), and whether the MIDI-over-OSC family passes.
struct OSCMappingReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// A route's `osc:` value written at `key`: `midi`, or a mapping of address templates to what they become,
    /// with an optional `midi:`; nil (reported) on a mistake.
    mutating func read(_ node: Node, key: Node) -> OSCRouteMapping? {
        let forms = "'midi' (the MIDI-over-OSC family) or a mapping of OSC addresses such as { /1/fader1: { cc: 74 } }"
        if let word = node.scalar?.string, !Self.isEmpty(node) {
            guard word == "midi" else {
                fail(node, "unknown 'osc' value '\(word)'; 'osc' is \(forms)")
                return nil
            }
            return OSCRouteMapping(entries: [], midi: true, location: location(key))
        }
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, node.mapping != nil || Self.isEmpty(node)
                 ? "an empty 'osc' block; 'osc' is \(forms), or { midi: false } for neither"
                 : "'osc' is \(forms), not \(Self.describe(node))")
            return nil
        }
        let errorsBefore = errors.count
        var entries: [OSCMappingEntry] = []
        var midi = false
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            if name.hasPrefix("/") {
                if let entry = readOSCEntry(value, address: keyNode, text: name) { entries.append(entry) }
            } else if name == "midi" {
                midi = readBool(value, key: "midi") ?? midi
            } else if RouteFileVocabulary.closest(to: name, in: ["midi"]) != nil {
                failUnknownKey(keyNode, name, known: ["midi"], in: "an 'osc' block")
            } else {
                fail(keyNode, "'\(name)' is neither an OSC address (addresses start with '/', such as /1/fader1) "
                     + "nor 'midi'")
            }
        }
        guard errors.count == errorsBefore else { return nil }
        return OSCRouteMapping(entries: entries, midi: midi, location: location(key))
    }

    /// One entry of an `osc:` block: the template `text` written at `address` and the mapping `node` it becomes.
    private mutating func readOSCEntry(_ node: Node, address: Node, text: String) -> OSCMappingEntry? {
        let template = readAddressTemplate(text, at: address)
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(Self.isEmpty(node) ? address : node, "'\(text)' needs what it becomes, such as { cc: 74 }, "
                 + "{ note: 36 } or { activity: motion }")
            return nil
        }
        // The value's expressions name the template's captures: with the template wrong they cannot be checked.
        guard let template else { return nil }
        let action: OSCAction? = if mapping["activity"] != nil {
            readMotion(mapping).map(OSCAction.motion)
        } else {
            readControl(mapping, at: node, template: template).map(OSCAction.control)
        }
        return action.map { OSCMappingEntry(template: template, action: $0, location: location(address)) }
    }

    // MARK: - Address templates

    /// The address template `text` written at `node`: OSC address characters and `<name>` or `<name:low-high>`
    /// captures; nil (reported) on its first mistake.
    private mutating func readAddressTemplate(_ text: String, at node: Node) -> OSCAddressTemplate? {
        if text.contains("//") || text.hasSuffix("/") {
            fail(node, "'\(text)' has an empty part; write one '/' between parts and none at the end "
                 + "(OSC 1.1 reads '//' as a wildcard)")
            return nil
        }
        var pieces: [OSCAddressTemplate.Piece] = []
        var literal = ""
        var rest = Substring(text)
        while let character = rest.first {
            if character == "<" {
                guard let close = rest.firstIndex(of: ">") else {
                    fail(node, "'<' in '\(text)' opens a capture that is never closed; write <n> or <n:1-8>")
                    return nil
                }
                guard let capture = readCapture(rest[rest.index(after: rest.startIndex)..<close], in: text,
                                                taken: pieces, at: node) else { return nil }
                if literal.isEmpty, case .capture(let previous, _)? = pieces.last, case .capture(let next, _) = capture {
                    fail(node, "captures <\(previous)> and <\(next)> side by side in '\(text)' cannot tell where one "
                         + "number ends and the next begins; put text between them, such as <\(previous)>/<\(next)>")
                    return nil
                }
                if !literal.isEmpty { pieces.append(.literal(literal)) }
                literal = ""
                pieces.append(capture)
                rest = rest[rest.index(after: close)...]
                continue
            }
            if let problem = Self.addressCharacterProblem(character) {
                fail(node, "'\(text)' has \(problem)")
                return nil
            }
            literal.append(character)
            rest = rest.dropFirst()
        }
        if !literal.isEmpty { pieces.append(.literal(literal)) }
        return OSCAddressTemplate(pieces: pieces, description: text)
    }

    /// What is wrong with `character` in an OSC address, or nil if it may stand there.
    private static func addressCharacterProblem(_ character: Character) -> String? {
        switch character {
        case "*", "?", "[", "]", "{", "}":
            return "'\(character)', an OSC pattern character: patterns match several addresses; "
                + "write a capture such as <n> instead"
        case ">":
            return "'>' without '<'; a capture is written <n> or <n:1-8>"
        case " ":
            return "a space; OSC addresses have none"
        case "#", ",":
            return "'\(character)', which OSC addresses cannot hold ('#' marks a bundle, ',' starts the type tags)"
        default:
            guard let ascii = character.asciiValue, (0x21...0x7E).contains(ascii) else {
                return "'\(character)'; OSC addresses are printable ASCII"
            }
            return nil
        }
    }

    /// The capture written between `<` and `>`: `name` or `name:low-high`; nil (reported) on a mistake.
    private mutating func readCapture(_ inside: Substring, in text: String, taken: [OSCAddressTemplate.Piece],
                                      at node: Node) -> OSCAddressTemplate.Piece? {
        let parts = inside.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        let name = String(parts[0])
        guard Self.isCaptureName(name) else {
            fail(node, "'<\(inside)>' in '\(text)' needs a name in lowercase letters, digits and '_' "
                 + "starting with a letter, such as <n> or <pad:1-4>")
            return nil
        }
        if taken.contains(where: { if case .capture(name, _) = $0 { true } else { false } }) {
            fail(node, "capture <\(name)> appears twice in '\(text)'; give each capture its own name")
            return nil
        }
        guard parts.count == 2 else { return .capture(name: name, range: nil) }
        let bounds = parts[1].split(separator: "-", omittingEmptySubsequences: false)
        guard bounds.count == 2, let low = Int32(bounds[0]), let high = Int32(bounds[1]),
              bounds.allSatisfy({ $0.allSatisfy { ("0"..."9").contains($0) } }) else {
            fail(node, "'<\(inside)>' in '\(text)' has no range LOW-HIGH of whole numbers; write such as <\(name):1-8>")
            return nil
        }
        guard low <= high else {
            fail(node, "the range of '<\(inside)>' in '\(text)' goes down; write <\(name):\(high)-\(low)>")
            return nil
        }
        return .capture(name: name, range: Int(low)...Int(high))
    }

    /// True for a capture name: a lowercase letter, then lowercase letters, digits and '_'.
    private static func isCaptureName(_ text: String) -> Bool {
        guard let first = text.unicodeScalars.first, ("a"..."z").contains(first) else { return false }
        return text.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    // MARK: - Controls

    /// A control entry: exactly one of `cc`, `note`, `pitchbend`, `program` and `pressure`, with its options.
    private mutating func readControl(_ mapping: Node.Mapping, at node: Node,
                                      template: OSCAddressTemplate) -> OSCControlMapping? {
        let targetNames = RouteFileVocabulary.oscControlTargets
        let choices = "\(targetNames.dropLast().joined(separator: ", ")) or \(targetNames[targetNames.count - 1])"
        let errorsBefore = errors.count
        var values: [String: (key: Node, value: Node)] = [:]
        var targets: [(name: String, key: Node, value: Node)] = []
        var misspeltTarget = false
        let known = RouteFileVocabulary.oscControlKeys + ["activity"]
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            guard known.contains(key) else {
                failUnknownKey(keyNode, key, known: known, in: "an OSC control")
                let suggestion = RouteFileVocabulary.closest(to: key, in: known)
                misspeltTarget = misspeltTarget || suggestion.map { (targetNames + ["activity"]).contains($0) } == true
                continue
            }
            values[key] = (keyNode, value)
            if targetNames.contains(key) { targets.append((key, keyNode, value)) }
        }
        guard let first = targets.first else {
            // A misspelt target was reported as such; saying there is none too would only repeat it.
            if !misspeltTarget {
                fail(node, "'\(template)' becomes no MIDI; write one of \(choices), or 'activity: motion'")
            }
            return nil
        }
        for extra in targets.dropFirst() {
            fail(extra.key, "'\(first.name)' and '\(extra.name)' together: an OSC control becomes one of \(choices)")
        }
        let target = readControlTarget(first.name, first.value, velocity: values["velocity"]?.value,
                                       template: template)
        let isNote = first.name == "note"
        if !isNote, let velocity = values["velocity"] {
            fail(velocity.key, "'velocity' applies to 'note' only; a \(first.name) has none")
        }
        for name in ["to", "curve", "smooth"] where isNote {
            if let given = values[name] {
                fail(given.key, "'\(name)' does not apply to 'note': a button is on above the middle of 'from' "
                     + "and off at or below it")
            }
        }
        // The target is set last, once every key was read; until then it holds a stand-in.
        var control = OSCControlMapping(target: .program, output: first.name == "pitchbend" ? (-8192, 8191) : (0, 127))
        let outputRange = control.output.low...control.output.high
        // A `cc:` list sends one value per controller; every other target sends one value.
        let valueCount = first.name == "cc" ? first.value.sequence?.count ?? 1 : 1
        if let channel = values["channel"] {
            control.channel = readOSCNumber(channel.value, key: "channel", in: 1...16, template: template)
                ?? control.channel
        }
        if let selection = readArguments(arg: values["arg"], args: values["args"], count: valueCount) {
            control.arguments = selection
        }
        if let from = values["from"], let input = readInputRange(from.value) { control.input = input }
        if let to = values["to"], let output = readOutputRange(to.value, in: outputRange) { control.output = output }
        if let curve = values["curve"] { control.exponent = readCurveExponent(curve.value) ?? control.exponent }
        if let smooth = values["smooth"] {
            control.smoothing = readDuration(smooth.value, key: "smooth", allowsZero: true) ?? control.smoothing
        }
        guard errors.count == errorsBefore, let target else { return nil }
        control.target = target
        return control
    }

    /// What the control becomes, from its target key `name` and value `node` (and `velocity` for a note).
    private mutating func readControlTarget(_ name: String, _ node: Node, velocity: Node?,
                                            template: OSCAddressTemplate) -> OSCControlTarget? {
        switch name {
        case "cc":
            let items = node.sequence.map(Array.init) ?? [node]
            guard !items.isEmpty else {
                fail(node, "'cc' lists no controllers; write one such as 74, or one per argument such as [12, 13]")
                return nil
            }
            let numbers = items.map { readOSCNumber($0, key: "cc", in: 0...127, template: template) }
            return numbers.contains(nil) ? nil : .controllers(numbers.compactMap { $0 })
        case "note":
            let note = readOSCNumber(node, key: "note", in: 0...127, template: template, readsNoteNames: true)
            let level = velocity.map {
                readWholeNumber($0, in: 1...127, what: "'velocity'", expected: "1-127 (0 would be a note-off)")
            } ?? OSCControlTarget.defaultNoteVelocity
            guard let note, let level else { return nil }
            return .note(note, velocity: level)
        default:
            guard let on = readBool(node, key: name) else { return nil }
            guard on else {
                fail(node, "'\(name): false' becomes nothing; write '\(name): true' or another target")
                return nil
            }
            return name == "pitchbend" ? .pitchBend : name == "program" ? .program : .channelPressure
        }
    }

    /// The argument indexes of `arg:` or `args:`: one per value the target sends (`count`), by default 0, 1, ...
    private mutating func readArguments(arg: (key: Node, value: Node)?, args: (key: Node, value: Node)?,
                                        count: Int) -> [Int]? {
        let what = "an argument index, 0 for the first"
        if let arg, let args {
            let later = Self.position(of: arg.key) < Self.position(of: args.key) ? args.key : arg.key
            fail(later, "'arg' and 'args' together: write 'arg: I' for one argument or 'args: [I, J]' for several")
            return nil
        }
        if let arg {
            guard count == 1 else {
                fail(arg.key, "'arg' selects one argument for \(count) controllers; write 'args' with one index "
                     + "per controller, such as args: \(Self.firstIndexes(count))")
                return nil
            }
            return readWholeNumber(arg.value, in: 0...Int.max, what: "'arg'", expected: what).map { [$0] }
        }
        guard let args else { return Array(0..<count) }
        guard let items = args.value.sequence.map(Array.init), items.count == count else {
            let given = args.value.sequence.map { "\($0.count) \($0.count == 1 ? "index" : "indexes")" } ?? "no list"
            fail(args.value, "'args' needs one argument index per value sent (\(count) here), not \(given); "
                 + "a list such as \(Self.firstIndexes(count))")
            return nil
        }
        let indexes = items.map { readWholeNumber($0, in: 0...Int.max, what: "'args'", expected: what) }
        return indexes.contains(nil) ? nil : indexes.compactMap { $0 }
    }

    /// `[0, 1, ...]` up to `count` indexes, for messages.
    private static func firstIndexes(_ count: Int) -> String {
        "[\((0..<count).map(String.init).joined(separator: ", "))]"
    }

    /// The input range `from: [LOW, HIGH]`: finite numbers with LOW below HIGH.
    private mutating func readInputRange(_ node: Node) -> ClosedRange<Double>? {
        guard let (lowNode, highNode) = pairItems(node, key: "from", form: "[LOW, HIGH] such as [0, 1]") else {
            return nil
        }
        let low = readReal(lowNode, key: "from")
        let high = readReal(highNode, key: "from")
        guard let low, let high else { return nil }
        guard low < high else {
            let (lowText, highText) = (Self.written(lowNode), Self.written(highNode))
            fail(node, low == high
                 ? "the input range [\(lowText), \(highText)] is empty; write [low, high] with low below high"
                 : "the input range [\(lowText), \(highText)] goes down; write [\(highText), \(lowText)] and invert "
                     + "with 'to'")
            return nil
        }
        return low...high
    }

    /// The output range `to: [A, B]`: whole numbers in `range`; A above B inverts.
    private mutating func readOutputRange(_ node: Node, in range: ClosedRange<Int>) -> (low: Int, high: Int)? {
        let bounds = "\(range.lowerBound)-\(range.upperBound)"
        guard let (lowNode, highNode) = pairItems(node, key: "to", form: "[A, B] of values \(bounds)") else {
            return nil
        }
        let low = readWholeNumber(lowNode, in: range, what: "'to'", expected: "two values \(bounds)")
        let high = readWholeNumber(highNode, in: range, what: "'to'", expected: "two values \(bounds)")
        guard let low, let high else { return nil }
        return (low, high)
    }

    /// A whole number written as a constant or as a capture of `template` plus or minus a constant (`20`, `n`,
    /// `"n + 20"`, `"n - 1"`), and for a note also a note name; constants, and expressions on a capture with a
    /// range, must stay in `range`.
    private mutating func readOSCNumber(_ node: Node, key: String, in range: ClosedRange<Int>,
                                        template: OSCAddressTemplate, readsNoteNames: Bool = false) -> OSCNumber? {
        let bounds = "\(range.lowerBound)-\(range.upperBound)"
        let text = node.scalar?.string ?? Self.describe(node)
        if let number = Int(text) ?? (readsNoteNames ? Self.note(text).map { Int($0.value) } : nil) {
            guard range.contains(number) else {
                fail(node, "\(key) \(number) is out of range; '\(key)' is \(bounds)")
                return nil
            }
            return .constant(number)
        }
        let captures = template.captureNames
        let example = captures.first ?? "n"
        let noteName = readsNoteNames ? ", a note name such as C2" : ""
        guard node.scalar != nil, let (name, offset) = Self.captureExpression(text) else {
            fail(node, "'\(text)' is not a number or a capture expression; '\(key)' is a number \(bounds)\(noteName), "
                 + "a capture such as \(example), or \"\(example) + 20\" or \"\(example) - 1\"")
            return nil
        }
        let capture = template.pieces.first { if case .capture(name, _) = $0 { true } else { false } }
        guard case .capture(_, let captureRange)? = capture else {
            fail(node, captures.isEmpty
                 ? "'\(name)' is not a capture: '\(template)' has none; write a number \(bounds)\(noteName), "
                     + "or a capture such as <\(name)> in the address"
                 : "'\(name)' is not a capture of '\(template)'; its captures are \(captures.joined(separator: ", "))")
            return nil
        }
        let number = OSCNumber(capture: name, offset: offset)
        if let values = captureRange,
           !range.contains(values.lowerBound + offset) || !range.contains(values.upperBound + offset) {
            fail(node, "'\(key): \(number)' gives \(values.lowerBound + offset)-\(values.upperBound + offset) for "
                 + "<\(name):\(values.lowerBound)-\(values.upperBound)>; '\(key)' is \(bounds)")
            return nil
        }
        return number
    }

    /// `text` as `NAME`, `NAME + K` or `NAME - K` with K of at most four digits (spaces optional), or nil.
    private static func captureExpression(_ text: String) -> (name: String, offset: Int)? {
        let compact = text.filter { $0 != " " }
        guard let sign = compact.firstIndex(where: { $0 == "+" || $0 == "-" }) else {
            return isCaptureName(compact) ? (compact, 0) : nil
        }
        let name = String(compact[..<sign])
        let digits = compact[compact.index(after: sign)...]
        guard isCaptureName(name), (1...4).contains(digits.count), digits.allSatisfy({ ("0"..."9").contains($0) }),
              let magnitude = Int(digits) else { return nil }
        return (name, compact[sign] == "-" ? -magnitude : magnitude)
    }

    // MARK: - Motion

    /// A motion entry (`activity: motion`): an accelerometer stream into the activity controller; the defaults
    /// are `MotionActivityMapping`'s.
    private mutating func readMotion(_ mapping: Node.Mapping) -> MotionActivityMapping? {
        let errorsBefore = errors.count
        var motion = MotionActivityMapping()
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            switch key {
            case "activity":
                readActivityKind(value)
            case "axes":
                motion.axes = readAxes(value) ?? motion.axes
            case "units":
                motion.unitsPerG = readUnits(value) ?? motion.unitsPerG
            case "high-pass":
                guard let hertz = readReal(value, key: "high-pass") else { continue }
                if hertz > 0 {
                    motion.highPass = hertz
                } else {
                    fail(value, "'high-pass' is a cutoff in Hz above 0, such as \(MotionActivityMapping().highPass), "
                         + "not \(Self.written(value))")
                }
            case "attack":
                motion.attack = readDuration(value, key: "attack", allowsZero: false) ?? motion.attack
            case "release":
                motion.release = readDuration(value, key: "release", allowsZero: false) ?? motion.release
            case "range":
                motion.range = readMotionRange(value) ?? motion.range
            case "cc":
                motion.controller = readController(value).map { Int($0.value) } ?? motion.controller
            case "channel":
                motion.channel = readChannel(value).map { Int($0.value) + 1 } ?? motion.channel
            default:
                failUnknownKey(keyNode, key, known: RouteFileVocabulary.motionKeys, in: "'activity: motion'")
            }
        }
        return errors.count == errorsBefore ? motion : nil
    }

    /// Checks `activity:`, whose one value is `motion`.
    private mutating func readActivityKind(_ node: Node) {
        let word = node.scalar?.string ?? Self.describe(node)
        guard word != "motion" else { return }
        let hint = RouteFileVocabulary.closest(to: word, in: ["motion"]).map { "did you mean '\($0)'? " } ?? ""
        fail(node, "unknown activity '\(word)'; \(hint)this version reads 'activity: motion' (an accelerometer)")
    }

    /// `axes:`: one to three different argument indexes, such as [0, 1, 2].
    private mutating func readAxes(_ node: Node) -> [Int]? {
        guard let items = node.sequence.map(Array.init), (1...3).contains(items.count) else {
            fail(node, "'axes' lists the indexes of the x, y and z arguments, one to three, such as [0, 1, 2]")
            return nil
        }
        let axes = items.map { readWholeNumber($0, in: 0...Int.max, what: "'axes'", expected: "argument indexes, 0 for the first") }
        guard !axes.contains(nil) else { return nil }
        guard Set(axes).count == axes.count else {
            fail(node, "'axes' names an argument twice; list each axis once, such as [0, 1, 2]")
            return nil
        }
        return axes.compactMap { $0 }
    }

    /// `units:`, the accelerometer's unit, as how many of them make one g.
    private mutating func readUnits(_ node: Node) -> Double? {
        let names = RouteFileVocabulary.motionUnits.map(\.name)
        let word = node.scalar?.string ?? Self.describe(node)
        if let unit = RouteFileVocabulary.motionUnits.first(where: { $0.name == word }) { return unit.unitsPerG }
        let hint = RouteFileVocabulary.closest(to: word, in: names).map { "did you mean '\($0)'? " } ?? ""
        fail(node, "unknown units '\(word)'; \(hint)'units' is \(names.joined(separator: " or "))")
        return nil
    }

    /// `range: [LOW, HIGH]`: movement energy in g, 0 or more, LOW below HIGH.
    private mutating func readMotionRange(_ node: Node) -> ClosedRange<Double>? {
        let usual = MotionActivityMapping().range
        let example = "[\(usual.lowerBound), \(usual.upperBound)]"
        guard let (lowNode, highNode) = pairItems(node, key: "range", form: "[LOW, HIGH] in g such as \(example)") else {
            return nil
        }
        let low = readReal(lowNode, key: "range")
        let high = readReal(highNode, key: "range")
        guard let low, let high else { return nil }
        guard low >= 0, low < high else {
            fail(node, "'range' is [LOW, HIGH] in g with 0 <= LOW < HIGH, such as \(example), "
                 + "not [\(Self.written(lowNode)), \(Self.written(highNode))]")
            return nil
        }
        return low...high
    }

    // MARK: - Numbers

    /// The two items of a `[A, B]` value written for `key`; nil (reported) if it is not a list of two.
    private mutating func pairItems(_ node: Node, key: String, form: String) -> (Node, Node)? {
        guard let items = node.sequence.map(Array.init), items.count == 2 else {
            fail(node, "'\(key)' is a list of two, \(form), not \(Self.describe(node))")
            return nil
        }
        return (items[0], items[1])
    }

    /// The text of a scalar as written, for messages that repeat it.
    private static func written(_ node: Node) -> String {
        node.scalar?.string ?? describe(node)
    }

    /// A finite number written for `key`.
    private mutating func readReal(_ node: Node, key: String) -> Double? {
        guard let number = node.scalar.flatMap({ Double($0.string) }), number.isFinite else {
            fail(node, "\(Self.describe(node)) is not a number; '\(key)' takes numbers such as 0.5")
            return nil
        }
        return number
    }
}
