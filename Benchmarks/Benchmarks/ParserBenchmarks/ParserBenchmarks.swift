import Benchmark
import MIDI

/// 1 MiB of mixed MIDI bytes: notes (with running status), controllers, pitch bend,
/// clock interleaved inside messages, and short SysEx, as a busy DIN or USB stream carries.
private func mixedStream(bytes target: Int) -> [UInt8] {
    var encoder = MIDIEncoder(runningStatus: true)
    var out: [UInt8] = []
    out.reserveCapacity(target + 64)
    var i = 0
    while out.count < target {
        let channel = UInt4(masking: UInt8(i % 3))
        let note = UInt7(masking: UInt8(40 + i % 40))
        encoder.encode(.noteOn(channel: channel, note: note, velocity: UInt7(masking: UInt8(1 + i % 126))), into: &out)
        out.append(0xF8) // a clock byte between messages
        encoder.encode(.controlChange(channel: channel, controller: UInt7(masking: 74), value: UInt7(masking: UInt8(i % 128))), into: &out)
        encoder.encode(.pitchBend(channel: channel, value: UInt14(masking: UInt16(i * 131 % 16384))), into: &out)
        encoder.encode(.noteOn(channel: channel, note: note, velocity: .zero), into: &out)
        if i % 64 == 0 {
            encoder.encode(.sysEx(data: [0x7E, 0x7F, 0x09, 0x01, UInt8(i % 128)]), into: &out)
        }
        i += 1
    }
    return out
}

let benchmarks: @Sendable () -> Void = {
    let stream = mixedStream(bytes: 1 << 20)

    Benchmark(
        "MIDIParser-1MiB-mixed-bytes",
        configuration: .init(
            metrics: [.wallClock, .throughput, .mallocCountTotal, .instructions],
            timeUnits: .microseconds,
            maxDuration: .seconds(3),
            maxIterations: 500
        )
    ) { benchmark in
        var messages = 0
        benchmark.startMeasurement()
        for _ in benchmark.scaledIterations {
            var parser = MIDIParser()
            for byte in stream {
                parser.feed(byte) { output in
                    if case .message = output { messages &+= 1 }
                }
            }
        }
        blackHole(messages)
    }

    Benchmark(
        "MIDIEncoder-1000-messages-running-status",
        configuration: .init(metrics: [.wallClock, .mallocCountTotal], timeUnits: .nanoseconds, maxDuration: .seconds(2))
    ) { benchmark in
        var sum = 0
        for _ in benchmark.scaledIterations {
            var encoder = MIDIEncoder(runningStatus: true)
            for i in 0..<1000 {
                encoder.encode(.controlChange(channel: UInt4(masking: 0), controller: UInt7(masking: 7), value: UInt7(masking: UInt8(i & 0x7F)))) { sum &+= Int($0) }
            }
        }
        blackHole(sum)
    }
}
