import MIDI
import Transport

/// Which of a session's two UDP ports a datagram uses.
public enum SessionPort: Sendable {
    /// The control port (N): IN/OK/NO/BY, RS.
    case control
    /// The data port (N+1): IN/OK/NO/BY, CK, RTP-MIDI.
    case data
}

/// Where a session's output goes: datagrams to send, MIDI received, peers coming and going.
/// Called synchronously from the session's methods, on the caller's thread.
public protocol RTPMIDISessionDelegate: AnyObject {
    /// Sends `datagram` from our `port` to `address`.
    func session(send datagram: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress)
    /// `message` arrived from `peer`, to be played at `time`; `sent` is when the peer meant it, on our clock (its RTP
    /// timestamp through the CK offset), for messages played on arrival once a CK exchange completed, with a tick's
    /// count in the peer's song.
    func session(received message: MIDIMessage, from peer: PeerInfo, at time: MonotonicInstant, sent: SenderTime?)
    /// `peer` completed the handshake on both ports.
    func session(peerJoined peer: PeerInfo)
    /// `peer` left; its held notes have already been released through `received`.
    func session(peerLeft peer: PeerInfo, reason: PeerLeaveReason)
    /// `peer`, which fell silent and left a moment ago, sent again: it is back in the session as it was.
    func session(peerReturned peer: PeerInfo)
    /// A datagram from `address` was dropped for `reason` (it is counted too).
    func session(dropped reason: String, from address: NetworkAddress)
    /// An invitation to `target` failed (rejected, or the session is full); it will be retried.
    func session(invitationFailed target: String, at address: NetworkAddress, reason: String)
    /// `invitation`'s tries went unanswered (`invitationWarningAfter` of them, then again now and then, see
    /// `invitationWarningInterval`); it goes on.
    func session(invitationUnanswered invitation: PendingInvitation)
}

extension RTPMIDISessionDelegate {
    /// A delegate that does not tell the two apart hears of unanswered invitations as failed ones.
    public func session(invitationUnanswered invitation: PendingInvitation) {
        session(invitationFailed: invitation.label, at: invitation.address, reason: "no answer to \(invitation.tries) invitations")
    }
}

/// What the session has counted since it started.
public struct SessionCounters: Equatable, Sendable {
    /// RTP-MIDI packets accepted.
    public var packetsReceived = 0
    /// MIDI messages delivered from peers.
    public var messagesReceived = 0
    /// RTP-MIDI packets sent.
    public var packetsSent = 0
    /// Datagrams dropped as malformed (bad signature, truncated, bad lengths...).
    public var malformed = 0
    /// RTP packets from an SSRC with no session.
    public var unknownSender = 0
    /// RTP, CK, RS and BY under a peer's SSRC from an address it did not join from (another host, or another port of
    /// its host): dropped, whatever they say. A peer is where it joined from; its SSRC is in every packet it sends.
    public var wrongAddress = 0
    /// RTP packets more than `RTPMIDISession.maxDropout` ahead of the peer's last: dropped unless the third in a row,
    /// each following on from the one before (the sender really moved on; see `resynchronization`).
    public var outOfWindow = 0
    /// CK exchanges ignored for an impossible round trip (negative or over 10 s: times echoed wrong).
    public var badClockSyncs = 0
    /// Missing RTP sequence numbers seen (packets lost or reordered on the way).
    public var sequenceGaps = 0
    /// Invitations we turned down (policy, version, SSRC collision, data IN without control,
    /// a full session).
    public var invitationsRejected = 0
    /// Of those, the ones turned down because `maxPeers` peers were there already.
    public var invitationsOverLimit = 0
    /// Invitations forgotten because their data-port IN never came.
    public var halfOpenExpired = 0
    /// Invitations waiting for their data port forgotten to make room for a newer one (`halfOpenLimit`).
    public var halfOpenEvicted = 0
    /// Times a peer used our own SSRC.
    public var ssrcCollisions = 0
    /// SysEx messages dropped: longer than the limit, or a segment lost or cancelled.
    public var sysExDropped = 0
    /// Events of peers played by timestamp that arrived after their time (played at once).
    public var lateEvents = 0
    /// RTP packets that arrived after a later one (or twice): dropped, since the journal of
    /// the later one repaired what they held.
    public var latePackets = 0
    /// Journals whose chapter Q put a running song further on than the time since the peer's last packet allows (or
    /// behind it): their chapter Q was not followed.
    public var implausibleSongPositions = 0
    /// Losses repaired from a recovery journal, and the MIDI messages the repairs played.
    public var repairs = 0
    public var repairMessages = 0
    /// Journals to peers that outgrew a datagram: the history restarted, so a loss just
    /// before could not be repaired.
    public var journalOverflows = 0
    /// Journal-only packets sent because our history was unconfirmed and nothing else went.
    public var guardPackets = 0
    /// Peers removed for silence that sent again within `returnGrace` and were taken back.
    public var peersReturned = 0
    /// Packets prepared ahead sent when prepared (early) because the lane had no room.
    public var aheadSentEarly = 0
    /// Packets (of notes, say) that went into the lane behind a tick due within `RTPMIDISession.imminence`, instead
    /// of leaving at once.
    public var settledBehindAhead = 0
    /// INs of ours that went unanswered until the next try was due (an address where nothing listens costs one
    /// every 1-4 s).
    public var invitationsUnanswered = 0
}

/// An AppleMIDI session, sans I/O: feed it datagrams and the time, call `tick` at
/// `nextDeadline`; it answers through its delegate. Many peers, both roles. Not thread-safe:
/// use it from one thread or serial queue.
public final class RTPMIDISession {
    /// The configuration in force.
    public let configuration: SessionConfiguration
    /// Our SSRC (changes only on a collision while no peer is connected).
    /// The peer whose clock this instance follows, synced more often (`followClock`).
    public private(set) var followedPeer: UInt32?
    /// Nanoseconds between CK exchanges with the followed peer.
    public static let followedSyncInterval: UInt64 = 250_000_000
    /// True while this instance runs a jam (its owner says): every peer we invited exchanges CK every
    /// `followedSyncInterval`, not at the regular cadence, so that the offset a song's first ticks are read
    /// through has a window full of samples before anyone starts. (At the regular cadence, with 0-50 ms of jitter
    /// each way, a follower's first beats came up to 14 ms early until its own exchanges, from the Start on, had
    /// found quicker legs: the acceptance scenario.)
    public var syncsOften = false
    public private(set) var ssrc: UInt32
    /// What has been counted.
    public private(set) var counters = SessionCounters()
    /// Where packets prepared ahead wait for their time (`sendAhead`); without one, they leave when prepared.
    public var lane: (any PacketLane)?

    private unowned let delegate: RTPMIDISessionDelegate
    private let random: () -> UInt32
    /// Connected peers by control SSRC, and the control SSRC of each data SSRC.
    private var peers: [UInt32: SessionPeer] = [:]
    /// Invitations accepted on the control port and waiting for the data port, by SSRC.
    private var halfOpen = HalfOpenTable()
    private var controlSSRCByDataSSRC: [UInt32: UInt32] = [:]
    /// Peers removed a moment ago that may come back (see `DepartedPeer`), oldest first; at most `maxPeers`.
    private var departed: [DepartedPeer] = []
    private var targets: [InvitationTarget] = []
    private var datagram: [UInt8] = []
    /// The time of the last message sent: guard packets are timed from it.
    private var lastSendTime = MonotonicInstant(nanoseconds: 0)

    /// A session answering through `delegate`; `random` supplies SSRCs, tokens and sequence
    /// numbers (non-zero values).
    public init(configuration: SessionConfiguration, delegate: RTPMIDISessionDelegate,
                random: @escaping () -> UInt32 = { UInt32.random(in: 1...UInt32.max) }) {
        self.configuration = configuration
        self.delegate = delegate
        self.random = random
        ssrc = random()
        datagram.reserveCapacity(64)
    }

