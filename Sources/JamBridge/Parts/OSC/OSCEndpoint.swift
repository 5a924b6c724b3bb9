#if canImport(Glibc)
import Glibc
#endif
import Dispatch
import Jam
import Logging
import MIDI
import OSC
import Transport

/// An `osc:` endpoint: controllers send OSC to its UDP port; each route from it translates by its own `osc:`
/// block (its MIDI enters the router under an ID of that route's own), and MIDI routed to it goes back to the
/// controllers (at their host and `reply` port) and to the `send` targets, through the inverse mappings.
/// Datagrams from senders outside `accept` are counted and dropped unread. A controller's own change is not echoed
/// back to it; one that appears, or reappears after `forget` seconds of silence, is sent the full state; what a
/// controller is sent is paid for by what it sends (`ControllerFeed`). Everything after `start` runs on the
/// engine's queue.
final class OSCEndpoint: SourceEndpoint, @unchecked Sendable {
    /// One route from this endpoint: the ID its MIDI enters the router with, and its translation.
    struct Route {
        var id: EndpointID
        var mapping: OSCRouteMapping
        var mapper: OSCInputMapper
    }

    let name: String
    let settings: OSCEndpointSettings
    private let logger: Logger
    private let monitor: EventMonitor?
    private let socket: OSCSocket
    private let targets: [NetworkAddress]
    // Touched only on the engine's queue once started.
    private var routes: [Route] = []
    private var feedback = OSCFeedbackMapper(mappings: [])
    private var feedbackMappings: [OSCRouteMapping] = []
    private var echo = EchoFilter<NetworkAddress>()
    /// A controller: when it last sent, in monotonic seconds, and what it may be sent and is owed.
    private struct Controller {
        var lastHeard: Double
        var feed: ControllerFeed
    }

    /// The controllers, by the address their feedback goes to (stable for a controller even if it sends from
    /// changing ports).
    private var controllers: [NetworkAddress: Controller] = [:]
    /// Reused per MIDI message fed back: each controller, and whether the echo filter lets the message go to it.
    private var recipients: [(address: NetworkAddress, admitted: Bool)] = []
    private weak var sink: EventSink?
    /// Hands a `/jambridge/...` command to the daemon, which has the part it is for carry it out (and log it).
    private let commands: @Sendable (ControlCommand) -> Void
    private var ticker: DispatchSourceTimer?
    private var isStopped = false
    private var counts = (messages: 0, undecodable: 0, rejected: 0, unmatched: 0, sendFailures: 0, controllersRefused: 0,
                          notAccepted: 0, heldBack: 0, commandsIgnored: 0, commandsOverRate: 0)
    /// `/jambridge/...` commands pass at most as fast as the jam takes transport from one source (the drums' commands
    /// too, which do not reach the jam): a few presses a second, not a flood.
    private var commandRate = JamConductor.transportRate
    /// The most controllers fed back to at once: each costs a send per feedback message, and senders' addresses
    /// can be forged.
    static let maximumControllers = 64

    /// Opens the endpoint's socket; throws if the port cannot be had. Targets that do not resolve are logged
    /// and left out.
    init(name: String, settings: OSCEndpointSettings, logger: Logger, monitor: EventMonitor?,
         commands: @escaping @Sendable (ControlCommand) -> Void) throws(TransportError) {
        self.name = name
        self.commands = commands
        self.settings = settings
        self.logger = logger
        self.monitor = monitor
        guard let address = NetworkAddress(numeric: settings.listenHost, port: settings.listenPort) else {
            throw TransportError(operation: "listen for OSC on \(settings.listenHost)", code: EINVAL)
        }
        socket = try OSCSocket(listeningOn: address)
        targets = settings.targets.compactMap { target in
            do {
                return try NetworkAddress.resolve(target.host, port: target.port)
            } catch {
                logger.error("\(name): \(error); OSC feedback does not go there")
                return nil
            }
        }
        logger.info("\(name): listening for OSC on \(socket.address)")
    }

    /// Puts `routes` (the routes from this endpoint, with their `osc:` blocks) and `feedback` (every `osc:`
    /// block on a route from or to it) in force; call on the engine's queue. A route whose block is unchanged
    /// keeps its mapper (a button held through a reload still lets go); notes held through a route that is
    /// gone or translates differently now are released.
    func configure(routes newRoutes: [(id: EndpointID, mapping: OSCRouteMapping)], feedback mappings: [OSCRouteMapping]) {
        let old = Dictionary(routes.map { ($0.id, $0) }) { first, _ in first }
        let kept = Set(newRoutes.filter { old[$0.id]?.mapping == $0.mapping }.map(\.id))
        for route in routes where !kept.contains(route.id) { sink?.releaseHeld(by: route.id) }
        routes = newRoutes.map { route in
            if kept.contains(route.id), let same = old[route.id] { return same }
            return Route(id: route.id, mapping: route.mapping, mapper: OSCInputMapper(mapping: route.mapping))
        }
        if mappings != feedbackMappings {
            feedbackMappings = mappings
            feedback = OSCFeedbackMapper(mappings: mappings)
            for address in controllers.keys { controllers[address]?.feed.stateWasReplaced() }
        }
    }

