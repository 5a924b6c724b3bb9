import MIDI

/// A rate limit: up to `burst` at once, then `perSecond` a second on average (a token bucket, kept as the instant it
/// would be empty until: integer nanoseconds, so it never drifts). Pure: time is passed in.
public struct TokenBucket: Sendable {
    /// How many may pass at once, after a quiet while.
    public let burst: Int
    /// How many a second may pass, over time.
    public let perSecond: Double
    /// Nanoseconds one passing takes from the bucket.
    private let interval: UInt64
    /// Until when what passed so far keeps the bucket from being full (nil: full).
    private var busyUntil: MonotonicInstant?

    /// A full bucket.
    public init(burst: Int, perSecond: Double) {
        self.burst = max(1, burst)
        self.perSecond = perSecond
        interval = UInt64(1e9 / perSecond)
    }

    /// True, with one taken, if one may pass at `now`; false if the rate is exceeded.
    public mutating func take(now: MonotonicInstant) -> Bool {
        let from = max(busyUntil ?? now, now)
        // Passing now would leave the bucket busy until `from + interval`: allowed while that is within the burst.
        guard from.nanoseconds - now.nanoseconds <= UInt64(burst - 1) * interval else { return false }
        busyUntil = from.advanced(byNanoseconds: interval)
        return true
    }

    /// True if the bucket is full again at `now` (nothing taken lately): it may be forgotten.
    public func isFull(at now: MonotonicInstant) -> Bool {
        busyUntil.map { $0 <= now } ?? true
    }
}
