import Jam
@testable import JamBridge
import MIDI
import MIDITestSupport
import Testing

// The take's tempo map in pure form: a virtual clock (the Jam module's ClockGenerator, ticks delayed by a seeded
// network where asked) and notes at chosen beats go through TakeTimeline in time order; what it placed is encoded
// and read back, ticks as beats and, through the tempo events, as seconds.

private func v(_ x: Int) -> UInt7 { UInt7(masking: UInt8(x)) }
private let c1 = UInt4(masking: 0)
private let bar: UInt64 = 3840
private let quarter = 960.0

/// A performance: messages at instants on a virtual clock, given to the recorder in time order.
private struct Performance {
    static let start = MonotonicInstant(nanoseconds: 1_000_000_000_000)
    var messages: [(time: MonotonicInstant, message: MIDIMessage)] = []

    static func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(nanoseconds: start.nanoseconds + UInt64(seconds * 1e9)) }

    mutating func add(_ message: MIDIMessage, at time: MonotonicInstant) { messages.append((time, message)) }

    /// What `TakeTimeline` makes of it, and that take read back.
    func record() -> (timeline: TakeTimeline, events: [TakeEvent], take: ReadTake) {
        var timeline = TakeTimeline()
        var events: [TakeEvent] = []
        for (time, message) in messages.enumerated().sorted(by: { ($0.element.time, $0.offset) < ($1.element.time, $1.offset) }).map(\.element) {
            timeline.receive(message, at: time) { events.append($0) }
        }
        timeline.finish { events.append($0) }
        var encoder = RecordingEncoder(ticksPerQuarterNote: TakeTimeline.ticksPerQuarter, microsecondsPerQuarter: TakeTimeline.initialTempo)
        for event in events { encoder.append(event.kind, atTick: event.tick) }
        return (timeline, events, ReadTake(encoder.file()))
    }
}

/// A take's file as a reader sees it: notes with their ticks and seconds, tempo events with their ticks.
private struct ReadTake {
    var notes: [(tick: UInt64, seconds: Double, message: MIDIMessage)] = []
    var tempos: [(tick: UInt64, microseconds: UInt32)] = []
    var messages: [MIDIMessage] = []

    init(_ bytes: [UInt8]) {
        guard let file = try? StandardMIDIFile(bytes: bytes) else { return }
        var tick: UInt64 = 0
        var ticks: [UInt64] = []
        for event in file.tracks[0].events {
            tick += UInt64(event.delta)
            switch event.kind {
            case .midi(let message):
                ticks.append(tick)
                messages.append(message)
            case .meta(StandardMIDIFile.MetaType.tempo, let data):
                tempos.append((tick, UInt32(data[0]) << 16 | UInt32(data[1]) << 8 | UInt32(data[2])))
            default: break
            }
        }
        for (tick, entry) in zip(ticks, TimedSong(file).entries) {
            if case .noteOn = entry.message { notes.append((tick, Double(entry.offset) / 1e9, entry.message)) }
        }
    }
}

/// The generator's Start, ticks and Stop at `tempo`, changing to `then` on beat `changeBeat`, stopping after the
/// first tick of beat `stopBeat`; returns when each tick came.
private func clock(into performance: inout Performance, startingAt start: MonotonicInstant, tempo: Double,
                   then newTempo: Double, onBeat changeBeat: Int, stopAfterBeat stopBeat: Int) -> [MonotonicInstant] {
    var generator = ClockGenerator(tempo: tempo)
    var ticks: [MonotonicInstant] = []
    let take = { (scheduled: ScheduledMessage) in
        if scheduled.message == .timingClock { ticks.append(scheduled.time) }
        performance.add(scheduled.message, at: scheduled.time)
    }
    generator.start(at: start, emit: take)
    while ticks.count < changeBeat * MIDIClock.ticksPerBeat { generator.ticks(until: generator.nextTickTime!.advanced(byNanoseconds: 1), emit: take) }
    generator.setTempo(newTempo)
    while ticks.count <= stopBeat * MIDIClock.ticksPerBeat { generator.ticks(until: generator.nextTickTime!.advanced(byNanoseconds: 1), emit: take) }
    generator.stop(at: ticks.last!.advanced(byNanoseconds: 10_000_000), emit: take)
    return ticks
}

/// `nanoseconds` after `time`.
private func later(_ time: MonotonicInstant, _ nanoseconds: Double) -> MonotonicInstant {
    time.advanced(byNanoseconds: UInt64(nanoseconds.rounded()))
}

/// When `beat` (0 the Start's downbeat) fell, from the ticks' times.
private func time(ofBeat beat: Double, ticks: [MonotonicInstant]) -> MonotonicInstant {
    let whole = Int(beat), from = ticks[whole * 24].nanoseconds, to = ticks[(whole + 1) * 24].nanoseconds
    return MonotonicInstant(nanoseconds: from + UInt64((beat - Double(whole)) * Double(to - from)))
}

