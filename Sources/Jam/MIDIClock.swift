import MIDI

/// A message due at an instant: what the clock generator hands to outputs ahead of time.
public struct ScheduledMessage: Hashable, Sendable {
    /// The message.
    public var message: MIDIMessage
    /// When it is due, on the monotonic clock.
    public var time: MonotonicInstant
    @inlinable public init(_ message: MIDIMessage, at time: MonotonicInstant) {
        self.message = message
        self.time = time
    }
}

/// MIDI clock's grid: 24 ticks a quarter note (a beat); song position counts sixteenths (6 ticks).
public enum MIDIClock {
    /// Ticks (0xF8) per quarter note.
    public static let ticksPerBeat = 24
    /// Ticks per MIDI beat, the sixteenth note song position pointers count in.
    public static let ticksPerSixteenth = 6

    /// The first sixteenth (song position) at or after tick `tick` of a song.
    @inlinable public static func sixteenth(atOrAfter tick: Int) -> Int {
        (tick + ticksPerSixteenth - 1) / ticksPerSixteenth
    }

    /// The Song Position of sixteenth `sixteenth`: 14 bits, so past 16384 sixteenths (1024 bars of 4/4) it wraps,
    /// which keeps the bar; never a trap, whatever a follower counted.
    @inlinable public static func songPosition(sixteenth: Int) -> MIDIMessage {
        .songPosition(UInt14(masking: UInt16(truncatingIfNeeded: sixteenth & 0x3FFF)))
    }

    /// Nanoseconds between ticks at `bpm` quarter notes a minute.
    @inlinable public static func tickPeriod(bpm: Double) -> Double { 60e9 / (bpm * Double(ticksPerBeat)) }
    /// Quarter notes a minute for ticks `period` nanoseconds apart.
    @inlinable public static func bpm(tickPeriod period: Double) -> Double { 60e9 / (period * Double(ticksPerBeat)) }
}

extension MonotonicInstant {
    /// Nanoseconds from `origin` to this instant, negative if it is earlier: differences, not absolute
    /// instants, go into floating point, so they stay exact to the nanosecond for months.
    func nanoseconds(since origin: MonotonicInstant) -> Double {
        Double(Int64(bitPattern: nanoseconds &- origin.nanoseconds))
    }

    /// The instant `offset` nanoseconds after `origin` (before it if negative), rounded and clamped into
    /// the clock's range; NaN gives `origin`.
    init(_ offset: Double, after origin: MonotonicInstant) {
        let limit = 9.0e18
        let step = offset.isNaN ? 0 : Int64(min(max(offset.rounded(), -limit), limit))
        let ns = step < 0 ? origin.nanoseconds.subtractingReportingOverflow(step.magnitude)
                          : origin.nanoseconds.addingReportingOverflow(UInt64(step))
        self.init(nanoseconds: ns.overflow ? (step < 0 ? 0 : .max) : ns.partialValue)
    }
}
