import DrumKits
import Drums
import MIDI

/// Sample-folder kits: a kit.yaml giving each voice its sound files, levels, pan, pitch and choke group
/// (jambridge-kits(5)), read into the `KitDescription` DrumKits' loader plays.
public enum KitFile {
    /// The keys of a kit file.
    static let keys = ["name", "voices"]
    /// The keys of a voice written as a mapping.
    static let voiceKeys = ["file", "layers", "gain", "pan", "pitch", "choke"]
    /// The keys of a layer written as a mapping.
    static let layerKeys = ["file", "velocity", "gain", "pitch"]

    /// Reads the kit file at `path`; its mistakes are located errors. Sample paths are relative to its folder.
    public static func load(path: String) throws(RouteFileErrors) -> KitDescription {
        try parse(yaml: try RegularFile.text(atPath: path, what: "kit file"), file: path)
    }

    /// Reads `yaml` as the kit file at `file` (which is not opened: its folder is where the samples are); the kit's
    /// name defaults to the folder's.
    public static func parse(yaml: String, file: String) throws(RouteFileErrors) -> KitDescription {
        var document = KitDocument(file: file)
        let description = document.read(yaml)
        return try document.checked(description, whenEmpty: "the kit file is empty; write 'voices:' with each voice's sound file, such as 'kick: kick.wav'")
    }
}

/// The reader of one kit file.
struct KitDocument: YAMLDocument {
    let file: String
    var errors: [RouteFileError] = []
    /// Where relative sample paths start: the kit file's folder.
    private let folder: String

    init(file: String) {
        self.file = file
        folder = file.lastIndex(of: "/").map { String(file[..<$0]) } ?? "."
    }

