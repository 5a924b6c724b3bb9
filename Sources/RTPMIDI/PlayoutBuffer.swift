import MIDI

/// Timestamp playout for one peer: each event is played at its sender's time plus a constant
/// delay, so the sender's inter-event timing survives network jitter.
///
/// The delay is learnt from the packets themselves. Each packet's transit (arrival on our
/// clock minus its RTP timestamp on the sender's clock) is the clock offset between the two
/// (what CK measures, without CK's half-round-trip error) plus that packet's network delay.
/// The delay used is the largest transit of the last `window` packets: it grows at once when
/// the network gets worse and shrinks slowly (1/`window` of the excess per packet) when it
/// gets better, so that a change in it rarely jolts the timing. An event whose time has already passed
/// when it arrives is played at once and counted as late.
struct PlayoutBuffer {
    /// Packets whose transit the delay covers.
    static let window = 256
    /// The most a packet may be held: a peer whose clock jumps is not allowed to mute itself.
    static let maximumDelay: Int64 = 100_000_000

    /// Events waiting for their time, oldest first (`head` is the next one).
    private var pending: [(message: MIDIMessage, due: MonotonicInstant)] = []
    private var head = 0
    /// The sender's timeline, unwrapped from 32-bit RTP timestamps, in nanoseconds.
    private var senderTicks: Int64 = 0
    private var lastTimestamp: UInt32?
    /// Recent transits (arrival minus sender time) in nanoseconds, a ring of `window`.
    private var transits: [Int64] = []
    private var nextTransit = 0
    /// The transit events are played at: sender time + `target` = due on our clock.
    private var target: Int64?
    private var lastDue = MonotonicInstant(nanoseconds: 0)

    /// The due time of the next waiting event.
    var nextDue: MonotonicInstant? { head < pending.count ? pending[head].due : nil }

    /// True if no event is waiting.
    var isEmpty: Bool { head == pending.count }

    /// Learns from a packet stamped `timestamp` (sender's 10 kHz clock) that arrived `now`.
    mutating func packetArrived(timestamp: UInt32, now: MonotonicInstant) {
        if let lastTimestamp {
            senderTicks += Int64(Int32(bitPattern: timestamp &- lastTimestamp))
        }
        lastTimestamp = timestamp
        let transit = Int64(bitPattern: now.nanoseconds) - senderTicks * Int64(SessionClock.nanosecondsPerTick)
        if transits.count < Self.window {
            transits.append(transit)
        } else {
            transits[nextTransit] = transit
            nextTransit = (nextTransit + 1) % Self.window
        }
        let worst = transits.max() ?? transit
        let best = transits.min() ?? transit
        let wanted = min(worst, best + Self.maximumDelay)
        if let current = target, wanted < current {
            target = current - (current - wanted) / Int64(Self.window)
        } else {
            target = wanted
        }
    }

    /// Queues `message`, stamped `ticks` after the last packet's timestamp, for its time;
    /// returns false if that time has passed (it is then played at once).
    mutating func schedule(_ message: MIDIMessage, ticks: UInt32, now: MonotonicInstant) -> Bool {
        let senderTime = (senderTicks + Int64(ticks)) * Int64(SessionClock.nanosecondsPerTick)
        var due = MonotonicInstant(nanoseconds: UInt64(clamping: senderTime + (target ?? 0)))
        let inTime = due >= now
        due = max(due, now)
        due = max(due, lastDue) // never reorder
        lastDue = due
        if head > 0, head == pending.count || head >= 256 && head * 2 >= pending.count {
            // Drop what was delivered, so a stream that never drains keeps a bounded array.
            pending.removeSubrange(..<head)
            head = 0
        }
        pending.append((message, due))
        return inTime
    }

    /// Hands every event due by `now` (all of them if `everything`: the peer is leaving) to
    /// `deliver`, in order.
    mutating func deliver(dueBy now: MonotonicInstant, everything: Bool = false, _ deliver: (MIDIMessage) -> Void) {
        while head < pending.count, everything || pending[head].due <= now {
            let message = pending[head].message
            head += 1
            deliver(message)
        }
    }
}
