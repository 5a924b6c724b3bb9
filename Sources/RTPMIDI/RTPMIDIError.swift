/// Why an RTP-MIDI data packet was dropped (each is counted and logged by the session).
public enum RTPMIDIError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Fewer bytes than the RTP header (with its CSRCs and extension) needs.
    case truncatedRTPHeader
    /// An RTP version other than 2.
    case wrongRTPVersion(UInt8)
    /// The padding count is 0 or runs past the header.
    case badPadding
    /// No command-section header byte, or B=1 without its second length byte.
    case truncatedCommandHeader
    /// The command section's LEN runs past the end of the packet.
    case lengthPastEnd(length: Int, available: Int)
    /// A delta time longer than 4 bytes or cut off by the end of the command list.
    case badDeltaTime
    /// A command cut off by the end of the command list.
    case truncatedCommand(status: UInt8)
    /// A data byte where a command must start, with no running status to apply.
    case dataWithoutStatus(UInt8)
    /// A status byte that is undefined in MIDI 1.0 (F4, F5, F9, FD) where a command starts.
    case undefinedStatus(UInt8)
    /// A status byte inside a SysEx segment that neither ends it nor is real-time.
    case statusInsideSysEx(UInt8)
    /// J=1 but the journal is missing or shorter than its own lengths say.
    case truncatedJournal
    /// A journal whose header or chapter lengths contradict each other.
    case malformedJournal

    public var description: String {
        switch self {
        case .truncatedRTPHeader: "RTP header is truncated"
        case .wrongRTPVersion(let v): "RTP version \(v) (only 2 exists)"
        case .badPadding: "RTP padding count is out of range"
        case .truncatedCommandHeader: "MIDI command section header is truncated"
        case .lengthPastEnd(let length, let available):
            "MIDI command section says \(length) bytes but only \(available) follow"
        case .badDeltaTime: "delta time is longer than 4 bytes or truncated"
        case .truncatedCommand(let status): "MIDI command \(hex(status)) is truncated"
        case .dataWithoutStatus(let byte): "data byte \(hex(byte)) with no running status"
        case .undefinedStatus(let status): "undefined MIDI status \(hex(status))"
        case .statusInsideSysEx(let status): "status \(hex(status)) inside a SysEx segment"
        case .truncatedJournal: "recovery journal is missing or truncated"
        case .malformedJournal: "recovery journal lengths are inconsistent"
        }
    }
}

/// "0x9F"-style hex of a byte, for messages.
func hex(_ byte: UInt8) -> String {
    let digits = String(byte, radix: 16, uppercase: true)
    return "0x" + (byte < 0x10 ? "0" + digits : digits)
}
