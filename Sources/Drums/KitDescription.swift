/// A drum kit as its files describe it (a Hydrogen drumkit.xml, a sample folder's kit.yaml), before any sample is
/// read: the instruments with their levels, pan, pitch and sample files, which DrumKits' loader turns into a `Kit`.
public struct KitDescription: Sendable, Equatable {
    /// One velocity layer: the sample file played for hits whose velocity (0-1) falls in `velocities`.
    public struct Layer: Sendable, Equatable {
        public var velocities: ClosedRange<Float>
        /// A linear gain on top of the instrument's.
        public var gain: Float
        /// Semitones on top of the instrument's.
        public var pitch: Float
        /// The sound file's path.
        public var file: String

        public init(velocities: ClosedRange<Float> = 0...1, gain: Float = 1, pitch: Float = 0, file: String) {
            self.velocities = velocities
            self.gain = gain
            self.pitch = pitch
            self.file = file
        }
    }

    /// One instrument: what it sounds for, how loud, where and how high, and its layers.
    public struct Instrument: Sendable, Equatable {
        public var name: String
        /// The voice it plays, or nil to match it by its note and name (`assignVoices`).
        public var voice: DrumVoice?
        /// The MIDI note the kit gives it (Hydrogen's `midiOutNote`), if any.
        public var note: UInt8?
        /// A linear gain (1 leaves the samples as they are).
        public var gain: Float
        /// -1 (left) ... 0 (centre) ... 1 (right).
        public var pan: Float
        /// Semitones up (negative: down), applied by resampling.
        public var pitch: Float
        /// The instruments of a group cut each other off (Hydrogen's mute group, kit.yaml's `choke`).
        public var chokeGroup: Int?
        public var layers: [Layer]

        public init(name: String, voice: DrumVoice? = nil, note: UInt8? = nil, gain: Float = 1, pan: Float = 0,
                    pitch: Float = 0, chokeGroup: Int? = nil, layers: [Layer]) {
            self.name = name
            self.voice = voice
            self.note = note
            self.gain = gain
            self.pan = pan
            self.pitch = pitch
            self.chokeGroup = chokeGroup
            self.layers = layers
        }
    }

    public var name: String
    public var instruments: [Instrument]

    public init(name: String, instruments: [Instrument]) {
        self.name = name
        self.instruments = instruments
    }
}

/// Which instrument of a kit each voice plays, and what is left over.
public struct VoiceAssignment: Sendable, Equatable {
    /// The index in the description's `instruments` of what each voice plays.
    public var instruments: [DrumVoice: Int] = [:]
    /// Overrides naming no instrument of the kit.
    public var unknownOverrides: [DrumVoice: String] = [:]
    /// The voices nothing plays, in voice order.
    public var missingVoices: [DrumVoice] = []
    /// The names of the instruments no voice plays, in kit order.
    public var unusedInstruments: [String] = []
}

extension KitDescription {
    /// Matches voices to instruments. A voice plays the instrument `overrides` names for it (case aside); else the
    /// first of the instruments that match it best: one whose description gives the voice (kit.yaml), then by name
    /// (`nameRules`, earlier rules first: "Snare" before "Snare Roll"), then by the General MIDI meaning of its note.
    /// The name wins over the note, and a note several instruments share means nothing: kits in the wild leave
    /// Hydrogen's default note on every instrument, or give their second snare the mid tom's note. The instruments
    /// at `excluded` (whose samples cannot be played) match nothing and are not listed as unused.
    public func assignVoices(overrides: [DrumVoice: String] = [:], excluding excluded: Set<Int> = []) -> VoiceAssignment {
        let noteUses = Dictionary(instruments.compactMap(\.note).map { ($0, 1) }, uniquingKeysWith: +)
        // Per instrument, the voice it matches and how well (lower is better).
        let matches: [(voice: DrumVoice, rank: Int)?] = instruments.indices.map { index in
            let instrument = instruments[index]
            if excluded.contains(index) { return nil }
            if let voice = instrument.voice { return (voice, 0) }
            let name = InstrumentName(instrument.name)
            if let rule = Self.nameRules.firstIndex(where: { $0.matches(name) }) {
                return (Self.nameRules[rule].voice, 1 + rule)
            }
            if let note = instrument.note, noteUses[note] == 1, let voice = DrumVoice(generalMIDINote: note) {
                return (voice, 1 + Self.nameRules.count)
            }
            return nil
        }
        var assignment = VoiceAssignment()
        for voice in DrumVoice.allCases {
            if let name = overrides[voice] {
                if let index = instruments.firstIndex(where: { $0.name.lowercased() == name.lowercased() }) {
                    assignment.instruments[voice] = index
                } else {
                    assignment.unknownOverrides[voice] = name
                }
                continue
            }
            let candidates = matches.indices.filter { matches[$0]?.voice == voice }
            if let best = candidates.min(by: { matches[$0]!.rank < matches[$1]!.rank }) {
                assignment.instruments[voice] = best
            } else {
                assignment.missingVoices.append(voice)
            }
        }
        let used = Set(assignment.instruments.values).union(excluded)
        assignment.unusedInstruments = instruments.indices.filter { !used.contains($0) }.map { instruments[$0].name }
        return assignment
    }