    func start(id: EndpointID, sink: EventSink) {
        self.sink = sink
        do {
            try socket.start(queue: sink.queue, inBatches: { [weak sink] body in
                if let sink { sink.routeBatch(body) } else { body() }
            }) {
                [weak self] datagram, sender in self?.received(datagram, from: sender)
            }
        } catch {
            logger.error("\(name): \(error); this endpoint stays silent")
        }
    }

    /// Stops taking input and releases what it holds; feedback goes on until `close`.
    func stop() {
        sink?.queue.sync {
            isStopped = true
            ticker?.cancel()
            ticker = nil
            for route in routes { sink?.releaseHeld(by: route.id) }
        }
    }

    /// Closes the socket and logs the counts; the engine calls this through `OSCFeedbackSink`.
    func close() {
        socket.close()
        logger.info("\(name): \(counts.messages) OSC messages in, \(counts.rejected) rejected, \(counts.unmatched) unmatched, \(counts.undecodable) undecodable datagrams, \(counts.sendFailures) send failures, \(counts.notAccepted) datagrams from senders not accepted, \(counts.heldBack) feedback messages held back, \(counts.controllersRefused) senders beyond the \(Self.maximumControllers) controllers, \(counts.commandsIgnored) jambridge commands ignored (no 'control: true'), \(counts.commandsOverRate) over the rate")
    }

    /// Where it listens, the controllers heard within `forget` seconds and the targets; and what it dropped, by why.
    func report() -> (osc: DaemonStatus.OSC, dropped: [String: Int]) {
        let make = { [self] in
            let seconds = Double(MonotonicClock.now().nanoseconds) / 1e9
            let heard = controllers.filter { seconds - $0.value.lastHeard <= settings.forgetAfter }
                .sorted { $0.value.lastHeard > $1.value.lastHeard }
                .map { DaemonStatus.Controller(address: "\($0.key)", heardSecondsAgo: seconds - $0.value.lastHeard) }
            return (DaemonStatus.OSC(listen: "\(socket.address)", controllers: heard, targets: targets.map { "\($0)" }),
                    ["undecodable": counts.undecodable, "notAccepted": counts.notAccepted, "rejected": counts.rejected,
                     "unmatched": counts.unmatched, "controllersRefused": counts.controllersRefused,
                     "feedbackHeldBack": counts.heldBack, "sendFailures": counts.sendFailures,
                     "commandsIgnored": counts.commandsIgnored, "commandsOverRate": counts.commandsOverRate])
        }
        return sink?.queue.sync(execute: make) ?? make()
    }

    /// Waits, off the engine's queue, until `close` has freed the port, at most `timeout`: false if it is not free yet.
    func waitUntilClosed(within timeout: Duration) -> Bool {
        socket.waitUntilClosed(within: timeout)
    }

    private func received(_ datagram: OSCSocket.Datagram, from sender: NetworkAddress) {
        guard !isStopped else { return }
        guard settings.accept.accepts(sender) else {
            counts.notAccepted += 1
            if isLogged(counts.notAccepted) {
                logger.warning("\(name): ignored OSC from \(sender), which 'accept' does not list (\(counts.notAccepted) so far)")
            }
            return
        }
        let now = MonotonicClock.now()
        let seconds = Double(now.nanoseconds) / 1e9
        let replyTo = settings.replyPort.map { sender.with(port: $0) } ?? sender
        var heard = false, isController = false
        do throws(OSCDecodeError) {
            switch datagram {
            case .bytes(let bytes):
                // The decoder checks the whole packet before it hands over a message: only OSC makes a controller.
                try OSCPacket.decode(bytes) { message, _ in
                    if !heard {
                        heard = true
                        isController = heardFrom(replyTo, datagramBytes: bytes.count, at: seconds)
                    }
                    map(message, from: isController ? replyTo : nil, sender: sender, at: now)
                }
            case .oversized(let count):
                undecodable("a datagram of \(count) bytes, more than the largest accepted", from: sender)
            }
        } catch {
            undecodable("\(error)", from: sender)
        }
        scheduleTicks()
    }

