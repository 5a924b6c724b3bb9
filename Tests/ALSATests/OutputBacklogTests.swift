import ALSA
import MIDI
import MIDITestSupport
import Testing

/// A sequencer as `OutputBacklog.retry` writes to it: no room for the first `refusals` writes (or for what `refuses`
/// says), then room; what it took, in order.
private struct Sequencer {
    var refusals = 0
    var refuses: (PacedOutput.Piece) -> Bool = { _ in false }
    private(set) var attempts = 0
    private(set) var taken: [(piece: PacedOutput.Piece, destination: OutputBacklog.Destination)] = []

    mutating func write(_ piece: PacedOutput.Piece, _ destination: OutputBacklog.Destination) -> SendOutcome {
        attempts += 1
        if refusals > 0 || refuses(piece) {
            refusals = max(refusals - 1, 0)
            return .full
        }
        taken.append((piece, destination))
        return .sent
    }

    var messages: [MIDIMessage] {
        taken.compactMap { if case .message(let message, _, _) = $0.piece { message } else { nil } }
    }
}

@Suite struct OutputBacklogTests {
    let start = MonotonicInstant(nanoseconds: 5_000_000_000)

    func at(_ milliseconds: UInt64) -> MonotonicInstant { start.advanced(byNanoseconds: milliseconds * 1_000_000) }
    func piece(_ message: MIDIMessage, at time: MonotonicInstant? = nil) -> PacedOutput.Piece {
        .message(message, time ?? start, .everyone)
    }

    /// Sends `message` as the port does: written unless held back, kept if refused.
    private func send(_ message: MIDIMessage, _ backlog: inout OutputBacklog, _ sequencer: inout Sequencer, at time: MonotonicInstant,
              to destination: OutputBacklog.Destination = nil) -> OutputBacklog.Dropped {
        let item = piece(message, at: time)
        guard backlog.holdsBack(item) || sequencer.write(item, destination) == .full else { return OutputBacklog.Dropped() }
        return backlog.keep(item, for: destination, at: time)
    }

    @Test func whatFoundNoRoomIsWrittenLaterInOrderOneRefusedWriteARetry() {
        var backlog = OutputBacklog()
        var sequencer = Sequencer(refusals: 4)
        _ = send(noteOn(0, 60), &backlog, &sequencer, at: start)
        _ = send(noteOff(0, 60), &backlog, &sequencer, at: at(1))
        _ = send(noteOn(0, 62), &backlog, &sequencer, at: at(2))
        #expect(sequencer.attempts == 1) // the note-off and the second note wait behind the first without being tried
        for retry in 1...3 {
            #expect(backlog.retry(now: at(UInt64(retry) * 5)) { sequencer.write($0, $1) }.isEmpty)
            #expect(sequencer.attempts == 1 + retry && sequencer.taken.isEmpty, "one refused write a retry, no loop")
        }
        _ = backlog.retry(now: at(20)) { sequencer.write($0, $1) }
        #expect(sequencer.messages == [noteOn(0, 60), noteOff(0, 60), noteOn(0, 62)])
        #expect(backlog.isEmpty && !backlog.holdsBack(piece(noteOn(0, 64))))
    }

    @Test func aScheduledEventIsWrittenAgainWithItsTimeAndItsDestination() {
        var backlog = OutputBacklog()
        var sequencer = Sequencer(refusals: 1)
        let synth = SequencerAddress(client: 130, port: 2)
        _ = send(noteOn(9, 36), &backlog, &sequencer, at: at(60), to: synth)
        _ = backlog.retry(now: at(5)) { sequencer.write($0, $1) }
        #expect(sequencer.taken.count == 1)
        #expect(sequencer.taken.first?.piece == piece(noteOn(9, 36), at: at(60)))
        #expect(sequencer.taken.first?.destination == synth)
    }

