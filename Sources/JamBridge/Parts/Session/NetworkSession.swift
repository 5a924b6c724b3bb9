import Bonjour
import Dispatch
import Logging
import MIDI
import RTPMIDI
import Routing
import Transport

/// The running RTP-MIDI session: the sans-I/O session, its UDP ports and its timer, all on the
/// engine's queue. Messages from peers are routed as coming from the `session` endpoint and
/// from every `peer:` endpoint whose glob matches the peer's name.
final class NetworkSession: RTPMIDISessionDelegate, @unchecked Sendable {
    /// The endpoint IDs messages from peers are routed under.
    struct Routing {
        /// The `session` endpoint, if a route uses it.
        var session: EndpointID?
        /// `peer:` endpoints and the peer-name globs they match.
        var peers: [(glob: NameGlob, id: EndpointID)] = []
    }

    private let ports: UDPPortPair
    /// Drives the session on the engine's queue, from `start` on.
    private var runner: SessionRunner!
    private let configuration: SessionConfiguration
    private let advertise: Bool
    private let bonjourGlobs: [NameGlob]
    private let logger: Logger
    // Touched only on the engine's queue once started.
    private var session: RTPMIDISession { runner.session }
    private var sink: EventSink?
    private var routing = Routing()
    private var flushScheduled = false
    /// Per connected peer (by SSRC), the `peer:` endpoints its name matches; and per `peer:`
    /// sink glob, the peers it sends to. Worked out when peers or routes change, not per message.
    private var endpointsOfPeer: [UInt32: [EndpointID]] = [:]
    private var peersOfGlob: [String: Set<UInt32>] = [:]
    private var droppedLogged = 0
    /// The peer whose clock the session follows (clock sync every 250 ms), and when its last clock or transport came.
    private var clockPeer: (ssrc: UInt32, heard: MonotonicInstant)?
    /// A followed peer silent for this long gives way to another whose clock or transport comes.
    private static let clockPeerSilence: UInt64 = 1_000_000_000
    private var advertiser: BonjourAdvertiser?
    private var browser: BonjourBrowser?
    /// The name Bonjour registered for us (avahi renames on a conflict).
    private var advertisedName: String?
    /// Bonjour sessions we invite, by name, at the address we invite.
    private var discovered: [String: NetworkAddress] = [:]
    /// Where clock and transport prepared ahead wait for their time; made for the first (see `send`).
    private var lane: TimedDatagrams?
    /// Clock and transport stamped further ahead than this are prepared now and sent at their time by the lane.
    static let aheadThreshold: UInt64 = 1_000_000

    /// Binds the session's ports; nothing is received or sent until `start`.
    init(settings: SessionSettings, logger: Logger) throws(TransportError) {
        ports = try UDPPortPair(address: settings.bind, port: settings.port)
        configuration = settings.configuration
        advertise = settings.advertise
        bonjourGlobs = settings.bonjourGlobs
        self.logger = logger
    }

    /// Starts answering on the engine's queue, routing into `sink` by `routing`.
    func start(sink: EventSink, routing: Routing) {
        self.sink = sink
        runner = SessionRunner(ports: ports, queue: sink.queue)
        sink.queue.sync {
            self.routing = routing
            runner.start(configuration: configuration, delegate: self)
        }
        logger.info("session '\(configuration.name)' listening on UDP ports \(ports.controlPort) and \(ports.controlPort &+ 1)")
        sink.queue.sync {
            if advertise { startAdvertising(on: sink.queue) }
            if !bonjourGlobs.isEmpty { startBrowsing(on: sink.queue) }
        }
    }

    private func startAdvertising(on queue: DispatchQueue) {
        do {
            advertiser = try BonjourAdvertiser(name: configuration.name, port: ports.controlPort, queue: queue) {
                [weak self] result in self?.registered(result)
            }
        } catch {
            logger.warning("session not advertised on Bonjour: \(error); peers can still invite it by address")
        }
    }

    private func registered(_ result: Result<String, BonjourError>) {
        switch result {
        case .success(let name):
            advertisedName = name
            logger.info("advertised on Bonjour as '\(name)' (_apple-midi._udp, port \(ports.controlPort))")
        case .failure(let error):
            logger.warning("Bonjour advertisement failed: \(error)")
        }
    }

    private func startBrowsing(on queue: DispatchQueue) {
        do {
            browser = try BonjourBrowser(queue: queue) { [weak self] event in self?.browsed(event) }
        } catch {
            logger.warning("cannot look for \(bonjourGlobs.map { "'\($0)'" }.joined(separator: ", ")) on Bonjour: \(error)")
        }
    }

