import ALSA
import DrumKits
import Drums
import Jam
import Logging
import MIDI
import RouteFile
import Synchronization

/// The `drums` endpoint: the drum sequencer's notes enter the engine through it, like any source's, at their time
/// (posted to the timed output under `ticket`).
final class DrumsSource: SourceEndpoint, @unchecked Sendable { // id, sink, ticket: set and read on the engine's queue
    private(set) var id: EndpointID?
    private(set) var sink: EventSink?
    var ticket: TimedTicket?

    func start(id: EndpointID, sink: EventSink) {
        sink.queue.async { [self] in
            self.id = id
            self.sink = sink
        }
    }

    /// Withdraws the notes that wait (those that sound still end), and lets go of the engine.
    func stop() {
        guard let sink else { return }
        sink.queue.sync {
            if let ticket { sink.timed.withdraw(ticket) }
            self.id = nil
            self.sink = nil
        }
    }
}

/// The drum sequencer in the daemon. Its part's real-time thread (`DrumsPart`) plays along the jam's song as the
/// jam publishes it (`PublishedSong`: the generator's timeline when this instance leads, the follower's otherwise):
/// it asks the sequencer for the hits of the next `lookahead`, hands each to the audio stream, and leaves each as a
/// note-on (and its note-off `noteLength` later, at most half a step) in an outbox that the engine's queue posts to
/// the timed output: the notes leave the `drums` endpoint at their time. The thread takes the player's lock only if
/// it is free (`fire`): the engine's queue takes it for commands, status and the outbox, and the real-time thread
/// never waits for it.
final class DrumsPlayer: @unchecked Sendable { // `state`: behind its lock; the rest constant
    /// How far ahead of now hits are computed without audio (a late wake-up's worth); with audio, the buffer's
    /// latency is added, so that every hit is in the stream before its frame is rendered.
    static let lookahead: UInt64 = 60_000_000
    private let lookahead: UInt64
    /// How often the song is looked at while it plays: a start, a jump, a new tempo and the next hits to compute are
    /// seen within this.
    static let lookInterval: UInt64 = 10_000_000
    /// How long a drum note is held.
    static let noteLength: UInt64 = 50_000_000

    /// What the player hands the engine's queue (`takeOutbox`).
    enum Output {
        /// A note to send at its time.
        case note(MIDIMessage, at: MonotonicInstant)
        /// Take back the notes due after an instant (the song stopped or jumped).
        case withdraw(after: MonotonicInstant)
    }

    /// The player's state: the real-time thread's while it plays, the engine queue's for commands and status.
    private struct State {
        var declaration: DrumsDeclaration
        var sequencer: DrumSequencer
        var playing = false
        /// The song's line as last played along: a new one that puts now more than a sixteenth elsewhere is a jump.
        var line: SongLine?
        /// What the engine's queue has not taken yet, in order.
        var outbox: [Output] = []
    }

    private let state: Mutex<State>
    let source = DrumsSource()
    /// The audio (`audio:`): the stream the hits are handed to ahead of time, and the device playing it.
    private let stream: DrumStream?
    private let playback: PCMPlayback?
    /// What the audio thread has to say (an underrun), for the engine's queue to log.
    let audioLog = AudioLog()

    /// The drums `declaration` asks for; with `audio:`, its kit loaded and its device playing (else a failure that
    /// says which kit or device and why).
    init(_ declaration: DrumsDeclaration, logger: Logger) throws(PartFailure) {
        var sequencer = DrumSequencer(style: declaration.style, seed: declaration.seed)
        sequencer.lockedLevel = declaration.level
        sequencer.muted = declaration.muted
        state = Mutex(State(declaration: declaration, sequencer: sequencer))
        state.withLock { $0.outbox.reserveCapacity(256) }
        guard let audio = declaration.audio else {
            stream = nil
            playback = nil
            lookahead = Self.lookahead
            return
        }
        let consequence = "the drums stay off until a reload"
        let kit: LoadedKit
        do {
            kit = try loadKit(of: declaration)
        } catch {
            throw PartFailure(problem: "\(declaration.location): drums: \(error)", consequence: consequence)
        }
        for warning in kit.warnings { logger.notice("\(warning)") }
        let stream = DrumStream(kit: kit.kit)
        do {
            playback = try PCMPlayback(PCMPlayback.Configuration(device: audio.device, period: audio.period, periods: audio.periods),
                                       log: { [audioLog] level, text in audioLog.keep(level, text) }, render: { buffer, firstFrame in stream.render(into: buffer, firstFrame: firstFrame) })
        } catch {
            throw PartFailure(problem: "\(declaration.location): drums: \(error)", consequence: consequence)
        }
        self.stream = stream
        lookahead = Self.lookahead + playback!.latency
        logger.info("drums: \(declaration.style.name) on \(kit.kit.name == "built-in" ? "the built-in kit" : "the kit '\(kit.kit.name)'") through '\(audio.device)': \(playback!.obtained)")
    }

