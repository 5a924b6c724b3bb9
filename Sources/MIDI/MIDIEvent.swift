/// A point on the program's one clock: monotonic nanoseconds (CLOCK_MONOTONIC).
///
/// The core never reads a clock; adapters and the engine pass instants in. AppleMIDI ticks,
/// ALSA real-time stamps, audio frames and OSC timetags are conversions at the edges.
public struct MonotonicInstant: Hashable, Comparable, Sendable {
    /// Nanoseconds since an arbitrary fixed point (the system's boot, for CLOCK_MONOTONIC).
    public var nanoseconds: UInt64
    @inlinable public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }
    @inlinable public static func < (a: Self, b: Self) -> Bool { a.nanoseconds < b.nanoseconds }
    /// This instant moved later by `ns` nanoseconds.
    @inlinable public func advanced(byNanoseconds ns: UInt64) -> Self { Self(nanoseconds: nanoseconds &+ ns) }
}

/// The identity of one endpoint in the running configuration (a device, a file, a recorder).
public struct EndpointID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Dense index, 0..<endpoint count: usable as an array index.
    public let index: UInt16
    @inlinable public init(_ index: UInt16) { self.index = index }
    @inlinable public static func < (a: Self, b: Self) -> Bool { a.index < b.index }
    public var description: String { "#\(index)" }
}

/// A MIDI message with where it came from and when.
public struct MIDIEvent: Hashable, Sendable {
    /// The message.
    public var message: MIDIMessage
    /// The endpoint it came from.
    public var source: EndpointID
    /// When it happened (or is due), on the monotonic clock.
    public var time: MonotonicInstant
    @inlinable public init(_ message: MIDIMessage, from source: EndpointID, at time: MonotonicInstant) {
        self.message = message
        self.source = source
        self.time = time
    }
}
