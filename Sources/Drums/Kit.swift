/// The voices patterns play, each with its General MIDI drum note (channel 10), which is also how a kit's
/// instruments are matched to voices when nothing says otherwise.
public enum DrumVoice: String, CaseIterable, Comparable, Sendable {
    case kick, snare, rim, clap
    case hat, pedalHat = "pedal-hat", openHat = "open-hat"
    case lowTom = "low-tom", midTom = "mid-tom", highTom = "high-tom"
    case crash, ride, rideBell = "ride-bell"
    case tambourine, cowbell, clave, shaker
    case highConga = "high-conga", lowConga = "low-conga"

    /// The General MIDI percussion key of the voice.
    public var generalMIDINote: UInt8 {
        switch self {
        case .kick: 36
        case .rim: 37
        case .snare: 38
        case .clap: 39
        case .hat: 42
        case .pedalHat: 44
        case .openHat: 46
        case .lowTom: 45
        case .midTom: 47
        case .highTom: 50
        case .crash: 49
        case .ride: 51
        case .rideBell: 53
        case .tambourine: 54
        case .cowbell: 56
        case .highConga: 63
        case .lowConga: 64
        case .shaker: 70
        case .clave: 75
        }
    }

    /// The voice General MIDI puts on `note`, taking the neighbours GM gives the same role (a second kick,
    /// an electric snare, more toms, a second crash, maracas, a splash or china as a crash).
    public init?(generalMIDINote note: UInt8) {
        switch note {
        case 35, 36: self = .kick
        case 37: self = .rim
        case 38, 40: self = .snare
        case 39: self = .clap
        case 42: self = .hat
        case 44: self = .pedalHat
        case 46: self = .openHat
        case 41, 43, 45: self = .lowTom
        case 47, 48: self = .midTom
        case 50: self = .highTom
        case 49, 52, 55, 57: self = .crash
        case 51, 59: self = .ride
        case 53: self = .rideBell
        case 54: self = .tambourine
        case 56: self = .cowbell
        case 62, 63: self = .highConga
        case 64: self = .lowConga
        case 69, 70, 82: self = .shaker
        case 75, 76, 77: self = .clave
        default: return nil
        }
    }

    public static func < (a: DrumVoice, b: DrumVoice) -> Bool {
        allCases.firstIndex(of: a)! < allCases.firstIndex(of: b)!
    }
}

/// A sound ready to mix: stereo, at `Kit.sampleRate`, with its gain, pan and pitch already applied.
public struct Sample: Sendable, Equatable {
    public var left: [Float]
    public var right: [Float]

    /// A sample of equal channels (`right` defaults to `left`).
    public init(left: [Float], right: [Float]? = nil) {
        precondition(right == nil || right!.count == left.count, "a sample's channels have one length")
        self.left = left
        self.right = right ?? left
    }

    public var frameCount: Int { left.count }
}

/// One velocity layer of an instrument: the sample played for hits whose velocity (0-1) falls in `velocities`.
public struct KitLayer: Sendable, Equatable {
    public var velocities: ClosedRange<Float>
    public var sample: Sample

    public init(velocities: ClosedRange<Float> = 0...1, sample: Sample) {
        self.velocities = velocities
        self.sample = sample
    }
}

/// A kit's instrument as the mixer plays it: the voice it sounds for, its layers, and its choke group (a hit
/// silences whatever else of the group still sounds, as a closed hat cuts the open one).
public struct KitInstrument: Sendable, Equatable {
    public var name: String
    public var voice: DrumVoice
    public var layers: [KitLayer]
    public var chokeGroup: Int?

    public init(name: String, voice: DrumVoice, layers: [KitLayer], chokeGroup: Int? = nil) {
        precondition(!layers.isEmpty, "an instrument has a layer")
        self.name = name
        self.voice = voice
        self.layers = layers
        self.chokeGroup = chokeGroup
    }

    /// The layer for a hit of `velocity` (0-1): the one whose range holds it, else the nearest.
    public func layer(for velocity: Float) -> KitLayer {
        layers.first { $0.velocities.contains(velocity) }
            ?? layers.min { distance($0.velocities, velocity) < distance($1.velocities, velocity) }!
    }

    private func distance(_ range: ClosedRange<Float>, _ value: Float) -> Float {
        value < range.lowerBound ? range.lowerBound - value : value - range.upperBound
    }
}

/// A drum kit ready to play: an instrument per voice it has (a voice it lacks is silent, and said so once when
/// the kit is loaded).
public struct Kit: Sendable, Equatable {
    /// The rate every sample is at, and the mixer's: 48 kHz.
    public static let sampleRate = 48_000

    public var name: String
    public var instruments: [DrumVoice: KitInstrument]

    public init(name: String, instruments: [DrumVoice: KitInstrument]) {
        self.name = name
        self.instruments = instruments
    }
}
