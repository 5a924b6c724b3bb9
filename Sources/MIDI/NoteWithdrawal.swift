/// What a withdraw takes back of one listener's messages, met in the order they would have left: everything but the
/// note-off of a note whose note-on is not taken back (it went out: a lost note-off is a stuck note). One a source or
/// a sink, each with its own notes.
public struct NoteWithdrawal: Sendable {
    /// The note-ons taken back whose note-off has not been met yet, by channel and note.
    private var withdrawnOns: [UInt16: Int] = [:]

    public init() {}

    /// True if `message` is taken back.
    public mutating func takesBack(_ message: MIDIMessage) -> Bool {
        let key: UInt16, on: Bool
        switch message {
        case .noteOn(let channel, let note, let velocity): (key, on) = (UInt16(channel.value) << 7 | UInt16(note.value), velocity.value > 0)
        case .noteOff(let channel, let note, _): (key, on) = (UInt16(channel.value) << 7 | UInt16(note.value), false)
        default: return true
        }
        guard !on else {
            withdrawnOns[key, default: 0] += 1
            return true
        }
        guard let count = withdrawnOns[key], count > 0 else { return false }
        withdrawnOns[key] = count - 1
        return true
    }
}
