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
    /// `ns` earlier, held at the clock's zero.
    @inlinable public func receded(byNanoseconds ns: UInt64) -> Self { Self(nanoseconds: nanoseconds - min(ns, nanoseconds)) }
}

/// The identity of one endpoint in the running configuration (a device, a file, a recorder).
public struct EndpointID: Hashable, Comparable, Sendable, CustomStringConvertible {
    /// Dense index, 0..<endpoint count: usable as an array index.
    public let index: UInt16
    @inlinable public init(_ index: UInt16) { self.index = index }
    @inlinable public static func < (a: Self, b: Self) -> Bool { a.index < b.index }
    public var description: String { "#\(index)" }
}

/// Who, inside an endpoint that several players share, played an event: a network peer (by its
/// SSRC) or a sequencer port (by client and port). `.none` for an endpoint that is one player (a
/// song, an OSC endpoint). The same player has the same origin under every endpoint it feeds, so a
/// sink can leave it out wherever the event arrives.
public struct EventOrigin: Hashable, Sendable, CustomStringConvertible {
    /// Kind in the high 32 bits, identity in the low 32; 0 is `.none`.
    public let rawValue: UInt64
    @inlinable public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Nobody in particular.
    public static let none = EventOrigin(rawValue: 0)
    /// An RTP-MIDI peer, by its (control-port) SSRC.
    @inlinable public static func networkPeer(ssrc: UInt32) -> Self { Self(rawValue: 1 << 32 | UInt64(ssrc)) }
    /// An ALSA sequencer port.
    @inlinable public static func sequencerPort(client: UInt8, port: UInt8) -> Self {
        Self(rawValue: 2 << 32 | UInt64(client) << 8 | UInt64(port))
    }
    /// The network peer's SSRC, if this origin is one.
    public var networkPeer: UInt32? { rawValue >> 32 == 1 ? UInt32(truncatingIfNeeded: rawValue) : nil }
    /// The sequencer port, if this origin is one.
    public var sequencerPort: (client: UInt8, port: UInt8)? {
        rawValue >> 32 == 2 ? (UInt8(truncatingIfNeeded: rawValue >> 8), UInt8(truncatingIfNeeded: rawValue)) : nil
    }
    public var description: String {
        switch rawValue >> 32 {
        case 0: "none"
        case 1: "peer \(UInt32(truncatingIfNeeded: rawValue))"
        default: "port \((rawValue >> 8) & 0xFF):\(rawValue & 0xFF)"
        }
    }
}

/// Which players behind a sink a delivery is for. Everything routed goes to every player but the
/// one it came from (no echo); a release can go to one player alone, when only it heard a note-on
/// that other players still hold (see `HeldTable`).
public struct Recipients: Hashable, Sendable {
    /// The player left out (`except`) or the only one included (`only`).
    public let origin: EventOrigin
    /// True: only `origin`; false: everyone but `origin`.
    public let isOnly: Bool
    @usableFromInline init(origin: EventOrigin, isOnly: Bool) {
        self.origin = origin
        self.isOnly = isOnly
    }
    /// Everyone but `origin` (everyone, for `.none`).
    @inlinable public static func allExcept(_ origin: EventOrigin) -> Self { Self(origin: origin, isOnly: false) }
    /// `origin` alone.
    @inlinable public static func only(_ origin: EventOrigin) -> Self { Self(origin: origin, isOnly: true) }
    /// Every player.
    public static let everyone = allExcept(.none)
    /// True if the player `origin` is meant; a sink that is one player is `.none`.
    @inlinable public func include(_ player: EventOrigin) -> Bool {
        isOnly ? player == origin : player == .none || player != origin
    }
}

/// When a sender says it meant a message, on our clock, and how far that can be checked.
public struct SenderTime: Hashable, Sendable {
    /// The instant the sender meant (a peer's RTP timestamp through the clock sync's offset).
    public var instant: MonotonicInstant
    /// How long a clock-sync exchange with the sender took (nanoseconds): no message can have been on the way
    /// longer, so a sender time earlier than that before its arrival is the sender's word alone. Nil if unknown.
    public var roundTrip: UInt64?
    /// For a clock tick: the sender's count of it in its song (ticks since the song's start, or a song position's),
    /// modulo 2^19, where the sender's journal keeps that count through loss (RFC 6295 chapter Q); nil otherwise.
    public var songTick: Int?
    /// What `songTick` counts modulo: 2^19, chapter Q's CLOCK field.
    public static let songTickModulus = 1 << 19
    @inlinable public init(_ instant: MonotonicInstant, roundTrip: UInt64?, songTick: Int? = nil) {
        self.instant = instant
        self.roundTrip = roundTrip
        self.songTick = songTick
    }
}

/// A MIDI message with where it came from and when.
public struct MIDIEvent: Hashable, Sendable {
    /// The message.
    public var message: MIDIMessage
    /// The endpoint it came from.
    public var source: EndpointID
    /// The player inside that endpoint who played it.
    public var origin: EventOrigin
    /// When it happened (or is due), on the monotonic clock.
    public var time: MonotonicInstant
    /// When its sender meant it, where the sender says (a session peer's timestamp); nil for local players.
    public var sent: SenderTime?
    @inlinable public init(_ message: MIDIMessage, from source: EndpointID, origin: EventOrigin = .none,
                           at time: MonotonicInstant, sent: SenderTime? = nil) {
        self.message = message
        self.source = source
        self.origin = origin
        self.time = time
        self.sent = sent
    }
}
