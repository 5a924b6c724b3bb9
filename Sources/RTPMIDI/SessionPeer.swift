import MIDI
import Transport

/// What the session tells the outside world about one connected peer.
public struct PeerInfo: Equatable, Sendable {
    /// The peer's control-port SSRC: its identity in the session.
    public var ssrc: UInt32
    /// The name it gave in IN or OK ("" if none).
    public var name: String
    /// Its control port address.
    public var address: NetworkAddress
    /// True if we invited it, false if it invited us.
    public var weInvited: Bool
    /// The last CK exchange's result, once one completed.
    public var clock: ClockSyncResult?
    /// Losses of its packets repaired from its recovery journals.
    public var journalRepairs = 0
}

/// Why a peer left the session.
public enum PeerLeaveReason: Equatable, Sendable, CustomStringConvertible {
    /// It sent BY.
    case saidGoodbye
    /// No CK arrived within the timeout.
    case timedOut
    /// A peer we invited left our clock syncs unanswered (it crashed, or its host rebooted).
    case stoppedAnswering
    /// It invited us again with the same SSRC (it restarted): the old state is dropped.
    case reinvited
    /// Another SSRC invited us or answered from its address: it restarted, and the new one
    /// replaces it.
    case restarted
    /// We closed the session.
    case closed

    public var description: String {
        switch self {
        case .saidGoodbye: "said goodbye"
        case .timedOut: "timed out (no clock sync)"
        case .stoppedAnswering: "stopped answering clock sync"
        case .reinvited: "reconnected"
        case .restarted: "restarted (a new SSRC at its address)"
        case .closed: "session closed"
        }
    }

    /// True if the peer fell silent (it may only be slow): it is told with BY, and kept for a moment to come back.
    var fellSilent: Bool { self == .stoppedAnswering || self == .timedOut }
}

/// A peer removed a moment ago, as it was, while it may come back under the same SSRC at the same host: it fell
/// silent (a packet from it brings it back) or it is being replaced by a new session with it (which takes over what
/// we had left on at it).
struct DepartedPeer {
    var peer: SessionPeer
    /// Forgotten from then on.
    var until: MonotonicInstant
    /// True if it fell silent: a packet from it brings it back.
    var mayReturn: Bool
    /// It sent again while our invitation (sent after our BY) was unanswered: it is back unless it answers that.
    var heard = false
    /// Releases of what we had left on at it, routed while it was away: sent when it is back.
    var releases: [MIDIMessage] = []

}

/// An invitation we accepted on the control port whose data-port IN has not come yet: all a
/// single spoofable datagram can make the session keep, and only until `expires`.
struct HalfOpenPeer {
    var info: PeerInfo
    var token: UInt32
    var expires: MonotonicInstant
    /// Its place in the order invitations came in: the oldest is forgotten first, also among those of one instant.
    var arrival: UInt64
}

/// The invitations waiting for their data-port IN: by SSRC, by address (one per address: a new IN from it replaces
/// the old), and in the order they came, which is the order they expire in (each lives `halfOpenTimeout`). Every
/// operation a datagram makes costs the same however full it is: a flood of forged INs fills it at thousands a
/// second.
struct HalfOpenTable {
    private var bySSRC: [UInt32: HalfOpenPeer] = [:]
    private var byAddress: [NetworkAddress: UInt32] = [:]
    /// SSRC and arrival of each, oldest first from `head`; entries whose invitation went already are skipped.
    private var order: [(ssrc: UInt32, arrival: UInt64)] = []
    private var head = 0
    private var arrivals: UInt64 = 0

    var count: Int { bySSRC.count }
    var isEmpty: Bool { bySSRC.isEmpty }
    var values: Dictionary<UInt32, HalfOpenPeer>.Values { bySSRC.values }

    subscript(ssrc: UInt32) -> HalfOpenPeer? { bySSRC[ssrc] }

    /// The invitation that came from `address`, if any.
    func waiting(at address: NetworkAddress) -> HalfOpenPeer? {
        byAddress[address].flatMap { bySSRC[$0] }
    }

    /// Keeps `info`'s invitation until `expires`, in place of any from its SSRC or its address.
    mutating func insert(_ info: PeerInfo, token: UInt32, expires: MonotonicInstant) {
        remove(ssrc: info.ssrc)
        remove(at: info.address)
        arrivals += 1
        bySSRC[info.ssrc] = HalfOpenPeer(info: info, token: token, expires: expires, arrival: arrivals)
        byAddress[info.address] = info.ssrc
        order.append((info.ssrc, arrivals))
    }