    /// Notes that the controller answered at `address` sent a datagram of OSC, `datagramBytes` long, at
    /// `seconds`, and sends it what that earns of what it is owed: a controller that is new, or back after
    /// `forget` seconds of silence, is owed the full state. Controllers silent that long are forgotten.
    /// False if it is not one (`maximumControllers` are known already): it gets no feedback and nothing
    /// is kept about it.
    private func heardFrom(_ address: NetworkAddress, datagramBytes: Int, at seconds: Double) -> Bool {
        forgetSilentControllers(at: seconds)
        if controllers[address] == nil {
            guard controllers.count < Self.maximumControllers else {
                counts.controllersRefused += 1
                if isLogged(counts.controllersRefused) {
                    logger.warning("\(name): \(Self.maximumControllers) controllers at once; \(address) gets no feedback (\(counts.controllersRefused) refused so far)")
                }
                return false
            }
            controllers[address] = Controller(lastHeard: seconds, feed: ControllerFeed(stateCount: feedback.stateCount))
        }
        controllers[address]?.lastHeard = seconds
        controllers[address]?.feed.earn(byteCount: datagramBytes)
        let now = MonotonicClock.now()
        controllers[address]?.feed.catchUp(on: feedback) { send($0, to: address, at: now) }
        return true
    }

    private func forgetSilentControllers(at seconds: Double) {
        for (address, controller) in controllers where seconds - controller.lastHeard > settings.forgetAfter {
            controllers[address] = nil
            echo.forget(address)
        }
    }

    private func undecodable(_ reason: String, from sender: NetworkAddress) {
        counts.undecodable += 1
        if isLogged(counts.undecodable) {
            logger.warning("\(name): undecodable OSC from \(sender): \(reason) (\(counts.undecodable) so far)")
        }
    }

    /// Maps `message` by every route; `controller` (nil for a sender that is not one) is remembered as the
    /// source of what it produced, so that its own values are not echoed back to it.
    private func map(_ message: OSCMessage, from controller: NetworkAddress?, sender: NetworkAddress, at now: MonotonicInstant) {
        counts.messages += 1
        monitor?.show(osc: "\(message)", from: "\(sender)", to: name, at: now)
        if message.address.hasPrefix(Self.commandPrefix) {
            command(message, from: sender, at: now)
            return
        }
        let seconds = Double(now.nanoseconds) / 1e9
        var taken = false
        for index in routes.indices {
            let id = routes[index].id
            let outcome = routes[index].mapper.map(message, at: seconds) { midi in
                if let controller { echo.record(midi, from: controller) }
                sink?.routeOnQueue(MIDIEvent(midi, from: id, at: now))
            }
            switch outcome {
            case .mapped:
                taken = true
            case .unmatched:
                break
            case .rejected(let rejection):
                taken = true
                counts.rejected += 1
                if isLogged(counts.rejected) {
                    logger.warning("\(name): \(rejection) (\(counts.rejected) rejected so far)")
                }
            }
        }
        if !taken {
            counts.unmatched += 1
            logger.debug("\(name): no osc: entry takes \(message.address)")
        }
    }

    /// Carries out a `/jambridge/...` command if the endpoint takes them (`control: true`) and they come no faster
    /// than `commandRate`; every other is counted, and logged the first times.
    private func command(_ message: OSCMessage, from sender: NetworkAddress, at now: MonotonicInstant) {
        guard settings.control else {
            counts.commandsIgnored += 1
            if isLogged(counts.commandsIgnored) {
                logger.warning("\(name): ignored \(message.address) from \(sender): this endpoint takes jambridge commands only with 'control: true' (\(counts.commandsIgnored) ignored so far)")
            }
            return
        }
        guard commandRate.take(now: now) else {
            counts.commandsOverRate += 1
            if isLogged(counts.commandsOverRate) {
                logger.warning("\(name): refused \(message.address) from \(sender): more than \(Int(commandRate.perSecond)) jambridge commands a second (\(counts.commandsOverRate) refused so far)")
            }
            return
        }
        guard let command = ControlCommand(message) else {
            counts.rejected += 1
            if isLogged(counts.rejected) {
                logger.warning("\(name): \(message.address) is not a jambridge command; they are \(Self.commandPrefix)start, \(Self.commandPrefix)stop, \(Self.commandPrefix)tempo with the beats a minute, \(Self.commandPrefix)drums/style with a style, \(Self.commandPrefix)drums/level with a whole level (0: follow) and \(Self.commandPrefix)drums/mute with a voice and 1 or 0 (\(counts.rejected) rejected so far)")
            }
            return
        }
        commands(command)
    }

