import MIDI

/// One port's output order, with SysEx paced to what a MIDI wire carries.
///
/// The sequencer accepts a whole SysEx at once, but the drivers behind it do not: a USB MIDI
/// interface (seq_midi) or a virmidi device has a 4 KiB output buffer and drops what overflows
/// it ("output buffer overrun"). So SysEx leaves in 256-byte chunks from a token bucket that
/// holds one such buffer and refills at 31250 baud (3125 bytes/s): a short SysEx goes at
/// once, a patch dump takes as long as the wire needs. Messages sent while a SysEx is queued
/// wait behind it (a status byte would cut the SysEx short on the wire); real-time messages
/// (clock, start, stop) never wait: MIDI allows them inside a SysEx.
/// Each piece carries the recipients its message was admitted for (see `Recipients`).
/// A value type with no clock of its own: the caller passes the time.
public struct PacedOutput: Sendable {
    /// What may leave now.
    public enum Piece: Equatable, Sendable {
        /// A message that waited behind a SysEx, with the time it was stamped for.
        case message(MIDIMessage, MonotonicInstant, Recipients)
        /// The next chunk of a SysEx, framing bytes (F0, F7) included.
        case sysExChunk([UInt8], Recipients)
    }

    /// The rate a MIDI 1.0 wire carries: 31250 baud, 10 bits a byte.
    public static let wireBytesPerSecond = 3125
    /// A driver's output buffer: what may be sent at once.
    public static let burstBytes = 4096

    private enum Pending: Sendable {
        case message(MIDIMessage, MonotonicInstant, Recipients)
        case sysEx([UInt8], sent: Int, Recipients)
    }

    private var pending: [Pending] = []
    private var head = 0
    private var tokens: Int
    private var refilledAt: MonotonicInstant
    private let bytesPerSecond: Int
    private let burst: Int

    /// An idle output, its bucket full at `now`.
    public init(now: MonotonicInstant, bytesPerSecond: Int = PacedOutput.wireBytesPerSecond,
                burst: Int = PacedOutput.burstBytes) {
        self.bytesPerSecond = max(bytesPerSecond, 1)
        self.burst = max(burst, SequencerEvent.sysExChunk)
        tokens = self.burst
        refilledAt = now
    }

    /// True if nothing waits.
    public var isIdle: Bool { head == pending.count }

    /// Takes `message`: true if the caller sends it now, false if it waits (a SysEx always
    /// waits for `next`; so does anything that is not real time while a SysEx is queued).
    public mutating func admit(_ message: MIDIMessage, at time: MonotonicInstant, for recipients: Recipients = .everyone) -> Bool {
        if case .sysEx(let data) = message {
            pending.append(.sysEx([0xF0] + data + [0xF7], sent: 0, recipients))
            return false
        }
        if Self.isRealTime(message) || isIdle { return true }
        pending.append(.message(message, time, recipients))
        return false
    }

    /// The next piece that may leave at `now`, or nil if nothing does yet (`wait` says how long).
    public mutating func next(now: MonotonicInstant) -> Piece? {
        guard !isIdle else { return nil }
        switch pending[head] {
        case .message(let message, let time, let recipients):
            pop()
            return .message(message, time, recipients)
        case .sysEx(let bytes, let sent, let recipients):
            refill(now: now)
            let count = min(SequencerEvent.sysExChunk, bytes.count - sent)
            guard tokens >= count else { return nil }
            tokens -= count
            if sent + count == bytes.count {
                pop()
            } else {
                pending[head] = .sysEx(bytes, sent: sent + count, recipients)
            }
            return .sysExChunk(Array(bytes[sent..<(sent + count)]), recipients)
        }
    }

    /// Nanoseconds from `now` until `next` has something, or nil if nothing waits.
    public func wait(now: MonotonicInstant) -> UInt64? {
        guard !isIdle else { return nil }
        guard case .sysEx(let bytes, let sent, _) = pending[head] else { return 0 }
        let missing = min(SequencerEvent.sysExChunk, bytes.count - sent) - currentTokens(now: now)
        guard missing > 0 else { return 0 }
        return (UInt64(missing) * 1_000_000_000 + UInt64(bytesPerSecond) - 1) / UInt64(bytesPerSecond)
    }

    /// Empties the queue for a port that is going away, without cutting anything short on the wire:
    /// the messages that waited, and an F7 that ends a SysEx already begun. Returns them and how
    /// many SysEx bytes are dropped.
    public mutating func flush() -> (pieces: [Piece], droppedSysExBytes: Int) {
        var pieces: [Piece] = []
        var dropped = 0
        for item in pending[head...] {
            switch item {
            case .message(let message, let time, let recipients):
                pieces.append(.message(message, time, recipients))
            case .sysEx(let bytes, let sent, let recipients):
                if sent > 0 { pieces.append(.sysExChunk([0xF7], recipients)) }
                dropped += bytes.count - sent
            }
        }
        pending.removeAll()
        head = 0
        return (pieces, dropped)
    }

    static func isRealTime(_ message: MIDIMessage) -> Bool {
        switch message {
        case .timingClock, .start, .continue, .stop, .activeSensing, .systemReset: true
        default: false
        }
    }

    private mutating func pop() {
        head += 1
        if head == pending.count {
            pending.removeAll(keepingCapacity: true)
            head = 0
        }
    }

    private func currentTokens(now: MonotonicInstant) -> Int {
        let elapsed = now.nanoseconds > refilledAt.nanoseconds ? now.nanoseconds - refilledAt.nanoseconds : 0
        let earned = elapsed / 1_000_000_000 >= UInt64(burst)
            ? UInt64(burst) : elapsed * UInt64(bytesPerSecond) / 1_000_000_000
        return Int(min(UInt64(tokens) + earned, UInt64(burst)))
    }

    private mutating func refill(now: MonotonicInstant) {
        let updated = currentTokens(now: now)
        // Advance the stamp by the whole bytes earned only, keeping the fraction of one not yet earned.
        refilledAt = updated == burst ? now : refilledAt.advanced(
            byNanoseconds: UInt64(updated - tokens) * 1_000_000_000 / UInt64(bytesPerSecond))
        tokens = updated
    }
}

extension PacedOutput.Piece {
    /// The players it is for.
    public var recipients: Recipients {
        switch self {
        case .message(_, _, let recipients), .sysExChunk(_, let recipients): recipients
        }
    }

    /// True for a real-time message (clock, start, stop...), which MIDI lets pass anything.
    var isRealTime: Bool {
        if case .message(let message, _, _) = self { PacedOutput.isRealTime(message) } else { false }
    }
}
