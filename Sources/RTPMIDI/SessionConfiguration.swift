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
    /// As initiator: this many quick CK exchanges after connecting...
    public var quickSyncCount = 6
    /// ...this far apart...
    public var quickSyncInterval: UInt64 = 1_500_000_000
    /// ...then one exchange this often (at most 10 s: rtpMIDI drops peers after ~30 s).
    public var syncInterval: UInt64 = 10_000_000_000
    /// As initiator: IN is repeated this often...
    public var invitationInterval: UInt64 = 1_000_000_000
    /// ...this many times before the attempt counts as failed.
    public var invitationAttempts = 12
    /// After a failed, rejected or ended invitation, try again after this long.
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
