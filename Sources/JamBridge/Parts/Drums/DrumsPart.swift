import Dispatch
import Jam
import Logging
import MIDI
import RouteFile
import Synchronization

/// The drum sequencer (`drums:`): its player, the `drums` endpoint, the audio it plays (`audio:`) and its commands
/// (`jambridge drums style|level|mute`, OSC `/jambridge/drums/...`). It plays along the jam's song as the jam
/// publishes it (`Wiring.song`), which it never changes, so that a new kit, audio device, seed or note map makes the
/// drums again and leaves the jam, its master and its song as they are. A real-time thread of its own (`ClockThread`,
/// below the jam's clock and the audio thread) plays the song ahead: it reads the published song and hands hits to
/// the audio without ever entering the engine's queue; the notes it computes go through the engine's queue to the
/// timed output, which sends them from the `drums` endpoint at their time.
final class DrumsPart: Part, @unchecked Sendable { // the rest below `player`: on the engine's queue
    /// The drums' thread: above every ordinary thread, below the jam's clock (20: the session and the clock outputs
    /// keep time by it) and the drums' audio (18: a late period is a dropout, a late note is late by its render).
    static let timer = ClockThread.Role(name: "drums", priority: 17, withoutIt: "for the drums: they play nothing",
                                        jitters: "drum notes")

    private let logger: Logger
    private let player: DrumsPlayer
    private var engine: (any EventSink)?
    private var song: PublishedSong?
    private var timer: ClockThread?
    /// Wakes the engine's queue when the thread left notes in the player's outbox, or the audio a log line.
    private var doorbell: Doorbell?
    /// The jam's transport, routed to the drums (ahead of its time): the song changes there, so the thread is woken
    /// to play the song from there.
    private let transport = DrumsTransport()
    /// The drums' notes in the timed output, and how many note-ons went or wait there (read without the queue).
    private var ticket: TimedTicket?
    private let notes = Atomic<Int>(0)

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
        player.apply(new)
        return .applied
    }

    /// Starts the thread and its doorbell the first time.
    func start(_ wiring: Wiring) {
        let engine = wiring.engine
        let published = wiring.song
        self.engine = engine
        song = published
        guard timer == nil else { return }
        let doorbell: Doorbell
        do {
            doorbell = try Doorbell(queue: engine.queue) { [weak self] in self?.doorbellRang() }
        } catch {
            logger.error("drums: \(error): they play nothing")
            return
        }
        player.audioLog.ring(doorbell)
        let reading = SongReading(published)
        let player = player
        let timer = ClockThread(Self.timer, logger: logger) { now in
            let song = reading.read()
            let (next, posted) = player.fire(song, now: now)
            if posted { doorbell.ring() }
            return next
        }
        engine.queue.sync {
            self.doorbell = doorbell
            let ticket = engine.timed.ticket(ahead: .everything)
            self.ticket = ticket
            player.source.ticket = ticket
            transport.changed = { timer.wake() }
            published.startedOrStopped = { timer.wake() }
        }
        self.timer = timer
    }

    /// Carries out the drums' commands.
    func perform(_ command: ControlCommand, from channel: CommandChannel) -> Result<String, JamRefusal>? {
        guard case .drums(let command) = command else { return nil }
        guard engine != nil else { return .failure(JamRefusal(reason: "the drums are not playing")) }
        let result = player.perform(command)
        switch result {
        case .success(let text): logger.info("drums: \(text)")
        case .failure(let refusal): logger.notice("drums: \(refusal.reason)")
        }
        return result
    }

    /// The drums' status, without the engine's queue: what the thread, the audio and the outbox counted.
    func report(into status: inout DaemonStatus) {
        guard let song else { return }
        let state = song.read(else: .silent)
        status.drums = player.report(at: MonotonicClock.now(), song: state, notes: notes.load(ordering: .relaxed))
    }

    /// Stops the thread and the audio.
    func stop() {
        engine?.queue.sync {
            transport.changed = {}
            song?.startedOrStopped = {}
        }
        timer?.stop()
        timer = nil
        doorbell?.cancel()
        doorbell = nil
        player.stop()
    }

    // MARK: On the engine's queue

    /// The thread left notes, or the audio a log line.
    private func doorbellRang() {
        takeOutbox()
        player.audioLog.write(to: logger)
    }

    /// Posts what the thread computed to the timed output, and withdraws what it took back, in the order the thread
    /// left them.
    private func takeOutbox() {
        guard let engine, let ticket, let id = player.source.id else { return }
        for output in player.takeOutbox() {
            switch output {
            case .note(let message, let time):
                engine.timed.post(MIDIEvent(message, from: id, at: time), ticket: ticket)
                if case .noteOn = message { notes.add(1, ordering: .relaxed) }
            case .withdraw(let time):
                let withdrawn = engine.timed.withdraw(ticket, after: time).count { if case .noteOn = $0.message { true } else { false } }
                notes.subtract(withdrawn, ordering: .relaxed)
            }
        }
    }
}

/// The drums' thread's reading of the published song: what it read last, kept if the jam is writing as it reads.
private final class SongReading: @unchecked Sendable { // the drums' thread's alone
    private let published: PublishedSong
    private var last = PublishedSong.State.silent

    init(_ published: PublishedSong) {
        self.published = published
    }

    func read() -> PublishedSong.State {
        last = published.read(else: last)
        return last
    }
}

/// The drums' sink: the jam's Start, Stop, Continue and Song Position (`RouteConfiguration.jamRoutes`), handed to it
/// ahead of their time: each wakes the drums' thread, which plays the song from there (a start's downbeat on time).
final class DrumsTransport: TimedSink, @unchecked Sendable { // `changed`: set and called on the engine's queue
    var changed: () -> Void = {}

    var sendsAtItsTime: Bool { true }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        changed()
    }

    func takeBack(after time: MonotonicInstant, ticket: TimedTicket) {
        changed()
    }

    func stop() {}
}
