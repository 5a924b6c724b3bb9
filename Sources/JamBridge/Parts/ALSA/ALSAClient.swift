import ALSA
import Dispatch
import Logging
import MIDI
import RouteFile

/// jambridge's ALSA sequencer client and its `alsa:` endpoints. Each endpoint is one port of
/// the client: created ports (`alsa: { create: NAME }`) wait for others to connect; the ports
/// of `alsa: "CLIENT:PORT"` endpoints connect, both ways, to every port matching their
/// pattern, now and whenever one appears (plugged in, an app started). When a connected port
/// goes away, the notes and pedals it left on are released through its endpoint.
/// Everything after `start` runs on the engine's queue.
final class ALSAClient: @unchecked Sendable {
    /// One `alsa:` endpoint: its port in our client, its pattern if it follows devices.
    struct Endpoint {
        var id: EndpointID
        var name: String
        var port: Int32
        var pattern: (client: NameGlob, port: ALSAPortPattern)?
    }

    let clientName: String
    private let sequencer: ALSASequencer
    private let logger: Logger
    private var endpoints: [Int32: Endpoint] = [:]
    private weak var sink: EventSink?
    /// What each connected source left on, and its SysEx in progress, per (source, our port).
    private var held: [SequencerAddress: [Int32: HeldNotes]] = [:]
    private var sysEx: [SequencerAddress: [Int32: SysExAssembler]] = [:]
    /// The ports connected, with the endpoints (our ports) each is connected to.
    private var connected: [SequencerAddress: (label: String, ports: Set<Int32>)] = [:]
    /// The subscribers of our ports as last asked (`destinations`), until a connection is made or undone or a port
    /// goes away: asking takes two system calls, which every event from an ALSA player paid (issue 34).
    private var subscribers: [Int32: [SequencerAddress]] = [:]
    private var failures = 0
    /// What the ports dropped for want of room, and how many times that was said (for the log's rate limit).
    private var noRoom = OutputBacklog.Dropped()
    private var noRoomLogged = 0

    /// Opens the sequencer as client `clientName`.
    init(clientName: String, logger: Logger, calls: SequencerCalls = .libasound) throws(ALSAError) {
        self.clientName = clientName
        self.logger = logger
        sequencer = try ALSASequencer(clientName: clientName, calls: calls)
        logger.info("ALSA sequencer client '\(clientName)' is client \(sequencer.clientID)")
        if sequencer.queueStartUncertainty >= ALSASequencer.startCertainty {
            logger.notice("ALSA: the sequencer's queue started within \((Double(sequencer.queueStartUncertainty) / 1e6).decimal(2)) ms, not better (a busy machine): what is sent to ports ahead of its time may be up to that late")
        }
    }

    /// Makes the port of an endpoint (named as the endpoint, or as `create:` says); nil and a
    /// log line if the sequencer refuses.
    func makePort(for declaration: EndpointDeclaration) -> ALSAPortSink? {
        let portName: String
        var pattern: (client: NameGlob, port: ALSAPortPattern)?
        switch declaration.kind {
        case .alsaCreated(let name): portName = name
        case .alsaPorts(let client, let port):
            portName = declaration.name
            pattern = (NameGlob(client), port)
        default: return nil
        }
        do {
            let port = try sequencer.createPort(name: portName)
            return ALSAPortSink(client: self, port: port, endpointName: declaration.name, pattern: pattern)
        } catch {
            logger.error("\(declaration.location): \(declaration.name): \(error); this endpoint stays silent")
            return nil
        }
    }

    /// Starts delivering into `sink` and connects every endpoint to the ports there are now; once (on the
    /// daemon's control queue).
    func start(sink: EventSink) {
        guard self.sink == nil else { return }
        self.sink = sink
        do {
            try sequencer.start(queue: sink.queue, inBatches: { [weak sink] body in
                if let sink { sink.routeBatch(body) } else { body() }
            }) { [weak self] input in self?.handle(input) }
        } catch {
            logger.error("ALSA input: \(error); the alsa endpoints only send")
        }
        sink.queue.async { [self] in connectMatching(sequencer.ports()) }
    }

    /// The endpoints, keyed by their port; set on the engine's queue by the daemon.
    func register(_ port: ALSAPortSink, id: EndpointID) {
        endpoints[port.port] = Endpoint(id: id, name: port.endpointName, port: port.port, pattern: port.pattern)
        if sink != nil { connectMatching(sequencer.ports()) }
    }

