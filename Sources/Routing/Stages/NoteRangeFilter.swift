import MIDI

/// Passes notes (and their poly pressure) inside a range (`notes: C2..B3`); other messages pass.
/// A keyboard split is two routes with complementary ranges.
public struct NoteRangeFilter: RouteStage {
    /// The notes that pass.
    public let range: ClosedRange<UInt7>

    /// A filter passing notes in `range`.
    public init(range: ClosedRange<UInt7>) { self.range = range }

    public func apply(_ message: inout MIDIMessage) -> Bool {
        switch message {
        case .noteOn(_, let note, _), .noteOff(_, let note, _), .polyPressure(_, let note, _):
            return range.contains(note)
        default:
            return true
        }
    }
}
