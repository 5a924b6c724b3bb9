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
}
