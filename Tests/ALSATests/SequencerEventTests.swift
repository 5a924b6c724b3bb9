import CALSA
import MIDI
import MIDITestSupport
import Testing
@testable import ALSA

/// Events <-> MIDI on the host: no sequencer needed for the conversion itself.
@Suite struct SequencerEventTests {
    /// The messages `event` decodes to (SysEx chunks through a fresh assembler).
    func decoded(_ event: snd_seq_event_t) -> [MIDIMessage] {
        var assembler = SysExAssembler(limit: 1 << 20)
        var out: [MIDIMessage] = []
        withUnsafePointer(to: event) { pointer in
            SequencerEvent.decode(pointer, sysEx: { assembler.add($0) { out.append($0) } }) { out.append($0) }
        }
        return out
    }

    func encoded(_ message: MIDIMessage) -> snd_seq_event_t {
        var event = snd_seq_event_t()
        jambridge_alsa_event_reset(&event, 0)
        #expect(SequencerEvent.encode(message, into: &event))
        return event
    }

    @Test func everyMessageButSysExRoundTrips() {
        var random = SeededGenerator(seed: 5)
        for _ in 0..<20_000 {
            let message = random.message(maxSysEx: 0)
            if case .sysEx = message { continue }
            #expect(decoded(encoded(message)) == [message])
        }
        // The edges of pitch bend (ALSA's is signed, centred on 0).
        for value in [0, 8192, 16383] {
            let bend = MIDIMessage.pitchBend(channel: UInt4(masking: 3), value: UInt14(masking: UInt16(value)))
            #expect(encoded(bend).data.control.value == Int32(value) - 8192)
            #expect(decoded(encoded(bend)) == [bend])
        }
    }

    @Test func fourteenBitControllersAndParameterNumbersBecomeTheirControllerMessages() {
        var event = snd_seq_event_t()
        event.type = SequencerEvent.Kind.control14
        event.data.control.channel = 2
        event.data.control.param = 7
        event.data.control.value = 0x1234
        #expect(decoded(event) == [cc(2, 7, 0x24), cc(2, 39, 0x34)])
        event.type = SequencerEvent.Kind.nrpn
        event.data.control.param = 0x0102
        event.data.control.value = 0x0304
        #expect(decoded(event) == [cc(2, 99, 2), cc(2, 98, 2), cc(2, 6, 6), cc(2, 38, 4)])
        event.type = SequencerEvent.Kind.rpn
        event.data.control.param = 0
        event.data.control.value = 2 << 7
        #expect(decoded(event) == [cc(2, 101, 0), cc(2, 100, 0), cc(2, 6, 2), cc(2, 38, 0)])
    }

    @Test func sysExIsReassembledFromChunksUpToItsLimit() {
        let data = (0..<65536).map { UInt8($0 % 128) }
        let bytes: [UInt8] = [0xF0] + data + [0xF7]
        var assembler = SysExAssembler(limit: 65536)
        var out: [MIDIMessage] = []
        for start in stride(from: 0, to: bytes.count, by: 256) {
            bytes[start..<min(bytes.count, start + 256)].withUnsafeBytes { assembler.add($0) { out.append($0) } }
        }
        #expect(out == [.sysEx(data: data)])

        var small = SysExAssembler(limit: 10)
        out.removeAll()
        for chunk: [UInt8] in [[0xF0] + Array(repeating: 1, count: 11) + [0xF7], [0xF0, 1, 2], [0xF0, 3, 0xF7], [4, 0xF7], [0xF0, 5, 0x90, 6, 0xF7]] {
            chunk.withUnsafeBytes { small.add($0) { out.append($0) } }
        }
        // Too long; cut off by a new F0; whole; data without a start; a status byte inside.
        #expect(out == [.sysEx(data: [3])])
        #expect(small.dropped == 3)
    }
}
