/// A bar's metre: `beats` notes of 1/`unit` each (4/4, 6/8, 7/8...).
public struct TimeSignature: Sendable, Equatable, CustomStringConvertible {
    public var beats: Int
    public var unit: Int

    public init(beats: Int, unit: Int) {
        self.beats = beats
        self.unit = unit
    }

    /// A bar's length in MIDI clock ticks (24 a quarter note).
    public var barTicks: Double { Double(beats) * 96 / Double(unit) }

    public var description: String { "\(beats)/\(unit)" }
}

/// One step of a voice's line: it plays from intensity `level` up (1 plays always), at `velocity` (0-1), with
/// `probability` (0-1, drawn from the style's seed: the same render every time).
public struct Step: Sendable, Equatable {
    public var level: Int
    public var velocity: Float
    public var probability: Float

    /// The velocity of a plain step, an accented one and a ghost note.
    public static let plain: Float = 0.75, accent: Float = 1, ghost: Float = 0.35

    public init(level: Int, velocity: Float = Step.plain, probability: Float = 1) {
        self.level = level
        self.velocity = velocity
        self.probability = probability
    }
}

/// Bars of steps for some voices: `lines[voice]` has `bars × stepsPerBar` entries, nil for a rest.
public struct Pattern: Sendable, Equatable {
    public var lines: [DrumVoice: [Step?]]
    public var bars: Int

    public init(lines: [DrumVoice: [Step?]], bars: Int) {
        self.lines = lines
        self.bars = bars
    }
}

/// A drummer's way of playing a song: the groove at every intensity level in one pattern (each step says from
/// which level up it plays, so that a rising level adds notes to the same groove, as Mutable Instruments' Grids
/// does with its density), the fill that ends each phrase, the swing and the human looseness.
public struct Style: Sendable, Equatable {
    public var name: String
    public var time: TimeSignature
    public var stepsPerBar: Int
    /// Intensity levels, 1 (sparse) to `levels` (busy).
    public var levels: Int
    /// Where the second step of each pair falls, as a fraction of the pair: 0.5 straight, 2/3 a triplet shuffle.
    public var swing: Double
    /// The largest random shift of a hit, in milliseconds, and of its velocity (0-1): seeded, so repeatable.
    public var humanizeTime: Double
    public var humanizeVelocity: Float
    /// Bars in a phrase: the fill (if any) replaces the groove in its last bar.
    public var phrase: Int
    public var groove: Pattern
    public var fill: Pattern?

    public init(name: String, time: TimeSignature, stepsPerBar: Int, levels: Int, swing: Double = 0.5,
                humanizeTime: Double = 0, humanizeVelocity: Float = 0, phrase: Int = 4, groove: Pattern, fill: Pattern? = nil) {
        self.name = name
        self.time = time
        self.stepsPerBar = stepsPerBar
        self.levels = levels
        self.swing = swing
        self.humanizeTime = humanizeTime
        self.humanizeVelocity = humanizeVelocity
        self.phrase = phrase
        self.groove = groove
        self.fill = fill
    }

    /// One step's length in MIDI clock ticks.
    public var stepTicks: Double { time.barTicks / Double(stepsPerBar) }

    /// The voices the style plays.
    public var voices: Set<DrumVoice> { Set(groove.lines.keys).union(fill.map { Set($0.lines.keys) } ?? []) }
}
