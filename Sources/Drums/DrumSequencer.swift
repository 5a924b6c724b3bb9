import Jam
import MIDI

/// One drum hit: `voice` at `velocity` (0-1), due at `time`; `bar`, `step` and `level` say where in the song it
/// fell and at which intensity its bar was played.
public struct DrumHit: Sendable, Equatable {
    public var voice: DrumVoice
    public var velocity: Float
    public var time: MonotonicInstant
    public var bar: Int
    public var step: Int
    public var level: Int

    public init(voice: DrumVoice, velocity: Float, time: MonotonicInstant, bar: Int, step: Int, level: Int) {
        self.voice = voice
        self.velocity = velocity
        self.time = time
        self.bar = bar
        self.step = step
        self.level = level
    }
}

/// The intensity level the session's total activity (0-127) asks for: levels 1...`levels` share the range equally,
/// and the level moves only once the activity is `hysteresis` past a boundary, so a total wavering around one
/// does not flip the groove bar after bar.
public struct IntensityLevel: Sendable, Equatable {
    public static let hysteresis = 6.0
    public let levels: Int
    public private(set) var level = 1

    public init(levels: Int, level: Int = 1) {
        self.levels = max(1, levels)
        self.level = min(max(1, level), self.levels)
    }

    /// The activity at which level `upper` (2...levels) begins.
    private func boundary(_ upper: Int) -> Double { 128 * Double(upper - 1) / Double(levels) }

    /// Moves towards the level `activity` asks for, and returns it.
    public mutating func update(activity: UInt8) -> Int {
        let value = Double(activity)
        while level < levels, value >= boundary(level + 1) + Self.hysteresis { level += 1 }
        while level > 1, value < boundary(level) - Self.hysteresis { level -= 1 }
        return level
    }
}

/// Plays a style along a song's timeline: which steps sound, when and how loud. Pure and repeatable: what a step
/// does (its probability, its humanised time and velocity) is drawn from the seed and the step's place in the song,
/// so the same song renders the same whatever the engine's timing.
///
/// Positions are MIDI clock ticks from the song's start (the timeline's); the level, the style and a fill are
/// decided at each bar line, never within a bar.
public struct DrumSequencer: Sendable {
    public let seed: UInt64
    public private(set) var style: Style
    /// The level the bar being played was given.
    public private(set) var level: Int
    /// A level set by hand (`jambridge drums level N`), or nil: the activity decides.
    public var lockedLevel: Int?
    public var muted: Set<DrumVoice> = []
    private var intensity: IntensityLevel
    private var pendingStyle: Style?
    /// The bar being played: its number from the song's start, its first tick, and the next step in it.
    private var bar = 0
    private var barStart = 0.0
    private var nextStep = 0
    /// Whether the next step begins a bar (its level and style not yet decided).
    private var atBarLine = true

    public init(style: Style, seed: UInt64) {
        self.style = style
        self.seed = seed
        intensity = IntensityLevel(levels: style.levels)
        level = 1
    }

    /// The song position the sequencer will play from next, in ticks.
    public var position: Double { barStart + Double(nextStep) * style.stepTicks }
    /// The bar being played (from 0 at the song's start).
    public var currentBar: Int { bar }

    /// The style `change(to:)` asked for, played from the next bar line; nil once it plays (or if none was asked for).
    public var nextStyle: Style? { pendingStyle }

    /// Plays `style` from the next bar line on.
    public mutating func change(to style: Style) {
        pendingStyle = style
    }

    /// Goes to the first step at or after `tick` (a start, a song position pointer, a new master's song).
    public mutating func locate(tick: Double) {
        let barTicks = style.time.barTicks
        bar = Int((max(0, tick) / barTicks).rounded(.down))
        barStart = Double(bar) * barTicks
        nextStep = Int(((max(0, tick) - barStart) / style.stepTicks).rounded(.up))
        atBarLine = nextStep == 0
        if nextStep >= style.stepsPerBar { endBar() }
    }

    /// Hands out, in time order, the hits of every step before `tick` not handed out yet, timed by `timeline`;
    /// `activity` (the session's total, 0-127) picks the level at each bar line crossed.
    public mutating func play(through tick: Double, timeline: some BeatTimeline, activity: UInt8, emit: (DrumHit) -> Void) {
        var hits: [DrumHit] = []
        while position < tick {
            if atBarLine { beginBar(activity: activity) }
            hitsOfStep(timeline: timeline) { hits.append($0) }
            nextStep += 1
            if nextStep == style.stepsPerBar { endBar() }
        }
        for hit in hits.sorted(by: { ($0.time, $0.voice) < ($1.time, $1.voice) }) { emit(hit) }
    }

    private mutating func beginBar(activity: UInt8) {
        if let pendingStyle {
            style = pendingStyle
            self.pendingStyle = nil
            intensity = IntensityLevel(levels: style.levels, level: intensity.level)
        }
        let followed = intensity.update(activity: activity)
        level = min(lockedLevel ?? followed, style.levels)
        atBarLine = false
    }

    private mutating func endBar() {
        barStart += style.time.barTicks
        bar += 1
        nextStep = 0
        atBarLine = true
    }

    /// The pattern of the current bar: the fill in a phrase's last bar, else the groove.
    private var pattern: (Pattern, Int) {
        if let fill = style.fill, style.phrase > 0, bar % style.phrase == style.phrase - 1 {
            return (fill, (bar / style.phrase) % fill.bars)
        }
        return (style.groove, bar % style.groove.bars)
    }

    private func hitsOfStep(timeline: some BeatTimeline, emit: (DrumHit) -> Void) {
        let (pattern, patternBar) = pattern
        var tick = position
        if nextStep % 2 == 1 { tick += (style.swing - 0.5) * 2 * style.stepTicks }
        guard let grid = timeline.time(atTick: tick) else { return }
        let loudness = style.levels > 1 ? 0.8 + 0.2 * Float(level - 1) / Float(style.levels - 1) : 1
        for (voice, line) in pattern.lines where !muted.contains(voice) {
            guard let step = line[patternBar * style.stepsPerBar + nextStep], step.level <= level else { continue }
            guard step.probability >= 1 || draw(voice, 0) < Double(step.probability) else { continue }
            let shift = Int64(style.humanizeTime * 1e6 * (2 * draw(voice, 1) - 1))
            let velocity = step.velocity * loudness + style.humanizeVelocity * Float(2 * draw(voice, 2) - 1)
            let time = shift < 0 ? MonotonicInstant(nanoseconds: grid.nanoseconds &- min(grid.nanoseconds, UInt64(-shift)))
                : grid.advanced(byNanoseconds: UInt64(shift))
            emit(DrumHit(voice: voice, velocity: min(1, max(0.05, velocity)), time: time, bar: bar, step: nextStep, level: level))
        }
    }

    /// A number in 0..<1 for `voice`'s step being played and `purpose`, from the seed alone (splitmix64).
    private func draw(_ voice: DrumVoice, _ purpose: UInt64) -> Double {
        var x = seed &+ UInt64(bar) &* 0x9E37_79B9_7F4A_7C15 &+ UInt64(nextStep) &* 0xBF58_476D_1CE4_E5B9
            &+ UInt64(DrumVoice.allCases.firstIndex(of: voice)!) &* 0x94D0_49BB_1331_11EB &+ purpose &* 0xD6E8_FEB8_6659_FD93
        x = (x ^ (x >> 30)) &* 0xBF58_476D_1CE4_E5B9
        x = (x ^ (x >> 27)) &* 0x94D0_49BB_1331_11EB
        x ^= x >> 31
        return Double(x >> 11) / Double(UInt64(1) << 53)
    }
}
