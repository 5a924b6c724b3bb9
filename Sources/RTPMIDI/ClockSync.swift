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

/// The peer's clock as the CK exchanges of the last `window` nanoseconds tell it, from the quickest trip each way.
///
/// An exchange's two legs, timed across the two clocks, are each the true travel time plus or minus the clock
/// offset: "out" (ts1 to ts2) = travel out - offset, "back" (ts2 to ts3) = travel back + offset, so offset =
/// (back - out) / 2 plus half the difference of the travel times, which is what spoils a single exchange: through
/// 0-10 ms of jitter each way, up to 5 ms. Whatever happens on the way -- a queue, a retransmission, a late wake-up,
/// a stamp taken after the packet came -- only ever lengthens a leg, never shortens it, so the shortest leg each way
/// over many exchanges is close to the bare travel time, and half the difference of the two minima is the offset,
/// off by half the difference of two small excesses (the "minimum filter" of one-way delays). Over the same 0-10 ms
/// uniform jitter, 64 exchanges in 16 s, this is within 0.17 ms on average and 0.6 ms at worst in simulation, where
/// the median offset of the window is 0.25 / 1.0 ms, the median of its shorter round trips 0.4 / 1.6 ms and the
/// shortest round trip of 4 s 0.8 / 2.9 ms (measured, BENCHMARKS.md). The window is long enough for dozens of
/// exchanges while a clock is followed (CK every 250 ms) and short enough that clocks drifting 20 ppm apart move the
/// estimate by at most 0.3 ms.
public struct ClockOffsetEstimate: Sendable {
    public static let window: UInt64 = 16_000_000_000
    /// At most this many exchanges are kept (the followed cadence fills 16 s with 64).
    public static let capacity = 96
    /// Each exchange of the window as twice its legs (out = roundTrip - 2 offset, back = roundTrip + 2 offset, so that
    /// halves are kept exact), with its round trip and when it completed.
    private var samples: [(out: Int64, back: Int64, roundTrip: Int64, time: MonotonicInstant)] = []

    public init() {}

    /// Takes the result of an exchange completed at `now` (as either side of it: the offset is ours minus the
    /// peer's) and returns the estimate: the offset from the quickest leg each way over the window, with the
    /// window's shortest round trip.
    public mutating func record(_ result: ClockSyncResult, now: MonotonicInstant) -> ClockSyncResult {
        samples.removeAll { now.nanoseconds &- $0.time.nanoseconds > Self.window }
        if samples.count == Self.capacity { samples.removeFirst() }
        samples.append((result.roundTrip &- 2 &* result.offset, result.roundTrip &+ 2 &* result.offset, result.roundTrip, now))
        let out = samples.lazy.map(\.out).min()!, back = samples.lazy.map(\.back).min()!
        return ClockSyncResult(roundTrip: samples.lazy.map(\.roundTrip).min()!, offset: (back &- out) / 4)
    }
}
