import MIDITestSupport
import Testing
@testable import RTPMIDI

/// Decodes a whole journal held in `bytes`.
private func decode(_ bytes: [UInt8]) throws(RTPMIDIError) -> RecoveryJournal {
    try bytes.withUnsafeBytes { raw in
        Result { () throws(RTPMIDIError) in try RecoveryJournal(parsing: raw) }
    }.get()
}

/// `RecoveryJournal.length(of:)` on `bytes`.
private func length(_ bytes: [UInt8]) throws(RTPMIDIError) -> Int {
    try bytes.withUnsafeBytes { raw in
        Result { () throws(RTPMIDIError) in try RecoveryJournal.length(of: raw) }
    }.get()
}

private func encoded(_ journal: RecoveryJournal) -> [UInt8] {
    var bytes: [UInt8] = []
    journal.encode(into: &bytes)
    return bytes
}

/// Journal header with A=1, one channel journal, checkpoint 1, then `channelJournal`.
private func oneChannel(_ channelJournal: [UInt8]) -> [UInt8] { [0x20, 0x00, 0x01] + channelJournal }

@Suite struct RecoveryJournalTests {
    // MARK: Hand-built wire bytes (from the RFC 6295 layouts, not from the encoder)

    @Test func macOSVectorDecodes() throws {
        let bytes: [UInt8] = [0x20, 0x42, 0x76, 0x00, 0x06, 0x08, 0x00, 0x66, 0x85]
        let journal = try decode(bytes)
        #expect(journal == RecoveryJournal(checkpoint: 17014, channels: [
            ChannelJournal(channel: 0, notes: NoteChapter(b: false, logs: [], offNotes: [48, 53, 55])),
        ]))
        #expect(Array(journal.channels[0].notes!.offNotes) == [48, 53, 55])
        #expect(try length(bytes) == 9)
        #expect(try length(bytes + [0x90, 0x40]) == 9) // bytes after the journal are not its own
        #expect(encoded(journal) == bytes)
    }

    @Test func chapterP() throws {
        // channel 3, S=1, LENGTH 6, TOC P; S=0 PROGRAM 5, B=1 MSB 0x12, X=1 LSB 0x34
        let bytes = oneChannel([0x98, 0x06, 0x80, 0x05, 0x92, 0xB4])
        let expected = ChannelJournal(channel: 3, s: true,
                                      program: ProgramChapter(s: false, program: 5, bankMSB: 0x12, bankLSB: 0x34, x: true))
        #expect(try decode(bytes) == RecoveryJournal(checkpoint: 1, channels: [expected]))
        #expect(encoded(try decode(bytes)) == bytes)
        // B=0: the bank fields carry nothing
        let noBank = oneChannel([0x00, 0x06, 0x80, 0x85, 0x00, 0x00])
        #expect(try decode(noBank).channels[0].program == ProgramChapter(s: true, program: 5))
    }

    @Test func chapterCWithAllThreeTools() throws {
        // S=1 LEN=2 (3 logs): CC7 value 100; S=1 CC64 toggle 5 (A=1 T=0); CC96 count 9 (A=1 T=1)
        let bytes = oneChannel([0x00, 0x0A, 0x40, 0x82, 0x07, 0x64, 0xC0, 0x85, 0x60, 0xC9])
        let expected = ChannelJournal(channel: 0, controllerChapterS: true, controllers: [
            ControllerLog(s: false, number: 7, tool: .value(100)),
            ControllerLog(s: true, number: 64, tool: .toggle(5)),
            ControllerLog(s: false, number: 96, tool: .count(9)),
        ])
        #expect(try decode(bytes).channels == [expected])
        #expect(encoded(try decode(bytes)) == bytes)
    }

    @Test func chapterMIsKeptRaw() throws {
        // channel 1; M: S=0 P=1, LENGTH 5, Q=0 PENDING 7, two log bytes
        let chapter: [UInt8] = [0x40, 0x05, 0x07, 0x01, 0x02]
        let bytes = oneChannel([0x08, 0x08, 0x20] + chapter)
        #expect(try decode(bytes).channels == [ChannelJournal(channel: 1, parameterChapter: chapter)])
        #expect(encoded(try decode(bytes)) == bytes)
        // a chapter M LENGTH running past the channel journal
        #expect(throws: RTPMIDIError.malformedJournal) { try decode(oneChannel([0x08, 0x08, 0x20, 0x40, 0x06, 0x07, 0x01, 0x02, 0x00])) }
    }

    @Test func chapterW() throws {
        // channel 2; W: S=1 FIRST 0, R=0 SECOND 64 (centre)
        let bytes = oneChannel([0x10, 0x05, 0x10, 0x80, 0x40])
        #expect(try decode(bytes).channels == [ChannelJournal(channel: 2, pitchWheel: PitchWheelChapter(s: true, first: 0, second: 64))])
        #expect(encoded(try decode(bytes)) == bytes)
    }

    @Test func chapterNWithLogsAndOffBits() throws {
        // channel 9; N: B=1 LEN=2, LOW=7 HIGH=8; S=1 note 60 Y=1 vel 100; S=0 note 64 Y=0 vel 1;
        // off bits 0x81 (notes 56, 63), 0x40 (note 65)
        let bytes = oneChannel([0x48, 0x0B, 0x08, 0x82, 0x78, 0xBC, 0xE4, 0x40, 0x01, 0x81, 0x40])
        let expected = ChannelJournal(channel: 9, notes: NoteChapter(b: true, logs: [
            NoteLog(s: true, note: 60, velocity: 100, play: true),
            NoteLog(s: false, note: 64, velocity: 1, play: false),
        ], offNotes: [56, 63, 65]))
        #expect(try decode(bytes).channels == [expected])
        #expect(encoded(try decode(bytes)) == bytes) // the encoder picks the same LOW..HIGH span
    }

    @Test func chapterNWith128And127Logs() throws {
        // LEN=127 LOW=15 HIGH=0: 128 logs, no off bits
        var chapter: [UInt8] = [0x7F, 0xF0]
        for note in 0..<128 { chapter += [UInt8(note), 0xC0] } // S=0, Y=1 velocity 64
        let bytes = oneChannel([0x01, 0x05, 0x08] + chapter) // LENGTH 3 + 258 = 261
        let notes = try #require(try decode(bytes).channels.first?.notes)
        #expect(notes.logs.count == 128)
        #expect(notes.logs.map(\.note) == Array(0..<128))
        #expect(notes.logs.allSatisfy { $0.play && $0.velocity == 64 && !$0.s })
        #expect(notes.offNotes.isEmpty)
        #expect(encoded(try decode(bytes)) == bytes)
        #expect(try length(bytes) == bytes.count)

        // LEN=127 LOW=15 HIGH=1: 127 logs, no off bits; the encoder must choose HIGH=1
        var chapter127: [UInt8] = [0x7F, 0xF1]
        for note in 0..<127 { chapter127 += [UInt8(note), 0x40] }
        let bytes127 = oneChannel([0x01, 0x03, 0x08] + chapter127) // LENGTH 3 + 256 = 259
        #expect(try decode(bytes127).channels[0].notes?.logs.count == 127)
        #expect(encoded(try decode(bytes127)) == bytes127)

        // no logs and no off bits: LOW=15 HIGH=0
        let empty = RecoveryJournal(checkpoint: 1, channels: [ChannelJournal(channel: 0, notes: NoteChapter())])
        #expect(encoded(empty) == oneChannel([0x00, 0x05, 0x08, 0x00, 0xF0]))
    }

    @Test func chapterEIsKeptRaw() throws {
        // channel 4; E: S=0 LEN=1 (2 logs of 2 bytes)
        let chapter: [UInt8] = [0x01, 0x3C, 0x05, 0x3E, 0x85]
        let bytes = oneChannel([0x20, 0x08, 0x04] + chapter)
        #expect(try decode(bytes).channels == [ChannelJournal(channel: 4, noteExtras: chapter)])
        #expect(encoded(try decode(bytes)) == bytes)
    }

    @Test func chapterT() throws {
        let bytes = oneChannel([0x28, 0x04, 0x02, 0xB3]) // channel 5; T: S=1 pressure 0x33
        #expect(try decode(bytes).channels == [ChannelJournal(channel: 5, channelPressure: ChannelPressureChapter(s: true, pressure: 0x33))])
        #expect(encoded(try decode(bytes)) == bytes)
    }

    @Test func chapterA() throws {
        // channel 15; A: S=0 LEN=1; S=1 note 60 X=0 pressure 10; S=0 note 61 X=1 pressure 127
        let bytes = oneChannel([0x78, 0x08, 0x01, 0x01, 0xBC, 0x0A, 0x3D, 0xFF])
        #expect(try decode(bytes).channels == [ChannelJournal(channel: 15, polyPressure: [
            PolyPressureLog(s: true, note: 60, x: false, pressure: 10),
            PolyPressureLog(s: false, note: 61, x: true, pressure: 127),
        ])])
        #expect(encoded(try decode(bytes)) == bytes)
    }

    @Test func allChannelChaptersTogetherInTOCOrder() throws {
        // channel 6, TOC 0xFF: P, C (1 log), M (LENGTH 2), W, N (1 log, no off bits), E (1 log), T, A (1 log)
        let body: [UInt8] = [0x05, 0x00, 0x00, /* C */ 0x00, 0x40, 0x7F, /* M */ 0x00, 0x02, /* W */ 0x00, 0x40,
                             /* N */ 0x01, 0xF0, 0x3C, 0xE4, /* E */ 0x00, 0x3C, 0x01, /* T */ 0x10, /* A */ 0x00, 0x3C, 0x20]
        let bytes = oneChannel([0x30, UInt8(3 + body.count), 0xFF] + body)
        let expected = ChannelJournal(channel: 6, program: ProgramChapter(program: 5),
                                      controllers: [ControllerLog(number: 64, tool: .value(127))], parameterChapter: [0x00, 0x02],
                                      pitchWheel: PitchWheelChapter(first: 0, second: 64),
                                      notes: NoteChapter(logs: [NoteLog(note: 60, velocity: 100, play: true)]),
                                      noteExtras: [0x00, 0x3C, 0x01], channelPressure: ChannelPressureChapter(pressure: 16),
                                      polyPressure: [PolyPressureLog(note: 60, pressure: 32)])
        #expect(try decode(bytes).channels == [expected])
        #expect(encoded(try decode(bytes)) == bytes)
        #expect(try length(bytes) == bytes.count)
    }

    @Test func systemChapterQWithAndWithoutClockAndTimeTools() throws {
        // Y=1; system journal LENGTH 8, Q: S=0 N=1 D=0 C=1 T=1 TOP=5, CLOCK 0x1234, TIMETOOLS 0xABCDEF
        let full: [UInt8] = [0x40, 0x00, 0x02, 0x10, 0x08, 0x5D, 0x12, 0x34, 0xAB, 0xCD, 0xEF]
        #expect(try decode(full) == RecoveryJournal(checkpoint: 2, system: SystemJournal(sequencer: SequencerChapter(
            s: false, running: true, downbeat: false, clock: 0x51234, timeTools: 0xABCDEF))))
        #expect(encoded(try decode(full)) == full)
        // system S=1, LENGTH 3, Q: S=1 D=1, nothing else
        let bare: [UInt8] = [0x40, 0x00, 0x02, 0x90, 0x03, 0xA0]
        #expect(try decode(bare).system == SystemJournal(s: true, sequencer: SequencerChapter(s: true, running: false, downbeat: true)))
        #expect(encoded(try decode(bare)) == bare)
    }

    @Test func systemJournalWithDVFXIsSkippedToTheChannelJournal() throws {
        // D: S=0 B G=0 H J K=0 Y=0 Z; B count 3; H song 7; J log C=1 LENGTH 3 count 2; Z log C=1 LENGTH 2 count 9
        let d: [UInt8] = [0x59, 0x03, 0x07, 0x40, 0x03, 0x02, 0x42, 0x09]
        let v: UInt8 = 0x85 // S=1 COUNT 5
        let f: [UInt8] = [0x40, 0x01, 0x02, 0x03, 0x04] // C=1: COMPLETE
        let x: [UInt8] = [0x08, 0x01, 0x02, 0xF7] // D=1: data to the end of the system journal
        let system: [UInt8] = [0x6C, 0x14] + d + [v] + f + x // D V F X, LENGTH 20
        let bytes: [UInt8] = [0x60, 0x00, 0x03] + system + [0x00, 0x04, 0x02, 0x7F]
        let journal = try decode(bytes)
        #expect(journal == RecoveryJournal(checkpoint: 3,
                                           system: SystemJournal(simpleCommands: d, activeSense: v, timeCode: f, sysEx: x),
                                           channels: [ChannelJournal(channel: 0, channelPressure: ChannelPressureChapter(pressure: 127))]))
        #expect(try length(bytes) == 27)
        #expect(encoded(journal) == bytes)
        // a Chapter D log LENGTH that runs past the system journal
        var bad = bytes
        bad[3 + 2 + 4] = 0x30 // J log LENGTH 48
        #expect(throws: RTPMIDIError.malformedJournal) { try decode(bad) }
        // system journal LENGTH below its header, or chapters short of it (no X to absorb the rest)
        #expect(throws: RTPMIDIError.malformedJournal) { try decode([0x40, 0x00, 0x01, 0x00, 0x01]) }
        #expect(throws: RTPMIDIError.malformedJournal) { try decode([0x40, 0x00, 0x01, 0x20, 0x04, 0x85, 0x00]) }
    }

    // MARK: Inconsistent lengths

    @Test func inconsistentLengthsThrow() {
        #expect(throws: RTPMIDIError.truncatedJournal) { try decode([]) }
        #expect(throws: RTPMIDIError.truncatedJournal) { try decode([0x20, 0x00]) } // header cut
        #expect(throws: RTPMIDIError.malformedJournal) { try decode(oneChannel([0x00, 0x02, 0x00])) } // LENGTH < 3
        // chapter P (3 bytes) past a LENGTH of 4, though the bytes exist
        #expect(throws: RTPMIDIError.malformedJournal) { try decode(oneChannel([0x00, 0x04, 0x80, 0x05, 0x00, 0x00])) }
        // chapter T (1 byte) short of a LENGTH of 5
        #expect(throws: RTPMIDIError.malformedJournal) { try decode(oneChannel([0x00, 0x05, 0x02, 0x7F, 0x00])) }
        // chapter N off bits past LENGTH
        #expect(throws: RTPMIDIError.malformedJournal) { try decode(oneChannel([0x00, 0x06, 0x08, 0x00, 0x67, 0x85, 0x01])) }
        // TOTCHAN=1 but only one channel journal
        #expect(throws: RTPMIDIError.truncatedJournal) { try decode([0x21, 0x00, 0x01, 0x00, 0x04, 0x02, 0x7F]) }
        // LENGTH past the end of the bytes
        #expect(throws: RTPMIDIError.truncatedJournal) { try decode(oneChannel([0x00, 0x09, 0x02, 0x7F])) }
        #expect(throws: RTPMIDIError.truncatedJournal) { try length(oneChannel([0x00, 0x09, 0x02, 0x7F])) }
    }

    // MARK: Properties over random journals

    @Test func randomJournalsRoundTripAndSkipToTheirEnd() throws {
        var random = SeededGenerator(seed: 6295)
        for _ in 0..<3000 {
            let journal = random.journal()
            let bytes = encoded(journal)
            #expect(bytes.count == journal.encodedLength)
            let decoded = try decode(bytes)
            #expect(decoded == journal)
            if decoded != journal { return }
            #expect(try length(bytes) == bytes.count)
            let (parsed, consumed) = try (bytes + [0xF8]).withUnsafeBytes { raw in
                Result { () throws(RTPMIDIError) in try RecoveryJournal.parsing(raw) }
            }.get()
            #expect(parsed == journal && consumed == bytes.count)
        }
    }

    @Test func everyPrefixOfAJournalThrows() {
        var random = SeededGenerator(seed: 4695)
        for _ in 0..<300 {
            let bytes = encoded(random.journal())
            for count in 0..<bytes.count {
                let prefix = Array(bytes[..<count])
                #expect(throws: RTPMIDIError.self) { try decode(prefix) }
                #expect(throws: RTPMIDIError.self) { try length(prefix) }
            }
        }
    }

    @Test func randomByteFlipsNeverTrapAndDecodingAgreesWithSkipping() throws {
        var random = SeededGenerator(seed: 1400)
        var accepted = 0, rejected = 0
        for _ in 0..<3000 {
            var bytes = encoded(random.journal())
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                bytes[Int.random(in: 0..<bytes.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
            let decoded = Result { () throws(RTPMIDIError) in try decode(bytes) }
            let skipped = Result { () throws(RTPMIDIError) in try length(bytes) }
            switch (decoded, skipped) {
            case (.success(let journal), .success(let count)):
                #expect(journal.encodedLength <= count)
                accepted += 1
            case (.failure(let a), .failure(let b)):
                #expect(a == b)
                rejected += 1
            default:
                Issue.record("decode and length(of:) disagree on \(bytes)")
            }
        }
        #expect(accepted > 100 && rejected > 100, "flips should hit both outcomes: \(accepted) accepted, \(rejected) rejected")
    }

    @Test func noteSetIteratesAscendingAndEdits() {
        var set: NoteSet = [127, 0, 64, 63, 200]
        #expect(Array(set) == [0, 63, 64, 127])
        #expect(set.count == 4 && set.lowest == 0 && set.highest == 127)
        set.remove(0)
        set.insert(5)
        #expect(set.contains(5) && !set.contains(0) && !set.contains(200))
        #expect(set.description == "{5, 63, 64, 127}")
        #expect(NoteSet().isEmpty && NoteSet().lowest == nil)
    }
}

// MARK: Random journals

extension RandomNumberGenerator {
    fileprivate mutating func bool() -> Bool { Bool.random(using: &self) }
    fileprivate mutating func byte(_ range: ClosedRange<UInt8> = 0...127) -> UInt8 { UInt8.random(in: range, using: &self) }
    fileprivate mutating func count(_ range: ClosedRange<Int>) -> Int { Int.random(in: range, using: &self) }
    fileprivate mutating func bytes(_ count: Int) -> [UInt8] { (0..<count).map { _ in byte(0...255) } }
    /// A list length biased towards the edges 1, 127 and 128.
    fileprivate mutating func logCount(from minimum: Int) -> Int {
        switch count(0...9) {
        case 0: minimum
        case 1: 127
        case 2: 128
        default: count(minimum...12)
        }
    }

    fileprivate mutating func journal() -> RecoveryJournal {
        var channels = Array(0..<16).shuffled(using: &self).prefix(count(0...3)).sorted()
        if bool(), count(0...20) == 0 { channels = Array(0..<16) }
        return RecoveryJournal(singlePacketLoss: bool(), enhancedChapterC: bool(), checkpoint: UInt16.random(in: 0...UInt16.max, using: &self),
                               system: bool() ? systemJournal() : nil,
                               channels: channels.map { channelJournal(UInt8($0), small: channels.count > 3) })
    }

    fileprivate mutating func channelJournal(_ channel: UInt8, small: Bool) -> ChannelJournal {
        var journal = ChannelJournal(channel: channel, s: bool(), enhancedChapterC: bool())
        if bool() {
            let bank = bool()
            journal.program = ProgramChapter(s: bool(), program: byte(), bankMSB: bank ? byte() : nil, bankLSB: bank ? byte() : nil, x: bool())
        }
        if bool() {
            journal.controllerChapterS = bool()
            journal.controllers = (0..<(small ? count(1...4) : logCount(from: 1))).map { _ in
                let tool: ControllerLog.Tool = switch count(0...2) {
                case 0: .value(byte())
                case 1: .toggle(byte(0...63))
                default: .count(byte(0...63))
                }
                return ControllerLog(s: bool(), number: byte(), tool: tool)
            }
        }
        if bool() { // M: S|P|E|U|W|Z flags, LENGTH counting the whole chapter
            let length = count(2...30)
            journal.parameterChapter = [byte(0...255) & 0xFC | UInt8(length >> 8), UInt8(length & 0xFF)] + bytes(length - 2)
        }
        if bool() { journal.pitchWheel = PitchWheelChapter(s: bool(), first: byte(), second: byte()) }
        if bool() {
            let logs = (0..<(small ? count(0...4) : logCount(from: 0))).map { _ in
                NoteLog(s: bool(), note: byte(), velocity: byte(1...127), play: bool())
            }
            var off = NoteSet()
            if logs.count < 128 { for _ in 0..<count(0...6) { off.insert(byte()) } }
            journal.notes = NoteChapter(b: bool(), logs: logs, offNotes: off)
        }
        if bool() { // E: S|LEN, LEN+1 two-byte logs
            let logs = count(1...8)
            journal.noteExtras = [byte(0...255) & 0x80 | UInt8(logs - 1)] + bytes(2 * logs)
        }
        if bool() { journal.channelPressure = ChannelPressureChapter(s: bool(), pressure: byte()) }
        if bool() {
            journal.polyPressureChapterS = bool()
            journal.polyPressure = (0..<(small ? count(1...4) : logCount(from: 1))).map { _ in
                PolyPressureLog(s: bool(), note: byte(), x: bool(), pressure: byte())
            }
        }
        return journal
    }

    fileprivate mutating func systemJournal() -> SystemJournal {
        var journal = SystemJournal(s: bool())
        if bool() { journal.simpleCommands = simpleCommands() }
        if bool() { journal.activeSense = byte(0...255) }
        if bool() {
            journal.sequencer = SequencerChapter(s: bool(), running: bool(), downbeat: bool(),
                                                 clock: bool() ? UInt32.random(in: 0...0x7FFFF, using: &self) : nil,
                                                 timeTools: bool() ? UInt32.random(in: 0...0xFFFFFF, using: &self) : nil)
        }
        if bool() { // F: S|C|P|Q|D|POINT, COMPLETE if C, PARTIAL if P
            let flags = byte(0...255)
            journal.timeCode = [flags] + bytes((flags & 0x40 != 0 ? 4 : 0) + (flags & 0x20 != 0 ? 4 : 0))
        }
        if bool() { journal.sysEx = bytes(count(1...12)) }
        return journal
    }

    /// A well-formed Chapter D: header, B G H octets, J K logs (10-bit LENGTH), Y Z logs (5-bit LENGTH).
    private mutating func simpleCommands() -> [UInt8] {
        let flags = byte(0...255)
        var chapter = [flags]
        for mask: UInt8 in [0x40, 0x20, 0x10] where flags & mask != 0 { chapter.append(byte(0...255)) }
        for mask: UInt8 in [0x08, 0x04] where flags & mask != 0 {
            let length = count(2...6)
            chapter += [byte(0...255) & 0xFC, UInt8(length)] + bytes(length - 2)
        }
        for mask: UInt8 in [0x02, 0x01] where flags & mask != 0 {
            let length = count(1...5)
            chapter += [byte(0...255) & 0xE0 | UInt8(length)] + bytes(length - 1)
        }
        return chapter
    }
}
