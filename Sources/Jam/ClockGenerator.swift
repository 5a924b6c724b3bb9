import MIDI

/// A song's timeline: when each tick of the 24-ppq grid falls, for the drum sequencer to play from.
public protocol BeatTimeline {
    /// When tick `tick` (ticks since the song's start, fractions allowed) falls; nil while no song runs.
    func time(atTick tick: Double) -> MonotonicInstant?
}

extension BeatTimeline {
    /// When quarter note `beat` (0 is the downbeat the song started on) falls; nil while no song runs.
    public func beatTime(of beat: Double) -> MonotonicInstant? { time(atTick: beat * Double(MIDIClock.ticksPerBeat)) }
}

/// The master's MIDI clock: Start, Stop, Continue, song position and 24-ppq ticks, computed ahead of time.
///
/// A pure lookahead scheduler: the engine calls `ticks(until: now + lookahead)` and hands what comes out to
/// outputs with its timestamps. Tick k falls at anchor time + (k - anchor tick) × period, the anchor being
/// the start or the beat where the tempo last changed: computed, never summed, so nothing drifts. Messages
/// come out in time order: a transport message is never due before a tick already handed out.
public struct ClockGenerator: BeatTimeline, Sendable {
    /// The tempos the generator plays, in quarter notes a minute; requests outside are refused.
    public static let tempoRange: ClosedRange<Double> = 20...300

    /// What was refused, for status and logs.
    public struct Counters: Equatable, Sendable {
        /// Tempo requests outside `tempoRange` (1e308, 5e-324, NaN).
        public var refusedTempos = 0
        /// Song positions set while running or past 16383 sixteenths, and Continues while running.
        public var refusedCommands = 0
    }

    /// The tempo ticks are being sent at.
    public private(set) var tempo: Double
    /// A tempo change waiting for the next beat.
    public private(set) var pendingTempo: Double?
    /// True between a Start or Continue and a Stop.
    public private(set) var isRunning = false
    /// The next tick to send, in ticks since the song's start: where a Stop leaves the song.
    public private(set) var position = 0
    public private(set) var counters = Counters()

    private var period: Double
    private var anchorTick = 0
    private var anchorTime = MonotonicInstant(nanoseconds: 0)
    /// The beat a pending tempo takes effect on.
    private var pendingBeatTick = 0
    /// The time of the last message handed out: nothing later may be due before it.
    private var lastScheduled = MonotonicInstant(nanoseconds: 0)
    /// What was handed out lately, in order, for `withdraw` to take back exactly (at most `handedOutKept`: far more
    /// than is ever handed out ahead).
    private var handedOut: [HandedOut] = []
    static let handedOutKept = 512
    /// Transport that `withdraw` took back before its song's first tick went (a Start, or a Song Position and
    /// Continue): handed out again with the tick at `position`, at that tick's time.
    private var retake: [MIDIMessage] = []

    /// A message handed out: the tick it goes with (its own, or the one a Start or Continue comes with) and the tempo
    /// then.
    private struct HandedOut {
        var message: MIDIMessage
        var time: MonotonicInstant
        var tick: Int
        var tempo: Double
    }

    /// A stopped generator at `tempo` (clamped into `tempoRange`; 120 if not a positive number).
    public init(tempo: Double = 120) {
        let taken = tempo.isFinite && tempo > 0 ? min(max(tempo, Self.tempoRange.lowerBound), Self.tempoRange.upperBound) : 120
        self.tempo = taken
        period = MIDIClock.tickPeriod(bpm: taken)
    }

    /// Sets the tempo: at once while stopped, from the next beat not yet handed out while running. Returns false, and
    /// counts it, if `bpm` is outside `tempoRange`: a number far out is a mistake or an attack, not a wish to be met
    /// halfway.
    @discardableResult
    public mutating func setTempo(_ bpm: Double) -> Bool {
        guard Self.tempoRange.contains(bpm) else {
            counters.refusedTempos += 1
            return false
        }
        if isRunning {
            pendingTempo = bpm
            pendingBeatTick = (position + MIDIClock.ticksPerBeat - 1) / MIDIClock.ticksPerBeat * MIDIClock.ticksPerBeat
        } else {
            tempo = bpm
            period = MIDIClock.tickPeriod(bpm: bpm)
        }
        return true
    }

