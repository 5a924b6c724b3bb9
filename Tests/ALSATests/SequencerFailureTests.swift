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

/// Failure paths after a real open, on a real sequencer (run by scripts/alsa-tests.sh).
@Suite struct FailureALSAIntegrationTests {
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
}
