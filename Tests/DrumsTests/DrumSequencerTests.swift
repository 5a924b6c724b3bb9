import Jam
import MIDI
import Testing
@testable import Drums

/// A style of 16 steps a bar from one line per voice, written as in style files: "." a rest, a digit a step of that level.
func style(_ lines: [DrumVoice: String], levels: Int = 4, swing: Double = 0.5, humanizeTime: Double = 0,
           phrase: Int = 4, fill: [DrumVoice: String]? = nil, time: TimeSignature = TimeSignature(beats: 4, unit: 4),
           stepsPerBar: Int = 16) -> Style {
    func pattern(_ lines: [DrumVoice: String]) -> Pattern {
        Pattern(lines: lines.mapValues { $0.split(separator: " ").map { $0 == "." ? nil : Step(level: Int($0)!) } }, bars: 1)
    }
    return Style(name: "test", time: time, stepsPerBar: stepsPerBar, levels: levels, swing: swing,
                 humanizeTime: humanizeTime, phrase: phrase, groove: pattern(lines), fill: fill.map(pattern))
}

let steady = SteadyTimeline(start: MonotonicInstant(nanoseconds: 1_000_000_000), tempo: 120)

/// Every hit of `bars` bars, the activity given per bar.
func play(_ sequencer: inout DrumSequencer, bars: Int, activity: (Int) -> UInt8 = { _ in 0 }) -> [DrumHit] {
    var hits: [DrumHit] = []
    let barTicks = sequencer.style.time.barTicks
    for bar in 0..<bars {
        sequencer.play(through: Double(bar + 1) * barTicks, timeline: steady, activity: activity(bar)) { hits.append($0) }
    }
    return hits
}

func milliseconds(_ hit: DrumHit) -> Double { Double(hit.time.nanoseconds - 1_000_000_000) / 1e6 }

@Suite struct DrumSequencerTests {
    @Test func stepsFallOnTheirTicksThroughTheTimeline() {
        var sequencer = DrumSequencer(style: style([.kick: "1 . . . 1 . . . 1 . . . 1 . . .", .snare: ". . . . 1 . . . . . . . 1 . . ."]), seed: 1)
        let hits = play(&sequencer, bars: 2)
        #expect(hits.filter { $0.voice == .kick }.map(milliseconds) == [0, 500, 1000, 1500, 2000, 2500, 3000, 3500])
        #expect(hits.filter { $0.voice == .snare }.map(milliseconds) == [500, 1500, 2500, 3500])
        #expect(hits.map(\.time) == hits.map(\.time).sorted())
    }

    @Test func aStepIsHandedOutOnceHoweverThePlayingIsCutUp() {
        let lines: [DrumVoice: String] = [.hat: "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"]
        var whole = DrumSequencer(style: style(lines), seed: 1)
        var pieces = DrumSequencer(style: style(lines), seed: 1)
        var cut: [DrumHit] = []
        for tick in stride(from: 0.7, through: 192, by: 2.3) {
            pieces.play(through: tick, timeline: steady, activity: 0) { cut.append($0) }
        }
        pieces.play(through: 192, timeline: steady, activity: 0) { cut.append($0) }
        #expect(cut == play(&whole, bars: 2))
        #expect(cut.count == 32)
    }

    @Test func swingDelaysTheSecondStepOfEachPair() {
        var sequencer = DrumSequencer(style: style([.hat: "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"], swing: 0.6), seed: 1)
        let times = play(&sequencer, bars: 1).map(milliseconds)
        // A sixteenth is 125 ms at 120 BPM; the second of each pair falls at 60 % of the pair: 150 ms after the first.
        #expect(times.prefix(4) == [0, 150, 250, 400])
        #expect(times.count == 16)
    }

    @Test func theLevelChangesOnlyAtBarLinesAndWithHysteresis() {
        let lines: [DrumVoice: String] = [.kick: "1 . . . 1 . . . 1 . . . 1 . . .", .hat: "2 2 2 2 2 2 2 2 2 2 2 2 2 2 2 2"]
        var sequencer = DrumSequencer(style: style(lines, levels: 2), seed: 1)
        var hits: [DrumHit] = []
        // Half a bar calm, then the room heats up in the middle of bar 0: bar 0 stays at level 1, bar 1 is at 2.
        sequencer.play(through: 48, timeline: steady, activity: 0) { hits.append($0) }
        sequencer.play(through: 96, timeline: steady, activity: 100) { hits.append($0) }
        sequencer.play(through: 192, timeline: steady, activity: 100) { hits.append($0) }
        #expect(hits.filter { $0.bar == 0 }.allSatisfy { $0.voice == .kick && $0.level == 1 })
        #expect(hits.filter { $0.bar == 1 && $0.voice == .hat }.count == 16)
        // Just under the boundary (64) the level holds; well under it, it falls.
        sequencer.play(through: 288, timeline: steady, activity: 60) { hits.append($0) }
        #expect(hits.filter { $0.bar == 2 }.allSatisfy { $0.level == 2 })
        sequencer.play(through: 384, timeline: steady, activity: 50) { hits.append($0) }
        #expect(hits.filter { $0.bar == 3 }.allSatisfy { $0.level == 1 && $0.voice == .kick })
    }

