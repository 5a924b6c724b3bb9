import ALSA
import DrumKits
import Drums
import Jam
import Logging
import MIDI
import RouteFile

/// The `drums` endpoint: the drum sequencer's notes enter the engine through it, like any source's.
final class DrumsSource: SourceEndpoint, @unchecked Sendable { // id and sink: set and read on the engine's queue
    private(set) var id: EndpointID?
    private(set) var sink: EventSink?

    func start(id: EndpointID, sink: EventSink) {
        sink.queue.async { [self] in
            self.id = id
            self.sink = sink
        }
    }

    func stop() {
        guard let sink else { return }
        sink.queue.sync {
            self.id = nil
            self.sink = nil
        }
    }
}

/// The drum sequencer in the daemon, on the engine's queue, driven by its part's timer (`DrumsPart`): it plays along
/// the jam's song while one runs (the generator's timeline when this instance leads, the follower's otherwise), asks
/// the sequencer for the hits of the next `lookahead`, and sends each as a note-on from the `drums` endpoint at its
/// time, with its note-off `noteLength` later (at most half a step).
final class DrumsPlayer {
    /// How far ahead of now hits are computed without audio (a late wake-up's worth); with audio, the buffer's
    /// latency is added, so that every hit is in the stream before its frame is rendered.
    static let lookahead: UInt64 = 60_000_000
    private let lookahead: UInt64
    /// How often the song is looked at between hits: a start, a jump, a new tempo and the next hits to compute are
    /// seen within this.
    static let lookInterval: UInt64 = 10_000_000
    /// How long a drum note is held.
    static let noteLength: UInt64 = 50_000_000

    private(set) var declaration: DrumsDeclaration
    private(set) var sequencer: DrumSequencer
    let source = DrumsSource()
    /// Hits computed, not yet sent as notes, in time order; note-offs due, in time order.
    private var pending: [DrumHit] = []
    private var noteOffs: [(time: MonotonicInstant, note: UInt7)] = []
    private var playing = false
    private(set) var counters = (notes: 0, relocations: 0)
    /// The audio (`audio:`): the stream the hits are handed to ahead of time, and the device playing it.
    private let stream: DrumStream?
    private let playback: PCMPlayback?

