/// One complete MIDI 1.0 message: every channel voice, system common and real-time message.
///
/// Channels are 0...15 as on the wire (`UInt4`); route files and the monitor show them as 1...16.
public enum MIDIMessage: Hashable, Sendable {
    /// 0x8n: note released.
    case noteOff(channel: UInt4, note: UInt7, velocity: UInt7)
    /// 0x9n: note struck. Velocity 0 is a note-off by MIDI convention; see `isNoteOff`.
    case noteOn(channel: UInt4, note: UInt7, velocity: UInt7)
    /// 0xAn: polyphonic key pressure.
    case polyPressure(channel: UInt4, note: UInt7, pressure: UInt7)
    /// 0xBn: control change, including channel mode messages (controllers 120...127).
    case controlChange(channel: UInt4, controller: UInt7, value: UInt7)
    /// 0xCn: program change.
    case programChange(channel: UInt4, program: UInt7)
    /// 0xDn: channel pressure (aftertouch).
    case channelPressure(channel: UInt4, pressure: UInt7)
    /// 0xEn: pitch bend, 0...16383 with 8192 as centre.
    case pitchBend(channel: UInt4, value: UInt14)
    /// 0xF0 ... 0xF7: system exclusive; `data` is what lies between F0 and F7, all bytes < 0x80.
    case sysEx(data: [UInt8])
    /// 0xF1: MTC quarter frame; the 7-bit data byte holds the piece type (bits 4-6) and value (bits 0-3).
    case mtcQuarterFrame(UInt7)
    /// 0xF2: song position pointer, in MIDI beats (sixteenth notes) since the song's start.
    case songPosition(UInt14)
    /// 0xF3: song select.
    case songSelect(UInt7)
    /// 0xF6: tune request.
    case tuneRequest
    /// 0xF8: timing clock, 24 per quarter note.
    case timingClock
    /// 0xFA: start.
    case start
    /// 0xFB: continue.
    case `continue`
    /// 0xFC: stop.
    case stop
    /// 0xFE: active sensing.
    case activeSensing
    /// 0xFF: system reset.
    case systemReset
}

extension MIDIMessage {
    /// The channel of a channel voice message; nil for system messages.
    @inlinable public var channel: UInt4? {
        switch self {
        case .noteOff(let c, _, _), .noteOn(let c, _, _), .polyPressure(let c, _, _),
             .controlChange(let c, _, _), .programChange(let c, _), .channelPressure(let c, _),
             .pitchBend(let c, _):
            return c
        default:
            return nil
        }
    }

    /// True for Start, Stop and Continue: what starts or stops a song (an output takes one of them at an instant).
    @inlinable public var startsOrStops: Bool { self == .start || self == .stop || self == .continue }

    /// True for a clock tick and for transport (Start, Stop, Continue, Song Position): what a song's clock sends.
    @inlinable public var isClockOrTransport: Bool {
        switch self {
        case .timingClock, .start, .stop, .continue, .songPosition: true
        default: false
        }
    }

    /// True for a note-off and for a note-on with velocity 0.
    @inlinable public var isNoteOff: Bool {
        switch self {
        case .noteOff: return true
        case .noteOn(_, _, let v): return v.value == 0
        default: return false
        }
    }

    /// The kind of this message, as route files name it.
    @inlinable public var kind: MIDIMessageKind {
        switch self {
        case .noteOff: return .noteOff
        case .noteOn(_, _, let v): return v.value == 0 ? .noteOff : .noteOn
        case .polyPressure: return .polyPressure
        case .controlChange: return .controlChange
        case .programChange: return .programChange
        case .channelPressure: return .channelPressure
        case .pitchBend: return .pitchBend
        case .sysEx: return .sysEx
        case .mtcQuarterFrame: return .mtcQuarterFrame
        case .songPosition: return .songPosition
        case .songSelect: return .songSelect
        case .tuneRequest: return .tuneRequest
        case .timingClock: return .timingClock
        case .start: return .start
        case .continue: return .continue
        case .stop: return .stop
        case .activeSensing: return .activeSensing
        case .systemReset: return .systemReset
        }
    }
}

/// The kinds of MIDI message, one bit each in a `MIDIMessageKinds` set.
public enum MIDIMessageKind: UInt8, CaseIterable, Sendable {
    case noteOff, noteOn, polyPressure, controlChange, programChange, channelPressure, pitchBend
    case sysEx, mtcQuarterFrame, songPosition, songSelect, tuneRequest
    case timingClock, start, `continue`, stop, activeSensing, systemReset
}

/// A set of message kinds, one bit per kind: checking membership allocates nothing.
public struct MIDIMessageKinds: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    @inlinable public init(rawValue: UInt32) { self.rawValue = rawValue }
    /// The set holding just `kind`.
    @inlinable public init(_ kind: MIDIMessageKind) { rawValue = 1 << UInt32(kind.rawValue) }
    /// True if `kind` is in the set.
    @inlinable public func contains(_ kind: MIDIMessageKind) -> Bool {
        rawValue & (1 << UInt32(kind.rawValue)) != 0
    }
    /// Every kind.
    public static let all = MIDIMessageKinds(rawValue: (1 << UInt32(MIDIMessageKind.allCases.count)) - 1)
}
