import MIDI

/// Tempo and phase of an incoming 24-ppq MIDI clock, predicted ahead: the timeline a follower plays from.
///
/// Each tick's time (the master's intended time when the transport carries one, else its arrival) goes
/// through a second-order delay-locked loop (F. Adriaensen, "Using a DLL to filter time", LAC 2005): the
/// loop predicts the next tick, and the error e between that prediction and the tick corrects the phase by
/// b·e and the period by c·e, with ω = 2π·`bandwidth`/24 (the bandwidth per beat, over 24 ticks a beat),
/// b = √2·ω, c = ω² (damping 0.707). The bandwidth follows the tempo (1 Hz at 120 BPM), so the loop settles
/// in the same number of beats at any tempo. After a seed the gains start at those of a least-squares line
/// through the ticks so far (the second tick sets the period exactly) and fall until they reach the loop's,
/// after 22 ticks.
///
/// Once locked, the loop knows its usual error (the mean |e|). A tick more than 3/4 of a period late, where
/// 4× that error is under a quarter period, counts the ticks before it as lost, so the timeline keeps its
/// place, until a tick on time confirms it; if the next tick is late by more than half a period instead (or
/// by the same whole periods a third time in a row), nothing was lost: the tempo fell, and the count is undone. The loop is seeded again after `silenceLimit` without a tick, on a tempo jump
/// (two ticks in a row on the same side further off than 4× the usual error and 1 ms), and when ticks switch
/// between intended and arrival times. Ticks beyond a burst of 4 at the fastest tempo's rate (a clock storm)
/// are dropped. Clock while stopped keeps the tempo; Start's (or Continue's) first tick becomes the song's
/// tick 0 (or the song position's).
public struct ClockFollower: BeatTimeline, Sendable {
    /// The tempos followed, in quarter notes a minute: wider than any device's, so none is clamped.
    public static let tempoRange: ClosedRange<Double> = 10...600
    /// The loop's bandwidth in cycles per beat: 1 Hz at 120 BPM.
    public static let bandwidth = 0.5
    /// Nanoseconds without a tick after which a running clock counts as silent (its master gone).
    public static let silenceLimit: UInt64 = 1_000_000_000
    /// Intended times further than this (nanoseconds) from the arrival are not believed: the arrival is used.
    public static let senderTimeLimit = 2e9

    /// `senderTime` if it is within `senderTimeLimit` of `arrival` (a peer's word on when it meant a message), else nil.
    public static func plausible(_ senderTime: MonotonicInstant?, arrival: MonotonicInstant) -> MonotonicInstant? {
        senderTime.flatMap { abs($0.nanoseconds(since: arrival)) <= senderTimeLimit ? $0 : nil }
    }

    /// What the follower saw and did, for status and the hostile-input tests.
    public struct Counters: Equatable, Sendable {
        /// Ticks received.
        public var ticks = 0
        /// Ticks beyond a burst of 4 at the fastest tempo's rate (a clock storm), dropped.
        public var excessTicks = 0
        /// Ticks lost: counted by the master's journal, or inferred from the time the next one came.
        public var lostTicks = 0
        /// Ticks the master counted at or before the last one taken (none come over RTP-MIDI, which drops late
        /// packets), ignored.
        public var staleTicks = 0
        /// Times the loop was seeded again (gap, tempo jump, timebase switch).
        public var reseeds = 0
        /// Song positions received while running, ignored.
        public var refusedSongPositions = 0
        /// Intended times more than `senderTimeLimit` from the arrival, not used.
        public var implausibleSenderTimes = 0
        /// Starts and Continues received.
        public var starts = 0
        /// Stops received.
        public var stops = 0
    }

    private enum State: Equatable, Sendable {
        case stopped
        /// Started: the next tick becomes `tick`.
        case armed(tick: Int)
        case running
    }

    private static let minPeriod = MIDIClock.tickPeriod(bpm: tempoRange.upperBound)
    private static let maxPeriod = MIDIClock.tickPeriod(bpm: tempoRange.lowerBound)
    /// Ticks a burst may hold: jitter bunches ticks, a storm is cut to the fastest tempo's rate.
    private static let burst = 4.0
    private static let jumpFactor = 4.0
    private static let jumpFloor = 1e6
    /// Periods a tick the master counted may be from where the loop puts it before the loop starts again there.
    private static let countedLimit = 4.0

