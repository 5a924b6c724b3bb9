import Dispatch
import Jam
import Link
import Logging
import MIDI
import RTPMIDI
import RouteFile

/// The jam (`clock:`, `activity:`): the `JamConductor` on the engine's queue, an endpoint like any other (`jam`).
/// Its sink is the end of the route from every source (RouteConfiguration.jamRoutes): clock, transport and activity
/// levels come to it with their sender times and players; its source enters the routes to the session and to each
/// clock output under IDs of their own, so that it picks where each message goes. What the clock sends it posts to
/// the engine's timed output with its time (which hands it ahead to the outputs that send at a message's time), and
/// withdraws what the song no longer holds. It keeps its state through a reload that leaves its settings as they are
/// (the outputs may change). It publishes its song (`PublishedSong`) to the parts that play along it: the drums.
final class JamPart: Part, @unchecked Sendable { // the conductor and what it sends to: on the engine's queue
    private var declaration: JamDeclaration
    private let logger: Logger
    private let monitor: EventMonitor?
    private var engine: (any EventSink)?
    private var conductor: JamConductor?
    /// The `jam` endpoint: what the engine routes to the jam, and what the jam sends.
    private let input = JamSink(), output = JamSource()
    /// The jam's routes to the session and to each clock output that runs.
    private var routes: [JamRoute] = []
    /// What the jam posts to the timed output (its messages), and its deadlines there.
    private var sending: TimedTicket?, deadlines: TimedTicket?
    /// When the next deadline is asked for.
    private var deadlineDue: MonotonicInstant?
    /// The names the session's peers gave, by player; the endpoints' names, by the IDs they enter routes under.
    private var playerNames: [EventOrigin: String] = [:]
    private var endpointNames: [EndpointID: String] = [:]
    /// Where the song is published for the drums.
    private var published: PublishedSong?
    /// The Ableton Link session (`clock: { link: ... }`), its state as last read, and the timer that reads it.
    private var link: LinkSession?
    private var linkSeen: LinkSession.State?
    private var linkTimer: DispatchSourceTimer?
    /// The Link tempo last logged: a tempo dragged in an app is logged when it settles, not at every step.
    private var linkTempoLogged: Double?
    /// How often the Link session is read: a Link app's start, stop or tempo reaches the jam within this.
    static let linkInterval: UInt64 = 10_000_000
    private var refusals = 0
    /// The jam's lines a flood could repeat, each kind logged one by one at most `LogWindow.limit` times in a window.
    private var logWindows: [LogKind: LogWindow] = [:]
    private var shownTempo: Double?

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: JamDeclaration)] {
        configuration.jam.map { [("jam", $0)] } ?? []
    }

    init(_ declaration: JamDeclaration, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        self.declaration = declaration
        logger = context.logger
        monitor = context.monitor
        input.part = self
        output.part = self
    }

    var endpoints: [String: RunningEndpoint] {
        [JamDeclaration.endpointName: RunningEndpoint(source: output, sink: input, entersEachRoute: true)]
    }

    /// Keeps the jam (its master, its song) while its rules stay, whatever the drums do; the outputs follow at
    /// `start`.
    func apply(_ block: JamDeclaration, in configuration: RouteConfiguration) -> PartUpdate {
        guard block.policy == declaration.policy, block.onMasterLost == declaration.onMasterLost,
              block.tempo == declaration.tempo, block.activity == declaration.activity, block.link == declaration.link
        else { return .replace }
        declaration = block
        return .applied
    }

    func start(_ wiring: Wiring) {
        let engine = wiring.engine
        self.engine = engine
        let identity = wiring.identity() // the session's, which it answers on the engine's queue
        engine.queue.sync {
            published = wiring.song
            attach(wiring, as: identity)
            if sending == nil { (sending, deadlines) = (engine.timed.ticket(ahead: .clockAndTransport), engine.timed.ticket()) }
            fire(MonotonicClock.now())
            if declaration.link != nil, link == nil { joinLink(engine) }
        }
    }

    /// Joins the Link session (`clock: { link: ... }`) and reads it every `linkInterval` on the engine's queue.
    private func joinLink(_ engine: any EventSink) {
        do {
            link = try LinkSession(tempo: conductor?.generator.tempo ?? declaration.tempo, interfaces: declaration.link!.interfaces)
        } catch {
            logger.error("jam: \(error); the jam runs without Link")
            return
        }
        let timer = DispatchSource.makeTimerSource(queue: engine.queue)
        timer.setEventHandler { [weak self] in self?.readLink() }
        timer.schedule(deadline: .now(), repeating: .nanoseconds(Int(Self.linkInterval)), leeway: .milliseconds(1))
        timer.resume()
        linkTimer = timer
        logger.info("jam: in the Ableton Link session (bars of \(Int(declaration.link!.quantum)) beats): its tempo, beats and start and stop are the jam's")
    }

    /// What a Link peer changed since the last read reaches the jam: a start or stop is one from this instance (the
    /// Link session is a player), a tempo moves the song's; then the song is put on the session's beats.
    private func readLink() {
        guard let link, let quantum = declaration.link?.quantum, conductor != nil else { return }
        let now = MonotonicClock.now()
        let state = link.state(quantum: quantum)
        let seen = linkSeen
        linkSeen = state
        if let seen, state.timeline.peers != seen.timeline.peers {
            logger.info("jam: the Link session has \(counted(state.timeline.peers, "other peer"))")
        }
        // The song on the session's beats first, so that a start below counts its bar line on them.
        drive { $0.share(state.timeline, now: now, emit: $1) }
        if let seen, state.playing != seen.playing {
            let command: JamCommand = state.playing ? .start : .stop
            let result = drive { $0.perform(command, from: .link, now: now, requested: state.playing ? state.playingSince : nil, emit: $1) }
            switch result {
            case .success(let text): log(.command, .info, "jam: the Link session \(state.playing ? "started" : "stopped"): \(text)")
            case .failure(let refusal): log(.refusal, .notice, "jam: the Link session \(state.playing ? "started" : "stopped"): \(refusal.reason)")
            }
        }
        let tempo = (state.timeline.tempo * 10).rounded() / 10
        if let seen, seen.timeline.tempo == state.timeline.tempo, linkTempoLogged != tempo {
            linkTempoLogged = tempo
            let range = ClockGenerator.tempoRange
            if range.contains(state.timeline.tempo) {
                log(.command, .info, "jam: the Link session's tempo is \(tempo) BPM")
            } else {
                log(.command, .warning, "jam: the Link session's tempo is \(tempo) BPM, outside the jam's \(Int(range.lowerBound))-\(Int(range.upperBound)): the jam keeps its own tempo and beats until it comes back")
            }
        }
        closeLogWindows(at: now)
        scheduleDeadline(now: now)
    }

    /// Carries out on the Link session what the jam's song asks of it, and reads it again.
    private func change(_ link: LinkSession, _ change: SharedChange, quantum: Double) {
        switch change {
        case .start(let beat, let time):
            if link.peers == 0 { link.requestBeat(beat, at: time, quantum: quantum) }
            if linkSeen?.playing != true { link.setPlaying(true, at: time) }
        case .stop(let time):
            if linkSeen?.playing != false { link.setPlaying(false, at: time) }
        case .tempo(let bpm):
            link.setTempo(bpm, at: MonotonicClock.now())
        }
        linkSeen = link.state(quantum: quantum)
    }

    /// Points the jam at the routes `wiring` has for it; makes the conductor the first time.
    private func attach(_ wiring: Wiring, as identity: (ssrc: UInt32, name: String)?) {
        let name = JamDeclaration.endpointName
        endpointNames = Dictionary(wiring.ids.map { ($1, $0) } + wiring.routeIDs.flatMap { name, ids in ids.values.map { ($0, name) } },
                                   uniquingKeysWith: { first, _ in first })
        routes = wiring.configuration.allRoutes.enumerated().compactMap { index, route in
            guard route.from == [name], let sink = route.to.first, let id = wiring.routeIDs[name]?[index] else { return nil }
            let kind = wiring.configuration.endpoints.first { $0.name == sink }?.kind
            let isPeer = if case .peer = kind { true } else { false }
            return JamRoute(sink: sink, isSession: kind == .session, isPeer: isPeer, id: id)
        }
        guard conductor == nil else { return }
        let identity = identity ?? (ssrc: UInt32.random(in: 1...UInt32.max), name: "jambridge")
        conductor = JamConductor(JamConductor.Configuration(
            election: ElectionConfiguration(ssrc: identity.ssrc, name: identity.name, policy: declaration.policy,
                                            onMasterLost: declaration.onMasterLost),
            activity: declaration.activity, tempo: declaration.tempo))
        let outputs = declaration.clockOutputs.filter { output in routes.contains { $0.sink == output } }
        logger.info("jam: \(describe(declaration.policy)), \(declaration.onMasterLost == .next ? "the next continues when the master leaves" : "the rhythm ends when the master leaves"), tempo \(declaration.tempo) BPM, clock to \(outputs.isEmpty ? "the session only" : outputs.joined(separator: ", ")); activity CC \(declaration.activity.player.controller.value) in, total CC \(declaration.activity.total.controller.value) out (\(declaration.activity.combine))")
    }

    func report(into status: inout DaemonStatus) {
        guard let engine else { return }
        engine.queue.sync {
            guard let conductor else { return }
            status.jam = report(conductor, at: MonotonicClock.now())
        }
    }

    /// Ends the jam's sending, as its source stops (before the engine stops): a clock it runs sends Stop to this
    /// instance's clock outputs, not to the session (leaving is not stopping: its peers hear the session's goodbye).
    fileprivate func finish() {
        engine?.queue.sync {
            if conductor?.generator.isRunning == true {
                drive { $0.leave(now: MonotonicClock.now(), emit: $1) }
                logger.info("jam: leaving the session's song to its peers; stopped at this instance's clock outputs")
            }
            closeLogWindows(at: nil)
            routes = []
            if let sending, let deadlines, let engine {
                engine.timed.withdraw(sending, after: MonotonicClock.now())
                engine.timed.withdraw(deadlines)
            }
            deadlineDue = nil
            published?.publish(.silent)
        }
    }

    /// Stops reading Link, and leaves the Link session (its threads end here, off the engine's queue).
    func stop() {
        let leaving = engine?.queue.sync { () -> LinkSession? in
            linkTimer?.cancel()
            linkTimer = nil
            linkSeen = nil
            defer { link = nil }
            return link
        }
        _ = leaving // the last reference: it goes as this returns
    }

    /// Carries out the jam's commands (`jambridge start|stop|tempo`, the status page or OSC), on the engine's queue.
    func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal>? {
        guard case .jam(let command) = command else { return nil }
        guard let engine else { return .failure(JamRefusal(reason: "the jam is not running")) }
        return engine.queue.sync { jam(command, from: channel) }
    }

    // MARK: On the engine's queue

    /// Carries out a start, stop or tempo that came through `channel` and says what happened.
    private func jam(_ command: JamCommand, from channel: CommandChannel) -> Result<String, JamRefusal> {
        guard conductor != nil else { return .failure(JamRefusal(reason: "the jam is not running")) }
        let now = MonotonicClock.now()
        // A Start's first tick (and the total a new master sends) is due at once: it goes out with it, in the same
        // packet, not when the timer next fires nor after the log lines of the change.
        let result = drive { conductor, emit in
            let result = conductor.perform(command, from: channel, now: now, emit: emit)
            conductor.fire(now: now, ahead: TimedOutput.lead, emit: emit)
            return result
        }
        fire(now)
        switch result {
        case .success(let text): log(.command, .info, "jam: \(command) from \(channel): \(text)")
        case .failure(let refusal): log(.refusal, .notice, "jam: \(command) from \(channel): \(refusal.reason)")
        }
        return result
    }

    /// The jam's state at `now`.
    private func report(_ conductor: JamConductor, at now: MonotonicInstant) -> DaemonStatus.Jam {
        let master: (name: String, ssrc: UInt32?)? = switch conductor.election.master {
        case .local(let name): (name, nil)
        case .peer(let ssrc, let name): (name, ssrc)
        case nil: nil
        }
        return DaemonStatus.Jam(
            role: conductor.election.role.rawValue, master: master?.name, masterSSRC: master?.ssrc, tempo: conductor.tempo,
            songBeat: conductor.songTick(at: now).map { Int($0) / MIDIClock.ticksPerBeat + 1 },
            total: Int((conductor.aggregator.heardTotal ?? conductor.aggregator.total(at: now)).value),
            totalFromMaster: conductor.aggregator.heardTotal != nil,
            players: conductor.aggregator.levels(at: now).map { DaemonStatus.Player(name: describe($0.player), level: Int($0.level.value)) }
                .sorted { $0.name < $1.name },
            refused: refusals, overRate: conductor.counters.transportOverRate, backdated: conductor.counters.backdated,
            refusedTempos: conductor.generator.counters.refusedTempos, repositions: conductor.counters.repositions,
            healed: conductor.election.counters.healed,
            link: linkSeen.map { state in
                let beat = state.timeline.beat(at: now), quantum = state.timeline.quantum
                return DaemonStatus.LinkSession(peers: state.timeline.peers, tempo: state.timeline.tempo, beat: beat,
                                                phase: beat - (beat / quantum).rounded(.down) * quantum, quantum: quantum,
                                                playing: state.playing)
            })
    }

    /// Takes what the engine routed to the jam: clock, transport and levels from every player, the session's peers
    /// with their sender times.
    fileprivate func take(_ message: MIDIMessage, routedFrom event: MIDIEvent) {
        guard conductor != nil else { return }
        let sender: JamSender
        if let ssrc = event.origin.networkPeer {
            sender = .peer(ssrc: ssrc, name: playerNames[event.origin] ?? "SSRC \(ssrc)")
        } else {
            sender = .local(endpoint: endpointNames[event.source] ?? event.source.description, origin: event.origin)
        }
        drive { _ = $0.receive(message, from: sender, arrival: event.time, senderTime: event.sent?.instant,
                               roundTrip: event.sent?.roundTrip, songTick: event.sent?.songTick, emit: $1) }
        scheduleDeadline(now: event.time)
    }

    /// A session peer joined, called `name`: if this instance leads, it is told where the song is.
    fileprivate func playerJoined(_ origin: EventOrigin, named name: String) {
        playerNames[origin] = name
        guard conductor != nil, let ssrc = origin.networkPeer else { return }
        conductor!.peerJoined(ssrc: ssrc)
    }

    /// A session peer left: its level goes, and if it led, the rhythm ends or is handed over.
    fileprivate func playerLeft(_ origin: EventOrigin, named name: String) {
        playerNames[origin] = nil
        guard conductor != nil, let ssrc = origin.networkPeer else { return }
        drive { $0.peerLeft(ssrc: ssrc, name: name, now: MonotonicClock.now(), emit: $1) }
        scheduleDeadline(now: MonotonicClock.now())
    }

    /// Runs `body` on the conductor and carries out what it emits; returns what `body` returns.
    @discardableResult
    private func drive<Result>(_ body: (inout JamConductor, (JamOutput) -> Void) -> Result) -> Result {
        var outputs: [JamOutput] = []
        let result = body(&conductor!) { outputs.append($0) }
        // Published before it is sent: the drums, told of a Start or Stop, read the song it begins.
        publish(at: MonotonicClock.now())
        perform(outputs)
        publish(at: MonotonicClock.now())
        return result
    }

    /// Publishes the song as it is now to the parts that play along it.
    private func publish(at now: MonotonicInstant) {
        guard let conductor, let published else { return }
        published.publish(PublishedSong.State(line: conductor.songLine, total: conductor.sessionTotal(at: now), tempo: conductor.tempo))
    }

    /// Asks the timed output to call the jam at its next deadline (`lead` ahead of the conductor's), if earlier than
    /// the one asked for.
    private func scheduleDeadline(now: MonotonicInstant) {
        guard let engine, let deadlines, let next = conductor?.nextDeadline(ahead: TimedOutput.lead),
              deadlineDue.map({ next < $0 }) ?? true else { return }
        deadlineDue = next
        engine.timed.withdraw(deadlines)
        engine.timed.call(at: next, ticket: deadlines) { [weak self] in
            self?.deadlineDue = nil
            self?.fire(MonotonicClock.now())
        }
    }

    /// What the jam does at each deadline: posts what falls due within `lead`.
    private func fire(_ now: MonotonicInstant) {
        guard conductor != nil else { return }
        drive { $0.fire(now: now, ahead: TimedOutput.lead, emit: $1) }
        closeLogWindows(at: now)
        if let monitor, let tempo = conductor!.tempo, shownTempo.map({ abs($0 - tempo) >= 0.5 }) ?? true,
           conductor!.election.master != nil {
            shownTempo = tempo
            monitor.note("tempo \((tempo * 10).rounded() / 10) BPM", at: now)
        }
        scheduleDeadline(now: now)
    }

    /// Posts what `outputs` deliver to the timed output, through the jam's routes, in one batch (what goes to the
    /// session at one instant leaves in one packet), and withdraws what they take back. Then logs what they say: a
    /// Start never waits behind a log line.
    private func perform(_ outputs: [JamOutput]) {
        guard let engine, let sending else { return }
        let now = MonotonicClock.now()
        // What goes to the session reaches every peer: a `peer:` clock output does not get it a second time.
        let session = routes.contains(where: \.isSession)
        engine.routeBatch {
            for output in outputs {
                switch output {
                case .deliver(let delivery) where delivery.toPeer != nil:
                    // To one peer: through the session (or the `peer:` outputs if the jam has no route to it), or the
                    // `peer:` outputs.
                    for route in routes where delivery.toSession && session ? route.isSession : route.isPeer {
                        engine.timed.post(MIDIEvent(delivery.message, from: route.id, at: delivery.time),
                                          only: .only(.networkPeer(ssrc: delivery.toPeer!)), ticket: sending)
                    }
                case .deliver(let delivery):
                    for route in routes where route.isSession ? delivery.toSession
                        : delivery.toLocal && route.sink != delivery.except && !(route.isPeer && session && delivery.toSession) {
                        engine.timed.post(MIDIEvent(delivery.message, from: route.id, at: delivery.time), ticket: sending)
                    }
                case .withdraw(let time):
                    engine.timed.withdraw(sending, after: time)
                default:
                    break
                }
            }
        }
        for output in outputs {
            switch output {
            case .deliver, .withdraw:
                break
            case .share(let shared):
                guard let link, let quantum = declaration.link?.quantum else { break }
                change(link, shared, quantum: quantum)
                // A tempo set here is the session's at once: the song goes on at it, on the session's beats.
                if case .tempo = shared, let timeline = linkSeen?.timeline {
                    drive { $0.share(timeline, now: now, emit: $1) }
                }
            case .changed(let change):
                log(.change, .info, "\(change)")
                monitor?.note("\(change)", at: MonotonicClock.now())
            case .overRate(let message, let source):
                let count = conductor!.counters.transportOverRate
                log(.refusal, .warning, "jam: refused \(message) from \(source): more than \(Int(JamConductor.transportRate.perSecond)) starts and stops a second from one source (\(counted(count, "message")) refused so far)")
            case .backdated(let message, let source, let seconds):
                let count = conductor!.counters.backdated
                if isLogged(count) {
                    logger.warning("jam: \(message) from \(source) said it was sent \((seconds * 10).rounded() / 10) s before it came, longer than the network takes: taken as sent as early as the network allows (the round trip and \(Double(JamConductor.backdatingMargin) / 1e9) s before it came) (\(counted(count, "message")) so far)")
                }
            case .repositioned(let sixteenth, let why):
                let count = conductor!.counters.repositions
                if isLogged(count) {
                    logger.notice("jam: the song moved (\(why)): Stop, then Song Position \(sixteenth) and Continue to every clock output (\(counted(count, "reposition")) so far)")
                }
            case .refused(let message, let source, let master):
                refusals += 1
                log(.refusal, .warning, "jam: refused \(message) from \(source): \(master.map { "\($0) leads" } ?? "it may not lead") (\(counted(refusals, "message")) refused so far)")
            }
        }
    }

    /// The kinds of the jam's lines a flood could repeat, each bounded by a `LogWindow` of its own.
    private enum LogKind {
        /// Changes of clock master.
        case change
        /// Commands and transport messages refused: for the rate, by the election, Link's.
        case refusal
        /// Starts, stops and tempos carried out, and the Link session's tempo.
        case command

        /// What the summary line calls `count` lines of the kind.
        func leftOut(_ count: Int) -> String {
            switch self {
            case .change: "\(counted(count, "more change")) of clock master"
            case .refusal: counted(count, "more refusal")
            case .command: counted(count, "more start, stop or tempo line")
            }
        }
    }

    /// Logs `line` unless its kind had `LogWindow.limit` lines in the window; beyond, one line says how many more.
    private func log(_ kind: LogKind, _ level: Logger.Level, _ line: @autoclosure () -> String) {
        guard logWindows[kind, default: LogWindow()].admits(at: MonotonicClock.now(), summarize: { summarize(kind, $0) }) else { return }
        logger.log(level: level, "\(line())")
    }

    /// Ends each kind's window that is over at `now` (nil: every one, as the jam stops), saying how many lines it left out.
    private func closeLogWindows(at now: MonotonicInstant?) {
        for kind in logWindows.keys { logWindows[kind]!.close(at: now) { summarize(kind, $0) } }
    }

    private func summarize(_ kind: LogKind, _ count: Int) {
        logger.warning("jam: \(kind.leftOut(count)) in \(LogWindow.window / 1_000_000_000) s, not logged one by one (a flood?)")
    }

    private func describe(_ policy: ElectionConfiguration.Policy) -> String {
        switch policy {
        case .firstStart: "whoever starts the rhythm leads"
        case .fixed(let glob): "only '\(glob.pattern)' may lead"
        case .priority(let globs): "leaders by priority: \(globs.map { "'\($0.pattern)'" }.joined(separator: ", "))"
        }
    }

    private func describe(_ player: JamSender) -> String {
        switch player {
        case .local(let endpoint, let origin): origin == .none ? endpoint : "\(endpoint) \(origin)"
        case .peer(_, let name): name
        }
    }
}

