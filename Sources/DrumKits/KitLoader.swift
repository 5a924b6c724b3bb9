import Drums
#if canImport(Glibc)
import Glibc
#endif

/// A kit read from disk, ready to play, and what the musician should hear about it.
public struct LoadedKit: Sendable {
    public var kit: Kit
    /// Voices the kit lacks, instruments no voice plays, parts of the kit left out: one log line each.
    public var warnings: [KitWarning]
    /// What loading it was counted to take against `KitLoader.maximumBytes`.
    public var bytes: Int

    public init(kit: Kit, warnings: [KitWarning], bytes: Int = 0) {
        self.kit = kit
        self.warnings = warnings
        self.bytes = bytes
    }
}

/// Loads drum kits: a Hydrogen kit (its folder or its drumkit.xml) or a sample folder with a kit.yaml (the folder or
/// the file), into a `Kit` whose samples are stereo at 48 kHz with their gain, pan and pitch applied.
public enum KitLoader {
    /// The file that makes a folder a sample kit.
    public static let kitFileName = "kit.yaml"
    /// The most a kit may take to load, 1 GiB, counted from the sound files' headers before any is decoded: each
    /// file decoded (every channel as 32-bit floats) and each layer as the kit keeps it (48 kHz stereo 32-bit
    /// floats, longer when pitched down). Debian's Hydrogen kits take from under 1 MiB to 188 MiB (ForzeeStereo); a
    /// kit that takes more than this would keep the machine busy for many seconds and fill its memory.
    public static let maximumBytes = 1 << 30

    /// The kit at `path`, each voice playing the instrument `overrides` names for it or the one matched
    /// (`KitDescription.assignVoices`). A folder with a kit.yaml is a sample kit (even if it also has a
    /// drumkit.xml), read with `readKitFile` (RouteFile's reader: DrumKits knows no YAML); else a folder with a
    /// drumkit.xml is a Hydrogen kit. Every mistake names the kit and the file.
    public static func load(path: String, overrides: [DrumVoice: String] = [:],
                            readingKitFile readKitFile: (String) throws -> KitDescription) throws(KitError) -> LoadedKit {
        let (description, folder, readerWarnings) = try describe(path, readingKitFile: readKitFile)
        var loaded = try kit(from: description, at: folder, overrides: overrides)
        loaded.warnings = readerWarnings + loaded.warnings
        return loaded
    }

    /// Checks the kit at `path` as `load` would load it, up to the sound files' headers: its description, the voices
    /// and overrides, every header the assigned instruments play and what the kit would take, but no sample is decoded
    /// (`jambridge check`, and every loading of route files). Returns what `load` would warn of, except what only
    /// decoding finds (a FLAC file shorter than its header says).
    public static func check(path: String, overrides: [DrumVoice: String] = [:],
                             readingKitFile readKitFile: (String) throws -> KitDescription) throws(KitError) -> [KitWarning] {
        let (description, folder, readerWarnings) = try describe(path, readingKitFile: readKitFile)
        return readerWarnings + (try assemble(description, at: folder, overrides: overrides, decoding: false).warnings)
    }