    /// Sends `message`'s feedback to the targets and to the controllers heard from within `forget` seconds (not
    /// the one whose own change it is) that have the credit for it; a controller without is owed it instead.
    fileprivate func feedback(for message: MIDIMessage, at time: MonotonicInstant) {
        forgetSilentControllers(at: Double(MonotonicClock.now().nanoseconds) / 1e9)
        recipients.removeAll(keepingCapacity: true)
        for address in controllers.keys { recipients.append((address, echo.admits(message, to: address))) }
        feedback.feedback(for: message) { osc, stateIndex in
            for target in targets { send(osc, to: target, at: time) }
            for (address, admitted) in recipients {
                if !admitted {
                    if let stateIndex { controllers[address]?.feed.markCurrent(stateIndex) }
                } else if controllers[address]?.feed.offer(osc, stateIndex: stateIndex, send: { send($0, to: address, at: time) }) == false {
                    counts.heldBack += 1
                }
            }
        }
    }

    private func send(_ message: OSCMessage, to address: NetworkAddress, at time: MonotonicInstant) {
        monitor?.show(osc: "\(message)", from: name, to: "\(address)", at: time)
        do {
            try socket.send(message, to: address)
        } catch {
            counts.sendFailures += 1
            if isLogged(counts.sendFailures) {
                logger.warning("\(name): cannot send OSC to \(address): \(error) (\(counts.sendFailures) so far)")
            }
        }
    }

    /// Ticks the mappers every 10 ms while a smoothed value or an activity level is still moving.
    private func scheduleTicks() {
        guard ticker == nil, routes.contains(where: \.mapper.needsTick), let queue = sink?.queue else { return }
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.schedule(deadline: .now() + .milliseconds(10), repeating: .milliseconds(10), leeway: .milliseconds(1))
        timer.setEventHandler { [weak self, weak sink] in sink?.routeBatch { self?.tick() } }
        ticker = timer
        timer.resume()
    }

    private func tick() {
        let now = MonotonicClock.now()
        let seconds = Double(now.nanoseconds) / 1e9
        for index in routes.indices {
            let id = routes[index].id
            routes[index].mapper.tick(at: seconds) { midi in sink?.routeOnQueue(MIDIEvent(midi, from: id, at: now)) }
        }
        if !routes.contains(where: \.mapper.needsTick) {
            ticker?.cancel()
            ticker = nil
        }
    }
}

/// An `osc:` endpoint as the engine's sink: MIDI routed to it goes back to its controllers as OSC.
final class OSCFeedbackSink: SinkEndpoint, @unchecked Sendable {
    let endpoint: OSCEndpoint

    init(endpoint: OSCEndpoint) {
        self.endpoint = endpoint
    }

    /// OSC controllers play as the endpoint (`.none`); the endpoint keeps a controller's own changes from it.
    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        guard recipients.include(.none) else { return }
        endpoint.feedback(for: message, at: time)
    }

    func stop() { endpoint.close() }
}

extension OSCEndpoint {
    /// Where jambridge's own commands are: `/jambridge/start`, `/jambridge/stop`, `/jambridge/tempo BPM`.
    static let commandPrefix = "/jambridge/"
}

extension ControlCommand {
    /// The command an OSC message under `/jambridge/` is, or nil.
    public init?(_ message: OSCMessage) {
        let arguments = message.arguments
        switch message.address.dropFirst(OSCEndpoint.commandPrefix.count) {
        case "start" where arguments.isEmpty: self = .jam(.start)
        case "stop" where arguments.isEmpty: self = .jam(.stop)
        case "tempo" where arguments.count == 1:
            guard let bpm = Self.number(arguments[0]) else { return nil }
            self = .jam(.tempo(bpm))
        case "drums/style" where arguments.count == 1:
            guard case .string(let style) = arguments[0] else { return nil }
            self = .drums(.style(style))
        case "drums/level" where arguments.count == 1:
            // A whole number, whatever type it came as; NaN, infinities and numbers beyond Int are no level.
            guard let level = Self.number(arguments[0]).flatMap({ Int(exactly: $0.rounded()) }) else { return nil }
            self = .drums(.level(level == 0 ? nil : level))
        case "drums/mute" where arguments.count == 2:
            guard case .string(let voice) = arguments[0], let on = Self.number(arguments[1]) else { return nil }
            self = .drums(.mute([voice], on != 0))
        default: return nil
        }
    }

    private static func number(_ argument: OSCArgument) -> Double? {
        switch argument {
        case .float(let value): Double(value)
        case .double(let value): value
        case .int32(let value): Double(value)
        default: nil
        }
    }
}
