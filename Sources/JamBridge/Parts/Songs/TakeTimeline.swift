import Jam
import MIDI

/// One event of a take at its absolute tick: a message or a tempo change.
struct TakeEvent: Sendable, Equatable {
    var tick: UInt64
    var kind: StandardMIDIFile.TrackEvent.Kind
}

/// Where a take's messages fall on its file's ticks, and the tempo events that make those ticks the jam's
/// beats while a clock runs. Pure: time is passed in.
///
/// While no clock runs, ticks are seconds at a fixed tempo (120 BPM, 960 ticks a quarter), counted from the take's
/// first message, as recordings always were. The clock that reaches the recorder (ticks, Start, Continue, song
/// position, Stop) is followed with a `ClockFollower`. From the first tick after a Start (or a Continue) the file's
/// beats are the clock's:
/// - The time since the last event written is padded with a tempo event so that this tick falls on a bar line of
///   the file (4/4, the Standard MIDI File default), or, after a Continue, at the song position's place in its bar.
///   Of the bar lines within reach, the pad takes the one whose tempo is nearest the tempo before it.
/// - Each beat's messages are held until its last tick has come, then placed between the beat's start and end as
///   the follower timed them: the clock's beat b is the file's beat b after the bar line, whatever the tempo does.
/// - A tempo event at a beat's start gives that beat the tempo that ends it on the clock, where the file's time
///   would otherwise be more than `driftLimit` off the clock at its end, and where the follower had to start its
///   loop again (a tempo jump, a gap). The beat after one is given the mean tempo of the last `tempoWindow` beats
///   if that keeps it within the limit. So a reader's seconds are never more than `driftLimit` from the clock at a
///   beat, and jitter that the follower lets through does not make a tempo event a beat: the tempo is measured
///   over 16 beats, and a tempo held while it is right to 5 ms is kept. In `TakeTimelineTests`, through 0-2 ms of
///   network jitter (arrivals only) at 123.7 BPM: 13 tempo events in 5 minutes; 0-10 ms: 14; an exact clock: one,
///   and one for each change of its tempo, on the beat the change came.
/// - A Stop, a Start while running, or a clock silent for `ClockFollower.silenceLimit` ends the clocked stretch:
///   what was held is placed as seconds from the beat's start, and seconds go on at the last tempo.
struct TakeTimeline: Sendable {
    /// Ticks per quarter note in the file.
    static let ticksPerQuarter: UInt16 = 960
    /// The tempo while no clock has run, in microseconds per quarter (120 BPM).
    static let initialTempo: UInt32 = 500_000
    /// The most, in nanoseconds, the file's time may be off the clock at a beat before a tempo event corrects it.
    static let driftLimit = 5e6
    /// Below this drift (nanoseconds) at its start, a beat put on the clock gets its own length as its tempo: the
    /// microseconds a pad's tempo was rounded by are not worth a tempo that differs from the clock's.
    static let settledDrift = 1e6
    /// The beats a tempo is measured over once a beat has been put on the clock.
    static let tempoWindow = 16

    /// File ticks per clock tick.
    private static let ticksPerClock = UInt64(ticksPerQuarter) / UInt64(MIDIClock.ticksPerBeat)
    /// Clock ticks per bar of 4/4.
    private static let clocksPerBar = 4 * MIDIClock.ticksPerBeat

    /// The beat (or, after a Continue, part of a beat) being recorded while a clock runs.
    private struct Span: Sendable {
        /// The song's tick it starts at, and the tick after its end (the next beat's first).
        var songTick: Int
        var end: Int
        /// Its first tick in the file, and that tick's time in the file.
        var fileTick: UInt64
        var fileTime: Double
        /// When it started, on the clock.
        var time: Double
        /// The follower's reseeds when it started: one more means its loop started again meanwhile.
        var reseeds: Int
    }

