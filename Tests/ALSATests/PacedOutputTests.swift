import ALSA
import MIDI
import Testing

@Suite struct PacedOutputTests {
    let start = MonotonicInstant(nanoseconds: 1_000_000_000)

    /// Takes every piece `output` lets leave, advancing the time by what `wait` asks; returns the pieces and the end time.
    func drain(_ output: inout PacedOutput, from time: MonotonicInstant) -> (pieces: [PacedOutput.Piece], end: MonotonicInstant) {
        var now = time
        var pieces: [PacedOutput.Piece] = []
        while let wait = output.wait(now: now) {
            now = now.advanced(byNanoseconds: wait)
            while let piece = output.next(now: now) { pieces.append(piece) }
        }
        return (pieces, now)
    }

    func bytes(_ pieces: [PacedOutput.Piece]) -> [UInt8] {
        pieces.flatMap { piece -> [UInt8] in
            if case .sysExChunk(let chunk, _) = piece { chunk } else { [] }
        }
    }

    @Test func aShortSysExLeavesAtOnceInChunks() {
        var output = PacedOutput(now: start)
        let data = (0..<1000).map { UInt8($0 % 128) }
        let sentAtOnce = output.admit(.sysEx(data: data), at: start)
        #expect(!sentAtOnce)
        var pieces: [PacedOutput.Piece] = []
        while let piece = output.next(now: start) { pieces.append(piece) }
        #expect(output.isIdle)
        #expect(pieces.count == 4)
        #expect(bytes(pieces) == [0xF0] + data + [0xF7])
    }

    @Test func aLongSysExIsPacedAtTheWireRateAfterOneBufferful() {
        var output = PacedOutput(now: start)
        let data = (0..<65_536).map { UInt8($0 % 128) }
        _ = output.admit(.sysEx(data: data), at: start)
        var first = 0
        while output.next(now: start) != nil { first += 1 }
        #expect(first == PacedOutput.burstBytes / SequencerEvent.sysExChunk)
        let wait = output.wait(now: start)
        #expect(wait == 81_920_000) // 256 bytes at 3125 bytes/s
        let (rest, end) = drain(&output, from: start)
        #expect(bytes(rest).count == 65_538 - PacedOutput.burstBytes)
        let seconds = Double(end.nanoseconds - start.nanoseconds) / 1e9
        let expected = Double(65_538 - PacedOutput.burstBytes) / Double(PacedOutput.wireBytesPerSecond)
        #expect(abs(seconds - expected) < 0.1)
    }

    @Test func theBytesArriveExactlyInOrder() {
        var output = PacedOutput(now: start)
        let first = (0..<9_000).map { UInt8($0 % 127) }
        let second = [UInt8](repeating: 0x55, count: 300)
        _ = output.admit(.sysEx(data: first), at: start)
        _ = output.admit(.sysEx(data: second), at: start)
        var pieces: [PacedOutput.Piece] = []
        while let piece = output.next(now: start) { pieces.append(piece) }
        pieces += drain(&output, from: start).pieces
        #expect(bytes(pieces) == [0xF0] + first + [0xF7, 0xF0] + second + [0xF7])
    }

    @Test func messagesWaitBehindASysExButRealTimeDoesNot() {
        var output = PacedOutput(now: start)
        let note = MIDIMessage.noteOn(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 100))
        let noteOff = MIDIMessage.noteOff(channel: UInt4(masking: 0), note: UInt7(masking: 60), velocity: UInt7(masking: 0))
        let later = start.advanced(byNanoseconds: 5)
        let noteSent = output.admit(note, at: start)
        _ = output.admit(.sysEx(data: [UInt8](repeating: 1, count: 5_000)), at: start)
        let noteOffSent = output.admit(noteOff, at: later)
        let clockSent = output.admit(.timingClock, at: later)
        #expect(noteSent && !noteOffSent && clockSent)
        var pieces: [PacedOutput.Piece] = []
        while let piece = output.next(now: start) { pieces.append(piece) }
        pieces += drain(&output, from: start).pieces
        #expect(pieces.last == .message(noteOff, later, .everyone))
        #expect(bytes(pieces).count == 5_002)
    }

    @Test func flushingEndsABegunSysExAndKeepsTheMessages() {
        var output = PacedOutput(now: start)
        _ = output.admit(.sysEx(data: [UInt8](repeating: 2, count: 10_000)), at: start)
        let noteOff = MIDIMessage.noteOff(channel: UInt4(masking: 3), note: UInt7(masking: 40), velocity: UInt7(masking: 0))
        _ = output.admit(noteOff, at: start)
        _ = output.admit(.sysEx(data: [1, 2]), at: start)
        var sent = 0
        while case .sysExChunk(let chunk, _)? = output.next(now: start) { sent += chunk.count }
        let (pieces, dropped) = output.flush()
        #expect(pieces == [.sysExChunk([0xF7], .everyone), .message(noteOff, start, .everyone)])
        #expect(dropped == 10_002 - sent + 4)
        #expect(output.isIdle)
        #expect(output.wait(now: start) == nil)
    }
}