    /// The connected peers.
    public var connectedPeers: [PeerInfo] {
        peers.values.map(\.info).sorted { $0.name < $1.name }
    }

    // MARK: Receiving

    /// Handles one datagram that arrived on `port` from `address` at `now`.
    public func receive(_ bytes: UnsafeRawBufferPointer, on port: SessionPort, from address: NetworkAddress,
                        now: MonotonicInstant) {
        if SessionPacket.isSessionPacket(bytes) {
            do {
                handle(try SessionPacket(parsing: bytes), on: port, from: address, now: now)
            } catch {
                drop("\(error)", from: address)
            }
        } else if port == .data {
            receiveRTP(bytes, from: address, now: now)
        } else {
            drop("RTP on the control port", from: address)
        }
    }

    private func handle(_ packet: SessionPacket, on port: SessionPort, from address: NetworkAddress, now: MonotonicInstant) {
        switch packet {
        case .invitation(let h): port == .control ? controlInvitation(h, from: address, now: now)
                                                   : dataInvitation(h, from: address, now: now)
        case .accepted(let h): accepted(h, on: port, from: address, now: now)
        case .rejected(let h): rejected(h, from: address, now: now)
        case .bye(let h): bye(h, from: address, now: now)
        case .clockSync(let ck): clockSync(ck, on: port, from: address, now: now)
        case .receiverFeedback(let ssrc, let sequence):
            guard case .peer(let peer) = sender(ssrc, on: port, from: address, now: now) else { return }
            peer.sender.confirm(sequence)
            // A sender put back when packets are taken back keeps what the peer confirmed meanwhile.
            for index in peer.ahead.indices { peer.ahead[index].senderBefore.confirm(sequence) }
        case .ignored:
            break
        }
    }

    private func controlInvitation(_ h: SessionPacket.Handshake, from address: NetworkAddress, now: MonotonicInstant) {
        let name = Self.peerName(h)
        if let refusal = refusal(of: h, name: name) {
            refuse(h, name: name, from: address, because: refusal)
            return
        }
        // A peer is its SSRC at its address: the same SSRC from another host is someone else (or a forgery).
        if let known = peers[h.ssrc]?.info ?? halfOpen[h.ssrc]?.info, !known.address.isSameHost(as: address) {
            counters.ssrcCollisions += 1
            refuse(h, name: name, from: address, because: "SSRC \(h.ssrc) is '\(known.name)' at \(known.address)")
            return
        }
        // The peer restarted and invites again: start afresh (a new SSRC from its address replaces it too).
        if let existing = peers[h.ssrc] {
            remove(existing, reason: .reinvited, now: now)
        } else if let existing = peers.values.first(where: { $0.info.address == address }) {
            remove(existing, reason: .restarted, now: now)
        }
        halfOpen.remove(ssrc: h.ssrc)
        halfOpen.remove(at: address)
        if let full = fullSession {
            counters.invitationsOverLimit += 1
            refuse(h, name: name, from: address, because: full)
            return
        }
        if halfOpen.count >= configuration.halfOpenLimit, let oldest = halfOpen.oldest {
            // A flood of forged INs fills every slot; the newest takes the oldest's, so a real peer, whose data-port
            // IN follows our OK within milliseconds, still completes while the flood goes on.
            halfOpen.remove(ssrc: oldest.info.ssrc)
            counters.halfOpenEvicted += 1
        }
        let info = PeerInfo(ssrc: h.ssrc, name: name, address: address, weInvited: false, clock: nil)
        halfOpen.insert(info, token: h.token, expires: now.advanced(byNanoseconds: configuration.halfOpenTimeout))
        for index in targets.indices where targets[index].address == address {
            targets[index].answered(then: .connected(ssrc: h.ssrc)) // it invited us first: no need to invite it
        }
        sendSession(.accepted(.init(token: h.token, ssrc: ssrc, name: configuration.name)), from: .control, to: address)
    }

    /// Why the session takes no more peers (`maxPeers` are connected), or nil.
    private var fullSession: String? {
        peers.count >= configuration.maxPeers ? "the session is full (max-peers: \(configuration.maxPeers))" : nil
    }

    /// Answers an invitation that came on `port` NO, counts it and reports why.
    private func refuse(_ h: SessionPacket.Handshake, name: String, from address: NetworkAddress, because reason: String,
                        on port: SessionPort = .control) {
        counters.invitationsRejected += 1
        sendSession(.rejected(.init(token: h.token, ssrc: ssrc, name: configuration.name)), from: port, to: address)
        delegate.session(dropped: "invitation from '\(name)' refused: \(reason)", from: address)
    }

    /// Why an invitation is turned down, or nil to accept it.
    private func refusal(of h: SessionPacket.Handshake, name: String) -> String? {
        guard h.version == 2 else { return "protocol version \(h.version), only 2 is spoken" }
        switch configuration.accept {
        case .anyone: break
        case .none: return "this session accepts no invitations (accept: none)"
        case .listed(let globs):
            guard globs.contains(where: { NameGlob($0).matches(name) }) else { return "'\(name)' is not in the accept list" }
        }
        if h.ssrc == ssrc {
            counters.ssrcCollisions += 1
            // Our SSRC is ours to change only while no peer knows it.
            guard peers.isEmpty, halfOpen.isEmpty, !targets.contains(where: { if case .inviting = $0.state { true } else { false } }) else {
                return "it uses our SSRC"
            }
            repeat { ssrc = random() } while ssrc == h.ssrc
        }
        return nil
    }

    private func dataInvitation(_ h: SessionPacket.Handshake, from address: NetworkAddress, now: MonotonicInstant) {
        // Matched by SSRC, or for initiators that use another SSRC on the data port by the control port's IN (the port
        // below), if the token is the same.
        let waiting = halfOpen[h.ssrc] ?? halfOpen.waiting(at: address.with(port: address.port &- 1))
        if let waiting, waiting.token == h.token, waiting.info.address.isSameHost(as: address) {
            halfOpen.remove(ssrc: waiting.info.ssrc)
            if let full = fullSession {
                counters.invitationsOverLimit += 1
                refuse(h, name: waiting.info.name, from: address, because: full, on: .data)
                return
            }
            let peer = makePeer(waiting.info, token: waiting.token, now: now)
            peers[waiting.info.ssrc] = peer
            acceptData(h, for: peer, from: address)
            delegate.session(peerJoined: peer.info)
            takeOver(peer, now: now)
        } else if let peer = peer(h.ssrc), peer.token == h.token, peer.isAt(address, on: .data) {
            acceptData(h, for: peer, from: address) // a repeated IN (our OK was lost) is answered, not announced
        } else {
            counters.invitationsRejected += 1
            sendSession(.rejected(.init(token: h.token, ssrc: ssrc, name: configuration.name)), from: .data, to: address)
            delegate.session(dropped: "data-port invitation without a control-port session", from: address)
        }
    }

    /// Notes `peer`'s data-port SSRC and address and answers its data-port IN with OK.
    private func acceptData(_ h: SessionPacket.Handshake, for peer: SessionPeer, from address: NetworkAddress) {
        peer.dataSSRC = h.ssrc
        peer.dataAddress = address
        controlSSRCByDataSSRC[h.ssrc] = peer.info.ssrc
        sendSession(.accepted(.init(token: h.token, ssrc: ssrc, name: configuration.name)), from: .data, to: address)
    }

