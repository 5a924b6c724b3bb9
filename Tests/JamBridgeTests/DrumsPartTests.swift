import Dispatch
import Foundation
@testable import JamBridge
import Jam
import MIDI
import RouteFile
import Routing
import Testing

/// As a recorder, for the drums: one part per `record:` endpoint, whose sink keeps what it hears with the instant it
/// was delivered for, in its bench (`Bench.heard(by:)`).
final class TimedTape: Part {
    private let name: String
    private let sink: TapeSink

    static func blocks(in configuration: RouteConfiguration) -> [(key: String, block: Declared<EndpointKind>)] {
        configuration.endpoints { if case .recorder = $0 { $0 } else { nil } }
    }

    init(_ block: Declared<EndpointKind>, in configuration: RouteConfiguration, context: PartContext) throws(PartFailure) {
        name = block.declaration.name
        sink = TapeSink(name: name, bench: Bench.of(context))
    }

    var endpoints: [String: RunningEndpoint] { [name: RunningEndpoint(sink: sink)] }

    func apply(_ block: Declared<EndpointKind>, in configuration: RouteConfiguration) -> PartUpdate { .applied }

    func report(into status: inout DaemonStatus) {}
}

final class TapeSink: SinkEndpoint, @unchecked Sendable {
    let name: String
    let bench: Bench

    init(name: String, bench: Bench) {
        self.name = name
        self.bench = bench
    }

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        bench.hear(message, at: time, by: name)
    }

    func stop() {}
}

/// The drums as a part of their own (`DrumsPart`) with the real jam: what they play is timed by the song the jam
/// offers (`Wiring.song`), which reaches them through the assembly's wiring alone.
@Suite(.serialized) struct DrumsPartTests {
    @Test func theDrumsPlayTheJamsDownbeatAndBeatsFollowItsTempoAndStopWithIt() throws {
        let bench = Bench()
        let assembly = Assembly(context: bench.context, kinds: [[TimedTape.self], [JamPart.self, DrumsPart.self]])
        let routes = try RouteConfiguration.parse(yaml: """
            clock: { tempo: 120, to: [tape] }
            drums: { style: rock, level: 1, seed: 3 }
            endpoints:
              tape: { record: take.mid }
            routes:
              - { from: drums, to: tape }

            """, file: "drums.yaml")
        #expect(assembly.apply(routes, starting: true).failures.isEmpty)
        defer { _ = assembly.stop() }
        Thread.sleep(forTimeInterval: 0.1)
        #expect(bench.heard(by: "tape").isEmpty, "the drums played before the song")

        #expect(assembly.perform(.jam(.start), from: .controlSocket) == .success("started at 120 BPM"))
        Thread.sleep(forTimeInterval: 1.2)
        #expect(assembly.perform(.jam(.tempo(90)), from: .controlSocket) == .success("tempo 90 BPM from the next beat"))
        Thread.sleep(forTimeInterval: 2)
        #expect(assembly.perform(.jam(.stop), from: .controlSocket) == .success("stopped"))
        Thread.sleep(forTimeInterval: 0.2)
        var status = DaemonStatus(pid: 0, routeFiles: [])
        assembly.report(into: &status)

        // What the jam sent the tape gives its beats: every 24th tick from the Start's.
        let heard = bench.heard(by: "tape")
        #expect(heard.filter { $0.message == .start || $0.message == .stop }.map(\.message) == [.start, .stop])
        let stop = try #require(heard.first { $0.message == .stop }).time
        let ticks = heard.filter { $0.message == .timingClock }.map(\.time)
        let beats = stride(from: 0, to: ticks.count, by: MIDIClock.ticksPerBeat).map { ticks[$0] }
        try #require(beats.count >= 5, "\(ticks.count) ticks")
        let notes = heard.filter { if case .noteOn(_, _, let velocity) = $0.message { velocity.value > 0 } else { false } }
        // Rock at level 1 plays on every beat and nowhere else, each hit within the style's 3 ms of humanising: every
        // note is on one of the jam's beats, the first on the downbeat (the start is seen up to a look late, and
        // still played), and the beats played include those at 90 BPM.
        func beat(of time: MonotonicInstant) -> Int? {
            beats.indices.first { abs(Double(Int64(bitPattern: time.nanoseconds &- beats[$0].nanoseconds))) <= 3.5e6 }
        }
        #expect(notes.allSatisfy { beat(of: $0.time) != nil }, "\(notes.map(\.time)) beyond 3.5 ms of the beats \(beats)")
        #expect(notes.first.flatMap { beat(of: $0.time) } == 0)
        let played = Set(notes.compactMap { beat(of: $0.time) })
        let slower = beats.indices.dropFirst().filter { abs(Double(beats[$0].nanoseconds - beats[$0 - 1].nanoseconds) - 2e9 / 3) < 1e5 }
        #expect(slower.count >= 2 && slower.allSatisfy(played.contains), "\(played.sorted()) of \(beats.count) beats, at 90 BPM from \(slower)")
        #expect(played.count >= beats.count - 1, "\(played.sorted()) of \(beats.count) beats")
        // Nothing after the Stop, and the status counts what was played.
        #expect(notes.allSatisfy { $0.time.nanoseconds <= stop.nanoseconds + 1_000_000 })
        #expect(status.drums?.playing == false && status.drums?.notes == notes.count, "\(String(describing: status.drums))")
    }

