import MIDI

/// Who may join a session by inviting it (the connection policy of Apple's MIDINetworkSession).
public enum AcceptPolicy: Equatable, Sendable {
    /// Any peer that invites us.
    case anyone
    /// Only peers whose name matches one of these globs (`*`, `?`, `[abc]`).
    case listed([String])
    /// Nobody: we only take part in sessions we invite.
    case none
}

/// How a session behaves; the defaults keep macOS, iOS, rtpMIDI and rtpmidid happy.
public struct SessionConfiguration: Sendable {
    /// Our name in IN/OK (and on Bonjour).
    public var name: String
    /// Who may invite us.
    public var accept: AcceptPolicy
    /// A peer that sends no CK for this long is dropped (responders drop after ~60 s).
    public var peerTimeout: UInt64 = 60_000_000_000
    /// The most peers connected at once; an invitation beyond is answered NO.
    public var maxPeers = 32
    /// The most invitations waiting for their data port at once (a control-port IN costs one, at most about 400
    /// bytes with its name cut to 64 scalars, until its data-port IN arrives: 800 KB for all); a new one takes the oldest
    /// one's place. Forged INs at 2,000 a second leave a real peer a second for its data-port IN.
    public var halfOpenLimit = 2048
    /// An invitation whose data-port IN has not come this long after its control-port OK is
    /// forgotten (peers send both within milliseconds, and repeat IN every second).
    public var halfOpenTimeout: UInt64 = 5_000_000_000
    /// As initiator: this many quick CK exchanges after connecting...
    public var quickSyncCount = 6
    /// ...this far apart...
    public var quickSyncInterval: UInt64 = 1_500_000_000
    /// ...then one exchange this often. It is also how we notice a peer we invited has gone
    /// silent, so it is short (rtpMIDI drops peers after ~30 s of silence, macOS after ~60 s).
    public var syncInterval: UInt64 = 2_000_000_000
    /// As initiator: a CK unanswered this long is sent again...
    public var syncProbeInterval: UInt64 = 1_000_000_000
    /// ...and a peer that left this many CKs in a row unanswered is removed: 4-6 s of silence (it crashed, its
    /// host went away, or it stalls). Its notes are released, it is sent BY (a peer that was only slow then
    /// drops its side) and invited again at once. A rebooted peer is back sooner: a new SSRC from its address
    /// replaces the old one at once.
    public var unansweredSyncLimit = 4
    /// A peer removed for silence that sends CK, RS or RTP from its address under its SSRC within this long is
    /// back as it was; a new session with it within this long takes over what we had left on at it.
    public var returnGrace: UInt64 = 30_000_000_000
    /// As initiator: IN is repeated this often at first, then at doubling waits up to
    /// `invitationMaximumInterval`...
    public var invitationInterval: UInt64 = 1_000_000_000
    public var invitationMaximumInterval: UInt64 = 4_000_000_000
    /// ...and after this many the attempt is reported as failed and begins again after
    /// `invitationMaximumInterval`, so a peer that comes back is found within that.
    public var invitationAttempts = 12
    /// A target whose INs went unanswered is reported (`invitationUnanswered`) when this many did: after the quick
    /// tries of the first 4 s, so that an address with a typo in it, or nothing listening there, shows at once...
    public var invitationWarningAfter = 3
    /// ...then again this long after, at doubling waits up to `invitationWarningMaximumInterval`: an address invited
    /// for a week in vain costs the log a line an hour, not one a round (every 40 s).
    public var invitationWarningInterval: UInt64 = 60_000_000_000
    public var invitationWarningMaximumInterval: UInt64 = 3_600_000_000_000
    /// After a rejected invitation or a peer's BY, invite again after this long (a peer that
    /// said no or left on purpose is not pestered).
    public var reinvitationDelay: UInt64 = 10_000_000_000
    /// RS goes out at most this often while data arrives.
    public var receiverFeedbackInterval: UInt64 = 1_000_000_000
    /// While a peer has not confirmed our journal, a journal-only packet goes this long after
    /// the last packet (so a lost final note-off is repaired within about this)...
    public var guardPacketDelay: UInt64 = 10_000_000
    /// ...then again after twice the wait each time, up to this, until the peer confirms.
    public var guardPacketMaximumInterval: UInt64 = 1_000_000_000
    /// The largest SysEx accepted from a peer; longer ones are dropped and counted.
    public var sysExLimit = 1 << 20
    /// The largest datagram we send.
    public var maxDatagram = 1400
    /// Omit repeated channel status bytes in what we send.
    public var runningStatus = false
    /// Peers whose name matches a glob here are played by timestamp (first match wins; the
    /// rest, and every peer when empty, are played as their packets arrive).
    public var playout: [(glob: NameGlob, timestamp: Bool)] = []

    /// A session called `name` accepting by `accept`, with the default timings.
    public init(name: String, accept: AcceptPolicy = .anyone) {
        self.name = name
        self.accept = accept
    }
}
