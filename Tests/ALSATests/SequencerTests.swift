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

    @Test func aWriteToAVanishedDeviceIsAClearErrorAndAFullPoolIsWaitedForThenReported() throws {
        let vanished = try ALSASequencer(clientName: "test", calls: calls(output: -ENODEV))
        let port = try vanished.createPort(name: "out")
        #expect(throws: ALSAError(operation: "send to the ALSA sequencer", code: -ENODEV)) {
            try vanished.send(.noteOn(channel: .max, note: .max, velocity: .max), from: port, at: MonotonicClock.now())
        }
        let full = try ALSASequencer(clientName: "test", calls: calls(output: -EAGAIN))
        let fullPort = try full.createPort(name: "out")
        #expect(throws: ALSAError(operation: "send to the ALSA sequencer (its pool stayed full)", code: -EAGAIN)) {
            try full.send(sysExChunk: [0xF0, 1, 2, 3, 0xF7], from: fullPort)
        }
        #expect(throws: ALSAError(operation: "send a SysEx whole (it goes in chunks, see PacedOutput)", code: -EINVAL)) {
            try full.send(.sysEx(data: [1, 2, 3]), from: fullPort, at: MonotonicClock.now())
        }
    }

    @Test func theRealCallsWork() throws {
        let sequencer = try ALSASequencer(clientName: "jambridge test")
        let port = try sequencer.createPort(name: "out")
        try sequencer.connect(from: port, to: SequencerAddress(client: 14, port: 0))
        try sequencer.send(.noteOn(channel: .max, note: .max, velocity: .max), from: port, at: MonotonicClock.now())
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
        for index in (0..<5).reversed() { try sender.send(note(60 + UInt8(index)), from: out, at: due[index]) }
        try sender.send(note(50), from: out, at: MonotonicClock.now())
        let deadline = Date().addingTimeInterval(10)
        while queue.sync(execute: { arrivals.notes.count }) < 6, Date() < deadline { Thread.sleep(forTimeInterval: 0.05) }
        let got = queue.sync { arrivals.notes }
        #expect(got.map(\.note) == [50, 60, 61, 62, 63, 64])
        // The queue runs on the kernel's system timer and dispatches on its ticks: in the VM an event
        // came up to 1.2 ms before its time. Two milliseconds early is a tick; more is a wrong conversion.
        for (arrival, time) in zip(got.dropFirst(), due) {
            #expect(arrival.at.advanced(byNanoseconds: 2_000_000) >= time,
                    "note \(arrival.note) came \(time.nanoseconds - arrival.at.nanoseconds) ns early")
        }
        receiver.close()
        sender.close()
    }
}