    private func accepted(_ h: SessionPacket.Handshake, on port: SessionPort, from address: NetworkAddress, now: MonotonicInstant) {
        if port == .control, let index = targets.firstIndex(where: { $0.supersededToken == h.token }) {
            // The peer that came back by itself took our BY after all and accepted the invitation we sent with it:
            // the invitation goes on, and its new session replaces the old one.
            targets[index].supersededToken = nil
            targets[index].state = .inviting(Invitation(address: targets[index].address, token: h.token, nextAttempt: now))
        }
        guard let index = targets.firstIndex(where: {
            if case .inviting(let invitation) = $0.state { invitation.token == h.token } else { false }
        }), case .inviting(var invitation) = targets[index].state else { return } // late or duplicate OK
        switch (invitation.phase, port) {
        case (.control, .control):
            invitation.peerSSRC = h.ssrc
            invitation.peerName = Self.peerName(h)
            invitation.phase = .data
            invitation.attempts = 1
            invitation.nextAttempt = now.advanced(byNanoseconds: configuration.invitationInterval)
            targets[index].state = .inviting(invitation)
            sendInvitation(index, invitation, now: now)
        case (.data, .data):
            if let existing = peers[invitation.peerSSRC] { remove(existing, reason: .reinvited, now: now) }
            if let full = fullSession {
                sendSession(.bye(.init(token: invitation.token, ssrc: ssrc, name: nil)), from: .control, to: invitation.address)
                targets[index].answered(then: .waiting(until: now.advanced(byNanoseconds: configuration.reinvitationDelay)))
                delegate.session(invitationFailed: targets[index].label, at: targets[index].address, reason: full)
                return
            }
            let info = PeerInfo(ssrc: invitation.peerSSRC, name: invitation.peerName, address: invitation.address,
                                weInvited: true, clock: nil)
            let peer = makePeer(info, token: invitation.token, now: now)
            peer.dataSSRC = h.ssrc // pymidi answers the data IN with a different SSRC
            peer.dataAddress = address
            peers[info.ssrc] = peer
            controlSSRCByDataSSRC[h.ssrc] = info.ssrc
            targets[index].answered(then: .connected(ssrc: info.ssrc))
            delegate.session(peerJoined: info)
            takeOver(peer, now: now)
            startClockSync(peer, now: now)
        default:
            break
        }
    }

    private func rejected(_ h: SessionPacket.Handshake, from address: NetworkAddress, now: MonotonicInstant) {
        guard let index = targets.firstIndex(where: {
            if case .inviting(let invitation) = $0.state { invitation.token == h.token } else { false }
        }) else { return }
        targets[index].answered(then: .waiting(until: now.advanced(byNanoseconds: configuration.reinvitationDelay)))
        delegate.session(invitationFailed: targets[index].label, at: targets[index].address,
                         reason: "'\(Self.peerName(h))' rejected the invitation")
    }

    private func bye(_ h: SessionPacket.Handshake, from address: NetworkAddress, now: MonotonicInstant) {
        // macOS sends BY with token 0 and reuses SSRCs: match by SSRC, not token.
        if let peer = peer(h.ssrc), peer.isAt(address) {
            remove(peer, reason: .saidGoodbye, now: now)
        } else if let index = targets.firstIndex(where: {
            if case .inviting(let invitation) = $0.state { invitation.address.isSameHost(as: address) && invitation.peerSSRC == h.ssrc }
            else { false }
        }) {
            targets[index].answered(then: .waiting(until: now.advanced(byNanoseconds: configuration.reinvitationDelay)))
        }
    }

    private func clockSync(_ ck: SessionPacket.ClockSync, on port: SessionPort, from address: NetworkAddress,
                           now: MonotonicInstant) {
        let peer: SessionPeer
        switch sender(ck.ssrc, on: port, from: address, now: now) {
        case .peer(let known): peer = known
        case .departed, .wrongAddress: return // a departed one answering late: see `returned`
        case .stranger:
            if ck.count == 1, let old = peers.values.first(where: { $0.info.weInvited && $0.dataAddress == address }) {
                // Our CK was answered from the peer's address under another SSRC: it restarted
                // (pymidi answers CK from anyone). Let the old one go and invite the new one now.
                remove(old, reason: .restarted, now: now)
                return
            }
            counters.unknownSender += 1
            delegate.session(dropped: "CK from SSRC \(ck.ssrc), which has no session", from: address)
            return
        }
        peer.lastClockSync = now
        let (ts1, ts2, _) = ck.timestamps
        switch ck.count {
        case 0: // we answer as responder, whichever side invited
            let ts2 = SessionClock.ticks(now)
            peer.syncSent(ticks: ts2)
            sendSession(.clockSync(.init(ssrc: ssrc, count: 1, timestamps: (ts1, ts2, 0))), from: .data, to: address)
        case 1: // the answer to our CK 0: finish the exchange
            peer.unansweredSyncs = 0
            peer.syncAnswered(echoing: ts1)
            if let sent = peer.lastSyncSent {
                let interval = peer.info.ssrc == followedPeer || syncsOften ? Self.followedSyncInterval
                    : peer.syncsStarted < configuration.quickSyncCount ? configuration.quickSyncInterval
                    : configuration.syncInterval
                peer.nextSync = sent.advanced(byNanoseconds: interval)
            }
            let ts3 = SessionClock.ticks(now)
            sendSession(.clockSync(.init(ssrc: ssrc, count: 2, timestamps: (ts1, ts2, ts3))), from: .data, to: address)
            record(ClockSyncResult(ts1: ts1, ts2: ts2, ts3: ts3), of: peer, from: address, now: now)
        default: // count 2 is never answered (a peer that did looped forever)
            peer.syncAnswered(echoing: ts2)
            let result = ClockSyncResult(ts1: ts1, ts2: ts2, ts3: ck.timestamps.2)
            // Stored from our side: our clock minus the initiator's (wrapping, like the clocks:
            // a peer's times are arbitrary 64-bit values and -Int64.min would trap).
            record(ClockSyncResult(roundTrip: result.roundTrip, offset: 0 &- result.offset), of: peer, from: address, now: now)
        }
    }

    /// Takes the result of a CK exchange with `peer` completed `now`, unless its round trip is impossible (negative or
    /// over 10 s, times the peer echoed wrong), which is dropped and counted.
    private func record(_ result: ClockSyncResult, of peer: SessionPeer, from address: NetworkAddress, now: MonotonicInstant) {
        guard (0...100_000).contains(result.roundTrip) else {
            counters.badClockSyncs += 1
            delegate.session(dropped: "CK exchange with \(peer.info.name) with a round trip of \(result.roundTrip) ticks", from: address)
            return
        }
        peer.recordClockSync(result, now: now)
    }

