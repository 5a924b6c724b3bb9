import MIDI

/// Moves channel messages from one channel to another (`channel: { 1: 3 }`); never filters.
public struct ChannelRemap: RouteStage {
    private let table: [UInt4]

    /// A remap by `mapping`; channels it does not name stay where they are.
    public init(mapping: [UInt4: UInt4]) {
        table = (0..<16).map { channel in mapping[UInt4(masking: UInt8(channel))] ?? UInt4(masking: UInt8(channel)) }
    }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        switch message {
        case .noteOff(let c, let n, let v): message = .noteOff(channel: table[Int(c.value)], note: n, velocity: v)
        case .noteOn(let c, let n, let v): message = .noteOn(channel: table[Int(c.value)], note: n, velocity: v)
        case .polyPressure(let c, let n, let p): message = .polyPressure(channel: table[Int(c.value)], note: n, pressure: p)
        case .controlChange(let c, let n, let v): message = .controlChange(channel: table[Int(c.value)], controller: n, value: v)
        case .programChange(let c, let p): message = .programChange(channel: table[Int(c.value)], program: p)
        case .channelPressure(let c, let p): message = .channelPressure(channel: table[Int(c.value)], pressure: p)
        case .pitchBend(let c, let v): message = .pitchBend(channel: table[Int(c.value)], value: v)
        default: break
        }
        return true
    }
}
