import Dispatch
import Logging
import MIDI
import RTPMIDI

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

    let ports: UDPPortPair
    private let configuration: SessionConfiguration
    private let logger: Logger
    // Touched only on the engine's queue once started.
    private var session: RTPMIDISession!
    private var sink: EventSink?
    private var routing = Routing()
    private var timer: DispatchSourceTimer?
    private var flushScheduled = false
    private var droppedLogged = 0

    /// Binds the session's ports; nothing is received or sent until `start`.
    init(configuration: SessionConfiguration, bind: NetworkAddress?, port: UInt16, logger: Logger) throws(TransportError) {
        ports = try UDPPortPair(address: bind, port: port)
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts answering on the engine's queue, routing into `sink` by `routing`.
    func start(sink: EventSink, routing: Routing) {
        self.sink = sink
        sink.queue.sync {
            self.routing = routing
            session = RTPMIDISession(configuration: configuration, delegate: self)
            let timer = DispatchSource.makeTimerSource(queue: sink.queue)
            timer.setEventHandler { [unowned self] in
                session.tick(now: MonotonicClock.now())
                reschedule()
            }
            timer.resume()
            self.timer = timer
            ports.start(queue: sink.queue) { [unowned self] bytes, port, from in
                session.receive(bytes, on: port, from: from, now: MonotonicClock.now())
                reschedule()
            }
        }
        logger.info("session '\(configuration.name)' listening on UDP ports \(ports.controlPort) and \(ports.controlPort &+ 1)")
    }

    /// True once `start` ran.
    var isStarted: Bool { sink != nil }

    /// Routes later messages by `routing` (after a reload).
    func update(routing: Routing) {
        sink?.queue.sync { self.routing = routing }
    }

    /// Keeps inviting `address` until it joins (and again after it leaves).
    func invite(_ address: NetworkAddress, label: String) {
        sink?.queue.async { [self] in
            session.invite(address, label: label, now: MonotonicClock.now())
            reschedule()
        }
    }

    /// The connected peers (for status lines).
    var peers: [PeerInfo] {
        sink?.queue.sync { session.connectedPeers } ?? []
    }

    /// Says goodbye to every peer (their held notes are released downstream) and closes the ports.
    func stop() {
        guard let sink else {
            ports.close()
            return
        }
        sink.queue.sync {
            session.flush()
            session.close(now: MonotonicClock.now())
            timer?.cancel()
            timer = nil
            ports.close()
        }
        self.sink = nil
    }

    // MARK: Sending (on the engine's queue, from sinks)

    /// Queues `message` for every peer, or for the peers whose name matches `glob`.
    func send(_ message: MIDIMessage, at time: MonotonicInstant, toPeersMatching glob: NameGlob? = nil) {
        guard session != nil else { return }
        if let glob {
            session.send(message, at: time) { glob.matches($0.name) }
        } else {
            session.send(message, at: time)
        }
        scheduleFlush()
    }

    /// Everything routed in this turn of the queue leaves in one packet per peer.
    private func scheduleFlush() {
        guard !flushScheduled, let queue = sink?.queue else { return }
        flushScheduled = true
        queue.async { [self] in
            flushScheduled = false
            session?.flush()
        }
    }

    private func reschedule() {
        guard let timer else { return }
        guard let deadline = session.nextDeadline else {
            timer.schedule(deadline: .distantFuture)
            return
        }
        let now = MonotonicClock.now()
        let wait = deadline > now ? deadline.nanoseconds - now.nanoseconds : 0
        timer.schedule(deadline: .now() + .nanoseconds(Int(min(wait, 3_600_000_000_000))))
    }

    // MARK: RTPMIDISessionDelegate (on the engine's queue)

    func session(send datagram: UnsafeRawBufferPointer, from port: SessionPort, to address: NetworkAddress) {
        if let code = ports.send(datagram, from: port, to: address) {
            logger.debug("send to \(address) failed: \(TransportError(operation: "send", code: code))")
        }
    }

    func session(received message: MIDIMessage, from peer: PeerInfo, at time: MonotonicInstant) {
        guard let sink else { return }
        if let id = routing.session { sink.routeOnQueue(MIDIEvent(message, from: id, at: time)) }
        for (glob, id) in routing.peers where glob.matches(peer.name) {
            sink.routeOnQueue(MIDIEvent(message, from: id, at: time))
        }
    }

    func session(peerJoined peer: PeerInfo) {
        logger.info("peer '\(peer.name)' joined from \(peer.address) (\(peer.weInvited ? "we invited it" : "it invited us"))")
    }

    func session(peerLeft peer: PeerInfo, reason: PeerLeaveReason) {
        logger.info("peer '\(peer.name)' left: \(reason)")
    }

    func session(dropped reason: String, from address: NetworkAddress) {
        // Every drop is counted; the log shows the first ones and then every thousandth.
        droppedLogged += 1
        if droppedLogged <= 20 || droppedLogged % 1000 == 0 {
            logger.warning("dropped a datagram from \(address): \(reason) (\(droppedLogged) so far)")
        }
    }

    func session(invitationFailed target: String, at address: NetworkAddress, reason: String) {
        logger.warning("invitation to \(target) at \(address) failed: \(reason); trying again later")
    }
}

/// The `session` endpoint as a sink: what routes send to it goes to every peer.
final class SessionSink: SinkEndpoint, @unchecked Sendable {
    private let session: NetworkSession
    private let glob: NameGlob?

    /// A sink sending through `session` to every peer, or to those whose name matches `glob`.
    init(session: NetworkSession, glob: NameGlob?) {
        self.session = session
        self.glob = glob
    }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant) {
        session.send(message, at: time, toPeersMatching: glob)
    }

    func stop() {}
}
