/// The notes and pedals one source has left on, so that they can be released if it goes
/// away (an unplugged keyboard, a vanished app).
public struct HeldNotes: Sendable {
    /// Per channel, 128 note bits in two words.
    private var notes = [UInt64](repeating: 0, count: 32)
    /// Per channel, bits for the sustain (64), sostenuto (66) and hold 2 (69) pedals.
    private var pedals = [UInt8](repeating: 0, count: 16)
    private static let pedalControllers: [UInt8] = [64, 66, 69]

    /// Nothing held.
    public init() {}

    /// True if no note or pedal is held.
    public var isEmpty: Bool { notes.allSatisfy { $0 == 0 } && pedals.allSatisfy { $0 == 0 } }

    /// Records what `message` turns on or off.
    public mutating func track(_ message: MIDIMessage) {
        switch message {
        case .noteOn(let channel, let note, let velocity):
            set(channel, note, on: velocity.value > 0)
        case .noteOff(let channel, let note, _):
            set(channel, note, on: false)
        case .controlChange(let channel, let controller, let value):
            let c = Int(channel.value)
            if controller.value == 120 || controller.value >= 123 { // all sound / notes off, mode changes
                notes[c * 2] = 0
                notes[c * 2 + 1] = 0
            }
            guard let bit = Self.pedalControllers.firstIndex(of: controller.value) else { return }
            let mask = UInt8(1) << UInt8(bit)
            pedals[c] = value.value >= 64 ? pedals[c] | mask : pedals[c] & ~mask
        case .systemReset:
            self = HeldNotes()
        default:
            break
        }
    }

    /// For a stream going to one listener: false for a release of a note or pedal this listener was never
    /// sent (it joined after the note-on, or the note-on went to others only), which need not be sent; true,
    /// with what `message` turns on or off recorded, for everything else.
    public mutating func admit(_ message: MIDIMessage) -> Bool {
        guard releasesHeld(message) ?? true else { return false }
        track(message)
        return true
    }

    /// For a listener that is away for a moment: true, with the release recorded, if `message` releases a note or
    /// pedal this listener was sent (to be sent to it when it is back); false for everything else.
    public mutating func admitRelease(_ message: MIDIMessage) -> Bool {
        guard releasesHeld(message) == true else { return false }
        track(message)
        return true
    }

    /// Nil if `message` releases no note or pedal; else whether the one it releases is held.
    private func releasesHeld(_ message: MIDIMessage) -> Bool? {
        Self.released(by: message).map { slot in
            switch slot {
            case .note(let channel, let note): isHeld(channel, note)
            case .pedal(let channel, let mask): pedals[channel] & mask != 0
            }
        }
    }

    /// A note (its channel and number) or a pedal (its channel and bit in `pedals`).
    private enum Slot {
        case note(UInt4, UInt7)
        case pedal(Int, UInt8)
    }

    /// The note or pedal `message` releases, or nil if it releases none.
    private static func released(by message: MIDIMessage) -> Slot? {
        switch message {
        case .noteOff(let channel, let note, _), .noteOn(let channel, let note, .zero):
            return .note(channel, note)
        case .controlChange(let channel, let controller, let value) where value.value < 64:
            return pedalControllers.firstIndex(of: controller.value).map { .pedal(Int(channel.value), 1 << UInt8($0)) }
        default:
            return nil
        }
    }

    /// Calls `release` with a note-off for every held note and a pedal-up for every held
    /// pedal, then forgets them.
    public mutating func releaseAll(_ release: (MIDIMessage) -> Void) {
        Self.release(notes: notes, pedals: pedals, release)
        self = HeldNotes()
    }

    /// As a set of releases: adds the note or pedal `message` releases, if it releases one (`releaseAll` then gives
    /// the releases back).
    public mutating func insertRelease(_ message: MIDIMessage) {
        switch Self.released(by: message) {
        case .note(let channel, let note)?: set(channel, note, on: true)
        case .pedal(let channel, let mask)?: pedals[channel] |= mask
        case nil: break
        }
    }

    /// Adds every note and pedal `other` holds.
    public mutating func formUnion(_ other: HeldNotes) {
        for index in notes.indices { notes[index] |= other.notes[index] }
        for index in pedals.indices { pedals[index] |= other.pedals[index] }
    }

    /// Calls `release` with a note-off or pedal-up for every note or pedal `earlier` held that is not held now.
    public func releases(since earlier: HeldNotes, _ release: (MIDIMessage) -> Void) {
        Self.release(notes: zip(earlier.notes, notes).map { $0 & ~$1 }, pedals: zip(earlier.pedals, pedals).map { $0 & ~$1 },
                     release)
    }

    /// Calls `release` for each note bit set in `notes` and pedal bit set in `pedals`.
    private static func release(notes: [UInt64], pedals: [UInt8], _ release: (MIDIMessage) -> Void) {
        for channel in 0..<16 {
            for word in 0..<2 {
                var bits = notes[channel * 2 + word]
                while bits != 0 {
                    let bit = bits.trailingZeroBitCount
                    bits &= bits - 1
                    release(.noteOff(channel: UInt4(masking: UInt8(channel)),
                                     note: UInt7(masking: UInt8(word * 64 + bit)), velocity: UInt7(masking: 64)))
                }
            }
            for (bit, controller) in pedalControllers.enumerated() where pedals[channel] & (1 << UInt8(bit)) != 0 {
                release(.controlChange(channel: UInt4(masking: UInt8(channel)),
                                       controller: UInt7(masking: controller), value: .zero))
            }
        }
    }

    private func isHeld(_ channel: UInt4, _ note: UInt7) -> Bool {
        notes[Int(channel.value) * 2 + Int(note.value >> 6)] & UInt64(1) << UInt64(note.value & 63) != 0
    }

    private mutating func set(_ channel: UInt4, _ note: UInt7, on: Bool) {
        let index = Int(channel.value) * 2 + Int(note.value >> 6)
        let mask = UInt64(1) << UInt64(note.value & 63)
        notes[index] = on ? notes[index] | mask : notes[index] & ~mask
    }
}