    /// Invites Bonjour sessions whose names match `invite:` globs while they are announced.
    private func browsed(_ event: BrowseEvent) {
        switch event {
        case .found(let service):
            guard service.name != (advertisedName ?? configuration.name) || service.port != ports.controlPort,
                  bonjourGlobs.contains(where: { $0.matches(service.name) }),
                  let address = service.addresses.lazy.compactMap({ NetworkAddress(numeric: $0, port: service.port) }).first
            else { return }
            if let previous = discovered[service.name], previous != address { session.stopInviting(previous) }
            guard session.invite(address, label: "'\(service.name)'", now: MonotonicClock.now()) else {
                discovered[service.name] = nil
                logger.warning("found '\(service.name)' on Bonjour at \(address) but not inviting it: \(configuration.maxPeers) sessions are invited already (max-peers)")
                return
            }
            discovered[service.name] = address
            logger.info("found '\(service.name)' on Bonjour at \(address); inviting it")
            runner.reschedule()
        case .lost(let name):
            // A connected peer stays until it leaves; it is invited again when it is announced again.
            guard let address = discovered.removeValue(forKey: name) else { return }
            session.stopInviting(address)
        }
    }

    /// This instance's SSRC and name in the session, once started; off the engine's queue.
    func currentIdentity() -> (ssrc: UInt32, name: String)? {
        sink?.queue.sync { (session.ssrc, advertisedName ?? configuration.name) }
    }

    /// Follows the clock of `peer`, which sent clock or transport at `time`, unless a peer followed already sent
    /// some within `clockPeerSilence`; its Stop ends the following. A followed peer exchanges clock sync every
    /// 250 ms, so that its timestamps are read through a fresh offset (see docs/internals.md).
    private func followClock(_ message: MIDIMessage, of peer: PeerInfo, at time: MonotonicInstant) {
        if let followed = clockPeer, followed.ssrc != peer.ssrc,
           time.nanoseconds < followed.heard.nanoseconds + Self.clockPeerSilence { return }
        clockPeer = message == .stop ? nil : (peer.ssrc, time)
        session.followClock(of: clockPeer?.ssrc, now: time)
        runner.reschedule()
    }

    /// While this instance's jam runs, every peer the session invited exchanges clock sync every 250 ms
    /// (`RTPMIDISession.syncsOften`). Off the engine's queue, once started.
    func syncClocksOften(_ often: Bool) {
        sink?.queue.sync { session.syncsOften = often }
    }

    /// True once `start` ran.
    var isStarted: Bool { sink != nil }

    /// Routes later messages by `routing` (after a reload).
    func update(routing: Routing) {
        sink?.queue.sync {
            self.routing = routing
            rematchPeers()
        }
    }

    /// Works out which `peer:` endpoints each connected peer feeds and which peers each
    /// `peer:` sink reaches.
    private func rematchPeers() {
        let peers = session.connectedPeers
        endpointsOfPeer = Dictionary(uniqueKeysWithValues: peers.map { peer in
            (peer.ssrc, routing.peers.filter { $0.glob.matches(peer.name) }.map(\.id))
        })
        peersOfGlob = Dictionary(routing.peers.map { entry in
            (entry.glob.pattern, Set(peers.filter { entry.glob.matches($0.name) }.map(\.ssrc)))
        }, uniquingKeysWith: { first, _ in first })
    }

    /// Keeps inviting `address` until it joins (and again after it leaves).
    func invite(_ address: NetworkAddress, label: String) {
        sink?.queue.async { [self] in
            if !session.invite(address, label: label, now: MonotonicClock.now()) {
                logger.warning("not inviting \(label): \(configuration.maxPeers) sessions are invited already (max-peers)")
            }
            runner.reschedule()
        }
    }

    /// The session's name, port, SSRC, peers and counters (`jambridge status`, `jambridge peers`); once started.
    func report() -> DaemonStatus.Session {
        guard let sink else {
            return DaemonStatus.Session(name: configuration.name, port: ports.controlPort, ssrc: 0, peers: [], counters: [:])
        }
        return sink.queue.sync {
            DaemonStatus.Session(name: advertisedName ?? configuration.name, port: ports.controlPort, ssrc: session.ssrc,
                                 peers: session.connectedPeers.map { peer in
                                     DaemonStatus.Peer(name: peer.name, ssrc: peer.ssrc, address: "\(peer.address)", weInvited: peer.weInvited,
                                                       roundTripMs: peer.clock?.roundTripMilliseconds,
                                                       clockOffsetMs: peer.clock.map { Double($0.offset) / 10 },
                                                       journalRepairs: peer.journalRepairs)
                                 },
                                 counters: session.counters.named,
                                 invitations: session.pendingInvitations.map { DaemonStatus.Invitation($0, now: MonotonicClock.now()) })
        }
    }

