import MIDI

/// A small, fast, seeded generator (SplitMix64): property tests replay exactly from their seed.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    /// A generator starting from `seed`.
    public init(seed: UInt64) { state = seed }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension RandomNumberGenerator {
    /// A random channel.
    public mutating func channel() -> UInt4 { UInt4(masking: UInt8.random(in: 0...15, using: &self)) }
    /// A random 7-bit value.
    public mutating func seven() -> UInt7 { UInt7(masking: UInt8.random(in: 0...127, using: &self)) }
    /// A random 14-bit value.
    public mutating func fourteen() -> UInt14 { UInt14(masking: UInt16.random(in: 0...0x3FFF, using: &self)) }

    /// A random message of any kind; SysEx up to `maxSysEx` data bytes.
    public mutating func message(maxSysEx: Int = 300) -> MIDIMessage {
        switch Int.random(in: 0..<18, using: &self) {
        case 0: return .noteOff(channel: channel(), note: seven(), velocity: seven())
        case 1: return .noteOn(channel: channel(), note: seven(), velocity: seven())
        case 2: return .polyPressure(channel: channel(), note: seven(), pressure: seven())
        case 3: return .controlChange(channel: channel(), controller: seven(), value: seven())
        case 4: return .programChange(channel: channel(), program: seven())
        case 5: return .channelPressure(channel: channel(), pressure: seven())
        case 6: return .pitchBend(channel: channel(), value: fourteen())
        case 7: return .sysEx(data: (0..<Int.random(in: 0...maxSysEx, using: &self)).map { _ in seven().value })
        case 8: return .mtcQuarterFrame(seven())
        case 9: return .songPosition(fourteen())
        case 10: return .songSelect(seven())
        case 11: return .tuneRequest
        case 12: return .timingClock
        case 13: return .start
        case 14: return .continue
        case 15: return .stop
        case 16: return .activeSensing
        default: return .systemReset
        }
    }

    /// A random real-time message.
    public mutating func realTimeMessage() -> MIDIMessage {
        [MIDIMessage.timingClock, .start, .continue, .stop, .activeSensing, .systemReset]
            .randomElement(using: &self) ?? .timingClock
    }
}
