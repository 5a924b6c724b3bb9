import ALSA
import Dispatch
import Foundation
@testable import JamBridge
import MIDI
import MIDITestSupport
import Routing
import Testing

/// An ALSA client whose sequencer has no room for the first `refusals` writes, or for any while `full`: what it was
/// asked to write and when, what it took, what the port counted dropped. Touched only on `engine`, the engine's queue.
private final class FullPoolClient: ALSAPortClient, @unchecked Sendable {
    /// An engine with no routes: its queue, and its timed output, which resumes the port.
    let routing = Engine(graph: RouteGraph(routes: [], endpointCount: 0), sinks: [], names: [], monitor: nil)
    var engine: DispatchQueue { routing.queue }
    var refusals = 0
    var full = false
    var attempts: [MonotonicInstant] = []
    var taken: [MIDIMessage] = []
    var lost = OutputBacklog.Dropped()
    var unregistered = false

    var timed: TimedOutput? { routing.timed }
    var schedulesAhead: Bool { true }
    /// The instants after which the port asked the sequencer to take back the clock and transport scheduled.
    var removedAfter: [MonotonicInstant] = []
    func removeScheduledClockAndTransport(after time: MonotonicInstant) { removedAfter.append(time) }

    func destinations(of port: Int32, for recipients: Recipients) -> [SequencerAddress]? { nil }

    func write(_ piece: PacedOutput.Piece, from port: Int32, to destination: SequencerAddress?) -> SendOutcome {
        dispatchPrecondition(condition: .onQueue(engine))
        attempts.append(MonotonicClock.now())
        if full || refusals > 0 {
            refusals = max(refusals - 1, 0)
            return .full
        }
        if case .message(let message, _, _) = piece { taken.append(message) }
        return .sent
    }

    func count(_ lost: OutputBacklog.Dropped, endpoint: String) { self.lost.add(lost) }
    func dropped(sysExBytes: Int, endpoint: String) {}
    func unregister(_ port: ALSAPortSink) { unregistered = true }

    /// Waits (up to 30 s: a busy machine starves Dispatch's threads, and with them the timer) until `done` holds on the
    /// engine's queue.
    func wait(until done: @escaping (FullPoolClient) -> Bool) {
        let deadline = Date().addingTimeInterval(30)
        while !engine.sync(execute: { done(self) }), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }
}

/// Issue 30: an ALSA port whose sequencer has no room never holds the engine's queue; what waits goes later, in order,
/// from a timer, within bounds.
@Suite struct ALSAPortSinkTests {
    private func sink(_ client: FullPoolClient) -> ALSAPortSink {
        ALSAPortSink(client: client, port: 1, endpointName: "synth", pattern: nil)
    }

    /// Ticks and transport the jam takes back leave neither the sequencer's queue nor what waits for room.
    @Test func withdrawnTicksAndTransportLeaveNeitherTheQueueNorTheBacklog() {
        let client = FullPoolClient()
        client.full = true
        let sink = sink(client)
        #expect(sink.sendsAtItsTime)
        let now = MonotonicClock.now()
        client.engine.sync {
            for k in 0..<4 { sink.receive(.timingClock, at: now.advanced(byNanoseconds: UInt64(k) * 20_000_000), to: .everyone) }
            sink.receive(.stop, at: now.advanced(byNanoseconds: 40_000_000), to: .everyone)
            sink.receive(.continue, at: now.advanced(byNanoseconds: 40_000_000), to: .everyone)
            sink.takeBack(after: now.advanced(byNanoseconds: 30_000_000), ticket: client.routing.timed.ticket(ahead: .clockAndTransport))
            client.full = false
        }
        client.wait { $0.taken.count >= 2 }
        Thread.sleep(forTimeInterval: 0.05)
        client.engine.sync {
            #expect(client.taken == [.timingClock, .timingClock])
            #expect(client.removedAfter == [now.advanced(byNanoseconds: 30_000_000)])
        }
    }

    @Test func aFullPoolNeverHoldsTheEngineQueueAndTheNotesLeaveLaterInOrder() {
        let client = FullPoolClient()
        client.refusals = 3
        let sink = sink(client)
        nonisolated(unsafe) var seenByTheNextBlock: (attempts: Int, taken: Int)?
        client.engine.sync {
            let now = MonotonicClock.now()
            sink.receive(noteOn(0, 60), at: now, to: .everyone)
            sink.receive(noteOff(0, 60), at: now, to: .everyone)
            // Queued behind this block before the timer can fire: it runs before any retry.
            client.engine.async { seenByTheNextBlock = (client.attempts.count, client.taken.count) }
        }
        client.wait { $0.taken.count == 2 }
        client.engine.sync {
            #expect(seenByTheNextBlock! == (1, 0), "the note-off waited without being tried; nothing was retried yet")
            #expect(client.taken == [noteOn(0, 60), noteOff(0, 60)])
            #expect(client.attempts.count == 5) // three refused, one a retry, then both notes
            for (earlier, later) in zip(client.attempts, client.attempts.dropFirst()).prefix(3) {
                #expect(later.nanoseconds - earlier.nanoseconds >= 4_000_000, "retries come from the timer, not a loop")
            }
        }
        withExtendedLifetime(sink) {}
    }

    @Test func aPoolFullForOverASecondDropsAndCountsWhatWaitedButNotTheRelease() {
        let client = FullPoolClient()
        client.full = true
        let sink = sink(client)
        client.engine.sync {
            let now = MonotonicClock.now()
            sink.receive(noteOn(0, 60), at: now, to: .everyone)
            sink.receive(cc(0, 7, 100), at: now, to: .everyone)
            sink.receive(noteOff(0, 60), at: now, to: .everyone)
        }
        Thread.sleep(forTimeInterval: 0.6)
        client.engine.sync { #expect(client.lost.isEmpty) }
        client.wait { !$0.lost.isEmpty }
        client.engine.sync {
            #expect(client.lost == OutputBacklog.Dropped(pieces: 2, releases: 0))
            client.full = false
        }
        client.wait { !$0.taken.isEmpty }
        let attempts = client.engine.sync { client.attempts.count }
        Thread.sleep(forTimeInterval: 0.05)
        client.engine.sync {
            #expect(client.taken == [noteOff(0, 60, 64)])
            #expect(client.attempts.count == attempts, "nothing waits: no more retries")
        }
        withExtendedLifetime(sink) {}
    }

    @Test func aPortGoingAwayTriesOnceMoreThenDropsAndCountsWhatStillHasNoRoom() {
        let client = FullPoolClient()
        client.full = true
        let sink = sink(client)
        client.engine.sync {
            let now = MonotonicClock.now()
            sink.receive(noteOn(0, 60), at: now, to: .everyone)
            sink.receive(noteOff(0, 60), at: now, to: .everyone)
            sink.stop()
            #expect(client.lost == OutputBacklog.Dropped(pieces: 2, releases: 1))
            #expect(client.unregistered)
        }
        let attempts = client.engine.sync { client.attempts.count }
        Thread.sleep(forTimeInterval: 0.05)
        client.engine.sync { #expect(client.attempts.count == attempts, "no timer after stop") }
    }
}
