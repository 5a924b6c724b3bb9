import MIDI
import Testing
@testable import Jam

/// The jam along a shared timeline (Ableton Link's session, as `JamPart` reads it): starts on its bar lines, its
/// beats, its tempo both ways, its start and stop.
@Suite struct SharedTimelineTests {
    let origin = MonotonicInstant(nanoseconds: 9_000_000_000_000)
    func at(_ seconds: Double) -> MonotonicInstant { MonotonicInstant(seconds * 1e9, after: origin) }
    /// A session at 97 BPM whose beat 10.5 fell at 0 s, bars of 4.
    func session(tempo: Double = 97, peers: Int = 1) -> SharedTimeline {
        SharedTimeline(tempo: tempo, beat: 10.5, at: at(0), quantum: 4, peers: peers)
    }

    func shares(_ harness: ConductorHarness) -> [SharedChange] {
        harness.outputs.compactMap { if case .share(let change) = $0.output { change } else { nil } }
    }

    /// The nanoseconds each played tick is off the timeline's beat for its index, from `beat` at tick 0.
    func offsets(_ ticks: [MonotonicInstant], on timeline: SharedTimeline, from beat: Double) -> [Double] {
        ticks.enumerated().map { index, time in
            time.nanoseconds(since: timeline.time(atBeat: beat + Double(index) / Double(MIDIClock.ticksPerBeat)))
        }
    }

    @Test func theTimelineCountsBeatsAndBarLines() {
        let timeline = session()
        #expect(abs(timeline.beat(at: at(60 / 97)) - 11.5) < 1e-9)
        #expect(timeline.time(atBeat: 10.5) == at(0))
        #expect(timeline.barLine(atOrAfter: at(0)) == 12)
        #expect(timeline.barLine(atOrAfter: timeline.time(atBeat: 12)) == 12, "a bar line at the instant counts")
        #expect(timeline.barLine(atOrAfter: timeline.time(atBeat: 12.001)) == 16)
    }

