import MIDI

/// A timeline the jam shares with others (Ableton Link's session): its tempo and beats on this instance's clock,
/// as read at one moment. Beats count quarter notes; a bar is `quantum` beats, and bar lines fall where the beat is a
/// multiple of it, the same for every peer of the session.
public struct SharedTimeline: Equatable, Sendable {
    /// Quarter notes a minute.
    public var tempo: Double
    /// The beat at `time`.
    public var beat: Double
    public var time: MonotonicInstant
    public var quantum: Double
    /// The other peers in the session: alone, a start need not wait for a bar line.
    public var peers: Int

    public init(tempo: Double, beat: Double, at time: MonotonicInstant, quantum: Double, peers: Int) {
        self.tempo = tempo
        self.beat = beat
        self.time = time
        self.quantum = quantum
        self.peers = peers
    }

    /// The beat at `instant` (the tempo holding).
    public func beat(at instant: MonotonicInstant) -> Double {
        beat + instant.nanoseconds(since: time) / 60e9 * tempo
    }

    /// When `beat` falls (the tempo holding).
    public func time(atBeat beat: Double) -> MonotonicInstant {
        MonotonicInstant((beat - self.beat) * 60e9 / tempo, after: time)
    }

    /// The first bar line at or after `instant`: its beat (a multiple of `quantum`). A bar line a microsecond before
    /// `instant` counts as at it.
    public func barLine(atOrAfter instant: MonotonicInstant) -> Double {
        ((beat(at: instant) - 1e-6 * tempo / 60) / quantum).rounded(.up) * quantum
    }
}

/// How the jam shares its timeline through Ableton Link (the route file's `clock: { link: ... }`).
public struct LinkSettings: Equatable, Sendable {
    /// The quantums a route file may set.
    public static let quantumRange = 1...16
    /// Beats in a bar: a start waits for the session's next bar line, as Link apps' do.
    public var quantum = 4.0
    /// The network interfaces Link listens and sends on (`interfaces:`); empty: every one.
    public var interfaces: [String] = []
    public init(quantum: Double = 4, interfaces: [String] = []) {
        self.quantum = quantum
        self.interfaces = interfaces
    }
}