    /// Forgets the invitation from `ssrc`, and returns it.
    @discardableResult
    mutating func remove(ssrc: UInt32) -> HalfOpenPeer? {
        guard let waiting = bySSRC.removeValue(forKey: ssrc) else { return nil }
        byAddress[waiting.info.address] = nil
        return waiting
    }

    /// Forgets the invitation from `address`, if any.
    mutating func remove(at address: NetworkAddress) {
        if let ssrc = byAddress[address] { remove(ssrc: ssrc) }
    }

    /// The oldest invitation still waiting.
    var oldest: HalfOpenPeer? {
        mutating get {
            while head < order.count {
                let entry = order[head]
                if let waiting = bySSRC[entry.ssrc], waiting.arrival == entry.arrival { return waiting }
                head += 1
            }
            compact()
            return nil
        }
    }

    /// Forgets the invitations expired at `now`; returns how many.
    mutating func removeExpired(now: MonotonicInstant) -> Int {
        var removed = 0
        while let waiting = oldest, now >= waiting.expires {
            remove(ssrc: waiting.info.ssrc)
            removed += 1
        }
        compact()
        return removed
    }

    mutating func removeAll() {
        self = HalfOpenTable()
    }

    /// Drops the skipped part of `order` once it is most of it.
    private mutating func compact() {
        guard head > 64, head * 2 > order.count else { return }
        order.removeFirst(head)
        head = 0
    }
}

/// One connected peer's state inside the session.
final class SessionPeer {
    var info: PeerInfo
    var token: UInt32
    var dataSSRC: UInt32
    var dataAddress: NetworkAddress
    var receiver: RTPMIDIReceiver
    var sender: RTPMIDISender
    /// What the peer played, as passed on: released when it leaves, repaired after loss.
    var midi = PeerMIDIState()
    /// What we have left on at the peer: its releases are sent, others' are not.
    var sent = HeldNotes()
    /// The notes and pedals we released at the peer since our last CK asking for an answer went (CK 0 as
    /// initiator, CK 1 as responder), and before it since the last one answered. The peer answers on the port our
    /// MIDI reaches it by, so an answer means it read what we sent before that CK; a peer that falls silent may
    /// take our BY before the rest (pymidi does), which is sent again when it is back.
    var releasedSinceSync = HeldNotes()
    var releasedUnconfirmed = HeldNotes()
    /// The timestamp of our last CK asking for an answer (its answer echoes it).
    var syncTicks: UInt64?
    /// Packets were lost and no journal has repaired the loss yet.
    var lossUnrepaired = false
    /// Events waiting for their time, for a peer played by timestamp; nil: played on arrival.
    var playout: PlayoutBuffer?
    /// When the last CK (or, before the first, the handshake) arrived.
    var lastClockSync: MonotonicInstant
    /// As initiator: CK exchanges started so far, when the last one was and when the next is
    /// due, and how many CK 0 in a row the peer has not answered.
    var syncsStarted = 0
    var lastSyncSent: MonotonicInstant?
    var nextSync: MonotonicInstant?
    var unansweredSyncs = 0
    /// The last RTP sequence received, and whether an RS for it is still to be sent.
    var lastSequence: UInt16?
    /// When the last RTP packet taken from it came.
    var lastPacket: MonotonicInstant?
    /// After packets behind `lastSequence` or far ahead of it (dropped): the sequence number that, next, follows on
    /// from them, and how many in a row did (see `RTPMIDISession.resynchronization`).
    var probation: (next: UInt16, streak: Int)?
    var feedbackDue: MonotonicInstant?
    var lastFeedbackSent: MonotonicInstant?
    /// When a journal-only packet is next due while our journal to the peer is unconfirmed
    /// and nothing else is sent (RFC 4696 guard packets), and the wait after that one.
    var guardDue: MonotonicInstant?
    var guardInterval: UInt64 = 0
    /// The peer's clock from the CK exchanges so far.
    private var clockEstimate = ClockOffsetEstimate()
    /// Packets prepared ahead and posted to the session's lane, oldest first, until the lane is done with them.
    var ahead: [AheadPacket] = []
    /// Packets prepared ahead and taken back so that one sent now does not overtake them, or prepared while one was
    /// queued to leave now: posted after it.
    var withdrawn: [AheadPacket] = []

    /// Notes that our CK with timestamp `ticks`, asking for an answer, goes now.
    func syncSent(ticks: UInt64) {
        releasedUnconfirmed.formUnion(releasedSinceSync)
        releasedSinceSync = HeldNotes()
        syncTicks = ticks
    }

    /// Notes an answer echoing `ticks`: if it answers our last CK, the peer read everything we sent before it.
    func syncAnswered(echoing ticks: UInt64) {
        if ticks == syncTicks { releasedUnconfirmed = HeldNotes() }
    }