    mutating func read(_ yaml: String) -> KitDescription? {
        guard let root = compose(yaml), !Self.isEmpty(root) else { return nil }
        guard let mapping = root.mapping else {
            fail(root, "a kit file is a mapping with 'voices:' (and 'name:'), not \(Self.describe(root))")
            return nil
        }
        var name = FilePaths.name(of: FilePaths.folder(of: file))
        var instruments: [KitDescription.Instrument]?
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            switch key {
            case "name":
                if let text = value.scalar?.string, !text.isEmpty, !Self.isEmpty(value) {
                    name = text
                } else {
                    fail(Self.isEmpty(value) ? keyNode : value, "'name' is the kit's name, such as 'Garage kit'")
                }
            case "voices":
                instruments = readVoices(value, key: keyNode)
            default:
                failUnknownKey(keyNode, key, known: KitFile.keys, in: "a kit file")
            }
        }
        guard let instruments else {
            fail(root, "a kit file has 'voices:' giving each voice its sound file, such as 'kick: kick.wav'")
            return nil
        }
        return KitDescription(name: name, instruments: instruments)
    }

    /// The `voices:` mapping: a voice name to a sound file or a mapping.
    private mutating func readVoices(_ node: Node, key: Node) -> [KitDescription.Instrument] {
        guard let mapping = node.mapping, mapping.count > 0 else {
            fail(Self.isEmpty(node) ? key : node,
                 "'voices' maps voices to sound files, such as 'kick: kick.wav' or 'snare: { file: snare.wav, gain: 0.8 }'")
            return []
        }
        var instruments: [KitDescription.Instrument] = []
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            guard let voice = DrumVoice(rawValue: key) else {
                failUnknownKey(keyNode, key, known: DrumVoice.allCases.map(\.rawValue), in: "'voices' (its keys are voices)")
                continue
            }
            if let instrument = readVoice(voice, value, key: keyNode) { instruments.append(instrument) }
        }
        return instruments
    }

    /// One voice: a sound file, or a mapping of `file` or `layers` with `gain`, `pan`, `pitch` and `choke`.
    private mutating func readVoice(_ voice: DrumVoice, _ node: Node, key: Node) -> KitDescription.Instrument? {
        var instrument = KitDescription.Instrument(name: voice.rawValue, voice: voice, layers: [])
        if node.scalar != nil {
            guard let file = readFile(node, key: key) else { return nil }
            instrument.layers = [KitDescription.Layer(file: file)]
            return instrument
        }
        guard let mapping = node.mapping else {
            fail(node, "'\(voice.rawValue)' is a sound file such as '\(voice.rawValue).wav' or a mapping such as "
                 + "'{ file: \(voice.rawValue).wav, gain: 0.8 }', not \(Self.describe(node))")
            return nil
        }
        let errorsBefore = errors.count
        var sources: [Node] = []
        for (keyNode, value) in mapping {
            guard let key = scalarKey(keyNode) else { continue }
            switch key {
            case "file":
                sources.append(keyNode)
                if let file = readFile(value, key: keyNode) { instrument.layers = [KitDescription.Layer(file: file)] }
            case "layers":
                sources.append(keyNode)
                instrument.layers = readLayers(value, key: keyNode)
            case "gain":
                instrument.gain = readDecimal(value, key: "gain", in: 0...16, "a level from 0 to 16 (1 leaves the sound as it is)") ?? 1
            case "pan":
                instrument.pan = readDecimal(value, key: "pan", in: -1...1, "from -1 (left) through 0 (centre) to 1 (right)") ?? 0
            case "pitch":
                instrument.pitch = readDecimal(value, key: "pitch", in: -24...24, "semitones from -24 to 24") ?? 0
            case "choke":
                if let group = readInteger(value, what: "'choke' (the group whose sounds cut each other off)", range: "0-99") {
                    if (0...99).contains(group) { instrument.chokeGroup = group } else { fail(value, "'choke' is a group number, 0-99, not \(group)") }
                }
            default:
                failUnknownKey(keyNode, key, known: KitFile.voiceKeys, in: "a voice")
            }
        }
        if sources.count > 1 {
            fail(sources[1], "'file' and 'layers' together: a voice has one sound file or a list of layers")
        } else if sources.isEmpty {
            fail(node, "'\(voice.rawValue)' needs 'file:' (a sound file) or 'layers:' (sound files by velocity)")
        }
        return errors.count == errorsBefore ? instrument : nil
    }

    /// A voice's `layers:` list: sound files, or mappings of `file`, `velocity`, `gain` and `pitch`.
    private mutating func readLayers(_ node: Node, key: Node) -> [KitDescription.Layer] {
        guard let items = node.sequence.map(Array.init), !items.isEmpty else {
            fail(Self.isEmpty(node) ? key : node, "'layers' lists sound files by velocity, such as "
                 + "'[{ file: soft.wav, velocity: 0-0.5 }, { file: hard.wav, velocity: 0.5-1 }]'")
            return []
        }
        return items.compactMap { item -> KitDescription.Layer? in
            if item.scalar != nil { return readFile(item, key: item).map { KitDescription.Layer(file: $0) } }
            guard let mapping = item.mapping else {
                fail(item, "a layer is a sound file or a mapping such as '{ file: soft.wav, velocity: 0-0.5 }', not \(Self.describe(item))")
                return nil
            }
            var layer = KitDescription.Layer(file: "")
            var file: String?
            var hasFileKey = false
            for (keyNode, value) in mapping {
                guard let key = scalarKey(keyNode) else { continue }
                switch key {
                case "file":
                    hasFileKey = true
                    file = readFile(value, key: keyNode)
                case "velocity": layer.velocities = readVelocities(value) ?? layer.velocities
                case "gain": layer.gain = readDecimal(value, key: "gain", in: 0...16, "a level from 0 to 16 (1 leaves the sound as it is)") ?? 1
                case "pitch": layer.pitch = readDecimal(value, key: "pitch", in: -24...24, "semitones from -24 to 24") ?? 0
                default: failUnknownKey(keyNode, key, known: KitFile.layerKeys, in: "a layer")
                }
            }
            guard let file else {
                if !hasFileKey { fail(item, "a layer needs 'file:', its sound file") }
                return nil
            }
            layer.file = file
            return layer
        }
    }

    /// A sound file's path, relative to the kit file's folder unless absolute.
    private mutating func readFile(_ node: Node, key: Node) -> String? {
        guard let text = node.scalar?.string, !text.isEmpty, !Self.isEmpty(node) else {
            fail(Self.isEmpty(node) ? key : node, "a sound file's path, such as 'snare.wav' (relative to the kit file's folder), "
                 + "not \(Self.describe(node))")
            return nil
        }
        return text.hasPrefix("/") ? text : folder + "/" + text
    }

    /// A velocity range written `LOW-HIGH`, velocities from 0 to 1, such as `0-0.5`.
    private mutating func readVelocities(_ node: Node) -> ClosedRange<Float>? {
        let parts = node.scalar?.string.split(separator: "-", omittingEmptySubsequences: false).map { Float($0.trimmingSpaces) } ?? []
        guard parts.count == 2, let low = parts[0], let high = parts[1], (0...1).contains(low), (0...1).contains(high), low <= high else {
            fail(node, "'velocity' is a range of velocities from 0 to 1 such as 0-0.5 or 0.5-1, not \(Self.describe(node))")
            return nil
        }
        return low...high
    }

    /// A number in `range` written at `node` (the value of `key`), reported as `meaning` otherwise.
    private mutating func readDecimal(_ node: Node, key: String, in range: ClosedRange<Float>, _ meaning: String) -> Float? {
        guard let text = node.scalar?.string, let value = Float(text), range.contains(value) else {
            fail(node, "'\(key)' is \(meaning), not \(Self.describe(node))")
            return nil
        }
        return value
    }
}

extension DrumsReader {
    /// Checks the kit at `path`, which the drums block names at `node`, as every loading of route files does (`check`,
    /// `run` and a reload, with or without `audio:`): through DrumKits' loader up to the sound files' headers (no sample
    /// is decoded). A kit.yaml's mistakes are reported where they are in it, the others at `node`; when only checking,
    /// what loading it will warn of (voices it has nothing for, instruments no voice plays) is a note at `node`.
    mutating func checkKit(at path: String, overrides: [DrumVoice: String], _ node: Node) {
        var kitFileMistakes: [RouteFileError] = []
        do throws(KitError) {
            let warnings = try KitLoader.check(path: path, overrides: overrides) { file in
                do throws(RouteFileErrors) {
                    return try KitFile.load(path: file)
                } catch {
                    kitFileMistakes = error.errors
                    throw error
                }
            }
            if checkingOnly { notes += warnings.map { RouteFileNote(location: location(node), message: $0.description) } }
        } catch {
            switch error {
            case .badDescription where !kitFileMistakes.isEmpty:
                errors += kitFileMistakes
            case .badDescription(let kit, let mistakes):
                for mistake in mistakes { fail(node, "drum kit '\(kit)': \(mistake)") }
            default:
                fail(node, "\(error)")
            }
        }
    }
}
