/// What the parser found in a byte stream: a message, or a problem it skipped over.
public enum MIDIParserOutput: Equatable, Sendable {
    /// A complete message.
    case message(MIDIMessage)
    /// Bytes that did not form a message; the parser has resynchronised.
    case error(MIDIParseError)
}

/// A problem in a MIDI byte stream. The parser reports it once and carries on.
public enum MIDIParseError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A data byte arrived with no status to belong to (reported once per run of such bytes).
    case dataByteWithoutStatus(UInt8)
    /// A new status byte arrived before the message of `status` had all its data bytes.
    case incompleteMessage(status: UInt8)
    /// A SysEx grew past the limit; the rest of it, up to its F7, was skipped.
    case sysExTooLong(limit: Int)
    /// A status byte other than F7 or a real-time byte arrived inside a SysEx.
    case unterminatedSysEx
    /// F7 arrived with no SysEx open.
    case strayEndOfExclusive
    /// One of the undefined status bytes F4, F5, F9 or FD.
    case undefinedStatus(UInt8)

    public var description: String {
        switch self {
        case .dataByteWithoutStatus(let b):
            return "data byte \(hex(b)) with no status byte before it; skipped until the next status byte"
        case .incompleteMessage(let s):
            return "message \(hex(s)) cut short by the next status byte; dropped"
        case .sysExTooLong(let limit):
            return "SysEx longer than \(limit) bytes; dropped (the limit protects memory)"
        case .unterminatedSysEx:
            return "SysEx ended by a status byte instead of F7; dropped"
        case .strayEndOfExclusive:
            return "F7 (end of SysEx) with no SysEx open; ignored"
        case .undefinedStatus(let s):
            return "undefined status byte \(hex(s)); ignored"
        }
    }
}

/// Two upper-case hex digits.
func hex(_ byte: UInt8) -> String {
    let digits = Array("0123456789ABCDEF")
    return String([digits[Int(byte >> 4)], digits[Int(byte & 0x0F)]])
}

/// An incremental MIDI 1.0 byte-stream parser: running status, real-time bytes anywhere
/// (between data bytes and inside SysEx), resynchronisation after garbage, a SysEx size cap.
///
/// Feed it bytes as they arrive from any transport. Apart from completed SysEx messages it
/// allocates nothing.
public struct MIDIParser: Sendable {
    /// The longest SysEx accepted, in data bytes between F0 and F7.
    public let maxSysExLength: Int

    private var status: UInt8 = 0          // running status (channel voice) or the pending system common
    private var first: UInt8 = 0           // first data byte, if `have` == 1
    private var have = 0                   // data bytes collected for `status`
    private var pending = false            // a status byte or data byte awaits the rest of its message
    private var inSysEx = false
    private var sysExOverflowed = false
    private var sysEx: [UInt8] = []
    private var reportedOrphans = false

    /// A parser accepting SysEx messages of up to `maxSysExLength` data bytes.
    public init(maxSysExLength: Int = 1 << 20) {
        self.maxSysExLength = max(0, maxSysExLength)
    }

    /// Takes one byte, calling `body` with each message or error it completes (at most two:
    /// an interrupted message's error, then the interrupting message).
    public mutating func feed(_ byte: UInt8, _ body: (MIDIParserOutput) -> Void) {
        if byte >= 0xF8 { return body(realTime(byte)) }
        if byte < 0x80 {
            if let output = data(byte) { body(output) }
            return
        }
        // A status byte other than real-time.
        if inSysEx {
            inSysEx = false
            if byte == 0xF7 { return body(endSysEx()) }
            sysEx.removeAll(keepingCapacity: true)
            body(.error(sysExOverflowed ? .sysExTooLong(limit: maxSysExLength) : .unterminatedSysEx))
        } else if pending {
            body(.error(.incompleteMessage(status: status)))
        }
        if let output = beginStatus(byte) { body(output) }
    }

