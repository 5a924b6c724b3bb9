/// The recovery journal of an RTP-MIDI packet (RFC 6295 §5, Appendices A and B), as values.
/// Decoding is in RecoveryJournal+Decoding.swift, encoding in RecoveryJournal+Encoding.swift.
///
/// S bits (RFC 6295 §4, "single-packet loss"): every structure that has one sets it to false
/// when it codes something from packet I-1 (the packet just before this one), true when it
/// codes only older history. A receiver that lost only packet I-1 needs only the S=false parts.
/// The safe default for a sender is false, which is what every initializer here uses.
public struct RecoveryJournal: Equatable, Sendable {
    /// Header S bit (RFC 6295 §5): false if the journal codes anything from packet I-1.
    public var singlePacketLoss: Bool
    /// Header H bit (RFC 6295 §5): some channel uses the enhanced Chapter C encoding. We send false.
    public var enhancedChapterC: Bool
    /// The sequence number of the checkpoint packet: the journal covers the history after it.
    public var checkpoint: UInt16
    /// The system journal (header Y bit), if present.
    public var system: SystemJournal?
    /// The channel journals (header A bit; TOTCHAN+1 of them, at most 16) in wire order,
    /// which senders keep ascending by channel. Empty means A=0.
    public var channels: [ChannelJournal]

    /// A journal with the given parts.
    public init(singlePacketLoss: Bool = false, enhancedChapterC: Bool = false, checkpoint: UInt16,
                system: SystemJournal? = nil, channels: [ChannelJournal] = []) {
        self.singlePacketLoss = singlePacketLoss
        self.enhancedChapterC = enhancedChapterC
        self.checkpoint = checkpoint
        self.system = system
        self.channels = channels
    }
}

/// The recovery state of one MIDI channel (RFC 6295 §5.2 and Appendix A).
/// Lists hold at most 128 logs each (their wire counts are 7 bits); the encoder writes
/// no more than that.
public struct ChannelJournal: Equatable, Sendable {
    /// The MIDI channel, 0-15.
    public var channel: UInt8
    /// Channel journal S bit: false if this channel journal codes anything from packet I-1.
    public var s: Bool
    /// Channel journal H bit: Chapter C uses the enhanced encoding (RFC 6295 A.3.3). We send false.
    public var enhancedChapterC: Bool
    /// Chapter P (A.2): the most recent Program Change.
    public var program: ProgramChapter?
    /// Chapter C header S bit (A.3); meaningful only when `controllers` is not empty.
    public var controllerChapterS: Bool
    /// Chapter C (A.3): controller logs; empty means the chapter is absent.
    public var controllers: [ControllerLog]
    /// Chapter M (A.4, RPN/NRPN parameters), the whole chapter verbatim (header with its
    /// own 10-bit LENGTH included); not interpreted, re-encoded as is.
    public var parameterChapter: [UInt8]?
    /// Chapter W (A.5): the most recent Pitch Wheel.
    public var pitchWheel: PitchWheelChapter?
    /// Chapter N (A.6): Note On logs and Note Off bits.
    public var notes: NoteChapter?
    /// Chapter E (A.7, note command extras), the whole chapter verbatim (header included);
    /// not interpreted, re-encoded as is.
    public var noteExtras: [UInt8]?
    /// Chapter T (A.8): the most recent Channel Aftertouch.
    public var channelPressure: ChannelPressureChapter?
    /// Chapter A header S bit (A.9); meaningful only when `polyPressure` is not empty.
    public var polyPressureChapterS: Bool
    /// Chapter A (A.9): Poly Aftertouch logs; empty means the chapter is absent.
    public var polyPressure: [PolyPressureLog]

    /// A channel journal with the given chapters (none by default).
    public init(channel: UInt8, s: Bool = false, enhancedChapterC: Bool = false,
                program: ProgramChapter? = nil, controllerChapterS: Bool = false, controllers: [ControllerLog] = [],
                parameterChapter: [UInt8]? = nil, pitchWheel: PitchWheelChapter? = nil, notes: NoteChapter? = nil,
                noteExtras: [UInt8]? = nil, channelPressure: ChannelPressureChapter? = nil,
                polyPressureChapterS: Bool = false, polyPressure: [PolyPressureLog] = []) {
        self.channel = channel
        self.s = s
        self.enhancedChapterC = enhancedChapterC
        self.program = program
        self.controllerChapterS = controllerChapterS
        self.controllers = controllers
        self.parameterChapter = parameterChapter
        self.pitchWheel = pitchWheel
        self.notes = notes
        self.noteExtras = noteExtras
        self.channelPressure = channelPressure
        self.polyPressureChapterS = polyPressureChapterS
        self.polyPressure = polyPressure
    }
}

