extension RecoveryJournal {
    /// Decodes the journal that starts at `bytes` (bytes after it are ignored).
    /// Throws `.truncatedJournal` if `bytes` ends before a header or a length says, and
    /// `.malformedJournal` if lengths contradict each other (a chapter running past its
    /// channel or system journal's LENGTH, chapters not filling it, LENGTH below its header).
    public init(parsing bytes: UnsafeRawBufferPointer) throws(RTPMIDIError) {
        var parser = JournalParser(bytes, building: true)
        self = try parser.journal()
    }

    /// Decodes the journal that starts at `bytes` and returns it with the bytes it occupies.
    public static func parsing(_ bytes: UnsafeRawBufferPointer) throws(RTPMIDIError) -> (RecoveryJournal, Int) {
        var parser = JournalParser(bytes, building: true)
        let journal = try parser.journal()
        return (journal, parser.offset)
    }

    /// The number of bytes the journal at the start of `bytes` occupies, after the same checks
    /// as `init(parsing:)`, without building the model (allocates nothing).
    public static func length(of bytes: UnsafeRawBufferPointer) throws(RTPMIDIError) -> Int {
        var parser = JournalParser(bytes, building: false)
        _ = try parser.journal()
        return parser.offset
    }
}

/// Walks a journal with every check; builds the lists and raw chapters only if `building`,
/// so skipping a journal and decoding it share one code path.
private struct JournalParser {
    private var reader: ByteReader
    private let building: Bool

    init(_ bytes: UnsafeRawBufferPointer, building: Bool) {
        reader = ByteReader(bytes)
        self.building = building
    }

    /// Bytes consumed so far.
    var offset: Int { reader.offset }

    /// Header S|Y|A|H|TOTCHAN, checkpoint, then the system and channel journals (RFC 6295 §5).
    mutating func journal() throws(RTPMIDIError) -> RecoveryJournal {
        guard let flags = reader.u8(), let checkpoint = reader.u16() else { throw .truncatedJournal }
        var journal = RecoveryJournal(singlePacketLoss: flags & 0x80 != 0, enhancedChapterC: flags & 0x10 != 0,
                                      checkpoint: checkpoint)
        if flags & 0x40 != 0 { journal.system = try systemJournal() }
        if flags & 0x20 != 0 {
            let count = Int(flags & 0x0F) + 1
            if building { journal.channels.reserveCapacity(count) }
            for _ in 0..<count {
                let channel = try channelJournal()
                if building { journal.channels.append(channel) }
            }
        }
        return journal
    }

    /// The `length` bytes from `start` (already inside the buffer) as a reader of their own,
    /// so a chapter cannot read past its journal's LENGTH.
    private func body(from start: Int, length: Int) -> ByteReader {
        ByteReader(UnsafeRawBufferPointer(rebasing: reader.bytes[start..<(start + length)]))
    }

    /// S|CHAN(4)|H|LENGTH(10), TOC P C M W N E T A, chapters in TOC order (RFC 6295 §5.2).
    private mutating func channelJournal() throws(RTPMIDIError) -> ChannelJournal {
        let start = reader.offset
        guard let header = reader.u16(), let toc = reader.u8() else { throw .truncatedJournal }
        let length = Int(header & 0x03FF)
        guard length >= 3 else { throw .malformedJournal }
        guard reader.skip(length - 3) else { throw .truncatedJournal }
        var body = body(from: start + 3, length: length - 3)
        var journal = ChannelJournal(channel: UInt8(header >> 11 & 0x0F), s: header & 0x8000 != 0,
                                     enhancedChapterC: header & 0x0400 != 0)
        if toc & 0x80 != 0 { journal.program = try Self.program(&body) }
        if toc & 0x40 != 0 {
            let header = try body.byte()
            journal.controllerChapterS = header & 0x80 != 0
            journal.controllers = try controllers(&body, count: Int(header & 0x7F) + 1)
        }
        if toc & 0x20 != 0 { // M: S|P|E|U|W|Z|LENGTH(10), LENGTH counts the whole chapter
            let chapterStart = body.offset
            let length = Int(try body.word() & 0x03FF)
            guard length >= 2 else { throw .malformedJournal }
            journal.parameterChapter = try raw(&body, from: chapterStart, skipping: length - 2)
        }
        if toc & 0x10 != 0 {
            let first = try body.byte(), second = try body.byte()
            journal.pitchWheel = PitchWheelChapter(s: first & 0x80 != 0, first: first & 0x7F, second: second & 0x7F)
        }
        if toc & 0x08 != 0 { journal.notes = try notes(&body) }
        if toc & 0x04 != 0 { // E: S|LEN, LEN+1 two-byte logs
            let chapterStart = body.offset
            let count = Int(try body.byte() & 0x7F) + 1
            journal.noteExtras = try raw(&body, from: chapterStart, skipping: 2 * count)
        }
        if toc & 0x02 != 0 {
            let byte = try body.byte()
            journal.channelPressure = ChannelPressureChapter(s: byte & 0x80 != 0, pressure: byte & 0x7F)
        }
        if toc & 0x01 != 0 {
            let header = try body.byte()
            journal.polyPressureChapterS = header & 0x80 != 0
            journal.polyPressure = try polyPressure(&body, count: Int(header & 0x7F) + 1)
        }
        guard body.remaining == 0 else { throw .malformedJournal }
        return journal
    }

