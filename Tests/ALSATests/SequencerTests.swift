import CALSA
import Foundation
import MIDI
import Testing
@testable import ALSA

/// libasound calls that fail on purpose, through `SequencerCalls`.
func calls(open: Int32? = nil, createPort: Int32? = nil, connect: Int32? = nil, output: Int32? = nil) -> SequencerCalls {
    let real = SequencerCalls.libasound
    return SequencerCalls(
        open: { handle in open ?? real.open(&handle) },
        createPort: { handle, name, caps, type in createPort ?? real.createPort(handle, name, caps, type) },
        connectFrom: { handle, port, client, source in connect ?? real.connectFrom(handle, port, client, source) },
        connectTo: { handle, port, client, destination in connect ?? real.connectTo(handle, port, client, destination) },
        outputDirect: { handle, event in output ?? real.outputDirect(handle, event) })
}

/// Failure paths that need no sequencer: opening it fails.
@Suite struct SequencerOpenFailureTests {
    @Test func aSequencerThatCannotBeOpenedIsAClearError() {
        #expect(throws: ALSAError(operation: "open the ALSA sequencer (/dev/snd/seq)", code: -ENOENT)) {
            _ = try ALSASequencer(clientName: "test", calls: calls(open: -ENOENT))
        }
        let error = ALSAError(operation: "open the ALSA sequencer (/dev/snd/seq)", code: -ENOENT)
        #expect(error.description == "cannot open the ALSA sequencer (/dev/snd/seq): No such file or directory")
    }
}

/// What a receiving client saw, touched only on its queue.
private final class Arrivals: @unchecked Sendable {
    var notes: [(note: UInt8, at: MonotonicInstant)] = []
    var messages: [(message: MIDIMessage, at: MonotonicInstant)] = []
}

/// True `count` times, then false; called from one thread at a time.
private final class Countdown: @unchecked Sendable {
    private var left: Int
    init(_ count: Int) { left = count }
    func take() -> Bool {
        left -= 1
        return left >= 0
    }
}

/// The sequencer on a real kernel (run by scripts/alsa-tests.sh): failure paths after a real
/// open, and timed output through the queue.
@Suite struct SequencerALSAIntegrationTests {
    @Test func aPortThatCannotBeCreatedIsAClearError() throws {
        let sequencer = try ALSASequencer(clientName: "test", calls: calls(createPort: -ENOMEM))
        #expect(throws: ALSAError(operation: "create the ALSA port 'out'", code: -ENOMEM)) { try sequencer.createPort(name: "out") }
    }

    @Test func aConnectionThatFailsIsAClearError() throws {
        let sequencer = try ALSASequencer(clientName: "test", calls: calls(connect: -EPERM))
        let port = try sequencer.createPort(name: "out")
        let target = SequencerAddress(client: 14, port: 0) // Midi Through
        #expect(throws: ALSAError(operation: "connect our port \(port) to 14:0", code: -EPERM)) { try sequencer.connect(from: port, to: target) }
    }

