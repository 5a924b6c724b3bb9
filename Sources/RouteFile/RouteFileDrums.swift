import Drums
import MIDI

/// The drum sequencer a route file's `drums:` block declares (jambridge-routes(5), "The drums").
public struct DrumsDeclaration: Equatable, Sendable {
    /// The name routes give the sequencer's notes.
    public static let endpointName = "drums"

    /// Where the sequencer's kit comes from.
    public enum KitSource: Equatable, Sendable {
        /// The kit synthesised at start-up.
        case builtIn
        /// A Hydrogen kit (its folder or drumkit.xml) or a folder with a kit.yaml, by absolute path.
        case path(String)
    }

    /// Where the audio goes (`audio:`): an ALSA PCM device, a period in frames, the periods in the buffer.
    public struct Audio: Equatable, Sendable {
        public var device = "default"
        public var period = 256
        public var periods = 3

        public init(device: String = "default", period: Int = 256, periods: Int = 3) {
            self.device = device
            self.period = period
            self.periods = periods
        }
    }

    public var style: Style
    /// The style as written: a built-in style's name or the style file's path.
    public var styleName = "rock"
    public var kit = KitSource.builtIn
    /// Which kit instrument plays a voice, by the instrument's name (`voices:`), where the kit's own matching
    /// is not what is wanted.
    public var voices: [DrumVoice: String] = [:]
    /// The level played whatever the activity (`level: N`), or nil: the session's total activity decides.
    public var level: Int?
    public var seed: UInt64 = 1
    public var muted: Set<DrumVoice> = []
    public var audio: Audio?
    /// The channel of the `drums` endpoint's notes (1-16, default 10) and each voice's note.
    public var channel = UInt4(masking: 9)
    public var notes: [DrumVoice: UInt7] = [:]
    public var location: SourceLocation
    /// The route files' folders, symlinks resolved (`StyleFile.folders(ofRouteFiles:)`): the only places a style
    /// file named while jambridge runs (`drums style PATH`) is read from.
    public var styleFolders: [String] = []

    public init(style: Style, location: SourceLocation) {
        self.style = style
        self.location = location
    }

    /// The note `voice` plays on the `drums` endpoint: its `notes:` entry or its General MIDI key.
    public func note(of voice: DrumVoice) -> UInt7 {
        notes[voice] ?? UInt7(masking: voice.generalMIDINote)
    }
}

/// The reader of the top-level `drums:` block: the style (a style file read whole), the kit (checked on disk when
/// files are) and how the drums play.
struct DrumsReader: RouteFileReader {
    let file: String
    var errors: [RouteFileError] = []
    var notes: [RouteFileNote] = []
    /// The route file's directory, which relative style and kit paths start from.
    let directory: String
    /// True if the kit named is checked on disk.
    let checksFiles: Bool
    /// True for `jambridge check`: what loading the kit will warn of is a note.
    let checkingOnly: Bool

