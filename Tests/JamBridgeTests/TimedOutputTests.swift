import Dispatch
import Foundation
@testable import JamBridge
import MIDI
import Routing
import Testing

/// A sink that keeps what it is handed, with the time each is stamped and the instant it came; as a `TimedSink` (that
/// takes anything ahead, as the session's lane), also when it was asked to take back.
fileprivate class Keeper: SinkEndpoint, @unchecked Sendable { // touched on the engine's queue, read after `sync`
    var heard: [(message: MIDIMessage, time: MonotonicInstant, came: MonotonicInstant)] = []

    func receive(_ message: MIDIMessage, at time: MonotonicInstant, to recipients: Recipients) {
        heard.append((message, time, MonotonicClock.now()))
    }

    func stop() {}
}

fileprivate final class TimedKeeper: Keeper, TimedSink, @unchecked Sendable {
    var takenBack: [MonotonicInstant] = []
    var sendsAtItsTime: Bool { true }

    /// Anything, as the session's lane.
    func takesAhead(_ message: MIDIMessage) -> Bool {
        true
    }

    func takeBack(after time: MonotonicInstant, ticket: TimedTicket) {
        takenBack.append(time)
    }
}

/// Issue 42: the engine's one way to send "this message at that time", on a graph of one source (`song`, ID 0) routed
/// to a sink that takes messages when due (`tape`) and one that sends at a message's time (`lane`).
@Suite struct TimedOutputTests {
    fileprivate let tape = Keeper(), lane = TimedKeeper()
    let engine: Engine
    let song = EndpointID(0)

    init() {
        engine = Engine(graph: RouteGraph(routes: [CompiledRoute(sources: [EndpointID(0)], sinks: [EndpointID(1), EndpointID(2)], stages: [])],
                                          endpointCount: 3),
                        sinks: [nil, tape, lane], names: ["song", "tape", "lane"], monitor: nil)
    }

    private func at(_ milliseconds: UInt64, from start: MonotonicInstant) -> MonotonicInstant {
        start.advanced(byNanoseconds: milliseconds * 1_000_000)
    }

    /// Waits (30 s at most: a loaded machine) until `done` holds on the engine's queue.
    private func wait(until done: @escaping () -> Bool) {
        let deadline = Date().addingTimeInterval(30)
        while !engine.queue.sync(execute: done), Date() < deadline { Thread.sleep(forTimeInterval: 0.01) }
    }