    /// The drums `declaration` asks for; with `audio:`, its kit loaded and its device playing (else a failure that
    /// says which kit or device and why).
    init(_ declaration: DrumsDeclaration, logger: Logger) throws(PartFailure) {
        self.declaration = declaration
        sequencer = DrumSequencer(style: declaration.style, seed: declaration.seed)
        sequencer.lockedLevel = declaration.level
        sequencer.muted = declaration.muted
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
                                       log: { level, text in
                                           switch level {
                                           case .notice: logger.notice("\(text)")
                                           case .warning: logger.warning("\(text)")
                                           case .error: logger.error("\(text)")
                                           }
                                       }, render: { buffer, firstFrame in stream.render(into: buffer, firstFrame: firstFrame) })
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
        if new.style != declaration.style { sequencer.change(to: new.style) }
        sequencer.lockedLevel = new.level
        sequencer.muted = new.muted
        declaration = new
    }

    /// Carries out `command`: a style from the next bar line (a built-in one, or a style file inside the route files'
    /// folders by its path, relative to the route file with the drums block), a level kept or the activity
    /// followed, voices muted or heard.
    func perform(_ command: DrumsCommand) -> Result<String, JamRefusal> {
        switch command {
        case .style(let name):
            let style: Style
            if let builtIn = BuiltinStyles.style(name) {
                style = builtIn
            } else if StyleFile.isPath(name) {
                do {
                    style = try StyleFile.load(command: name, besideRouteFile: declaration.location.file,
                                               inside: declaration.styleFolders)
                } catch {
                    return .failure(JamRefusal(reason: error.description))
                }
            } else {
                return .failure(JamRefusal(reason: "unknown style '\(name)': the built-in styles are \(BuiltinStyles.names.joined(separator: ", ")); a style file in the route files' folders is named by its path"))
            }
            sequencer.change(to: style)
            return .success("style \(style.name) from the next bar line")
        case .level(let level):
            guard let level else {
                sequencer.lockedLevel = nil
                return .success("the level follows the session's activity from the next bar line")
            }
            guard (1...sequencer.style.levels).contains(level) else {
                return .failure(JamRefusal(reason: "the style \(sequencer.style.name) has levels 1-\(sequencer.style.levels), not \(level)"))
            }
            sequencer.lockedLevel = level
            return .success("level \(level) kept from the next bar line")
        case .mute(let names, let on):
            let voices = names.map { DrumVoice(rawValue: $0) }
            guard let unknown = zip(names, voices).first(where: { $0.1 == nil })?.0 else {
                for voice in voices.compactMap({ $0 }) {
                    if on { sequencer.muted.insert(voice) } else { sequencer.muted.remove(voice) }
                }
                return .success("\(names.joined(separator: ", ")) \(on ? "muted" : "heard again")")
            }
            return .failure(JamRefusal(reason: "unknown voice '\(unknown)': the voices are \(DrumVoice.allCases.map(\.rawValue).joined(separator: ", "))"))
        }
    }

    /// Plays what is due by `now` along the jam's `song` (nil: no jam runs); returns when it next needs to be called:
    /// at its next hit or note-off, and `lookInterval` from now at the latest.
    func fire(_ song: (any JamSong)?, now: MonotonicInstant) -> MonotonicInstant {
        if let song, let timeline = song.timeline, let tick = song.songTick(at: now) {
            if !playing || abs(tick - sequencer.position) > sequencer.style.time.barTicks {
                if playing { counters.relocations += 1 }
                pending.removeAll()
                stream?.cancel()
                // From where the song was a look ago: a start's downbeat, seen up to a look late, plays late, not never.
                let lookedLast = now.receded(byNanoseconds: Self.lookInterval)
                sequencer.locate(tick: song.songTick(at: lookedLast) ?? tick)
                playing = true
            }
            if let through = song.songTick(at: now.advanced(byNanoseconds: lookahead)) {
                let total = song.sessionTotal(at: now).value
                sequencer.play(through: through, timeline: timeline, activity: total) { hit in
                    pending.append(hit)
                    stream?.schedule(hit)
                }
                pending.sort { $0.time < $1.time }
            }
        } else if playing {
            playing = false
            pending.removeAll()
            stream?.cancel()
        }
        send(until: now.advanced(byNanoseconds: JamConductor.earlyTolerance), stepLength: song?.tempo)
        return [pending.first?.time, noteOffs.first?.time].compactMap { $0 }.reduce(now.advanced(byNanoseconds: Self.lookInterval), min)
    }

    /// Sends the note-ons and note-offs due by `horizon`.
    private func send(until horizon: MonotonicInstant, stepLength tempo: Double?) {
        guard let id = source.id, let sink = source.sink else {
            pending.removeAll { $0.time <= horizon }
            return
        }
        let step = tempo.map { 60e9 / $0 / 24 * sequencer.style.stepTicks } ?? 1e9
        let length = min(Self.noteLength, UInt64(step / 2))
        while let hit = pending.first, hit.time <= horizon {
            pending.removeFirst()
            let note = declaration.note(of: hit.voice)
            let velocity = UInt7(masking: UInt8(max(1, min(127, (hit.velocity * 127).rounded()))))
            sink.routeOnQueue(MIDIEvent(.noteOn(channel: declaration.channel, note: note, velocity: velocity), from: id, at: hit.time))
            let off = hit.time.advanced(byNanoseconds: length)
            noteOffs.insert((off, note), at: noteOffs.firstIndex { $0.time > off } ?? noteOffs.endIndex)
            counters.notes += 1
        }
        while let off = noteOffs.first, off.time <= horizon {
            noteOffs.removeFirst()
            sink.routeOnQueue(MIDIEvent(.noteOff(channel: declaration.channel, note: off.note, velocity: UInt7(masking: 0)), from: id, at: off.time))
        }
    }

    /// The drums' state at `now`, along the jam's `song`.
    func report(at now: MonotonicInstant, song: (any JamSong)?) -> DaemonStatus.Drums {
        let time = sequencer.style.time
        let tick = playing ? song?.songTick(at: now) : nil
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
                                  muted: sequencer.muted.sorted().map(\.rawValue), notes: counters.notes, audio: audio)
    }
}
