#if canImport(Glibc)
import Glibc
#endif

/// The program's one clock: CLOCK_MONOTONIC, read only at the edges (adapters and the engine),
/// never by the core (router, session state machines), which is handed instants.
public enum MonotonicClock {
    /// The current instant.
    public static func now() -> MonotonicInstant {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return MonotonicInstant(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
    }
}
