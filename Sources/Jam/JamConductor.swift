import MIDI

/// Who sent a message into the jam: a player behind an endpoint of this instance, or a session peer.
public enum JamSender: Hashable, Sendable {
    /// An endpoint of this instance (an ALSA port, an OSC controller, a song), by name, and the player inside it.
    case local(endpoint: String, origin: EventOrigin)
    /// A peer of the RTP-MIDI session, by SSRC, with the name it gave.
    case peer(ssrc: UInt32, name: String)

    /// The source the election knows it as.
    public var clockSource: ClockSource {
        switch self {
        case .local(let endpoint, _): return .local(endpoint)
        case .peer(let ssrc, let name): return .peer(ssrc: ssrc, name: name)
        }
    }
}

/// A message the jam sends, with its due time and where it goes.
public struct JamDelivery: Hashable, Sendable {
    public var message: MIDIMessage
    public var time: MonotonicInstant
    /// To every peer of the session.
    public var toSession: Bool
    /// To the instance's clock outputs (`clock: { to: [...] }`) but `except`, the endpoint it came from.
    public var toLocal: Bool
    public var except: String?
    /// To this one peer alone (a late joiner told where the song is): through the session if `toSession`, through the
    /// clock outputs that reach it (`peer:` endpoints) if `toLocal`.
    public var toPeer: UInt32? = nil
}

/// What the jam wants done: deliveries, and what to log.
public enum JamOutput: Equatable, Sendable {
    case deliver(JamDelivery)
    /// The clock master changed: one log line (`change.description`).
    case changed(LeadershipChange)
    /// A transport message from a source that does not lead was dropped (counted by the election).
    case refused(MIDIMessage, from: ClockSource, master: ClockSource?)
    /// A transport message came faster than `JamConductor.transportRate` lets one source's through: dropped, counted.
    case overRate(MIDIMessage, from: ClockSource)
    /// A transport message was stamped earlier than the network could have taken to bring it: it counts as sent as
    /// early as the network allows, the round trip and `backdatingMargin` before its arrival (counted).
    case backdated(MIDIMessage, from: ClockSource, seconds: Double)
    /// The ticks delivered ahead (`fire(now:ahead:)`) that fall after the instant are taken back: the rhythm stopped,
    /// restarted or changed hands, and what follows must not meet the old song's ticks.
    case withdraw(after: MonotonicInstant)
    /// What the shared timeline (`share`: Ableton Link's session) is to do for this instance's song.
    case share(SharedChange)
    /// The song this instance leads moved by more than a sixteenth (`why`): its outputs got Stop, then Song Position
    /// `sixteenth` and Continue.
    case repositioned(sixteenth: Int, why: Reposition)
}

/// Why the song moved by more than a sixteenth.
public enum Reposition: Equatable, Sendable, CustomStringConvertible {
    /// The shared timeline's beat jumped (a Link app moved the session's phase) by `beats`.
    case sharedJump(beats: Double)
    /// More than a beat's ticks were overdue (the daemon was held `seconds`).
    case overdue(seconds: Double)
    /// The leading peer's song, as the follower reads it, moved by more than a beat (`ticks`, positive ahead) from
    /// the ticks the clock outputs got: its master jumped (its journal's count), or its clock came back after a while.
    case masterJumped(ticks: Int)

    public var description: String {
        switch self {
        case .sharedJump(let beats): "the Link session's beat jumped \(format(beats)) beats"
        case .overdue(let seconds): "its ticks were \(format(seconds * 1000)) ms overdue"
        case .masterJumped(let ticks): "the master's song moved \(ticks) ticks from what the outputs played"
        }
    }
}

/// What this instance's song asks of the timeline it shares (Ableton Link's session).
public enum SharedChange: Equatable, Sendable {
    /// Play from `beat` (a bar line) at `time`: in a session alone, that beat is put there; with peers it is there.
    case start(beat: Double, at: MonotonicInstant)
    /// Stop playing at `time`.
    case stop(at: MonotonicInstant)
    /// The tempo, from now on.
    case tempo(Double)
}

/// What someone asks of the running daemon (`jambridge start|stop|tempo`, OSC `/jambridge/...`).
public enum JamCommand: Hashable, Sendable {
    case start, stop
    case tempo(Double)
}

/// Where a command to this instance came from. Each channel has its own `JamConductor.transportRate`, so that a flood
/// through one (a forged Link session, an OSC controller, the network) never refuses the others': the operator's
/// (the control socket, the status page) above all.
public enum CommandChannel: Hashable, Sendable, CustomStringConvertible {
    /// `jambridge start|stop|tempo`.
    case controlSocket
    /// The status page's buttons.
    case statusPage
    /// An OSC endpoint with `control: true`, by name.
    case osc(String)
    /// The Ableton Link session's start, stop and tempo.
    case link

    public var description: String {
        switch self {
        case .controlSocket: "the control socket"
        case .statusPage: "the status page"
        case .osc(let endpoint): "OSC endpoint \(endpoint)"
        case .link: "the Link session"
        }
    }
}

/// One instance's jam (issue 13): the clock election, the activity aggregator, the clock generator it runs as
/// master and the follower it plays from otherwise, driven by what arrives and by deadlines. Pure: time is passed
/// in, everything to be done comes out through `emit`.
///
/// What comes out, by who leads:
/// - This instance (its start command): the generator's Start, ticks and Stop, to the session and the clock
///   outputs.
/// - One of its endpoints (a drum machine pressed Start): that endpoint's transport and clock, relayed as they come
///   to the session and the other clock outputs; the follower keeps its place for status and a takeover.
/// - A peer: its transport relayed to the clock outputs, and ticks made afresh from the follower's timeline (its
///   prediction of the master's ticks from their sender times), so local devices get the master's beat without
///   the network's jitter. Nothing goes back to the session.
/// Transport from anyone else is refused; clock from anyone else is dropped (counted), except that while no
/// rhythm runs it teaches the follower the tempo. Levels from this instance's players go on to the session; the
/// master sends the total there.
public struct JamConductor: Sendable {
    /// The `clock:` and `activity:` blocks.
    public struct Configuration: Sendable, Equatable {
        public var election: ElectionConfiguration
        public var activity: ActivityConfiguration
        /// The generator's tempo until someone changes it.
        public var tempo: Double
        public init(election: ElectionConfiguration, activity: ActivityConfiguration = ActivityConfiguration(),
                    tempo: Double = 120) {
            self.election = election
            self.activity = activity
            self.tempo = tempo
        }
    }