    /// With peers in the session, a start waits for its next bar line, as Link apps' do: the Start and the first tick
    /// fall there, the session is asked to play from it, and every tick falls on the session's beats at its tempo.
    @Test func aStartWaitsForTheSessionsBarLineAndTicksFallOnItsBeats() throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.ahead = 100_000_000
        let timeline = session()
        jam.conductor.share(timeline, now: at(0)) { jam.outputs.append(($0, at(0))) }
        #expect(jam.conductor.generator.tempo == 97, "a stopped jam takes the session's tempo")
        let result = try jam.perform(.start, at: at(0.1)).get()
        let downbeat = timeline.time(atBeat: 12)
        #expect(result.hasPrefix("starting at 97 BPM on the Link session's next bar line, in 0.83 s"), "\(result)")
        #expect(shares(jam) == [.start(beat: 12, at: downbeat)])
        jam.run(until: at(5))
        let start = try #require(jam.deliveries.first { $0.message == .start })
        #expect(start.time == downbeat)
        let ticks = jam.deliveries.filter { $0.message == .timingClock }.map(\.time)
        #expect(ticks.count > 150)
        #expect(offsets(ticks, on: timeline, from: 12).allSatisfy { abs($0) <= 1 }, "each tick on the session's beats")
    }

    /// Alone in the session, a start is at once: the bar line is put there.
    @Test func aloneAStartIsAtOnce() throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.conductor.share(session(peers: 0), now: at(0)) { _ in }
        _ = jam.perform(.start, at: at(0.1))
        #expect(shares(jam) == [.start(beat: 12, at: at(0.1))])
        #expect(jam.deliveries.first?.message == .start && jam.deliveries.first?.time == at(0.1))
    }

    /// A Link app's start heard late (the session is read every few milliseconds) still starts on its bar line; one
    /// heard after the bar line had long passed waits for the next.
    @Test func aStartFromTheSessionCountsItsBarLineFromWhenItWasAskedFor() throws {
        let timeline = session()
        let barLine = timeline.time(atBeat: 12)
        for (heard, expected) in [(barLine.advanced(byNanoseconds: 10_000_000), 12.0), (barLine.advanced(byNanoseconds: 200_000_000), 16)] {
            let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
            jam.conductor.share(timeline, now: at(0)) { _ in }
            jam.run(until: heard)
            var emitted: [JamOutput] = []
            _ = jam.conductor.perform(.start, from: .link, now: heard, requested: barLine) { emitted.append($0) }
            #expect(emitted.contains(.share(.start(beat: expected, at: timeline.time(atBeat: expected)))), "\(emitted)")
        }
    }

    /// A peer of the session changes the tempo while the song plays: the ticks handed out ahead are taken back and the
    /// song goes on at the new tempo on the session's beats, without a second Start.
    @Test func theSessionsTempoMovesTheSongOnItsBeats() throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.ahead = 100_000_000
        let before = session()
        jam.conductor.share(before, now: at(0)) { _ in }
        _ = jam.perform(.start, at: at(0))
        jam.run(until: at(2))
        // At 2 s a peer sets 133 BPM: the session's beat at 2 s stays where it was.
        let after = SharedTimeline(tempo: 133, beat: before.beat(at: at(2)), at: at(2), quantum: 4, peers: 1)
        jam.conductor.share(after, now: at(2)) { jam.outputs.append(($0, at(2))) }
        #expect(jam.conductor.generator.tempo == 133)
        jam.run(until: at(5))
        var played: [JamDelivery] = []
        for (output, _) in jam.outputs {
            if case .deliver(let delivery) = output { played.append(delivery) }
            if case .withdraw(let time) = output { played.removeAll { $0.time > time } }
        }
        #expect(played.filter { $0.message == .start }.count == 1)
        let ticks = played.filter { $0.message == .timingClock }.map(\.time)
        let early = ticks.prefix { $0 <= at(2) }, late = ticks.drop { $0 <= at(2) }
        #expect(offsets(Array(early), on: before, from: 12).allSatisfy { abs($0) <= 1 })
        let lateFrom = 12 + Double(early.count) / Double(MIDIClock.ticksPerBeat)
        #expect(offsets(Array(late), on: after, from: lateFrom).allSatisfy { abs($0) <= 1 }, "from 2 s on the new tempo's beats")
        #expect(zip(ticks, ticks.dropFirst()).allSatisfy { $1 > $0 })
    }

    /// This instance's tempo and stop go to the session; while a peer of the jam leads, the session is only read.
    @Test func theJamsTempoAndStopGoToTheSessionAndAFollowerOnlyReads() throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.conductor.share(session(), now: at(0)) { _ in }
        _ = jam.perform(.start, at: at(0))
        jam.run(until: at(2))
        let result = try jam.perform(.tempo(133), at: at(2)).get()
        #expect(result == "tempo 133 BPM in the Link session")
        _ = jam.perform(.stop, at: at(3))
        #expect(shares(jam).dropFirst() == [.tempo(133), .stop(at: at(3))])

        let follower = ConductorHarness(name: "phone", ssrc: 0x9000, now: at(0))
        let peer = JamSender.peer(ssrc: 0x5000, name: "rack")
        follower.receive(.start, from: peer, at: at(0))
        follower.conductor.share(session(tempo: 140), now: at(0.5)) { follower.outputs.append(($0, at(0.5))) }
        #expect(follower.conductor.generator.tempo == 120 && shares(follower).isEmpty)
    }

    /// What the outputs play of `jam`'s deliveries: what is handed out ahead and then withdrawn is not.
    func played(_ jam: ConductorHarness) -> [JamDelivery] {
        var played: [JamDelivery] = []
        for (output, _) in jam.outputs {
            if case .deliver(let delivery) = output { played.append(delivery) }
            if case .withdraw(let time) = output { played.removeAll { $0.time > time } }
        }
        return played
    }

    /// A session at 120 BPM whose beat 0 fell at 0 s, bars of 16 beats (8 s): the waits of issue 43.
    func longBars() -> SharedTimeline { SharedTimeline(tempo: 120, beat: 0, at: at(0), quantum: 16, peers: 1) }

    /// `timeline` changed at `time` as Link changes it (the beat at that instant kept), given to `jam`.
    func change(_ jam: ConductorHarness, _ timeline: inout SharedTimeline, at time: Double, tempo: Double? = nil,
                jump: Double = 0) {
        jam.run(until: at(time))
        timeline = SharedTimeline(tempo: tempo ?? timeline.tempo, beat: timeline.beat(at: at(time)) + jump, at: at(time),
                                  quantum: timeline.quantum, peers: 1)
        jam.conductor.share(timeline, now: at(time)) { jam.outputs.append(($0, at(time))) }
    }

    /// What a device makes of `played`: one Start, the ticks from it never before it, never twice at one instant nor
    /// more than `gap` periods apart; the Start's and the ticks' times.
    func expectOneStartAndEvenTicks(_ played: [JamDelivery], tempo: Double, gap: Double = 1.01,
                                    sourceLocation: Testing.SourceLocation = #_sourceLocation) -> MonotonicInstant? {
        let starts = played.filter { $0.message == .start }
        #expect(starts.count == 1, "\(starts.count) Starts", sourceLocation: sourceLocation)
        let ticks = played.filter { $0.message == .timingClock }.map(\.time)
        let period = MIDIClock.tickPeriod(bpm: tempo)
        let spacings = zip(ticks, ticks.dropFirst()).map { $1.nanoseconds(since: $0) / period }
        #expect(spacings.allSatisfy { $0 > 0.99 && $0 < gap }, "ticks \(spacings.min() ?? 0) to \(spacings.max() ?? 0) periods apart",
                sourceLocation: sourceLocation)
        #expect(ticks.first == starts.first?.time, "the first tick with the Start", sourceLocation: sourceLocation)
        return starts.first?.time
    }

    /// Issue 43: the session's tempo goes 300, 20 and 120 BPM within a second while the song waits 8 s for its bar
    /// line: its Start moves with the bar line and goes once, with its first tick and the song's line there (the
    /// drums play from it), and the ticks follow at the tempo (it stalled 14 s, then burst 678 ticks).
    @Test func tempoChangesWhileTheSongWaitsForItsBarLineMoveItsStart() throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.ahead = 100_000_000
        var timeline = longBars()
        jam.conductor.share(timeline, now: at(0)) { _ in }
        _ = try jam.perform(.start, at: at(0.1)).get()
        change(jam, &timeline, at: 0.3, tempo: 300)
        change(jam, &timeline, at: 0.5, tempo: 20)
        change(jam, &timeline, at: 0.7, tempo: 120)
        let barLine = timeline.time(atBeat: 16)
        jam.run(until: barLine.advanced(byNanoseconds: 5_000_000_000))
        let start = expectOneStartAndEvenTicks(played(jam), tempo: 120)
        #expect(start == barLine)
        #expect(jam.conductor.songLine?.time(atTick: 0) == barLine, "the drums' line starts with the Start")
    }

    /// Issue 43: the session's phase jumps 7.5 beats forward while the song waits for its bar line, which then lies
    /// in the past: the song starts on the next bar line, once (181 ticks went at the Start's instant); back again,
    /// it still starts once (the Start was lost).
    @Test(arguments: [[7.5], [7.5, -7.5]]) func phaseJumpsWhileTheSongWaitsForItsBarLine(jumps: [Double]) throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.ahead = 100_000_000
        var timeline = longBars()
        jam.conductor.share(timeline, now: at(0)) { _ in }
        _ = try jam.perform(.start, at: at(7))
        for (k, jump) in jumps.enumerated() { change(jam, &timeline, at: 7.05 + 0.05 * Double(k), jump: jump) }
        jam.run(until: at(25))
        let start = try #require(expectOneStartAndEvenTicks(played(jam), tempo: 120))
        #expect(timeline.beat(at: start).truncatingRemainder(dividingBy: 16).magnitude < 1e-6, "on a bar line")
        #expect(start > at(7))
    }

    /// Issue 43: the session's phase jumps 7.5 beats either way while the song plays: the outputs get one reposition
    /// as MIDI devices take it (Stop, then Song Position and Continue on the new line's next sixteenth), no burst
    /// (180 ticks at once) and no gap (3.75 s).
    @Test(arguments: [7.5, -7.5]) func aPhaseJumpWhileTheSongPlaysIsOneReposition(jump: Double) throws {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.ahead = 100_000_000
        var timeline = SharedTimeline(tempo: 120, beat: 0, at: at(0), quantum: 4, peers: 1)
        jam.conductor.share(timeline, now: at(0)) { _ in }
        _ = jam.perform(.start, at: at(0))
        change(jam, &timeline, at: 20, jump: jump)
        jam.run(until: at(25))
        let played = played(jam)
        let transport = played.filter { $0.message.isClockOrTransport && $0.message != .timingClock }
        // The song began on beat 0, at 0 s; the Continue goes on the first sixteenth at least 2 ms after the jump.
        let sixteenth = Int(((40 + jump + 0.004) * 4).rounded(.up))
        #expect(transport.map(\.message) == [.start, .stop, .songPosition(UInt14(masking: UInt16(sixteenth))), .continue])
        #expect(transport[1].time == at(20) && transport[3].time > at(20))
        let ticks = played.filter { $0.message == .timingClock }.map(\.time)
        let before = ticks.filter { $0 <= at(20) }, after = ticks.filter { $0 > at(20) }
        #expect(after.first == transport[3].time && transport[3].time == timeline.time(atBeat: Double(sixteenth) / 4))
        let period = MIDIClock.tickPeriod(bpm: 120)
        #expect(zip(after, after.dropFirst()).allSatisfy { abs($1.nanoseconds(since: $0) - period) < 2 })
        #expect(after.first!.nanoseconds(since: before.last!) < 7 * period, "no gap beyond a sixteenth")
        #expect(jam.conductor.counters.repositions == 1)
    }

    /// A session whose beat jumps to a number no Song Position reaches (a forged Link timeline) while the song plays:
    /// no trap, no reposition; the song plays on.
    @Test func aBeatBeyondReachIsNotFollowed() {
        let jam = ConductorHarness(name: "rack", ssrc: 0x1000, now: at(0))
        jam.ahead = 100_000_000
        var timeline = SharedTimeline(tempo: 120, beat: 0, at: at(0), quantum: 4, peers: 1)
        jam.conductor.share(timeline, now: at(0)) { _ in }
        _ = jam.perform(.start, at: at(0))
        change(jam, &timeline, at: 2, jump: 1e300)
        jam.run(until: at(3))
        #expect(jam.conductor.counters.repositions == 0 && jam.conductor.generator.isRunning)
        #expect(format(1e300) == "1e+300" && format(.nan) == "nan")
    }
}
