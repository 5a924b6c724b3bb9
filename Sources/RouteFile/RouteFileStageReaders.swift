import MIDI
import Routing

/// The reader of a route's stage keys (`only:` ... `channel:`): each checks its value and makes its stage.
struct RouteStageReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []

    /// The stages the route's stage keys among `values` (by key) make, in the fixed stage order.
    mutating func read(_ values: [String: (key: Node, value: Node)]) -> [any RouteStage] {
        var stages: [any RouteStage] = []
        if let only = values["only"], let except = values["except"] {
            let later = Self.position(of: only.key) < Self.position(of: except.key) ? except.key : only.key
            fail(later, "'only' and 'except' together: use one of them")
        } else if let only = values["only"], let kinds = readKinds(only.value, key: only.key, name: "only") {
            stages.append(KindFilter(passing: kinds))
        } else if let except = values["except"], let kinds = readKinds(except.value, key: except.key, name: "except") {
            stages.append(KindFilter(passing: MIDIMessageKinds.all.subtracting(kinds)))
        }
        if let channels = values["channels"], let set = readChannels(channels.value) {
            stages.append(ChannelFilter(channels: set))
        }
        if let notes = values["notes"], let range = readNoteRange(notes.value) {
            stages.append(NoteRangeFilter(range: range))
        }
        if let convert = values["convert"] {
            for (from, to) in readConversions(convert.value) {
                stages.append(KindConversion(from: from, to: to))
            }
        }
        if let renumber = values["cc"], let mapping = readControllerMapping(renumber.value) {
            stages.append(ControllerRenumber(mapping: mapping))
        }
        if let ranges = values["cc-range"] {
            for (controller, curve) in readControllerRanges(ranges.value) {
                stages.append(ControllerRange(controller: controller, curve: curve))
            }
        }
        if let transpose = values["transpose"], let semitones = readTranspose(transpose.value) {
            stages.append(Transpose(semitones: semitones))
        }
        if let velocity = values["velocity"], let stage = readVelocity(velocity.value, key: velocity.key) {
            stages.append(stage)
        }
        if let channel = values["channel"], let mapping = readChannelRemap(channel.value) {
            stages.append(ChannelRemap(mapping: mapping))
        }
        return stages
    }

    /// The kinds named by an `only:` or `except:` value: one name or a list.
    private mutating func readKinds(_ node: Node, key: Node, name: String) -> MIDIMessageKinds? {
        let items = node.sequence.map(Array.init) ?? [node]
        if items.isEmpty || Self.isEmpty(node) {
            fail(Self.isEmpty(node) ? key : node, "'\(name)' needs at least one message kind: "
                 + RouteFileVocabulary.messageKindNames.joined(separator: ", "))
            return nil
        }
        var kinds: MIDIMessageKinds = []
        var valid = true
        for item in items {
            guard let word = item.scalar?.string,
                  let named = RouteFileVocabulary.messageKinds(named: word) else {
                let word = item.scalar?.string ?? Self.describe(item)
                let hint = RouteFileVocabulary.closest(to: word, in: RouteFileVocabulary.messageKindNames)
                    .map { "did you mean '\($0)'? " } ?? ""
                fail(item, "unknown message kind '\(word)'; \(hint)the kinds are "
                     + RouteFileVocabulary.messageKindNames.joined(separator: ", "))
                valid = false
                continue
            }
            kinds.formUnion(named)
        }
        return valid ? kinds : nil
    }

    /// The input channels of `channels:` (written 1-16), as wire channels.
    private mutating func readChannels(_ node: Node) -> Set<UInt4>? {
        let items = node.sequence.map(Array.init) ?? [node]
        if items.isEmpty || Self.isEmpty(node) {
            fail(node, "'channels' needs at least one channel, 1-16")
            return nil
        }
        var channels = Set<UInt4>()
        var valid = true
        for item in items {
            if let channel = readChannel(item) { channels.insert(channel) } else { valid = false }
        }
        return valid ? channels : nil
    }

    /// The range of a `notes:` value: `LOW..HIGH` or one note, as numbers or names.
    private mutating func readNoteRange(_ node: Node) -> ClosedRange<UInt7>? {
        guard let text = node.scalar?.string, !text.isEmpty else {
            fail(node, "'notes' needs a note range such as C2..B3 or 36..59")
            return nil
        }
        let parts = text.split(separator: "..", omittingEmptySubsequences: false)
        guard parts.count <= 2 else {
            fail(node, "'\(text)' is not a note range; write LOW..HIGH, such as C2..B3 or 36..59")
            return nil
        }
        let notes = parts.map { Self.note(String($0.trimmingSpaces)) }
        for (part, note) in zip(parts, notes) where note == nil {
            fail(node, "'\(part)' is not a note; write a number 0-127 or a name such as C4, F#3 or Bb2 (C4 = 60)")
        }
        guard let low = notes.first ?? nil, let high = notes.last ?? nil else { return nil }
        guard low <= high else {
            fail(node, "the note range \(text) goes down; write the low note first: \(parts[1])..\(parts[0])")
            return nil
        }
        return low...high
    }

    /// The conversions of a `convert:` value: one `{ from: KIND, to: KIND }` or a list of them.
    private mutating func readConversions(_ node: Node) -> [(ConvertibleKind, ConvertibleKind)] {
        let items = node.sequence.map(Array.init) ?? [node]
        var conversions: [(ConvertibleKind, ConvertibleKind)] = []
        for item in items {
            guard let mapping = item.mapping else {
                fail(item, "'convert' needs a mapping such as { from: pressure, to: { cc: 1 } }")
                continue
            }
            var from: (kind: ConvertibleKind, name: String)?
            var to: (kind: ConvertibleKind, name: String)?
            var sawFrom = false, sawTo = false
            for (keyNode, value) in mapping {
                guard let key = scalarKey(keyNode) else { continue }
                switch key {
                case "from": sawFrom = true; from = readConvertibleKind(value)
                case "to": sawTo = true; to = readConvertibleKind(value)
                default: failUnknownKey(keyNode, key, known: RouteFileVocabulary.convertKeys, in: "'convert'")
                }
            }
            if !sawFrom || !sawTo {
                fail(item, "'convert' needs both 'from' and 'to', such as { from: pressure, to: { cc: 1 } }")
                continue
            }
            guard let from, let to else { continue }
            guard from.name != to.name else {
                fail(item, "converting \(from.name) to \(to.name) changes nothing; convert to another kind")
                continue
            }
            conversions.append((from.kind, to.kind))
        }
        return conversions
    }

    /// One kind a conversion reads or writes: pressure, pitchbend, program or `{ cc: N }`.
    private mutating func readConvertibleKind(_ node: Node) -> (kind: ConvertibleKind, name: String)? {
        let usage = "write pressure, pitchbend, program or { cc: N }"
        if let mapping = node.mapping {
            guard mapping.count == 1, let (keyNode, value) = mapping.first, keyNode.scalar?.string == "cc" else {
                fail(node, "not a kind to convert; \(usage)")
                return nil
            }
            guard let controller = readController(value) else { return nil }
            return (.controller(controller), "cc \(controller)")
        }
        switch node.scalar?.string {
        case "pressure": return (.channelPressure, "pressure")
        case "pitchbend": return (.pitchBend, "pitchbend")
        case "program": return (.program, "program")
        case "cc":
            fail(node, "a controller to convert needs its number: { cc: N }")
            return nil
        default:
            fail(node, "unknown kind '\(node.scalar?.string ?? Self.describe(node))' to convert; \(usage)")
            return nil
        }
    }

    /// The `cc:` renumbering mapping, controller to controller.
    private mutating func readControllerMapping(_ node: Node) -> [UInt7: UInt7]? {
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(node, "'cc' renumbers controllers with a mapping such as { 1: 74 }")
            return nil
        }
        var result: [UInt7: UInt7] = [:]
        var valid = true
        for (keyNode, value) in mapping {
            guard let from = readController(keyNode), let to = readController(value) else { valid = false; continue }
            result[from] = to
        }
        return valid ? result : nil
    }

    /// The `cc-range:` mapping: a value curve per controller.
    private mutating func readControllerRanges(_ node: Node) -> [(UInt7, ValueCurve)] {
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(node, "'cc-range' needs a mapping such as { 74: { from: [0, 127], to: [127, 0] } }")
            return []
        }
        var ranges: [(UInt7, ValueCurve)] = []
        for (keyNode, value) in mapping {
            let controller = readController(keyNode)
            guard let curveMapping = value.mapping else {
                fail(value, "controller ranges are mappings such as { from: [0, 127], to: [127, 0], curve: 2.0 }")
                continue
            }
            if let curve = readCurve(curveMapping, at: value, known: RouteFileVocabulary.controllerRangeKeys,
                                     in: "'cc-range'"),
               let controller {
                ranges.append((controller, curve))
            }
        }
        return ranges
    }

    /// A value curve from `from`, `to` and `curve` keys (all optional); other keys are reported.
    private mutating func readCurve(_ mapping: Node.Mapping, at node: Node, known: [String],
                                    in context: String) -> ValueCurve? {
        var input = 0...127
        var output = (low: 0, high: 127)
        var exponent = 1.0
        var valid = true
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { valid = false; continue }
            switch key {
            case "from":
                guard let pair = readValuePair(value, key: "from") else { valid = false; continue }
                guard pair.0 <= pair.1 else {
                    fail(value, "the input range [\(pair.0), \(pair.1)] goes down; write [low, high] "
                         + "and invert with 'to'")
                    valid = false
                    continue
                }
                input = pair.0...pair.1
            case "to":
                guard let pair = readValuePair(value, key: "to") else { valid = false; continue }
                output = (pair.0, pair.1)
            case "curve":
                guard let number = readCurveExponent(value) else { valid = false; continue }
                exponent = number
            default:
                failUnknownKey(keyNode, key, known: known, in: context)
                valid = false
            }
        }
        return valid ? ValueCurve(input: input, output: output, exponent: exponent) : nil
    }

    /// A `[low, high]` pair of values 0-127.
    private mutating func readValuePair(_ node: Node, key: String) -> (Int, Int)? {
        guard let sequence = node.sequence, sequence.count == 2 else {
            fail(node, "'\(key)' needs two values [low, high], each 0-127")
            return nil
        }
        let values = sequence.map { item -> Int? in
            guard let number = readInteger(item, what: "a value", range: "0-127") else { return nil }
            guard (0...127).contains(number) else {
                fail(item, "value \(number) is out of range; values are 0-127")
                return nil
            }
            return number
        }
        guard let low = values[0], let high = values[1] else { return nil }
        return (low, high)
    }

    /// The `transpose:` value in semitones, -127 to 127.
    private mutating func readTranspose(_ node: Node) -> Int? {
        guard let semitones = readInteger(node, what: "'transpose'", range: "-127 to 127 semitones") else { return nil }
        guard (-127...127).contains(semitones) else {
            fail(node, "transpose \(semitones) is out of range; write -127 to 127 semitones")
            return nil
        }
        return semitones
    }

    /// The `velocity:` stage: `{ scale: X }`, `{ fixed: N }` or `{ curve: E, from: [..], to: [..] }`.
    private mutating func readVelocity(_ node: Node, key: Node) -> VelocityMap? {
        let usage = "{ scale: 0.8 }, { fixed: 100 } or { curve: 1.5, from: [0, 127], to: [20, 127] }"
        guard let mapping = node.mapping, !mapping.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, "'velocity' needs one of \(usage)")
            return nil
        }
        let keys = mapping.keys.compactMap { $0.scalar?.string }
        let usesCurve = keys.contains { ["curve", "from", "to"].contains($0) }
        let forms = (keys.contains("scale") ? 1 : 0) + (keys.contains("fixed") ? 1 : 0) + (usesCurve ? 1 : 0)
        guard forms <= 1 else {
            fail(node, "'velocity' takes one of \(usage), not a mix")
            return nil
        }
        if let value = mapping["scale"] {
            guard let factor = value.scalar.flatMap({ Double($0.string) }), factor.isFinite, factor >= 0 else {
                fail(value, "velocity 'scale' is a factor of 0 or more (0.8 softer, 1.2 louder), "
                     + "not '\(value.scalar?.string ?? Self.describe(value))'")
                return nil
            }
            reportUnknownKeys(mapping, except: ["scale"])
            return VelocityMap(curve: .scale(factor))
        }
        if let value = mapping["fixed"] {
            guard let number = readInteger(value, what: "a velocity", range: "1-127") else { return nil }
            guard (1...127).contains(number), let velocity = UInt7(number) else {
                fail(value, "fixed velocity \(number) is out of range; velocities are 1-127 (0 would be a note-off)")
                return nil
            }
            reportUnknownKeys(mapping, except: ["fixed"])
            return VelocityMap(fixed: velocity)
        }
        return readCurve(mapping, at: node, known: RouteFileVocabulary.velocityKeys, in: "'velocity'")
            .map { VelocityMap(curve: $0) }
    }

    /// Reports keys of `mapping` not in `allowed`, against the velocity vocabulary.
    private mutating func reportUnknownKeys(_ mapping: Node.Mapping, except allowed: [String]) {
        for keyNode in mapping.keys {
            guard let key = keyNode.scalar?.string, !allowed.contains(key),
                  !RouteFileVocabulary.velocityKeys.contains(key) else { continue }
            failUnknownKey(keyNode, key, known: RouteFileVocabulary.velocityKeys, in: "'velocity'")
        }
    }

    /// The `channel:` remap: one channel (everything goes there) or a mapping of channels, written 1-16.
    private mutating func readChannelRemap(_ node: Node) -> [UInt4: UInt4]? {
        if let mapping = node.mapping {
            guard !mapping.isEmpty else {
                fail(node, "'channel' needs a channel (1-16) or a mapping such as { 1: 3 }")
                return nil
            }
            var result: [UInt4: UInt4] = [:]
            var valid = true
            for (keyNode, value) in mapping {
                guard let from = readChannel(keyNode), let to = readChannel(value) else { valid = false; continue }
                result[from] = to
            }
            return valid ? result : nil
        }
        guard node.scalar != nil, !Self.isEmpty(node) else {
            fail(node, "'channel' needs a channel (1-16) or a mapping such as { 1: 3 }")
            return nil
        }
        guard let target = readChannel(node) else { return nil }
        var result: [UInt4: UInt4] = [:]
        for wire in UInt8(0)...15 { result[UInt4(masking: wire)] = target }
        return result
    }
}
