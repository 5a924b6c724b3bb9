import MIDI
import Transport

/// Where RTP-MIDI packets prepared before they are due wait for their time (`RTPMIDISession.sendAhead`): another
/// thread sends each at its time, unless the session takes it back first. The session uses it from its one
/// thread or queue; the lane's sender may be a real-time thread that never waits for that one.
public protocol PacketLane: AnyObject {
    /// True if two more packets fit (a packet and its journal, when they do not fit one datagram).
    var hasRoom: Bool { get }
    /// Hands over `packet` (at most 1500 bytes) for `address`, to leave at `due`, if `hasRoom`; returns its ticket.
    func post(_ packet: UnsafeRawBufferPointer, to address: NetworkAddress, at due: MonotonicInstant) -> UInt64
    /// Takes back the packet `ticket` unless it has been sent: true if it will never leave. A packet being sent
    /// as this is called has left when it returns false.
    func takeBack(_ ticket: UInt64) -> Bool
    /// True once the packet `ticket` has been sent or taken back.
    func isDone(_ ticket: UInt64) -> Bool
    /// The instant on the clock the lane's sender reads (what is due by it leaves now).
    var now: MonotonicInstant { get }
}

/// A packet prepared ahead for one peer (the messages due at one instant, each with the owner that can take it back),
/// and the peer's sender as it was before it: taken back unsent, the sender is put back as it was, so that the
/// sequence numbers run on without a gap.
struct AheadPacket {
    var messages: [(message: MIDIMessage, owner: Int)]
    var time: MonotonicInstant
    var senderBefore: RTPMIDISender
    /// The lane's tickets of the packet (two when the journal did not fit with the commands).
    var tickets: [UInt64] = []
    /// Posted for good: a packet of anything (notes) finished while a prepared one was due within
    /// `RTPMIDISession.imminence`, which leaves right behind that one. Never taken back, nor anything before it (its
    /// messages are not kept to prepare it again).
    var settled = false
}