    private func receiveRTP(_ bytes: UnsafeRawBufferPointer, from address: NetworkAddress, now: MonotonicInstant) {
        let header: RTPHeader, payload: Range<Int>
        do {
            (header, payload) = try RTPHeader.parse(bytes)
        } catch {
            drop("\(error)", from: address)
            return
        }
        let peer: SessionPeer
        switch sender(header.ssrc, on: .data, from: address, now: now) {
        case .peer(let known): peer = known
        case .departed, .wrongAddress: return // see `returned`; a departed one's journal repairs what it held
        case .stranger:
            counters.unknownSender += 1
            delegate.session(dropped: "RTP from SSRC \(header.ssrc), which has no session", from: address)
            return
        }
        if let last = peer.lastSequence {
            let distance = Int(Int16(bitPattern: header.sequence &- last))
            if distance <= 0 || distance > Self.maxDropout {
                // A duplicate or one overtaken (what it held was repaired or passed on), or far ahead: dropped, and the
                // sequence stays, unless this is the last of a run of packets in a row, each following on from the one
                // before, that says the peer's count is there: it restarted it, or a forged packet pushed ours ahead
                // (which would otherwise make every real packet after it late). Behind, the run is longer than the
                // network reorders packets: a jittery network delivers a few overtaken ones in a row, already repaired.
                let streak = peer.probation?.next == header.sequence ? peer.probation!.streak + 1 : 1
                guard streak >= (distance <= 0 ? Self.resynchronization.behind : Self.resynchronization.ahead) else {
                    peer.probation = (header.sequence &+ 1, streak)
                    if distance <= 0 {
                        counters.latePackets += 1
                    } else {
                        counters.outOfWindow += 1
                        delegate.session(dropped: "RTP sequence \(header.sequence) from '\(peer.info.name)' is \(distance) "
                                         + "ahead of its last, \(last)", from: address)
                    }
                    return
                }
                peer.lossUnrepaired = true // its journal says what it holds
            } else if distance > 1 {
                counters.sequenceGaps += Int(distance) - 1
                peer.lossUnrepaired = true
            }
        }
        let firstPacket = peer.lastSequence == nil
        let sysExDroppedBefore = peer.receiver.sysExTooLong + peer.receiver.sysExIncomplete
        peer.playout?.packetArrived(timestamp: header.timestamp, now: now)
        /// `ticks`: the message's time after the packet's RTP timestamp (nil for a repair, which has none).
        func pass(_ message: MIDIMessage, ticks: UInt32?) {
            counters.messagesReceived += 1
            if peer.playout != nil {
                // Tracked when queued, not when played: a repair compares the journal with what
                // we have accepted, and would play again what still waits for its time.
                peer.midi.track(message)
                if !peer.playout!.schedule(message, ticks: ticks ?? 0, now: now) { counters.lateEvents += 1 }
            } else {
                deliver(message, from: peer, at: now, meant: ticks.map { header.timestamp &+ $0 })
            }
        }
        let packet = UnsafeRawBufferPointer(rebasing: bytes[payload])
        do {
            try peer.receiver.receive(packet, validated: { journal in
                guard let journal else {
                    if peer.lossUnrepaired { peer.midi.forgetPosition() }
                    return
                }
                // The first packet shows no gap, but its journal's history may begin before it: packets it
                // overtook (a master's Start, sent in the same instant as its first tick) or that were lost. They
                // are repaired from it now; dropped as late when they come, they would be lost for good.
                if firstPacket, packet[journal].count >= 3,
                   UInt16(packet[journal.lowerBound + 1]) << 8 | UInt16(packet[journal.lowerBound + 2]) &+ 1 != header.sequence {
                    peer.lossUnrepaired = true
                }
                guard peer.lossUnrepaired else { return }
                repair(peer, journal: UnsafeRawBufferPointer(rebasing: packet[journal]), from: address, now: now) {
                    pass($0, ticks: nil)
                }
            }) { message, ticks in pass(message, ticks: ticks) }
        } catch {
            drop("\(error)", from: address)
            return
        }
        if peer.receiver.sysExTooLong + peer.receiver.sysExIncomplete > sysExDroppedBefore {
            counters.sysExDropped += 1
            delegate.session(dropped: "a SysEx from '\(peer.info.name)' was longer than \(configuration.sysExLimit) bytes "
                             + "or lost a segment; it was not passed on", from: address)
        }
        counters.packetsReceived += 1
        peer.lastSequence = header.sequence
        peer.lastPacket = now
        peer.probation = nil
        if peer.feedbackDue == nil {
            let earliest = peer.lastFeedbackSent?.advanced(byNanoseconds: configuration.receiverFeedbackInterval) ?? now
            peer.feedbackDue = max(now, earliest)
        }
    }

    /// After loss, hands `pass` the MIDI that brings what `peer` played, as we passed it on,
    /// to the state its `journal` codes (see PeerMIDIState.repair).
    private func repair(_ peer: SessionPeer, journal bytes: UnsafeRawBufferPointer, from address: NetworkAddress,
                        now: MonotonicInstant, _ pass: (MIDIMessage) -> Void) {
        var journal: RecoveryJournal
        do {
            journal = try RecoveryJournal(parsing: bytes)
        } catch { // unreachable: the walk checked the journal with the same code
            drop("\(error)", from: address)
            return
        }
        // Its chapter Q's count of a running song is checked against ours: the ticks lost since the last packet can
        // be no more than the fastest clock makes in that time. A count beyond (a forged journal's, say, which would
        // move the song a thousand bars on) is not followed, nor the rest of the chapter: the song goes on at our count.
        var followsCount = true
        if let q = journal.system?.sequencer, q.running, let clock = q.clock, let ahead = peer.midi.ticks(to: clock),
           let last = peer.lastPacket {
            let elapsed = Double(now.nanoseconds - min(last.nanoseconds, now.nanoseconds)) / 1e9
            if ahead < 0 || Double(ahead) > elapsed * Self.fastestTicksPerSecond + Self.songTickTolerance {
                journal.system?.sequencer = nil
                followsCount = false
                counters.implausibleSongPositions += 1
                delegate.session(dropped: "a journal from '\(peer.info.name)' puts its song \(ahead) ticks on from ours "
                                 + "after \(Int(elapsed * 1000)) ms: not followed", from: address)
            }
        }
        peer.lossUnrepaired = false
        counters.repairs += 1
        peer.info.journalRepairs += 1
        let before = peer.midi // repairing changes peer.midi: compare with it as it was
        before.repair(from: journal) { message in
            counters.repairMessages += 1
            pass(message)
        }
        // The journal covers every packet lost if its checkpoint is one we have.
        guard followsCount else { return }
        peer.midi.adoptPosition(from: journal, coversLoss: peer.lastSequence.map { Int16(bitPattern: journal.checkpoint &- $0) <= 0 } ?? false)
    }

    /// Passes `message` from `peer` on, noting what it leaves held; `meant` is its RTP timestamp (nil for a repair).
    private func deliver(_ message: MIDIMessage, from peer: SessionPeer, at time: MonotonicInstant, meant: UInt32?) {
        peer.midi.track(message)
        let sent = meant.flatMap { senderTime($0, of: peer, now: time) }.map { instant in
            // The CK round trip (100 µs ticks) bounds how long the message can have been on the way.
            SenderTime(instant, roundTrip: peer.info.clock.map { UInt64(max(0, $0.roundTrip)) * SessionClock.nanosecondsPerTick },
                       songTick: message == .timingClock ? peer.midi.songTick : nil)
        }
        delegate.session(received: message, from: peer.info, at: time, sent: sent)
    }

    /// When `peer` meant a message it stamped `ticks` (its RTP timestamp and delta), on our clock: through the CK
    /// offset, unwrapped around `now`, in the middle of its 100 µs tick; nil before the first CK exchange.
    private func senderTime(_ ticks: UInt32, of peer: SessionPeer, now: MonotonicInstant) -> MonotonicInstant? {
        guard let offset = peer.info.clock?.offset else { return nil }
        let ours = ticks &+ UInt32(truncatingIfNeeded: offset)
        let nowTicks = SessionClock.ticks(now)
        let distance = Int64(Int32(bitPattern: ours &- UInt32(truncatingIfNeeded: nowTicks)))
        guard distance >= 0 || nowTicks >= distance.magnitude else { return nil }
        let tick = distance >= 0 ? nowTicks + UInt64(distance) : nowTicks - distance.magnitude
        return MonotonicInstant(nanoseconds: tick * SessionClock.nanosecondsPerTick + SessionClock.nanosecondsPerTick / 2)
    }

    /// Exchanges CK with `ssrc` every `followedSyncInterval` from `now`, whoever invited, while its clock is
    /// followed (nil: the regular cadence again): the offset its ticks are read through then has fresh samples to
    /// pick the shortest round trip from.
    public func followClock(of ssrc: UInt32?, now: MonotonicInstant) {
        guard ssrc != followedPeer else { return }
        if let old = followedPeer.flatMap(peer), !old.info.weInvited { old.nextSync = nil }
        followedPeer = ssrc
        if let peer = ssrc.flatMap(peer) { peer.nextSync = now }
    }

    // MARK: Sending