    /// The clock the take follows.
    private(set) var follower = ClockFollower()
    /// Tempo events written after the one the take opens with.
    private(set) var tempoChanges = 0
    /// The instant of the file's time 0; times below are nanoseconds since it.
    private var origin: MonotonicInstant?
    /// The file's tempo at its last tick, in microseconds per quarter.
    private var tempo = TakeTimeline.initialTempo
    /// The last tick the file has reached (an event, a tempo change, a clocked beat's start): nothing goes before it.
    private var lastTick: UInt64 = 0
    /// While no clock runs, ticks count seconds at `tempo` from this tick and its time in the file.
    private var anchorTick: UInt64 = 0
    private var anchorTime = 0.0
    /// The beat being recorded; nil while no clock runs.
    private var span: Span?
    /// Messages of `span`, with their times, until it ends.
    private var held: [(time: Double, message: MIDIMessage)] = []
    /// Where the recent beats started on the clock (song tick, time), oldest first, since the follower's loop last
    /// started: the tempo is measured over them.
    private var beats: [(songTick: Int, time: Double)] = []
    /// True while the file's tempo is one beat's, to be replaced by the measured tempo.
    private var landed = false

    /// Takes what reached the recorder at `time`: clock and transport go to the follower, channel messages and
    /// SysEx are placed (or held until their beat ends), anything else is ignored. Events placed go to `emit`.
    mutating func receive(_ message: MIDIMessage, at time: MonotonicInstant, emit: (TakeEvent) -> Void) {
        if span != nil, follower.isSilent(now: time) { leaveClock(emit: emit) }
        if follower.receive(message, arrival: time) {
            followClock(at: time, emit: emit)
        } else if message.channel != nil || message.kind == .sysEx {
            let offset = offset(of: time)
            if span != nil {
                held.append((offset, message))
            } else {
                place(message, at: secondsTick(offset), emit: emit)
            }
        }
    }

    /// Places what is held: the take is ending.
    mutating func finish(emit: (TakeEvent) -> Void) {
        leaveClock(emit: emit)
    }

    /// After the follower took a clock or transport message.
    private mutating func followClock(at time: MonotonicInstant, emit: (TakeEvent) -> Void) {
        guard let songTick = follower.songTick else { return leaveClock(emit: emit) }
        guard var current = span else { return enterClock(at: songTick, time: time, emit: emit) }
        while songTick >= current.end {
            guard let end = follower.time(atTick: Double(current.end)) else { return leaveClock(emit: emit) }
            current = complete(current, endingAt: offset(of: end), emit: emit)
            span = current
        }
    }

    /// The clock runs from `songTick`, which came at `time`: pad the file to its place in the bar.
    private mutating func enterClock(at songTick: Int, time: MonotonicInstant, emit: (TakeEvent) -> Void) {
        let bar = UInt64(Self.clocksPerBar) * Self.ticksPerClock
        let inBar = UInt64((songTick % Self.clocksPerBar + Self.clocksPerBar) % Self.clocksPerBar) * Self.ticksPerClock
        let beginning = follower.time(atTick: Double(songTick)) ?? time
        if origin == nil {
            // Nothing recorded yet: the file starts on the bar line before, at the tempo it has.
            origin = MonotonicInstant(nanoseconds: beginning.nanoseconds &- min(UInt64(Double(inBar) * tickDuration), beginning.nanoseconds))
        }
        let now = offset(of: beginning)
        let lastTime = anchorTime + Double(lastTick - anchorTick) * tickDuration
        let gap = max(now - lastTime, 0)
        // The first tick at the song's place in the bar not before the last event (after it, if time passed).
        var target = lastTick - lastTick % bar + inBar
        if target < lastTick || (target == lastTick && gap > 0) { target += bar }
        let ideal = Double(lastTick) + gap / tickDuration
        if ideal > Double(target) {
            // The place at or before where seconds would put it, or the one after: whichever tempo is nearer.
            let below = target + UInt64((ideal - Double(target)) / Double(bar)) * bar
            let last = Double(lastTick)
            target = (Double(below + bar) - last) * (Double(below) - last) <= (ideal - last) * (ideal - last) ? below + bar : below
        }
        var fileTime = lastTime
        if target > lastTick {
            let quarters = Double(target - lastTick) / Double(Self.ticksPerQuarter)
            setTempo(Self.microseconds(gap / quarters), at: lastTick, emit: emit)
            fileTime += Double(tempo) * 1000 * quarters
        }
        span = Span(songTick: songTick, end: (songTick / MIDIClock.ticksPerBeat + 1) * MIDIClock.ticksPerBeat,
                    fileTick: target, fileTime: fileTime, time: now, reseeds: follower.counters.reseeds)
        beats.removeAll(keepingCapacity: true)
        landed = false
    }