    /// What was dropped, beyond what the parts count themselves.
    public struct Counters: Equatable, Sendable {
        /// Clock ticks from a source that does not lead.
        public var foreignTicks = 0
        /// Transport messages and commands dropped for coming faster than `transportRate` from one source.
        public var transportOverRate = 0
        /// Transport messages whose sender time was earlier than their trip allows, taken as sent at arrival.
        public var backdated = 0
        /// Moves of the song at the clock outputs (Stop, Song Position, Continue): the shared timeline jumped by more
        /// than a sixteenth, more than a beat's ticks were overdue, or the leading peer's song moved by more than a
        /// beat.
        public var repositions = 0
    }

    /// Transport (Start, Stop, Continue, Song Position, and this instance's start, stop and tempo commands) passes at
    /// most this fast from one source, or for commands from one `CommandChannel`: a musician's presses, not a flood
    /// that would change the master, log lines and the clock outputs' Start and Stop thousands of times a second. A
    /// full bucket, copied for each.
    public static let transportRate = TokenBucket(burst: 8, perSecond: 4)
    /// How much earlier than its arrival, beyond the peer's clock-sync round trip, a transport message may say it was
    /// sent: longer than a loaded machine's stalls, so that an honest Start is read alike by every instance. (A Start
    /// that keeps a peer's downbeat says it was sent at that peer's Start, up to the election's `simultaneity` before it
    /// left; in an emulated VM under load it came 0.1 s later than the old margin allowed, and the two instances each
    /// kept the lead: found by the acceptance scenario in CI.)
    public static let backdatingMargin: UInt64 = 250_000_000

    /// How early a deadline may be met: messages due within this of `now` go out at `fire`.
    public static let earlyTolerance: UInt64 = 200_000
    /// Ticks made up at once, of the follower's timeline after it jumped and of the generator's after the engine was
    /// held; beyond, the clock outputs are repositioned.
    static let catchUpLimit = 24

    public private(set) var election: ClockElection
    public private(set) var aggregator: ActivityAggregator<JamSender>
    public private(set) var generator: ClockGenerator
    public private(set) var follower = ClockFollower()
    public private(set) var counters = Counters()
    /// The last tick made from the follower's timeline; nil until the first after a start.
    private var regenerated: Int?
    /// Each source's and channel's `transportRate`, while it is not full again (at most `transportSources`).
    private var transportBuckets: [RateKey: TokenBucket] = [:]
    static let transportSources = 64
    /// When the master next looks whether the total changed (every `ActivityAggregator.interval`); nil unless leading.
    private var totalDue: MonotonicInstant?
    /// Peers that joined while a song runs, by SSRC: on the coming sixteenth they get its Song Position and Continue,
    /// through the session if one of this instance's sources leads, else through the clock outputs that reach them (at
    /// most `transportSources`).
    private var joiners: [UInt32] = []
    /// While no rhythm runs: the peer whose clock was heard, and its ticks in a row. A peer whose clock runs
    /// `runningClockTicks` in a row leads, its Start unseen (this instance joined a running song).
    private var runningClock: (source: ClockSource, ticks: Int)?
    /// True while the clock outputs wait to join a running peer's song whose Start was not seen: they get its Song
    /// Position and Continue just before the first sixteenth made from the follower's timeline.
    private var outputsJoin = false
    /// Ticks in a row (a beat) after which a peer's running clock counts as a song it leads.
    public static let runningClockTicks = MIDIClock.ticksPerBeat
    /// While a rhythm runs: the peers other than its master whose clocks are heard, each with its ticks since it was
    /// last silent and when the last came (`heardRival`; at most `transportSources`).
    private var rivalClocks: [ClockSource: (ticks: Int, last: MonotonicInstant)] = [:]
    /// The round trip taken for a peer whose clock sync has not measured one: longer than a trip across a continent.
    static let unknownTrip: UInt64 = 750_000_000
    /// When the last tick of a peer that leads came: a master heard only by its clock leaves when it falls silent.
    private var masterClockHeard: MonotonicInstant?
    /// When the song the clock outputs play began (this instance's Start or Continue, or the master's as relayed); nil
    /// while none plays. A peer whose Start wins the race against it within `ClockElection.simultaneity` takes the
    /// song over without a second Start at the outputs.
    private var songStart: MonotonicInstant?
    /// The generator's first tick that goes to the clock outputs: above 0 when its song took over the downbeat of one
    /// the outputs were playing (`startSong`), whose first ticks they had.
    private var localTicksFrom = 0
    /// The timeline shared with others (Ableton Link's session) as last read (`share`); nil without one.
    public private(set) var shared: SharedTimeline?
    /// The shared timeline's beat at the generator's tick 0, while its song plays along it.
    private var sharedOrigin: Double?
    /// How far the generator's next tick may be from the shared timeline's before it is put back on it, and beyond
    /// which the ticks handed out ahead are taken back first.
    static let shareTolerance = 50_000.0, shareWithdrawal = 1_000_000.0
    /// How long after a reposition's Stop its Continue goes at the earliest.
    static let repositionGap: UInt64 = 2_000_000
    /// How late a start from the shared timeline may be heard before its bar line counts as missed (the next is taken).
    static let sharedStartMissed = 50_000_000.0
    /// The start of a song the clock outputs play, which this instance's own start takes over, and how many of its
    /// ticks they had.
    private typealias Downbeat = (time: MonotonicInstant, played: Int)

    public init(_ configuration: Configuration) {
        election = ClockElection(configuration: configuration.election)
        aggregator = ActivityAggregator(configuration: configuration.activity)
        generator = ClockGenerator(tempo: configuration.tempo)
    }

    /// This instance's own start button, as the election knows it.
    public var instance: ClockSource { .local(election.configuration.name) }

    /// The tempo in force: the generator's while it leads from here, else the follower's (nil until it heard two ticks).
    public var tempo: Double? { election.master == instance || election.master == nil ? generator.tempo : follower.tempo }