    /// The client, each of `ports` (by endpoint name) with the ports it is connected to, the failures and what was
    /// dropped for want of room.
    func report(_ ports: [String: Int32]) -> DaemonStatus.ALSA {
        let make = { [self] in
            DaemonStatus.ALSA(client: clientName, clientID: sequencer.clientID, ports: ports.mapValues { port in
                DaemonStatus.ALSAPort(port: port, connections: connected.values.filter { $0.ports.contains(port) }.map(\.label).sorted())
            }, failures: failures, dropped: noRoom.pieces, droppedReleases: noRoom.releases)
        }
        return sink?.queue.sync(execute: make) ?? make()
    }

    /// Forgets an endpoint and removes its port (and so its connections).
    func unregister(_ port: ALSAPortSink) {
        endpoints[port.port] = nil
        subscribers[port.port] = nil
        sequencer.deletePort(port.port)
    }

    /// The engine's timed output, once started: where the endpoints' output resumes (on the engine's queue).
    var timed: TimedOutput? { sink?.timed }

    var schedulesAhead: Bool { sequencer.schedulesAhead }

    func removeScheduledClockAndTransport(after time: MonotonicInstant) {
        guard sequencer.removeScheduledClockAndTransport(after: time) else {
            failures += 1
            if isLogged(failures) { logger.warning("cannot take back the clock and transport scheduled ahead (\(failures) failures so far)") }
            return
        }
    }

    /// Writes `piece` from our port `port` to `destination` (nil: every subscriber); `.full` if the sequencer had no
    /// room for it, to be written again later. A failure is counted and logged (rate-limited), and not written again.
    func write(_ piece: PacedOutput.Piece, from port: Int32, to destination: SequencerAddress?) -> SendOutcome {
        let outcome: SendOutcome
        do {
            outcome = switch piece {
            case .message(let message, let time, _): try sequencer.send(message, from: port, to: destination, at: time)
            case .sysExChunk(let chunk, _): try sequencer.send(sysExChunk: chunk, from: port, to: destination)
            }
        } catch {
            failures += 1
            if isLogged(failures) { logger.warning("\(error) (\(failures) failures so far)") }
            return .sent
        }
        // Refused for every subscriber of a port that has several, it reached those that had room (the kernel does
        // not say which): written again, it would reach them twice, so the others go without it.
        guard outcome == .full, destination == nil, sequencer.subscribers(of: port).count > 1 else { return outcome }
        var lost = OutputBacklog.Dropped()
        lost.add(piece)
        count(lost, endpoint: endpoints[port]?.name ?? "port \(port)")
        return .sent
    }

    /// Where our port `port` sends for `recipients`: nil for every subscriber at once (the usual case: the player to
    /// leave out does not listen to this port); otherwise the subscribers one by one, all but the player left out or
    /// the one player meant (none, if it does not listen to this port). Who subscribes is as of the last announcement
    /// read: a connection made or undone while a batch is routed counts from the next one.
    func destinations(of port: Int32, for recipients: Recipients) -> [SequencerAddress]? {
        guard let player = recipients.origin.sequencerPort else { return recipients.isOnly ? [] : nil }
        let target = SequencerAddress(client: Int32(player.client), port: Int32(player.port))
        let subscribers = self.subscribers[port] ?? sequencer.subscribers(of: port)
        self.subscribers[port] = subscribers
        guard subscribers.contains(target) else { return recipients.isOnly ? [] : nil }
        return recipients.isOnly ? [target] : subscribers.filter { $0 != target }
    }

    /// Counts what the port of `endpoint` dropped for want of room, and logs it (rate-limited, as failures are).
    func count(_ lost: OutputBacklog.Dropped, endpoint: String) {
        noRoom.add(lost)
        noRoomLogged += 1
        guard isLogged(noRoomLogged) else { return }
        let releases = lost.releases == 0 ? "" : ", \(counted(lost.releases, "note-off or pedal release")) among them: notes may hang"
        let why = "the ALSA sequencer had no room for (a destination not reading, or too many events scheduled)"
        logger.warning("\(endpoint): dropped \(counted(lost.pieces, "message")) \(why)\(releases) (\(noRoom.pieces) dropped so far)")
    }

    /// Logs the SysEx bytes a port going away had not sent yet.
    func dropped(sysExBytes: Int, endpoint: String) {
        logger.warning("\(endpoint): \(sysExBytes) SysEx bytes not sent: the endpoint went away before its output could take them")
    }

    /// Closes the sequencer (our ports and connections go with it), on the engine's queue
    /// once started, where input is handled.
    func stop() {
        if let queue = sink?.queue { queue.sync { sequencer.close() } } else { sequencer.close() }
    }