    /// Stops the audio (the device is closed).
    func stop() {
        playback?.stop()
    }

    /// Takes a new declaration of the same kit and outputs: the style from the next bar line, the level and mutes now.
    func apply(_ new: DrumsDeclaration) {
        state.withLock { state in
            if new.style != state.declaration.style { state.sequencer.change(to: new.style) }
            state.sequencer.lockedLevel = new.level
            state.sequencer.muted = new.muted
            state.declaration = new
        }
    }

    /// The declaration played, and the sequencer as it is now.
    var declaration: DrumsDeclaration { state.withLock { $0.declaration } }
    var sequencer: DrumSequencer { state.withLock { $0.sequencer } }

    /// Carries out `command`: a style from the next bar line (a built-in one, or a style file inside the route files'
    /// folders by its path, relative to the route file with the drums block), a level kept or the activity
    /// followed, voices muted or heard. A style file is read before the player's lock is taken.
    func perform(_ command: DrumsCommand) -> Result<String, JamRefusal> {
        switch command {
        case .style(let name):
            let style: Style
            if let builtIn = BuiltinStyles.style(name) {
                style = builtIn
            } else if StyleFile.isPath(name) {
                let declaration = declaration
                do {
                    style = try StyleFile.load(command: name, besideRouteFile: declaration.location.file,
                                               inside: declaration.styleFolders)
                } catch {
                    return .failure(JamRefusal(reason: error.description))
                }
            } else {
                return .failure(JamRefusal(reason: "unknown style '\(name)': the built-in styles are \(BuiltinStyles.names.joined(separator: ", ")); a style file in the route files' folders is named by its path"))
            }
            state.withLock { $0.sequencer.change(to: style) }
            return .success("style \(style.name) from the next bar line")
        case .level(let level):
            return state.withLock { state in
                guard let level else {
                    state.sequencer.lockedLevel = nil
                    return .success("the level follows the session's activity from the next bar line")
                }
                guard (1...state.sequencer.style.levels).contains(level) else {
                    return .failure(JamRefusal(reason: "the style \(state.sequencer.style.name) has levels 1-\(state.sequencer.style.levels), not \(level)"))
                }
                state.sequencer.lockedLevel = level
                return .success("level \(level) kept from the next bar line")
            }
        case .mute(let names, let on):
            let voices = names.map { DrumVoice(rawValue: $0) }
            guard let unknown = zip(names, voices).first(where: { $0.1 == nil })?.0 else {
                state.withLock { state in
                    for voice in voices.compactMap({ $0 }) {
                        if on { state.sequencer.muted.insert(voice) } else { state.sequencer.muted.remove(voice) }
                    }
                }
                return .success("\(names.joined(separator: ", ")) \(on ? "muted" : "heard again")")
            }
            return .failure(JamRefusal(reason: "unknown voice '\(unknown)': the voices are \(DrumVoice.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
    }

    // MARK: On the drums' real-time thread

    /// Plays along `song` at `now`: the hits of the next `lookahead` to the stream and, as notes, to the outbox, and
    /// what it takes back when the song stopped or jumped. Returns when it next needs to be called (nil: when woken,
    /// no song runs), and whether it left something in the outbox; a millisecond on if the lock was held.
    func fire(_ song: PublishedSong.State, now: MonotonicInstant) -> (next: MonotonicInstant?, posted: Bool) {
        state.withLockIfAvailable { state in
            let before = state.outbox.count
            let next = play(song, now: now, state: &state)
            return (next, state.outbox.count > before)
        } ?? (now.advanced(byNanoseconds: 1_000_000), false)
    }

    private func play(_ song: PublishedSong.State, now: MonotonicInstant, state: inout State) -> MonotonicInstant? {
        guard let line = song.line else {
            state.line = nil
            if state.playing {
                state.playing = false
                state.outbox.append(.withdraw(after: now))
                stream?.cancel()
            }
            return nil
        }
        let tick = line.tick(at: now)
        // The song moved (a reposition: a Link session's jump, ticks overdue), or this thread was held a bar.
        let jumped = state.line.map { abs($0.tick(at: now) - tick) > Double(MIDIClock.ticksPerSixteenth) } ?? false
        state.line = line
        if !state.playing || jumped || abs(tick - state.sequencer.position) > state.sequencer.style.time.barTicks {
            if state.playing { state.outbox.append(.withdraw(after: now)) }
            stream?.cancel()
            // From where the song was a look ago: a start's downbeat, seen up to a look late, plays late, not never.
            state.sequencer.locate(tick: line.tick(at: now.receded(byNanoseconds: Self.lookInterval)))
            state.playing = true
        }
        // A step's nanoseconds, from the published period: compared as a Double, so that no period (0, infinite, NaN)
        // reaches `UInt64(_:)`, which traps on what it cannot hold.
        let step = 60e9 / line.tempo(at: now) / 24 * state.sequencer.style.stepTicks
        let length = step / 2 < Double(Self.noteLength) ? UInt64(max(step / 2, 0)) : Self.noteLength
        let declaration = state.declaration
        var outbox: [Output] = []
        swap(&outbox, &state.outbox) // appended to below while the sequencer plays: no copy, no allocation
        state.sequencer.play(through: line.tick(at: now.advanced(byNanoseconds: lookahead)), timeline: line,
                             activity: song.total.value) { hit in
            stream?.schedule(hit)
            let note = declaration.note(of: hit.voice)
            let velocity = UInt7(masking: UInt8(max(1, min(127, (hit.velocity * 127).rounded()))))
            outbox.append(.note(.noteOn(channel: declaration.channel, note: note, velocity: velocity), at: hit.time))
            outbox.append(.note(.noteOff(channel: declaration.channel, note: note, velocity: UInt7(masking: 0)),
                                at: hit.time.advanced(byNanoseconds: length)))
        }
        swap(&outbox, &state.outbox)
        return now.advanced(byNanoseconds: Self.lookInterval)
    }

    // MARK: On the engine's queue

    /// What the thread left in the outbox since the last call, in order.
    func takeOutbox() -> [Output] {
        state.withLock { state in
            defer { state.outbox.removeAll(keepingCapacity: true) }
            return state.outbox
        }
    }

    /// The drums' state at `now`, along the jam's `song`, with `notes` sent.
    func report(at now: MonotonicInstant, song: PublishedSong.State, notes: Int) -> DaemonStatus.Drums {
        let (declaration, sequencer, playing) = state.withLock { ($0.declaration, $0.sequencer, $0.playing) }
        let time = sequencer.style.time
        let tick = playing ? song.line?.tick(at: now) : nil
        let beatTicks = time.barTicks / Double(time.beats)
        var audio: DaemonStatus.Audio?
        if let stream, let playback, let device = declaration.audio?.device {
            let counted = stream.counters
            audio = DaemonStatus.Audio(device: device, playing: playback.isPlaying, hits: counted.hits, lateHits: counted.lateHits,
                                       xruns: playback.xruns)
        }
        return DaemonStatus.Drums(style: sequencer.style.name, declaredStyle: declaration.styleName,
                                  nextStyle: sequencer.nextStyle?.name, level: sequencer.lockedLevel ?? sequencer.level, levels: sequencer.style.levels,
                                  levelKept: sequencer.lockedLevel != nil, playing: tick != nil,
                                  bar: tick.map { Int($0 / time.barTicks) + 1 },
                                  beat: tick.map { Int($0.truncatingRemainder(dividingBy: time.barTicks) / beatTicks) + 1 },
                                  beatsPerBar: time.beats,
                                  muted: sequencer.muted.sorted().map(\.rawValue), notes: notes, audio: audio)
    }
}

/// The audio thread's log lines (an underrun, the end of the audio), kept for the engine's queue, which writes them:
/// the audio thread never writes a log line itself, nor calls Dispatch. It keeps a line only if no one is taking them
/// at that instant (the underruns are counted all the same), and rings the drums' doorbell once it is there.
final class AudioLog: Sendable {
    private let state = Mutex<(lines: [(PCMLogLevel, String)], doorbell: Doorbell?)>(([], nil))

    /// Keeps a line (the audio thread).
    func keep(_ level: PCMLogLevel, _ text: String) {
        _ = state.withLockIfAvailable { state in
            guard state.lines.count < 100 else { return }
            state.lines.append((level, text))
            state.doorbell?.ring()
        }
    }

    /// Rings `doorbell` for the lines to come, and for those kept already.
    func ring(_ doorbell: Doorbell) {
        state.withLock { state in
            state.doorbell = doorbell
            if !state.lines.isEmpty { doorbell.ring() }
        }
    }

    /// Writes the lines kept to `logger`.
    func write(to logger: Logger) {
        for (level, text) in state.withLock({ state in defer { state.lines.removeAll() }; return state.lines }) {
            switch level {
            case .notice: logger.notice("\(text)")
            case .warning: logger.warning("\(text)")
            case .error: logger.error("\(text)")
            }
        }
    }
}