@Suite struct TakeTimelineTests {
    @Test func theClocksBeatsAreTheFilesBeatsInTicksAndInSecondsWithItsStartOnABarLine() throws {
        var performance = Performance()
        let on = { (note: Int) in MIDIMessage.noteOn(channel: c1, note: v(note), velocity: v(100)) }
        let off = { (note: Int) in MIDIMessage.noteOff(channel: c1, note: v(note), velocity: v(0)) }
        // Before any clock: seconds at 120 BPM from the first note.
        performance.add(on(40), at: Performance.at(0))
        performance.add(off(40), at: Performance.at(0.2))
        // Start 2.3 s in, mid-bar on the file's grid: 8 beats at 120 BPM, 8 at 150, Stop.
        let ticks = clock(into: &performance, startingAt: Performance.at(2.3), tempo: 120, then: 150, onBeat: 8, stopAfterBeat: 16)
        let beats = [0, 1.5, 4, 6.25, 8, 9.5, 12, 15.5]
        for (index, beat) in beats.enumerated() {
            performance.add(on(60 + index), at: time(ofBeat: beat, ticks: ticks))
            performance.add(off(60 + index), at: time(ofBeat: beat + 0.25, ticks: ticks))
        }
        // After the Stop, seconds again, at the last tempo.
        let after = ticks.last!.advanced(byNanoseconds: 500_000_000)
        performance.add(on(80), at: after)
        let (timeline, events, take) = performance.record()

        // The pad takes the bar line nearer in tempo: 2.1 s from the last note-off (tick 384) to tick 3840.
        #expect(take.tempos.map(\.tick) == [0, 384, 3840, 3840 + 8 * 960])
        #expect(take.tempos.map(\.microseconds) == [500_000, 583_333, 500_000, 400_000])
        #expect(timeline.tempoChanges == 3)
        let clocked = take.notes.dropFirst().dropLast()
        for ((tick, seconds, message), beat) in zip(clocked, beats) {
            // The Start's downbeat is bar 2's line, and every beat after it is the file's beat.
            #expect(abs(Double(tick) - Double(bar) - beat * quarter) <= 0.5, "\(message)")
            let real = Double(time(ofBeat: beat, ticks: ticks).nanoseconds - Performance.start.nanoseconds) / 1e9
            #expect(abs(seconds - real) < 0.000_6, "\(message): \(seconds) s, played at \(real) s")
        }
        #expect(take.notes.first.map { $0.tick == 0 && $0.seconds == 0 } == true)
        let last = take.notes.last!
        #expect(abs(last.seconds - Double(after.nanoseconds - Performance.start.nanoseconds) / 1e9) < 0.000_6)
        #expect(last.tick > bar + 16 * 960)
        #expect(events.map(\.tick) == events.map(\.tick).sorted())
        #expect(take.messages.count == 2 * beats.count + 3)
    }

    @Test func aContinueLandsAtTheSongPositionsPlaceInItsBar() {
        var performance = Performance()
        performance.add(.noteOn(channel: c1, note: v(50), velocity: v(90)), at: Performance.at(0))
        // Song position 6 sixteenths (tick 36: the second half of the bar's second beat), Continue, ticks at 100 BPM.
        performance.add(.songPosition(UInt14(masking: 6)), at: Performance.at(1))
        performance.add(.continue, at: Performance.at(1))
        let period = MIDIClock.tickPeriod(bpm: 100)
        for k in 0..<200 { performance.add(.timingClock, at: later(Performance.at(1.05), Double(k) * period)) }
        // A note on the Continue's first tick and one on the next downbeat (tick 96, 60 ticks later).
        performance.add(.noteOn(channel: c1, note: v(60), velocity: v(90)), at: Performance.at(1.05))
        performance.add(.noteOn(channel: c1, note: v(62), velocity: v(90)), at: later(Performance.at(1.05), 60 * period))
        let take = performance.record().take
        #expect(take.notes.count == 3)
        #expect(take.notes[1].tick % bar == 36 * 40)
        #expect(take.notes[2].tick % bar == 0)
        #expect(take.notes[2].tick - take.notes[1].tick == 60 * 40)
        #expect(take.tempos.last?.microseconds == 600_000)
    }