    /// Says goodbye to every peer (their held notes are released downstream) and closes the ports; they are free
    /// to be bound again when it returns.
    func stop() {
        guard let sink else {
            ports.close()
            return
        }
        sink.queue.sync {
            advertiser?.cancel()
            browser?.cancel()
            lane?.stop() // its thread sends from the data port, which the runner's stop closes
            runner.stop()
            if let failures = lane?.failures.load(ordering: .relaxed), failures > 0 {
                logger.warning("session '\(configuration.name)': \(counted(failures, "clock datagram")) refused by the kernel")
            }
            let c = session.counters
            logger.info("session '\(configuration.name)' stopped: \(c.packetsReceived) packets in (\(c.messagesReceived) messages), \(c.packetsSent) out, \(c.malformed) malformed, \(c.unknownSender) from unknown senders, \(c.wrongAddress) under a peer's SSRC from elsewhere, \(c.outOfWindow) far out of sequence, \(c.implausibleSongPositions) journals' song positions not followed, \(c.badClockSyncs) clock syncs with impossible round trips, \(c.sequenceGaps) lost, \(c.repairs) losses repaired from journals with \(c.repairMessages) messages, \(c.latePackets) late packets dropped, \(c.lateEvents) events played late, \(c.guardPackets) journal-only packets out, \(c.journalOverflows) journal overflows, \(c.sysExDropped) SysEx dropped, \(c.invitationsRejected) invitations refused (\(c.invitationsOverLimit) over the limits), \(c.halfOpenExpired) never completed, \(c.invitationsUnanswered) of our own unanswered")
        }
        ports.waitUntilClosed()
        self.sink = nil
    }

    // MARK: Sending (on the engine's queue, from sinks)

    /// Queues `message` for the `recipients` among every peer, or among the peers whose name matches `glob`. What is
    /// handed ahead of its time (`owner`: the ticket of the jam's ticks or the drums' notes) is prepared now and leaves
    /// at its time from the lane's thread.
    func send(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients, matching glob: NameGlob?,
              aheadFor owner: Int? = nil) {
        guard runner?.session != nil else { return }
        let ssrcs = glob.map { peersOfGlob[$0.pattern] ?? [] }
        if ssrcs?.isEmpty == true { return }
        let accepting = { (peer: PeerInfo) in (ssrcs?.contains(peer.ssrc) ?? true) && recipients.include(.networkPeer(ssrc: peer.ssrc)) }
        if let owner, time.nanoseconds > MonotonicClock.now().nanoseconds + Self.aheadThreshold {
            if lane == nil {
                lane = TimedDatagrams(ports: ports, logger: logger)
                session.lane = lane
            }
            session.sendAhead(message, at: time, owner: owner, to: accepting)
        } else {
            session.send(message, at: time, to: accepting)
        }
        scheduleFlush()
    }

    /// Takes back what `owner` had prepared ahead that is due after `time` (the jam's song stopped or changed hands,
    /// the drums stopped), but a note-off whose note-on left.
    func takeBack(after time: MonotonicInstant, owner: Int) {
        session.withdrawAhead(after: time, owner: owner)
    }

    /// Everything routed in this batch, or this turn of the queue, leaves in one packet per peer (a
    /// datagram's handler flushes by itself).
    private func scheduleFlush() {
        guard !runner.isHandlingDatagram, !flushScheduled, let sink else { return }
        flushScheduled = true
        let flush: @Sendable () -> Void = { [self] in
            flushScheduled = false
            session.flush()
            runner.reschedule() // a guard packet may now be due in 10 ms: the timer must know
        }
        if !sink.atEndOfBatch(flush) { sink.queue.async(execute: flush) }
    }

    // MARK: RTPMIDISessionDelegate (on the engine's queue)

    func session(send datagram: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) {
        if let code = ports.send(datagram, from: port, to: address) {
            logger.debug("send to \(address) failed: \(TransportError(operation: "send", code: code))")
        }
    }