    /// Chapter P: S|PROGRAM, B|BANK-MSB, X|BANK-LSB.
    private static func program(_ body: inout ByteReader) throws(RTPMIDIError) -> ProgramChapter {
        let first = try body.byte(), msb = try body.byte(), lsb = try body.byte()
        let hasBank = msb & 0x80 != 0
        return ProgramChapter(s: first & 0x80 != 0, program: first & 0x7F, bankMSB: hasBank ? msb & 0x7F : nil,
                              bankLSB: hasBank ? lsb & 0x7F : nil, x: lsb & 0x80 != 0)
    }

    /// Chapter C logs: S|NUMBER, then A=0 VALUE, or A=1 T ALT(6) (T=0 toggle, T=1 count).
    private func controllers(_ body: inout ByteReader, count: Int) throws(RTPMIDIError) -> [ControllerLog] {
        var logs: [ControllerLog] = []
        if building { logs.reserveCapacity(count) }
        for _ in 0..<count {
            let number = try body.byte(), value = try body.byte()
            let tool: ControllerLog.Tool = value & 0x80 == 0 ? .value(value & 0x7F)
                : value & 0x40 == 0 ? .toggle(value & 0x3F) : .count(value & 0x3F)
            if building { logs.append(ControllerLog(s: number & 0x80 != 0, number: number & 0x7F, tool: tool)) }
        }
        return logs
    }

    /// Chapter N: B|LEN, LOW|HIGH, LEN note logs S|NOTENUM Y|VELOCITY, then HIGH-LOW+1 off-bit
    /// octets if LOW <= HIGH (none otherwise). LEN=127 with LOW=15 HIGH=0 means 128 logs.
    private func notes(_ body: inout ByteReader) throws(RTPMIDIError) -> NoteChapter {
        let header = try body.byte(), range = try body.byte()
        let low = Int(range >> 4), high = Int(range & 0x0F)
        let length = Int(header & 0x7F)
        let count = length == 127 && low == 15 && high == 0 ? 128 : length
        var chapter = NoteChapter(b: header & 0x80 != 0)
        if building { chapter.logs.reserveCapacity(count) }
        for _ in 0..<count {
            let note = try body.byte(), velocity = try body.byte()
            if building {
                chapter.logs.append(NoteLog(s: note & 0x80 != 0, note: note & 0x7F, velocity: velocity & 0x7F,
                                            play: velocity & 0x80 != 0))
            }
        }
        if low <= high {
            for index in low...high { chapter.offNotes.insert(octet: try body.byte(), at: index) }
        }
        return chapter
    }

    /// Chapter A logs: S|NOTENUM, X|PRESSURE.
    private func polyPressure(_ body: inout ByteReader, count: Int) throws(RTPMIDIError) -> [PolyPressureLog] {
        var logs: [PolyPressureLog] = []
        if building { logs.reserveCapacity(count) }
        for _ in 0..<count {
            let note = try body.byte(), pressure = try body.byte()
            if building {
                logs.append(PolyPressureLog(s: note & 0x80 != 0, note: note & 0x7F, x: pressure & 0x80 != 0,
                                            pressure: pressure & 0x7F))
            }
        }
        return logs
    }