    /// Takes a completed CK exchange's `result`: the peer's clock is then read through the estimate of
    /// `ClockOffsetEstimate`, which the network's asymmetry spoils least.
    func recordClockSync(_ result: ClockSyncResult, now: MonotonicInstant) {
        info.clock = clockEstimate.record(result, now: now)
    }

    init(info: PeerInfo, token: UInt32, now: MonotonicInstant, receiver: RTPMIDIReceiver, sender: RTPMIDISender) {
        self.info = info
        self.token = token
        dataSSRC = info.ssrc
        dataAddress = info.address.with(port: info.address.port &+ 1)
        self.receiver = receiver
        self.sender = sender
        lastClockSync = now
    }

    /// True if `ssrc` is the peer's control or data SSRC.
    func has(_ ssrc: UInt32) -> Bool { info.ssrc == ssrc || dataSSRC == ssrc }

    /// True if `address` is where the peer joined from for what comes on our `port`: its control port's address for
    /// the control port, its data port's for the data port (a real RTP receiver binds a source to its transport
    /// address), or either if `port` is nil.
    func isAt(_ address: NetworkAddress, on port: SessionPort? = nil) -> Bool {
        switch port {
        case .control: address == info.address
        case .data: address == dataAddress
        case nil: address == info.address || address == dataAddress
        }
    }

    /// The earliest time this peer needs the session's attention.
    var deadline: MonotonicInstant? {
        earlier(earlier(nextSync, feedbackDue), earlier(guardDue, playout?.nextDue))
    }
}

/// The earlier of two optional instants (nil when both are).
func earlier(_ a: MonotonicInstant?, _ b: MonotonicInstant?) -> MonotonicInstant? {
    guard let a else { return b }
    guard let b else { return a }
    return min(a, b)
}

/// An invitation we are sending (IN on control, then on data), and where it stands.
struct Invitation {
    enum Phase { case control, data }
    var address: NetworkAddress
    var token: UInt32
    var phase = Phase.control
    var attempts = 0
    var nextAttempt: MonotonicInstant
    /// From the control OK: the responder's identity and name.
    var peerSSRC: UInt32 = 0
    var peerName = ""
}

/// A peer we keep inviting (from `invite:` or Bonjour), and where it stands.
struct InvitationTarget {
    enum State { case waiting(until: MonotonicInstant), inviting(Invitation), connected(ssrc: UInt32) }
    var address: NetworkAddress
    var label: String
    var state: State
    /// The token of an invitation called off because the peer came back by itself before answering it: an OK for
    /// it means the peer took our BY after all, and the invitation goes on.
    var supersededToken: UInt32?
    /// INs sent since it last joined, refused or left, over every round, and when the first of them went.
    var tries = 0
    var firstTry: MonotonicInstant?
    /// When its unanswered tries may be reported again, and the wait after that (see `invitationWarningInterval`);
    /// nil before the first report.
    var nextWarning: MonotonicInstant?
    var warningInterval: UInt64 = 0

    /// It answered (joined, refused, left, or invited us): goes on in `state`, its tries and reports starting again.
    mutating func answered(then state: State) {
        self.state = state
        tries = 0
        firstTry = nil
        nextWarning = nil
    }

    /// What `RTPMIDISession.pendingInvitations` shows of it; nil once it is connected.
    var pending: PendingInvitation? {
        let shown: PendingInvitation.State
        switch state {
        case .connected: return nil
        case .inviting(let invitation): shown = invitation.phase == .control ? .inviting : .joining
        // Between two rounds of tries it is still being invited; with none since its last answer, it refused or left.
        case .waiting: shown = tries > 0 ? .inviting : .waiting
        }
        return PendingInvitation(label: label, address: address, state: shown, tries: tries, firstTry: firstTry)
    }
}

/// An invitation of ours that has not (yet) made a session: `RTPMIDISession.pendingInvitations`, and what
/// `RTPMIDISessionDelegate.session(invitationUnanswered:)` reports.
public struct PendingInvitation: Equatable, Sendable {
    public enum State: String, Sendable {
        /// INs go to its control port, none answered: nothing listens there, a firewall drops them, or it is down.
        case inviting
        /// Its control port accepted; INs go to its data port (the next one), none answered.
        case joining
        /// It refused or left: invited again after `reinvitationDelay`.
        case waiting
    }
    /// `host:port` as `invite:` gave it, or a Bonjour name.
    public var label: String
    /// Its control port.
    public var address: NetworkAddress
    public var state: State
    /// INs sent since it last joined, refused or left; all but the last one unanswered.
    public var tries: Int
    /// When the first of them went; nil before any.
    public var firstTry: MonotonicInstant?
}