/// One of the jam's routes: to the session or a clock output, by the sink's name, with the ID the jam enters it under.
private struct JamRoute {
    var sink: String
    var isSession: Bool
    /// True for a `peer:` endpoint (one peer of the session).
    var isPeer: Bool
    var id: EndpointID
}

/// The `jam` endpoint's sink: what the engine routes to the jam.
final class JamSink: SinkEndpoint, @unchecked Sendable { // `part`: set once, before it runs
    fileprivate weak var part: JamPart?

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {}

    func receive(_ message: MIDIMessage, routedFrom event: MIDIEvent, to recipients: Recipients) {
        part?.take(message, routedFrom: event)
    }

    func playerJoined(_ origin: EventOrigin, named name: String) {
        part?.playerJoined(origin, named: name)
    }

    func playerLeft(_ origin: EventOrigin, named name: String) {
        part?.playerLeft(origin, named: name)
    }

    func stop() {}
}

/// The `jam` endpoint's source: the part enters the jam's routes under their own IDs, through the engine it was started
/// with. It stops first when the daemon stops or the jam goes: a clock the jam runs sends Stop then, while the routes
/// still run.
final class JamSource: SourceEndpoint, @unchecked Sendable { // `part`: set once, before it runs
    fileprivate weak var part: JamPart?

    func start(id: EndpointID, sink: EventSink) {}

    func stop() {
        part?.finish()
    }
}