    /// The song's timeline while one runs (what the drums play along): the generator's while this instance leads,
    /// else the follower's once it has a tempo.
    public var timeline: (any BeatTimeline)? {
        generator.isRunning ? generator : follower.isRunning && follower.tempo != nil ? follower : nil
    }

    /// The song's timeline as a value any thread can read (`timeline`'s line), nil while no song runs.
    public var songLine: SongLine? {
        generator.isRunning ? generator.line : follower.isRunning && follower.tempo != nil ? follower.line : nil
    }

    /// The session's total activity as the drums follow it: the master's total as heard, else this instance's own.
    public func sessionTotal(at now: MonotonicInstant) -> UInt7 {
        aggregator.heardTotal ?? aggregator.total(at: now)
    }

    /// Where the song is at `now`, in ticks since its start; nil while none runs.
    public func songTick(at now: MonotonicInstant) -> Double? {
        generator.isRunning ? generator.tick(at: now) : follower.position(at: now)
    }

    /// Takes a message arriving from `sender` at `arrival` (`senderTime`: when the sender meant it, on our clock,
    /// where the transport says; `roundTrip`: the nanoseconds a clock-sync exchange with it took, which bound the
    /// trip; `songTick`: a tick's count in the sender's song modulo 2^19, where its journal keeps it). Returns true if
    /// the jam took it: clock and transport never go on through routes; levels and totals do (routes leave them out
    /// unless they ask, see the route file's `control:`).
    public mutating func receive(_ message: MIDIMessage, from sender: JamSender, arrival: MonotonicInstant,
                                 senderTime: MonotonicInstant? = nil, roundTrip: UInt64? = nil, songTick: Int? = nil,
                                 emit: (JamOutput) -> Void) -> Bool {
        let source = sender.clockSource
        switch message {
        case .timingClock:
            var leads = election.master == source
            if !leads, election.master != nil, case .peer = source {
                leads = heardRival(source, roundTrip: roundTrip, now: arrival, emit: emit)
            }
            guard leads || (election.master == nil && !generator.isRunning) else {
                counters.foreignTicks += 1
                return true
            }
            follower.tick(arrival: arrival, senderTime: senderTime, songTick: songTick)
            if !leads, case .peer = source {
                leads = heardRunning(source, senderTime: senderTime ?? arrival, now: arrival, emit: emit)
                if leads, songTick != nil {
                    // Its journal counts its song: the follower takes the count from its next tick, and the outputs
                    // join the song on a coming sixteenth.
                    follower.resume()
                    outputsJoin = true
                }
            }
            if leads, case .local = sender, let tick = follower.songTick, tick % MIDIClock.ticksPerSixteenth == 0 {
                greetJoiners(sixteenth: tick / MIDIClock.ticksPerSixteenth, at: arrival, emit: emit)
            }
            if leads { relay(message, from: sender, at: arrival, emit: emit) }
            guard case .peer? = election.master else { return true }
            masterClockHeard = arrival
            if regenerated == nil, follower.tempo == nil, let first = follower.songTick,
               !outputsJoin || first % MIDIClock.ticksPerSixteenth == 0 {
                // The song's first tick comes before the follower has a timeline: it goes out as it came, when its
                // sender meant it if the follower believes that (a forged time would hold the outputs' first tick
                // for as long as it says).
                let time = ClockFollower.plausible(senderTime, arrival: arrival) ?? arrival
                if outputsJoin { joinOutputs(atTick: first, time: time, emit: emit) }
                emit(.deliver(JamDelivery(message: .timingClock, time: time, toSession: false, toLocal: true)))
                regenerated = first
            }
            fire(now: arrival, emit: emit)
            return true
        case .start, .stop, .continue, .songPosition:
            guard admitsTransport(from: .source(source), now: arrival) else {
                emit(.overRate(message, from: source))
                return true
            }
            let command = TransportCommand(message)!
            if runningClock?.source == source { runningClock = nil }
            var sent = senderTime ?? arrival
            let bound = roundTrip.map { $0 + Self.backdatingMargin }
            if let bound, sent.nanoseconds(since: arrival) < -Double(bound) {
                // Its sender time is its own word: the election believes it only as far as the trip allows, and takes
                // the earliest time the trip allows (taken as sent when it came, it lost a race on one instance that
                // it won on the other).
                counters.backdated += 1
                emit(.backdated(message, from: source, seconds: -sent.nanoseconds(since: arrival) / 1e9))
                sent = arrival.receded(byNanoseconds: bound)
            }
            let verdict = election.receive(command, from: source, senderTime: sent, now: arrival)
            guard verdict.accepted else {
                emit(.refused(message, from: source, master: election.master))
                return true
            }
            let played = verdict.change.flatMap { ticksPlayed(before: $0, by: sender, startedAt: sent, now: arrival) }
            if command != .songPosition { withdrawAhead(now: arrival, emit: emit) }
            // A Stop goes out before what follows it (an heir's Start); a winning Start after what it ends.
            if message != .stop, let change = verdict.change { handle(change, now: arrival, emit: emit) }
            _ = follower.receive(message, arrival: arrival, senderTime: senderTime)
            if command != .songPosition {
                regenerated = nil
                outputsJoin = false
            }
            if let played {
                // The outputs keep the song they began: the winner's ticks go on from the next index, no Start.
                regenerated = played > 0 ? played - 1 : nil
            } else {
                relay(message, from: sender, at: arrival, emit: emit)
                if command == .start || command == .continue { songStart = sent }
                // A peer's Continue: the outputs join its song with a Song Position where the ticks made from the
                // follower's timeline reach a sixteenth (the position its count says, whatever a repair left out).
                if case .peer = sender, message == .continue { outputsJoin = true }
            }
            if message == .stop {
                songStart = nil
                if let change = verdict.change { handle(change, now: arrival, emit: emit) }
            }
            return true
        case .controlChange:
            guard aggregator.receive(message, from: sender, now: arrival) else { return false }
            if case .local = sender, aggregator.configuration.player.value(in: message) != nil {
                emit(.deliver(JamDelivery(message: message, time: arrival, toSession: true, toLocal: false)))
            }
            return false
        default:
            return false
        }
    }