    func session(received message: MIDIMessage, from peer: PeerInfo, at time: MonotonicInstant, sent: SenderTime?) {
        guard let sink else { return }
        if message.isClockOrTransport { followClock(message, of: peer, at: time) }
        let origin = EventOrigin.networkPeer(ssrc: peer.ssrc)
        if let id = routing.session { sink.routeOnQueue(MIDIEvent(message, from: id, origin: origin, at: time, sent: sent)) }
        if let ids = endpointsOfPeer[peer.ssrc] {
            for id in ids { sink.routeOnQueue(MIDIEvent(message, from: id, origin: origin, at: time, sent: sent)) }
        }
    }

    func session(peerJoined peer: PeerInfo) {
        logger.info("peer '\(peer.name)' joined from \(peer.address) (\(peer.weInvited ? "we invited it" : "it invited us"))")
        sink?.player(.networkPeer(ssrc: peer.ssrc), named: peer.name)
        rematchPeers()
    }

    func session(peerLeft peer: PeerInfo, reason: PeerLeaveReason) {
        logger.info("peer '\(peer.name)' left: \(reason)")
        if clockPeer?.ssrc == peer.ssrc { clockPeer = nil }
        sink?.player(.networkPeer(ssrc: peer.ssrc), named: nil)
        rematchPeers()
    }

    func session(peerReturned peer: PeerInfo) {
        logger.info("peer '\(peer.name)' is back at \(peer.address): it was only slow, and keeps its place in the session")
        sink?.player(.networkPeer(ssrc: peer.ssrc), named: peer.name)
        rematchPeers()
    }

    func session(dropped reason: String, from address: NetworkAddress) {
        // Every drop is counted; the log shows the first ones and then every thousandth.
        droppedLogged += 1
        if isLogged(droppedLogged) {
            logger.warning("dropped a datagram from \(address): \(reason) (\(droppedLogged) so far)")
        }
    }

    func session(invitationFailed target: String, at address: NetworkAddress, reason: String) {
        logger.warning("invitation to \(target) at \(address) failed: \(reason); trying again later")
    }

    func session(invitationUnanswered invitation: PendingInvitation) {
        let seconds = Int(DaemonStatus.Invitation(invitation, now: MonotonicClock.now()).secondsSinceFirstTry ?? 0)
        let why = invitation.state == .joining
            ? "its control port accepted, but its data port \(invitation.address.port &+ 1) does not answer: a firewall may let only the first port through"
            : "nothing listens there, a firewall drops them, or the peer is down"
        logger.warning("no answer from \(DaemonStatus.Invitation.naming(invitation.label, at: "\(invitation.address)")) to \(counted(invitation.tries, "invitation")) in \(seconds) s: \(why); still inviting it, every \(configuration.invitationMaximumInterval / 1_000_000_000) s at most (said again after \(configuration.invitationWarningInterval / 1_000_000_000) s, then less and less often)")
    }
}

/// The `session` endpoint as a sink: what routes send to it goes to every peer; what is handed to it ahead (the jam's
/// clock and transport, the drums' notes) leaves at its time from the session's lane.
final class SessionSink: TimedSink, @unchecked Sendable {
    private let session: NetworkSession
    private let glob: NameGlob?

    /// A sink sending through `session` to every peer, or to those whose name matches `glob`.
    init(session: NetworkSession, glob: NameGlob?) {
        self.session = session
        self.glob = glob
    }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        session.send(message, at: time, to: recipients, matching: glob)
    }

    var sendsAtItsTime: Bool { true }

    func takesAhead(_ message: MIDIMessage) -> Bool {
        true
    }

    func receiveAhead(_ message: MIDIMessage, routedFrom event: MIDIEvent, to recipients: Recipients, ticket: TimedTicket) {
        session.send(message, at: event.time, to: recipients, matching: glob, aheadFor: ticket.number)
    }

    func takeBack(after time: MonotonicInstant, ticket: TimedTicket) {
        session.takeBack(after: time, owner: ticket.number)
    }

    func stop() {}
}

extension DaemonStatus.Invitation {
    /// `pending` as the status shows it at `now`.
    init(_ pending: PendingInvitation, now: MonotonicInstant) {
        self.init(label: pending.label, address: "\(pending.address)", state: pending.state.rawValue, tries: pending.tries,
                  secondsSinceFirstTry: pending.firstTry.map { Double(max(0, Int64(bitPattern: now.nanoseconds &- $0.nanoseconds))) / 1e9 })
    }
}

extension SessionCounters {
    /// Every count by its name (`packetsReceived`, `malformed`...), for `jambridge status`.
    var named: [String: Int] {
        Dictionary(uniqueKeysWithValues: Mirror(reflecting: self).children.compactMap { child in
            guard let name = child.label, let count = child.value as? Int else { return nil }
            return (name, count)
        })
    }
}
