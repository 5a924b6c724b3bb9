import MIDI
import MIDITestSupport
import Testing
@testable import Jam

@Suite struct ClockGeneratorTests {
    let start = MonotonicInstant(nanoseconds: 3_000_000_000_000)
    func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(seconds * 1e9, after: start) }

    /// Runs the lookahead as an engine would: every `step` seconds, ticks up to `lookahead` ahead.
    func run(_ generator: inout ClockGenerator, from: Double, to: Double, step: Double = 0.007, lookahead: Double = 0.02)
        -> [ScheduledMessage] {
        var out: [ScheduledMessage] = []
        var now = from
        while now < to {
            generator.ticks(until: at(now + lookahead)) { out.append($0) }
            now += step
        }
        return out
    }

    @Test func ticksComeFromAnAnchorAndNeverDrift() {
        var generator = ClockGenerator(tempo: 123.4)
        var out: [ScheduledMessage] = []
        generator.start(at: start) { out.append($0) }
        out += run(&generator, from: 0, to: 600)
        #expect(out.first == ScheduledMessage(.start, at: start))
        let ticks = out.dropFirst()
        #expect(ticks.allSatisfy { $0.message == .timingClock })
        let period = 60e9 / (123.4 * 24)
        #expect(ticks.count >= Int(600e9 / period) && ticks.last.map { $0.time < at(600.03) } == true)
        for (k, tick) in ticks.enumerated() {
            #expect(abs(tick.time.nanoseconds(since: start) - Double(k) * period) <= 0.5)
        }
        #expect(zip(out, out.dropFirst()).allSatisfy { $0.time <= $1.time })
    }

    @Test func aTempoChangeMidBarTakesEffectFromTheNextBeat() {
        var generator = ClockGenerator(tempo: 120)
        generator.start(at: start) { _ in }
        var ticks = run(&generator, from: 0, to: 0.62).map(\.time)   // into beat 2 of the bar (tick 30 sent)
        generator.setTempo(100)
        generator.setTempo(90)
        #expect(generator.tempo == 120 && generator.pendingTempo == 90)
        let beat2 = at(1.0)
        #expect(generator.beatTime(of: 2) == beat2 && generator.beatTime(of: 3) == MonotonicInstant(60e9 / 90, after: beat2))
        ticks += run(&generator, from: 0.62, to: 5).map(\.time)
        let old = MIDIClock.tickPeriod(bpm: 120), new = MIDIClock.tickPeriod(bpm: 90)
        for (k, time) in ticks.enumerated() {
            let expected = k <= 48 ? Double(k) * old : 48 * old + Double(k - 48) * new
            #expect(abs(time.nanoseconds(since: start) - expected) <= 1)
        }
        #expect(generator.tempo == 90 && generator.pendingTempo == nil)
    }

    @Test func stopContinueAndSongPosition() {
        var generator = ClockGenerator(tempo: 120)
        var out: [ScheduledMessage] = []
        generator.start(at: start) { out.append($0) }
        out += run(&generator, from: 0, to: 2.07)                     // ticks 0...100 handed out
        let locatedWhileRunning = generator.locate(sixteenths: 4)
        #expect(!locatedWhileRunning)
        generator.stop(at: at(2.05)) { out.append($0) }                // before tick 100's time: goes after it
        #expect(out.suffix(2).map(\.message) == [.timingClock, .stop])
        #expect(out.last?.time == out.dropLast().last?.time)
        #expect(generator.position == 101 && !generator.isRunning)
        out = run(&generator, from: 2.1, to: 3)
        #expect(out.isEmpty)
        generator.continue(at: at(3)) { out.append($0) }
        generator.ticks(until: at(3.01)) { out.append($0) }
        // Resumes on the next sixteenth: 101 ticks -> sixteenth 17 (tick 102).
        #expect(out.map(\.message) == [.songPosition(UInt14(masking: 17)), .continue, .timingClock])
        #expect(out.allSatisfy { $0.time == at(3) })
        #expect(generator.nextTickTime == MonotonicInstant(MIDIClock.tickPeriod(bpm: 120), after: at(3)))
        generator.continue(at: at(3.1)) { out.append($0) }
        #expect(generator.counters.refusedCommands == 2)
        generator.stop(at: at(4)) { _ in }
        let located = [0x4000, 0x3FFF].map { generator.locate(sixteenths: $0) }
        #expect(located == [false, true])
        out = []
        generator.continue(at: at(5)) { out.append($0) }
        #expect(out.first?.message == .songPosition(UInt14(masking: 0x3FFF)))
        generator.ticks(until: at(5.5)) { _ in }
        generator.stop(at: at(5.5)) { _ in }
        // Past the last song position the pointer wraps, keeping the bar.
        out = []
        generator.continue(at: at(6)) { out.append($0) }
        #expect(out.first?.message == .songPosition(UInt14(masking: 3)))
    }

    /// Issue 41: 1e308 and 5e-324 were held to 300 and 20; every tempo outside the range is refused and counted.
    @Test func hostileTemposAreRefusedAndCounted() {
        var generator = ClockGenerator()
        let taken = [0, -5, .nan, .infinity, 10_000, 1e308, 5e-324, 1, 19.99, 300.01, 20, 300].map { generator.setTempo($0) }
        #expect(taken == Array(repeating: false, count: 10) + [true, true])
        #expect(generator.tempo == 300)
        #expect(generator.counters == ClockGenerator.Counters(refusedTempos: 10, refusedCommands: 0))
        #expect(ClockGenerator(tempo: 0).tempo == 120 && ClockGenerator(tempo: 10_000).tempo == 300)
    }

    /// Issue 43: a tempo change applied within what is taken back waits again for its beat: the ticks before it are
    /// handed out again at the old tempo, none lost (it rewound no further than the beat), none twice.
    @Test func aTempoChangeTakenBackWaitsAgainForItsBeat() {
        var generator = ClockGenerator(tempo: 120)
        var out: [ScheduledMessage] = []
        generator.start(at: start) { out.append($0) }
        out += run(&generator, from: 0, to: 0.62, lookahead: 0.1)
        generator.setTempo(60)                                        // from beat 2 (tick 48, 1.0 s)
        out += run(&generator, from: 0.62, to: 0.94, lookahead: 0.1)  // ticks up to 1.04 s: past the beat
        #expect(generator.tempo == 60)
        let withdrew = generator.withdraw(after: at(0.95))
        #expect(withdrew)
        out.removeAll { $0.time > at(0.95) }
        out += run(&generator, from: 0.95, to: 3, lookahead: 0.1)
        let ticks = out.dropFirst().map(\.time)
        let old = MIDIClock.tickPeriod(bpm: 120), new = MIDIClock.tickPeriod(bpm: 60)
        #expect(ticks.count > 60)
        for (k, time) in ticks.enumerated() {
            let expected = k <= 48 ? Double(k) * old : 48 * old + Double(k - 48) * new
            #expect(abs(time.nanoseconds(since: start) - expected) <= 1, "tick \(k)")
        }
    }

    /// Issue 43: a Start taken back before it went (the song waits for a bar line that moves) goes again with the
    /// song's first tick on the new line, once; stopped before then, the song sends no Stop.
    @Test func aStartTakenBackGoesAgainWithTheFirstTick() {
        var generator = ClockGenerator(tempo: 120)
        var out: [ScheduledMessage] = []
        generator.start(at: at(8)) { out.append($0) }
        let withdrew = generator.withdraw(after: at(0.2))
        #expect(withdrew)
        #expect(generator.awaitsItsStart)
        out.removeAll { $0.time > at(0.2) }
        generator.align(nextTickAt: at(3), tempo: 300)
        out += run(&generator, from: 0.2, to: 3.5)
        #expect(out.first == ScheduledMessage(.start, at: at(3)) && out.dropFirst().first == ScheduledMessage(.timingClock, at: at(3)))
        #expect(out.filter { $0.message == .start }.count == 1 && !generator.awaitsItsStart)

        var waiting = ClockGenerator(tempo: 120)
        waiting.start(at: at(8)) { _ in }
        let tookStart = waiting.withdraw(after: at(0.2))
        #expect(tookStart)
        var stopped: [ScheduledMessage] = []
        waiting.stop(at: at(0.3)) { stopped.append($0) }
        #expect(stopped.isEmpty && !waiting.isRunning)
    }
}
