import MIDI

/// A note-on; `channel` 0-15 as on the wire.
public func noteOn(_ channel: UInt8, _ note: UInt8, _ velocity: UInt8 = 100) -> MIDIMessage {
    .noteOn(channel: UInt4(masking: channel), note: UInt7(masking: note), velocity: UInt7(masking: velocity))
}

/// A note-off; `channel` 0-15 as on the wire.
public func noteOff(_ channel: UInt8, _ note: UInt8, _ velocity: UInt8 = 0) -> MIDIMessage {
    .noteOff(channel: UInt4(masking: channel), note: UInt7(masking: note), velocity: UInt7(masking: velocity))
}

/// A control change; `channel` 0-15 as on the wire.
public func cc(_ channel: UInt8, _ controller: UInt8, _ value: UInt8) -> MIDIMessage {
    .controlChange(channel: UInt4(masking: channel), controller: UInt7(masking: controller), value: UInt7(masking: value))
}
