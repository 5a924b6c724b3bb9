import Drums

/// A kit read from disk, ready to play, and what the musician should hear about it.
public struct LoadedKit: Sendable {
    public var kit: Kit
    /// Voices the kit lacks, instruments no voice plays, parts of the kit left out: one log line each.
    public var warnings: [KitWarning]

    public init(kit: Kit, warnings: [KitWarning]) {
        self.kit = kit
        self.warnings = warnings
    }
}

/// Loads drum kits: a Hydrogen kit (its folder or its drumkit.xml) or a sample folder with a kit.yaml (the folder or
/// the file), into a `Kit` whose samples are stereo at 48 kHz with their gain, pan and pitch applied.
public enum KitLoader {
    /// The file that makes a folder a sample kit.
    public static let kitFileName = "kit.yaml"

    /// The kit at `path`, each voice playing the instrument `overrides` names for it or the one matched
    /// (`KitDescription.assignVoices`). A folder with a kit.yaml is a sample kit (even if it also has a
    /// drumkit.xml), read with `readKitFile` (RouteFile's reader: DrumKits knows no YAML); else a folder with a
    /// drumkit.xml is a Hydrogen kit. Every mistake names the kit and the file.
    public static func load(path: String, overrides: [DrumVoice: String] = [:],
                            readingKitFile readKitFile: (String) throws -> KitDescription) throws(KitError) -> LoadedKit {
        switch try source(of: path) {
        case .kitFile(let file):
            let kit = HydrogenDrumkit.folder(of: file)
            let description: KitDescription
            do {
                description = try readKitFile(file)
            } catch {
                throw KitError.badDescription(kit: kit, mistakes: "\(error)".split(separator: "\n").map(String.init))
            }
            return try self.kit(from: description, at: kit, overrides: overrides)
        case .hydrogen(let file):
            let (description, readerWarnings) = try HydrogenDrumkit.read(path: file)
            var loaded = try kit(from: description, at: HydrogenDrumkit.folder(of: file), overrides: overrides)
            loaded.warnings = readerWarnings + loaded.warnings
            return loaded
        }
    }

    /// The description file a kit path stands for.
    private enum Source {
        case kitFile(String)
        case hydrogen(String)
    }

    /// The kit.yaml or drumkit.xml that `path` (a folder or one of those files) stands for.
    private static func source(of path: String) throws(KitError) -> Source {
        guard KitFileAccess.exists(path) else { throw KitError.notAKit(path: path, reason: "it does not exist") }
        guard KitFileAccess.isDirectory(path) else {
            if path.hasSuffix(".yaml") || path.hasSuffix(".yml") { return .kitFile(path) }
            if path.hasSuffix(".xml") { return .hydrogen(path) }
            throw KitError.notAKit(path: path, reason: "it is neither a kit.yaml nor a Hydrogen drumkit.xml (nor their folder)")
        }
        let kitFile = path + "/" + kitFileName
        if KitFileAccess.exists(kitFile) { return .kitFile(kitFile) }
        let hydrogenFile = path + "/" + HydrogenDrumkit.fileName
        if KitFileAccess.exists(hydrogenFile) { return .hydrogen(hydrogenFile) }
        throw KitError.notAKit(path: path, reason: "the folder has neither a kit.yaml (a sample folder's voices) nor a drumkit.xml (a Hydrogen kit)")
    }

    /// The kit `description` describes (`kit` is its folder, for messages): the samples of the instruments that
    /// voices play read, converted and baked (`SampleBaking`); the others are not read. What was chosen by name (a
    /// kit.yaml's voices, `overrides`) must play: a sample that cannot is an error. What was matched may fall back,
    /// as Hydrogen plays a kit with missing samples: a layer whose sample cannot be played is left out (a warning
    /// names it), and an instrument left without layers gives its voice to the next instrument that matches.
    public static func kit(from description: KitDescription, at kit: String,
                           overrides: [DrumVoice: String] = [:]) throws(KitError) -> LoadedKit {
        guard !description.instruments.isEmpty else { throw KitError.empty(kit: kit, reason: "it has no instrument with a sample") }
        // Files several layers play are read once and kept until the kit is made; the others are not kept.
        let layerFiles = description.instruments.flatMap { $0.layers.map(\.file) }
        let sharedFiles = Set(Dictionary(layerFiles.map { ($0, 1) }, uniquingKeysWith: +).filter { $0.value > 1 }.keys)
        var audio: [String: SoundFile.Audio] = [:]
        var baked: [Int: [KitLayer]] = [:]
        var broken: Set<Int> = []
        var leftOut: [KitWarning] = []
        while true {
            let assignment = description.assignVoices(overrides: overrides, excluding: broken)
            guard assignment.unknownOverrides.isEmpty else {
                throw KitError.unknownInstruments(kit: kit, assignment.unknownOverrides, instruments: description.instruments.map(\.name))
            }
            guard !assignment.instruments.isEmpty else {
                throw KitError.empty(kit: kit, reason: leftOut.isEmpty
                    ? "none of its instruments matched a voice; give them voices in the route file"
                    : "no instrument that matched a voice can be played: " + leftOut.map(\.description).joined(separator: "; "))
            }
            let chosen = Set(assignment.instruments.filter { overrides[$0.key] != nil || description.instruments[$0.value].voice != nil }.values)
            for index in Set(assignment.instruments.values).sorted() where baked[index] == nil {
                let layers = try self.layers(of: description.instruments[index], in: kit, strictly: chosen.contains(index),
                                             keeping: sharedFiles, in: &audio, leftOut: &leftOut)
                if layers.isEmpty { broken.insert(index) } else { baked[index] = layers }
            }
            guard assignment.instruments.values.allSatisfy({ baked[$0] != nil }) else { continue }
            let instruments = Dictionary(uniqueKeysWithValues: assignment.instruments.map { voice, index in
                (voice, KitInstrument(name: description.instruments[index].name, voice: voice, layers: baked[index]!,
                                      chokeGroup: description.instruments[index].chokeGroup))
            })
            var warnings = leftOut
            if !assignment.missingVoices.isEmpty { warnings.append(.missingVoices(kit: kit, assignment.missingVoices)) }
            if !assignment.unusedInstruments.isEmpty { warnings.append(.unusedInstruments(kit: kit, assignment.unusedInstruments)) }
            return LoadedKit(kit: Kit(name: description.name, instruments: instruments), warnings: warnings)
        }
    }