    private func handle(_ input: SequencerInput) {
        switch input {
        case .midi(let message, let source, let port):
            pass(message, from: source, port: port)
        case .sysExChunk(let chunk, let source, let port):
            guard endpoints[port] != nil else { return }
            var completed: MIDIMessage?
            sysEx[source, default: [:]][port, default: SysExAssembler(limit: 1 << 20)].add(chunk) { completed = $0 }
            if let completed { pass(completed, from: source, port: port) }
        case .portAppeared(let address):
            connectMatching(sequencer.ports().filter { $0.address == address })
        case .portGone(let address):
            subscribers = [:]
            gone(address)
        case .connectionsChanged:
            subscribers = [:]
        case .inputOverrun:
            failures += 1
            logger.warning("the ALSA sequencer's input buffer overflowed: events were lost (\(failures) failures so far)")
        }
    }

    private func pass(_ message: MIDIMessage, from source: SequencerAddress, port: Int32) {
        guard let endpoint = endpoints[port], let sink else { return }
        held[source, default: [:]][port, default: HeldNotes()].track(message)
        sink.routeOnQueue(MIDIEvent(message, from: endpoint.id, origin: source.origin, at: MonotonicClock.now()))
    }

    private func gone(_ address: SequencerAddress) {
        let name = connected.removeValue(forKey: address)?.label
        sysEx[address] = nil
        var released = 0
        for (port, var notes) in held.removeValue(forKey: address) ?? [:] {
            guard let endpoint = endpoints[port], let sink else { continue }
            notes.releaseAll { message in
                released += 1
                sink.routeOnQueue(MIDIEvent(message, from: endpoint.id, origin: address.origin, at: MonotonicClock.now()))
            }
        }
        guard name != nil || released > 0 else { return }
        logger.info("ALSA port '\(name ?? address.description)' (\(address)) went away; \(released) held notes and pedals released")
    }

    /// Connects every endpoint with a pattern to the matching ones of `ports`, both ways.
    private func connectMatching(_ ports: [SequencerPort]) {
        for candidate in ports {
            for endpoint in endpoints.values {
                guard let pattern = endpoint.pattern, pattern.client.matches(candidate.clientName),
                      pattern.port.matches(number: Int(candidate.address.port), name: candidate.portName),
                      connected[candidate.address]?.ports.contains(endpoint.port) != true else { continue }
                let label = "\(candidate.clientName):\(candidate.portName.trimmingTrailingSpaces)"
                do {
                    if candidate.isSource { try sequencer.connect(from: candidate.address, to: endpoint.port) }
                    if candidate.isDestination { try sequencer.connect(from: endpoint.port, to: candidate.address) }
                    subscribers = [:]
                    connected[candidate.address, default: (label, [])].ports.insert(endpoint.port)
                    logger.info("ALSA port '\(label)' (\(candidate.address)) connected to \(endpoint.name)")
                } catch {
                    logger.warning("\(endpoint.name): \(error)")
                }
            }
        }
    }
}

extension SequencerAddress {
    /// This port as the player of the events it sends.
    var origin: EventOrigin {
        .sequencerPort(client: UInt8(truncatingIfNeeded: client), port: UInt8(truncatingIfNeeded: port))
    }
}

extension String {
    /// Without the spaces kernel clients pad their port names with.
    var trimmingTrailingSpaces: String {
        String(self[..<(lastIndex { $0 != " " }.map(index(after:)) ?? startIndex)])
    }
}

/// What an `ALSAPortSink` needs of its client: `ALSAClient`, or in tests one whose writes find no room on purpose (the
/// sequencer itself needs a kernel).
protocol ALSAPortClient: AnyObject {
    var timed: TimedOutput? { get }
    /// True if what is stamped ahead leaves at its time (the sequencer's queue).
    var schedulesAhead: Bool { get }
    /// Takes back the clock and transport scheduled for after `time` that have not left.
    func removeScheduledClockAndTransport(after time: MonotonicInstant)
    func destinations(of port: Int32, for recipients: Recipients) -> [SequencerAddress]?
    func write(_ piece: PacedOutput.Piece, from port: Int32, to destination: SequencerAddress?) -> SendOutcome
    func count(_ lost: OutputBacklog.Dropped, endpoint: String)
    func dropped(sysExBytes: Int, endpoint: String)
    func unregister(_ port: ALSAPortSink)
}

extension ALSAClient: ALSAPortClient {}