    /// Starts the song from its beginning: Start, and the first tick (the downbeat) at the same instant.
    /// A Start while running restarts the song.
    public mutating func start(at time: MonotonicInstant, emit: (ScheduledMessage) -> Void) {
        applyPendingTempo()
        position = 0
        retake = []
        run(from: schedule(.start, at: time, emit: emit))
    }

    /// Resumes the song where it stopped (or was located), from the next sixteenth: the song position, Continue,
    /// and that sixteenth's first tick, all at `time`. Refused (counted) while running.
    public mutating func `continue`(at time: MonotonicInstant, emit: (ScheduledMessage) -> Void) {
        guard !isRunning else {
            counters.refusedCommands += 1
            return
        }
        retake = []
        let sixteenths = MIDIClock.sixteenth(atOrAfter: position)
        // A song position has 14 bits: past 16384 sixteenths (1024 bars of 4/4) it wraps, which keeps the bar.
        let wrapped = sixteenths % 0x4000
        position = wrapped * MIDIClock.ticksPerSixteenth
        let due = schedule(MIDIClock.songPosition(sixteenth: wrapped), at: time, emit: emit)
        run(from: schedule(.continue, at: due, emit: emit))
    }

    /// Moves the stopped song to `sixteenths` (0...16383) for the next Continue; refused (counted) while
    /// running or out of range.
    @discardableResult
    public mutating func locate(sixteenths: Int) -> Bool {
        guard !isRunning, (0...0x3FFF).contains(sixteenths) else {
            counters.refusedCommands += 1
            return false
        }
        position = sixteenths * MIDIClock.ticksPerSixteenth
        return true
    }

    /// Stops the song: Stop at `time` (or after the last tick handed out), and no tick after it. A song whose Start
    /// (or Continue) was taken back and not handed out again gets no Stop: its outputs never started.
    public mutating func stop(at time: MonotonicInstant, emit: (ScheduledMessage) -> Void) {
        guard isRunning else { return }
        isRunning = false
        applyPendingTempo()
        let started = retake.isEmpty
        retake = []
        if started { _ = schedule(.stop, at: time, emit: emit) }
    }

    /// Puts the ticks not handed out yet on another timeline (a shared one's, Ableton Link's): the next at `time`, at
    /// `bpm` (in `tempoRange`) from there. A pending tempo is dropped: the timeline has its own.
    public mutating func align(nextTickAt time: MonotonicInstant, tempo bpm: Double) {
        guard isRunning else { return }
        tempo = bpm
        period = MIDIClock.tickPeriod(bpm: bpm)
        pendingTempo = nil
        anchorTick = position
        anchorTime = time
    }

    /// Takes back what was handed out for after `time` (handed out ahead, not yet played), as the outputs take it
    /// back: `ticks` hands the ticks out again on the timeline as it then is, and a Start or Continue taken back goes
    /// again with its song's first tick; a tempo change taken back waits again for its beat. A Stop goes at `time`,
    /// not after them. Returns true if it took anything back.
    public mutating func withdraw(after time: MonotonicInstant) -> Bool {
        guard isRunning, lastScheduled > time else { return false }
        var withdrew = false, songBegins = false
        while let last = handedOut.last, last.time > time {
            handedOut.removeLast()
            withdrew = true
            // What came before the Start or Continue taken back was another song's (a restart): only taken back.
            guard !songBegins else { continue }
            switch last.message {
            case .timingClock:
                rewind(to: last)
            case .start, .continue:
                retake = [last.message]
                if last.message == .continue, let position = handedOut.last, case .songPosition = position.message {
                    handedOut.removeLast()
                    retake.insert(position.message, at: 0)
                }
                rewind(to: last)
                songBegins = true
            default:
                break
            }
        }
        lastScheduled = max(time, handedOut.last?.time ?? time)
        return withdrew
    }

