import MIDI

/// What one port could not write because the sequencer had no room for it (`SendOutcome.full`), kept to be written
/// again from a timer. Waiting for room where the port is written, on the engine's queue, held every other event
/// behind it, the jam's clock ticks among them (issue 30).
///
/// Order: what is sent to the port while something waits is kept behind it without being tried, except a real-time
/// message (clock, start, stop...), which passes unless another real-time message waits: MIDI allows them anywhere,
/// and their own order is kept. `retry` writes what waits in that order and stops at the first write refused (one
/// refused that is not real-time still lets the real-time messages behind it try), so a piece refused again waits
/// for the next call: nothing loops.
///
/// Bounds: a message that has waited `maximumWait` (1 s, as long as a send tried before it gave up until now) is
/// dropped, and so is the oldest when `limit` wait; but not a release (a note-off, a pedal let go): dropped, it is a
/// note that hangs, while sent late it does no harm. A release that would be dropped is owed to its destination
/// instead (a `HeldNotes` set per destination, at most one per note and pedal, so bounded by construction), and owed
/// releases are written before anything kept, which is younger. What is dropped is returned for the caller to count.
/// A value type with no clock of its own: the caller passes the time, which never goes back.
public struct OutputBacklog: Sendable {
    /// Where a piece goes: every subscriber of the port (nil) or one port.
    public typealias Destination = SequencerAddress?

    /// What was dropped.
    public struct Dropped: Equatable, Sendable {
        /// Messages and SysEx chunks.
        public var pieces = 0
        /// The note-offs and pedal releases among them: notes that may hang.
        public var releases = 0

        public init(pieces: Int = 0, releases: Int = 0) {
            self.pieces = pieces
            self.releases = releases
        }

        /// True if nothing was dropped.
        public var isEmpty: Bool { pieces == 0 }

        /// Counts `piece`.
        public mutating func add(_ piece: PacedOutput.Piece) {
            pieces += 1
            if piece.isRelease { releases += 1 }
        }

        /// Counts what `other` counted.
        public mutating func add(_ other: Dropped) {
            pieces += other.pieces
            releases += other.releases
        }
    }

    /// How long a message may wait for room: a second (nanoseconds).
    public static let maximumWait: UInt64 = 1_000_000_000
    /// How many messages may wait.
    public static let limit = 4096
    /// How often the caller retries while something waits (nanoseconds). Room comes back when the destination reads
    /// (a soft synth reads once per audio period, 1-10 ms) or the queue dispatches, so trying more often mostly finds
    /// no room, and each try that fails is a write on the engine's queue; 5 ms later is still within what a player
    /// hears as together, and a port that stays full costs 200 refused writes a second.
    public static let retryInterval: UInt64 = 5_000_000

    private struct Kept: Sendable {
        var piece: PacedOutput.Piece
        var destination: Destination
        var since: MonotonicInstant
    }

    /// In order; `since` never decreases.
    private var kept: [Kept] = []
    /// How many of `kept` are real-time messages.
    private var realTime = 0
    /// Releases that waited too long, by destination.
    private var owed: [Destination: HeldNotes] = [:]
    private let limit: Int
    private let maximumWait: UInt64

    public init(limit: Int = OutputBacklog.limit, maximumWait: UInt64 = OutputBacklog.maximumWait) {
        self.limit = max(limit, 1)
        self.maximumWait = maximumWait
    }

    /// True if nothing waits.
    public var isEmpty: Bool { kept.isEmpty && owed.isEmpty }

    /// True if `piece` is to be kept behind what waits rather than written now.
    public func holdsBack(_ piece: PacedOutput.Piece) -> Bool {
        piece.isRealTime ? realTime > 0 : !isEmpty
    }

    /// Forgets the clock and transport waiting that is stamped after `time` (the jam took it back).
    public mutating func removeClockAndTransport(after time: MonotonicInstant) {
        kept.removeAll { entry in
            guard case .message(let message, let stamped, _) = entry.piece, message.isClockOrTransport, stamped > time else { return false }
            if entry.piece.isRealTime { realTime -= 1 }
            return true
        }
    }

    /// Keeps `piece` for `destination`, refused or held back at `now`, behind what waits; returns what was dropped to
    /// make room for it.
    public mutating func keep(_ piece: PacedOutput.Piece, for destination: Destination, at now: MonotonicInstant) -> Dropped {
        var dropped = Dropped()
        if kept.count >= limit { giveUp(kept.removeFirst(), &dropped) }
        kept.append(Kept(piece: piece, destination: destination, since: now))
        if piece.isRealTime { realTime += 1 }
        return dropped
    }

    /// Gives up on what has waited `maximumWait`, then writes with `write` what waits, in order, until a write is
    /// refused (`.full`; any other outcome, a failure the writer counted included, is the end of that piece);
    /// returns what was dropped.
    public mutating func retry(now: MonotonicInstant, write: (PacedOutput.Piece, Destination) -> SendOutcome) -> Dropped {
        var dropped = Dropped()
        let expired = kept.prefix { $0.since.nanoseconds + maximumWait <= now.nanoseconds }.count
        for entry in kept.prefix(expired) { giveUp(entry, &dropped) }
        kept.removeFirst(expired)

        var refused = false
        for (destination, var releases) in owed {
            var left = HeldNotes()
            releases.releaseAll { release in
                if refused || write(.message(release, now, .everyone), destination) == .full {
                    refused = true
                    left.insertRelease(release)
                }
            }
            owed[destination] = left.isEmpty ? nil : left
        }

        // Written pieces leave a gap that the pieces still waiting close up, in one pass.
        var realTimeRefused = false
        var waiting = 0, index = 0
        while index < kept.count, !(refused && (realTimeRefused || realTime == 0)) {
            let entry = kept[index]
            index += 1
            if entry.piece.isRealTime ? !realTimeRefused : !refused {
                if write(entry.piece, entry.destination) != .full {
                    if entry.piece.isRealTime { realTime -= 1 }
                    continue
                }
                refused = true
                realTimeRefused = realTimeRefused || entry.piece.isRealTime
            }
            kept[waiting] = entry
            waiting += 1
        }
        kept.removeSubrange(waiting..<index)
        return dropped
    }

    /// Empties the backlog of a port going away; returns what waited, dropped.
    public mutating func removeAll() -> Dropped {
        var dropped = Dropped()
        for entry in kept { dropped.add(entry.piece) }
        for var releases in owed.values { releases.releaseAll { _ in dropped.add(Dropped(pieces: 1, releases: 1)) } }
        self = OutputBacklog(limit: limit, maximumWait: maximumWait)
        return dropped
    }

    /// Drops `entry`, or owes it to its destination if it is a release.
    private mutating func giveUp(_ entry: Kept, _ dropped: inout Dropped) {
        if entry.piece.isRealTime { realTime -= 1 }
        if entry.piece.isRelease, case .message(let release, _, _) = entry.piece {
            owed[entry.destination, default: HeldNotes()].insertRelease(release)
        } else {
            dropped.add(entry.piece)
        }
    }
}

extension PacedOutput.Piece {
    /// True for what `HeldNotes` calls a release: a note-off (or a note-on at velocity 0), and a sustain,
    /// sostenuto or hold 2 pedal below 64.
    var isRelease: Bool {
        guard case .message(let message, _, _) = self else { return false }
        switch message {
        case .controlChange(_, let controller, let value):
            switch controller.value {
            case 64, 66, 69: return value.value < 64
            default: return false
            }
        default:
            return message.isNoteOff
        }
    }
}