    /// Carries out `command` from this instance's own controls, through `channel`, at `now` (asked for at `requested`,
    /// which a start on the shared timeline counts its bar line from: a Link app's start); returns what happened, for
    /// the one who asked. The election knows every channel as this instance; the rate is the channel's.
    public mutating func perform(_ command: JamCommand, from channel: CommandChannel, now: MonotonicInstant,
                                 requested: MonotonicInstant? = nil, emit: (JamOutput) -> Void) -> Result<String, JamRefusal> {
        let transport: TransportCommand
        switch command {
        case .start: transport = .start
        case .stop: transport = .stop
        case .tempo: transport = .tempo
        }
        guard admitsTransport(from: .channel(channel), now: now) else {
            return .failure(JamRefusal(reason: "refused: more than \(Int(Self.transportRate.perSecond)) starts, stops and tempos a second from \(channel)"))
        }
        // Pressed within `simultaneity` of a peer's Start the clock outputs already play (two players pressed at once):
        // if this instance wins (the lower SSRC), its song keeps that downbeat, so no device gets a second Start.
        var downbeat: Downbeat?
        if transport == .start, case .peer? = election.master, let songStart,
           now.nanoseconds(since: songStart) <= Double(ClockElection.simultaneity) {
            downbeat = (songStart, ticksHeard(by: now))
        }
        // A start along a shared timeline claims the lead from its bar line, when its Start is sent: another instance in
        // the Link session that starts with it (a Link app's start reaches them all) claims the same instant, and the
        // election picks one of them alike everywhere.
        let barLine = transport == .start && downbeat == nil ? sharedDownbeat(now: now, requested: requested) : nil
        let verdict = election.receive(transport, from: instance, senderTime: downbeat?.time ?? barLine?.time ?? now, now: now)
        guard verdict.accepted else {
            let master = election.master.map { "\($0) leads" } ?? "the clock policy does not let this instance lead"
            return .failure(JamRefusal(reason: "refused: \(master)"))
        }
        if transport != .tempo { withdrawAhead(now: now, emit: emit) }
        // A start that leads is started by `handle`; a start while leading restarts the song.
        let startedAlready = verdict.change.map { $0.master == instance } ?? false
        if let change = verdict.change { handle(change, now: now, joining: downbeat, requested: requested, emit: emit) }
        switch command {
        case .start:
            if !startedAlready { startSong(now: now, joining: nil, requested: requested, emit: emit) }
            guard let songStart, songStart > now.advanced(byNanoseconds: Self.earlyTolerance) else {
                return .success("started at \(format(generator.tempo)) BPM")
            }
            let wait = (songStart.nanoseconds(since: now) / 1e7).rounded() / 100
            return .success("starting at \(format(generator.tempo)) BPM on the Link session's next bar line, in \(wait) s")
        case .stop:
            return .success(verdict.change == nil ? "nothing to stop" : "stopped")
        case .tempo(let bpm):
            guard generator.setTempo(bpm) else {
                let range = ClockGenerator.tempoRange
                return .failure(JamRefusal(reason: "refused: the tempo must be \(format(range.lowerBound)) to \(format(range.upperBound)) beats a minute"))
            }
            guard shared == nil else {
                // The shared timeline's tempo changes at once, as in Link apps; `share` puts the generator on it.
                emit(.share(.tempo(bpm)))
                return .success("tempo \(format(bpm)) BPM in the Link session")
            }
            return .success("tempo \(format(bpm)) BPM\(generator.isRunning ? " from the next beat" : "")")
        }
    }

    /// Plays along `timeline` as now read (Ableton Link's session): while this instance leads or nobody does, the
    /// generator takes its tempo, and the song it plays keeps its ticks on the timeline's beats (its first tick on a bar
    /// line when it started from here), put back on them when the timeline moves (a peer changed the tempo). A song
    /// that began elsewhere keeps its phase. While a peer leads, its clock is the jam's: the timeline is only read.
    public mutating func share(_ timeline: SharedTimeline, now: MonotonicInstant, emit: (JamOutput) -> Void) {
        shared = timeline
        guard ClockGenerator.tempoRange.contains(timeline.tempo), election.master == instance || election.master == nil else { return }
        guard generator.isRunning, let planned = generator.time(atTick: Double(generator.position)) else {
            sharedOrigin = nil
            if generator.tempo != timeline.tempo { generator.setTempo(timeline.tempo) }
            return
        }
        let origin = sharedOrigin ?? timeline.beat(at: planned) - ticks(generator.position)
        sharedOrigin = origin
        let shift = abs(timeline.time(atBeat: origin + ticks(generator.position)).nanoseconds(since: planned))
        // How far the session's beat moved from the song's: positive, ahead.
        let jump = timeline.beat(at: planned) - origin - ticks(generator.position)
        let retimed = generator.tempo != timeline.tempo || generator.pendingTempo != nil
        guard retimed || shift > Self.shareTolerance else { return }
        if retimed || shift > Self.shareWithdrawal { withdrawAhead(now: now, emit: emit) }
        // The next tick's place read again: taking back what was handed out ahead moves the next tick back.
        let next = timeline.time(atBeat: origin + ticks(generator.position))
        if generator.awaitsItsStart, next.nanoseconds(since: now) < -Double(Self.earlyTolerance) {
            // Its bar line passed while the song waited for it (the session's phase jumped): the next bar line.
            let barLine = timeline.barLine(atOrAfter: now)
            sharedOrigin = barLine - ticks(generator.position)
            songStart = timeline.time(atBeat: barLine)
            generator.align(nextTickAt: timeline.time(atBeat: barLine), tempo: timeline.tempo)
        } else if !generator.awaitsItsStart, shift > Double(MIDIClock.ticksPerSixteenth) * MIDIClock.tickPeriod(bpm: timeline.tempo) {
            // The song moves as far as the session did, on its first sixteenth at least `repositionGap` from now.
            // The session's numbers are its peers' word: a beat that is no number, or past a Song Position's reach,
            // is not followed (`Int(_:)` traps on what it cannot hold).
            let earliest = ((timeline.beat(at: now.advanced(byNanoseconds: Self.repositionGap)) - origin) * 4).rounded(.up)
            guard earliest.isFinite, earliest < 0x4000 else { return }
            let sixteenth = max(0, Int(earliest))
            let beat = origin + Double(sixteenth) / 4
            generator.setTempo(timeline.tempo)
            reposition(toSixteenth: sixteenth, at: timeline.time(atBeat: beat), now: now, why: .sharedJump(beats: jump), emit: emit)
            sharedOrigin = beat - ticks(generator.position)
        } else {
            generator.align(nextTickAt: next, tempo: timeline.tempo)
        }
    }