    /// `span` ended at `end` on the clock: choose its tempo, place what it held; returns the span after it.
    private mutating func complete(_ span: Span, endingAt end: Double, emit: (TakeEvent) -> Void) -> Span {
        let quarters = Double(span.end - span.songTick) / Double(MIDIClock.ticksPerBeat)
        // The tempo that ends the beat on the clock: its own length, corrected by the file's drift at its start unless
        // that drift is too small to matter (a pad's microseconds of rounding would otherwise move an exact tempo).
        let settled = abs(span.fileTime - span.time) < Self.settledDrift
        let onClock = Self.microseconds((end - (settled ? span.time : span.fileTime)) / quarters)
        let drift = { (tempo: UInt32) in abs(span.fileTime + Double(tempo) * 1000 * quarters - end) }
        if beats.isEmpty || follower.counters.reseeds != span.reseeds {
            beats.removeAll(keepingCapacity: true)
            beats.append((span.songTick, span.time))
        }
        beats.append((span.end, end))
        if beats.count > Self.tempoWindow + 1 { beats.removeFirst() }
        if beats.count == 2 || drift(tempo) > Self.driftLimit {
            setTempo(onClock, at: span.fileTick, emit: emit)
            landed = true
        } else if landed {
            let first = beats[0]
            let measured = Self.microseconds((end - first.time) * Double(MIDIClock.ticksPerBeat) / Double(span.end - first.songTick))
            if drift(measured) <= Self.driftLimit {
                setTempo(measured, at: span.fileTick, emit: emit)
                landed = false
            }
        }
        let endTick = span.fileTick + UInt64(span.end - span.songTick) * Self.ticksPerClock
        let length = end - span.time
        for (time, message) in held where time < end {
            let fraction = length > 0 ? min(max((time - span.time) / length, 0), 1) : 0
            place(message, at: span.fileTick + UInt64((fraction * Double(endTick - span.fileTick)).rounded()), emit: emit)
        }
        held.removeAll { $0.time < end }
        return Span(songTick: span.end, end: span.end + MIDIClock.ticksPerBeat, fileTick: endTick,
                    fileTime: span.fileTime + Double(tempo) * 1000 * quarters, time: end, reseeds: follower.counters.reseeds)
    }

    /// The clock stopped (or fell silent): what the beat held is placed as seconds from its start, and seconds go on.
    private mutating func leaveClock(emit: (TakeEvent) -> Void) {
        guard let span else { return }
        self.span = nil
        lastTick = max(lastTick, span.fileTick)
        anchorTick = span.fileTick
        anchorTime = span.fileTime
        for (time, message) in held { place(message, at: secondsTick(time), emit: emit) }
        held.removeAll(keepingCapacity: true)
    }

    private mutating func place(_ message: MIDIMessage, at tick: UInt64, emit: (TakeEvent) -> Void) {
        lastTick = max(tick, lastTick)
        emit(TakeEvent(tick: lastTick, kind: .midi(message)))
    }

    private mutating func setTempo(_ microseconds: UInt32, at tick: UInt64, emit: (TakeEvent) -> Void) {
        lastTick = max(lastTick, tick)
        guard microseconds != tempo else { return }
        tempo = microseconds
        tempoChanges += 1
        emit(TakeEvent(tick: tick, kind: .tempo(microsecondsPerQuarter: microseconds)))
    }

    /// Nanoseconds a tick lasts at `tempo`.
    private var tickDuration: Double { Double(tempo) * 1000 / Double(Self.ticksPerQuarter) }

    /// The tick of `offset` while no clock runs: seconds at `tempo` from the anchor, never before the last event.
    private func secondsTick(_ offset: Double) -> UInt64 {
        max(anchorTick + UInt64(min(max(offset - anchorTime, 0) / tickDuration + 0.5, 1e18)), lastTick)
    }

    /// Nanoseconds from the file's time 0 to `time`; the first time asked is time 0.
    private mutating func offset(of time: MonotonicInstant) -> Double {
        let origin = self.origin ?? time
        self.origin = origin
        return Double(Int64(bitPattern: time.nanoseconds &- origin.nanoseconds))
    }

    /// A tempo of `nanoseconds` per quarter in a tempo event's microseconds (1 to 2^24 - 1).
    private static func microseconds(_ nanoseconds: Double) -> UInt32 {
        guard nanoseconds.isFinite else { return 0xFF_FFFF }
        return UInt32(min(max((nanoseconds / 1000).rounded(), 1), 0xFF_FFFF))
    }
}