    @Test(arguments: [2e6, 10e6])
    func aJitteryClockMakesFewTempoEventsAndKeepsSecondsWithinTheDriftLimit(jitter: Double) {
        var network = SeededGenerator(seed: 3)
        var performance = Performance()
        var generator = ClockGenerator(tempo: 123.7)
        var intended: [MonotonicInstant] = []
        let arrive = { (time: MonotonicInstant) in later(time, Double.random(in: 0...jitter, using: &network)) }
        generator.start(at: Performance.at(0)) { performance.add($0.message, at: $0.time) }
        generator.ticks(until: Performance.at(300)) { intended.append($0.time) }
        for tick in intended { performance.add(.timingClock, at: arrive(tick)) }
        // A note on every beat but the first and the last, through the same network.
        let notes = stride(from: 24, to: intended.count - 24, by: 24).map { k in
            (beat: Double(k / 24), arrival: arrive(intended[k]))
        }
        for note in notes { performance.add(.noteOn(channel: c1, note: v(60), velocity: v(90)), at: note.arrival) }
        performance.add(.stop, at: Performance.at(300))
        let (timeline, _, take) = performance.record()
        #expect(take.notes.count == notes.count)
        // A tempo event where the file would drift more than 5 ms, measured over 16 beats: a few in 5 minutes.
        #expect(timeline.tempoChanges <= 20, "\(timeline.tempoChanges) tempo changes in 617 beats")
        // The file starts on the clock's first tick, as it arrived.
        let origin = performance.messages.first { $0.message == .timingClock }!.time
        var worstSeconds = 0.0, worstBeat = 0.0
        for (read, note) in zip(take.notes, notes) {
            worstSeconds = max(worstSeconds, abs(read.seconds - Double(note.arrival.nanoseconds - origin.nanoseconds) / 1e9))
            worstBeat = max(worstBeat, abs(Double(read.tick) / quarter - note.beat))
        }
        // Seconds: within the drift limit of when each note arrived (and a tick's rounding).
        #expect(worstSeconds <= 0.005 + 0.000_6, "\(worstSeconds)")
        // Beats: the note's own jitter (up to 2% of a beat at 10 ms) and the follower's error.
        #expect(worstBeat <= 1.5 * jitter / MIDIClock.tickPeriod(bpm: 123.7) / 24 + 0.001, "\(worstBeat)")
        #expect(timeline.follower.counters.reseeds == 0)
    }

    @Test func hostileClockIsBoundedAndEveryNoteIsKept() throws {
        var performance = Performance()
        var sent: [MIDIMessage] = []
        var note = 0
        let play = { (performance: inout Performance, time: MonotonicInstant) in
            let message = MIDIMessage.noteOn(channel: c1, note: v(note % 128), velocity: v(1 + note % 127))
            note += 1
            sent.append(message)
            performance.add(message, at: time)
        }
        // Clock without a Start: seconds, no tempo event.
        for k in 0..<96 { performance.add(.timingClock, at: Performance.at(Double(k) * 0.02)) }
        play(&performance, Performance.at(0.5))
        // A clock storm: 100,000 ticks in a second after a Start, notes among them.
        performance.add(.start, at: Performance.at(2))
        for k in 0..<100_000 {
            performance.add(.timingClock, at: Performance.at(2 + Double(k) * 1e-5))
            if k % 1000 == 0 { play(&performance, Performance.at(2 + Double(k) * 1e-5)) }
        }
        // Start/Stop flapping, a tick and a note each time.
        for k in 0..<500 {
            let time = 3.5 + Double(k) * 0.001
            performance.add(k % 2 == 0 ? .start : .stop, at: Performance.at(time))
            performance.add(.timingClock, at: Performance.at(time + 0.0002))
            play(&performance, Performance.at(time + 0.0004))
        }
        // A song position past the end, Continue, ticks, then the clock falls silent mid-beat for 2 s and comes back.
        performance.add(.stop, at: Performance.at(4.1))
        performance.add(.songPosition(UInt14(masking: 0x3FFF)), at: Performance.at(4.2))
        performance.add(.continue, at: Performance.at(4.3))
        for k in 0..<40 { performance.add(.timingClock, at: Performance.at(4.3 + Double(k) * 0.02)) }
        play(&performance, Performance.at(5.0))
        play(&performance, Performance.at(7.0))
        for k in 0..<40 { performance.add(.timingClock, at: Performance.at(7.5 + Double(k) * 0.02)) }
        play(&performance, Performance.at(7.9))
        // Song positions while running, a Continue while running, other system messages.
        performance.add(.songPosition(UInt14(masking: 3)), at: Performance.at(8.0))
        performance.add(.continue, at: Performance.at(8.0))
        performance.add(.activeSensing, at: Performance.at(8.1))
        play(&performance, Performance.at(8.2))
        let (timeline, events, take) = performance.record()
        #expect(take.messages == sent)
        #expect(events.map(\.tick) == events.map(\.tick).sorted())
        #expect(timeline.follower.counters.excessTicks > 90_000)
        // At most a pad and a beat's tempo per Start or Continue, and one per beat (about 30 here) besides.
        #expect(timeline.tempoChanges <= 2 * 252 + 60, "\(timeline.tempoChanges)")
        // The first note, before any Start, is on the seconds grid at 120 BPM.
        #expect(take.notes[0].tick == 0)
        // Back after its silence, the clock goes on from song tick 16383 x 6 + 40 (the tick after its last): the note
        // 20 ticks later, song tick 98358, is 54 clock ticks into its bar, and so is it in the file's bar.
        let back = take.notes[take.notes.count - 2].tick
        #expect(abs(Int(back % bar) - 54 * 40) <= 1, "\(back % bar)")
    }
}