    @Test func aWriteToAVanishedDeviceIsAClearErrorAndAFullPoolIsSaidAtOnce() throws {
        let vanished = try ALSASequencer(clientName: "test", calls: calls(output: -ENODEV))
        let port = try vanished.createPort(name: "out")
        #expect(throws: ALSAError(operation: "send to the ALSA sequencer", code: -ENODEV)) {
            _ = try vanished.send(.noteOn(channel: .max, note: .max, velocity: .max), from: port, at: MonotonicClock.now())
        }
        let full = try ALSASequencer(clientName: "test", calls: calls(output: -EAGAIN))
        let fullPort = try full.createPort(name: "out")
        // No waiting for room (issue 30): it used to poll for it 100 times 10 ms, on the engine's queue.
        let before = MonotonicClock.now()
        #expect(try full.send(sysExChunk: [0xF0, 1, 2, 3, 0xF7], from: fullPort) == .full)
        #expect(try full.send(.noteOn(channel: .max, note: .max, velocity: .max), from: fullPort, at: before) == .full)
        #expect(MonotonicClock.now().nanoseconds - before.nanoseconds < 100_000_000)
        #expect(throws: ALSAError(operation: "send a SysEx whole (it goes in chunks, see PacedOutput)", code: -EINVAL)) {
            _ = try full.send(.sysEx(data: [1, 2, 3]), from: fullPort, at: MonotonicClock.now())
        }
    }

    @Test func eventsTheSequencerHadNoRoomForGoAgainFromTheBacklogInOrderAndAtTheirTime() throws {
        // The first three writes find no room, as when the destination does not read; then the real calls.
        let refusals = Countdown(3)
        let real = SequencerCalls.libasound
        var failing = real
        failing.outputDirect = { handle, event in refusals.take() ? -EAGAIN : real.outputDirect(handle, event) }
        let sender = try ALSASequencer(clientName: "jambridge refused sender", calls: failing)
        let receiver = try ALSASequencer(clientName: "jambridge refused receiver")
        let out = try sender.createPort(name: "out")
        let into = try receiver.createPort(name: "in")
        try sender.connect(from: out, to: SequencerAddress(client: receiver.clientID, port: into))
        let queue = DispatchQueue(label: "receiver")
        let arrivals = Arrivals()
        try receiver.start(queue: queue) { input in
            if case .midi(let message, _, _) = input { arrivals.messages.append((message, MonotonicClock.now())) }
        }
        let now = MonotonicClock.now()
        let due = now.advanced(byNanoseconds: 1_000_000_000) // stamped ahead: through the queue, at its time
        let on = MIDIMessage.noteOn(channel: .max, note: UInt7(masking: 60), velocity: .max)
        let off = MIDIMessage.noteOff(channel: .max, note: UInt7(masking: 60), velocity: .zero)
        let later = MIDIMessage.noteOn(channel: .max, note: UInt7(masking: 61), velocity: .max)
        let pieces: [PacedOutput.Piece] = [.message(on, now, .everyone), .message(off, now, .everyone), .message(later, due, .everyone)]
        func write(_ piece: PacedOutput.Piece, _ destination: OutputBacklog.Destination) -> SendOutcome {
            guard case .message(let message, let time, _) = piece else { return .sent }
            return (try? sender.send(message, from: out, to: destination, at: time)) ?? .sent
        }
        var backlog = OutputBacklog()
        for piece in pieces where backlog.holdsBack(piece) || write(piece, nil) == .full {
            #expect(backlog.keep(piece, for: nil, at: MonotonicClock.now()).isEmpty)
        }
        while !backlog.isEmpty {
            Thread.sleep(forTimeInterval: Double(OutputBacklog.retryInterval) / 1e9)
            #expect(backlog.retry(now: MonotonicClock.now(), write: write).isEmpty)
        }
        let deadline = Date().addingTimeInterval(10)
        while queue.sync(execute: { arrivals.messages.count }) < 3, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let got = queue.sync { arrivals.messages }
        #expect(got.map(\.message) == [on, off, later])
        if got.count == 3 { #expect(got[2].at >= due, "never early, as in the test below") }
        receiver.close()
        sender.close()
    }

    @Test func theRealCallsWork() throws {
        let sequencer = try ALSASequencer(clientName: "jambridge test")
        let port = try sequencer.createPort(name: "out")
        try sequencer.connect(from: port, to: SequencerAddress(client: 14, port: 0))
        #expect(try sequencer.send(.noteOn(channel: .max, note: .max, velocity: .max), from: port, at: MonotonicClock.now()) == .sent)
        #expect(sequencer.ports().contains { $0.clientName == "Midi Through" && $0.isSource && $0.isDestination })
    }

    @Test func eventsStampedAheadArriveInTheirTimeOrderNotBeforeTheirTime() throws {
        let sender = try ALSASequencer(clientName: "jambridge timed sender")
        let receiver = try ALSASequencer(clientName: "jambridge timed receiver")
        let out = try sender.createPort(name: "out")
        let into = try receiver.createPort(name: "in")
        try sender.connect(from: out, to: SequencerAddress(client: receiver.clientID, port: into))
        let queue = DispatchQueue(label: "receiver")
        let arrivals = Arrivals()
        try receiver.start(queue: queue) { input in
            if case .midi(.noteOn(_, let note, _), _, _) = input { arrivals.notes.append((note.value, MonotonicClock.now())) }
        }
        func note(_ number: UInt8) -> MIDIMessage { .noteOn(channel: .max, note: UInt7(masking: number), velocity: .max) }
        // Stamped 1-1.8 s ahead (the emulated VM is slow) and sent latest first; then one live note, sent last.
        let now = MonotonicClock.now()
        let due = (0..<5).map { now.advanced(byNanoseconds: 1_000_000_000 + UInt64($0) * 200_000_000) }
        for index in (0..<5).reversed() { _ = try sender.send(note(60 + UInt8(index)), from: out, at: due[index]) }
        _ = try sender.send(note(50), from: out, at: MonotonicClock.now())
        let deadline = Date().addingTimeInterval(10)
        while queue.sync(execute: { arrivals.notes.count }) < 6, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let got = queue.sync { arrivals.notes }
        #expect(got.map(\.note) == [50, 60, 61, 62, 63, 64])
        // The queue dispatches on the ticks of its high-resolution timer, never before an event's time once its
        // start is placed right: in the VM they came 0.6-2 ms late, and up to 3 ms early with the start read late.
        for (arrival, time) in zip(got.dropFirst(), due) {
            #expect(arrival.at >= time, "note \(arrival.note) came \(time.nanoseconds - arrival.at.nanoseconds) ns early")
        }
        receiver.close()
        sender.close()
    }

    /// Clock and transport scheduled ahead and taken back never arrive (a re-timed song's Song Position and Continue
    /// with its ticks); those due before, and a note after, do.
    @Test func clockAndTransportTakenBackFromTheQueueNeverArrive() throws {
        let sender = try ALSASequencer(clientName: "jambridge clock sender")
        let receiver = try ALSASequencer(clientName: "jambridge clock receiver")
        #expect(sender.schedulesAhead)
        let out = try sender.createPort(name: "out")
        let into = try receiver.createPort(name: "in")
        try sender.connect(from: out, to: SequencerAddress(client: receiver.clientID, port: into))
        let queue = DispatchQueue(label: "receiver")
        let arrivals = Arrivals()
        try receiver.start(queue: queue) { input in
            if case .midi(let message, _, _) = input { arrivals.messages.append((message, MonotonicClock.now())) }
        }
        let now = MonotonicClock.now()
        let due = (1...4).map { now.advanced(byNanoseconds: UInt64($0) * 300_000_000) }
        _ = try sender.send(.start, from: out, at: due[0])
        for time in due { _ = try sender.send(.timingClock, from: out, at: time) }
        _ = try sender.send(.stop, from: out, at: due[1])
        _ = try sender.send(.songPosition(UInt14(masking: 16)), from: out, at: due[1])
        _ = try sender.send(.continue, from: out, at: due[1])
        _ = try sender.send(.noteOn(channel: .max, note: .max, velocity: .max), from: out, at: due[3])
        #expect(sender.removeScheduledClockAndTransport(after: due[0]))
        Thread.sleep(forTimeInterval: 2)
        let got = queue.sync { arrivals.messages.map(\.message) }
        #expect(got == [.start, .timingClock, .noteOn(channel: .max, note: .max, velocity: .max)])
        receiver.close()
        sender.close()
    }
}
