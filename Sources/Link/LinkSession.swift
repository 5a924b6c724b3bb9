import CLink
import Glibc
import Jam
import MIDI

/// This instance's peer in an Ableton Link session (the real library, through CLink): enabled from the start, its
/// network threads Link's own. Its calls take Link's app lock: call them from a thread that is not real-time.
/// Times cross between Link's clock (CLOCK_MONOTONIC_RAW) and the program's (CLOCK_MONOTONIC) by their difference,
/// read again at each call (the two drift apart while NTP slews CLOCK_MONOTONIC).
public final class LinkSession: @unchecked Sendable { // Link's calls are thread-safe
    /// What Link's session is now.
    public struct State: Equatable, Sendable {
        public var timeline: SharedTimeline
        public var playing: Bool
        /// When `playing` last changed, on the program's clock.
        public var playingSince: MonotonicInstant
    }

    private let link: OpaquePointer

    /// Joins (or makes) the Link session on the network interfaces named in `interfaces` (every one if empty), at
    /// `tempo` until a peer says otherwise.
    public init(tempo: Double, interfaces: [String]) throws(LinkError) {
        var error = [CChar](repeating: 0, count: 256)
        let names = interfaces.map { strdup($0) }
        defer { names.forEach { free($0) } }
        let made = names.map { UnsafePointer($0) }.withUnsafeBufferPointer {
            jb_link_create(tempo, $0.baseAddress, Int32(names.count), &error, Int32(error.count))
        }
        guard let link = made else {
            throw LinkError(reason: String(decoding: error.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
        }
        self.link = link
        jb_link_enable(link, true)
    }

    deinit {
        jb_link_enable(link, false)
        jb_link_destroy(link)
    }

    /// The other peers in the session.
    public var peers: Int { Int(jb_link_peers(link)) }

    /// The session now, bars of `quantum` beats.
    public func state(quantum: Double) -> State {
        let captured = jb_link_capture(link, quantum)
        let offset = jb_link_clock_offset()
        return State(timeline: SharedTimeline(tempo: captured.tempo, beat: captured.beat, at: instant(captured.time, offset),
                                              quantum: quantum, peers: peers),
                     playing: captured.playing, playingSince: instant(captured.playingSince, offset))
    }

    /// Sets the session's tempo from `time` on.
    public func setTempo(_ bpm: Double, at time: MonotonicInstant) {
        jb_link_set_tempo(link, bpm, micros(time))
    }

    /// Starts or stops the session's transport at `time`.
    public func setPlaying(_ playing: Bool, at time: MonotonicInstant) {
        jb_link_set_playing(link, playing, micros(time))
    }

    /// Puts `beat` at `time`: at once in a session alone; with peers Link keeps their beats and picks the next time
    /// after it with `beat`'s phase.
    public func requestBeat(_ beat: Double, at time: MonotonicInstant, quantum: Double) {
        jb_link_request_beat(link, beat, micros(time), quantum)
    }

    private func instant(_ micros: Int64, _ offset: Int64) -> MonotonicInstant {
        MonotonicInstant(nanoseconds: UInt64(clamping: micros &* 1000 &- offset))
    }

    private func micros(_ instant: MonotonicInstant) -> Int64 {
        (Int64(clamping: instant.nanoseconds) &+ jb_link_clock_offset()) / 1000
    }
}

/// Link could not start.
public struct LinkError: Error, CustomStringConvertible, Sendable {
    public var reason: String
    public var description: String { "Ableton Link could not start: \(reason)" }
}
