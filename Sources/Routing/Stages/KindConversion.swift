import MIDI

/// The message kinds that carry one value and can be converted into each other.
public enum ConvertibleKind: Hashable, Sendable {
    /// A control change of this controller.
    case controller(UInt7)
    /// Channel pressure (aftertouch).
    case channelPressure
    /// Pitch bend (14 bits; converting to 7 bits keeps the top 7).
    case pitchBend
    /// Program change.
    case program
}

/// Turns one kind of message into another on the same channel (`convert:`), e.g. channel
/// pressure into CC 1; other messages pass unchanged.
public struct KindConversion: RouteStage {
    /// The kind converted.
    public let from: ConvertibleKind
    /// What it becomes.
    public let to: ConvertibleKind

    /// A conversion of `from` messages into `to` messages.
    public init(from: ConvertibleKind, to: ConvertibleKind) {
        self.from = from
        self.to = to
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        let channel: UInt4
        let value: UInt14
        switch (from, message) {
        case (.controller(let wanted), .controlChange(let c, let n, let v)) where n == wanted:
            channel = c; value = Self.widen(v)
        case (.channelPressure, .channelPressure(let c, let p)):
            channel = c; value = Self.widen(p)
        case (.pitchBend, .pitchBend(let c, let v)):
            channel = c; value = v
        case (.program, .programChange(let c, let p)):
            channel = c; value = Self.widen(p)
        default:
            return true
        }
        switch to {
        case .controller(let n): message = .controlChange(channel: channel, controller: n, value: value.msb)
        case .channelPressure: message = .channelPressure(channel: channel, pressure: value.msb)
        case .pitchBend: message = .pitchBend(channel: channel, value: value)
        case .program: message = .programChange(channel: channel, program: value.msb)
        }
        return true
    }

    /// A 7-bit value spread over 14 bits: 0 -> 0, 64 -> 8192 (centre), 127 -> 16383.
    static func widen(_ v: UInt7) -> UInt14 {
        let x = UInt16(v.value)
        return UInt14(masking: x <= 64 ? x << 7 : x << 7 | (x - 64) << 1 | (x - 64) >> 5)
    }
}