    /// The description of the kit at `path` (read by `readKitFile` for a kit.yaml), its folder, and what reading it
    /// left out.
    private static func describe(_ path: String, readingKitFile readKitFile: (String) throws -> KitDescription)
        throws(KitError) -> (KitDescription, folder: String, warnings: [KitWarning]) {
        switch try source(of: path) {
        case .kitFile(let file):
            let folder = HydrogenDrumkit.folder(of: file)
            do {
                return (try readKitFile(file), folder, [])
            } catch {
                throw KitError.badDescription(kit: folder, mistakes: "\(error)".split(separator: "\n").map(String.init))
            }
        case .hydrogen(let file):
            let (description, warnings) = try HydrogenDrumkit.read(path: file)
            return (description, HydrogenDrumkit.folder(of: file), warnings)
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
    /// voices play read, converted and baked (`SampleBaking`); the others are not read. Their headers are read
    /// first, and a kit that would take more than `maximumBytes` is refused before any sample is decoded. What was
    /// chosen by name (a kit.yaml's voices, `overrides`) must play: a sample that cannot is an error. What was
    /// matched may fall back, as Hydrogen plays a kit with missing samples: a layer whose sample cannot be played is
    /// left out (a warning names it), and an instrument left without layers gives its voice to the next instrument
    /// that matches.
    public static func kit(from description: KitDescription, at kit: String,
                           overrides: [DrumVoice: String] = [:]) throws(KitError) -> LoadedKit {
        let assembled = try assemble(description, at: kit, overrides: overrides, decoding: true)
        return LoadedKit(kit: Kit(name: description.name, instruments: assembled.instruments!), warnings: assembled.warnings,
                         bytes: assembled.bytes)
    }

    /// What `kit(from:at:overrides:)` does; without `decoding`, only up to the headers: an instrument whose every header
    /// is refused falls back as one whose every sample cannot be decoded, and no instrument comes back (nil).
    private static func assemble(_ description: KitDescription, at kit: String, overrides: [DrumVoice: String],
                                 decoding: Bool) throws(KitError) -> (instruments: [DrumVoice: KitInstrument]?, warnings: [KitWarning], bytes: Int) {
        guard !description.instruments.isEmpty else { throw KitError.empty(kit: kit, reason: "it has no instrument with a sample") }
        // Files several layers play are read once and kept until the kit is made; the others are not kept.
        let layerFiles = description.instruments.flatMap { $0.layers.map(\.file) }
        let sharedFiles = Set(Dictionary(layerFiles.map { ($0, 1) }, uniquingKeysWith: +).filter { $0.value > 1 }.keys)
        var headers: [String: SoundFile.Header] = [:]
        var cost = KitCost()
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
            let newcomers = Set(assignment.instruments.values).sorted().filter { baked[$0] == nil }
            // Every header first: nothing is decoded until the kit is known to fit.
            var playable: [Int: [(KitDescription.Layer, SoundFile.Header)]] = [:]
            for index in newcomers {
                let instrument = description.instruments[index]
                playable[index] = try headed(instrument, in: kit, strictly: chosen.contains(index), headers: &headers, leftOut: &leftOut)
                for (layer, header) in playable[index]! { cost.count(layer.file, header, pitch: instrument.pitch + layer.pitch) }
            }
            guard cost.total <= maximumBytes else {
                throw KitError.tooLarge(kit: kit, bytes: cost.total, largest: cost.largest.file, largestBytes: cost.largest.bytes)
            }
            for index in newcomers {
                guard decoding else {
                    if playable[index]!.isEmpty { broken.insert(index) } else { baked[index] = [] }
                    continue
                }
                let layers = try self.layers(playable[index]!, of: description.instruments[index], in: kit, strictly: chosen.contains(index),
                                             keeping: sharedFiles, in: &audio, leftOut: &leftOut)
                if layers.isEmpty { broken.insert(index) } else { baked[index] = layers }
            }
            guard assignment.instruments.values.allSatisfy({ baked[$0] != nil }) else { continue }
            let instruments = !decoding ? nil : Dictionary(uniqueKeysWithValues: assignment.instruments.map { voice, index in
                (voice, KitInstrument(name: description.instruments[index].name, voice: voice, layers: baked[index]!,
                                      chokeGroup: description.instruments[index].chokeGroup))
            })
            var warnings = leftOut
            if !assignment.missingVoices.isEmpty { warnings.append(.missingVoices(kit: kit, assignment.missingVoices)) }
            if !assignment.unusedInstruments.isEmpty { warnings.append(.unusedInstruments(kit: kit, assignment.unusedInstruments)) }
            return (instruments, warnings, cost.total)
        }
    }

    /// The layers of `instrument` with their files' headers (kept in `headers` by path), those whose header is
    /// refused left out: an error if `strictly`, else said so in `leftOut`.
    private static func headed(_ instrument: KitDescription.Instrument, in kit: String,
                               strictly: Bool, headers: inout [String: SoundFile.Header],
                               leftOut: inout [KitWarning]) throws(KitError) -> [(KitDescription.Layer, SoundFile.Header)] {
        var headed: [(KitDescription.Layer, SoundFile.Header)] = []
        for layer in instrument.layers {
            do throws(SoundFileError) {
                let header: SoundFile.Header
                if let known = headers[layer.file] { header = known } else { header = try SoundFile.header(path: layer.file) }
                headers[layer.file] = header
                headed.append((layer, header))
            } catch {
                guard !strictly else { throw KitError.badSample(kit: kit, instrument: instrument.name, file: layer.file, reason: error.reason) }
                leftOut.append(.sampleLeftOut(kit: kit, instrument: instrument.name, file: layer.file, reason: error.reason))
            }
        }
        return headed
    }

    /// The layers of `instrument` made from `headed` (layers with their files' headers), the sounds of `shared` files
    /// kept in `audio` (by path) once read. A sample that cannot be played is an error if `strictly`, else its layer
    /// is left out and said so in `leftOut`.
    private static func layers(_ headed: [(KitDescription.Layer, SoundFile.Header)], of instrument: KitDescription.Instrument,
                               in kit: String, strictly: Bool, keeping shared: Set<String>,
                               in audio: inout [String: SoundFile.Audio], leftOut: inout [KitWarning]) throws(KitError) -> [KitLayer] {
        var layers: [KitLayer] = []
        for (layer, header) in headed {
            do throws(SoundFileError) {
                let sound: SoundFile.Audio
                if let read = audio[layer.file] { sound = read } else { sound = try SoundFile.read(path: layer.file, expecting: header) }
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

/// What loading a kit takes, counted from its sound files' headers against `KitLoader.maximumBytes`: each file
/// decoded once, each layer as baked. Each count is capped just above the limit, so that the sum cannot overflow.
struct KitCost {
    /// The bytes counted so far, by file.
    private var bytes: [String: Int] = [:]
    /// The files counted decoded.
    private var decoded: Set<String> = []
    private(set) var total = 0

    /// Counts a layer playing `file`, of `header`, `pitch` semitones up: the file decoded (once), the layer baked.
    mutating func count(_ file: String, _ header: SoundFile.Header, pitch: Float) {
        let capped = Double(KitLoader.maximumBytes + 1)
        let frames = Double(header.frames) * Double(Kit.sampleRate) / Double(header.rate) / exp2(Double(pitch) / 12)
        var added = Int(min(capped, (frames * 2).rounded(.up) * Double(MemoryLayout<Float>.size)))
        if decoded.insert(file).inserted { added += header.decodedBytes }
        bytes[file, default: 0] += added
        total += added
    }

    /// The file that takes the most, and what it takes.
    var largest: (file: String, bytes: Int) {
        bytes.max { ($0.value, $1.key) < ($1.value, $0.key) }.map { ($0.key, $0.value) } ?? ("", 0)
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
    /// The samples would take `bytes` to load, more than `KitLoader.maximumBytes`; `largest` takes the most of them.
    case tooLarge(kit: String, bytes: Int, largest: String, largestBytes: Int)

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
        case .tooLarge(let kit, let bytes, let largest, let largestBytes):
            "drum kit '\(kit)' is too large: its samples would take \(mebibytes(bytes)) to load (decoded, and kept at 48 kHz "
                + "stereo), more than the \(mebibytes(KitLoader.maximumBytes)) a kit may take; the largest is '\(largest)' "
                + "(\(mebibytes(largestBytes))). Play fewer or shorter samples, or convert them to 48 kHz stereo "
                + "(sox IN.wav -r 48000 -c 2 OUT.wav)"
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

/// `bytes` for a message: whole mebibytes (at least 1), or gibibytes to a tenth from 1 GiB.
private func mebibytes(_ bytes: Int) -> String {
    guard bytes >= 1 << 30 else { return "\(max(1, (bytes + (1 << 19)) >> 20)) MiB" }
    let tenths = (bytes * 10 + (1 << 29)) >> 30
    return tenths % 10 == 0 ? "\(tenths / 10) GiB" : "\(tenths / 10).\(tenths % 10) GiB"
}