/// Chapter P (RFC 6295 A.2): S|PROGRAM, B|BANK-MSB, X|BANK-LSB.
public struct ProgramChapter: Equatable, Sendable {
    /// S bit: false if this chapter codes a command from packet I-1.
    public var s: Bool
    /// The program number, 0-127.
    public var program: UInt8
    /// Bank Select MSB (CC 0) in effect for the program change; with `bankLSB`, B=1.
    /// Both or neither: the B bit is set only when both are present.
    public var bankMSB: UInt8?
    /// Bank Select LSB (CC 32) in effect for the program change; with `bankMSB`, B=1.
    public var bankLSB: UInt8?
    /// X bit: a Reset All Controllers (CC 121) came between the bank select and the program change.
    public var x: Bool

    /// A Chapter P.
    public init(s: Bool = false, program: UInt8, bankMSB: UInt8? = nil, bankLSB: UInt8? = nil, x: Bool = false) {
        self.s = s
        self.program = program
        self.bankMSB = bankMSB
        self.bankLSB = bankLSB
        self.x = x
    }
}

/// One log of Chapter C (RFC 6295 A.3): S|NUMBER, A|VALUE or A|T|ALT.
public struct ControllerLog: Equatable, Sendable {
    /// How the log codes the controller's state (A and T bits).
    public enum Tool: Equatable, Sendable {
        /// A=0: the value tool, the controller's most recent 7-bit value.
        case value(UInt8)
        /// A=1, T=0: the toggle tool (on/off controllers such as pedals), a 6-bit ALT.
        case toggle(UInt8)
        /// A=1, T=1: the count tool (e.g. data increment), a 6-bit ALT count.
        case count(UInt8)
    }

    /// S bit: false if this log codes a command from packet I-1.
    public var s: Bool
    /// The controller number, 0-127.
    public var number: UInt8
    /// The tool and its value.
    public var tool: Tool

    /// A controller log.
    public init(s: Bool = false, number: UInt8, tool: Tool) {
        self.s = s
        self.number = number
        self.tool = tool
    }
}

/// Chapter W (RFC 6295 A.5): S|FIRST, R|SECOND (R is reserved: sent 0, ignored).
public struct PitchWheelChapter: Equatable, Sendable {
    /// S bit: false if this chapter codes a command from packet I-1.
    public var s: Bool
    /// The first data byte of the Pitch Wheel command (the 7 low bits).
    public var first: UInt8
    /// The second data byte of the Pitch Wheel command (the 7 high bits).
    public var second: UInt8

    /// A Chapter W.
    public init(s: Bool = false, first: UInt8, second: UInt8) {
        self.s = s
        self.first = first
        self.second = second
    }
}

/// Chapter N (RFC 6295 A.6): B|LEN, LOW|HIGH, note logs, then Note Off bits.
public struct NoteChapter: Equatable, Sendable {
    /// B bit: the S bit of the Note Off bits (false if they code a Note Off from packet I-1).
    public var b: Bool
    /// Notes whose most recent command is a Note On, at most 128.
    public var logs: [NoteLog]
    /// Notes whose most recent command is a Note Off. Ignored (not encodable) with 128 logs.
    public var offNotes: NoteSet

    /// A Chapter N.
    public init(b: Bool = false, logs: [NoteLog] = [], offNotes: NoteSet = NoteSet()) {
        self.b = b
        self.logs = logs
        self.offNotes = offNotes
    }
}

/// One note log of Chapter N (RFC 6295 A.6): S|NOTENUM, Y|VELOCITY.
public struct NoteLog: Equatable, Sendable {
    /// S bit: false if this log codes a command from packet I-1.
    public var s: Bool
    /// The note number, 0-127.
    public var note: UInt8
    /// The Note On velocity, 1-127.
    public var velocity: UInt8
    /// Y bit: the sender recommends playing the Note On on recovery (false: it is stale, skip it).
    public var play: Bool

