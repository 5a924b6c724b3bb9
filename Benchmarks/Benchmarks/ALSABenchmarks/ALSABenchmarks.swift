import ALSA
import Benchmark
import BenchmarkSupport
import CALSA
import MIDI

// ALSA sequencer events <-> MIDI messages (`SequencerEvent.encode` / `decode`), without a
// sequencer: each sample converts `batch` events. The mix is a quarter each of note-on,
// note-off and CC, and a quarter split between pitch bend, program change and clock, on
// four channels. Messages and pre-encoded events are built before `startMeasurement()`
// (package-benchmark runs the closure once per sample). Results in ../BENCHMARKS.md.

private let batch = 1000

/// The `batch` messages converted by every benchmark.
private func messages() -> [MIDIMessage] {
    (0..<batch).map { i in
        let channel = UInt4(masking: UInt8(i % 4))
        let note = UInt7(masking: UInt8(36 + i % 48))
        switch i % 4 {
        case 0: return .noteOn(channel: channel, note: note, velocity: UInt7(masking: UInt8(1 + i % 127)))
        case 1: return .noteOff(channel: channel, note: note, velocity: .zero)
        case 2: return .controlChange(channel: channel, controller: UInt7(masking: UInt8(i % 120)), value: UInt7(masking: UInt8(i % 128)))
        default:
            switch (i / 4) % 3 {
            case 0: return .pitchBend(channel: channel, value: UInt14(masking: UInt16(i * 16)))
            case 1: return .programChange(channel: channel, program: UInt7(masking: UInt8(i % 128)))
            default: return .timingClock
            }
        }
    }
}

/// The messages as events, each reset with source port 0 and encoded.
private func events(_ messages: [MIDIMessage]) -> [snd_seq_event_t] {
    messages.map { message in
        var event = snd_seq_event_t()
        jambridge_alsa_event_reset(&event, 0)
        precondition(SequencerEvent.encode(message, into: &event))
        return event
    }
}

/// Checks, before measuring, that decoding the events gives back the messages.
private func checkRoundTrip(_ messages: [MIDIMessage], _ events: [snd_seq_event_t]) {
    var decoded: [MIDIMessage] = []
    events.withUnsafeBufferPointer { buffer in
        for i in buffer.indices {
            SequencerEvent.decode(buffer.baseAddress! + i, sysEx: { _ in }) { decoded.append($0) }
        }
    }
    precondition(decoded == messages, "round trip changed the messages")
}

let benchmarks: @Sendable () -> Void = {
    // Reset + encode each message into one snd_seq_event_t; the event's type and data are
    // folded into a checksum so the work cannot be dropped.
    Benchmark("ALSA-encode-1000-events", configuration: perItemConfiguration()) { benchmark in
        let messages = messages()
        var event = snd_seq_event_t()
        var sum = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            for message in messages {
                jambridge_alsa_event_reset(&event, 0)
                if SequencerEvent.encode(message, into: &event) {
                    sum &+= Int(event.type) &+ Int(event.data.control.value)
                }
            }
        }
        benchmark.stopMeasurement()
        blackHole(sum)
        blackHole(event)
    }

    // Decode pre-encoded events, counting the delivered messages.
    Benchmark("ALSA-decode-1000-events", configuration: perItemConfiguration()) { benchmark in
        let messages = messages()
        let events = events(messages)
        checkRoundTrip(messages, events)
        var delivered = 0
        var sysEx = 0
        benchmark.startMeasurement()
        events.withUnsafeBufferPointer { buffer in
            let base = buffer.baseAddress!
            for _ in benchmark.scaledIterations {
                for i in 0..<buffer.count {
                    SequencerEvent.decode(base + i, sysEx: { sysEx &+= $0.count }) { _ in delivered &+= 1 }
                }
            }
        }
        benchmark.stopMeasurement()
        precondition(delivered == batch * benchmark.scaledIterations.count)
        blackHole(delivered)
        blackHole(sysEx)
    }

    // Reset + encode each message into one event, then decode that event.
    Benchmark("ALSA-round-trip-1000-events", configuration: perItemConfiguration()) { benchmark in
        let messages = messages()
        var event = snd_seq_event_t()
        var delivered = 0
        var sysEx = 0
        benchmark.startMeasurement()
        withUnsafeMutablePointer(to: &event) { pointer in
            for _ in benchmark.scaledIterations {
                for message in messages {
                    jambridge_alsa_event_reset(pointer, 0)
                    if SequencerEvent.encode(message, into: &pointer.pointee) {
                        SequencerEvent.decode(pointer, sysEx: { sysEx &+= $0.count }) { _ in delivered &+= 1 }
                    }
                }
            }
        }
        benchmark.stopMeasurement()
        precondition(delivered == batch * benchmark.scaledIterations.count)
        blackHole(delivered)
        blackHole(sysEx)
    }
}