    @Test func intensityLevelsShareTheRangeWithHysteresis() {
        var level = IntensityLevel(levels: 4)
        #expect([0, 37, 38, 69, 127, 100, 90, 89, 0].map { level.update(activity: $0) } == [1, 1, 2, 2, 4, 4, 4, 3, 1])
    }

    @Test func aLockedLevelOverridesTheActivity() {
        var sequencer = DrumSequencer(style: style([.kick: "1 . . . . . . . . . . . . . . .", .hat: "4 . . . . . . . . . . . . . . ."]), seed: 1)
        sequencer.lockedLevel = 4
        #expect(play(&sequencer, bars: 1).map(\.voice) == [.kick, .hat])
    }

    @Test func probabilityIsDrawnFromTheSeedAlone() {
        var lines = style([.hat: "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"])
        lines.groove.lines[.hat] = lines.groove.lines[.hat]!.map { $0.map { Step(level: $0.level, probability: 0.5) } }
        var a = DrumSequencer(style: lines, seed: 7), b = DrumSequencer(style: lines, seed: 7), c = DrumSequencer(style: lines, seed: 8)
        let first = play(&a, bars: 16)
        #expect(first == play(&b, bars: 16))
        #expect(first != play(&c, bars: 16))
        #expect((96...160).contains(first.count))
    }

    @Test func humanizingStaysWithinItsBoundAndRepeats() {
        let lines: [DrumVoice: String] = [.snare: "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"]
        var a = DrumSequencer(style: style(lines, humanizeTime: 4), seed: 3), b = DrumSequencer(style: style(lines, humanizeTime: 4), seed: 3)
        let hits = play(&a, bars: 4)
        #expect(hits == play(&b, bars: 4))
        let shifts = hits.enumerated().map { milliseconds($0.element) - Double($0.offset) * 125 }
        #expect(shifts.allSatisfy { abs($0) <= 4 })
        #expect(shifts.contains { abs($0) > 1 })
    }

    @Test func theFillEndsEachPhrase() {
        var sequencer = DrumSequencer(style: style([.kick: "1 . . . . . . . . . . . . . . ."], phrase: 2,
                                                   fill: [.snare: "1 . . . . . . . . . . . . . . ."]), seed: 1)
        #expect(play(&sequencer, bars: 4).map(\.voice) == [.kick, .snare, .kick, .snare])
    }

    @Test func locatingStartsAtTheFirstStepAtOrAfterThePosition() {
        var sequencer = DrumSequencer(style: style([.kick: "1 1 1 1 1 1 1 1 1 1 1 1 1 1 1 1"]), seed: 1)
        sequencer.locate(tick: 100) // bar 1, 4 ticks in: the next sixteenth is step 1 (tick 102)
        var hits: [DrumHit] = []
        sequencer.play(through: 110, timeline: steady, activity: 0) { hits.append($0) }
        #expect(hits.map { [$0.bar, $0.step] } == [[1, 1], [1, 2]])
    }

    @Test func aNewStyleBeginsAtTheNextBarLine() {
        var sequencer = DrumSequencer(style: style([.kick: "1 . . . 1 . . . 1 . . . 1 . . ."]), seed: 1)
        var hits: [DrumHit] = []
        sequencer.play(through: 48, timeline: steady, activity: 0) { hits.append($0) }
        sequencer.change(to: style([.rim: "1 . . . . . . . . . . . . . . ."]))
        sequencer.play(through: 192, timeline: steady, activity: 0) { hits.append($0) }
        #expect(hits.map(\.voice) == [.kick, .kick, .kick, .kick, .rim])
    }

    @Test func sixEightBarsHaveTwelveSixteenths() {
        let sixEight = style([.kick: "1 . . . . . 1 . . . . ."], time: TimeSignature(beats: 6, unit: 8), stepsPerBar: 12)
        var sequencer = DrumSequencer(style: sixEight, seed: 1)
        #expect(play(&sequencer, bars: 2).map(milliseconds) == [0, 750, 1500, 2250])
    }

    @Test func mutedVoicesAreLeftOut() {
        var sequencer = DrumSequencer(style: style([.kick: "1 . . . . . . . . . . . . . . .", .hat: "1 . . . . . . . . . . . . . . ."]), seed: 1)
        sequencer.muted = [.hat]
        #expect(play(&sequencer, bars: 1).map(\.voice) == [.kick])
    }
}

@Suite struct ActivityCurveTests {
    @Test func constantRampAndPoints() throws {
        #expect(try #require(ActivityCurve("64")).value(atBar: 3, of: 8) == 64)
        let ramp = try #require(ActivityCurve("0-127"))
        #expect([0, 4, 8].map { ramp.value(atBar: $0, of: 8) } == [0, 64, 127])
        let points = try #require(ActivityCurve("2:0,4:100,6:20"))
        #expect([0, 2, 3, 4, 5, 6, 9].map { points.value(atBar: $0, of: 8) } == [0, 0, 50, 100, 60, 20, 20])
        for bad in ["", "128", "a-b", "3:10,2:20", "1:200", "-1:5", "10-"] { #expect(ActivityCurve(bad) == nil, "\(bad)") }
    }
}