    /// Issue 42: the drums' real-time thread never enters the engine's queue. With the queue held for 400 ms while
    /// a song plays, the thread goes on handing hits to the audio: the mixer starts hits during the hold, and none
    /// of them late (handed in after its frame was rendered). What the thread computed meanwhile waits for the queue.
    @Test func theDrumsKeepHandingHitsToTheAudioWhileTheEnginesQueueIsHeld() throws {
        let bench = Bench()
        let configuration = try RouteConfiguration.parse(yaml: """
            clock: { tempo: 120 }
            drums: { style: rock, level: 5, seed: 3, audio: { device: "null" } }

            """, file: "drums.yaml")
        let part = try DrumsPart(try #require(configuration.drums), in: configuration, context: bench.context)
        let engine = Engine(graph: RouteGraph(routes: [], endpointCount: 0), sinks: [], names: [], monitor: nil)
        let song = PublishedSong()
        part.start(Wiring(engine: engine, configuration: configuration, ids: [:], routeIDs: [:], identity: { nil }, song: song))
        defer { part.stop() }
        engine.queue.sync {
            // A song at 120 BPM from 100 ms on, as the jam publishes it when it starts.
            let line = SongLine(tick: 0, time: MonotonicClock.now().advanced(byNanoseconds: 100_000_000),
                                period: MIDIClock.tickPeriod(bpm: 120))
            song.publish(PublishedSong.State(line: line, total: UInt7(masking: 100), tempo: 120))
        }
        func audio() -> DaemonStatus.Audio? {
            var status = DaemonStatus(pid: 0, routeFiles: [])
            part.report(into: &status)
            return status.drums?.audio
        }
        Thread.sleep(forTimeInterval: 1)
        let held = DispatchSemaphore(value: 0), released = DispatchSemaphore(value: 0)
        engine.queue.async {
            held.signal()
            released.wait()
        }
        held.wait()
        let before = try #require(audio())
        Thread.sleep(forTimeInterval: 0.4)
        let during = try #require(audio())
        released.signal()
        // Rock at level 5 plays a hit every eighth note at least (250 ms at 120 BPM).
        #expect(during.hits > before.hits, "no hit started while the queue was held: \(before.hits) then \(during.hits)")
        #expect(during.lateHits == before.lateHits, "\(during.lateHits - before.lateHits) hits late while the queue was held")
        #expect(during.playing)
    }
}