    /// The next tick to hand out is `taken`'s; one handed out at another tempo (a change applied within what is taken
    /// back) puts that tempo back, at its time, and the change waits again for its beat.
    private mutating func rewind(to taken: HandedOut) {
        position = taken.tick
        guard taken.tempo != tempo else { return }
        pendingTempo = tempo
        pendingBeatTick = anchorTick
        tempo = taken.tempo
        period = MIDIClock.tickPeriod(bpm: taken.tempo)
        anchorTick = taken.tick
        anchorTime = taken.time
    }

    /// Hands out every tick due before `horizon`, in order (a Start or Continue taken back with the first).
    public mutating func ticks(until horizon: MonotonicInstant, emit: (ScheduledMessage) -> Void) {
        while isRunning {
            if pendingTempo != nil, position == pendingBeatTick { applyPendingTempo() }
            let due = tickTime(position)
            guard due < horizon else { return }
            for message in retake { _ = schedule(message, at: due, emit: emit) }
            retake = []
            _ = schedule(.timingClock, at: due, emit: emit)
            position += 1
        }
    }

    /// Where the song is at `now`, in ticks since its start (fractions between ticks); nil while stopped.
    public func tick(at now: MonotonicInstant) -> Double? {
        isRunning ? Double(anchorTick) + now.nanoseconds(since: anchorTime) / period : nil
    }

    /// The timeline as a value (`SongLine`), with a tempo waiting for its beat; nil while stopped.
    public var line: SongLine? {
        guard isRunning else { return nil }
        return SongLine(tick: Double(anchorTick), time: anchorTime, period: period,
                        change: pendingTempo.map { (Double(pendingBeatTick), MIDIClock.tickPeriod(bpm: $0)) })
    }

    /// True while the song's Start (or Continue) was taken back and waits to go again with its first tick: its outputs
    /// have not started.
    public var awaitsItsStart: Bool { isRunning && !retake.isEmpty }

    /// When the next tick is due; nil while stopped.
    public var nextTickTime: MonotonicInstant? { isRunning ? time(atTick: Double(position)) : nil }

    public func time(atTick tick: Double) -> MonotonicInstant? {
        guard isRunning else { return nil }
        if let pending = pendingTempo, tick >= Double(pendingBeatTick) {
            let beatTime = tickTime(pendingBeatTick)
            return MonotonicInstant((tick - Double(pendingBeatTick)) * MIDIClock.tickPeriod(bpm: pending), after: beatTime)
        }
        return MonotonicInstant((tick - Double(anchorTick)) * period, after: anchorTime)
    }

    /// Tick `tick`'s time at the current tempo.
    private func tickTime(_ tick: Int) -> MonotonicInstant {
        MonotonicInstant(Double(tick - anchorTick) * period, after: anchorTime)
    }

    /// Runs from `position`, its first tick at `time`.
    private mutating func run(from time: MonotonicInstant) {
        isRunning = true
        anchorTick = position
        anchorTime = time
    }

    /// Makes a pending tempo the tempo, anchored at the current position's time.
    private mutating func applyPendingTempo() {
        guard let pending = pendingTempo else { return }
        if isRunning {
            anchorTime = tickTime(position)
            anchorTick = position
        }
        tempo = pending
        period = MIDIClock.tickPeriod(bpm: pending)
        pendingTempo = nil
    }

    /// Hands out `message` at `time`, or at the last time handed out if that is later; returns when it is due.
    private mutating func schedule(_ message: MIDIMessage, at time: MonotonicInstant, emit: (ScheduledMessage) -> Void) -> MonotonicInstant {
        let due = max(time, lastScheduled)
        lastScheduled = due
        if handedOut.count >= Self.handedOutKept { handedOut.removeFirst(Self.handedOutKept / 2) }
        handedOut.append(HandedOut(message: message, time: due, tick: position, tempo: tempo))
        emit(ScheduledMessage(message, at: due))
        return due
    }
}