    /// Reads the `drums:` block written at `key` (empty: the defaults, rock on the built-in kit).
    mutating func read(_ node: Node, key: Node) -> DrumsDeclaration? {
        var declaration = DrumsDeclaration(style: BuiltinStyles.style("rock")!, location: location(key))
        if Self.isEmpty(node) { return declaration }
        var kitValue: Node?
        guard let mapping = node.mapping else {
            fail(node, "'drums' is a mapping such as '{ style: funk, kit: built-in }', not \(Self.describe(node))")
            return nil
        }
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "style":
                guard let text = value.scalar?.string, !text.isEmpty else {
                    fail(value, "'style' is a built-in style (\(BuiltinStyles.names.joined(separator: ", "))) or a style file's path")
                    continue
                }
                if let style = BuiltinStyles.style(text) {
                    declaration.style = style
                    declaration.styleName = text
                } else if StyleFile.isPath(text) {
                    let path = resolve(text)
                    declaration.styleName = path
                    do {
                        declaration.style = try StyleFile.load(path: path)
                    } catch {
                        errors.append(contentsOf: error.errors)
                    }
                } else {
                    let hint = RouteFileVocabulary.closest(to: text, in: BuiltinStyles.names).map { "did you mean '\($0)'? " } ?? ""
                    fail(value, "unknown style '\(text)'; \(hint)the built-in styles are \(BuiltinStyles.names.joined(separator: ", ")), "
                         + "and a style file is named by its path (such as './mine.yaml')")
                }
            case "kit":
                guard let text = value.scalar?.string, !text.isEmpty else {
                    fail(value, "'kit' is 'built-in' or the path of a Hydrogen kit or a folder with a kit.yaml")
                    continue
                }
                guard text != "built-in" else { continue }
                declaration.kit = .path(resolve(text))
                kitValue = value
            case "voices":
                declaration.voices = readVoiceMap(value, what: "'voices' (which kit instrument plays a voice)") { node in
                    node.scalar.map(\.string).flatMap { $0.isEmpty ? nil : $0 }
                }
            case "level":
                if value.scalar?.string == "follow" { declaration.level = nil; continue }
                guard let text = value.scalar?.string, let level = Int(text), (1...9).contains(level) else {
                    fail(value, "'level' is 'follow' (the session's activity decides) or a level 1-9 to keep")
                    continue
                }
                declaration.level = level
            case "seed":
                guard let text = value.scalar?.string, let seed = UInt64(text) else {
                    fail(value, "'seed' is a whole number (the same seed plays the same song)")
                    continue
                }
                declaration.seed = seed
            case "mute":
                let items = value.sequence.map(Array.init) ?? []
                for item in items {
                    guard let voice = item.scalar.flatMap({ DrumVoice(rawValue: $0.string) }) else {
                        failVoice(item)
                        continue
                    }
                    declaration.muted.insert(voice)
                }
                if value.sequence == nil { fail(value, "'mute' lists voices, such as '[crash, cowbell]'") }
            case "audio":
                declaration.audio = readAudio(value)
            case "notes":
                readNotes(value, into: &declaration)
            default:
                failUnknownKey(keyNode, name, known: RouteFileVocabulary.drumsKeys, in: "the 'drums' block")
            }
        }
        if let level = declaration.level, level > declaration.style.levels {
            fail(node, "'level: \(level)' but the style '\(declaration.style.name)' has \(declaration.style.levels) levels")
        }
        if checksFiles, case .path(let path) = declaration.kit, let kitValue {
            checkKit(at: path, overrides: declaration.voices, kitValue)
            if declaration.audio == nil {
                notes.append(RouteFileNote(location: location(kitValue), message:
                    "the kit is not played: without 'audio:' the drums are only notes from the 'drums' endpoint; "
                    + "add 'audio: default' to hear it"))
            }
        }
        return declaration
    }

    /// `path` relative to this file, made absolute.
    private func resolve(_ path: String) -> String {
        FilePaths.absolute(path, in: directory)
    }

    private mutating func failVoice(_ node: Node) {
        let text = node.scalar?.string ?? Self.describe(node)
        let hint = RouteFileVocabulary.closest(to: text, in: DrumVoice.allCases.map(\.rawValue)).map { "did you mean '\($0)'? " } ?? ""
        fail(node, "unknown voice '\(text)'; \(hint)the voices are \(DrumVoice.allCases.map(\.rawValue).joined(separator: ", "))")
    }

    /// A mapping of voices to values `read` takes (nil: reported as not `what`).
    private mutating func readVoiceMap<Value>(_ node: Node, what: String, _ read: (Node) -> Value?) -> [DrumVoice: Value] {
        guard let mapping = node.mapping else {
            fail(node, "\(what) maps voices to values, not \(Self.describe(node))")
            return [:]
        }
        var result: [DrumVoice: Value] = [:]
        for (keyNode, value) in mapping {
            guard let voice = DrumVoice(rawValue: keyNode.scalar?.string ?? "") else {
                failVoice(keyNode)
                continue
            }
            guard let read = read(value) else {
                fail(value, "\(Self.describe(value)) is not right for \(what)")
                continue
            }
            result[voice] = read
        }
        return result
    }

    /// `audio: DEVICE` or `{ device:, period:, periods: }`.
    private mutating func readAudio(_ node: Node) -> DrumsDeclaration.Audio? {
        var audio = DrumsDeclaration.Audio()
        if let device = node.scalar?.string, !Self.isEmpty(node) {
            audio.device = device
            return audio
        }
        guard let mapping = node.mapping else {
            if !Self.isEmpty(node) { fail(node, "'audio' is an ALSA PCM device such as 'default' or 'hw:1', or '{ device:, period:, periods: }'") }
            return Self.isEmpty(node) ? audio : nil
        }
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            switch name {
            case "device":
                if let device = value.scalar?.string, !device.isEmpty { audio.device = device } else { fail(value, "'device' is an ALSA PCM device such as 'default' or 'hw:1'") }
            case "period":
                guard let period = readInteger(value, what: "'period' (frames a period, at 48 kHz)", range: "64-1024"),
                      (64...1024).contains(period) else { fail(value, "'period' is 64-1024 frames (256 is 5.3 ms at 48 kHz)"); continue }
                audio.period = period
            case "periods":
                guard let periods = readInteger(value, what: "'periods' (periods in the buffer)", range: "2-4"),
                      (2...4).contains(periods) else { fail(value, "'periods' is 2-4"); continue }
                audio.periods = periods
            default:
                failUnknownKey(keyNode, name, known: ["device", "period", "periods"], in: "'audio'")
            }
        }
        return audio
    }

    /// `notes: { channel: 1-16, VOICE: NOTE, ... }`.
    private mutating func readNotes(_ node: Node, into declaration: inout DrumsDeclaration) {
        guard let mapping = node.mapping else {
            fail(node, "'notes' is a mapping such as '{ channel: 10, kick: 35 }' (the channel and each voice's note)")
            return
        }
        for (keyNode, value) in mapping {
            guard let name = scalarKey(keyNode) else { continue }
            if name == "channel" {
                if let channel = readChannel(value) { declaration.channel = channel }
            } else if let voice = DrumVoice(rawValue: name) {
                if let note = value.scalar.flatMap({ Self.note($0.string) }) {
                    declaration.notes[voice] = note
                } else {
                    fail(value, "a voice's note is 0-127 or a name such as C1 (C4 = 60), not \(Self.describe(value))")
                }
            } else {
                failUnknownKey(keyNode, name, known: ["channel"] + DrumVoice.allCases.map(\.rawValue), in: "'notes'")
            }
        }
    }
}
