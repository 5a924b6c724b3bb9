import MIDI

/// The AppleMIDI session clock: 64-bit counts of 100 µs ticks (10 kHz), here taken from the
/// monotonic clock, so CK timestamps and RTP timestamps share one timebase.
public enum SessionClock {
    /// Nanoseconds per tick.
    public static let nanosecondsPerTick: UInt64 = 100_000

    /// The tick of `instant`.
    @inlinable public static func ticks(_ instant: MonotonicInstant) -> UInt64 {
        instant.nanoseconds / nanosecondsPerTick
    }
}

/// The result of one complete CK exchange (RFC-less AppleMIDI maths, see rtp-midi.md).
public struct ClockSyncResult: Equatable, Sendable {
    /// ts3 - ts1: the round trip, in ticks of the initiator's clock.
    public var roundTrip: Int64
    /// (ts1 + ts3) / 2 - ts2: the initiator's clock minus the responder's, in ticks.
    public var offset: Int64

    /// The result of the exchange with initiator times `ts1`, `ts3` and responder time `ts2`.
    public init(ts1: UInt64, ts2: UInt64, ts3: UInt64) {
        roundTrip = Int64(bitPattern: ts3 &- ts1)
        // Halve each before adding so two 64-bit times cannot overflow.
        let midpoint = ts1 / 2 &+ ts3 / 2 &+ (ts1 % 2 &+ ts3 % 2) / 2
        offset = Int64(bitPattern: midpoint &- ts2)
    }

    /// The round trip in milliseconds.
    public var roundTripMilliseconds: Double { Double(roundTrip) / 10 }
}