    /// Moves the song this instance leads to `sixteenth`, its Continue due at `time`, as MIDI devices take a jump: a
    /// playing device ignores a Song Position, so Stop now, then Song Position and Continue (at distinct instants: one
    /// Start, Stop or Continue goes at one instant). A tempo set before, while running, waits for its beat: the Stop
    /// puts it in force.
    private mutating func reposition(toSixteenth sixteenth: Int, at time: MonotonicInstant, now: MonotonicInstant,
                                     why: Reposition, emit: (JamOutput) -> Void) {
        generator.stop(at: now) { Self.send($0, emit: emit) }
        generator.locate(sixteenths: sixteenth % 0x4000)
        generator.continue(at: time) { Self.send($0, emit: emit) }
        counters.repositions += 1
        emit(.repositioned(sixteenth: sixteenth % 0x4000, why: why))
    }

    /// `tick` in quarter notes.
    private func ticks(_ tick: Int) -> Double { Double(tick) / Double(MIDIClock.ticksPerBeat) }

    /// This instance leaves (the daemon stops, or the jam goes): a clock it runs stops at its own outputs, and its
    /// session's peers get no Stop. Leaving is not stopping: they learn it from the session's goodbye (BY) and do
    /// what their `on-master-lost` says. `perform(.stop)` ends the song for everyone.
    public mutating func leave(now: MonotonicInstant, emit: (JamOutput) -> Void) {
        guard generator.isRunning else { return }
        withdrawAhead(now: now, emit: emit)
        generator.stop(at: now) { emit(.deliver(JamDelivery(message: $0.message, time: $0.time, toSession: false, toLocal: true))) }
    }

    /// The peer `ssrc` joined the session while a song runs: it is told where the song is (Song Position and Continue
    /// on the coming sixteenth, then the ticks it gets as before), as MIDI lets a device join a running song. While
    /// this instance leads, through the session; while a peer leads (which tells the session), through the clock
    /// outputs that reach it.
    public mutating func peerJoined(ssrc: UInt32) {
        guard election.master != nil, !joiners.contains(ssrc), joiners.count < Self.transportSources else { return }
        joiners.append(ssrc)
    }

    /// The peer `ssrc` left the session (BY, timeout): its level goes, and if it led the rhythm ends or is handed over.
    public mutating func peerLeft(ssrc: UInt32, name: String, now: MonotonicInstant, emit: (JamOutput) -> Void) {
        joiners.removeAll { $0 == ssrc }
        aggregator.remove(.peer(ssrc: ssrc, name: name))
        if let change = election.sourceLeft(.peer(ssrc: ssrc, name: name), now: now) { handle(change, now: now, emit: emit) }
    }

    /// Who a `transportRate` is kept for: a source of transport messages, or a channel of this instance's commands.
    private enum RateKey: Hashable {
        case source(ClockSource)
        case channel(CommandChannel)
    }

    /// True, with one taken from its bucket, if `source` is within `transportRate` at `now`; else counted.
    private mutating func admitsTransport(from source: RateKey, now: MonotonicInstant) -> Bool {
        if transportBuckets[source] == nil, transportBuckets.count >= Self.transportSources {
            transportBuckets = transportBuckets.filter { !$0.value.isFull(at: now) }
        }
        var bucket = transportBuckets[source] ?? Self.transportRate
        let admitted = bucket.take(now: now)
        if transportBuckets.count < Self.transportSources || transportBuckets[source] != nil { transportBuckets[source] = bucket }
        if !admitted { counters.transportOverRate += 1 }
        return admitted
    }

    /// Hands out what is due by `now`: the generator's ticks and ticks from the follower's timeline until `ahead`
    /// nanoseconds later (each at its own time, for outputs that send it then), the total; and notices a master whose
    /// clock fell silent.
    public mutating func fire(now: MonotonicInstant, ahead: UInt64 = 0, emit: (JamOutput) -> Void) {
        let horizon = now.advanced(byNanoseconds: ahead + Self.earlyTolerance)
        let catchUpLong = Double(Self.catchUpLimit) * MIDIClock.tickPeriod(bpm: generator.tempo)
        if !generator.awaitsItsStart, let next = generator.nextTickTime, now.nanoseconds(since: next) > catchUpLong,
           let tick = generator.tick(at: now.advanced(byNanoseconds: Self.repositionGap)) {
            // More than a beat's ticks overdue (the engine was held): the devices are moved to the song's place rather
            // than sent them at once. Up to a beat's go at once, as a device following a clock catches up: a loaded
            // VM held the engine 160-330 ms, and a Stop and Continue each time broke the drum machine's song (CI).
            let sixteenth = MIDIClock.sixteenth(atOrAfter: Int(tick.rounded(.up)))
            if let time = generator.time(atTick: Double(sixteenth * MIDIClock.ticksPerSixteenth)) {
                withdrawAhead(now: now, emit: emit)
                reposition(toSixteenth: sixteenth, at: time, now: now, why: .overdue(seconds: now.nanoseconds(since: next) / 1e9), emit: emit)
            }
        }
        if !joiners.isEmpty, let (sixteenth, due) = comingSixteenth, due < horizon {
            // Its ticks before, the greeting, then its first tick.
            handOutTicks(until: due, emit: emit)
            if case .peer? = election.master { regenerate(until: MonotonicInstant(nanoseconds: due.nanoseconds - 1), now: now, emit: emit) }
            greetJoiners(sixteenth: sixteenth, at: due, emit: emit)
        }
        handOutTicks(until: horizon, emit: emit)
        if let master = election.master, master != instance, follower.isSilent(now: now) || masterFellSilent(now: now) {
            follower.stop()
            if let change = election.sourceLeft(master, now: now) { handle(change, now: now, emit: emit) }
        }
        if case .peer? = election.master { regenerate(until: horizon, now: now, emit: emit) }
        if let due = totalDue, due <= horizon {
            if let total = aggregator.tick(now: now) {
                emit(.deliver(JamDelivery(message: total, time: now, toSession: true, toLocal: false)))
            }
            totalDue = now.advanced(byNanoseconds: ActivityAggregator<JamSender>.interval)
        }
    }

