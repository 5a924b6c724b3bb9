/// Writes MIDI messages as MIDI 1.0 bytes, optionally with running status.
///
/// Running status applies to channel voice messages only; system common messages and SysEx
/// cancel it, real-time messages do not. Encoding allocates nothing beyond the caller's buffer.
public struct MIDIEncoder: Sendable {
    /// True if consecutive channel messages with the same status omit the status byte.
    public let runningStatus: Bool
    private var lastStatus: UInt8 = 0

    /// An encoder, with running status if `runningStatus`.
    public init(runningStatus: Bool = false) { self.runningStatus = runningStatus }

    /// Forgets the running status (e.g. after a gap or when the stream restarts).
    public mutating func reset() { lastStatus = 0 }

    /// Appends the bytes of `message` to `bytes`.
    public mutating func encode(_ message: MIDIMessage, into bytes: inout [UInt8]) {
        encode(message) { bytes.append($0) }
    }

    /// Calls `write` with each byte of `message`, in order.
    public mutating func encode(_ message: MIDIMessage, _ write: (UInt8) -> Void) {
        switch message {
        case .noteOff(let c, let n, let v): channel(0x80, c, n.value, v.value, write)
        case .noteOn(let c, let n, let v): channel(0x90, c, n.value, v.value, write)
        case .polyPressure(let c, let n, let p): channel(0xA0, c, n.value, p.value, write)
        case .controlChange(let c, let n, let v): channel(0xB0, c, n.value, v.value, write)
        case .programChange(let c, let p): channel(0xC0, c, p.value, nil, write)
        case .channelPressure(let c, let p): channel(0xD0, c, p.value, nil, write)
        case .pitchBend(let c, let v): channel(0xE0, c, v.lsb.value, v.msb.value, write)
        case .sysEx(let data):
            lastStatus = 0
            write(0xF0)
            for byte in data { write(byte & 0x7F) }
            write(0xF7)
        case .mtcQuarterFrame(let v): common(0xF1, v.value, nil, write)
        case .songPosition(let v): common(0xF2, v.lsb.value, v.msb.value, write)
        case .songSelect(let v): common(0xF3, v.value, nil, write)
        case .tuneRequest:
            lastStatus = 0
            write(0xF6)
        case .timingClock: write(0xF8)
        case .start: write(0xFA)
        case .continue: write(0xFB)
        case .stop: write(0xFC)
        case .activeSensing: write(0xFE)
        case .systemReset: write(0xFF)
        }
    }

    private mutating func channel(_ kind: UInt8, _ c: UInt4, _ a: UInt8, _ b: UInt8?, _ write: (UInt8) -> Void) {
        let status = kind | c.value
        if !runningStatus || status != lastStatus { write(status) }
        lastStatus = runningStatus ? status : 0
        write(a)
        if let b { write(b) }
    }

    private mutating func common(_ status: UInt8, _ a: UInt8, _ b: UInt8?, _ write: (UInt8) -> Void) {
        lastStatus = 0
        write(status)
        write(a)
        if let b { write(b) }
    }
}