    /// A note log.
    public init(s: Bool = false, note: UInt8, velocity: UInt8, play: Bool) {
        self.s = s
        self.note = note
        self.velocity = velocity
        self.play = play
    }
}

/// Chapter T (RFC 6295 A.8): S|PRESSURE.
public struct ChannelPressureChapter: Equatable, Sendable {
    /// S bit: false if this chapter codes a command from packet I-1.
    public var s: Bool
    /// The most recent Channel Aftertouch pressure, 0-127.
    public var pressure: UInt8

    /// A Chapter T.
    public init(s: Bool = false, pressure: UInt8) {
        self.s = s
        self.pressure = pressure
    }
}

/// One log of Chapter A (RFC 6295 A.9): S|NOTENUM, X|PRESSURE.
public struct PolyPressureLog: Equatable, Sendable {
    /// S bit: false if this log codes a command from packet I-1.
    public var s: Bool
    /// The note number, 0-127.
    public var note: UInt8
    /// X bit: the aftertouch precedes the most recent All Notes Off or mode command (CC 123-127).
    public var x: Bool
    /// The most recent Poly Aftertouch pressure for the note, 0-127.
    public var pressure: UInt8

    /// A poly aftertouch log.
    public init(s: Bool = false, note: UInt8, x: Bool = false, pressure: UInt8) {
        self.s = s
        self.note = note
        self.x = x
        self.pressure = pressure
    }
}

/// The system journal (RFC 6295 §5.3 and Appendix B): S|D|V|Q|F|X|LENGTH, chapters in that order.
/// Only Chapter Q is interpreted; D, V, F and X are kept verbatim (their lengths are checked).
public struct SystemJournal: Equatable, Sendable {
    /// System journal S bit: false if it codes anything from packet I-1.
    public var s: Bool
    /// Chapter D (B.1, Reset, Tune Request, Song Select, undefined commands), the whole
    /// chapter verbatim; must not be empty when present.
    public var simpleCommands: [UInt8]?
    /// Chapter V (B.2, Active Sense), its single octet S|COUNT verbatim.
    public var activeSense: UInt8?
    /// Chapter Q (B.3): the sequencer state.
    public var sequencer: SequencerChapter?
    /// Chapter F (B.4, MIDI Time Code tape position), the whole chapter verbatim.
    public var timeCode: [UInt8]?
    /// Chapter X (B.5, System Exclusive), the whole chapter verbatim. It has no length field:
    /// it runs to the end of the system journal.
    public var sysEx: [UInt8]?

    /// A system journal with the given chapters (none by default).
    public init(s: Bool = false, simpleCommands: [UInt8]? = nil, activeSense: UInt8? = nil,
                sequencer: SequencerChapter? = nil, timeCode: [UInt8]? = nil, sysEx: [UInt8]? = nil) {
        self.s = s
        self.simpleCommands = simpleCommands
        self.activeSense = activeSense
        self.sequencer = sequencer
        self.timeCode = timeCode
        self.sysEx = sysEx
    }
}

/// Chapter Q (RFC 6295 B.3): S|N|D|C|T|TOP, then CLOCK if C, then TIMETOOLS if T.
public struct SequencerChapter: Equatable, Sendable {
    /// S bit: false if this chapter codes a command from packet I-1.
    public var s: Bool
    /// N bit: the sequencer is running (the most recent of Start/Continue/Stop was Start or Continue).
    public var running: Bool
    /// D bit: the downbeat state — the song position has been reached (a Clock has played since
    /// the most recent Start/Continue/Song Position Pointer), false if it is yet to be reached.
    public var downbeat: Bool
    /// C bit: the 19-bit TOP+CLOCK song position in MIDI clocks, if coded.
    public var clock: UInt32?
    /// T bit: the 24-bit TIMETOOLS field (position within the clock for timing tools), if coded.
    public var timeTools: UInt32?

    /// A Chapter Q.
    public init(s: Bool = false, running: Bool, downbeat: Bool, clock: UInt32? = nil, timeTools: UInt32? = nil) {
        self.s = s
        self.running = running
        self.downbeat = downbeat
        self.clock = clock
        self.timeTools = timeTools
    }
}

