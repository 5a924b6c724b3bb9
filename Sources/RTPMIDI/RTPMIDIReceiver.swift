import MIDI

/// Turns one peer's RTP-MIDI payloads into MIDI messages: running status, delta times,
/// SysEx segments reassembled up to a size limit, journals checked and skipped.
public struct RTPMIDIReceiver: Sendable {
    /// The largest SysEx (bytes between F0 and F7) delivered; longer ones are dropped and counted.
    public let sysExLimit: Int
    /// SysEx messages dropped for exceeding `sysExLimit`.
    public private(set) var sysExTooLong = 0
    /// SysEx messages dropped because a segment was lost or cancelled (F4).
    public private(set) var sysExIncomplete = 0

    private var sysEx: [UInt8] = []
    private var sysExState = SysExState.idle
    private enum SysExState { case idle, collecting, discarding }

    /// A receiver delivering SysEx of at most `sysExLimit` bytes.
    public init(sysExLimit: Int) { self.sysExLimit = sysExLimit }

    /// Decodes `payload` (the bytes after the RTP header), calling `deliver` with each message
    /// and its time in ticks after the packet's RTP timestamp. `validated` is called first,
    /// with the journal's range in `payload` (if any), once the whole payload is known to be
    /// well formed. A malformed payload throws and calls nothing.
    public mutating func receive(_ payload: UnsafeRawBufferPointer, validated: (Range<Int>?) -> Void = { _ in },
                                 _ deliver: (MIDIMessage, UInt32) -> Void) throws(RTPMIDIError) {
        try CommandSection.walk(payload, validated: validated) { command, ticks in
            switch command {
            case .channel(let status, let data1, let data2):
                deliver(Self.channelMessage(status, data1, data2), ticks)
            case .common(let status, let data1, let data2):
                deliver(Self.commonMessage(status, data1, data2), ticks)
            case .realTime(let byte):
                if let message = Self.realTimeMessage(byte) { deliver(message, ticks) }
            case .sysExStart(let byte):
                startSegment(continuing: byte == 0xF7)
            case .sysExData(let range):
                appendSysEx(UnsafeRawBufferPointer(rebasing: payload[range]))
            case .sysExEnd(let byte):
                if let message = endSegment(byte) { deliver(message, ticks) }
            }
        }
    }

    private mutating func startSegment(continuing: Bool) {
        switch (sysExState, continuing) {
        case (.idle, false):
            sysEx.removeAll(keepingCapacity: true)
            sysExState = .collecting
        case (.collecting, false): // the previous SysEx's last segment was lost
            sysExIncomplete += 1
            sysEx.removeAll(keepingCapacity: true)
        case (.discarding, false): // a new SysEx after one being discarded lost its end
            sysEx.removeAll(keepingCapacity: true)
            sysExState = .collecting
        case (.idle, true): // a middle or last segment whose first was lost
            sysExIncomplete += 1
            sysExState = .discarding
        case (.collecting, true), (.discarding, true):
            break
        }
    }

    private mutating func appendSysEx(_ bytes: UnsafeRawBufferPointer) {
        guard sysExState == .collecting else { return }
        guard sysEx.count + bytes.count <= sysExLimit else {
            sysExTooLong += 1
            sysEx.removeAll(keepingCapacity: false)
            sysExState = .discarding
            return
        }
        sysEx.append(contentsOf: bytes)
    }

    private mutating func endSegment(_ byte: UInt8) -> MIDIMessage? {
        switch byte {
        case 0xF0: // more segments follow
            return nil
        case 0xF4: // cancelled by the sender
            if sysExState == .collecting { sysExIncomplete += 1 }
            sysExState = .idle
            return nil
        default: // F7: the last segment
            defer { sysExState = .idle }
            guard sysExState == .collecting else { return nil }
            let message = MIDIMessage.sysEx(data: sysEx)
            sysEx.removeAll(keepingCapacity: true)
            return message
        }
    }

    static func channelMessage(_ status: UInt8, _ data1: UInt8, _ data2: UInt8) -> MIDIMessage {
        let channel = UInt4(masking: status)
        let a = UInt7(masking: data1), b = UInt7(masking: data2)
        switch status & 0xF0 {
        case 0x80: return .noteOff(channel: channel, note: a, velocity: b)
        case 0x90: return .noteOn(channel: channel, note: a, velocity: b)
        case 0xA0: return .polyPressure(channel: channel, note: a, pressure: b)
        case 0xB0: return .controlChange(channel: channel, controller: a, value: b)
        case 0xC0: return .programChange(channel: channel, program: a)
        case 0xD0: return .channelPressure(channel: channel, pressure: a)
        default: return .pitchBend(channel: channel, value: UInt14(lsb: a, msb: b))
        }
    }

    static func commonMessage(_ status: UInt8, _ data1: UInt8, _ data2: UInt8) -> MIDIMessage {
        let a = UInt7(masking: data1)
        switch status {
        case 0xF1: return .mtcQuarterFrame(a)
        case 0xF2: return .songPosition(UInt14(lsb: a, msb: UInt7(masking: data2)))
        case 0xF3: return .songSelect(a)
        default: return .tuneRequest
        }
    }

    static func realTimeMessage(_ byte: UInt8) -> MIDIMessage? {
        switch byte {
        case 0xF8: .timingClock
        case 0xFA: .start
        case 0xFB: .continue
        case 0xFC: .stop
        case 0xFE: .activeSensing
        case 0xFF: .systemReset
        default: nil
        }
    }
}