    /// Queues `message`, due at `time`, for every connected peer (or only those `accepting`);
    /// packets go out when full and on `flush`. A note-off or pedal release goes only to the peers
    /// that were sent its note-on or press (not to one that joined after it).
    public func send(_ message: MIDIMessage, at time: MonotonicInstant, to accepting: (PeerInfo) -> Bool = { _ in true }) {
        let tick = UInt32(truncatingIfNeeded: SessionClock.ticks(time))
        lastSendTime = time
        forEachRecipient(of: message, accepting: accepting) { peer in
            sending(to: peer, finishes: peer.sender.sends(appending: message, tick: tick)) { sender, send in
                sender.append(message, tick: tick, send)
            }
        }
    }

    /// Runs `body` for each connected peer `accepting` that `message` goes to (a note-off or pedal release only to
    /// those sent its note-on or press), noting the release for the journal; a release for a peer away for a moment
    /// is kept for when it is back.
    private func forEachRecipient(of message: MIDIMessage, accepting: (PeerInfo) -> Bool, _ body: (SessionPeer) -> Void) {
        for peer in peers.values where accepting(peer.info) && peer.sent.admit(message) {
            peer.releasedSinceSync.insertRelease(message)
            body(peer)
        }
        for index in departed.indices where accepting(departed[index].peer.info)
            && departed[index].peer.sent.admitRelease(message) {
            departed[index].releases.append(message)
        }
    }

    /// Prepares `message`, due at `time`, for every connected peer (or only those `accepting`) now, and posts the
    /// packets to the lane, which sends them at `time`: a clock output or a drum's note that leaves on time whatever
    /// holds this session's thread then. `owner` (the jam's clock, the drums) can take it back (`withdrawAhead`). What
    /// is prepared ahead leaves in the order of its time: what is due after it is taken back and prepared again
    /// behind it. A packet sent to a peer before that takes its prepared packets back just before it leaves, and they
    /// are prepared again right after it (`sending`), so that the peer's sequence numbers keep their order.
    /// Without a lane, it is `send`. As `send`, a note-off goes only to the peers that were sent its note-on.
    public func sendAhead(_ message: MIDIMessage, at time: MonotonicInstant, owner: Int,
                          to accepting: (PeerInfo) -> Bool = { _ in true }) {
        guard lane != nil else { return send(message, at: time, to: accepting) }
        forEachRecipient(of: message, accepting: accepting) { peer in
            // Not while commands wait in the sender: they would leave with the first packet posted; `flush` posts
            // them after those.
            let postsNow = peer.sender.isEmpty
            if postsNow { peer.withdrawn = Self.inOrder(takeBackAhead(peer, dueAfter: time.receded(byNanoseconds: 1)), peer.withdrawn) }
            if let last = peer.withdrawn.lastIndex(where: { $0.time <= time }), peer.withdrawn[last].time == time {
                // Messages due at one instant leave in one packet (a late joiner's Song Position, Continue and tick),
                // so that the network cannot reorder or lose one without the others. One Start, Stop or Continue at an
                // instant, the last (a flood of starts and stops before a bar line handed both out for it), as the
                // jam keeps for the outputs it hands messages when due.
                if message.startsOrStops { peer.withdrawn[last].messages.removeAll { $0.message.startsOrStops } }
                peer.withdrawn[last].messages.append((message, owner))
            } else {
                let index = peer.withdrawn.firstIndex { $0.time > time } ?? peer.withdrawn.endIndex
                peer.withdrawn.insert(AheadPacket(messages: [(message, owner)], time: time, senderBefore: peer.sender), at: index)
            }
            if postsNow { repostWithdrawn(peer) }
        }
    }

    /// Takes back what `owner` prepared ahead that is due after `time` (the song it belongs to stopped or changed
    /// hands, the drums stopped); what is due by then leaves as prepared, and so does a note-off whose note-on is not
    /// taken back (it went out, or was due by `time`).
    public func withdrawAhead(after time: MonotonicInstant, owner: Int) {
        for peer in peers.values {
            var notes = NoteWithdrawal()
            peer.withdrawn = Self.inOrder(takeBackAhead(peer), peer.withdrawn).compactMap { packet in
                guard packet.time > time else { return packet }
                var packet = packet
                packet.messages = packet.messages.filter { !($0.owner == owner && notes.takesBack($0.message)) }
                return packet.messages.isEmpty ? nil : packet
            }
            repostWithdrawn(peer)
        }
    }

    /// The packets of `taken` (back from the lane) and `waiting` (to be posted), both in the order of their time, in
    /// that order; at one instant, those taken back first (they were posted first).
    private static func inOrder(_ taken: [AheadPacket], _ waiting: [AheadPacket]) -> [AheadPacket] {
        guard let first = waiting.first, let last = taken.last, last.time > first.time else { return taken + waiting }
        return (taken + waiting).enumerated().sorted { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }.map(\.element)
    }

    /// Sends every queued message now; while a peer's journal is unconfirmed, a journal-only
    /// packet follows if nothing else is sent for a while (see `guardPacketDelay`).
    public func flush() {
        for peer in peers.values where !peer.sender.isEmpty || !peer.withdrawn.isEmpty { flush(peer) }
    }

    private func flush(_ peer: SessionPeer) {
        if !peer.sender.isEmpty {
            sending(to: peer, finishes: true) { sender, send in sender.flush(send) }
            if peer.sender.hasUnconfirmedHistory {
                peer.guardInterval = configuration.guardPacketDelay
                peer.guardDue = lastSendTime.advanced(byNanoseconds: peer.guardInterval)
            }
        }
        repostWithdrawn(peer)
    }

    /// Prepares `packet` for `peer` and posts it to the lane. A full lane (see `TimedDatagrams`) sends it now,
    /// early, after what waits there for the peer, taken back and sent now too: never out of order.
    private func post(_ packet: AheadPacket, to peer: SessionPeer) {
        guard let lane else { return }
        var packet = packet
        pruneAhead(peer)
        let tick = UInt32(truncatingIfNeeded: SessionClock.ticks(packet.time))
        guard lane.hasRoom else {
            for early in Self.inOrder(takeBackAhead(peer), [packet]) {
                counters.aheadSentEarly += 1
                withSender(of: peer) { sender, send in
                    for (message, _) in early.messages {
                        sender.append(message, tick: UInt32(truncatingIfNeeded: SessionClock.ticks(early.time)), send)
                    }
                    sender.flush(send)
                }
            }
            return
        }
        packet.senderBefore = peer.sender
        packet.tickets = [] // posted again after being taken back: the old tickets are done
        // Never before a packet still waiting (one settled behind a tick, with the ticks before it): the lane sends by
        // time, and the sequence numbers must leave in order.
        if let waiting = peer.ahead.last, waiting.time > packet.time, !waiting.tickets.allSatisfy(lane.isDone) {
            packet.time = waiting.time
        }
        let post = { (bytes: UnsafeRawBufferPointer) in
            self.counters.packetsSent += 1
            packet.tickets.append(lane.post(bytes, to: peer.dataAddress, at: packet.time))
        }
        countingOverflows(of: peer) {
            for (message, _) in packet.messages { peer.sender.append(message, tick: tick, post) }
            peer.sender.flush(post)
        }
        peer.ahead.append(packet)
        // Its journal goes at its time: a guard packet is due only if nothing follows it for a while.
        if peer.sender.hasUnconfirmedHistory {
            peer.guardInterval = configuration.guardPacketDelay
            peer.guardDue = packet.time.advanced(byNanoseconds: peer.guardInterval)
        }
    }

    /// Posts again, in order, the packets taken back for one sent before them; not while commands wait in the
    /// sender (they would leave with the first): `flush` posts them after those.
    private func repostWithdrawn(_ peer: SessionPeer) {
        guard peer.sender.isEmpty else { return }
        let withdrawn = peer.withdrawn
        peer.withdrawn = []
        for packet in withdrawn { post(packet, to: peer) }
    }

