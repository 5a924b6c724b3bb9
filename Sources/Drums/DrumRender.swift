import Jam
import MIDI

/// A song at one tempo from `start`: the timeline `jambridge render` plays along.
public struct SteadyTimeline: BeatTimeline, Sendable {
    public var start: MonotonicInstant
    public var tempo: Double

    public init(start: MonotonicInstant, tempo: Double) {
        self.start = start
        self.tempo = tempo
    }

    /// Nanoseconds per tick.
    private var period: Double { 60e9 / (tempo * Double(MIDIClock.ticksPerBeat)) }

    public func time(atTick tick: Double) -> MonotonicInstant? {
        start.advanced(byNanoseconds: UInt64((max(0, tick) * period).rounded()))
    }

    /// The song position at `time`.
    public func tick(at time: MonotonicInstant) -> Double {
        time < start ? 0 : Double(time.nanoseconds - start.nanoseconds) / period
    }
}

/// Renders a song offline with the sequencer and mixer the daemon plays with, faster than real time.
public enum DrumRender {
    /// What a render played: `frames` stereo frames at `Kit.sampleRate`, `hits` hits, and the level each bar played at.
    public struct Result: Sendable {
        public var frames: Int
        public var hits: Int
        /// The level of each bar that had a hit, by bar (counted from 0).
        public var levels: [Int: Int]
        public var counters: DrumMixer.Counters
    }

    /// Frames rendered at a time.
    static let block = 512
    /// How far ahead of the frames being mixed the sequencer is asked for hits: past the largest swing and
    /// humanisation.
    static let lookahead: UInt64 = 200_000_000
    /// The longest the sounds of the last bar are let ring.
    static let tail = 4 * Kit.sampleRate

    /// `bars` bars of `sequencer`'s style at `tempo` on `kit`, the session's activity given for each position
    /// in bars (0 at the start, `bars` at the end), handed to `write` one block of interleaved stereo frames at a
    /// time: however long the song, only a block is held.
    public static func render<Failure: Error>(_ sequencer: DrumSequencer, kit: Kit, tempo: Double, bars: Int,
                                              activity: (Double) -> UInt8,
                                              write: (UnsafeBufferPointer<Float>) throws(Failure) -> Void) throws(Failure) -> Result {
        var sequencer = sequencer
        let timeline = SteadyTimeline(start: MonotonicInstant(nanoseconds: 0), tempo: tempo)
        let end = Double(bars) * sequencer.style.time.barTicks
        var mixer = DrumMixer(kit: kit)
        var hits = 0
        var levels: [Int: Int] = [:]
        var buffer = [Float](repeating: 0, count: 2 * block)
        var frame: Int64 = 0
        var tailLeft = tail
        while tailLeft > 0 {
            let horizon = MonotonicInstant(nanoseconds: UInt64(frame + Int64(block)) * 1_000_000_000 / UInt64(Kit.sampleRate) + lookahead)
            let through = min(end, timeline.tick(at: horizon))
            if sequencer.position < through {
                let barPosition = through / sequencer.style.time.barTicks
                sequencer.play(through: through, timeline: timeline, activity: activity(barPosition)) { hit in
                    hits += 1
                    levels[hit.bar] = hit.level
                    let at = Int64((Double(hit.time.nanoseconds) * Double(Kit.sampleRate) / 1e9).rounded())
                    mixer.add(hit.voice, velocity: hit.velocity, at: at)
                }
            }
            buffer.withUnsafeMutableBufferPointer { mixer.render(into: $0, startingAt: frame) }
            try buffer.withUnsafeBufferPointer { (frames) throws(Failure) in try write(frames) }
            frame += Int64(block)
            if sequencer.position >= end {
                tailLeft = mixer.isIdle ? 0 : tailLeft - block
            }
        }
        return Result(frames: Int(frame), hits: hits, levels: levels, counters: mixer.counters)
    }
}