    public private(set) var counters = Counters()
    private var state = State.stopped
    /// Where a Continue resumes: the tick after the last one played, or a song position.
    private var resumeTick = 0
    /// Times are kept as nanoseconds since the first tick's.
    private var origin: MonotonicInstant?
    /// The filtered time of tick `tick`.
    private var filtered = 0.0
    private var tick = 0
    private var period = MIDIClock.tickPeriod(bpm: 120)
    private var hasPeriod = false
    /// Ticks taken since the loop was seeded; 0 before the first.
    private var samples = 0
    /// Ticks the rate limit still lets through at once.
    private var tokens = ClockFollower.burst
    private var tokenTime = 0.0
    private var lastArrival = MonotonicInstant(nanoseconds: 0)
    private var usesSenderTime = false
    /// The mean |error| of the locked loop, and how many errors it holds (up to 32).
    private var noise = 0.0
    private var noiseSamples = 0
    /// The sign of the last error beyond the jump threshold, 0 if the last was within it.
    private var outlierSign = 0.0
    /// Ticks counted as lost by the last ticks, which came whole periods late, until one on time confirms them;
    /// and how many such ticks came in a row.
    private var unconfirmedLoss = 0
    private var lateRuns = 0
    /// The ticks the last late tick stood for.
    private var lateElapsed = 1

    public init() {}

    /// True from Start's (or Continue's) first tick to Stop.
    public var isRunning: Bool { state == .running }

    /// The followed tempo in quarter notes a minute; nil until two ticks have come.
    public var tempo: Double? { hasPeriod ? MIDIClock.bpm(tickPeriod: period) : nil }

    /// The song's tick the last tick taken was (ticks since the song's start, a song position's from a Continue);
    /// nil unless running.
    public var songTick: Int? { state == .running ? tick : nil }

    /// Takes a clock or transport message: a tick, Start, Continue, Stop or song position. `senderTime` is the
    /// master's intended time on our clock (an RTP timestamp through the CK offset) where the transport has one.
    /// Returns false for any other message.
    public mutating func receive(_ message: MIDIMessage, arrival: MonotonicInstant, senderTime: MonotonicInstant? = nil) -> Bool {
        switch message {
        case .timingClock: tick(arrival: arrival, senderTime: senderTime)
        case .start: start()
        case .continue: resume()
        case .stop: stop()
        case .songPosition(let sixteenths): locate(sixteenths: sixteenths)
        default: return false
        }
        return true
    }

    /// Start: the next tick is the song's downbeat, and the loop starts again from it (the period kept): a new song's
    /// ticks, a new master's perhaps, are no continuation of the last ones.
    public mutating func start() {
        counters.starts += 1
        resumeTick = 0
        state = .armed(tick: 0)
        samples = 0
    }

    /// Continue: the next tick is the song position's, the loop starting again from it as at a Start. Ignored while
    /// running.
    public mutating func resume() {
        counters.starts += 1
        guard state != .running else { return }
        state = .armed(tick: resumeTick)
        samples = 0
    }

    /// Stop: the song stops after the last tick; the tempo is still followed.
    public mutating func stop() {
        counters.stops += 1
        if state == .running { resumeTick = tick + 1 }
        state = .stopped
    }

    /// Song position (in sixteenths) for the next Continue; ignored (counted) while running.
    public mutating func locate(sixteenths: UInt14) {
        guard state != .running else {
            counters.refusedSongPositions += 1
            return
        }
        resumeTick = Int(sixteenths.value) * MIDIClock.ticksPerSixteenth
        if case .armed = state { state = .armed(tick: resumeTick) }
    }