    /// Parses every byte of `bytes`, calling `body` for each message or error, in order.
    public mutating func parse(_ bytes: some Sequence<UInt8>, _ body: (MIDIParserOutput) -> Void) {
        for byte in bytes { feed(byte, body) }
    }

    private mutating func realTime(_ byte: UInt8) -> MIDIParserOutput {
        switch byte {
        case 0xF8: return .message(.timingClock)
        case 0xFA: return .message(.start)
        case 0xFB: return .message(.continue)
        case 0xFC: return .message(.stop)
        case 0xFE: return .message(.activeSensing)
        case 0xFF: return .message(.systemReset)
        default: return .error(.undefinedStatus(byte)) // F9, FD
        }
    }

    /// Starts the message of status byte `byte` (not real-time); returns it if it has no data bytes.
    private mutating func beginStatus(_ byte: UInt8) -> MIDIParserOutput? {
        have = 0
        pending = false
        reportedOrphans = false
        switch byte {
        case 0x80...0xEF:
            status = byte
            pending = true
            return nil
        case 0xF0:
            status = 0
            inSysEx = true
            sysExOverflowed = false
            sysEx.removeAll(keepingCapacity: true)
            return nil
        case 0xF1, 0xF2, 0xF3:
            status = byte
            pending = true
            return nil
        case 0xF6:
            status = 0
            return .message(.tuneRequest)
        case 0xF7:
            status = 0
            return .error(.strayEndOfExclusive)
        default: // F4, F5
            status = 0
            return .error(.undefinedStatus(byte))
        }
    }

    private mutating func data(_ byte: UInt8) -> MIDIParserOutput? {
        if inSysEx {
            if sysEx.count < maxSysExLength {
                sysEx.append(byte)
            } else {
                sysExOverflowed = true
            }
            return nil
        }
        guard status != 0 else {
            if reportedOrphans { return nil }
            reportedOrphans = true
            return .error(.dataByteWithoutStatus(byte))
        }
        if have == 0 && Self.dataLength(status) == 2 {
            first = byte
            have = 1
            pending = true
            return nil
        }
        let message = Self.message(status: status, first: have == 1 ? first : byte, second: byte)
        have = 0
        pending = false
        if status >= 0xF0 { status = 0 } // system common: no running status
        return .message(message)
    }

    private mutating func endSysEx() -> MIDIParserOutput {
        defer { sysEx.removeAll(keepingCapacity: true) }
        if sysExOverflowed { return .error(.sysExTooLong(limit: maxSysExLength)) }
        return .message(.sysEx(data: sysEx))
    }

    /// Data bytes that follow `status`.
    private static func dataLength(_ status: UInt8) -> Int {
        switch status & 0xF0 {
        case 0xC0, 0xD0: return 1
        case 0xF0: return status == 0xF2 ? 2 : 1
        default: return 2
        }
    }

    private static func message(status: UInt8, first: UInt8, second: UInt8) -> MIDIMessage {
        let channel = UInt4(masking: status)
        let a = UInt7(masking: first)
        let b = UInt7(masking: second)
        switch status & 0xF0 {
        case 0x80: return .noteOff(channel: channel, note: a, velocity: b)
        case 0x90: return .noteOn(channel: channel, note: a, velocity: b)
        case 0xA0: return .polyPressure(channel: channel, note: a, pressure: b)
        case 0xB0: return .controlChange(channel: channel, controller: a, value: b)
        case 0xC0: return .programChange(channel: channel, program: b)
        case 0xD0: return .channelPressure(channel: channel, pressure: b)
        case 0xE0: return .pitchBend(channel: channel, value: UInt14(lsb: a, msb: b))
        default:
            switch status {
            case 0xF1: return .mtcQuarterFrame(b)
            case 0xF2: return .songPosition(UInt14(lsb: a, msb: b))
            default: return .songSelect(b)
            }
        }
    }
}