    /// Forgets the packets the lane is done with, from the oldest.
    private func pruneAhead(_ peer: SessionPeer) {
        guard let lane else { return }
        let done = peer.ahead.prefix { $0.tickets.allSatisfy(lane.isDone) }.count
        peer.ahead.removeFirst(done)
    }

    /// Takes back `peer`'s prepared packets that have not left (only those due after `limit`, if given), newest first
    /// (so that none leaves after a later one was taken back), down to a settled one at most, and rewinds its sender to
    /// before the oldest of them (what waits in it stays). Returns them, oldest first.
    private func takeBackAhead(_ peer: SessionPeer, dueAfter limit: MonotonicInstant? = nil) -> [AheadPacket] {
        guard let lane, !peer.ahead.isEmpty else { return [] }
        var first = peer.ahead.count
        taking: while first > 0, !peer.ahead[first - 1].settled, limit.map({ peer.ahead[first - 1].time > $0 }) ?? true {
            for ticket in peer.ahead[first - 1].tickets.reversed() {
                guard lane.takeBack(ticket) else { break taking }
                counters.packetsSent -= 1
            }
            first -= 1
        }
        let taken = Array(peer.ahead[first...])
        if let oldest = taken.first { peer.sender.rewind(to: oldest.senderBefore) }
        peer.ahead.removeSubrange(first...)
        return taken
    }

    /// Sends `peer` now the releases routed while it was away.
    private func send(releases: [MIDIMessage], to peer: SessionPeer, now: MonotonicInstant) {
        guard !releases.isEmpty else { return }
        let tick = UInt32(truncatingIfNeeded: SessionClock.ticks(now))
        lastSendTime = now
        for message in releases {
            peer.releasedSinceSync.insertRelease(message)
            sending(to: peer, finishes: peer.sender.sends(appending: message, tick: tick)) { sender, send in
                sender.append(message, tick: tick, send)
            }
        }
        flush(peer)
    }

    /// Runs `body` on `peer`'s sender; if it `finishes` a packet (sends it), the packets prepared ahead that have not
    /// left are taken back just before and posted again right after (or at `flush`, if commands wait in the sender),
    /// so that the peer's sequence numbers never go backwards and a tick is out of the lane only while a packet is
    /// sent. Those due within `imminence` stay in the lane: taken back, one would be out of it while this thread (of
    /// normal priority) sends, and late if the thread were held meanwhile. What `body` finishes then goes into the lane
    /// right behind them, settled: a packet waits up to `imminence` for a tick, rather than a tick for a packet.
    private func sending(to peer: SessionPeer, finishes: Bool,
                         _ body: (inout RTPMIDISender, (UnsafeRawBufferPointer) -> Void) -> Void) {
        guard finishes, let lane, !peer.ahead.isEmpty else { return withSender(of: peer, body) }
        peer.withdrawn = Self.inOrder(takeBackAhead(peer, dueAfter: lane.now.advanced(byNanoseconds: Self.imminence)), peer.withdrawn)
        if let staying = peer.ahead.last, !staying.tickets.allSatisfy(lane.isDone), lane.hasRoom {
            settle(peer, behind: staying, in: lane, body)
        } else {
            // Nothing stays, or the lane has no room to settle behind it: what waits comes back, and this leaves now.
            peer.withdrawn = Self.inOrder(takeBackAhead(peer), peer.withdrawn)
            withSender(of: peer, body)
        }
        repostWithdrawn(peer)
    }

    /// The fastest a song's count may move: 600 BPM (the fastest tempo the jam's follower follows) at 24 ticks a beat;
    /// and the ticks a journal's count may be ahead of that (a beat).
    static let fastestTicksPerSecond = 240.0, songTickTolerance = 24.0

    /// How far ahead of the last a peer's RTP sequence number is taken by itself (RFC 3550's MAX_DROPOUT); beyond, only
    /// as the `resynchronization.ahead`th packet in a row that follows on from the one before, and behind the last as the
    /// `resynchronization.behind`th (with 0-50 ms of jitter, a tick 21 ms after the last at 120 BPM overtakes at most two).
    static let maxDropout = 3000, resynchronization = (ahead: 3, behind: 8)

    /// How close to its time a packet prepared ahead stays in the lane when another is sent (`sending`): 1 ms.
    static let imminence: UInt64 = 1_000_000

    /// Runs `body` on `peer`'s sender, posting what it finishes to `lane` to leave right behind `staying`, settled.
    private func settle(_ peer: SessionPeer, behind staying: AheadPacket, in lane: any PacketLane,
                        _ body: (inout RTPMIDISender, (UnsafeRawBufferPointer) -> Void) -> Void) {
        var settled = AheadPacket(messages: [], time: staying.time, senderBefore: peer.sender, settled: true)
        countingOverflows(of: peer) {
            body(&peer.sender) { packet in
                counters.packetsSent += 1
                counters.settledBehindAhead += 1
                settled.tickets.append(lane.post(packet, to: peer.dataAddress, at: settled.time))
            }
        }
        peer.ahead.append(settled)
    }

    /// Runs `body` on `peer`'s sender with a function sending its packets, counting overflows.
    private func withSender(of peer: SessionPeer,
                            _ body: (inout RTPMIDISender, (UnsafeRawBufferPointer) -> Void) -> Void) {
        countingOverflows(of: peer) { body(&peer.sender) { packet in sendRTP(packet, to: peer) } }
    }

    /// Runs `work` on `peer`'s sender and counts the journal overflows it met.
    private func countingOverflows(of peer: SessionPeer, _ work: () -> Void) {
        let overflows = peer.sender.journalOverflows
        work()
        counters.journalOverflows += peer.sender.journalOverflows - overflows
    }

    /// Sends `peer` a journal-only packet if its journal is still unconfirmed, and sets the next.
    private func sendGuardPacket(_ peer: SessionPeer, now: MonotonicInstant) {
        guard peer.sender.hasUnconfirmedHistory, peer.sender.isEmpty else {
            peer.guardDue = nil
            return
        }
        counters.guardPackets += 1
        sending(to: peer, finishes: true) { sender, send in
            sender.sendJournal(tick: UInt32(truncatingIfNeeded: SessionClock.ticks(now)), send)
        }
        peer.guardInterval = min(peer.guardInterval * 2, configuration.guardPacketMaximumInterval)
        peer.guardDue = now.advanced(byNanoseconds: peer.guardInterval)
    }

    private func sendRTP(_ packet: UnsafeRawBufferPointer, to peer: SessionPeer) {
        counters.packetsSent += 1
        delegate.session(send: packet, from: .data, to: peer.dataAddress)
    }

    // MARK: Inviting

    /// Keeps inviting the session at `address` (its control port) until it joins, and again
    /// whenever it leaves; `label` names it in reports (a Bonjour name or `host:port`). False if
    /// `maxPeers` sessions are invited already (Bonjour announcements are datagrams too).
    @discardableResult
    public func invite(_ address: NetworkAddress, label: String, now: MonotonicInstant) -> Bool {
        guard !targets.contains(where: { $0.address == address }) else { return true }
        guard targets.count < configuration.maxPeers else { return false }
        targets.append(InvitationTarget(address: address, label: label, state: .waiting(until: now)))
        tick(now: now)
        return true
    }

    /// Stops inviting `address` (a connected peer stays until it leaves).
    public func stopInviting(_ address: NetworkAddress) {
        targets.removeAll { $0.address == address }
    }

    /// The targets invited and not connected, in the order they were given.
    public var pendingInvitations: [PendingInvitation] {
        targets.compactMap(\.pending)
    }

    // MARK: Time