    /// One tick (0xF8), arrived at `arrival`, meant for `senderTime` and counted `songTick` (modulo 2^19) in the
    /// master's song if the transport says.
    public mutating func tick(arrival: MonotonicInstant, senderTime: MonotonicInstant? = nil, songTick: Int? = nil) {
        counters.ticks += 1
        let plausible = Self.plausible(senderTime, arrival: arrival)
        if senderTime != nil, plausible == nil { counters.implausibleSenderTimes += 1 }
        let input = plausible ?? arrival
        let intended = plausible != nil
        let origin = self.origin ?? input
        self.origin = origin
        let time = input.nanoseconds(since: origin)
        guard takeToken(at: time) else {
            counters.excessTicks += 1
            return
        }
        // The master's count, once this follower's song runs: how many ticks on from the last one this is.
        let counted = state == .running ? songTick.map { Self.ticksOn(from: tick, to: $0) } : nil
        if let counted, counted < 1 {
            counters.staleTicks += 1
            return
        }
        if samples == 0 || intended != usesSenderTime {
            if intended != usesSenderTime { noiseSamples = 0 }
            usesSenderTime = intended
            seed(at: time, tick: tick + (counted ?? 1))
        } else {
            follow(time, counted: counted)
        }
        lastArrival = arrival
        if case .armed(let first) = state {
            // The master's count is the song's: it holds where a lost Start came back as a Continue.
            tick = songTick ?? first
            unconfirmedLoss = 0
            lateRuns = 0
            state = .running
        }
    }

    /// The ticks from `tick` on to the master's count `songTick` (modulo 2^19), between -2^18 and 2^18.
    private static func ticksOn(from tick: Int, to songTick: Int) -> Int {
        let modulus = SenderTime.songTickModulus
        let ahead = (songTick - tick) & (modulus - 1)
        return ahead < modulus / 2 ? ahead : ahead - modulus
    }

    /// True while running with no tick for `silenceLimit`: the master is gone.
    public func isSilent(now: MonotonicInstant) -> Bool {
        state == .running && now > lastArrival && now.nanoseconds - lastArrival.nanoseconds > Self.silenceLimit
    }

    /// When `isSilent` becomes true if no tick comes; nil unless running.
    public var silenceDeadline: MonotonicInstant? {
        state == .running ? lastArrival.advanced(byNanoseconds: Self.silenceLimit + 1) : nil
    }

    /// Where the song is at `now`, in ticks since its start (fractions between ticks); nil unless running.
    public func position(at now: MonotonicInstant) -> Double? {
        guard state == .running, hasPeriod, let origin else { return nil }
        return Double(tick) + (now.nanoseconds(since: origin) - filtered) / period
    }

    /// The timeline as a value (`SongLine`); nil unless running with a tempo.
    public var line: SongLine? {
        guard state == .running, hasPeriod, let origin else { return nil }
        return SongLine(tick: Double(tick), time: MonotonicInstant(filtered, after: origin), period: period)
    }

    /// The first tick after `now` and when it falls; nil unless running.
    public func nextTick(after now: MonotonicInstant) -> (tick: Int, time: MonotonicInstant)? {
        guard let position = position(at: now) else { return nil }
        let next = Int(position.rounded(.down)) + 1
        return time(atTick: Double(next)).map { (next, $0) }
    }

    public func time(atTick tick: Double) -> MonotonicInstant? {
        guard state == .running, hasPeriod, let origin else { return nil }
        return MonotonicInstant(filtered + (tick - Double(self.tick)) * period, after: origin)
    }

    /// Takes one of the ticks a burst may hold, refilled at the fastest tempo's rate; false if none is left.
    private mutating func takeToken(at time: Double) -> Bool {
        tokens = min(tokens + max(time - tokenTime, 0) / Self.minPeriod, Self.burst)
        tokenTime = time
        guard tokens >= 1 else { return false }
        tokens -= 1
        return true
    }

    /// Starts the loop again at `time` as tick `tick`, keeping the period as a first guess.
    private mutating func seed(at time: Double, tick: Int) {
        if samples > 0 { counters.reseeds += 1 }
        filtered = time
        self.tick = tick
        samples = 1
        outlierSign = 0
        unconfirmedLoss = 0
        lateRuns = 0
    }

