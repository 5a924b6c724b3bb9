import Dispatch
import Jam
import Logging
import MIDI
import RouteFile

/// The drum sequencer (`drums:`): its player, the `drums` endpoint, the audio it plays (`audio:`) and its commands
/// (`jambridge drums style|level|mute`, OSC `/jambridge/drums/...`). It plays along the jam's song, which it reads
/// (`Wiring.song`: a copy taken on the engine's queue) and never changes, so that a new kit, audio device, seed or
/// note map makes the drums again and leaves the jam, its master and its song as they are. A timer of its own
/// (`ClockThread`, below the jam's clock and the audio thread) calls the player at its deadlines.
final class DrumsPart: Part, @unchecked Sendable { // `song` and the player: on the engine's queue
    /// The drums' timer: above every ordinary thread, below the jam's clock (20: the session and the clock outputs
    /// keep time by it) and the drums' audio (18: a late period is a dropout, a late note is late by its render).
    static let timer = ClockThread.Role(name: "drums", priority: 17, withoutIt: "for the drums: they play nothing",
                                        jitters: "drum notes")

    private let logger: Logger
    private let player: DrumsPlayer
    private var engine: Engine?
    /// The jam's song as it is now (the wiring's), asked at each deadline.
    private var song: () -> (any JamSong)? = { nil }
    private var timer: ClockThread?
    /// The jam's transport, routed to the drums: a Start wakes the timer, so that the song's downbeat is played on
    /// time rather than when the timer next looks (every `DrumsPlayer.lookInterval`).
    private let transport = DrumsTransport()

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: DrumsDeclaration)] {
        configuration.drums.map { [(DrumsDeclaration.endpointName, $0)] } ?? []
    }

    /// Makes the player: with `audio:`, its kit loaded and its device open (else a failure naming them).
    init(_ declaration: DrumsDeclaration, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        logger = context.logger
        player = try DrumsPlayer(declaration, logger: context.logger)
    }

    var endpoints: [String: RunningEndpoint] {
        [DrumsDeclaration.endpointName: RunningEndpoint(source: player.source, sink: transport)]
    }

    /// Keeps the drums while their kit, sound and notes stay (a new style from the next bar line, the level and
    /// mutes at once); else they are made again. The jam is not touched either way.
    func apply(_ new: DrumsDeclaration, in configuration: RouteConfiguration) -> PartUpdate {
        let old = player.declaration
        guard new.kit == old.kit, new.voices == old.voices, new.audio == old.audio, new.seed == old.seed,
              new.channel == old.channel, new.notes == old.notes else { return .replace }
        engine?.queue.sync { player.apply(new) } ?? player.apply(new)
        return .applied
    }

    /// Reads the song where the wiring says (the jam may have been made again), and starts the timer the first time.
    func start(_ wiring: Wiring) {
        let engine = wiring.engine
        self.engine = engine
        engine.queue.sync { song = wiring.song }
        if timer == nil {
            let timer = ClockThread(Self.timer, logger: logger) { [unowned self] now in engine.queue.sync { fire(now) } }
            self.timer = timer
            engine.queue.sync { transport.heard = { timer.wake() } }
        }
    }

    /// Carries out the drums' commands, on the engine's queue.
    func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal>? {
        guard case .drums(let command) = command else { return nil }
        guard let engine else { return .failure(JamRefusal(reason: "the drums are not playing")) }
        let result = engine.queue.sync { player.perform(command) }
        switch result {
        case .success(let text): logger.info("drums: \(text)")
        case .failure(let refusal): logger.notice("drums: \(refusal.reason)")
        }
        return result
    }

    func report(into status: inout DaemonStatus) {
        guard let engine else { return }
        engine.queue.sync { status.drums = player.report(at: MonotonicClock.now(), song: song()) }
    }

    /// Stops the timer and the audio, and lets go of the wiring's song (which holds the parts, this one too).
    func stop() {
        engine?.queue.sync { transport.heard = {} }
        timer?.stop()
        timer = nil
        player.stop()
        engine?.queue.sync { song = { nil } }
    }

    /// What the timer calls at each deadline, on the engine's queue: plays what is due, returns the next deadline.
    /// The thread (at real-time priority) never spins: 100 µs at least between calls.
    private func fire(_ now: MonotonicInstant) -> MonotonicInstant {
        max(player.fire(song(), now: now), now.advanced(byNanoseconds: 100_000))
    }
}

/// The drums' sink: the jam's Start, Stop, Continue and Song Position (`RouteConfiguration.jamRoutes`).
final class DrumsTransport: SinkEndpoint, @unchecked Sendable { // `heard`: set and called on the engine's queue
    var heard: () -> Void = {}

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        heard()
    }

    func stop() {}
}