    /// The layers of `instrument`, the sounds of `shared` files kept in `audio` (by path) once read. A sample that
    /// cannot be played is an error if `strictly`, else its layer is left out and said so in `leftOut`.
    private static func layers(of instrument: KitDescription.Instrument, in kit: String, strictly: Bool,
                               keeping shared: Set<String>, in audio: inout [String: SoundFile.Audio],
                               leftOut: inout [KitWarning]) throws(KitError) -> [KitLayer] {
        var layers: [KitLayer] = []
        for layer in instrument.layers {
            do throws(SoundFileError) {
                let sound: SoundFile.Audio
                if let read = audio[layer.file] { sound = read } else { sound = try SoundFile.read(path: layer.file) }
                if shared.contains(layer.file) { audio[layer.file] = sound }
                do {
                    let sample = try SampleBaking.sample(from: sound, gain: instrument.gain * layer.gain, pan: instrument.pan,
                                                         pitch: instrument.pitch + layer.pitch)
                    layers.append(KitLayer(velocities: layer.velocities, sample: sample))
                } catch {
                    throw SoundFileError(path: layer.file, reason: error.reason)
                }
            } catch {
                guard !strictly else { throw KitError.badSample(kit: kit, instrument: instrument.name, file: layer.file, reason: error.reason) }
                leftOut.append(.sampleLeftOut(kit: kit, instrument: instrument.name, file: layer.file, reason: error.reason))
            }
        }
        return layers
    }
}

/// Why a kit cannot be played; every case names the kit (its folder or the path given) and the file at fault.
public enum KitError: Error, Equatable, Sendable, CustomStringConvertible {
    /// `path` is not a kit: it does not exist, or it is neither a Hydrogen kit nor a sample folder.
    case notAKit(path: String, reason: String)
    /// The kit's drumkit.xml or kit.yaml cannot be read or holds mistakes, each `file:line:column: message`
    /// (`file:line: message` for a drumkit.xml's elements: libxml2 keeps no column for them).
    case badDescription(kit: String, mistakes: [String])
    /// A sample of `instrument` cannot be played.
    case badSample(kit: String, instrument: String, file: String, reason: String)
    /// Nothing in the kit can play.
    case empty(kit: String, reason: String)
    /// Overrides (voice: instrument name) naming instruments the kit does not have.
    case unknownInstruments(kit: String, [DrumVoice: String], instruments: [String])

    public var description: String {
        switch self {
        case .notAKit(let path, let reason):
            "'\(path)' is not a drum kit: \(reason)"
        case .badDescription(let kit, let mistakes):
            mistakes.map { "drum kit '\(kit)': \($0)" }.joined(separator: "\n")
        case .badSample(let kit, let instrument, let file, let reason):
            "drum kit '\(kit)', instrument '\(instrument)': sample '\(file)': \(reason)"
        case .empty(let kit, let reason):
            "drum kit '\(kit)' has nothing to play: \(reason)"
        case .unknownInstruments(let kit, let overrides, let instruments):
            "drum kit '\(kit)' has no instrument "
                + overrides.sorted { $0.key < $1.key }.map { "'\($1)' (for \($0.rawValue))" }.joined(separator: ", ")
                + "; its instruments are " + instruments.map { "'\($0)'" }.joined(separator: ", ")
        }
    }
}

/// What a kit lacks or leaves unplayed: worth a log line, not a reason to stop.
public enum KitWarning: Equatable, Sendable, CustomStringConvertible {
    /// Voices the kit has nothing for: their hits are silent.
    case missingVoices(kit: String, [DrumVoice])
    /// Instruments no voice plays: the route file can give them voices.
    case unusedInstruments(kit: String, [String])
    /// A Hydrogen instrument of several components (microphones, say) plays its first only.
    case componentsLeftOut(kit: String, instrument: String, count: Int)
    /// A matched instrument's layer whose sample cannot be played is left out.
    case sampleLeftOut(kit: String, instrument: String, file: String, reason: String)

    public var description: String {
        switch self {
        case .missingVoices(let kit, let voices):
            "drum kit '\(kit)' has nothing for " + voices.map(\.rawValue).joined(separator: ", ") + ": those hits are silent"
        case .unusedInstruments(let kit, let names):
            "drum kit '\(kit)': no voice plays " + names.prefix(10).map { "'\($0)'" }.joined(separator: ", ")
                + (names.count > 10 ? " and \(names.count - 10) more" : "") + " (the route file can give them voices)"
        case .componentsLeftOut(let kit, let instrument, let count):
            "drum kit '\(kit)', instrument '\(instrument)': its first component plays, \(count) more "
                + (count == 1 ? "is" : "are") + " left out"
        case .sampleLeftOut(let kit, let instrument, let file, let reason):
            "drum kit '\(kit)', instrument '\(instrument)': sample '\(file)' is left out: \(reason)"
        }
    }
}