    /// Moves the loop on to a tick at `time`, `counted` ticks on from the last if the master's count says.
    private mutating func follow(_ time: Double, counted: Int?) {
        if let counted {
            // Ticks the journal counted are lost ones, not a fallen tempo: no guessing. A tick far from where the
            // count puts it (the song moved, or the times switched) starts the loop again there.
            counters.lostTicks += counted - 1
            unconfirmedLoss = 0
            lateRuns = 0
            if abs(time - (filtered + Double(counted) * period)) > Self.countedLimit * period {
                return seed(at: time, tick: tick + counted)
            }
            return follow(time, elapsed: counted)
        }
        if usesSenderTime, samples == 2 {
            // The master's times: the first interval (the period so far) spanned ticks lost if it is a whole multiple
            // of this one, the second tick of a song being the only one that comes before any period.
            let interval = time - filtered, multiple = (period / (time - filtered)).rounded()
            if interval > 0, multiple >= 2, abs(period - multiple * interval) < 0.1 * interval {
                tick += Int(multiple) - 1
                counters.lostTicks += Int(multiple) - 1
                period = min(max(interval, Self.minPeriod), Self.maxPeriod)
            }
        }
        let threshold = jumpThreshold
        let lateness = time - (filtered + period)
        // The master's own times are within the CK offset's error of its ticks: a tick lost is seen as soon as two
        // ticks have given the period, not only once the loop has learnt its error (1.25 beats later), or a tick lost
        // then would put the whole song a tick behind. Arrival times wait for the loop's error.
        // A silence longer than `silenceLimit` is a pause (the loop starts again after it), not ticks lost.
        let late = (usesSenderTime ? samples >= 2 : samples >= 3 && threshold < period / 4) && lateness > 0.75 * period
            && time - filtered <= Double(Self.silenceLimit)
        let elapsed = late ? 1 + Int(lateness / period + 0.25) : 1
        if unconfirmedLoss > 0, !late || (elapsed == lateElapsed && lateRuns >= 2) {
            // After ticks that came whole periods late: on time, the ticks between were lost; late by more than
            // half a period, or by the same whole periods a third time in a row, the tempo fell and nothing was.
            guard lateness <= period / 2 else { return seed(at: time, tick: tick - unconfirmedLoss + 1) }
            counters.lostTicks += unconfirmedLoss
            unconfirmedLoss = 0
            lateRuns = 0
        }
        if late {
            lateRuns = elapsed == lateElapsed ? lateRuns + 1 : 1
            lateElapsed = elapsed
            unconfirmedLoss += elapsed - 1
        }
        follow(time, elapsed: elapsed)
    }

    /// Moves the loop on to a tick at `time`, `elapsed` ticks after the last (those between lost).
    private mutating func follow(_ time: Double, elapsed: Int) {
        if time - filtered > Double(Self.silenceLimit) { return seed(at: time, tick: tick + elapsed) }
        let predicted = filtered + Double(elapsed) * period
        let error = time - predicted
        samples += 1
        let (b, c) = gains
        filtered = predicted + b * error
        period = min(max(period + c * error / Double(elapsed), Self.minPeriod), Self.maxPeriod)
        hasPeriod = true
        tick += elapsed
        guard samples > Self.lockInSamples else { return }
        if abs(error) > jumpThreshold {
            // Two ticks in a row far off on the same side: the tempo jumped.
            let sign: Double = error > 0 ? 1 : -1
            if sign == outlierSign { return seed(at: time, tick: tick - unconfirmedLoss) }
            outlierSign = sign
        } else {
            outlierSign = 0
        }
        noiseSamples = min(noiseSamples + 1, 32)
        noise += (abs(error) - noise) / Double(noiseSamples)
    }

    /// An error beyond which a tick is an outlier: 4× the locked loop's usual error (at least 1 ms); infinite until
    /// the loop has learnt it.
    private var jumpThreshold: Double {
        noiseSamples >= 8 ? max(Self.jumpFactor * noise, Self.jumpFloor) : .infinity
    }

    /// The loop's gains for the current sample: a least-squares fit's while they are larger, then the DLL's.
    private var gains: (b: Double, c: Double) {
        let n = Double(samples)
        let fit = (b: 2 * (2 * n - 1) / (n * (n + 1)), c: 6 / (n * (n + 1)))
        return fit.b > Self.loop.b ? fit : Self.loop
    }

    /// The loop's gains: ω = 2π·bandwidth per tick.
    private static let loop: (b: Double, c: Double) = {
        let omega = 2 * Double.pi * bandwidth / Double(MIDIClock.ticksPerBeat)
        return (2.0.squareRoot() * omega, omega * omega)
    }()

    /// Samples after which the least-squares gains have fallen to the loop's (about 4 / b: 22).
    private static let lockInSamples = Int((4 / loop.b).rounded(.up))
}