    @Test func realTimePassesAWaitingNoteButNeverAnotherRealTimeMessage() {
        var backlog = OutputBacklog()
        // Our own pool is full of events scheduled ahead: a note stamped ahead finds no room, a tick sent now does.
        var sequencer = Sequencer()
        sequencer.refuses = { if case .message(.noteOn, _, _) = $0 { true } else { false } }
        _ = send(noteOn(0, 60), &backlog, &sequencer, at: start)
        _ = send(.timingClock, &backlog, &sequencer, at: at(1))
        #expect(sequencer.messages == [.timingClock])
        // Now the destination takes nothing: a tick is kept, and the next one waits behind it.
        sequencer.refuses = { _ in true }
        _ = send(.start, &backlog, &sequencer, at: at(2))
        #expect(backlog.holdsBack(piece(.timingClock)))
        _ = send(.timingClock, &backlog, &sequencer, at: at(3))
        let attempts = sequencer.attempts
        // Room for real time only: the ticks leave in order from behind the note, which stays.
        sequencer.refuses = { if case .message(.noteOn, _, _) = $0 { true } else { false } }
        _ = backlog.retry(now: at(5)) { sequencer.write($0, $1) }
        #expect(sequencer.attempts == attempts + 3) // the note, refused, then both real-time messages
        #expect(sequencer.messages == [.timingClock, .start, .timingClock])
        #expect(!backlog.isEmpty && !backlog.holdsBack(piece(.timingClock)) && backlog.holdsBack(piece(noteOff(0, 60))))
    }

    @Test func aSecondWithoutRoomDropsWhatWaitedButOwesItsReleasesUntilThereIsRoom() {
        var backlog = OutputBacklog()
        var sequencer = Sequencer(refusals: .max)
        _ = send(noteOn(0, 60), &backlog, &sequencer, at: start)
        _ = send(cc(0, 64, 127), &backlog, &sequencer, at: at(1))
        _ = send(noteOff(0, 60), &backlog, &sequencer, at: at(2))
        _ = send(noteOn(0, 61, 0), &backlog, &sequencer, at: at(3)) // a note-off too
        _ = send(cc(0, 64, 0), &backlog, &sequencer, at: at(4))
        _ = send(cc(0, 7, 90), &backlog, &sequencer, at: at(600))
        #expect(backlog.retry(now: at(999)) { sequencer.write($0, $1) }.isEmpty)
        let dropped = backlog.retry(now: at(1_004)) { sequencer.write($0, $1) }
        #expect(dropped == OutputBacklog.Dropped(pieces: 2, releases: 0)) // the note-on and the pedal down
        // Another second: the volume goes too; the releases still wait, however long the destination takes.
        #expect(backlog.retry(now: at(9_000)) { sequencer.write($0, $1) } == OutputBacklog.Dropped(pieces: 1, releases: 0))
        #expect(!backlog.isEmpty && backlog.holdsBack(piece(noteOn(0, 62))))
        sequencer.refusals = 0
        #expect(backlog.retry(now: at(9_005)) { sequencer.write($0, $1) }.isEmpty)
        #expect(Set(sequencer.messages) == [noteOff(0, 60, 64), noteOff(0, 61, 64), cc(0, 64, 0)])
        #expect(backlog.isEmpty)
    }

    @Test func pastTheLimitTheOldestMakesRoomAndAReleaseIsOwedNotDropped() {
        var backlog = OutputBacklog(limit: 3)
        var sequencer = Sequencer(refusals: .max)
        #expect(send(noteOn(0, 60), &backlog, &sequencer, at: start).isEmpty)
        _ = send(noteOff(0, 60), &backlog, &sequencer, at: at(1))
        _ = send(noteOn(0, 62), &backlog, &sequencer, at: at(2))
        #expect(send(noteOn(0, 64), &backlog, &sequencer, at: at(3)) == OutputBacklog.Dropped(pieces: 1, releases: 0))
        #expect(send(noteOn(0, 65), &backlog, &sequencer, at: at(4)).isEmpty) // the note-off is owed
        sequencer.refusals = 0
        _ = backlog.retry(now: at(5)) { sequencer.write($0, $1) }
        #expect(sequencer.messages == [noteOff(0, 60, 64), noteOn(0, 62), noteOn(0, 64), noteOn(0, 65)])
    }

    @Test func aPortGoingAwayDropsWhatWaitsCountingTheReleases() {
        var backlog = OutputBacklog()
        var sequencer = Sequencer(refusals: .max)
        _ = send(noteOn(0, 60), &backlog, &sequencer, at: start)
        _ = send(noteOff(0, 60), &backlog, &sequencer, at: at(1))
        _ = send(noteOff(0, 50), &backlog, &sequencer, at: at(2))
        _ = backlog.retry(now: at(1_001)) { sequencer.write($0, $1) } // the note-on dropped, its note-off owed
        _ = backlog.keep(.sysExChunk([0xF0, 1, 0xF7], .everyone), for: nil, at: at(1_002))
        #expect(backlog.removeAll() == OutputBacklog.Dropped(pieces: 3, releases: 2))
        #expect(backlog.isEmpty && !backlog.holdsBack(piece(noteOn(0, 1))))
    }
}