    /// When `fire` is next needed, handing ticks out `ahead` nanoseconds before they are due; nil when nothing is due
    /// until a message arrives.
    public func nextDeadline(ahead: UInt64 = 0) -> MonotonicInstant? {
        let early = { (tick: MonotonicInstant?) in tick.map { $0.receded(byNanoseconds: ahead) } }
        var deadlines = [early(generator.nextTickTime), totalDue]
        if let master = election.master, master != instance {
            deadlines += [follower.silenceDeadline, masterClockHeard.map { $0.advanced(byNanoseconds: ClockFollower.silenceLimit + 1) }]
        }
        if case .peer? = election.master, follower.isRunning {
            // Before the second tick there is no timeline yet: the next tick's arrival fires.
            deadlines.append(early(nextRegenerated.flatMap { follower.time(atTick: Double($0)) }))
        }
        return deadlines.compactMap { $0 }.min()
    }

    /// The first sixteenth not handed out yet of the song this instance makes (the generator's, or the follower's
    /// ticks), and its time; nil if it makes none (a local source leads: its ticks are relayed as they come).
    private var comingSixteenth: (Int, MonotonicInstant)? {
        let next: Int?
        if election.master == instance, generator.isRunning {
            next = generator.position
        } else if case .peer? = election.master {
            next = nextRegenerated
        } else {
            next = nil
        }
        guard let next else { return nil }
        let sixteenth = MIDIClock.sixteenth(atOrAfter: next)
        return timeline(sixteenth * MIDIClock.ticksPerSixteenth).map { (sixteenth, $0) }
    }

    /// Tick `tick`'s time in the song this instance makes.
    private func timeline(_ tick: Int) -> MonotonicInstant? {
        election.master == instance ? generator.time(atTick: Double(tick)) : follower.time(atTick: Double(tick))
    }

    /// Tells the peers that joined where the song is: Song Position `sixteenth` and Continue at `time`, before that
    /// sixteenth's first tick; through the session while one of this instance's sources leads, else through the clock
    /// outputs.
    private mutating func greetJoiners(sixteenth: Int, at time: MonotonicInstant, emit: (JamOutput) -> Void) {
        let position = MIDIClock.songPosition(sixteenth: sixteenth)
        let leads = election.master?.isLocal ?? false
        for ssrc in joiners {
            for message in [position, .continue] {
                emit(.deliver(JamDelivery(message: message, time: time, toSession: leads, toLocal: !leads, toPeer: ssrc)))
            }
        }
        joiners = []
    }

    /// A tick from `source`, a peer, while no rhythm runs: after `runningClockTicks` in a row, it leads a song this
    /// instance joined while it ran (its Start unseen, as a Continue sent at `senderTime`). Returns true if it leads.
    private mutating func heardRunning(_ source: ClockSource, senderTime: MonotonicInstant, now: MonotonicInstant,
                                       emit: (JamOutput) -> Void) -> Bool {
        let ticks = runningClock?.source == source ? runningClock!.ticks + 1 : 1
        runningClock = (source, ticks)
        guard ticks >= Self.runningClockTicks else { return false }
        runningClock = nil
        let verdict = election.receive(.continue, from: source, senderTime: senderTime, now: now)
        if let change = verdict.change { handle(change, now: now, emit: emit) }
        return verdict.accepted
    }

    /// A tick from `source`, a peer other than the master, while a rhythm runs: once its clock has run
    /// `runningClockTicks` without a silence, a song of its own runs beside the master's (masters that each refused
    /// the others' starts, read too late). The election judges the starts again of the peers heard running at least
    /// half as long (`ClockElection.rivalsRun`, within the trip's bound of each other they are simultaneous), so that
    /// of three masters a third's follower goes to the winner at once, not to a loser first; if one wins, this
    /// instance follows it from this tick on: a generator it ran stops without a Stop to the session (the winner's
    /// clock carries the song), and its clock outputs get one reposition: Stop now, then Song Position and Continue
    /// on the winner's next sixteenth (its count, through the journal). Returns true if `source` leads now.
    private mutating func heardRival(_ source: ClockSource, roundTrip: UInt64?, now: MonotonicInstant,
                                     emit: (JamOutput) -> Void) -> Bool {
        let lately = { (clock: (ticks: Int, last: MonotonicInstant)) in now.nanoseconds(since: clock.last) <= Double(ClockFollower.silenceLimit) }
        let ticks = (rivalClocks[source].flatMap { lately($0) ? $0.ticks : nil } ?? 0) + 1
        if rivalClocks[source] == nil, rivalClocks.count >= Self.transportSources {
            rivalClocks = rivalClocks.filter { lately($0.value) }
        }
        guard rivalClocks[source] != nil || rivalClocks.count < Self.transportSources else { return false }
        rivalClocks[source] = (ticks, now)
        guard ticks >= Self.runningClockTicks else { return false }
        let running = rivalClocks.filter { $0.value.ticks >= Self.runningClockTicks / 2 && lately($0.value) }
        for rival in running.keys { rivalClocks[rival] = nil }
        let window = (roundTrip ?? Self.unknownTrip) + Self.backdatingMargin + ClockElection.simultaneity
        guard let change = election.rivalsRun(Array(running.keys), window: window, now: now) else { return false }
        handle(change, now: now, emit: emit)
        emit(.deliver(JamDelivery(message: .stop, time: now, toSession: false, toLocal: true)))
        if follower.isRunning { follower.stop() }
        follower.resume()
        outputsJoin = true
        return change.master == source
    }

    /// True if a peer that leads has sent no tick for the follower's `silenceLimit` (one heard only by its clock, whose
    /// follower never ran, included).
    private func masterFellSilent(now: MonotonicInstant) -> Bool {
        guard let heard = masterClockHeard else { return false }
        return now > heard && now.nanoseconds - heard.nanoseconds > ClockFollower.silenceLimit
    }