    /// S|D|V|Q|F|X|LENGTH(10), chapters D V Q F X; X runs to the end of LENGTH (RFC 6295 §5.3).
    private mutating func systemJournal() throws(RTPMIDIError) -> SystemJournal {
        let start = reader.offset
        guard let header = reader.u16() else { throw .truncatedJournal }
        let length = Int(header & 0x03FF)
        guard length >= 2 else { throw .malformedJournal }
        guard reader.skip(length - 2) else { throw .truncatedJournal }
        var body = body(from: start + 2, length: length - 2)
        var journal = SystemJournal(s: header & 0x8000 != 0)
        if header & 0x4000 != 0 { journal.simpleCommands = try simpleCommands(&body) }
        if header & 0x2000 != 0 { journal.activeSense = try body.byte() }
        if header & 0x1000 != 0 { journal.sequencer = try Self.sequencer(&body) }
        if header & 0x0800 != 0 { // F: S|C|P|Q|D|POINT, COMPLETE (4) if C, PARTIAL (4) if P
            let chapterStart = body.offset
            let flags = try body.byte()
            journal.timeCode = try raw(&body, from: chapterStart,
                                       skipping: (flags & 0x40 != 0 ? 4 : 0) + (flags & 0x20 != 0 ? 4 : 0))
        }
        if header & 0x0400 != 0 { // X: S|T|C|F|D|L|STA and its fields, up to the end of the journal
            guard body.remaining >= 1 else { throw .malformedJournal }
            journal.sysEx = try raw(&body, from: body.offset, skipping: body.remaining)
        }
        guard body.remaining == 0 else { throw .malformedJournal }
        return journal
    }

    /// Chapter D: S|B|G|H|J|K|Y|Z, then one octet each for B, G, H; J and K logs
    /// S|C|V|L|DSZ(2)|LENGTH(10); Y and Z logs S|C|L|LENGTH(5). Each LENGTH counts its own log.
    private func simpleCommands(_ body: inout ByteReader) throws(RTPMIDIError) -> [UInt8] {
        let start = body.offset
        let flags = try body.byte()
        var bit: UInt8 = 0x40
        while bit != 0 {
            defer { bit >>= 1 }
            guard flags & bit != 0 else { continue }
            switch bit {
            case 0x40, 0x20, 0x10: // B (Reset), G (Tune Request), H (Song Select)
                _ = try body.byte()
            case 0x08, 0x04: // J (F4), K (F5)
                let length = Int(try body.word() & 0x03FF)
                guard length >= 2, body.skip(length - 2) else { throw .malformedJournal }
            default: // Y (F9), Z (FD)
                let length = Int(try body.byte() & 0x1F)
                guard length >= 1, body.skip(length - 1) else { throw .malformedJournal }
            }
        }
        return try raw(&body, from: start, skipping: 0)
    }

    /// Chapter Q: S|N|D|C|T|TOP(3), CLOCK (16) if C, TIMETOOLS (24) if T.
    private static func sequencer(_ body: inout ByteReader) throws(RTPMIDIError) -> SequencerChapter {
        let flags = try body.byte()
        var chapter = SequencerChapter(s: flags & 0x80 != 0, running: flags & 0x40 != 0, downbeat: flags & 0x20 != 0)
        if flags & 0x10 != 0 { chapter.clock = UInt32(flags & 0x07) << 16 | UInt32(try body.word()) }
        if flags & 0x08 != 0 {
            chapter.timeTools = UInt32(try body.byte()) << 16 | UInt32(try body.word())
        }
        return chapter
    }

    /// Skips `count` more bytes and returns the bytes from `start` to there (empty if not building).
    private func raw(_ body: inout ByteReader, from start: Int, skipping count: Int) throws(RTPMIDIError) -> [UInt8] {
        guard body.skip(count) else { throw .malformedJournal }
        guard building else { return [] }
        return [UInt8](UnsafeRawBufferPointer(rebasing: body.bytes[start..<body.offset]))
    }
}

extension ByteReader {
    /// The next byte of a chapter; running out means the chapter overruns its journal's LENGTH.
    fileprivate mutating func byte() throws(RTPMIDIError) -> UInt8 {
        guard let byte = u8() else { throw .malformedJournal }
        return byte
    }

    /// The next big-endian 16 bits of a chapter, as `byte()`.
    fileprivate mutating func word() throws(RTPMIDIError) -> UInt16 {
        guard let word = u16() else { throw .malformedJournal }
        return word
    }
}
