import MIDI

/// The song's timeline as a value others can copy and read on any thread (the drums' real-time thread): tick
/// `tick` falls at `time`, one tick every `period` nanoseconds, and from tick `change.tick` on (a tempo that waits
/// for the next beat) one every `change.period`. The generator's and the follower's timelines are both lines like
/// this between two of their changes; the jam publishes its line again at each one.
public struct SongLine: BeatTimeline, Equatable, Sendable {
    public var tick: Double
    public var time: MonotonicInstant
    /// Nanoseconds a tick (finite, positive).
    public var period: Double
    /// Where the period changes, and to what.
    public var change: (tick: Double, period: Double)?

    public init(tick: Double, time: MonotonicInstant, period: Double, change: (tick: Double, period: Double)? = nil) {
        self.tick = tick
        self.time = time
        self.period = period
        self.change = change
    }

    public func time(atTick tick: Double) -> MonotonicInstant? {
        if let change, tick >= change.tick {
            return MonotonicInstant((tick - change.tick) * change.period, after: MonotonicInstant((change.tick - self.tick) * period, after: time))
        }
        return MonotonicInstant((tick - self.tick) * period, after: time)
    }

    /// Where the song is at `now`, in ticks since its start (negative before a start to come).
    public func tick(at now: MonotonicInstant) -> Double {
        let position = tick + now.nanoseconds(since: time) / period
        guard let change, position >= change.tick else { return position }
        let changeTime = MonotonicInstant((change.tick - tick) * period, after: time)
        return change.tick + now.nanoseconds(since: changeTime) / change.period
    }

    /// The tempo at `now`, in quarter notes a minute.
    public func tempo(at now: MonotonicInstant) -> Double {
        let period = change.map { tick(at: now) >= $0.tick ? $0.period : self.period } ?? self.period
        return MIDIClock.bpm(tickPeriod: period)
    }

    public static func == (a: SongLine, b: SongLine) -> Bool {
        a.tick == b.tick && a.time == b.time && a.period == b.period && a.change?.tick == b.change?.tick && a.change?.period == b.change?.period
    }
}