    /// When `tick` must next be called, if anything is pending.
    public var nextDeadline: MonotonicInstant? {
        var deadline: MonotonicInstant?
        func consider(_ instant: MonotonicInstant?) {
            if let instant, deadline.map({ instant < $0 }) ?? true { deadline = instant }
        }
        for peer in peers.values {
            consider(peer.deadline)
            consider(peer.lastClockSync.advanced(byNanoseconds: configuration.peerTimeout))
        }
        if let oldest = halfOpen.oldest { consider(oldest.expires) } // the first to expire
        for target in targets {
            switch target.state {
            case .waiting(let until): consider(until)
            case .inviting(let invitation): consider(invitation.nextAttempt)
            case .connected: break
            }
        }
        return deadline
    }

    /// Does what is due at `now`: invitations, clock syncs, receiver feedback, timeouts.
    public func tick(now: MonotonicInstant) {
        departed.removeAll { now >= $0.until }
        // A peer heard from that left the invitation sent with our BY unanswered until its next attempt never got
        // them (or ignores an IN from a peer it holds): it is back as it was.
        while let index = departed.firstIndex(where: { record in
            record.heard && targets.contains { target in
                guard target.address == record.peer.info.address, case .inviting(let invitation) = target.state else { return false }
                return invitation.phase == .control && now >= invitation.nextAttempt
            }
        }) {
            bringBack(index, now: now)
        }
        counters.halfOpenExpired += halfOpen.removeExpired(now: now)
        for peer in Array(peers.values) {
            if now >= peer.lastClockSync.advanced(byNanoseconds: configuration.peerTimeout) {
                remove(peer, reason: .timedOut, now: now)
                continue
            }
            peer.playout?.deliver(dueBy: now) { delegate.session(received: $0, from: peer.info, at: now, sent: nil) }
            if let due = peer.nextSync, now >= due {
                guard peer.unansweredSyncs < configuration.unansweredSyncLimit else {
                    guard peer.info.weInvited else { // it does not answer the CK a follower adds: no more of them
                        peer.nextSync = nil
                        followedPeer = nil
                        continue
                    }
                    remove(peer, reason: .stoppedAnswering, now: now)
                    continue
                }
                sendClockSync(peer, now: now)
            }
            if let due = peer.guardDue, now >= due { sendGuardPacket(peer, now: now) }
            if let due = peer.feedbackDue, now >= due, let sequence = peer.lastSequence {
                sendSession(.receiverFeedback(ssrc: ssrc, sequence: sequence), from: .control, to: peer.info.address)
                peer.feedbackDue = nil
                peer.lastFeedbackSent = now
            }
        }
        for index in targets.indices { advanceInvitation(index, now: now) }
    }

    private func advanceInvitation(_ index: Int, now: MonotonicInstant) {
        switch targets[index].state {
        case .connected:
            return
        case .waiting(let until):
            guard now >= until else { return }
            targets[index].state = .inviting(Invitation(address: targets[index].address, token: random(), nextAttempt: now))
        case .inviting(let invitation):
            guard now >= invitation.nextAttempt else { return }
            if invitation.attempts > 0 { counters.invitationsUnanswered += 1 } // the last IN's time to answer is over
        }
        reportUnanswered(index, now: now)
        guard case .inviting(var invitation) = targets[index].state else { return }
        guard invitation.attempts < configuration.invitationAttempts else {
            // A new round, with a new token, `invitationMaximumInterval` on (reported by `reportUnanswered`, not once a round).
            targets[index].state = .waiting(until: now.advanced(byNanoseconds: configuration.invitationMaximumInterval))
            return
        }
        invitation.attempts += 1
        // 1 s apart at first, then 2 s, then every `invitationMaximumInterval`.
        let backoff = configuration.invitationInterval << UInt64(min(invitation.attempts / 3, 16))
        invitation.nextAttempt = now.advanced(byNanoseconds: min(backoff, configuration.invitationMaximumInterval))
        targets[index].state = .inviting(invitation)
        sendInvitation(index, invitation, now: now)
    }

    /// Sends target `index` `invitation`'s IN, to the port of its phase, and counts the try.
    private func sendInvitation(_ index: Int, _ invitation: Invitation, now: MonotonicInstant) {
        targets[index].tries += 1
        if targets[index].firstTry == nil { targets[index].firstTry = now }
        let (port, address) = invitation.phase == .control
            ? (SessionPort.control, invitation.address)
            : (SessionPort.data, invitation.address.with(port: invitation.address.port &+ 1))
        sendSession(.invitation(.init(token: invitation.token, ssrc: ssrc, name: configuration.name)), from: port, to: address)
    }

    /// Reports target `index`, whose next try is due, if `invitationWarningAfter` tries went unanswered: first
    /// at once, then `invitationWarningInterval` later, at doubling waits up to `invitationWarningMaximumInterval`.
    private func reportUnanswered(_ index: Int, now: MonotonicInstant) {
        let target = targets[index]
        guard target.tries >= configuration.invitationWarningAfter, now >= target.nextWarning ?? now,
              let pending = target.pending else { return }
        let interval = target.nextWarning == nil ? configuration.invitationWarningInterval
                                                 : min(target.warningInterval * 2, configuration.invitationWarningMaximumInterval)
        targets[index].warningInterval = interval
        targets[index].nextWarning = now.advanced(byNanoseconds: interval)
        delegate.session(invitationUnanswered: pending)
    }

    private func startClockSync(_ peer: SessionPeer, now: MonotonicInstant) {
        peer.syncsStarted = 0
        sendClockSync(peer, now: now)
    }

    /// Starts a CK exchange; until the peer answers, it is started again every
    /// `syncProbeInterval` (the answer moves the next one to the regular cadence).
    private func sendClockSync(_ peer: SessionPeer, now: MonotonicInstant) {
        peer.syncsStarted += 1
        peer.unansweredSyncs += 1
        peer.lastSyncSent = now
        peer.nextSync = now.advanced(byNanoseconds: configuration.syncProbeInterval)
        let ts1 = SessionClock.ticks(now)
        peer.syncSent(ticks: ts1)
        sendSession(.clockSync(.init(ssrc: ssrc, count: 0, timestamps: (ts1, 0, 0))), from: .data, to: peer.dataAddress)
    }

    // MARK: Leaving

    /// Says goodbye to every peer and abandons invitations; held notes are released.
    public func close(now: MonotonicInstant) {
        for peer in Array(peers.values) {
            sendSession(.bye(.init(token: 0, ssrc: ssrc, name: nil)), from: .control, to: peer.info.address)
            remove(peer, reason: .closed, now: now)
        }
        for waiting in halfOpen.values {
            sendSession(.bye(.init(token: waiting.token, ssrc: ssrc, name: nil)), from: .control, to: waiting.info.address)
        }
        halfOpen.removeAll()
        for target in targets {
            if case .inviting(let invitation) = target.state {
                sendSession(.bye(.init(token: invitation.token, ssrc: ssrc, name: nil)), from: .control, to: target.address)
            }
        }
        targets.removeAll()
        departed.removeAll()
    }

    private func remove(_ peer: SessionPeer, reason: PeerLeaveReason, now: MonotonicInstant) {
        peers[peer.info.ssrc] = nil
        _ = takeBackAhead(peer)
        peer.withdrawn = []
        if followedPeer == peer.info.ssrc { followedPeer = nil }
        controlSSRCByDataSSRC[peer.dataSSRC] = nil
        peer.playout?.deliver(dueBy: now, everything: true) { delegate.session(received: $0, from: peer.info, at: now, sent: nil) }
        peer.midi.releaseAll { message in delegate.session(received: message, from: peer.info, at: now, sent: nil) }
        if reason.fellSilent {
            // It may only be slow (Wi-Fi in power save, a busy host): told, it drops its side and takes our next
            // invitation, which goes out right after this, instead of refusing it as a duplicate.
            sendSession(.bye(.init(token: peer.token, ssrc: ssrc, name: nil)), from: .control, to: peer.info.address)
        }
        if reason.fellSilent || reason == .reinvited { depart(peer, mayReturn: reason.fellSilent, now: now) }
        for index in targets.indices {
            if case .connected(let ssrc) = targets[index].state, ssrc == peer.info.ssrc {
                targets[index].supersededToken = nil
                // Invite it again at once, unless it left on purpose (then after a pause, not to pester it).
                let delay = reason == .saidGoodbye ? configuration.reinvitationDelay : 0
                targets[index].state = .waiting(until: now.advanced(byNanoseconds: delay))
            }
        }
        delegate.session(peerLeft: peer.info, reason: reason)
    }