/// A set of note numbers 0-127 in two words; iterates in ascending order, allocates nothing.
public struct NoteSet: Hashable, Sendable, Sequence, ExpressibleByArrayLiteral, CustomStringConvertible {
    private var low: UInt64 = 0 // notes 0-63, bit n = note n
    private var high: UInt64 = 0 // notes 64-127, bit n = note 64 + n

    /// The empty set.
    public init() {}

    /// The set of `notes` (numbers above 127 are ignored).
    public init(arrayLiteral notes: UInt8...) {
        for note in notes { insert(note) }
    }

    /// The set of `notes` (numbers above 127 are ignored).
    public init<Notes: Sequence>(_ notes: Notes) where Notes.Element == UInt8 {
        for note in notes { insert(note) }
    }

    /// True if no note is in the set.
    public var isEmpty: Bool { low == 0 && high == 0 }

    /// The number of notes in the set.
    public var count: Int { low.nonzeroBitCount + high.nonzeroBitCount }

    /// True if `note` is in the set.
    public func contains(_ note: UInt8) -> Bool {
        switch note {
        case 0..<64: low & (1 << UInt64(note)) != 0
        case 64..<128: high & (1 << UInt64(note - 64)) != 0
        default: false
        }
    }

    /// Adds `note`; numbers above 127 are ignored.
    public mutating func insert(_ note: UInt8) {
        switch note {
        case 0..<64: low |= 1 << UInt64(note)
        case 64..<128: high |= 1 << UInt64(note - 64)
        default: break
        }
    }

    /// Removes `note` if present.
    public mutating func remove(_ note: UInt8) {
        switch note {
        case 0..<64: low &= ~(1 << UInt64(note))
        case 64..<128: high &= ~(1 << UInt64(note - 64))
        default: break
        }
    }

    /// The lowest note, if any.
    public var lowest: UInt8? {
        if low != 0 { return UInt8(low.trailingZeroBitCount) }
        if high != 0 { return UInt8(64 + high.trailingZeroBitCount) }
        return nil
    }

    /// The highest note, if any.
    public var highest: UInt8? {
        if high != 0 { return UInt8(127 - high.leadingZeroBitCount) }
        if low != 0 { return UInt8(63 - low.leadingZeroBitCount) }
        return nil
    }

    /// The Chapter N off-bit octet for notes 8*index ... 8*index+7 (most significant bit = lowest note).
    func octet(at index: Int) -> UInt8 {
        let word = index < 8 ? low : high
        let bits = UInt8(truncatingIfNeeded: word >> UInt64((index % 8) * 8))
        return bits.bitReversed
    }

    /// Adds the notes of a Chapter N off-bit octet for notes 8*index ... 8*index+7.
    mutating func insert(octet: UInt8, at index: Int) {
        let bits = UInt64(octet.bitReversed) << UInt64((index % 8) * 8)
        if index < 8 { low |= bits } else { high |= bits }
    }

    /// Iterates the notes in ascending order.
    public func makeIterator() -> Iterator { Iterator(low: low, high: high) }

    /// Ascending iteration over a NoteSet's notes.
    public struct Iterator: IteratorProtocol, Sendable {
        fileprivate var low: UInt64
        fileprivate var high: UInt64

        /// The next higher note, or nil at the end.
        public mutating func next() -> UInt8? {
            if low != 0 {
                let note = UInt8(low.trailingZeroBitCount)
                low &= low &- 1
                return note
            }
            if high != 0 {
                let note = UInt8(64 + high.trailingZeroBitCount)
                high &= high &- 1
                return note
            }
            return nil
        }
    }

    /// The notes in braces, e.g. "{48, 53, 55}".
    public var description: String { "{" + map(String.init).joined(separator: ", ") + "}" }
}

extension UInt8 {
    /// The byte with its bit order reversed (bit 7 becomes bit 0).
    fileprivate var bitReversed: UInt8 {
        var value = self
        value = (value & 0xF0) >> 4 | (value & 0x0F) << 4
        value = (value & 0xCC) >> 2 | (value & 0x33) << 2
        value = (value & 0xAA) >> 1 | (value & 0x55) << 1
        return value
    }
}