    /// The words in instrument names that say which voice they are, most telling first: the first rule an
    /// instrument's name matches is its voice, and among the instruments of one voice an earlier rule wins.
    static let nameRules: [(voice: DrumVoice, matches: @Sendable (InstrumentName) -> Bool)] = [
        (.cowbell, { $0.has("cowbell") }),
        (.rideBell, { $0.has("bell", "cup") }),
        (.tambourine, { $0.has("tamb") }),
        (.clave, { $0.has("clave") }),
        (.shaker, { $0.has("shaker", "maraca") }),
        (.lowConga, { $0.has("conga") && ($0.has("low") || $0.hasWord("lo")) }),
        (.highConga, { $0.has("conga") }),
        (.pedalHat, { $0.isHat && ($0.has("pedal", "foot") || $0.hasWord("pd")) }),
        (.openHat, { $0.has("ohh") || $0.isHat && $0.has("open", "op") && !$0.has("semi", "half") }),
        (.openHat, { $0.isHat && $0.has("semi", "half") }),
        (.hat, { $0.has("chh") || $0.isHat && ($0.has("closed") || $0.hasWord("cl")) }),
        (.hat, { $0.isHat }),
        (.kick, { $0.has("kick", "bassdrum") || $0.hasPhrase("bass", "drum") }),
        (.rim, { $0.has("rim", "stick", "sidestick") && !$0.has("rimshot") }),
        (.snare, { $0.has("snare") && !$0.has("roll") }),
        (.snare, { $0.has("snare") }),
        (.clap, { $0.has("clap") }),
        (.lowTom, { $0.isTom && ($0.has("floor", "low") || $0.hasWord("lo")) }),
        (.midTom, { $0.isTom && $0.has("mid") }),
        (.highTom, { $0.isTom && ($0.has("high", "tomhi") || $0.hasWord("hi")) }),
        (.midTom, { $0.isTom }),
        // A crash/ride cymbal is a ride here: a kit that has one usually has a crash of its own.
        (.ride, { $0.has("ride") }),
        (.crash, { $0.has("crash") }),
        (.crash, { $0.has("splash", "china") }),
    ]
}

/// An instrument's name as lower-case words: runs of letters, split where a lower-case letter meets an upper-case
/// one ("SabianHatClosed": sabian hat closed; "Hi-Hat Open (Paiste 14\")": hi hat open paiste; "tomhi2": tomhi).
struct InstrumentName {
    let words: [String]

    init(_ name: String) {
        var words: [String] = []
        var word = ""
        var afterLowerCase = false
        for character in name {
            if character.isLetter {
                if character.isUppercase && afterLowerCase {
                    words.append(word)
                    word = ""
                }
                word += character.lowercased()
                afterLowerCase = character.isLowercase
            } else {
                if !word.isEmpty { words.append(word) }
                word = ""
                afterLowerCase = false
            }
        }
        if !word.isEmpty { words.append(word) }
        self.words = words
    }

    /// True if a word starts with one of `prefixes`.
    func has(_ prefixes: String...) -> Bool {
        words.contains { word in prefixes.contains { word.hasPrefix($0) } }
    }

    /// True if one of `candidates` is a whole word of the name.
    func hasWord(_ candidates: String...) -> Bool {
        words.contains { candidates.contains($0) }
    }

    /// True if the word `first` is followed by one starting with `second`.
    func hasPhrase(_ first: String, _ second: String) -> Bool {
        zip(words, words.dropFirst()).contains { $0 == first && $1.hasPrefix(second) }
    }

    var isHat: Bool { has("hat", "hihat", "hh") }
    var isTom: Bool { has("tom") }
}