    /// Keeps `peer`, just removed, for `returnGrace`: it may come back (`mayReturn`: it fell silent) or a new session
    /// with it may take over what we had left on at it.
    private func depart(_ peer: SessionPeer, mayReturn: Bool, now: MonotonicInstant) {
        departed.removeAll { $0.peer.info.ssrc == peer.info.ssrc || now >= $0.until }
        if departed.count >= configuration.maxPeers { departed.removeFirst() }
        var record = DepartedPeer(peer: peer, until: now.advanced(byNanoseconds: configuration.returnGrace), mayReturn: mayReturn)
        if mayReturn { // releases it may not have read before our BY (unless the note is on again)
            var released = peer.releasedUnconfirmed
            released.formUnion(peer.releasedSinceSync)
            peer.sent.releases(since: released) { record.releases.append($0) }
        }
        departed.append(record)
    }

    /// Who sent a packet under a control or data SSRC (`sender`).
    private enum Sender {
        /// A connected peer, or one that fell silent and is back with this packet.
        case peer(SessionPeer)
        /// A peer removed a moment ago that is not back (yet): the packet is dropped quietly.
        case departed
        /// The SSRC is a peer's, the address is not where it joined from: dropped and counted.
        case wrongAddress
        /// No peer has the SSRC.
        case stranger
    }

    /// Who sent a packet under `ssrc` (a control or data SSRC) that came on `port` from `address` at `now`. A peer is
    /// where it joined from: its SSRC (in every packet it sends, readable by anyone on the network) from any other
    /// address or port is dropped and counted (`wrongAddress`), never taken as the peer's. A peer removed a moment ago
    /// for silence comes back from those addresses only: it was only slow, and is back at once as it was (what it holds
    /// is then what its next journal says), unless we are inviting it: it may be about to take the BY and the invitation
    /// we sent it, so it is back only if it leaves that unanswered until the next attempt (`tick`).
    private func sender(_ ssrc: UInt32, on port: SessionPort, from address: NetworkAddress, now: MonotonicInstant) -> Sender {
        if let peer = peer(ssrc) {
            if peer.isAt(address, on: port) { return .peer(peer) }
            return dropWrongAddress(ssrc, of: peer.info, from: address)
        }
        guard let index = departed.firstIndex(where: { $0.peer.has(ssrc) && now < $0.until }) else { return .stranger }
        let record = departed[index]
        guard record.peer.isAt(address, on: port) else { return dropWrongAddress(ssrc, of: record.peer.info, from: address) }
        // It invited us again: a new session is on its way.
        guard record.mayReturn, halfOpen[record.peer.info.ssrc] == nil else { return .departed }
        if let target = targets.firstIndex(where: { $0.address == record.peer.info.address }),
           case .inviting = targets[target].state {
            departed[index].heard = true
            return .departed
        }
        return .peer(bringBack(index, now: now))
    }

    /// Drops a packet under `ssrc`, the SSRC of `peer`, from `address`, which is not where it joined from.
    private func dropWrongAddress(_ ssrc: UInt32, of peer: PeerInfo, from address: NetworkAddress) -> Sender {
        counters.wrongAddress += 1
        delegate.session(dropped: "a packet under the SSRC of '\(peer.name)' (\(ssrc)) from an address it did not join from",
                         from: address)
        return .wrongAddress
    }

    /// Brings back the departed peer at `index`, heard from, as it was.
    @discardableResult
    private func bringBack(_ index: Int, now: MonotonicInstant) -> SessionPeer {
        let record = departed.remove(at: index)
        let peer = record.peer
        if let target = targets.firstIndex(where: { $0.address == peer.info.address }) {
            if case .inviting(let invitation) = targets[target].state { targets[target].supersededToken = invitation.token }
            targets[target].answered(then: .connected(ssrc: peer.info.ssrc))
        }
        peers[peer.info.ssrc] = peer
        controlSSRCByDataSSRC[peer.dataSSRC] = peer.info.ssrc
        peer.lastClockSync = now
        peer.unansweredSyncs = 0
        peer.lossUnrepaired = true // its notes were released when it left: its journal says which it still holds
        if peer.info.weInvited {
            peer.syncsStarted = 0
            peer.nextSync = now
        }
        counters.peersReturned += 1
        delegate.session(peerReturned: peer.info)
        send(releases: record.releases, to: peer, now: now)
        return peer
    }

    /// A new session with `peer` (its SSRC, at the same host) takes over what we had left on at it in the one that
    /// ended a moment ago, and is sent the releases routed since.
    private func takeOver(_ peer: SessionPeer, now: MonotonicInstant) {
        guard let index = departed.firstIndex(where: {
            $0.peer.info.ssrc == peer.info.ssrc && $0.peer.info.address.isSameHost(as: peer.info.address) && now < $0.until
        }) else { return }
        let record = departed.remove(at: index)
        peer.sent = record.peer.sent
        send(releases: record.releases, to: peer, now: now)
    }

    // MARK: Helpers

    /// The longest peer name kept, in Unicode scalars (at most 256 bytes): names are self-declared, an IN can carry
    /// 64 KB of one, and up to `halfOpenLimit` invitations are kept at once.
    static let peerNameLimit = 64

    /// The name `h` gives (empty if none), cut to `peerNameLimit`.
    private static func peerName(_ h: SessionPacket.Handshake) -> String {
        guard let name = h.name else { return "" }
        return name.unicodeScalars.count <= peerNameLimit ? name
            : String(String.UnicodeScalarView(name.unicodeScalars.prefix(peerNameLimit)))
    }

    private func makePeer(_ info: PeerInfo, token: UInt32, now: MonotonicInstant) -> SessionPeer {
        let peer = SessionPeer(info: info, token: token, now: now,
                    receiver: RTPMIDIReceiver(sysExLimit: configuration.sysExLimit),
                    sender: RTPMIDISender(ssrc: ssrc, sequence: UInt16(truncatingIfNeeded: random()),
                                          maxDatagram: configuration.maxDatagram,
                                          runningStatus: configuration.runningStatus))
        if configuration.playout.first(where: { $0.glob.matches(info.name) })?.timestamp == true {
            peer.playout = PlayoutBuffer()
        }
        return peer
    }

    private func peer(_ ssrc: UInt32) -> SessionPeer? {
        peers[ssrc] ?? controlSSRCByDataSSRC[ssrc].flatMap { peers[$0] }
    }

    private func sendSession(_ packet: SessionPacket, from port: SessionPort, to address: NetworkAddress) {
        datagram.removeAll(keepingCapacity: true)
        packet.encode(into: &datagram)
        datagram.withUnsafeBytes { delegate.session(send: $0, from: port, to: address) }
    }

    private func drop(_ reason: String, from address: NetworkAddress) {
        counters.malformed += 1
        delegate.session(dropped: reason, from: address)
    }
}

extension ClockSyncResult {
    /// A result with the given round trip and offset.
    init(roundTrip: Int64, offset: Int64) {
        self.init(ts1: 0, ts2: 0, ts3: 0)
        self.roundTrip = roundTrip
        self.offset = offset
    }
}