/// An `alsa:` endpoint as the engine's sink: what routes send to it leaves its port, SysEx paced to what a MIDI wire
/// carries (`PacedOutput`); what the sequencer has no room for waits in an `OutputBacklog`. The engine's timed output
/// resumes both at their time, so the port never waits on the engine's queue.
final class ALSAPortSink: TimedSink, @unchecked Sendable {
    let port: Int32
    let endpointName: String
    let pattern: (client: NameGlob, port: ALSAPortPattern)?
    private let client: any ALSAPortClient
    // Touched only on the engine's queue.
    private var output = PacedOutput(now: MonotonicClock.now())
    private var backlog = OutputBacklog()
    /// The port's ticket for its resumptions (`TimedOutput`), and when the next is due, if one is.
    private var resumptions: TimedTicket?
    private var resumeAt: MonotonicInstant?

    init(client: any ALSAPortClient, port: Int32, endpointName: String, pattern: (client: NameGlob, port: ALSAPortPattern)?) {
        self.client = client
        self.port = port
        self.endpointName = endpointName
        self.pattern = pattern
    }

    /// What is stamped ahead leaves through the sequencer's queue at its time.
    var sendsAtItsTime: Bool { client.schedulesAhead }

    /// Takes back the clock and transport after `time`: all that is handed to it ahead (`takesAhead`), the jam's.
    func takeBack(after time: MonotonicInstant, ticket: TimedTicket) {
        backlog.removeClockAndTransport(after: time)
        client.removeScheduledClockAndTransport(after: time)
    }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        let now = MonotonicClock.now()
        if output.admit(message, at: time, for: recipients) {
            send(.message(message, time, recipients), now: now)
        } else {
            drain(now: now)
        }
        schedule(now: now)
    }

    /// Sends what the pacing lets leave now.
    private func drain(now: MonotonicInstant) {
        while let piece = output.next(now: now) { send(piece, now: now) }
    }

    /// Writes `piece` to every subscriber at once, or to those its recipients pick one by one.
    private func send(_ piece: PacedOutput.Piece, now: MonotonicInstant) {
        guard let destinations = client.destinations(of: port, for: piece.recipients) else { return send(piece, to: nil, now: now) }
        for destination in destinations { send(piece, to: destination, now: now) }
    }

    /// Writes `piece`, or keeps it behind what waits, or where the sequencer had no room.
    private func send(_ piece: PacedOutput.Piece, to destination: SequencerAddress?, now: MonotonicInstant) {
        guard backlog.holdsBack(piece) || write(piece, destination) == .full else { return }
        count(backlog.keep(piece, for: destination, at: now))
    }

    private func write(_ piece: PacedOutput.Piece, _ destination: SequencerAddress?) -> SendOutcome {
        client.write(piece, from: port, to: destination)
    }

    private func count(_ lost: OutputBacklog.Dropped) {
        if !lost.isEmpty { client.count(lost, endpoint: endpointName) }
    }

    /// Asks the timed output to resume the port when the pacing lets more leave or, while something waits for room,
    /// at the next retry; an earlier resumption asked for stays.
    private func schedule(now: MonotonicInstant) {
        var wait = output.wait(now: now)
        if !backlog.isEmpty { wait = min(wait ?? .max, OutputBacklog.retryInterval) }
        guard let wait, let timed = client.timed else { return }
        let due = now.advanced(byNanoseconds: wait)
        if let resumeAt, resumeAt <= due { return }
        let ticket = resumptions ?? timed.ticket()
        resumptions = ticket
        timed.withdraw(ticket)
        timed.call(at: due, ticket: ticket) { [weak self] in self?.resumed() }
        resumeAt = due
    }

    /// Resumed at its time: writes again what waited for room, sends what the pacing lets leave, and sets the timer again.
    private func resumed() {
        resumeAt = nil
        let now = MonotonicClock.now()
        count(backlog.retry(now: now, write: write))
        drain(now: now)
        schedule(now: now)
    }

    /// Sends what waited (messages, and an F7 ending a SysEx already begun) and tries once more what had no room,
    /// dropping what still has none, then removes the port.
    func stop() {
        if let resumptions { client.timed?.withdraw(resumptions) }
        resumptions = nil
        resumeAt = nil
        let now = MonotonicClock.now()
        let (pieces, dropped) = output.flush()
        for piece in pieces { send(piece, now: now) }
        var lost = backlog.retry(now: now, write: write)
        lost.add(backlog.removeAll())
        count(lost)
        if dropped > 0 { client.dropped(sysExBytes: dropped, endpoint: endpointName) }
        client.unregister(self)
    }
}
