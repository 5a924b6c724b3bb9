import Benchmark
import BenchmarkSupport
import MIDI
import RTPMIDI

// The recovery journal's cost per packet, through RTPMIDISender's public API: each sample
// builds `batch` packets of one note-on each. The sender's history is set up before
// `startMeasurement()`; the note appended per packet (channel 0, note 60, already on with
// the same velocity) changes one note's entry, so the history never grows.
// The journal's cost per packet is `Packet-with-journal-16-channels` minus
// `Packet-with-empty-journal`, divided by `batch`.

private let batch = 1000

/// Note-on, nothing else, so each channel's history reads the same.
private func noteOn(_ c: Int, _ note: UInt8, _ velocity: UInt8) -> MIDIMessage {
    .noteOn(channel: UInt4(masking: UInt8(c)), note: UInt7(masking: note), velocity: UInt7(masking: velocity))
}

/// A sender whose history holds, unconfirmed, on each of `channels` channels: 4 notes on,
/// 3 notes turned off, 4 controllers, a program, the pitch wheel and channel pressure.
/// Each channel journal is 30 bytes (3 header, P 3, C 9, W 2, N 12, T 1).
private func loadedSender(channels: Int, tick: inout UInt32) -> RTPMIDISender {
    var sender = RTPMIDISender(ssrc: 0x1234_5678, sequence: 1000)
    var sink = 0
    for c in 0..<channels {
        let channel = UInt4(masking: UInt8(c))
        var messages: [MIDIMessage] = []
        for note: UInt8 in [48, 52, 55, 60] { messages.append(noteOn(c, note, 100)) }
        for note: UInt8 in [62, 64, 65] {
            messages.append(noteOn(c, note, 90))
            messages.append(.noteOff(channel: channel, note: UInt7(masking: note), velocity: .zero))
        }
        for controller: UInt8 in [1, 7, 10, 64] {
            messages.append(.controlChange(channel: channel, controller: UInt7(masking: controller), value: UInt7(masking: 64)))
        }
        messages.append(.programChange(channel: channel, program: UInt7(masking: 5)))
        messages.append(.pitchBend(channel: channel, value: UInt14(masking: 9000)))
        messages.append(.channelPressure(channel: channel, pressure: UInt7(masking: 40)))
        for message in messages {
            sender.append(message, tick: tick) { sink &+= $0.count }
            tick &+= 1
        }
        sender.flush { sink &+= $0.count }
    }
    blackHole(sink)
    return sender
}

/// Sends one note-on per packet, `batch` packets per scaled iteration; `confirmEach`
/// confirms every packet as soon as it is sent (the journal stays the 3-byte empty one).
/// `expectedPacket` is the datagram size each packet must have (checked once, before measuring).
private func measure(_ benchmark: Benchmark, channels: Int, confirmEach: Bool, expectedPacket: Int) {
    var tick: UInt32 = 10_000
    var sender = loadedSender(channels: channels, tick: &tick)
    if confirmEach { sender.confirm(sender.sequence &- 1) }
    let message = noteOn(0, 60, 100)
    var bytes = 0
    var last = 0
    sender.append(message, tick: tick) { _ in }
    sender.flush { last = $0.count }
    if confirmEach { sender.confirm(sender.sequence &- 1) }
    precondition(last == expectedPacket, "packet of \(last) bytes, expected \(expectedPacket)")
    benchmark.startMeasurement()
    for _ in benchmark.scaledIterations {
        for _ in 0..<batch {
            tick &+= 10 // 1 ms at the 10 kHz session clock
            sender.append(message, tick: tick) { bytes &+= $0.count }
            sender.flush { bytes &+= $0.count }
            if confirmEach { sender.confirm(sender.sequence &- 1) }
        }
    }
    benchmark.stopMeasurement()
    blackHole(bytes)
    precondition(sender.journalOverflows == 0)
}

// Packet sizes: 12 (RTP) + 2 (command section header) + 3 (note-on) + the journal
// (3 bytes, plus 30 per channel).
let benchmarks: @Sendable () -> Void = {
    Benchmark("Packet-with-empty-journal-1000-packets", configuration: perItemConfiguration()) { benchmark in
        measure(benchmark, channels: 16, confirmEach: true, expectedPacket: 20)
    }

    Benchmark("Packet-with-journal-1-channel-1000-packets", configuration: perItemConfiguration()) { benchmark in
        measure(benchmark, channels: 1, confirmEach: false, expectedPacket: 20 + 30)
    }

    Benchmark("Packet-with-journal-16-channels-1000-packets", configuration: perItemConfiguration()) { benchmark in
        measure(benchmark, channels: 16, confirmEach: false, expectedPacket: 20 + 16 * 30)
    }
}