    @Test func whatIsDueGoesByItsTimeThenInTheOrderPosted() {
        let start = MonotonicClock.now()
        let on = MIDIMessage.noteOn(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 100))
        let off = MIDIMessage.noteOff(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 0))
        let cc = MIDIMessage.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 1), value: UInt7(masking: 9))
        engine.queue.sync {
            let ticket = engine.timed.ticket()
            engine.timed.post(MIDIEvent(off, from: song, at: at(80, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(on, from: song, at: at(60, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(cc, from: song, at: at(60, from: start)), ticket: ticket)
        }
        wait { self.tape.heard.count == 3 }
        engine.queue.sync {
            #expect(tape.heard.map(\.message) == [on, cc, off])
            #expect(lane.heard.map(\.message) == [on, cc, off], "notes go to a lane when due too")
            #expect(tape.heard.allSatisfy { $0.came >= $0.time.receded(byNanoseconds: 1_000_000) }, "handed out early")
        }
    }

    @Test func underAnAheadTicketClockGoesAheadToWhatSendsAtItsTimeAndWhenDueToTheRest() {
        let start = MonotonicClock.now()
        engine.queue.sync {
            engine.timed.post(MIDIEvent(.timingClock, from: song, at: at(50, from: start)), ticket: engine.timed.ticket(ahead: .clockAndTransport))
            #expect(lane.heard.map(\.message) == [.timingClock] && lane.heard.first?.time == at(50, from: start))
            #expect(tape.heard.isEmpty)
            // Another poster's clock is not its to send ahead: a song's Song Position stays between its neighbours.
            engine.timed.post(MIDIEvent(.start, from: song, at: at(60, from: start)), ticket: engine.timed.ticket())
            #expect(lane.heard.count == 1)
        }
        wait { self.tape.heard.count == 2 }
        engine.queue.sync {
            #expect(tape.heard.map(\.message) == [.timingClock, .start])
            #expect(lane.heard.map(\.message) == [.timingClock, .start])
        }
    }

    @Test func withdrawingTakesBackWhatIsDueAfterButNeverTheNoteOffOfANoteThatSounds() {
        let start = MonotonicClock.now()
        let note = { (key: UInt8, on: Bool) -> MIDIMessage in
            on ? .noteOn(channel: UInt4(masking: 0), note: UInt7(masking: key), velocity: UInt7(masking: 90))
               : .noteOff(channel: UInt4(masking: 0), note: UInt7(masking: key), velocity: UInt7(masking: 0))
        }
        let withdrawn = engine.queue.sync {
            let ticket = engine.timed.ticket(ahead: .clockAndTransport)
            engine.timed.post(MIDIEvent(note(60, true), from: song, at: start), ticket: ticket)
            engine.timed.post(MIDIEvent(note(60, false), from: song, at: at(300, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(note(62, true), from: song, at: at(200, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(note(62, false), from: song, at: at(250, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(.timingClock, from: song, at: at(40, from: start)), ticket: ticket)
            return engine.timed.withdraw(ticket, after: at(20, from: start)).map(\.message)
        }
        #expect(withdrawn == [.timingClock, note(62, true), note(62, false)])
        wait { self.tape.heard.count == 2 }
        Thread.sleep(forTimeInterval: 0.35)
        engine.queue.sync {
            #expect(tape.heard.map(\.message) == [note(60, true), note(60, false)])
            #expect(tape.heard.last?.time == at(300, from: start), "the note-off goes at its time")
            #expect(lane.takenBack == [at(20, from: start)], "the lane was handed the tick ahead: it takes it back")
        }
    }

    /// The drums' ticket: every message goes ahead to what sends at its time, and when due to the rest; withdrawn,
    /// neither gets what is due after, but both get the note-off of the note that sounded.
    @Test func underATicketOfEverythingNotesGoAheadAndAWithdrawKeepsTheNoteOffOfANoteThatSounds() {
        let note = { (key: UInt8, on: Bool) -> MIDIMessage in
            on ? .noteOn(channel: UInt4(masking: 9), note: UInt7(masking: key), velocity: UInt7(masking: 90))
               : .noteOff(channel: UInt4(masking: 9), note: UInt7(masking: key), velocity: UInt7(masking: 0))
        }
        let (start, withdrawn) = engine.queue.sync {
            let start = MonotonicClock.now()
            let ticket = engine.timed.ticket(ahead: .everything)
            engine.timed.post(MIDIEvent(note(36, true), from: song, at: at(50, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(note(36, false), from: song, at: at(80, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(note(38, true), from: song, at: at(85, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(note(38, false), from: song, at: at(95, from: start)), ticket: ticket)
            #expect(lane.heard.map(\.message) == [note(36, true), note(36, false), note(38, true), note(38, false)],
                    "handed ahead")
            #expect(tape.heard.isEmpty)
            return (start, engine.timed.withdraw(ticket, after: at(60, from: start)).map(\.message))
        }
        #expect(withdrawn == [note(38, true), note(38, false)])
        wait { self.tape.heard.count == 2 }
        Thread.sleep(forTimeInterval: 0.25)
        engine.queue.sync {
            #expect(tape.heard.map(\.message) == [note(36, true), note(36, false)])
            #expect(tape.heard.last?.time == at(80, from: start))
            #expect(lane.takenBack == [at(60, from: start)])
        }
    }

    @Test func aStartOrStopReplacesTheOneWaitingFromItsSourceAtTheSameInstant() {
        let start = MonotonicClock.now()
        engine.queue.sync {
            let ticket = engine.timed.ticket()
            engine.timed.post(MIDIEvent(.start, from: song, at: at(50, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(.stop, from: song, at: at(50, from: start)), ticket: ticket)
            engine.timed.post(MIDIEvent(.continue, from: song, at: at(60, from: start)), ticket: ticket)
        }
        wait { self.tape.heard.count == 2 }
        Thread.sleep(forTimeInterval: 0.05)
        engine.queue.sync { #expect(tape.heard.map(\.message) == [.stop, .continue]) }
    }

    @Test func aCallRunsAtItsTimeAndWithdrawingAllTakesItBack() {
        let start = MonotonicClock.now()
        nonisolated(unsafe) var called: [String] = []
        engine.queue.sync {
            let kept = engine.timed.ticket(), dropped = engine.timed.ticket()
            engine.timed.call(at: at(30, from: start), ticket: kept) { called.append("kept") }
            engine.timed.call(at: at(20, from: start), ticket: dropped) { called.append("dropped") }
            engine.timed.withdraw(dropped)
            #expect(called.isEmpty, "a call never runs inside its post")
        }
        wait { !called.isEmpty }
        Thread.sleep(forTimeInterval: 0.05)
        engine.queue.sync { #expect(called == ["kept"]) }
    }
}
