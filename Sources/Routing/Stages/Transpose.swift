import MIDI

/// Shifts notes and their poly pressure by semitones (`transpose:`); notes pushed past 0...127 are dropped.
public struct Transpose: RouteStage {
    /// The shift in semitones.
    public let semitones: Int

    /// A transpose by `semitones`.
    public init(semitones: Int) { self.semitones = semitones }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        switch message {
        case .noteOn(let c, let n, let v):
            guard let note = shifted(n) else { return false }
            message = .noteOn(channel: c, note: note, velocity: v)
        case .noteOff(let c, let n, let v):
            guard let note = shifted(n) else { return false }
            message = .noteOff(channel: c, note: note, velocity: v)
        case .polyPressure(let c, let n, let p):
            guard let note = shifted(n) else { return false }
            message = .polyPressure(channel: c, note: note, pressure: p)
        default:
            break
        }
        return true
    }

    private func shifted(_ note: UInt7) -> UInt7? {
        let (sum, overflow) = Int(note.value).addingReportingOverflow(semitones)
        return overflow ? nil : UInt7(sum)
    }
}