    /// If `change` is a peer's Start that won the race against the song the clock outputs began within
    /// `ClockElection.simultaneity` (two players pressed at once), how many of that song's ticks the outputs had by
    /// `now`: they go on from there on the winner's timeline, in phase with it from the next tick, without a second
    /// Start. Nil otherwise: the outputs get the winner's Start. (A device of this instance that wins keeps its own
    /// Start: its ticks are relayed as they come.)
    private func ticksPlayed(before change: LeadershipChange, by winner: JamSender, startedAt started: MonotonicInstant,
                             now: MonotonicInstant) -> Int? {
        // A local device that led passed its own ticks on as they came: what they were on the winner's song is unknown.
        let previousCounted = change.previous == instance || change.previous?.isLocal == false
        guard change.reason == .wonStart, case .peer = winner, previousCounted, let songStart,
              abs(started.nanoseconds(since: songStart)) <= Double(ClockElection.simultaneity) else { return nil }
        if change.previous == instance {
            // What the generator handed out and was due by now (withdrawing takes back the rest).
            return min(generator.position, generator.tick(at: now).map { Int($0.rounded(.down)) + 1 } ?? 0)
        }
        return ticksHeard(by: now)
    }

    /// How many ticks made from the follower's timeline (or passed on as they came, before it had one) the clock
    /// outputs had by `now`.
    private func ticksHeard(by now: MonotonicInstant) -> Int {
        let handedOut = regenerated.map { $0 + 1 } ?? 0
        return follower.position(at: now).map { min(Int($0.rounded(.down)) + 1, handedOut) } ?? handedOut
    }

    /// Starts this instance's song at `now`; or, joining the song the clock outputs began at `downbeat.time` (a peer's,
    /// `downbeat.played` ticks of it played), from that downbeat: the session gets the Start and every tick, the
    /// outputs only the ticks they have not had.
    /// Along a shared timeline (Ableton Link's), a song from here starts on a bar line (`sharedDownbeat`), as Link
    /// apps' do.
    private mutating func startSong(now: MonotonicInstant, joining downbeat: Downbeat?, requested: MonotonicInstant? = nil,
                                    emit: (JamOutput) -> Void) {
        localTicksFrom = downbeat?.played ?? 0
        var start = downbeat?.time ?? now
        sharedOrigin = nil
        if downbeat == nil, let barLine = sharedDownbeat(now: now, requested: requested) {
            start = barLine.time
            sharedOrigin = barLine.beat
            emit(.share(.start(beat: barLine.beat, at: start)))
        }
        generator.start(at: start) {
            emit(.deliver(JamDelivery(message: $0.message, time: $0.time, toSession: true, toLocal: downbeat == nil)))
        }
        songStart = start
    }

    /// Where a song from here starts along the shared timeline: its first bar line at or after `requested` (or `now`),
    /// or the next if that one passed more than `sharedStartMissed` ago; in a session alone, at once, the bar line put
    /// there. Nil without a shared timeline whose tempo the generator can play.
    private func sharedDownbeat(now: MonotonicInstant, requested: MonotonicInstant?) -> (beat: Double, time: MonotonicInstant)? {
        guard let shared, ClockGenerator.tempoRange.contains(shared.tempo) else { return nil }
        // A start asked for more than a bar ahead is no Link app's: a forged start time, taken as now.
        let bar = shared.quantum * 60e9 / shared.tempo
        var barLine = shared.barLine(atOrAfter: requested.flatMap { $0.nanoseconds(since: now) <= bar ? $0 : nil } ?? now)
        guard shared.peers > 0 else { return (barLine, now) }
        if shared.time(atBeat: barLine).nanoseconds(since: now) < -Self.sharedStartMissed { barLine = shared.barLine(atOrAfter: now) }
        return (barLine, shared.time(atBeat: barLine))
    }

    /// Hands out the generator's ticks due before `horizon`: to the session and, from `localTicksFrom`, the outputs.
    private mutating func handOutTicks(until horizon: MonotonicInstant, emit: (JamOutput) -> Void) {
        var index = generator.position
        let localFrom = localTicksFrom
        generator.ticks(until: horizon) {
            emit(.deliver(JamDelivery(message: $0.message, time: $0.time, toSession: true, toLocal: index >= localFrom)))
            index += 1
        }
    }

    /// Takes back what was handed out ahead of `now` (`fire(now:ahead:)`): the generator's ticks and the follower's.
    private mutating func withdrawAhead(now: MonotonicInstant, emit: (JamOutput) -> Void) {
        var withdrew = generator.withdraw(after: now)
        if case .peer? = election.master, let last = regenerated, let time = follower.time(atTick: Double(last)), time > now {
            regenerated = nil // what comes next (a new song, a new master) starts the follower's ticks again
            withdrew = true
        }
        if withdrew { emit(.withdraw(after: now)) }
    }

    /// The clock outputs join a peer's song at `tick`, a sixteenth's, due at `time`: a Song Position and a Continue.
    private mutating func joinOutputs(atTick tick: Int, time: MonotonicInstant, emit: (JamOutput) -> Void) {
        let position = MIDIClock.songPosition(sixteenth: tick / MIDIClock.ticksPerSixteenth)
        emit(.deliver(JamDelivery(message: position, time: time, toSession: false, toLocal: true)))
        emit(.deliver(JamDelivery(message: .continue, time: time, toSession: false, toLocal: true)))
        outputsJoin = false
    }

    /// The next tick the clock outputs get from the follower's timeline: the one after the last they got, or the
    /// follower's; while they wait to join the song (`outputsJoin`), the first sixteenth from there.
    private var nextRegenerated: Int? {
        (regenerated.map { $0 + 1 } ?? follower.songTick).map(joiningTick)
    }

    /// `tick`, or while the clock outputs wait to join the song, the first sixteenth's from there.
    private func joiningTick(_ tick: Int) -> Int {
        outputsJoin ? MIDIClock.sixteenth(atOrAfter: tick) * MIDIClock.ticksPerSixteenth : tick
    }

    /// The clock outputs get the follower's ticks due by `horizon`, each at its predicted time. When the follower's
    /// timeline moved more than a beat (`catchUpLimit`) away from the ticks they got, ahead or back, they get one
    /// reposition, as when this instance leads: Stop now, then Song Position and Continue on the follower's first
    /// sixteenth at least `repositionGap` from now (before: ticks ahead were skipped, so the devices stayed that many
    /// behind the master's song, and back the outputs fell silent until the timeline came to their last tick).
    private mutating func regenerate(until horizon: MonotonicInstant, now: MonotonicInstant, emit: (JamOutput) -> Void) {
        guard let position = follower.position(at: horizon) else { return }
        let last = Int(position.rounded(.down))
        var next = regenerated.map { $0 + 1 } ?? follower.songTick ?? last
        if regenerated != nil, abs(last + 1 - next) > Self.catchUpLimit,
           let resume = follower.position(at: now.advanced(byNanoseconds: Self.repositionGap)), resume.isFinite, resume >= 0 {
            let moved = last + 1 - next
            // What was handed out ahead goes, wherever the timeline now puts it.
            emit(.withdraw(after: now))
            emit(.deliver(JamDelivery(message: .stop, time: now, toSession: false, toLocal: true)))
            let sixteenth = MIDIClock.sixteenth(atOrAfter: Int(min(resume.rounded(.up), Double(Int32.max))))
            counters.repositions += 1
            emit(.repositioned(sixteenth: sixteenth % 0x4000, why: .masterJumped(ticks: moved)))
            outputsJoin = true
            next = sixteenth * MIDIClock.ticksPerSixteenth
            regenerated = next - 1
        }
        next = joiningTick(next)
        while let time = follower.time(atTick: Double(next)), time <= horizon {
            if outputsJoin { joinOutputs(atTick: next, time: time, emit: emit) }
            emit(.deliver(JamDelivery(message: .timingClock, time: time, toSession: false, toLocal: true)))
            regenerated = next
            next += 1
        }
    }

    /// Acts on a change of master: the aggregator leads or follows, a generator that lost stops without a Stop (the
    /// winner's clock carries the song), a takeover continues the song, and a master that took the lead from a
    /// start refused earlier (its Start was dropped then) starts now. This instance's start that won joins the song the
    /// outputs play (`downbeat`) if `perform` says so; along a shared timeline, from the bar line after `requested`.
    private mutating func handle(_ change: LeadershipChange, now: MonotonicInstant, joining downbeat: Downbeat? = nil,
                                 requested: MonotonicInstant? = nil, emit: (JamOutput) -> Void) {
        withdrawAhead(now: now, emit: emit)
        emit(.changed(change))
        regenerated = nil
        outputsJoin = false
        joiners = []
        runningClock = nil
        rivalClocks = [:]
        masterClockHeard = nil
        if change.role == .master {
            aggregator.lead(now: now)
            totalDue = totalDue ?? now
        } else {
            aggregator.follow()
            totalDue = nil
        }
        guard let master = change.master else {
            songStart = nil
            if generator.isRunning {
                generator.stop(at: now) { Self.send($0, emit: emit) }
                if shared != nil { emit(.share(.stop(at: now))) }
            }
            if change.reason == .left {
                follower.stop()
                let local = change.previous?.isLocal ?? false
                emit(.deliver(JamDelivery(message: .stop, time: now, toSession: local, toLocal: true,
                                          except: local ? change.previous?.name : nil)))
            }
            return
        }
        if master != instance, generator.isRunning { generator.stop(at: now) { _ in } }
        switch change.reason {
        case .tookOver:
            // The song goes on from the next sixteenth (a Continue is never due in the past).
            let tick = follower.position(at: now).map { Int($0.rounded(.up)) } ?? generator.position
            follower.stop()
            let sixteenth = MIDIClock.sixteenth(atOrAfter: tick)
            generator.locate(sixteenths: sixteenth % 0x4000)
            localTicksFrom = 0
            generator.continue(at: now) { Self.send($0, emit: emit) }
            songStart = now
        case .started where change.previous != nil:
            // An heir: a start refused shortly before the master ended.
            if master == instance {
                startSong(now: now, joining: nil, emit: emit)
            } else {
                songStart = now
                follower.start()
                emit(.deliver(JamDelivery(message: .start, time: now, toSession: master.isLocal, toLocal: true,
                                          except: master.isLocal ? master.name : nil)))
            }
        case .started where master == instance, .wonStart where master == instance, .outranks where master == instance:
            startSong(now: now, joining: downbeat, requested: requested, emit: emit)
        default:
            break
        }
    }

    /// Passes on a message from the master: a local one to the session and the other clock outputs, a peer's Start
    /// or Stop to the clock outputs (its ticks are made afresh, its Song Position and Continue join them).
    private func relay(_ message: MIDIMessage, from sender: JamSender, at time: MonotonicInstant, emit: (JamOutput) -> Void) {
        switch sender {
        case .local(let endpoint, _):
            emit(.deliver(JamDelivery(message: message, time: time, toSession: true, toLocal: true, except: endpoint)))
        case .peer:
            // Its ticks are made afresh, and its Song Position and Continue go out with them (`outputsJoin`).
            guard message == .start || message == .stop else { return }
            emit(.deliver(JamDelivery(message: message, time: time, toSession: false, toLocal: true)))
        }
    }

    private static func send(_ scheduled: ScheduledMessage, emit: (JamOutput) -> Void) {
        emit(.deliver(JamDelivery(message: scheduled.message, time: scheduled.time, toSession: true, toLocal: true)))
    }
}

/// Why a command was not carried out.
public struct JamRefusal: Error, Hashable, Sendable {
    public var reason: String
    public init(reason: String) { self.reason = reason }
}

extension ClockSource {
    fileprivate var isLocal: Bool {
        if case .local = self { return true }
        return false
    }
}

/// `value` with at most one decimal (a Link session's 96.99995 BPM, which Link's microseconds a beat make of 97, is 97).
func format(_ value: Double) -> String {
    // Beyond an Int (a peer's beat, NaN), as Swift prints it: `Int(_:)` traps on what it cannot hold.
    guard abs(value) < 1e15 else { return "\(value)" }
    let tenths = (value * 10).rounded() / 10
    return tenths == tenths.rounded() ? String(Int(tenths)) : String(tenths)
}
